/**
 * The adaptive conflict scan behind `--conflict-strategy auto`: the SST run is classified in
 * chunks, each by the seek strategy (SeekCursor) or by point lookups (PointLookups), whichever
 * has measured the cheaper per SST key in the chunks run so far.
 *
 * Contract: the same classification as either strategy alone (every SST key new, unchanged or a
 * conflict at the snapshot; conflicts in key order), whatever the clock says: only the choice of
 * strategy per chunk depends on timing. The two strategies share one SST iterator and one engine
 * iterator, and neither needs more of the other than SeekCursor documents (point lookups move
 * only the SST side, forward), so the scan can switch at any chunk boundary.
 *
 * Why adaptive: which strategy wins depends on things no cheap statistic shows. A byte count of
 * the engine's data in the span (CockroachDB's rule, our `first` pick) misses that SST keys the
 * engine does not hold cost a get a few Bloom probes and no block, while the interleaving still
 * seeks the engine to every one of them; and density varies across a key space, so a choice for
 * the whole run is wrong somewhere. Measuring is cheap: a chunk is timed with two clock reads.
 *
 * Policy (StrategyChooser):
 * - The first chunk runs `first`; then one small chunk of the other strategy (an exploration), so
 *   both have a cost per key; the preferred strategy is the one with the lower estimate, and a
 *   switch needs the other to be SWITCH_MARGIN cheaper (no flapping between near-equals). An
 *   unconfident first choice runs a first chunk as short as an exploration and as bounded in time
 *   (a wrong guess costs little); a confident one (FirstChoice.confident) runs full chunks and is
 *   not explored until the time budget below allows, so a scan of a few hundred microseconds is
 *   not taxed by a forced exploration.
 * - A strategy's estimate is the lowest cost per key of its last few chunks: disturbances (a
 *   pause of the process, caches gone cold) only ever add time, so one disturbed chunk does not
 *   make the scan switch to the slower strategy.
 * - An exploration's estimate leaves out its first stride (and a seek's catch-up, below): right
 *   after the other strategy held the CPU caches, its first keys pay for entering its blocks and
 *   code again, once per switch; counted per key, that made a short exploration read 2-10x the
 *   strategy's steady cost. Its time limit runs from the end of that stride.
 * - Explorations repeat, so that a change in density is noticed, but only after the preferred
 *   strategy has covered a growing number of keys since the last (MIN_KEYS_BETWEEN_EXPLORATIONS), and only while the
 *   time spent exploring stays within EXPLORE_SHARE of the scan: a strategy eight times slower is
 *   explored eight times less often, and exploring costs about a percent whatever the ratio.
 *   The budget counts what coming back costs too: the time the chunk after an exploration takes
 *   beyond its strategy's estimate (StrategyChooser.returnCostMs).
 * - A seek chunk after point lookups starts with the engine iterator behind the SST key: its first
 *   step (catching up: one full seek, SeekCursor.catchUp, so its cost is bounded however far the
 *   lookups went) is a cost of switching, not of seeking, and is left out of the seek estimate (it
 *   is counted in the exploration budget, as part of the exploration or of coming back from one).
 * - Seek chunks are bounded in interleaving steps, and the SST keys they covered (skipped spans
 *   included) are estimated from the SST iterator's position (SstSetIterator.approximateOrdinal);
 *   get chunks count their keys exactly.
 * Every chunk is at most SCAN_KEYS_PER_YIELD steps or keys, and the scan yields between chunks,
 * so a chunk's time never includes other work of the event loop.
 */
import { Sliced } from '../util/slices';
import { DbIterator } from '../engine/dbIterator';
import { SstSetIterator } from './sstSet';
import { PointLookups, SCAN_KEYS_PER_YIELD, ScanInput, SeekCursor } from './scan';
import type { AdaptiveScanStats, ScanStrategy } from './scanStrategy';

export type { AdaptiveScanStats, ScanStrategy } from './scanStrategy';

