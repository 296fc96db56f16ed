/**
 * checkSstConflicts: compares new SST files (sorted, non-overlapping, put-only: what `ingest
 * import` writes) with the live engine at one snapshot and reports, for their keys, which are
 * new, which are unchanged, and which conflict (see scan.ts for the semantics and strategies,
 * report.ts for the report).
 *
 * Steps: open the files as one sorted run (sstSet.ts); take a snapshot unless given one; choose
 * the strategy; scan (timed alone as scanSeconds); then, for the conflicts listed, fill in what
 * the scan did not need: sequence numbers the get strategy could not see, and each new row's
 * input file and line from the caller's `sourceOf` (called in ascending key order, so it can
 * walk a side index forward). With a report sink (an NDJSON report, reportStream.ts) that is
 * done a batch at a time while the scan runs, and each batch is handed to the sink and dropped,
 * so the conflicts listed are bounded by maxReported alone, not by memory.
 *
 * Two drivers run the same steps (the scan is a generator, scan.ts): checkSstConflicts runs it in
 * one go; checkSstConflictsSliced hands the event loop back every few milliseconds, for a process
 * that keeps serving while it checks. The report's keyComparisons, scanSeconds and scanCpuSeconds
 * count the scan's own slices only, not the work that ran between them.
 *
 * Strategy `auto` (the default) is adaptive (adaptiveScan.ts): it classifies the run in chunks,
 * each by whichever strategy has measured the cheaper per SST key so far, exploring the other
 * now and then within a small time budget. Its first chunk follows CockroachDB's AddSSTable
 * rule: when the engine's table bytes in the SSTs' key range exceed AUTO_GET_RATIO times the
 * SSTs' size, point lookups, since each costs a few Bloom probes however much data lies in
 * between, whereas a merge walks (or seeks through) that data; otherwise the interleaved seek
 * scan, which reads each side in order and skips the spans the other side does not touch. The
 * rule alone is wrong where the SST keys are absent from the engine (a Bloom filter rejects them
 * for a get, while the interleaving still seeks the engine to each) and where density varies
 * across the key space; measuring is what settles it. For auto, the byte estimate and the
 * per-chunk choices are part of the timed scan (scanSeconds), since they are its cost.
 */
import { Engine, Snapshot } from '../engine/engine';
import { perf } from '../base/perfContext';
import { BlockCache } from '../sstable/reader/blockCache';
import { nativeUtil } from '../util/nativeUtil';
import { IngestError, assert } from '../util/errors';
import { SliceOptions, Sliced, runSliced, runSlicedSync } from '../util/slices';
import { ConflictCollector } from './collector';
import {
  CONFLICT_REPORT_FORMAT,
  CONFLICT_REPORT_VERSION,
  ConflictReport,
  ConflictStrategy,
  DEFAULT_MAX_REPORTED,
  ReportedConflict,
  RowSource,
  showKey,
  showValue,
} from './report';
import { engineHoldsKeysIn, openEngineIterator, resolveExistingSeqs, scanByGets, scanBySeeking, ScanInput } from './scan';
import { DbIterator } from '../engine/dbIterator';
import { AdaptiveScanStats, FirstChoice, scanAdaptively, ScanStrategy } from './adaptiveScan';
import { SstSet } from './sstSet';
import type { PendingConflict } from './collector';
import type { ConflictSink } from './reportStream';
import { UNCHANGED_RUNS_MAX_BYTES, UnchangedRuns } from './unchangedRuns';

/** Engine bytes in range per SST byte above which `auto` picks point lookups (CockroachDB's 10). */
export const AUTO_GET_RATIO = 10;
/**
 * The byte rule is trusted (auto's first exploration waits for its time budget) when the ratio
 * is this factor beyond AUTO_GET_RATIO either way: over 50x, where a merge would walk or seek
 * through fifty times the SSTs' data, or under 2x, where the engine holds about as much as the
 * SSTs in their span or less and the interleaving skips from engine key to engine key. Between
 * the two, bench/conflict.ts's grid and the tests have cases won by either strategy (the dense
 * present keys of test/conflict at 16x go to seek), so auto measures both early.
 */
export const AUTO_CONFIDENT_FACTOR = 5;

