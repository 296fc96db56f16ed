/**
 * `ingest sst ingest <file.sst...> --db DIR` and `ingest sst plan <file.sst...> --db DIR`:
 * prebuilt external SSTs (ours, or RocksDB's SstFileWriter's) into the engine, and a dry run of
 * the same. The library side is src/engine/ingest/ingestionJob.ts.
 *
 * - ingest: copies the files into the database in one atomic step (see Engine.ingestExternalFiles)
 *   and prints where each went. The files themselves are not modified, and by default the
 *   database never shares them: rewriting one afterwards changes nothing there. `--create-if-missing`
 *   creates the database; otherwise a directory without one is a usage error (exit 2).
 * - plan: the levels and global sequence numbers ingest would choose now, without linking,
 *   flushing or changing anything (the engine does open the database, which starts a new WAL and
 *   MANIFEST, as every open does).
 * Both check the files against the database first (cli/commands/ingestSstCheck.ts: why by
 * default, and what each policy does): --on-conflict abort (default) | overwrite | skip,
 * --no-conflict-check, --conflict-strategy, --report FILE, --report-format json|ndjson,
 * --max-reported N|all, the option definitions of `ingest import --db` and `ingest check`.
 * Options shared by both: --no-verify-checksums (skip reading every block), --no-blocking-flush
 * (fail instead of flushing a memtable that overlaps a file), --require-bottommost, and
 * --replace-start/--replace-end KEY (delete every existing key in [start, end) in the same atomic
 * step; keys as `ingest get` reads them: UTF-8, or hex with --hex, or typed with --key SPEC).
 * ingest only: --link (hard-link instead of copying: fast and no extra space, but the database
 * then shares the file, so it must never be changed afterwards), --move (link, then remove the
 * given paths once the ingestion is committed), --copy (the default, kept for scripts that say
 * so); at most one of the three. RocksDB's move_files and link_files are the same choices.
 *
 * Exit codes: 0 success; 3 conflicts under --on-conflict abort (ingest only: nothing ingested,
 * after the report is written and the result printed); 2 usage or a refused ingestion
 * (overlapping files, not an external SST, requireBottommost or no blocking flush violated); 1
 * corruption, I/O, a locked database, a file the check does not read (not put-only).
 *
 * `--json` prints one object (stable field names):
 *   {"db", "files": [{"path" (null for the replace-range tombstone table), "fileNumber" (ingest),
 *     "linked" (ingest), "level", "globalSeqno", "smallestHex", "largestHex", "largestExclusive",
 *     "sizeBytes", "stoppedAtLevel", "stopReason"}],
 *    ingest: "memtableFlushes", "writesStopped", "lastSequence", "seconds";
 *    plan:   "memtableFlushNeeded", "lastSequence";
 *    both:   "check", "report", "policy" (ingestSstCheck.ts; null with --no-conflict-check)}
 * With the check, an ingestion that ingests nothing (abort with conflicts, or no row that changes
 * the database) prints "files": [] and the database's last sequence.
 */
import * as fs from 'fs';
import { Command } from 'commander';
import { Engine } from '../../src/engine/engine';
import { currentFileName } from '../../src/engine/fileNames';
import { IngestFileMode, IngestedFile, IngestionResult, IngestOptions, PlannedFile } from '../../src/engine/ingest/ingestionJob';
import { IngestError } from '../../src/util/errors';
import { DbTextCodec } from './dbText';
import { addOptions } from './importOptions';
import {
  SST_CHECK_OPTIONS,
  SstCheck,
  SstCheckCliOptions,
  SstCheckOutcome,
  checkJson,
  checkLine,
  conflictFailureOf,
  ingestChecked,
  planChecked,
  sstCheckOf,
} from './ingestSstCheck';

interface IngestSstCliOptions extends SstCheckCliOptions {
  db: string;
  json?: boolean;
  hex?: boolean;
  key?: string;
  verifyChecksums: boolean;
  blockingFlush: boolean;
  requireBottommost?: boolean;
  replaceStart?: string;
  replaceEnd?: string;
  copy?: boolean;
  link?: boolean;
  move?: boolean;
  createIfMissing?: boolean;
}

/** --copy (default), --link or --move: at most one. */
function fileModeOf(o: IngestSstCliOptions): IngestFileMode {
  const given = (['copy', 'link', 'move'] as const).filter((m) => o[m] === true);
  if (given.length > 1) throw new IngestError('USAGE', `sst ingest: --${given.join(' and --')} do not go together`);
  return given[0] ?? 'copy';
}