/**
 * Chunk sizes: SST keys for point lookups, interleaving steps for seeks (where the sides
 * alternate, an SST key takes two steps, an engine seek and an SST move; where SST keys are
 * denser than the engine's, one step covers many). Preferred chunks start at FIRST_CHUNK_SIZE
 * and double up to MAX_CHUNK_SIZE, the slicing granularity; explorations are EXPLORE_SIZE: at
 * worst (an engine seek entering blocks in every L0 file) a seek step costs tens of
 * microseconds, so an exploration must be a handful of steps to stay cheap.
 */
export const FIRST_CHUNK_SIZE: Readonly<Record<ScanStrategy, number>> = { get: 32, seek: 64 };
export const EXPLORE_SIZE: Readonly<Record<ScanStrategy, number>> = { get: 32, seek: 16 };
export const MAX_CHUNK_SIZE = SCAN_KEYS_PER_YIELD;
/**
 * An exploration also ends once it has run this long (checked every EXPLORE_STRIDE keys or
 * steps): where the other strategy is many times slower (a seek entering a block in each of a
 * dozen L0 files per key), a few keys tell so, and more would only cost. Sizes in keys alone
 * would have to be tiny for that case and then mis-measure the common one, where costs come in
 * lumps (an SST data block read every few dozen keys).
 */
export const EXPLORE_MAX_MS = 0.015;
const EXPLORE_STRIDE: Readonly<Record<ScanStrategy, number>> = { get: 4, seek: 2 };
/**
 * At most this share of the scan's time goes to exploring the strategy not preferred. Measured
 * (docs/conflicts.md, Performance, 2026-12-04): at 3%, one exploration plus the cost of coming
 * back from it could overshoot the budget, and `auto` ran up to 19% behind seek+next in cells
 * where seek was the right first choice; at 1% the same cells ran 0.94-1.10x, and a scan whose
 * density changes still switches (test/conflict/adaptiveStrategy.test.ts).
 */
export const EXPLORE_SHARE = 0.01;
/** The other strategy must be at least this much cheaper (estimate ratio) to take over. */
export const SWITCH_MARGIN = 0.9;
/**
 * SST keys the preferred strategy covers between two explorations, at least: the first gap, then
 * doubling up to the last. An early exploration often measures one-off costs (the first reported
 * conflicts copied, blocks not yet cached), so the second comes soon; later, density that changes
 * over fewer keys than the gap cannot cost much.
 */
export const MIN_KEYS_BETWEEN_EXPLORATIONS = { first: 256, last: 4096 };
/** Samples kept per strategy; its estimate is their lowest. */
const SAMPLES_KEPT = 3;

/** The first chunk's strategy, and whether its rule is far enough from its threshold to be trusted. */
export interface FirstChoice {
  strategy: ScanStrategy;
  /**
   * True: the first exploration waits for the time budget like every later one (a small scan
   * then runs the first strategy alone). False: the first chunk is short and the other strategy
   * is explored right after it, so that both are measured before much is spent on either.
   */
  confident: boolean;
}

export interface AdaptiveScanOptions {
  trySeekUsingNext: boolean;
  /** The first chunk's strategy, asked when the scan starts (the engine is known to hold keys in the span). */
  chooseFirst: () => FirstChoice;
  /** Milliseconds, monotonic (default performance.now); tests pass their own to steer the choices. */
  clockMs?: () => number;
}

/** What the adaptive scan did (see docs/conflicts.md, summary.adaptive). */
export interface ChunkPlan {
  strategy: ScanStrategy;
  /** SST keys (get) or interleaving steps (seek). */
  size: number;
  exploring: boolean;
  /** Run as an exploration is (see ChunkLimit): explorations, and an unconfident first chunk. */
  probe: boolean;
}

/**
 * How a chunk runs: a probe (an exploration, or the unconfident first chunk) in strides, the first
 * a warm-up left out of the estimate, the rest until EXPLORE_MAX_MS has passed after it; other
 * chunks in one go, unbounded in time.
 */