export interface CheckSstConflictsOptions {
  /** auto (default), seek, or get. */
  strategy?: ConflictStrategy;
  /** Read at this snapshot; default: a snapshot taken now and released at the end. */
  snapshot?: Snapshot;
  /** Conflicts listed in the report (default DEFAULT_MAX_REPORTED); counts are always exact. */
  maxReported?: number;
  /** Input file and line of a new row, by user key; called for listed conflicts, in key order. */
  sourceOf?: (userKey: Buffer) => RowSource | undefined;
  /** Display text of a key (e.g. the import's key spec); default printable UTF-8 or 0x-hex. */
  formatKey?: (userKey: Buffer) => string;
  /** Keep every conflicting key in report.conflictingKeys (the skip policy needs them). */
  collectConflictingKeys?: boolean;
  /**
   * Hand the listed conflicts to this sink (an NDJSON report file, reportStream.ts) as the scan
   * finds them, in key order, a batch of about STREAM_BATCH_CONFLICTS at a time between the
   * scan's slices, keeping none: report.conflicts then holds only the first (for messages),
   * summary.conflictsReported counts them all, and memory stays bounded whatever maxReported is.
   */
  reportSink?: ConflictSink;
  /**
   * Keep the runs of unchanged entries in report.unchangedRuns (to leave them out of the
   * ingestion), within this many bytes (true: UNCHANGED_RUNS_MAX_BYTES). Default: not kept.
   */
  collectUnchangedRuns?: boolean | number;
  /** For benchmarks only: seek without trySeekUsingNext. Default true. */
  trySeekUsingNext?: boolean;
  /** Verify SST block checksums while reading (default true). */
  verifyChecksums?: boolean;
  /** Block cache for the SSTs' data blocks (default none: each block is read when visited). */
  blockCache?: BlockCache;
  /** For tests only: the clock (milliseconds) auto times its chunks with; default performance.now. */
  adaptiveClockMs?: () => number;
}

interface StrategyChoice {
  strategy: ScanStrategy;
  /** summary.strategyReason, built once the scan is done (its text is not the scan's cost). */
  describe: () => string;
  engineBytesInSpan: number | null;
  /** What the adaptive scan did (auto only, once the SSTs hold keys). */
  adaptive: AdaptiveScanStats | null;
}

export function checkSstConflicts(engine: Engine, sstPaths: readonly string[], opts: CheckSstConflictsOptions = {}): ConflictReport {
  validateOptions(opts);
  const run = SstSet.open(sstPaths, { verifyChecksums: opts.verifyChecksums, blockCache: opts.blockCache });
  try {
    return checkSstSetConflicts(engine, run, opts);
  } finally {
    run.close();
  }
}

/** checkSstConflicts a slice at a time, returning to the event loop between slices. */
export async function checkSstConflictsSliced(
  engine: Engine,
  sstPaths: readonly string[],
  opts: CheckSstConflictsOptions & Pick<SliceOptions, 'sliceMs'> = {},
): Promise<ConflictReport> {
  validateOptions(opts);
  const run = SstSet.open(sstPaths, { verifyChecksums: opts.verifyChecksums, blockCache: opts.blockCache });
  try {
    const meter = new ScanMeter();
    const slices = conflictCheckSlices(engine, run, opts, meter);
    return await runSliced(slices, { sliceMs: opts.sliceMs, onPause: () => meter.pause(), onResume: () => meter.resume() });
  } finally {
    run.close();
  }
}

/** checkSstConflicts over SSTs already open as a run (for callers that check one set repeatedly). */
export function checkSstSetConflicts(engine: Engine, run: SstSet, opts: CheckSstConflictsOptions = {}): ConflictReport {
  validateOptions(opts);
  return runSlicedSync(conflictCheckSlices(engine, run, opts, new ScanMeter()));
}

/** The scanning thread's own CPU clock, seconds; null without the native addon or the clock. */
const threadCpuClock = loadThreadClock();

function loadThreadClock(): (() => number) | null {
  const codec = nativeUtil;
  if (codec === null || codec.threadCpuSeconds() < 0) return null;
  return () => codec.threadCpuSeconds();
}

/**
 * What the scan itself costs, its slices only: key comparisons (perf context), wall time,
 * process CPU time and the scanning thread's CPU time, paused while other work has the event loop.
 */
class ScanMeter {
  keyComparisons = 0;
  seconds = 0;
  cpuSeconds = 0;
  /** Null when the thread clock is unavailable. */
  threadCpuSeconds: number | null = threadCpuClock === null ? null : 0;
  private running = false;
  private comparisonsAt = 0;
  private wallAtMs = 0;
  private cpuAt: NodeJS.CpuUsage = { user: 0, system: 0 };
  private threadCpuAt = 0;

  start(): void {
    this.running = true;
    this.resumeClock();
  }

