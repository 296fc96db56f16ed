/**
 * The range-deletion aggregator: answers "is this entry deleted by a range tombstone?" for an
 * iterator walking keys in order, over the tombstones of several sources (memtables, table files),
 * like RocksDB's ReadRangeDelAggregator.
 *
 * Each source is a FragmentedTombstoneList, optionally clipped to a user-key range [lower, upper)
 * (a table's tombstones only count within the table's bounds; see clipRangeOfFile in
 * tombstoneBoundaries.ts). The aggregator keeps one positional cursor per source and, over them,
 * a cached *region*: the widest key range around the last key in which no source's answer can
 * change (no fragment start or end of any source falls inside it). The cached answer is the
 * largest visible covering sequence number in that region.
 *
 *   source A:   [a------f)      [k----p)
 *   source B:        [d-----------m)
 *   key h:      region = [f, k) ∩ [d, m) = [f, m); covering seqs: B's
 *
 * Per query, while the key stays in the region, at most two comparisons (is key < region end,
 * is key >= region start), whatever the number of sources. When the key leaves it, only cursors
 * whose own piece the key left move: forward iteration steps them forward (one comparison a
 * fragment, up to TRY_SEEK_USING_NEXT_STEPS), backward iteration backward, and a longer jump (a
 * seek) falls back to binary search; then the region is rebuilt (O(sources) comparisons). Jumps
 * are detected by those comparisons, so an out-of-order key is answered correctly, only slower.
 * `direction` orders the two region checks so the exit a traversal expects is tested first.
 *
 * Deletion rule: an entry (userKey, seq) visible at readSeq is deleted iff some tombstone with
 * seq < tombstone.seq <= readSeq covers userKey; so iff seq < maxCoveringSeq(userKey, readSeq).
 *
 * Costs nothing without tombstones: adding an empty source (or one clipped to nothing) allocates
 * nothing and is dropped, and a query against no sources returns before any comparison. Every key
 * comparison is counted in perf.keyComparisons. Nothing allocates per query.
 */
import { TRY_SEEK_USING_NEXT_STEPS } from '../../base/iterator';
import { perf } from '../../base/perfContext';
import { compareUserKeys } from '../../base/keyCompare';
import { sequenceOf, TRAILER_BYTES } from '../../base/internalKey';
import { FragmentedTombstoneList } from '../../base/fragmenter';
import { clipFragments, compareKeyToBound, firstFragmentEndingAfter } from './tombstoneIndex';

export enum RangeDelDirection {
  Forward = 0,
  Backward = 1,
}

/** User-key bounds a source's tombstones are clipped to; lower inclusive, upper exclusive. */
export interface ClipRange {
  lower?: Buffer | null;
  upper?: Buffer | null;
}

/** Where a key lies relative to the cached region when it must be rebuilt. */
const enum Leave {
  Unknown,
  Above,
  Below,
}

/**
 * A position in one source: `pos` is the first fragment whose end is > the last key (count if
 * none), `inside` says whether that fragment also starts at or before the key. The cursor's piece
 * is the fragment when inside, else the gap before it.
 */
class SourceCursor {
  readonly list: FragmentedTombstoneList;
  pos = -1;
  inside = false;

  constructor(list: FragmentedTombstoneList) {
    this.list = list;
  }

  /** Start of the cursor's piece, or null for "unbounded below". */
  lower(): Buffer | null {
    if (this.inside) return this.list.starts[this.pos];
    return this.pos > 0 ? this.list.ends[this.pos - 1] : null;
  }

  /** End of the cursor's piece (exclusive), or null for "unbounded above". */
  upper(): Buffer | null {
    if (this.inside) return this.list.ends[this.pos];
    return this.pos < this.list.count ? this.list.starts[this.pos] : null;
  }

  seek(key: Buffer, keyStart: number, keyLength: number): void {
    this.pos = firstFragmentEndingAfter(this.list, key, keyStart, keyLength);
    this.settle(key, keyStart, keyLength);
  }