interface ChunkLimit {
  maxMs: number;
  stride: number;
  warmUp: boolean;
}

function chunkLimit(plan: ChunkPlan): ChunkLimit {
  return plan.probe
    ? { maxMs: EXPLORE_MAX_MS, stride: EXPLORE_STRIDE[plan.strategy], warmUp: true }
    : { maxMs: Infinity, stride: plan.size, warmUp: false };
}

/**
 * Runs the adaptive scan (see the module comment) over a range the engine holds keys in: `eng`
 * stands where engineHoldsKeysIn left it and stays the caller's to close.
 */
export function* scanAdaptively(input: ScanInput, eng: DbIterator, opts: AdaptiveScanOptions): Sliced<AdaptiveScanStats> {
  const clockMs = opts.clockMs ?? (() => performance.now());
  const sst = input.run.newIterator();
  try {
    sst.first();
    const cursor = new SeekCursor(eng, sst, input.collector, opts.trySeekUsingNext);
    const lookups = new PointLookups(input, sst);
    const first = opts.chooseFirst();
    const firstStrategy = first.strategy;
    const chooser = new StrategyChooser(first);
    let getKeys = 0;
    let last: ScanStrategy | null = null;
    while (!cursor.done) {
      const plan = chooser.plan();
      const limit = chunkLimit(plan);
      const chunk =
        plan.strategy === 'get' ? timeLookups(lookups, plan.size, limit, clockMs) : timeSeeks(cursor, sst, plan.size, last, limit, clockMs);
      if (plan.strategy === 'get') getKeys += chunk.keys;
      chooser.record(plan, chunk);
      last = plan.strategy;
      yield;
    }
    // Every key not looked up went by the interleaving (those past the engine's last key: new, at no cost).
    const seekKeys = input.run.totalEntries - getKeys;
    return { firstStrategy, getKeys, seekKeys, ...chooser.summary() };
  } finally {
    sst.close();
  }
}

/**
 * A chunk's measurement: SST keys covered and its whole time (for the exploration budget), and
 * the keys and time its estimate uses: an exploration leaves out its catch-up and its first
 * stride, which pay for entering the other strategy's blocks and code after the preferred one
 * held the caches (a cost of switching, once, not of each key).
 */
export interface ChunkTiming {
  keys: number;
  totalMs: number;
  estimateKeys: number;
  estimateMs: number;
}

/** Where a chunk's estimate starts: after its warm-up stride for a probe, else at its start. */
interface EstimateStart {
  keys: number;
  ms: number;
}

function timeLookups(lookups: PointLookups, keys: number, limit: ChunkLimit, clockMs: () => number): ChunkTiming {
  const t0 = clockMs();
  let looked = 0;
  let now = t0;
  let start: EstimateStart | null = limit.warmUp ? null : { keys: 0, ms: t0 };
  while (looked < keys) {
    const n = lookups.lookUp(Math.min(limit.stride, keys - looked));
    looked += n;
    now = clockMs();
    if (n === 0) break;
    if (start === null) start = { keys: looked, ms: now };
    else if (now - start.ms >= limit.maxMs) break;
  }
  return chunkTiming(looked, t0, t0, now, start);
}

/**
 * The timing of a chunk that began at t0 and whose own work (after a seek's catch-up) began at
 * workStart; one that ended within its warm-up stride is estimated over all of that work.
 */
function chunkTiming(keys: number, t0: number, workStart: number, now: number, start: EstimateStart | null): ChunkTiming {
  const useStart = start !== null && keys - start.keys >= 1;
  return {
    keys,
    totalMs: now - t0,
    estimateKeys: useStart ? keys - start.keys : keys,
    estimateMs: useStart ? now - start.ms : now - workStart,
  };
}

