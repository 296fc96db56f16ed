/**
 * The two conflict-scan strategies: both classify every key of the new SSTs against the engine
 * as read at one snapshot, as new (absent, point-deleted, or hidden by a newer range tombstone:
 * the engine's iterator and get already hide those), unchanged (same value), or a conflict.
 *
 * seek: interleave the SST run with one engine iterator bounded to the run's key range, always
 * moving whichever side is behind to the other side's key (CockroachDB's CheckSSTConflicts
 * since its PR 73981):
 *   - engine key < SST key: engine.seekGE(sstKey);
 *   - SST key < engine key: sst.seekGE(engineKey): a span of SST keys with no engine key in it
 *     is skipped by one seek (whole SST files without opening their data blocks);
 *   - equal: compare values, then step both.
 * The SST keys skipped are new; they are counted as sstKeys - unchanged - conflicts, so skipping
 * costs no accuracy. Cost: one seek per alternation between the sides, at most about two per
 * SST key, and none for an engine or SST span the other side leaves empty.
 *
 * With trySeekUsingNext (the default) every seek carries the flag: targets only grow and neither
 * side is ever moved past the other's key, so each iterator searches forward from where it
 * stands. The engine's DbIterator answers at once when it already stands at or past the key; its
 * merging iterator passes the flag to every live child; a level stays in its file; a table stays
 * in its data block when the target is within it (no index search, no block lookup), else
 * searches its index forward from the current block; a block searches forward from the current
 * entry, galloping over its restart points, and steps over the older versions of a key below
 * the target without comparing them. The SST run stays, or takes one step, before doing the same
 * in its table. Right after a matched key, the side left behind takes one next() instead of a seek
 * (SeekCursor.moveEngineTo and advance): where the SSTs re-import most of the engine's keys, that
 * step lands, at a fraction of a seek's cost through every level. Without the flag (only to measure what it saves) the interleaving is the same
 * but every seek is a full one at every level, as CockroachDB's scan ran before Pebble had
 * trySeekUsingNext (the baseline its PR 73981 reports against).
 *
 * get: one point lookup per SST key. Each lookup visits the memtables and at most one file per
 * level (every overlapping L0 file), and a table's Bloom filter usually rules out a file without
 * reading a block, so the cost does not grow with the engine's data in the range: the right
 * choice when the engine holds far more there than the SSTs (see checkSstConflicts).
 *
 * Before either runs, the caller makes one bounded seek (engineHoldsKeysIn): if it finds nothing,
 * the engine holds nothing in the run's range and every SST key is new (the empty-span fast path,
 * the same code whatever the strategy, so none is slower than another there).
 *
 * Slicing: both scans are generators that yield every SCAN_KEYS_PER_YIELD loop steps, so a
 * caller serving other work runs them a slice at a time (src/util/slices.ts) and the event loop
 * stays responsive; runSlicedSync runs the same steps in one go. Between slices other writes may
 * land in the engine: the iterators read at the snapshot and pin their memtables and version, so
 * what the scan sees does not change (a skiplist cursor stays valid across inserts; newer entries
 * are above the snapshot and skipped).
 */
import { Engine, Snapshot } from '../engine/engine';
import { DbIterator } from '../engine/dbIterator';
import { compareByteRanges } from '../base/keyCompare';
import { perf } from '../base/perfContext';
import { TRAILER_BYTES } from '../base/internalKey';
import { Sliced } from '../util/slices';
import { ConflictCollector } from './collector';
import { SstSet, SstSetIterator } from './sstSet';

/** Loop steps between yields: a step costs well under a microsecond, so a few hundred is cheap. */
export const SCAN_KEYS_PER_YIELD = 256;
/**
 * A step of the engine iterator that costs more comparisons than this passed older versions or
 * deleted keys (a next() over one live key costs one in the iterator, one per extra sorted run
 * merged, and the landing check): seeking, which skips versions without comparing them, is
 * cheaper there.
 */
const STEP_COMPARISONS_MAX = 4;
/** After a step fell short or cost too much, how many seeks run before a step is tried again. */
const STEP_RETRY_AFTER_SEEKS = 64;

export interface ScanInput {
  engine: Engine;
  run: SstSet;
  snapshot: Snapshot;
  /** Exclusive upper bound just past the run's largest key. */
  upperBound: Buffer;
  collector: ConflictCollector;
}