/** The engine's ingest options, and the codec (one --key parse per run) that read the replace bounds and prints the files. */
function ingestOptionsFrom(o: IngestSstCliOptions): { opts: IngestOptions; codec: DbTextCodec } {
  if ((o.replaceStart === undefined) !== (o.replaceEnd === undefined)) {
    throw new IngestError('USAGE', '--replace-start and --replace-end go together');
  }
  const codec = DbTextCodec.forOptions(o);
  const opts: IngestOptions = {
    verifyChecksums: o.verifyChecksums,
    allowBlockingFlush: o.blockingFlush,
    requireBottommost: o.requireBottommost === true,
    replaceRange:
      o.replaceStart === undefined || o.replaceEnd === undefined
        ? undefined
        : { start: codec.parseKey(o.replaceStart, '--replace-start'), end: codec.parseKey(o.replaceEnd, '--replace-end') },
  };
  return { opts, codec };
}

async function withEngine<T>(dir: string, createIfMissing: boolean, body: (e: Engine) => Promise<T>): Promise<T> {
  if (!createIfMissing && !fs.existsSync(currentFileName(dir))) {
    throw new IngestError('USAGE', `no database at ${dir} (--create-if-missing creates one)`);
  }
  const engine = await Engine.open(dir, { createIfMissing });
  try {
    return await body(engine);
  } finally {
    await engine.close();
  }
}

function fileJson(f: PlannedFile): Record<string, unknown> {
  return {
    path: f.path,
    level: f.targetLevel,
    globalSeqno: f.globalSeqno,
    smallestHex: f.smallest.toString('hex'),
    largestHex: f.largest.toString('hex'),
    largestExclusive: f.largestExclusive,
    sizeBytes: f.fileSizeBytes,
    stoppedAtLevel: f.stoppedAtLevel,
    stopReason: f.stopReason,
  };
}

function fileLine(f: PlannedFile, codec: DbTextCodec): string {
  const what = f.path ?? '(replace-range tombstones)';
  const span = `[${codec.displayKey(f.smallest)} .. ${codec.displayKey(f.largest)}${f.largestExclusive ? ')' : ']'}`;
  const why = f.stoppedAtLevel === null ? 'no overlap' : `${f.stopReason} overlap at L${f.stoppedAtLevel}`;
  return `${what}: L${f.targetLevel} seqno ${f.globalSeqno} ${span} (${why})`;
}

/** An ingestion, checked or not: null when the check's policy ingested nothing. */
interface SstIngestRun {
  ingestion: IngestionResult | null;
  outcome: SstCheckOutcome | null;
  lastSequence: number;
}