/** Runs a seek chunk of `steps` steps; after point lookups its first (catch-up) step is timed apart. */
function timeSeeks(
  cursor: SeekCursor,
  sst: SstSetIterator,
  steps: number,
  last: ScanStrategy | null,
  limit: ChunkLimit,
  clockMs: () => number,
): ChunkTiming {
  const t0 = clockMs();
  let stepsRun = 0;
  if (last === 'get') {
    cursor.catchUp();
    stepsRun = 1;
  }
  const ordinalBefore = sst.approximateOrdinal();
  const t1 = clockMs();
  let start: EstimateStart | null = limit.warmUp ? null : { keys: 0, ms: t1 };
  let now = t1;
  while (stepsRun < steps && !cursor.done) {
    const n = Math.min(limit.stride, steps - stepsRun);
    cursor.advance(n);
    stepsRun += n;
    now = clockMs();
    if (start === null) start = { keys: sst.approximateOrdinal() - ordinalBefore, ms: now };
    else if (now - start.ms >= limit.maxMs) break;
  }
  return chunkTiming(sst.approximateOrdinal() - ordinalBefore, t0, t1, now, start);
}

/** The per-chunk choice; see the module comment's policy. */
export class StrategyChooser {
  preferred: ScanStrategy;
  /** Cost per SST key (nanoseconds) of each strategy's last SAMPLES_KEPT chunks. */
  private readonly samples: Record<ScanStrategy, number[]> = { seek: [], get: [] };
  private totalMs = 0;
  private exploringMs = 0;
  /** Size of the next preferred chunk, as a multiple of the strategy's FIRST_CHUNK_SIZE. */
  private chunkScale = 1;
  /** SST keys the preferred strategy covered since the last exploration (or switch). */
  private keysSinceExploration = 0;
  private chunks = 0;
  private explorations = 0;
  private switches = 0;
  /** The chunk just recorded was an exploration: the next pays for coming back (returnCostMs). */
  private lastWasExploration = false;
  /** The first choice was confident: the first exploration too waits for the budget. */
  private readonly confident: boolean;

  constructor(first: FirstChoice) {
    this.preferred = first.strategy;
    this.confident = first.confident;
    // A confident choice runs full chunks from the start: nothing is explored before the budget
    // allows, so growing them would only add chunks (each a few microseconds of bookkeeping).
    if (first.confident) this.chunkScale = MAX_CHUNK_SIZE / FIRST_CHUNK_SIZE[first.strategy];
  }

  plan(): ChunkPlan {
    const other = otherThan(this.preferred);
    if (this.shouldExplore(other)) return { strategy: other, size: EXPLORE_SIZE[other], exploring: true, probe: true };
    // An unconfident first chunk is as short as an exploration (and as bounded in time): the
    // other is measured next.
    if (this.chunks === 0 && !this.confident)
      return { strategy: this.preferred, size: EXPLORE_SIZE[this.preferred], exploring: false, probe: true };
    const size = Math.min(MAX_CHUNK_SIZE, FIRST_CHUNK_SIZE[this.preferred] * this.chunkScale);
    return { strategy: this.preferred, size, exploring: false, probe: false };
  }

  record(plan: ChunkPlan, chunk: ChunkTiming): void {
    this.chunks++;
    this.totalMs += chunk.totalMs;
    if (plan.exploring) {
      this.exploringMs += chunk.totalMs;
      this.explorations++;
      this.keysSinceExploration = 0;
    } else {
      if (this.lastWasExploration) this.exploringMs += this.returnCostMs(plan.strategy, chunk);
      this.keysSinceExploration += chunk.keys;
      if (FIRST_CHUNK_SIZE[plan.strategy] * this.chunkScale < MAX_CHUNK_SIZE) this.chunkScale *= 2;
    }
    this.lastWasExploration = plan.exploring;
    // A chunk that covered under one key (the run ended at once) says nothing per key.
    if (chunk.estimateKeys >= 1) {
      const samples = this.samples[plan.strategy];
      samples.push((chunk.estimateMs * 1e6) / chunk.estimateKeys);
      if (samples.length > SAMPLES_KEPT) samples.shift();
    }
    const mine = this.estimateNsPerKey(this.preferred);
    const theirs = this.estimateNsPerKey(otherThan(this.preferred));
    if (mine !== null && theirs !== null && theirs < mine * SWITCH_MARGIN) {
      this.preferred = otherThan(this.preferred);
      this.switches++;
      this.keysSinceExploration = 0;
      this.chunkScale = 1;
    }
  }

