/**
 * `ingest import <inputs...>`: CSV files (or `-` for stdin, `.gz` decompressed on the fly) become
 * sorted, non-overlapping SSTs, in bounded memory. One command, one action, two destinations:
 * - `--output-dir DIR`: the SSTs stay in DIR (src/ingest/importer.ts);
 * - `--db DIR`: import, conflict check, policy and ingestion into a database, or with --dry-run
 *   a plan of it (src/ingest/importIntoDb.ts, run by cli/commands/importDb.ts);
 * - `--server URL [--token-file F]`: the same into the database an `ingest serve` holds: parsed
 *   and sorted here, the SSTs and their row origins uploaded (cli/commands/importRemote.ts), with
 *   the output and exit codes of --db (docs/serve.md, "The CLI as a client"). Not with --db or
 *   --output-dir (usage, exit 2).
 * docs/import.md documents the options, the key and value encodings and the summary's fields.
 *
 * Output (--output-dir): with --json one summary object on stdout; otherwise one human line on
 * stdout unless --quiet. Progress goes to stderr when it is a TTY (not with --quiet). Exit codes:
 * 0 success; 2 bad input, duplicates under --on-duplicate error, usage (the database options
 * without --db too); 1 anything else (NO_SPACE for a full disk among them). Nothing is published
 * in DIR unless the whole import is done. A failure the same command would meet again (bad input,
 * duplicates, usage) leaves nothing behind; an interruption (Ctrl-C, SIGTERM, a kill, a full disk,
 * I/O) keeps the import's checkpoints in DIR/.import-job-<id>/, and running the same command again
 * resumes it (--no-resume starts over; `ingest pending DIR` lists them; docs/import.md).
 * --progress json writes NDJSON progress events on stderr (src/ingest/progress.ts).
 */
import { Command } from 'commander';
import { IngestError } from '../../src/util/errors';
import { CsvImport } from '../../src/ingest/importer';
import { Progress } from '../../src/ingest/progress';
import {
  CLUSTER_OPTIONS,
  ClusterCliOptions,
  CONFLICT_CHECK_OPTIONS,
  ConflictCheckCliOptions,
  DB_POLICY_OPTIONS,
  DbPolicyCliOptions,
  IMPORT_OPTIONS,
  ImportCliOptions,
  OptionDef,
  PROGRESS_OPTION,
  RESUME_OPTIONS,
  ResumeCliOptions,
  abandonedMessage,
  addOptions,
  diskQuotaOf,
  stepCheckpointsOf,
  importSettingsOf,
} from './importOptions';
import { withFinalEvent } from './progressEvents';
import { SERVER_OPTIONS, TargetOptions } from './serverTarget';
import { remoteImport } from './remoteImport';
import { runDbImport } from './importDb';
import { runInterruptible } from './interrupt';

interface ImportCommandOptions
  extends ImportCliOptions, ConflictCheckCliOptions, DbPolicyCliOptions, TargetOptions, ResumeCliOptions, ClusterCliOptions {
  outputDir?: string;
  dryRun?: boolean;
}

/** Options that mean something only with --db (refused without it), in the order the error names them. */
const DB_ONLY = [
  'onConflict',
  'replaceRange',
  'dryRun',
  'report',
  'conflictStrategy',
  'maxReported',
  'createIfMissing',
  'verifyChecksums',
  'blockingFlush',
  'pendingMaxAge',
  'maxSpaceAmp',
  'compactBudget',
  'cluster',
  'sharedDir',
  'taskSize',
  'reduceTasks',
] as const;

const OUTPUT_DIR: OptionDef = {
  flags: '--output-dir <dir>',
  description: 'directory for the SSTs and import-summary.json (must hold no .sst files); or --db',
};
const OUTPUT: readonly OptionDef[] = [
  { flags: '--json', description: 'print one JSON summary object on stdout' },
  { flags: '--quiet', description: 'no progress and no human summary' },
];
const DB: OptionDef = {
  flags: '--db <dir>',
  description: 'import into this database: check for conflicts, then ingest (see --on-conflict)',
};
const DRY_RUN: OptionDef = { flags: '--dry-run', description: 'import, check and plan: print where each file would go, link nothing' };

export function registerImportCommand(program: Command): void {
  const cmd = program
    .command('import')
    .description('import CSV files (- for stdin, .gz decompressed) as sorted, non-overlapping SSTs')
    .argument('<inputs...>', 'CSV files, - for stdin, *.gz decompressed on the fly');
  addOptions(cmd, [
    OUTPUT_DIR,
    ...IMPORT_OPTIONS,
    ...OUTPUT,
    PROGRESS_OPTION,
    ...RESUME_OPTIONS,
    DB,
    ...SERVER_OPTIONS,
    ...CONFLICT_CHECK_OPTIONS,
    ...DB_POLICY_OPTIONS,
    DRY_RUN,
    ...CLUSTER_OPTIONS,
  ]);
  cmd.action((inputs: string[], o: ImportCommandOptions, self: Command) => {
    const mode = o.dryRun === true ? 'plan' : 'import';
    if (o.server !== undefined) {
      if (o.db !== undefined || o.outputDir !== undefined)
        throw new IngestError('USAGE', 'import: --server goes without --db and --output-dir');
      return remoteImport().runRemoteImport(inputs, o, mode);
    }
    if (o.tokenFile !== undefined) throw new IngestError('USAGE', 'import: --token-file goes with --server');
    if (o.db !== undefined) return runDbImport(inputs, { ...o, db: o.db }, mode);
    const dbOnly = DB_ONLY.filter((name) => self.getOptionValueSource(name) === 'cli');
    if (dbOnly.length > 0) throw new IngestError('USAGE', `${dbOnly.map(flagOf).join(', ')} need --db`);
    return runImportToDir(inputs, o);
  });
}

function flagOf(name: string): string {
  return `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** `ingest import --output-dir DIR`: the SSTs stay in DIR. */
export async function runImportToDir(inputs: string[], o: ImportCliOptions & ResumeCliOptions & { outputDir?: string }): Promise<void> {
  const outputDir = o.outputDir;
  if (outputDir === undefined)
    throw new IngestError('USAGE', 'import needs --output-dir DIR (SSTs in DIR) or --db DIR (ingested into a database)');
  const progress = Progress.forOption(o.progress, o.quiet === true);
  await withFinalEvent(progress, async () => {
    const job = new CsvImport({
      ...importSettingsOf(inputs, o),
      outputDir,
      progress,
      // --no-resume discards a pending job and starts over; the new run is resumable all the same.
      resume: true,
      restart: o.resume === false,
      diskQuotaBytes: diskQuotaOf(o),
      stepCheckpointsFromInputBytes: stepCheckpointsOf(o),
    });
    const summary = await runInterruptible(job, abandonedMessage(true, inputs, outputDir, 'import abandoned, nothing written'));
    if (o.json === true) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else if (o.quiet !== true) {
      process.stdout.write(
        `imported ${summary.rowsWritten} rows into ${summary.outputFiles.length} SST file(s) in ${summary.outputDir} ` +
          `(${summary.phases.totalSeconds}s, ${summary.rowsPerSecond} rows/s, ${summary.badRows} bad rows, ${summary.duplicates.count} duplicates)\n`,
      );
    }
    return { doc: summary, failure: null };
  });
}
