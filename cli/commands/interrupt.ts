/**
 * Ctrl-C and SIGTERM for the commands that run an import job: the job's own synchronous cleanup
 * runs (its temp, scratch and partial output files go; a resumable import keeps its checkpoints
 * instead, src/ingest/resume/), one line on stderr says what was abandoned or kept, and the
 * process exits 130 (the shell's code for death by SIGINT).
 *
 * Why a handler at all: Node's default on SIGINT kills the process at once, which would leave
 * the job's sorted runs and half-written SSTs behind; the handler exists only while the job runs.
 */

/** What the handler needs from a job: a run, and a cleanup that works from a signal handler. */
export interface InterruptibleJob<T> {
  run(): Promise<T>;
  cleanupSync(): void;
}

/** Runs the job; on SIGINT or SIGTERM meanwhile, cleans up and exits with "interrupted: <abandoned>". */
export async function runInterruptible<T>(job: InterruptibleJob<T>, abandoned: string): Promise<T> {
  const onSignal = (): void => {
    job.cleanupSync();
    process.stderr.write(`\ninterrupted: ${abandoned}\n`);
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await job.run();
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}
