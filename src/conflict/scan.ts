/**
 * The two conflict-scan strategies: both classify every key of the new SSTs against the engine
 * as read at one snapshot, as new (absent, point-deleted, or hidden by a newer range tombstone:
 * the engine's iterator and get already hide those), unchanged (same value), or a conflict.
 *
 * seek: interleave the SST run with one engine iterator bounded to the run's key range, always
 * moving whichever side is behind to the other side's key (CockroachDB's CheckSSTConflicts
 * since its PR 73981):
 *   - engine key < SST key: engine.seekGE(sstKey) with trySeekUsingNext: targets only grow, so
 *     the engine's levels step forward a few entries instead of searching from scratch;
 *   - SST key < engine key: sst.seekGE(engineKey), likewise: a span of SST keys with no engine key
 *     in it is skipped by one seek (whole SST files without opening their data blocks);
 *   - equal: compare values, then step both.
 * With trySeekUsingNext, the scan also applies the idea one level up: a side that falls behind
 * tries one next() before seeking, since on interleaved data the key it needs is usually the
 * very next one and a next() moves one level's iterator where a seek repositions every level's.
 * StepPolicy backs off when steps stop paying (the side was far behind, or the engine's next()
 * had to step over many hidden versions), so sparse data costs about one wasted step per 64
 * seeks. The SST keys skipped are new; they are counted as sstKeys - unchanged - conflicts, so
 * skipping costs no accuracy. Cost: one seek (or step) per alternation between the sides, at
 * most about two per SST key, and none for an engine or SST span the other side leaves empty.
 *
 * get: one point lookup per SST key. Each lookup visits the memtables and at most one file per
 * level (every overlapping L0 file), and a table's Bloom filter usually rules out a file without
 * reading a block, so the cost does not grow with the engine's data in the range: the right
 * choice when the engine holds far more there than the SSTs (see checkSstConflicts).
 *
 * Both start with one bounded seek: if it finds nothing, the engine holds nothing in the run's
 * range and every SST key is new (the empty-span fast path).
 *
 * Everything here is synchronous: the scan runs as one task, so nothing else touches the engine
 * meanwhile (the snapshot would keep the answer consistent anyway).
 */
import { Engine, Snapshot } from '../engine/engine';
import { DbIterator } from '../engine/dbIterator';
import { compareByteRanges } from '../engine/keyCompare';
import { perf } from '../engine/perfContext';
import { TRAILER_BYTES } from '../sstwriter/internalKey';
import { ConflictCollector } from './collector';
import { SstRun } from './sstRun';

export interface ScanInput {
  engine: Engine;
  run: SstRun;
  snapshot: Snapshot;
  /** Exclusive upper bound just past the run's largest key. */
  upperBound: Buffer;
  collector: ConflictCollector;
}

export interface SeekScanOptions {
  /** Pass trySeekUsingNext on every seek (default true; false only to measure what it saves). */
  trySeekUsingNext: boolean;
}

/** Runs the seek strategy; returns true when the one first seek found the engine empty in range. */
export function scanBySeeking(input: ScanInput, opts: SeekScanOptions): boolean {
  const { engine, run, collector } = input;
  const useNext = opts.trySeekUsingNext;
  const seekOpts = { trySeekUsingNext: useNext };
  const eng = engine.newIterator({ snapshot: input.snapshot, lowerBound: run.smallest, upperBound: input.upperBound });
  const sst = run.newIterator();
  try {
    eng.seekGE(run.smallest);
    if (!eng.valid()) return true;
    let engineKey = eng.key();
    collector.engineKeysVisited++;
    sst.first();
    // A side that falls behind is moved by next() when that has been enough lately, else sought.
    const sstStep = new StepPolicy(useNext);
    const engineStep = new StepPolicy(useNext);
    while (sst.valid()) {
      const ikey = sst.internalKey();
      perf.keyComparisons++;
      const c = compareByteRanges(ikey, 0, ikey.length - TRAILER_BYTES, engineKey, 0, engineKey.length);
      if (c >= 0) sstStep.caughtUp();
      if (c <= 0) engineStep.caughtUp();
      if (c === 0) {
        const existing = eng.value();
        const fresh = sst.value();
        if (existing.equals(fresh)) collector.unchanged++;
        else collector.conflict(engineKey, existing, fresh, eng, sst.currentFile);
        sst.next();
        eng.next();
      } else if (c < 0) {
        // The SST is behind: its keys below engineKey are new.
        if (sstStep.shouldStep()) sst.next();
        else sst.seekGE(engineKey, useNext);
        continue;
      } else {
        // The engine is behind: its keys below the SST key are not in the SSTs.
        if (engineStep.shouldStep()) {
          // Stepping over many hidden versions costs more than the seek it replaces: count it.
          const before = perf.keyComparisons;
          eng.next();
          engineStep.stepCost(perf.keyComparisons - before);
        } else {
          eng.seekGE(sst.key(), seekOpts);
        }
      }
      if (!eng.valid()) break; // every SST key left is new
      engineKey = eng.key();
      collector.engineKeysVisited++;
    }
    return false;
  } finally {
    sst.close();
    eng.close();
  }
}

