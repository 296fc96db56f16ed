/**
 * bench/import --into-db: the whole `ingest import --db` pipeline (importIntoDb: import, conflict
 * check, policy, ingestion) into a live engine that already holds data, timed phase by phase; and,
 * with a busy writer, what the import costs a writer of the same engine.
 *
 * Workload (the nightly load of a trades table):
 * - the database holds the previous night's load: `existingRows` trades, t_id FIRST_TRADE_ID ..
 *   + existingRows - 1, loaded by importIntoDb into an empty database (bottom level), then
 *   `recentPuts` single puts updating the most recent of those trades (a day's status changes),
 *   left in the memtable. The loaded database is built once, closed, and copied for every run;
 *   the puts are made on the copy, after it is opened;
 * - tonight's CSV holds `importRows` trades (another seed: other values) whose t_id start
 *   `overlap` x importRows below the end of last night's: that share restates the most recent
 *   existing trades (late corrections; they conflict), the rest are new. --on-conflict overwrite
 *   (the default) lets it land.
 *
 * Quiet run: importIntoDb on the open engine, nothing else writing. Reported: the whole run and
 * each phase (parse, merge + write, publish, the conflict check with its scan step, the ingestion
 * step alone), the conflict counts, where the files landed (level and global seqno of each), and
 * the memtable flushes the ingestion waited for.
 *
 * Busy run (--busy-writer): on a fresh copy, a writer (bench/busy-writer.ts) puts 100-byte trade
 * rows into the same Engine object for `busySeconds` before the import, during all of it, and
 * `busySeconds` after. It must be the same object in the same process: the engine's LOCK keeps any
 * other opener out. `writerKeys` inside: the writer updates the trades tonight's CSV restates (the
 * ingestion must flush them out of the memtable first, and its values win over the writes made
 * before its commit; those of its writes that arrive while the span is latched wait and land
 * after the commit); outside: older trades the import does not touch. Any policy goes (the
 * checked ingestion keeps abort and skip exact beside the writer). Reported: the writer's
 * writes/s before (the idle baseline, with its own longest stall), in each phase, and after; the
 * dip against before; the longest stall in each phase; and the targets: outside, at least
 * 80% of the idle rate over the whole import and no stall of 50 ms or more; inside, no stall
 * longer than the span was latched (check + ingestion) plus the idle baseline's own stall.
 *
 * Phase windows come from the result's durations laid end to end from the call's start: parse,
 * merge, publish (the import's phases), then check + policy up to the ingestion, whose end is the
 * call's return (the private directory's removal, a few unlinks, falls in the ingestion's window).
 */
import * as fs from 'fs';
import * as path from 'path';
import { Engine } from '../src/engine/engine';
import { DbImportOptions, DbImportResult, ImportIntoDbOptions, importIntoDb } from '../src/ingest/importIntoDb';
import { OnConflict } from '../src/conflict/policy';
import { BusyWriter, startBusyWriter } from './busy-writer';
import { FIRST_TRADE_ID } from './gen-trades';

export interface IntoDbArgs {
  existingCsv: string;
  existingRows: number;
  importCsv: string;
  importRows: number;
  /** First t_id of tonight's CSV. */
  importFirstId: number;
  recentPuts: number;
  onConflict: OnConflict;
  busyWriter: boolean;
  writerKeys: 'inside' | 'outside';
  busySeconds: number;
  importOptions: DbImportOptions['import'];
  workDir: string;
}

/** A trade row's value as the import stores it (raw: the line after t_id), about 100 bytes. */
const WRITER_VALUE = Buffer.from(
  '2005-06-01 10:00:00.000|CMPT|TMB|1|ZXQ|400|25.00|43000000001|Betty Chen|25.10|1.00|2.00|3.00|0',
  'latin1',
);
const RECENT_PUT_VALUE = Buffer.from(
  '2005-06-01 09:00:00.000|CMPT|TLB|1|ZXQ|300|24.00|43000000002|Ivan Ito|24.10|1.00|2.00|3.00|1',
  'latin1',
);
const TWO_POW_32 = 2 ** 32;