async function runIngest(files: string[], o: IngestSstCliOptions): Promise<void> {
  const { opts, codec } = ingestOptionsFrom(o);
  const fileMode = fileModeOf(o);
  const check = sstCheckOf(o, codec, opts.replaceRange !== undefined);
  const started = process.hrtime.bigint();
  const run = await withEngine(o.db, o.createIfMissing === true, async (e): Promise<SstIngestRun> => {
    if (check === null) {
      const ingestion = await e.ingestExternalFiles(files, { ...opts, fileMode });
      return { ingestion, outcome: null, lastSequence: ingestion.lastSequence };
    }
    const checked = await ingestChecked(e, files, check, { ...opts, fileMode });
    return { ...checked, lastSequence: e.lastSequence };
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  printIngest(run, seconds, o, codec, check);
  const failure = run.outcome === null ? null : conflictFailureOf(run.outcome, o.db);
  if (failure !== null) throw failure;
}

function printIngest(run: SstIngestRun, seconds: number, o: IngestSstCliOptions, codec: DbTextCodec, check: SstCheck | null): void {
  const result = run.ingestion;
  const ingested = result?.files ?? [];
  if (o.json === true) {
    const out = {
      db: o.db,
      files: ingested.map((f: IngestedFile) => ({ ...fileJson(f), fileNumber: f.fileNumber, linked: f.linked })),
      memtableFlushes: result?.memtableFlushes ?? 0,
      writesStopped: result?.writesStopped ?? false,
      lastSequence: run.lastSequence,
      seconds,
      ...checkJson(run.outcome, check),
    };
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return;
  }
  if (run.outcome !== null && check !== null) process.stdout.write(`${checkLine(run.outcome, o.db, check)}\n`);
  for (const f of ingested)
    process.stdout.write(`${fileLine(f, codec)} -> ${String(f.fileNumber).padStart(6, '0')}.sst${f.linked ? ' (linked)' : ''}\n`);
  if (result === null) {
    const why =
      run.outcome?.policy.ingest === false ? 'the conflicts stopped it (--on-conflict abort)' : 'no row would change the database';
    process.stdout.write(`nothing ingested: ${why}\n`);
    return;
  }
  const skipped = run.outcome !== null && run.outcome.policy.onConflict === 'skip' ? run.outcome.policy.rowsHeldBack : 0;
  process.stdout.write(
    `ingested ${result.files.length} file(s) in ${seconds.toFixed(3)} s; last sequence ${result.lastSequence}` +
      `${skipped > 0 ? `; ${skipped} conflicting row(s) skipped` : ''}${result.memtableFlushes > 0 ? `; ${result.memtableFlushes} memtable flush(es)` : ''}\n`,
  );
}

async function runPlan(files: string[], o: IngestSstCliOptions): Promise<void> {
  const { opts, codec } = ingestOptionsFrom(o);
  const check = sstCheckOf(o, codec, opts.replaceRange !== undefined);
  const { plan, outcome } = await withEngine(o.db, false, async (e) => {
    const checked = check === null ? null : await planChecked(e, files, check);
    return { plan: await e.planIngestion(files, opts), outcome: checked };
  });
  if (o.json === true) {
    const out = {
      db: o.db,
      files: plan.files.map(fileJson),
      memtableFlushNeeded: plan.memtableFlushNeeded,
      lastSequence: plan.lastSequence,
    };
    process.stdout.write(`${JSON.stringify({ ...out, ...checkJson(outcome, check) })}\n`);
    return;
  }
  if (outcome !== null && check !== null) process.stdout.write(`${checkLine(outcome, o.db, check)}\n`);
  for (const f of plan.files) process.stdout.write(`${fileLine(f, codec)}\n`);
  if (plan.memtableFlushNeeded) process.stdout.write('a memtable holds data in these ranges: ingest would flush it first\n');
  if (outcome !== null && !outcome.policy.ingest)
    process.stdout.write(
      `--on-conflict abort would ingest nothing (${outcome.report.summary.conflicts} conflicts); the plan shows the files as they would go in\n`,
    );
}

function addSharedOptions(cmd: Command): Command {
  cmd
    .requiredOption('--db <dir>', 'database directory')
    .option('--json', 'print one JSON object')
    .option('--hex', 'keys in hex (--replace-start/--replace-end and output)')
    .option('--key <spec>', 'typed keys, as the import --key spec (e.g. id:int64)')
    .option('--no-verify-checksums', 'do not read every block of the files before ingesting')
    .option('--no-blocking-flush', 'fail instead of flushing a memtable that overlaps a file')
    .option('--require-bottommost', 'fail unless every file goes to the bottom level')
    .option('--replace-start <key>', 'delete existing keys from this key (inclusive) ...')
    .option('--replace-end <key>', '... to this key (exclusive), atomically with the ingestion');
  return addOptions(cmd, SST_CHECK_OPTIONS);
}

/** Adds `ingest` and `plan` to the `sst` command group (creating the group if absent). */
export function registerIngestSstCommands(program: Command): void {
  const sst = program.commands.find((c) => c.name() === 'sst') ?? program.command('sst').description('single SST files');
  addSharedOptions(
    sst.command('ingest').description('copy external SST files into a database atomically').argument('<files...>', 'SST files'),
  )
    .option('--copy', 'copy the files into the database (the default): the database never shares them')
    .option('--link', 'hard-link the files instead of copying them: never change them afterwards, the database reads them')
    .option('--move', 'hard-link the files, then remove the given paths once the ingestion is committed')
    .option('--create-if-missing', 'create the database if there is none')
    .action((files: string[], o: IngestSstCliOptions) => runIngest(files, o));
  addSharedOptions(
    sst.command('plan').description('show where `sst ingest` would put the files, changing nothing').argument('<files...>', 'SST files'),
  ).action((files: string[], o: IngestSstCliOptions) => runPlan(files, o));
}