  /** Moves forward to the key; requires key >= upper(). */
  stepForward(key: Buffer, keyStart: number, keyLength: number): void {
    const { count, ends } = this.list;
    // Inside, key >= upper() is key >= ends[pos]: that fragment is passed.
    let p = this.inside ? this.pos + 1 : this.pos;
    let steps = 0;
    while (p < count && compareKeyToBound(key, keyStart, keyLength, ends[p]) >= 0) {
      if (++steps > TRY_SEEK_USING_NEXT_STEPS) {
        p = firstFragmentEndingAfter(this.list, key, keyStart, keyLength, p + 1, count);
        break;
      }
      p++;
    }
    this.pos = p;
    this.settle(key, keyStart, keyLength);
  }

  /** Moves backward to the key; requires key < lower(). */
  stepBackward(key: Buffer, keyStart: number, keyLength: number): void {
    const ends = this.list.ends;
    let p = this.pos;
    let steps = 0;
    while (p > 0 && compareKeyToBound(key, keyStart, keyLength, ends[p - 1]) < 0) {
      if (++steps > TRY_SEEK_USING_NEXT_STEPS) {
        // ends[p - 1] > key: the answer is in [0, p - 1].
        p = firstFragmentEndingAfter(this.list, key, keyStart, keyLength, 0, p - 1);
        break;
      }
      p--;
    }
    this.pos = p;
    this.settle(key, keyStart, keyLength);
  }

  private settle(key: Buffer, keyStart: number, keyLength: number): void {
    this.inside = this.pos < this.list.count && compareKeyToBound(key, keyStart, keyLength, this.list.starts[this.pos]) >= 0;
  }
}

const NO_CURSORS: SourceCursor[] = [];

export class RangeDelAggregator {
  private cursors: SourceCursor[] = NO_CURSORS;
  private regionValid = false;
  /** The cached region [regionLower, regionUpper); null: unbounded on that side. */
  private regionLower: Buffer | null = null;
  private regionUpper: Buffer | null = null;
  /** The read sequence regionMaxSeq was computed for; -1: not computed. */
  private regionReadSeq = -1;
  private regionMaxSeq = 0;

  /**
   * Adds a source's tombstones, clipped to `clip` if given. Returns false, allocating nothing,
   * when the source has no tombstone left to contribute. Sources may be added between queries
   * (e.g. as a level iterator opens its next file); the next query positions the new cursor.
   */
  addSource(list: FragmentedTombstoneList, clip?: ClipRange): boolean {
    if (list.count === 0) return false;
    const clipped = clip === undefined ? list : clipFragments(list, clip.lower ?? null, clip.upper ?? null);
    if (clipped.count === 0) return false;
    if (this.cursors === NO_CURSORS) this.cursors = [];
    this.cursors.push(new SourceCursor(clipped));
    this.regionValid = false;
    return true;
  }

  /** Sources holding tombstones. */
  get numSources(): number {
    return this.cursors.length;
  }

  /** True when no source holds a tombstone: every query answers "not deleted" for free. */
  get isEmpty(): boolean {
    return this.cursors.length === 0;
  }

  /** Whether internal key `internalKey` (visible at readSeq) is deleted by a range tombstone. */
  shouldDelete(internalKey: Buffer, readSeq: number, direction: RangeDelDirection): boolean {
    if (this.cursors.length === 0) return false;
    const seq = sequenceOf(internalKey);
    return seq < this.coveringSeq(internalKey, 0, internalKey.length - TRAILER_BYTES, readSeq, direction);
  }

  /** Whether (userKey, seq) visible at readSeq is deleted by a range tombstone. */
  shouldDeleteUserKey(userKey: Buffer, seq: number, readSeq: number, direction: RangeDelDirection): boolean {
    if (this.cursors.length === 0) return false;
    return seq < this.coveringSeq(userKey, 0, userKey.length, readSeq, direction);
  }

  /** The largest tombstone sequence <= readSeq covering userKey over all sources, or 0. */
  maxCoveringSeq(userKey: Buffer, readSeq: number, direction: RangeDelDirection): number {
    if (this.cursors.length === 0) return 0;
    return this.coveringSeq(userKey, 0, userKey.length, readSeq, direction);
  }