/** The `t_id:int64` key of a (non-negative) trade id: big-endian with the sign bit flipped. */
export function tradeKey(id: number): Buffer {
  const k = Buffer.allocUnsafe(8);
  k.writeUInt32BE((Math.floor(id / TWO_POW_32) ^ 0x80000000) >>> 0, 0);
  k.writeUInt32BE(id % TWO_POW_32, 4);
  return k;
}

interface PhaseWindow {
  phase: string;
  fromSeconds: number;
  toSeconds: number;
}

function phaseWindows(r: DbImportResult, start: number, end: number): PhaseWindow[] {
  const p = r.import.phases;
  const ingestSeconds = r.ingest?.seconds ?? 0;
  const w: PhaseWindow[] = [];
  let t = start;
  for (const [phase, s] of [
    ['parse', p.parseSeconds],
    ['merge+write', p.mergeSeconds],
    ['publish', p.publishSeconds],
  ] as const) {
    w.push({ phase, fromSeconds: t, toSeconds: t + s });
    t += s;
  }
  const ingestStart = Math.max(t, end - ingestSeconds);
  w.push({ phase: 'check+policy', fromSeconds: t, toSeconds: ingestStart });
  w.push({ phase: 'ingest', fromSeconds: ingestStart, toSeconds: end });
  return w;
}

/** Opens a fresh copy of the loaded database and makes the day's puts. */
async function openRunCopy(baseDir: string, runDir: string, a: IntoDbArgs): Promise<Engine> {
  fs.rmSync(runDir, { recursive: true, force: true });
  fs.cpSync(baseDir, runDir, { recursive: true });
  const e = await Engine.open(runDir);
  const lastId = FIRST_TRADE_ID + a.existingRows - 1;
  for (let i = 0; i < Math.min(a.recentPuts, a.existingRows); i++) await e.put(tradeKey(lastId - i), RECENT_PUT_VALUE);
  return e;
}

function landed(r: DbImportResult): { level: number; globalSeqno: number; sizeBytes: number }[] {
  return (r.ingest?.files ?? []).map((f) => ({ level: f.level, globalSeqno: f.globalSeqno, sizeBytes: f.sizeBytes }));
}

function runSummary(r: DbImportResult, wallSeconds: number) {
  const p = r.import.phases;
  const ingestSeconds = r.ingest?.seconds ?? 0;
  return {
    seconds: +wallSeconds.toFixed(3),
    rowsPerSecond: Math.round(r.import.rowsRead / wallSeconds),
    parseThreads: r.import.parseThreads,
    mergeThreads: r.import.mergeThreads,
    phases: {
      parseSeconds: p.parseSeconds,
      mergeSeconds: p.mergeSeconds,
      publishSeconds: p.publishSeconds,
      importSeconds: p.totalSeconds,
      checkSeconds: +Math.max(0, wallSeconds - p.totalSeconds - ingestSeconds).toFixed(3),
      scanSeconds: +r.report.summary.scanSeconds.toFixed(3),
      ingestSeconds,
    },
    conflicts: {
      new: r.report.summary.new,
      unchanged: r.report.summary.unchanged,
      conflicts: r.report.summary.conflicts,
      strategy: r.report.summary.strategy,
    },
    files: landed(r),
    memtableFlushes: r.ingest?.memtableFlushes ?? 0,
    writesStopped: r.ingest?.writesStopped ?? false,
    lastSequenceBefore: r.report.snapshotSequence,
    lastSequenceAfter: r.ingest?.lastSequence ?? null,
  };
}

/** Checks a restated key and a new key read back as tonight's values (the ones the CSV holds). */
function spotCheck(e: Engine, a: IntoDbArgs): void {
  const restated = a.importFirstId;
  const fresh = a.importFirstId + a.importRows - 1;
  for (const id of [restated, fresh]) {
    const v = e.get(tradeKey(id));
    if (v === null || v.equals(RECENT_PUT_VALUE) || v.equals(WRITER_VALUE))
      throw new Error(`t_id ${id} does not read back as imported after the run`);
  }
}

