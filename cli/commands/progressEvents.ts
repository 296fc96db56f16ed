/**
 * The final event of `--progress json` for the pipeline commands: a run that printed its
 * result ends with {"event":"done","exitCode":0|3,"summary":...}, one that failed with
 * {"event":"error","exitCode","code","message"} (src/ingest/progress.ts has every field). The
 * command's stdout and exit code are unchanged; the events go to stderr.
 */
import { Progress } from '../../src/ingest/progress';
import { IngestError, exitCodeFor } from '../../src/util/errors';

/** Failures whose final event a command wrote (cli/failure.ts writes one for the others). */
const finalEventWritten = new WeakSet<object>();

/** Whether the command's progress ended with `err`'s error event. */
export function wroteFinalEventFor(err: unknown): boolean {
  return typeof err === 'object' && err !== null && finalEventWritten.has(err);
}

/**
 * Runs `body` (which runs the job and prints its result; it returns the --json document and the
 * failure it will end with, if any), writes the final event, then ends as `body` said.
 */
export async function withFinalEvent(progress: Progress, body: () => Promise<{ doc: unknown; failure: Error | null }>): Promise<void> {
  let outcome: { doc: unknown; failure: Error | null };
  try {
    outcome = await body();
  } catch (e) {
    const code = e instanceof IngestError ? e.code : 'INTERNAL';
    progress.finishError(code, (e as Error).message, exitCodeFor(e));
    if (typeof e === 'object' && e !== null) finalEventWritten.add(e);
    throw e;
  }
  progress.finishDone(outcome.doc, outcome.failure === null ? 0 : exitCodeFor(outcome.failure));
  if (outcome.failure !== null) {
    finalEventWritten.add(outcome.failure);
    throw outcome.failure;
  }
}
