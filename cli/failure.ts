/**
 * How a failed command reports itself, for scripts as well as people (README, "Commands"):
 * - the message on stderr, one line `error: ...`; with `--progress json` instead an NDJSON
 *   `error` event (unless the command wrote its final event already), so that stderr holds only
 *   NDJSON lines;
 * - with `--json`, one document on stdout, unless the command printed its own document first (a
 *   run that found conflicts prints its result and exits 3):
 *     {"error": {"code": "BAD_INPUT", "message": "...", "exitCode": 2}}
 *   field names stable, `code` one of the IngestError codes (src/util/errors.ts);
 * - the exit code of exitCodeFor: 2 bad input or usage, 3 conflicts, 130 interrupted, 1 else.
 */
import { Progress } from '../src/ingest/progress';
import { IngestError, exitCodeFor } from '../src/util/errors';

/** What a command line asked for its output: read from argv, since a failure may come before its options are parsed. */
export interface OutputRequest {
  json: boolean;
  progressJson: boolean;
}

export function outputRequestOf(argv: readonly string[]): OutputRequest {
  const args = argv.slice(2);
  const end = args.indexOf('--');
  const options = end < 0 ? args : args.slice(0, end);
  const progressAt = options.indexOf('--progress');
  return {
    json: options.includes('--json'),
    progressJson: options.includes('--progress=json') || (progressAt >= 0 && options[progressAt + 1] === 'json'),
  };
}

/** The failure document of `--json`. */
export function failureDocument(
  code: string,
  message: string,
  exitCode: number,
): { error: { code: string; message: string; exitCode: number } } {
  return { error: { code, message, exitCode } };
}

/** Counts what a command writes on stdout, so that a failure document never follows a result. */
export function watchStdout(): { written: () => boolean; stop: () => void } {
  const original = process.stdout.write;
  let written = false;
  process.stdout.write = function (this: NodeJS.WriteStream, ...args: Parameters<typeof original>): boolean {
    written = true;
    return original.apply(this, args);
  } as typeof original;
  return {
    written: () => written,
    stop: () => {
      process.stdout.write = original;
    },
  };
}

/** What of a failure's report is out already. */
export interface AlreadyWritten {
  /** The command printed its own document on stdout. */
  stdout: boolean;
  /** The command's progress ended with this failure's error event. */
  finalEvent: boolean;
  /** The message is on stderr (commander writes its usage errors itself). */
  line: boolean;
}

/**
 * Reports a failure as the module comment says, but what is out already; returns its exit code.
 * `described` is the stderr message (the program's, which may add where a locked database's
 * server is).
 */
export function reportFailure(err: unknown, described: string, request: OutputRequest, already: AlreadyWritten): number {
  const exitCode = exitCodeFor(err);
  const code = err instanceof IngestError ? err.code : 'INTERNAL';
  const message = err instanceof IngestError ? described : (err as Error).message;
  if (request.json && !already.stdout) process.stdout.write(`${JSON.stringify(failureDocument(code, message, exitCode))}\n`);
  if (request.progressJson) {
    if (!already.finalEvent) new Progress('json').finishError(code, message, exitCode);
  } else if (!already.line) {
    process.stderr.write(`error: ${described}\n`);
  }
  return exitCode;
}
