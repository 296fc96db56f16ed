/**
 * `ingest import <inputs...> --db DIR` and `ingest plan <inputs...> --db DIR`: CSV into a live
 * database through the pipeline object of src/ingest/importIntoDb.ts (DbImport) in its 'import'
 * and 'plan' modes. docs/import.md ("Into a database") documents the options and the JSON fields.
 *
 * Wiring: `import` (cli/commands/import.ts) calls runDbImport when --db is given; `plan` is
 * registered here. Both take their options from the shared tables of importOptions.ts, so either
 * registers on its own, in any order.
 *
 * Options (besides every import option): --db DIR; --on-conflict abort|overwrite|skip (default
 * abort); the check's --conflict-strategy, --report FILE, --max-reported N; --replace-range
 * [FROM..TO] (either bound may be left out: FROM.., ..TO; keys typed as --key reads them);
 * --dry-run (import only; `plan` always); --no-create-if-missing; --verify-checksums (re-read the new SSTs first);
 * --no-blocking-flush.
 *
 * `--server URL [--token-file F]` instead of --db (either command): the same run against the
 * database an `ingest serve` holds, the import half here and the check and ingestion there
 * (cli/commands/importRemote.ts, which prints through printImportResult below, so the document,
 * the human lines, the --report file and the exit codes are those of --db).
 *
 * Exit codes: 0 ingested (or planned: a plan exits 0 even with conflicts, and shows them);
 * 3 conflicts under abort, nothing ingested, after the report is written; 2 bad input or usage;
 * 1 anything else. `import` is resumable (see cli/commands/import.ts): an interrupted run keeps its
 * job directory in DIR for the next run of the same command; `plan` and `check` change nothing and
 * remove their private directory on every failure and on Ctrl-C.
 */
import { Command } from 'commander';
import { DbImport, DbImportFile, DbImportResult, conflictFailure } from '../../src/ingest/importIntoDb';
import { Progress } from '../../src/ingest/progress';
import { dbImportJson } from '../../src/ingest/importJson';
import { IngestError } from '../../src/util/errors';
import { DbTextCodec } from './dbText';
import {
  CONFLICT_CHECK_OPTIONS,
  ConflictCheckCliOptions,
  DB_POLICY_OPTIONS,
  DbPolicyCliOptions,
  IMPORT_OPTIONS,
  ImportCliOptions,
  PROGRESS_OPTION,
  ResumeCliOptions,
  addOptions,
  dbImportOptionsOf,
} from './importOptions';
import { withFinalEvent } from './progressEvents';
import { abandonedMessage, diskQuotaOf, stepCheckpointsOf } from './import';
import { runInterruptible } from './interrupt';
import { SERVER_OPTIONS, TargetOptions, dbDirOf, remoteImport } from './serverTarget';

export interface DbImportCliOptions extends ImportCliOptions, ConflictCheckCliOptions, DbPolicyCliOptions, ResumeCliOptions {
  db: string;
  outputDir?: string;
}

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

/** `import --db` (mode 'import', or 'plan' with --dry-run) and `plan`: run, print, then fail with exit 3 when abort stopped it. */
export async function runDbImport(inputs: string[], o: DbImportCliOptions, mode: 'plan' | 'import'): Promise<void> {
  if (o.outputDir !== undefined)
    throw new IngestError(
      'USAGE',
      '--output-dir and --db do not go together: with --db the SSTs go to a private directory inside the database',
    );
  const { options, codec } = dbImportOptionsOf(inputs, o, mode);
  const progress = Progress.forOption(o.progress, o.quiet === true);
  // Only `import` resumes (a plan changes nothing, so there is nothing to resume). --no-resume
  // discards a pending job and starts over; the new run is resumable all the same.
  const resume = mode === 'import';
  await withFinalEvent(progress, async () => {
    const job = new DbImport({
      ...options,
      mode,
      resume,
      restart: o.resume === false,
      import: { ...options.import, progress, diskQuotaBytes: diskQuotaOf(o), stepCheckpointsFromInputBytes: stepCheckpointsOf(o) },
    });
    const result = await runInterruptible(job, abandonedMessage(resume, inputs, o.db, 'import abandoned'));
    printImportResult(result, o, codec, false);
    return { doc: dbImportJson(result), failure: conflictFailure(result) };
  });
}

/** Prints an import's or a plan's result (--json: the document; else the human lines) and fails with exit 3 when abort stopped it. */
export function printImportResult(result: DbImportResult, o: { json?: boolean; quiet?: boolean }, codec: DbTextCodec, fail = true): void {
  if (o.json === true) process.stdout.write(`${JSON.stringify(dbImportJson(result))}\n`);
  else if (o.quiet !== true) printHuman(result, codec);
  const failure = conflictFailure(result);
  if (fail && failure !== null) throw failure;
}

function printHuman(r: DbImportResult, codec: DbTextCodec): void {
  const s = r.report.summary;
  const out = (line: string): boolean => process.stdout.write(`${line}\n`);
  out(
    `imported ${r.import.rowsWritten} rows (${r.import.badRows} bad, ${r.import.duplicates.count} duplicates); against ${r.db}: ` +
      `${s.new} new, ${s.unchanged} unchanged, ${s.conflicts} conflicting${r.reportPath !== null ? ` (report in ${r.reportPath})` : ''}`,
  );
  const files = r.ingest?.files ?? r.plan?.files ?? [];
  for (const f of files) out(`  ${fileLine(f, codec)}`);
  if (r.dryRun) {
    if (r.plan?.memtableFlushNeeded === true) out('  a memtable holds data in these ranges: ingesting would flush it first');
    out(
      r.policy.ingest
        ? `dry run: nothing linked; --on-conflict ${r.policy.onConflict} would ingest ${files.length} file(s)${r.policy.rowsHeldBack > 0 ? `, holding back ${r.policy.rowsHeldBack} conflicting row(s)` : ''}`
        : `dry run: nothing linked; --on-conflict abort would ingest nothing (${s.conflicts} conflicts); the plan shows the files as they would go in`,
    );
  } else if (r.ingest !== null) {
    out(
      `ingested ${r.ingest.files.length} file(s) in ${r.ingest.seconds}s; last sequence ${r.ingest.lastSequence}` +
        `${r.policy.rowsHeldBack > 0 ? `; ${r.policy.rowsHeldBack} conflicting row(s) skipped` : ''}${r.ingest.memtableFlushes > 0 ? `; ${r.ingest.memtableFlushes} memtable flush(es)` : ''}`,
    );
  } else if (r.policy.ingest) {
    out('nothing to ingest');
  }
}

function fileLine(f: DbImportFile, codec: DbTextCodec): string {
  const span = `[${codec.displayKey(Buffer.from(f.smallestHex, 'hex'))} .. ${codec.displayKey(Buffer.from(f.largestHex, 'hex'))}${f.largestExclusive ? ')' : ']'}`;
  const target = f.fileNumber !== null ? ` -> ${String(f.fileNumber).padStart(6, '0')}.sst` : '';
  return `${f.file ?? '(replace-range tombstones)'}: L${f.level} seqno ${f.globalSeqno} ${span} ${f.sizeBytes} bytes${target}`;
}