  /**
   * What coming back from an exploration cost the chunk after it: its time beyond its strategy's
   * estimate (a seek's catch-up, blocks and code the exploration pushed out of the caches).
   * Charged to the exploration budget: measured on the grid's 1000-key cells, the seek chunk
   * after each point-lookup exploration took about 50 us more than the others, several times the
   * exploration itself, so a budget of explorations alone spent about four times its share.
   */
  private returnCostMs(s: ScanStrategy, chunk: ChunkTiming): number {
    const estimate = this.estimateNsPerKey(s);
    if (estimate === null) return 0;
    return Math.max(0, chunk.totalMs - (estimate * chunk.keys) / 1e6);
  }

  summary(): Pick<AdaptiveScanStats, 'chunks' | 'explorations' | 'switches' | 'seekCostPerKeyNs' | 'getCostPerKeyNs'> {
    const rounded = (s: ScanStrategy): number | null => {
      const e = this.estimateNsPerKey(s);
      return e === null ? null : Math.round(e);
    };
    return {
      chunks: this.chunks,
      explorations: this.explorations,
      switches: this.switches,
      seekCostPerKeyNs: rounded('seek'),
      getCostPerKeyNs: rounded('get'),
    };
  }

  /**
   * A strategy's estimate: the lowest cost per key of its last few chunks. What disturbs a chunk
   * only ever adds time (a collector pause, a descheduled thread, blocks or code gone cold after
   * the other strategy ran), so the lowest recent figure is the one nearest its steady cost; a
   * median of chunks that grow (32, 64, 128 keys) let the largest decide, and one disturbed chunk
   * made the scan switch to the slower strategy and stay there. A strategy that became dearer
   * shows it within SAMPLES_KEPT chunks; one that became cheaper at its next exploration.
   */
  private estimateNsPerKey(s: ScanStrategy): number | null {
    const samples = this.samples[s];
    return samples.length === 0 ? null : Math.min(...samples);
  }

  /**
   * Explore the other strategy now? Right after the first chunk unless the first choice was
   * confident; otherwise after enough keys and within the time budget (a never-measured
   * strategy's exploration is reckoned at its time limit).
   */
  private shouldExplore(other: ScanStrategy): boolean {
    if (this.chunks === 0) return false;
    const estimate = this.estimateNsPerKey(other);
    if (estimate === null && !this.confident) return true;
    if (estimate === null) return this.exploringMs + EXPLORE_MAX_MS <= EXPLORE_SHARE * (this.totalMs + EXPLORE_MAX_MS);
    const gap = Math.min(MIN_KEYS_BETWEEN_EXPLORATIONS.last, MIN_KEYS_BETWEEN_EXPLORATIONS.first * 2 ** (this.explorations - 1));
    if (this.keysSinceExploration < gap) return false;
    // An exploration's keys (a seek step covers about half a key where the sides alternate), or its time limit.
    const keys = other === 'get' ? EXPLORE_SIZE.get : EXPLORE_SIZE.seek / 2;
    const expectedMs = Math.min(EXPLORE_MAX_MS, (keys * estimate) / 1e6);
    return this.exploringMs + expectedMs <= EXPLORE_SHARE * (this.totalMs + expectedMs);
  }
}

function otherThan(s: ScanStrategy): ScanStrategy {
  return s === 'seek' ? 'get' : 'seek';
}