export interface IntoDbReport {
  existingRows: number;
  importRows: number;
  importFirstId: number;
  overlapRows: number;
  recentPuts: number;
  onConflict: OnConflict;
  baseLoadSeconds: number;
  quiet: ReturnType<typeof runSummary>;
  busy: null | {
    writerKeys: 'inside' | 'outside';
    run: ReturnType<typeof runSummary>;
    writesPerSecondBefore: number;
    /** The idle baseline's own longest stall (the engine's flushes, with no import running). */
    longestGapMsBefore: number;
    /**
     * The idle twin: the same writer on a fresh copy of the same database, with no import, for
     * the same length of time; its rate and longest stall over the window the import took in the
     * busy run. The engine's own flushes and compactions of the writer's data fall in both runs'
     * windows alike, so the twin is the baseline the import's cost is measured against.
     */
    idleTwin: { writesPerSecondInWindow: number; longestGapMsInWindow: number; compactionsInWindow: number };
    /** How long the import's span was latched (check + ingestion): the bound for a writer inside it. */
    latchHeldMs: number;
    writesPerSecondAfter: number;
    longestGapMsAfter: number;
    /** Compactions the engine completed during the import, and in the after window (they run on the writer's thread). */
    compactionsDuringImport: number;
    compactionsAfter: number;
    phases: { phase: string; seconds: number; writesPerSecond: number; dipPercent: number; longestGapMs: number }[];
    writesPerSecondDuringImport: number;
    dipPercentDuringImport: number;
    longestGapMsDuringImport: number;
    writes: number;
  };
}

