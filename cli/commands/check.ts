/**
 * `ingest check <inputs...> --db DIR [import options...]`: the import pipeline of `import --db`
 * (src/ingest/importIntoDb.ts, DbImport) in its 'check' mode: the import into SSTs, then the
 * conflict scan against the database at --db, and the report. It links nothing and never creates
 * or changes the database. docs/conflicts.md documents the options, the report and the summary.
 *
 * The SSTs go to a private temp directory (under --tmp-dir, else the system's) removed at the
 * end, unless --output-dir keeps them. Every `ingest import` option is accepted and means the
 * same: both commands add the one table in importOptions.ts.
 *
 * `--server URL [--token-file F]` instead of --db: the check against the database an `ingest
 * serve` holds (mode=check of POST /v1/imports/sst, cli/commands/importRemote.ts): the same
 * output and exit codes, --report written here from the server's report; --output-dir does not
 * go with it (the SSTs live in a private temp directory here, removed at the end).
 *
 * Output: with --json one object {"import": <import summary>, "check": <conflict summary>,
 * "report": <path or null>} on stdout; otherwise one human line unless --quiet. Exit codes: 0
 * no conflicts; 3 conflicts (after the report is written); 2 bad input or usage (no database at
 * --db included); 1 anything else.
 */
import { Command } from 'commander';
import { DbCheckResult, DbImport, conflictFailure } from '../../src/ingest/importIntoDb';
import { dbCheckJson } from '../../src/ingest/importJson';
import { Progress } from '../../src/ingest/progress';
import {
  CONFLICT_CHECK_OPTIONS,
  ConflictCheckCliOptions,
  IMPORT_OPTIONS,
  ImportCliOptions,
  PROGRESS_OPTION,
  addOptions,
  dbImportOptionsOf,
} from './importOptions';
import { runInterruptible } from './interrupt';
import { withFinalEvent } from './progressEvents';
import { SERVER_OPTIONS, TargetOptions, dbDirOf } from './serverTarget';
import { remoteImport } from './remoteImport';
import { printCheckResult } from './importOutput';
import { IngestError } from '../../src/util/errors';

interface CheckCliOptions extends ConflictCheckCliOptions, ImportCliOptions {
  db: string;
  progress?: string;
  outputDir?: string;
}

export function registerCheckCommand(program: Command): void {
  const cmd = program
    .command('check')
    .description('import CSV files into temporary SSTs and check them against a database for conflicts (ingests nothing)')
    .argument('<inputs...>', 'CSV files, - for stdin, *.gz decompressed on the fly');
  addOptions(cmd, [
    { flags: '--db <dir>', description: 'the database to check against; or --server' },
    ...SERVER_OPTIONS,
    { flags: '--output-dir <dir>', description: 'keep the SSTs here (default: a temp directory removed afterwards)' },
    ...CONFLICT_CHECK_OPTIONS,
    ...IMPORT_OPTIONS,
    { flags: '--json', description: 'print one JSON object {import, check, report} on stdout' },
    { flags: '--quiet', description: 'no progress and no human summary' },
    PROGRESS_OPTION,
  ]);
  cmd.action((inputs: string[], o: Omit<CheckCliOptions, 'db'> & TargetOptions) => {
    const dir = dbDirOf(o, 'check');
    if (dir === null && o.outputDir !== undefined) throw new IngestError('USAGE', 'check: --output-dir goes with --db, not --server');
    return dir === null ? remoteImport().runRemoteImport(inputs, o, 'check') : runCheck(inputs, { ...o, db: dir });
  });
}

async function runCheck(inputs: string[], o: CheckCliOptions): Promise<void> {
  const { options } = dbImportOptionsOf(inputs, o, 'check');
  const progress = Progress.forOption(o.progress, o.quiet === true);
  await withFinalEvent(progress, async () => {
    const job = new DbImport({ ...options, mode: 'check', import: { ...options.import, progress } });
    const result: DbCheckResult = await runInterruptible(job, 'check abandoned');
    printCheckResult(result, o, false);
    return { doc: dbCheckJson(result), failure: conflictFailure(result) };
  });
}