  /**
   * The span the last query's answer holds for, forward: its exclusive end (null when unbounded
   * above or before any query) and the covering sequence number answered. Within
   * [the last key, coveredSpanEnd()) no source has a fragment boundary, so one tombstone of
   * sequence lastCoveringSeq() (if non-zero) covers all of it. Valid until sources are added.
   */
  coveredSpanEnd(): Buffer | null {
    return this.regionValid ? this.regionUpper : null;
  }

  /** coveredSpanEnd's mirror: the inclusive start of the last query's span (null: unbounded below or none). */
  coveredSpanStart(): Buffer | null {
    return this.regionValid ? this.regionLower : null;
  }

  lastCoveringSeq(): number {
    return this.regionValid && this.regionReadSeq >= 0 ? this.regionMaxSeq : 0;
  }

  private coveringSeq(key: Buffer, keyStart: number, keyLength: number, readSeq: number, direction: RangeDelDirection): number {
    if (!this.regionValid) {
      this.rebuildRegion(key, keyStart, keyLength, Leave.Unknown);
    } else if (direction === RangeDelDirection.Forward) {
      if (this.regionUpper !== null && compareKeyToBound(key, keyStart, keyLength, this.regionUpper) >= 0) {
        this.rebuildRegion(key, keyStart, keyLength, Leave.Above);
      } else if (this.regionLower !== null && compareKeyToBound(key, keyStart, keyLength, this.regionLower) < 0) {
        this.rebuildRegion(key, keyStart, keyLength, Leave.Below);
      }
    } else {
      if (this.regionLower !== null && compareKeyToBound(key, keyStart, keyLength, this.regionLower) < 0) {
        this.rebuildRegion(key, keyStart, keyLength, Leave.Below);
      } else if (this.regionUpper !== null && compareKeyToBound(key, keyStart, keyLength, this.regionUpper) >= 0) {
        this.rebuildRegion(key, keyStart, keyLength, Leave.Above);
      }
    }
    if (readSeq !== this.regionReadSeq) {
      let max = 0;
      for (const c of this.cursors) {
        if (!c.inside) continue;
        const s = c.list.largestSeqAtOrBelow(c.pos, readSeq);
        if (s > max) max = s;
      }
      this.regionMaxSeq = max;
      this.regionReadSeq = readSeq;
    }
    return this.regionMaxSeq;
  }

  /** Moves every cursor whose piece does not hold the key, then intersects their pieces. */
  private rebuildRegion(key: Buffer, keyStart: number, keyLength: number, leave: Leave): void {
    const cursors = this.cursors;
    for (let i = 0; i < cursors.length; i++) {
      const c = cursors[i];
      if (c.pos < 0) {
        c.seek(key, keyStart, keyLength);
        continue;
      }
      if (leave !== Leave.Below) {
        const upper = c.upper();
        // Leaving the region above, the key is >= the region's end, so a cursor whose piece
        // ends there (the same buffer) is known to be passed without comparing again.
        if (
          upper !== null &&
          ((leave === Leave.Above && upper === this.regionUpper) || compareKeyToBound(key, keyStart, keyLength, upper) >= 0)
        ) {
          c.stepForward(key, keyStart, keyLength);
          continue;
        }
      }
      if (leave !== Leave.Above) {
        const lower = c.lower();
        if (
          lower !== null &&
          ((leave === Leave.Below && lower === this.regionLower) || compareKeyToBound(key, keyStart, keyLength, lower) < 0)
        ) {
          c.stepBackward(key, keyStart, keyLength);
        }
      }
    }
    let lower: Buffer | null = null;
    let upper: Buffer | null = null;
    for (let i = 0; i < cursors.length; i++) {
      const c = cursors[i];
      const l = c.lower();
      if (l !== null && l !== lower && (lower === null || compareBounds(l, lower) > 0)) lower = l;
      const u = c.upper();
      if (u !== null && u !== upper && (upper === null || compareBounds(u, upper) < 0)) upper = u;
    }
    this.regionLower = lower;
    this.regionUpper = upper;
    this.regionValid = true;
    this.regionReadSeq = -1;
  }
}

function compareBounds(a: Buffer, b: Buffer): number {
  perf.keyComparisons++;
  return compareUserKeys(a, b);
}