export async function runIntoDb(a: IntoDbArgs): Promise<IntoDbReport> {
  const baseDir = path.join(a.workDir, 'loaded');
  const t0 = performance.now();
  await importIntoDb({ dbDir: baseDir, import: { ...a.importOptions, inputs: [a.existingCsv] }, onConflict: 'abort' });
  const baseLoadSeconds = (performance.now() - t0) / 1000;
  const runDir = path.join(a.workDir, 'run');
  const options = (engine: Engine): ImportIntoDbOptions => ({
    dbDir: runDir,
    engine,
    import: { ...a.importOptions, inputs: [a.importCsv] },
    onConflict: a.onConflict,
    // The run under abort is measured too: its result, not an ImportConflictError.
    throwOnConflicts: false,
  });

  let e = await openRunCopy(baseDir, runDir, a);
  let quiet: ReturnType<typeof runSummary>;
  try {
    const t1 = performance.now();
    const r = await importIntoDb(options(e));
    quiet = runSummary(r, (performance.now() - t1) / 1000);
    if (a.onConflict === 'overwrite') spotCheck(e, a);
  } finally {
    await e.close();
  }

  let busy: IntoDbReport['busy'] = null;
  if (a.busyWriter) {
    e = await openRunCopy(baseDir, runDir, a);
    let writer: BusyWriter | null = null;
    try {
      const overlapRows = FIRST_TRADE_ID + a.existingRows - a.importFirstId;
      const insideIds = Math.max(1, overlapRows > 0 ? overlapRows : a.importRows);
      const outsideIds = Math.max(1, a.importFirstId - FIRST_TRADE_ID);
      const keyOf =
        a.writerKeys === 'inside'
          ? (n: number) => tradeKey(a.importFirstId + (n % insideIds))
          : (n: number) => tradeKey(FIRST_TRADE_ID + (n % outsideIds));
      const w = startBusyWriter(e, { keyOf, value: WRITER_VALUE });
      writer = w;
      await new Promise((r) => setTimeout(r, a.busySeconds * 1000));
      const compactionsBefore = e.stats().compaction.count;
      const start = w.now();
      const r = await importIntoDb(options(e));
      const end = w.now();
      const compactionsAtEnd = e.stats().compaction.count;
      await new Promise((r) => setTimeout(r, a.busySeconds * 1000));
      await w.stop();
      writer = null;
      const stop = w.now();
      if (w.recordsFull) throw new Error('the busy writer outran its record: lower --busy-seconds');
      const before = w.rateIn(0, start);
      const dip = (rate: number): number => +(100 * (1 - rate / before)).toFixed(1);
      const during = w.rateIn(start, end);
      busy = {
        writerKeys: a.writerKeys,
        run: runSummary(r, end - start),
        writesPerSecondBefore: Math.round(before),
        longestGapMsBefore: Math.round(w.longestGapMsIn(Math.min(0.5, start / 2), start)),
        latchHeldMs: Math.round((r.ingest?.latchHeldSeconds ?? 0) * 1000),
        writesPerSecondAfter: Math.round(w.rateIn(end, stop)),
        longestGapMsAfter: Math.round(w.longestGapMsIn(end, stop)),
        compactionsDuringImport: compactionsAtEnd - compactionsBefore,
        compactionsAfter: e.stats().compaction.count - compactionsAtEnd,
        phases: phaseWindows(r, start, end).map((p) => {
          const rate = w.rateIn(p.fromSeconds, p.toSeconds);
          return {
            phase: p.phase,
            seconds: +(p.toSeconds - p.fromSeconds).toFixed(3),
            writesPerSecond: Math.round(rate),
            dipPercent: dip(rate),
            longestGapMs: Math.round(w.longestGapMsIn(p.fromSeconds, p.toSeconds)),
          };
        }),
        writesPerSecondDuringImport: Math.round(during),
        dipPercentDuringImport: dip(during),
        longestGapMsDuringImport: Math.round(w.longestGapMsIn(start, end)),
        writes: w.writes,
        idleTwin: { writesPerSecondInWindow: 0, longestGapMsInWindow: 0, compactionsInWindow: 0 },
      };
      // Writes after the ingestion's commit win over the import: only a key the writer left alone is checked.
      if (a.writerKeys === 'outside') spotCheck(e, a);
      await e.close();
      busy.idleTwin = await runIdleTwin(baseDir, runDir, a, keyOf, start, end, stop);
    } finally {
      await writer?.stop();
      await e.close();
    }
  }
  return {
    existingRows: a.existingRows,
    importRows: a.importRows,
    importFirstId: a.importFirstId,
    overlapRows: Math.max(0, FIRST_TRADE_ID + a.existingRows - a.importFirstId),
    recentPuts: Math.min(a.recentPuts, a.existingRows),
    onConflict: a.onConflict,
    baseLoadSeconds: +baseLoadSeconds.toFixed(3),
    quiet,
    busy,
  };
}

/** The busy run again without the import: the writer alone for `stopSeconds`, measured over [start, end). */
async function runIdleTwin(
  baseDir: string,
  runDir: string,
  a: IntoDbArgs,
  keyOf: (n: number) => Buffer,
  startSeconds: number,
  endSeconds: number,
  stopSeconds: number,
): Promise<NonNullable<IntoDbReport['busy']>['idleTwin']> {
  const e = await openRunCopy(baseDir, runDir, a);
  try {
    const w = startBusyWriter(e, { keyOf, value: WRITER_VALUE });
    await new Promise((r) => setTimeout(r, startSeconds * 1000));
    const compactionsAtStart = e.stats().compaction.count;
    await new Promise((r) => setTimeout(r, (endSeconds - w.now()) * 1000));
    const compactionsInWindow = e.stats().compaction.count - compactionsAtStart;
    await new Promise((r) => setTimeout(r, Math.max(0, stopSeconds - w.now()) * 1000));
    await w.stop();
    return {
      writesPerSecondInWindow: Math.round(w.rateIn(startSeconds, endSeconds)),
      longestGapMsInWindow: Math.round(w.longestGapMsIn(startSeconds, endSeconds)),
      compactionsInWindow,
    };
  } finally {
    await e.close();
  }
}