  pause(): void {
    if (!this.running) return;
    this.keyComparisons += perf.keyComparisons - this.comparisonsAt;
    this.seconds += (performance.now() - this.wallAtMs) / 1000;
    const cpu = process.cpuUsage(this.cpuAt);
    this.cpuSeconds += (cpu.user + cpu.system) / 1e6;
    if (threadCpuClock !== null && this.threadCpuSeconds !== null) this.threadCpuSeconds += threadCpuClock() - this.threadCpuAt;
  }

  resume(): void {
    if (this.running) this.resumeClock();
  }

  stop(): void {
    this.pause();
    this.running = false;
  }

  private resumeClock(): void {
    this.comparisonsAt = perf.keyComparisons;
    this.wallAtMs = performance.now();
    this.cpuAt = process.cpuUsage();
    if (threadCpuClock !== null) this.threadCpuAt = threadCpuClock();
  }
}

function* conflictCheckSlices(engine: Engine, run: SstSet, opts: CheckSstConflictsOptions, meter: ScanMeter): Sliced<ConflictReport> {
  const requested = opts.strategy ?? 'auto';
  const maxReported = opts.maxReported ?? DEFAULT_MAX_REPORTED;
  const trySeekUsingNext = opts.trySeekUsingNext ?? true;
  const ownSnapshot = opts.snapshot === undefined ? engine.getSnapshot() : null;
  const snapshot = opts.snapshot ?? (ownSnapshot as Snapshot);
  try {
    const collector = new ConflictCollector(maxReported, opts.collectConflictingKeys === true, unchangedRunsFor(opts));
    const lister = new ConflictLister(collector, opts, run, () => resolveExistingSeqs(engine, snapshot, collector));
    let choice: StrategyChoice = {
      strategy: requested === 'get' ? 'get' : 'seek',
      describe: () => 'the SSTs hold no keys',
      engineBytesInSpan: null,
      adaptive: null,
    };
    let emptySpan = true;
    if (!run.isEmpty) {
      const upperBound = Buffer.concat([run.largest, Buffer.of(0)]);
      const input = { engine, run, snapshot, upperBound, collector };
      meter.start();
      ({ choice, emptySpan } = yield* lister.streamed(scanWith(requested, input, trySeekUsingNext, opts.adaptiveClockMs), meter));
      meter.stop();
    }
    const { keyComparisons, seconds: scanSeconds, cpuSeconds: scanCpuSeconds, threadCpuSeconds: scanThreadCpuSeconds } = meter;
    const conflicts = lister.finish();
    const unchanged = collector.unchanged;
    assertCountsAddUp(run.totalEntries, unchanged, collector, collector.listed, maxReported);
    return {
      format: CONFLICT_REPORT_FORMAT,
      version: CONFLICT_REPORT_VERSION,
      db: engine.dir,
      snapshotSequence: snapshot.sequence,
      sstFiles: run.files.map((f) => f.path),
      summary: {
        sstKeys: run.totalEntries,
        new: run.totalEntries - unchanged - collector.conflicts,
        unchanged,
        conflicts: collector.conflicts,
        engineKeysVisited: collector.engineKeysVisited,
        strategy: choice.strategy,
        strategyRequested: requested,
        strategyReason: choice.describe(),
        trySeekUsingNext,
        emptySpan,
        engineBytesInSpan: choice.engineBytesInSpan,
        adaptive: choice.adaptive,
        sstBytes: run.totalFileBytes,
        keyComparisons,
        scanSeconds: Math.round(scanSeconds * 1e6) / 1e6,
        scanCpuSeconds: Math.round(scanCpuSeconds * 1e6) / 1e6,
        scanThreadCpuSeconds: scanThreadCpuSeconds === null ? null : Math.round(scanThreadCpuSeconds * 1e6) / 1e6,
        conflictsReported: collector.listed,
        maxReported,
        conflictsHeldMax: collector.heldMax,
      },
      conflicts,
      conflictingKeys: collector.allKeys,
      unchangedRuns: collector.unchangedRuns,
    };
  } finally {
    ownSnapshot?.release();
  }
}

/** Listed conflicts a streaming check writes out at once (and at most about this many held, plus a slice's). */
export const STREAM_BATCH_CONFLICTS = 1024;

/**
 * Turns the collector's listed conflicts into the report's entries (sequence numbers the scan
 * could not see filled in, keys shown, row sources looked up in key order): all at the end, or,
 * with opts.reportSink, a batch at a time at the scan's yields, handed to the sink and forgotten.
 */