export interface SeekScanOptions {
  /** Pass trySeekUsingNext on every seek (default true; false only to measure what it saves). */
  trySeekUsingNext: boolean;
}

/**
 * Runs the seek strategy over a range the engine holds keys in: `eng` stands where
 * engineHoldsKeysIn left it (at the range's first live key) and stays the caller's to close.
 */
export function* scanBySeeking(input: ScanInput, eng: DbIterator, opts: SeekScanOptions): Sliced<void> {
  const sst = input.run.newIterator();
  try {
    sst.first();
    const cursor = new SeekCursor(eng, sst, input.collector, opts.trySeekUsingNext);
    while (!cursor.done) {
      cursor.advance(SCAN_KEYS_PER_YIELD);
      yield;
    }
  } finally {
    sst.close();
  }
}

/** Runs the get strategy over a range the engine holds keys in (it needs no engine iterator). */
export function* scanByGets(input: ScanInput): Sliced<void> {
  const sst = input.run.newIterator();
  try {
    const lookups = new PointLookups(input, sst);
    for (sst.first(); sst.valid();) {
      lookups.lookUp(SCAN_KEYS_PER_YIELD);
      yield;
    }
  } finally {
    sst.close();
  }
}

/** An engine iterator at the scan's snapshot, bounded to the run's key range. */
export function openEngineIterator(input: ScanInput): DbIterator {
  return input.engine.newIterator({ snapshot: input.snapshot, lowerBound: input.run.smallest, upperBound: input.upperBound });
}

/**
 * The empty-span check made before any strategy runs: one seek of a fresh bounded iterator to
 * the run's smallest key; false when the engine holds no live key in the run's range. The
 * iterator is left there, where the seek strategy's interleaving starts.
 */
export function engineHoldsKeysIn(input: ScanInput, eng: DbIterator): boolean {
  eng.seekGE(input.run.smallest);
  return eng.valid();
}

/**
 * The seek strategy's interleaving as a resumable loop: both iterators, and the engine key the
 * SST side is compared with next. advance() runs a bounded number of steps, so a caller can time
 * it in chunks, yield between them, or let point lookups move the SST side in between: the
 * interleaving needs no more than "the engine iterator stands at the first live key >= some
 * target <= the SST key" (so every SST key below the engine key is new), which stays true when
 * only the SST side moves forward.
 */
export class SeekCursor {
  private engineKey: Buffer;
  private engineExhausted = false;
  private readonly seekOpts: { trySeekUsingNext: boolean };
  /** Seeks left before moveEngineTo tries a single step again (0: step first). */
  private seeksBeforeStepping = 0;

  /** `eng` must stand at a live key (engineHoldsKeysIn returned true); `sst` at its first key. */
  constructor(
    private readonly eng: DbIterator,
    private readonly sst: SstSetIterator,
    private readonly collector: ConflictCollector,
    private readonly trySeekUsingNext: boolean,
  ) {
    this.engineKey = eng.key();
    collector.engineKeysVisited++;
    this.seekOpts = { trySeekUsingNext };
  }

  /** True when the SST run is done, or the engine is (every SST key left is then new). */
  get done(): boolean {
    return this.engineExhausted || !this.sst.valid();
  }

  /**
   * After point lookups moved the SST side on: one full (not trySeekUsingNext) seek of the engine
   * to the SST key. A forward seek from where the engine stood would walk every block between
   * (the lookups may have covered thousands of keys); a full one costs a file search, an index
   * search and a block search whatever the distance. The invariant holds after it: the engine
   * stands at the first live key >= the SST key.
   */
  catchUp(): void {
    if (this.done) return;
    this.eng.seekGE(this.sst.key());
    if (!this.eng.valid()) {
      this.engineExhausted = true;
      return;
    }
    this.engineKey = this.eng.key();
    this.collector.engineKeysVisited++;
  }