/** The report as lines of text. */
export function formatIntoDb(r: IntoDbReport): string[] {
  const n = (x: number): string => x.toLocaleString('en-US');
  const out: string[] = [];
  out.push(
    `database: previous load of ${n(r.existingRows)} trades (importIntoDb into an empty database, ${r.baseLoadSeconds.toFixed(2)} s) + ${n(r.recentPuts)} recent puts in the memtable;` +
      ` import: ${n(r.importRows)} trades from t_id ${r.importFirstId}, ${n(r.overlapRows)} of them restating existing trades; --on-conflict ${r.onConflict}`,
  );
  const run = (label: string, s: IntoDbReport['quiet']): string => {
    const p = s.phases;
    const files = s.files.map((f) => `L${f.level}@${f.globalSeqno}`).join(' ');
    return (
      `${label}: ${s.seconds.toFixed(2)} s, ${n(s.rowsPerSecond)} rows/s (${s.parseThreads} parse / ${s.mergeThreads} merge threads); parse ${p.parseSeconds}s, merge+write ${p.mergeSeconds}s, publish ${p.publishSeconds}s,` +
      ` check ${p.checkSeconds}s (scan ${p.scanSeconds}s, ${s.conflicts.strategy}), ingest step ${p.ingestSeconds}s;` +
      ` ${n(s.conflicts.new)} new, ${n(s.conflicts.conflicts)} conflicts, ${n(s.conflicts.unchanged)} unchanged;` +
      ` files (level@seqno) ${files || 'none'}; ${s.memtableFlushes} memtable flush(es)${s.writesStopped ? ', writes stopped' : ''}; sequence ${s.lastSequenceBefore} -> ${s.lastSequenceAfter ?? '-'}`
    );
  };
  out.push(run('quiet', r.quiet));
  if (r.busy !== null) {
    const b = r.busy;
    out.push(run(`busy (writer ${b.writerKeys} the import's range)`, b.run));
    const k = (x: number): string => `${(x / 1000).toFixed(1)}k`;
    out.push(
      `  writer writes/s: before ${k(b.writesPerSecondBefore)}, during the import ${k(b.writesPerSecondDuringImport)} (dip ${b.dipPercentDuringImport}%, longest stall ${b.longestGapMsDuringImport} ms),` +
        ` after ${k(b.writesPerSecondAfter)} (longest stall ${b.longestGapMsAfter} ms); compactions completed: ${b.compactionsDuringImport} during, ${b.compactionsAfter} after`,
    );
    const t = b.idleTwin;
    out.push(
      `  idle twin (same writer, same database copy, no import), over the import's window: ${k(t.writesPerSecondInWindow)} writes/s,` +
        ` longest stall ${t.longestGapMsInWindow} ms, ${t.compactionsInWindow} compaction(s) completed`,
    );
    const keptPercent = (100 * b.writesPerSecondDuringImport) / t.writesPerSecondInWindow;
    if (b.writerKeys === 'outside') {
      out.push(
        `  targets (writer outside the span): keeps >= 80% of the idle twin's rate: ${keptPercent.toFixed(1)}% ${keptPercent >= 80 ? 'met' : 'NOT met'};` +
          ` longest stall < 50 ms: ${b.longestGapMsDuringImport} ms ${b.longestGapMsDuringImport < 50 ? 'met' : 'NOT met'}` +
          ` (idle twin ${t.longestGapMsInWindow} ms; before the import ${b.writesPerSecondBefore} writes/s, longest stall ${b.longestGapMsBefore} ms)`,
      );
    } else {
      out.push(
        `  target (writer inside the span): held up no longer than check + ingest (span latched ${b.latchHeldMs} ms): longest stall ${b.longestGapMsDuringImport} ms` +
          ` ${b.longestGapMsDuringImport <= b.latchHeldMs + b.longestGapMsBefore ? 'met' : 'NOT met'} (idle baseline's own longest stall ${b.longestGapMsBefore} ms)`,
      );
    }
    for (const p of b.phases)
      out.push(
        `    ${p.phase.padEnd(13)} ${p.seconds.toFixed(3).padStart(7)} s  ${k(p.writesPerSecond).padStart(7)} writes/s  dip ${String(p.dipPercent).padStart(6)}%  longest stall ${p.longestGapMs} ms`,
      );
  }
  return out;
}