class ConflictLister {
  private first: ReportedConflict | null = null;

  constructor(
    private readonly collector: ConflictCollector,
    private readonly opts: CheckSstConflictsOptions,
    private readonly run: SstSet,
    private readonly resolveSeqs: () => void,
  ) {}

  /** The scan, with a full batch written out at each of its yields (timed apart from the scan: meter paused). */
  *streamed<T>(scan: Sliced<T>, meter: ScanMeter): Sliced<T> {
    if (this.opts.reportSink === undefined) return yield* scan;
    let finished = false;
    try {
      for (;;) {
        const step = scan.next();
        if (step.done === true) {
          finished = true;
          return step.value;
        }
        if (this.collector.reported.length >= STREAM_BATCH_CONFLICTS) {
          meter.pause();
          this.writeOut(this.opts.reportSink);
          meter.resume();
        }
        yield;
      }
    } finally {
      if (!finished) scan.return(undefined as never);
    }
  }

  /** The report's conflicts: every listed one; streamed, the first only (the rest written out now). */
  finish(): ReportedConflict[] {
    const sink = this.opts.reportSink;
    if (sink === undefined) {
      this.resolveSeqs();
      return this.collector.reported.map((c) => this.reportedOf(c));
    }
    this.writeOut(sink);
    return this.first === null ? [] : [this.first];
  }

  private writeOut(sink: ConflictSink): void {
    this.resolveSeqs();
    for (const c of this.collector.takeReported()) {
      const reported = this.reportedOf(c);
      this.first ??= reported;
      sink.write(reported);
    }
  }

  private reportedOf(c: PendingConflict): ReportedConflict {
    const formatKey = this.opts.formatKey ?? showKey;
    return {
      key: formatKey(c.key),
      keyHex: c.key.toString('hex'),
      existingValue: showValue(c.existingValue, c.existingSizeBytes),
      newValue: showValue(c.newValue, c.newSizeBytes),
      existingSeq: c.existingSeq,
      source: this.opts.sourceOf?.(c.key) ?? null,
      sstFile: this.run.files[c.fileIndex].path,
    };
  }
}

function unchangedRunsFor(opts: CheckSstConflictsOptions): UnchangedRuns | null {
  const asked = opts.collectUnchangedRuns;
  if (asked === undefined || asked === false) return null;
  return new UnchangedRuns(asked === true ? UNCHANGED_RUNS_MAX_BYTES : asked);
}

function validateOptions(opts: CheckSstConflictsOptions): void {
  const requested = opts.strategy ?? 'auto';
  if (requested !== 'auto' && requested !== 'seek' && requested !== 'get') {
    throw new IngestError('INVALID_ARGUMENT', `conflict strategy must be auto, seek or get, got "${String(requested)}"`);
  }
  const maxReported = opts.maxReported ?? DEFAULT_MAX_REPORTED;
  if (!Number.isSafeInteger(maxReported) || maxReported < 0) {
    throw new IngestError('INVALID_ARGUMENT', `maxReported must be a non-negative integer, got ${maxReported}`);
  }
}

/**
 * The empty-span check, then the strategy asked for. The check is the same code whatever the
 * strategy (one bounded seek), so on a span the engine holds nothing in, auto costs what the
 * others do.
 */
function* scanWith(
  requested: 'auto' | ScanStrategy,
  input: ScanInput,
  trySeekUsingNext: boolean,
  clockMs: (() => number) | undefined,
): Sliced<{ choice: StrategyChoice; emptySpan: boolean }> {
  let eng: DbIterator | null = openEngineIterator(input);
  try {
    if (!engineHoldsKeysIn(input, eng)) return { choice: emptySpanChoice(requested), emptySpan: true };
    if (requested === 'auto') return { choice: yield* scanAuto(input, eng, trySeekUsingNext, clockMs), emptySpan: false };
    if (requested === 'seek') yield* scanBySeeking(input, eng, { trySeekUsingNext });
    else {
      // Point lookups need no engine iterator: it goes before the scan, not after.
      eng.close();
      eng = null;
      yield* scanByGets(input);
    }
    return { choice: requestedChoice(requested), emptySpan: false };
  } finally {
    eng?.close();
  }
}

/** The choice of a strategy the caller named (--conflict-strategy seek or get). */
function requestedChoice(requested: ScanStrategy): StrategyChoice {
  return { strategy: requested, describe: () => `requested (--conflict-strategy ${requested})`, engineBytesInSpan: null, adaptive: null };
}

