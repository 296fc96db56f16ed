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
 * in its table. Without the flag (only to measure what it saves) the interleaving is the same
 * but every seek is a full one at every level, as CockroachDB's scan ran before Pebble had
 * trySeekUsingNext (the baseline its PR 73981 reports against).
 *
 * get: one point lookup per SST key. Each lookup visits the memtables and at most one file per
 * level (every overlapping L0 file), and a table's Bloom filter usually rules out a file without
 * reading a block, so the cost does not grow with the engine's data in the range: the right
 * choice when the engine holds far more there than the SSTs (see checkSstConflicts).
 *
 * Both start with one bounded seek: if it finds nothing, the engine holds nothing in the run's
 * range and every SST key is new (the empty-span fast path).
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
import { SstRun } from './sstRun';

/** Loop steps between yields: a step costs well under a microsecond, so a few hundred is cheap. */
export const SCAN_KEYS_PER_YIELD = 256;

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
export function* scanBySeeking(input: ScanInput, opts: SeekScanOptions): Sliced<boolean> {
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
    let steps = 0;
    while (sst.valid()) {
      if (++steps === SCAN_KEYS_PER_YIELD) {
        steps = 0;
        yield;
      }
      const ikey = sst.internalKey();
      perf.keyComparisons++;
      const c = compareByteRanges(ikey, 0, ikey.length - TRAILER_BYTES, engineKey, 0, engineKey.length);
      if (c === 0) {
        const existing = eng.value();
        const fresh = sst.value();
        if (existing.equals(fresh)) collector.unchanged++;
        else collector.conflict(engineKey, existing, fresh, eng, sst.currentFile);
        sst.next();
        eng.next();
      } else if (c < 0) {
        // The SST is behind: its keys below engineKey are new.
        sst.seekGE(engineKey, useNext);
        continue;
      } else {
        // The engine is behind: its keys below the SST key are not in the SSTs.
        eng.seekGE(sst.key(), seekOpts);
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
export function* scanByGets(input: ScanInput): Sliced<boolean> {
  const { engine, run, collector } = input;
  if (engineEmptyIn(input)) return true;
  const readOpts = { snapshot: input.snapshot };
  const sst = run.newIterator();
  try {
    let steps = 0;
    for (sst.first(); sst.valid(); sst.next()) {
      if (++steps === SCAN_KEYS_PER_YIELD) {
        steps = 0;
        yield;
      }
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
