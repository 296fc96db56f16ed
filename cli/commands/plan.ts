/**
 * `ingest plan <inputs...> --db DIR | --server URL`: an import checked against a database and
 * placed, level by level, without linking anything (DbImport in its 'plan' mode, run by
 * cli/commands/importDb.ts; with --server by cli/commands/importRemote.ts). The same options as
 * `import --db` (the shared tables), its output and exit codes: 0 (a plan exits 0 even with
 * conflicts, and shows them), 2 bad input or usage, 1 anything else.
 */
import { Command } from 'commander';
import { CONFLICT_CHECK_OPTIONS, DB_POLICY_OPTIONS, IMPORT_OPTIONS, PROGRESS_OPTION, addOptions } from './importOptions';
import { DbImportCliOptions, runDbImport } from './importDb';
import { remoteImport } from './remoteImport';
import { SERVER_OPTIONS, TargetOptions, dbDirOf } from './serverTarget';

export function registerPlanCommand(program: Command): void {
  const cmd = program
    .command('plan')
    .description('import CSV files, check them against a database and show where ingesting would put each file; links nothing')
    .argument('<inputs...>', 'CSV files, - for stdin, *.gz decompressed on the fly');
  addOptions(cmd, [
    { flags: '--db <dir>', description: 'the database (must exist); or --server' },
    ...SERVER_OPTIONS,
    ...IMPORT_OPTIONS,
    ...CONFLICT_CHECK_OPTIONS,
    ...DB_POLICY_OPTIONS,
    { flags: '--json', description: 'print one JSON object on stdout' },
    { flags: '--quiet', description: 'no progress' },
    PROGRESS_OPTION,
  ]);
  cmd.action((inputs: string[], o: Omit<DbImportCliOptions, 'db'> & TargetOptions) => {
    const dir = dbDirOf(o, 'plan');
    return dir === null ? remoteImport().runRemoteImport(inputs, o, 'plan') : runDbImport(inputs, { ...o, db: dir }, 'plan');
  });
}
