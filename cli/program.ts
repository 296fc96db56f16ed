/**
 * The `ingest` command line: a thin commander shell over the library (its executable entry is
 * cli/ingest.ts, which loads this module).
 *
 * Contract for scripts (documented in the README):
 * - exit codes: 0 success, 2 bad input or usage, 3 conflicts found, 1 anything else
 *   (`exitCodeFor` maps typed errors to these);
 * - `--json` prints one JSON document (or JSON lines where a command says so) on stdout with stable
 *   field names; diagnostics go to stderr; progress bars only when stderr is a TTY.
 *
 * Each command group lives in its own file under cli/commands and registers itself here, on its
 * own: no registration reads or changes another's command, so the order below is only the order
 * `--help` lists them in.
 */
import { Command, CommanderError } from 'commander';
import { DbLockedError, exitCodeFor, IngestError } from '../src/util/errors';
import { readServerRecord } from '../src/server/serverRecord';
import { packageVersion } from './version';
import { registerSstCommands } from './commands/sst';
import { registerImportCommand } from './commands/import';
import { registerPlanCommand } from './commands/plan';
import { registerDbCommands } from './commands/db';
import { registerIngestSstCommands } from './commands/ingestSst';
import { registerCheckCommand } from './commands/check';
import { registerPendingCommand } from './commands/pending';
import { registerServeCommand } from './commands/serve';

/**
 * The error's message, and for a database a running server holds (its SERVER record names the
 * LOCK's holder) the server's URL and the option that reaches it.
 */
function describeError(err: IngestError): string {
  if (!(err instanceof DbLockedError) || err.pid === null) return err.message;
  const record = readServerRecord(err.dir);
  if (record === null || record.pid !== err.pid) return err.message;
  return `${err.message}: the server at ${record.url} holds it; use --server ${record.url} instead of --db`;
}

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('ingest')
    .description('Bulk SST ingestion and conflict checking on a RocksDB-compatible LSM engine')
    .version(packageVersion(), '-V, --version', 'print the version and exit')
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(str) });
  registerSstCommands(program);
  // Adds `sst ingest` and `sst plan` to the group registered just above.
  registerIngestSstCommands(program);
  registerImportCommand(program);
  registerPlanCommand(program);
  registerCheckCommand(program);
  registerDbCommands(program);
  registerServeCommand(program);
  registerPendingCommand(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version are "errors" to commander; they are successes to a user.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return 2;
    }
    const message = err instanceof IngestError ? `error: ${describeError(err)}` : `error: ${(err as Error).stack ?? String(err)}`;
    process.stderr.write(`${message}\n`);
    return exitCodeFor(err);
  }
}