/** Runs the get strategy; returns true when one bounded seek found the engine empty in range. */
export function scanByGets(input: ScanInput): boolean {
  const { engine, run, collector } = input;
  if (engineEmptyIn(input)) return true;
  const readOpts = { snapshot: input.snapshot };
  const sst = run.newIterator();
  try {
    for (sst.first(); sst.valid(); sst.next()) {
      const key = sst.key();
      const existing = engine.get(key, readOpts);
      if (existing === null) continue;
      collector.engineKeysVisited++;
      const fresh = sst.value();
      if (existing.equals(fresh)) collector.unchanged++;
      else collector.conflict(key, existing, fresh, null, sst.currentFile);
    }
    return false;
  } finally {
    sst.close();
  }
}

/** One seek: does the engine hold no live key in [run.smallest, upperBound) at the snapshot? */
function engineEmptyIn(input: ScanInput): boolean {
  const it = input.engine.newIterator({ snapshot: input.snapshot, lowerBound: input.run.smallest, upperBound: input.upperBound });
  try {
    it.seekGE(input.run.smallest);
    return !it.valid();
  } finally {
    it.close();
  }
}

/**
 * Fills in the sequence numbers a strategy could not see (get reads values only): one iterator
 * at the snapshot, seeking the listed keys in order.
 */
export function resolveExistingSeqs(engine: Engine, snapshot: Snapshot, collector: ConflictCollector): void {
  const pending = collector.reported.filter((c) => c.existingSeq < 0);
  if (pending.length === 0) return;
  const it: DbIterator = engine.newIterator({ snapshot });
  try {
    let first = true;
    for (const c of pending) {
      it.seekGE(c.key, { trySeekUsingNext: !first });
      first = false;
      if (it.valid() && it.key().equals(c.key)) c.existingSeq = it.sequenceNumber();
    }
  } finally {
    it.close();
  }
}

/** A step (next) costing more key comparisons than this is worse than a seek (many hidden versions). */
const MAX_STEP_COMPARISONS = 8;
/** Longest run of behind-events a side seeks through before trying next() again. */
const MAX_STEP_BACKOFF = 64;

/**
 * When a side falls behind, one next() is cheaper than a seek if the key it needs is the very
 * next one (interleaved data: a seek repositions every level of the engine, a next moves one),
 * and wasted if it is far away (sparse data) or if the engine's next() must step over many
 * hidden versions (it reseeks past them after MAX_SEQUENTIAL_SKIPS). So a side tries one next()
 * first; if that did not catch up, or cost more than MAX_STEP_COMPARISONS key comparisons (the
 * engine's perf counter measures it), it seeks, and skips the next()-first try for the next 1,
 * 2, 4, ... MAX_STEP_BACKOFF events, back to trying every time as soon as a step pays. This is
 * trySeekUsingNext applied at the scan's level (targets only grow, so stepping is sound); without
 * that option the scan never steps.
 */
class StepPolicy {
  private readonly enabled: boolean;
  /** A next() was taken on the last event and its outcome is not known yet. */
  private pending = false;
  private skip = 0;
  private backoff = 0;

  constructor(enabled: boolean) {
    this.enabled = enabled;
  }

  /** The side is behind: step (true) or seek (false)? A step's outcome shows at the next event. */
  shouldStep(): boolean {
    if (this.pending) {
      // The last step did not catch up: seek now, and seek for a while before stepping again.
      this.fail();
      return false;
    }
    if (!this.enabled || this.skip > 0) {
      if (this.skip > 0) this.skip--;
      return false;
    }
    this.pending = true;
    return true;
  }

  /** Key comparisons the step took: past MAX_STEP_COMPARISONS it counts as failed (seek next time). */
  stepCost(comparisons: number): void {
    if (this.pending && comparisons > MAX_STEP_COMPARISONS) this.fail();
  }

  /** The side is no longer behind. */
  caughtUp(): void {
    if (this.pending) {
      this.pending = false;
      this.backoff = 0;
    }
  }

  private fail(): void {
    this.pending = false;
    this.backoff = this.backoff === 0 ? 1 : Math.min(MAX_STEP_BACKOFF, 2 * this.backoff);
    this.skip = this.backoff;
  }
}
