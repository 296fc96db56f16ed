/**
 * Ctrl-C and SIGTERM for the commands that run an import job: the job's own synchronous cleanup
 * runs (its temp, scratch and partial output files go; a resumable import keeps its checkpoints
 * instead, src/ingest/resume/), and the command fails with IngestError('INTERRUPTED'), whose
 * message says what was abandoned or kept: it goes the way of every failure (the final
 * `--progress json` event, the `--json` failure document, the line on stderr; cli/program.ts),
 * and the process exits 130 (the shell's code for death by SIGINT) as soon as that is written
 * (cli/ingest.ts), whatever the job's threads were doing.
 *
 * Why a handler at all: Node's default on SIGINT kills the process at once, which would leave
 * the job's sorted runs and half-written SSTs behind; the handler exists only while the job runs.
 */
import { IngestError } from '../../src/util/errors';

/** What the handler needs from a job: a run, and a cleanup that works from a signal handler. */
export interface InterruptibleJob<T> {
  run(): Promise<T>;
  cleanupSync(): void;
}

/** Runs the job; on SIGINT or SIGTERM meanwhile, cleans up and fails with INTERRUPTED "interrupted: <abandoned>". */
export async function runInterruptible<T>(job: InterruptibleJob<T>, abandoned: string | (() => string)): Promise<T> {
  let onSignal = (): void => undefined;
  const interrupted = new Promise<never>((_, reject) => {
    onSignal = (): void => {
      job.cleanupSync();
      reject(new IngestError('INTERRUPTED', `interrupted: ${typeof abandoned === 'string' ? abandoned : abandoned()}`));
    };
  });
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    // The job's own promise may settle later, after its cleanup: the race has handled it.
    return await Promise.race([job.run(), interrupted]);
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}
