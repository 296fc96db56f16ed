#!/usr/bin/env node
/**
 * The `ingest` executable: starts an import's parse workers first, then loads the command line
 * (cli/program.ts) and runs it.
 *
 * Why the split: loading the command line and the library takes `ingest` 100-150 ms on one core
 * of the 2-core VM, and an import's parse workers need 35-50 ms each to boot before its first
 * range can start. For `ingest import` of inputs large enough to parse in workers, this module,
 * which loads almost nothing, starts them (src/ingest/parse/prestart.ts) before the rest loads,
 * so they boot on the idle core. Workers the import does not take are terminated at the end.
 *
 * The guess reads only argv: the `import` command, the regular files among its arguments and
 * --threads; it never decides anything but whether workers start early. A wrong guess costs a
 * worker's boot on the idle core, never a result: the import takes what matches its own choice
 * of threads and niceness, and starts the rest itself.
 */
import * as fs from 'fs';
import * as os from 'os';
import {
  discardPrestartedWorkers,
  MAX_PRESTARTED_WORKERS,
  PARALLEL_MIN_INPUT_BYTES,
  prestartParseWorkers,
} from '../src/ingest/parse/prestart';

/** The parse workers an `ingest import` command line will ask for, as the import decides them; 0 if none. */
export function prestartCountFor(argv: readonly string[]): number {
  const args = argv.slice(2);
  if (args[0] !== 'import' || args.some((a) => a === '--server' || a.startsWith('--server=') || a === '--help' || a === '-h')) return 0;
  const at = args.findIndex((a) => a === '--threads' || a.startsWith('--threads='));
  if (at >= 0) {
    const text = args[at].startsWith('--threads=') ? args[at].slice('--threads='.length) : (args[at + 1] ?? '');
    const threads = /^[0-9]+$/.test(text) ? Number(text) : 0;
    return Math.min(threads, MAX_PRESTARTED_WORKERS);
  }
  // The library's default: two parse threads on two cores or more, for inputs this large.
  if (os.availableParallelism() < 2) return 0;
  let inputBytes = 0;
  for (const a of args.slice(1)) {
    try {
      const st = fs.statSync(a);
      if (st.isFile()) inputBytes += st.size;
    } catch {
      // Not a file (an option, a value, a path still to be created).
    }
  }
  return inputBytes >= PARALLEL_MIN_INPUT_BYTES ? 2 : 0;
}

/** Runs the command line on argv; resolves to the exit code (see cli/program.ts). */
export async function main(argv: string[]): Promise<number> {
  // At niceness 0: the import steps its workers back only beside a caller's live engine, which a
  // command line never has (it opens the database itself).
  const count = prestartCountFor(argv);
  if (count > 0) prestartParseWorkers(count, 0);
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const program = require('./program') as typeof import('./program');
    return await program.main(argv);
  } finally {
    await discardPrestartedWorkers();
  }
}

/**
 * Output into a pipe whose reader has gone (`ingest sst dump x.sst | head`): the reader asked for
 * no more, so the command stops quietly with exit code 0 instead of a stack trace. Any other
 * error on stdout is reported in one line, exit 1.
 */
function stopQuietlyOnClosedPipe(): void {
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    process.stderr.write(`error: cannot write to stdout: ${err.message}\n`);
    process.exit(1);
  });
}

if (require.main === module) {
  stopQuietlyOnClosedPipe();
  main(process.argv).then(
    (code) => {
      // Interrupted (cli/commands/interrupt.ts): the job's cleanup ran and the failure is written;
      // its threads may still be busy, and nothing they do now is wanted.
      if (code === 130) process.exit(code);
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`fatal: ${String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
