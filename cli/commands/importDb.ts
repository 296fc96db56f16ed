/**
 * `ingest import <inputs...> --db DIR` and `ingest plan <inputs...> --db DIR`: CSV into a live
 * database, import + conflict check + ingestion as one step (src/ingest/importIntoDb.ts), and a
 * dry run of it. docs/import.md ("Into a database") documents the options and the JSON fields.
 *
 * Wiring: registerImportIntoDb runs after registerImportCommand; it adds the database options to
 * the `import` command and takes over its action, which goes to the --db pipeline when --db is
 * given and to import.ts's runImportToDir (today's `--output-dir` import) otherwise. `check`
 * copies the import options from a fresh `import` command, so it does not see these.
 *
 * Options (besides every import option): --db DIR; --on-conflict abort|overwrite|skip (default
 * abort); the check's --conflict-strategy, --report FILE, --max-reported N; --replace-range
 * [FROM..TO] (either bound may be left out: FROM.., ..TO; keys typed as --key reads them);
 * --dry-run (import only; `plan` always); --no-create-if-missing; --no-verify-checksums;
 * --no-blocking-flush.
 *
 * Exit codes: 0 ingested (or planned: a plan exits 0 even with conflicts, and shows them);
 * 3 conflicts under abort, nothing ingested, after the report is written; 2 bad input or usage;
 * 1 anything else. On every failure and on Ctrl-C the private directory is removed.
 */
import { Command, Option } from 'commander';
import { DbImport, DbImportFile, DbImportResult, ReplaceRangeRequest } from '../../src/ingest/importIntoDb';
import { ON_CONFLICT_CHOICES, OnConflict } from '../../src/conflict/policy';
import { Progress } from '../../src/ingest/progress';
import { IngestError } from '../../src/util/errors';
import { ConflictCheckCliOptions, addConflictCheckOptions, importOptions } from './check';
import { DbTextCodec } from './dbText';
import { ImportCliOptions, runImportToDir, toImportOptions } from './import';

interface DbImportCliOptions extends ConflictCheckCliOptions, Omit<ImportCliOptions, 'outputDir'> {
  db?: string;
  outputDir?: string;
  onConflict: OnConflict;
  /** true for a bare --replace-range (the import's own span). */
  replaceRange?: string | true;
  dryRun?: boolean;
  createIfMissing: boolean;
  verifyChecksums: boolean;
  blockingFlush: boolean;
}

/** Options that mean something only with --db (refused without it). */
const DB_ONLY = ['onConflict', 'replaceRange', 'dryRun', 'report', 'conflictStrategy', 'maxReported', 'createIfMissing', 'verifyChecksums', 'blockingFlush'] as const;

function addDbOptions(cmd: Command, withDryRun: boolean): Command {
  addConflictCheckOptions(cmd)
    .addOption(new Option('--on-conflict <policy>', 'with conflicts: abort (ingest nothing, exit 3), overwrite, or skip the conflicting rows').choices(ON_CONFLICT_CHOICES).default('abort'))
    .option('--replace-range [from..to]', "replace every key in [FROM, TO) (default: the import's first key to just past its last)")
    .option('--no-create-if-missing', 'fail when DIR holds no database (default: create it)')
    .option('--no-verify-checksums', 'do not re-read every block of the new SSTs before ingesting')
    .option('--no-blocking-flush', 'fail instead of flushing a memtable that overlaps the import');
  if (withDryRun) cmd.option('--dry-run', 'import, check and plan: print where each file would go, link nothing');
  return cmd;
}

