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
import { DbLockedError, IngestError } from '../src/util/errors';
import { readServerRecord } from '../src/server/serverRecord';
import { packageVersion } from './version';
import { OutputRequest, outputRequestOf, reportFailure, watchStdout } from './failure';
import { wroteFinalEventFor } from './commands/progressEvents';

/** The exit codes, at the end of `ingest --help` (the README has them too). */
const EXIT_CODES_HELP = `
Exit codes: 0 success; 2 bad input or usage; 3 conflicts found (import under --on-conflict abort, check);
130 interrupted (SIGINT, SIGTERM); 1 anything else. With --json a failure prints {"error": {"code", "message",
"exitCode"}} on stdout; with --progress json stderr holds only NDJSON events, the last a "done" or "error" event.`;
import { registerSstCommands } from './commands/sst';
import { registerImportCommand } from './commands/import';
import { registerPlanCommand } from './commands/plan';
import { registerDbCommands } from './commands/db';
import { registerIngestSstCommands } from './commands/ingestSst';
import { registerCheckCommand } from './commands/check';
import { registerPendingCommand } from './commands/pending';
import { registerServeCommand } from './commands/serve';
import { registerJobsCommand, registerWorkerCommand } from './commands/worker';

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

/**
 * The command line. `request` (what argv asked of the output, cli/failure.ts) is read before
 * parsing: with `--progress json` commander's own usage errors are written as an NDJSON event
 * by main instead, so that stderr holds only NDJSON lines.
 */
export function buildProgram(request: OutputRequest = { json: false, progressJson: false }): Command {
  const program = new Command();
  program
    .name('ingest')
    .description('Bulk SST ingestion and conflict checking on a RocksDB-compatible LSM engine')
    .version(packageVersion(), '-V, --version', 'print the version and exit')
    .exitOverride()
    .configureOutput({ outputError: (str, write) => (request.progressJson ? undefined : write(str)) })
    .addHelpText('after', EXIT_CODES_HELP);
  registerSstCommands(program);
  // Adds `sst ingest` and `sst plan` to the group registered just above.
  registerIngestSstCommands(program);
  registerImportCommand(program);
  registerPlanCommand(program);
  registerCheckCommand(program);
  registerDbCommands(program);
  registerServeCommand(program);
  registerPendingCommand(program);
  registerWorkerCommand(program);
  registerJobsCommand(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const request = outputRequestOf(argv);
  const program = buildProgram(request);
  const stdout = watchStdout();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version are "errors" to commander; they are successes to a user.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      const usage = new IngestError('USAGE', err.message.replace(/^error: /, ''));
      // Commander wrote its message on stderr already, unless NDJSON is all stderr may hold.
      return reportFailure(usage, usage.message, request, { stdout: stdout.written(), finalEvent: false, line: !request.progressJson });
    }
    const described = err instanceof IngestError ? describeError(err) : ((err as Error).stack ?? String(err));
    return reportFailure(err, described, request, { stdout: stdout.written(), finalEvent: wroteFinalEventFor(err), line: false });
  } finally {
    stdout.stop();
  }
}