  /**
   * The engine stands below the SST key `ikey` (an internal key) right after a matched key:
   * moves it to the first live key at or above it; true when a single step did. Where the SSTs
   * and the engine interleave closely (a nightly re-import: most keys exist, with a few engine
   * keys between them), one next() and a comparison does it, at a fraction of the cost of a seek
   * through every level of the engine, even a trySeekUsingNext one (bench:conflict's 1M/1M scan:
   * 0.59 s to 0.42 s; with the SST side stepping likewise in advance(), 0.39 s). Only after a
   * match, so that an SST whose keys fall between the engine's (the bench:conflict grid) seeks
   * exactly as before. A step that falls short, or that had to pass older versions or deleted
   * keys (more than STEP_COMPARISONS_MAX comparisons), turns stepping off for
   * STEP_RETRY_AFTER_SEEKS seeks (CockroachDB's MVCC scanner tries nexts before seeking likewise).
   */
  private moveEngineTo(ikey: Buffer): boolean {
    const eng = this.eng;
    if (this.seeksBeforeStepping > 0) {
      this.seeksBeforeStepping--;
      eng.seekGE(this.sst.key(), this.seekOpts);
      return false;
    }
    const comparisonsBefore = perf.keyComparisons;
    eng.next();
    if (!eng.valid()) return false;
    const k = eng.key();
    perf.keyComparisons++;
    const landed = compareByteRanges(k, 0, k.length, ikey, 0, ikey.length - TRAILER_BYTES) >= 0;
    if (!landed || perf.keyComparisons - comparisonsBefore > STEP_COMPARISONS_MAX) this.seeksBeforeStepping = STEP_RETRY_AFTER_SEEKS;
    if (!landed) eng.seekGE(this.sst.key(), this.seekOpts);
    return landed;
  }

  /** Runs at most maxSteps steps of the interleaving (one step: a compare and a move). */
  advance(maxSteps: number): void {
    const { eng, sst, collector } = this;
    const useNext = this.trySeekUsingNext;
    const seekOpts = this.seekOpts;
    let engineKey = this.engineKey;
    // The sides interleave closely here: the last step matched keys, or stepped one side after
    // a match and landed. Then the side left behind steps instead of seeking (see moveEngineTo).
    let interleaved = false;
    for (let steps = 0; steps < maxSteps && sst.valid(); steps++) {
      const ikey = sst.internalKey();
      perf.keyComparisons++;
      const c = compareByteRanges(ikey, 0, ikey.length - TRAILER_BYTES, engineKey, 0, engineKey.length);
      if (c === 0) {
        interleaved = useNext;
        const existing = eng.value();
        const fresh = sst.value();
        if (existing.equals(fresh)) collector.unchangedRow(engineKey, sst.currentFile);
        else collector.conflict(engineKey, existing, fresh, eng, sst.currentFile);
        sst.next();
        eng.next();
      } else if (c < 0) {
        // The SST is behind: its keys below engineKey are new. Interleaved, one step (the next
        // round compares it; still behind, it seeks then); else a seek, which stays or steps
        // first itself.
        collector.newRows();
        if (interleaved) sst.next();
        else sst.seekGE(engineKey, useNext);
        interleaved = false;
        continue;
      } else if (interleaved) {
        // The engine is behind: its keys below the SST key are not in the SSTs.
        interleaved = this.moveEngineTo(ikey);
      } else {
        eng.seekGE(sst.key(), seekOpts);
      }
      if (!eng.valid()) {
        this.engineExhausted = true;
        break;
      }
      engineKey = eng.key();
      collector.engineKeysVisited++;
    }
    this.engineKey = engineKey;
  }
}

/**
 * The get strategy's loop: one point lookup at the snapshot per SST key, from where the SST
 * iterator stands (it may have been moved by a SeekCursor in between).
 */
export class PointLookups {
  private readonly readOpts: { snapshot: Snapshot };

  constructor(
    private readonly input: ScanInput,
    private readonly sst: SstSetIterator,
  ) {
    this.readOpts = { snapshot: input.snapshot };
  }

  /** Looks up at most maxKeys SST keys, stepping past each; returns how many it looked up. */
  lookUp(maxKeys: number): number {
    const { sst, readOpts } = this;
    const { engine, collector } = this.input;
    let keys = 0;
    for (; keys < maxKeys && sst.valid(); keys++, sst.next()) {
      const key = sst.key();
      const existing = engine.get(key, readOpts);
      if (existing === null) {
        collector.newRows();
        continue;
      }
      collector.engineKeysVisited++;
      const fresh = sst.value();
      if (existing.equals(fresh)) collector.unchangedRow(key, sst.currentFile);
      else collector.conflict(key, existing, fresh, null, sst.currentFile);
    }
    return keys;
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