/** Adds `--db` to `import` (registered already) and registers `plan`. */
export function registerImportIntoDb(program: Command): void {
  const imp = program.commands.find((c) => c.name() === 'import');
  if (imp === undefined) throw new Error('registerImportIntoDb needs the import command registered first');
  imp.option('--db <dir>', 'import into this database: check for conflicts, then ingest (see --on-conflict)');
  addDbOptions(imp, true);
  imp.action((inputs: string[], o: DbImportCliOptions, cmd: Command) => {
    if (o.db !== undefined) return runDbImport(inputs, o, o.dryRun === true);
    const dbOnly = DB_ONLY.filter((name) => cmd.getOptionValueSource(name) === 'cli');
    if (dbOnly.length > 0) throw new IngestError('USAGE', `${dbOnly.map(flagOf).join(', ')} need --db`);
    return runImportToDir(inputs, o);
  });

  const plan = program
    .command('plan')
    .description('import CSV files, check them against a database and show where ingesting would put each file; links nothing')
    .argument('<inputs...>', 'CSV files, - for stdin, *.gz decompressed on the fly')
    .requiredOption('--db <dir>', 'the database (must exist)');
  for (const option of importOptions()) plan.addOption(option);
  addDbOptions(plan, false)
    .option('--json', 'print one JSON object on stdout')
    .option('--quiet', 'no progress')
    .action((inputs: string[], o: DbImportCliOptions) => runDbImport(inputs, o, true));
}

function flagOf(name: string): string {
  return `--${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** "FROM..TO", "FROM..", "..TO" (split at the first ".."), or a bare flag: the import's span. */
function parseReplaceRange(text: string | true | undefined, codec: DbTextCodec): ReplaceRangeRequest | undefined {
  if (text === undefined) return undefined;
  if (text === true) return {};
  const at = text.indexOf('..');
  if (at < 0) throw new IngestError('USAGE', `--replace-range must be FROM..TO (either side may be empty), got "${text}"`);
  const from = text.slice(0, at);
  const to = text.slice(at + 2);
  return {
    start: from === '' ? undefined : codec.parseKey(from, '--replace-range FROM'),
    end: to === '' ? undefined : codec.parseKey(to, '--replace-range TO'),
  };
}

async function runDbImport(inputs: string[], o: DbImportCliOptions, dryRun: boolean): Promise<void> {
  const db = o.db as string;
  if (o.outputDir !== undefined) throw new IngestError('USAGE', '--output-dir and --db do not go together: with --db the SSTs go to a private directory inside the database');
  const codec = new DbTextCodec({ keySpec: o.key });
  const importOptions = toImportOptions(inputs, { ...o, outputDir: '' });
  importOptions.progress = Progress.forStderr(o.quiet === true);
  const { outputDir: _unused, ...importOnly } = importOptions;
  void _unused;
  const job = new DbImport({
    dbDir: db,
    import: importOnly,
    createIfMissing: o.createIfMissing,
    onConflict: o.onConflict,
    conflictStrategy: o.conflictStrategy,
    maxReported: o.maxReported,
    reportPath: o.report,
    replaceRange: parseReplaceRange(o.replaceRange, codec),
    dryRun,
    verifyChecksums: o.verifyChecksums,
    allowBlockingFlush: o.blockingFlush,
  });
  const onSignal = (): void => {
    job.cleanupSync();
    process.stderr.write('\ninterrupted: import abandoned\n');
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let result: DbImportResult;
  try {
    result = await job.run();
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
  const s = result.report.summary;
  if (o.json === true) process.stdout.write(`${JSON.stringify(jsonOf(result))}\n`);
  else if (o.quiet !== true) printHuman(result, codec);
  if (!dryRun && !result.policy.ingest) {
    const first = result.report.conflicts[0];
    const example = first !== undefined ? `; first: key ${first.key}${first.source !== null ? ` (${first.source.file} line ${first.source.line})` : ''}` : '';
    throw new IngestError('CONFLICT', `${s.conflicts} key(s) would change a live value in ${db}; nothing ingested (--on-conflict overwrite|skip to go on)${example}`);
  }
}

/** The --json document; field names are stable (docs/import.md). */
function jsonOf(r: DbImportResult): Record<string, unknown> {
  return {
    db: r.db,
    createdDb: r.createdDb,
    dryRun: r.dryRun,
    import: r.import,
    check: r.report.summary,
    report: r.reportPath,
    policy: r.policy,
    replaceRange: r.replaceRange,
    ingest: r.ingest,
    plan: r.plan,
  };
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