function emptySpanChoice(requested: 'auto' | ScanStrategy): StrategyChoice {
  if (requested !== 'auto') return requestedChoice(requested);
  const describe = (): string => "adaptive: one seek found the engine empty in the SSTs' key range, so every key is new";
  return { strategy: 'seek', describe, engineBytesInSpan: null, adaptive: null };
}

/**
 * The scan's end: every SST key was classified once, so the unchanged and conflicting keys are
 * at most the SST's keys (the rest are new); the report lists at most maxReported of the
 * conflicts, and every conflicting key when they are collected.
 */
function assertCountsAddUp(sstKeys: number, unchanged: number, collector: ConflictCollector, reported: number, maxReported: number): void {
  assert(
    unchanged >= 0 && collector.conflicts >= 0 && unchanged + collector.conflicts <= sstKeys,
    `scan counts ${unchanged} unchanged + ${collector.conflicts} conflicts over ${sstKeys} SST keys`,
  );
  assert(
    reported <= Math.min(maxReported, collector.conflicts),
    `${reported} conflicts reported of ${collector.conflicts} (at most ${maxReported})`,
  );
  assert(collector.allKeys === null || collector.allKeys.length === collector.conflicts, 'every conflicting key collected once');
}

/** Runs the adaptive scan and describes what it chose (summary.strategy: the one that classified most keys). */
function* scanAuto(
  input: ScanInput,
  eng: DbIterator,
  trySeekUsingNext: boolean,
  clockMs: (() => number) | undefined,
): Sliced<StrategyChoice> {
  const chosen: { first: ByteRuleChoice | null } = { first: null };
  const chooseFirst = (): FirstChoice => (chosen.first = chooseByBytes(input.engine, input.run, input.upperBound));
  const stats = yield* scanAdaptively(input, eng, { trySeekUsingNext, chooseFirst, clockMs });
  const firstChoice = chosen.first;
  assert(firstChoice !== null, 'the adaptive scan asks for its first choice before its first chunk');
  const strategy: ScanStrategy = stats.getKeys > stats.seekKeys ? 'get' : 'seek';
  const describe = (): string => describeAdaptive(stats, input.run.totalEntries, firstChoice);
  return { strategy, describe, engineBytesInSpan: firstChoice.engineBytesInSpan, adaptive: stats };
}

function describeAdaptive(stats: AdaptiveScanStats, sstKeys: number, first: ByteRuleChoice): string {
  const cost = (ns: number | null): string => (ns === null ? 'not measured' : `~${ns} ns/key`);
  return (
    `adaptive: point lookups for ${stats.getKeys} of ${sstKeys} SST keys, interleaved seeks for the rest ` +
    `(last estimates: get ${cost(stats.getCostPerKeyNs)}, seek ${cost(stats.seekCostPerKeyNs)}; ` +
    `${stats.switches} switch(es), ${stats.explorations} exploration(s) in ${stats.chunks} chunks); started with ${describeByteRule(first)}`
  );
}

interface ByteRuleChoice extends FirstChoice {
  engineBytesInSpan: number;
  sstBytes: number;
}

/**
 * CockroachDB's rule, auto's first pick: point lookups when the engine holds over AUTO_GET_RATIO x
 * the SSTs' bytes in their range; confident AUTO_CONFIDENT_FACTOR beyond that either way.
 */
function chooseByBytes(engine: Engine, run: SstSet, upperBound: Buffer): ByteRuleChoice {
  const engineBytes = engine.approximateTableBytesInRange(run.smallest, upperBound);
  const sstBytes = run.totalFileBytes;
  const get = engineBytes > AUTO_GET_RATIO * sstBytes;
  const confident = get
    ? engineBytes > AUTO_GET_RATIO * AUTO_CONFIDENT_FACTOR * sstBytes
    : engineBytes * AUTO_CONFIDENT_FACTOR < AUTO_GET_RATIO * sstBytes;
  return { strategy: get ? 'get' : 'seek', confident, engineBytesInSpan: engineBytes, sstBytes };
}

function describeByteRule(c: ByteRuleChoice): string {
  const relation = c.strategy === 'get' ? `over ${AUTO_GET_RATIO}x` : `at most ${AUTO_GET_RATIO}x`;
  return (
    `${c.strategy === 'get' ? 'point lookups' : 'interleaved seeks'}, as the engine holds ~${c.engineBytesInSpan} table bytes ` +
    `in the SSTs' key range, ${relation} their ${c.sstBytes} bytes${c.confident ? ' (far from the threshold: explored only within the time budget)' : ''}`
  );
}
