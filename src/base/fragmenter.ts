/**
 * Range-tombstone fragmentation: turns a bag of possibly overlapping tombstones into a sorted list
 * of disjoint fragments, the form every read of range deletions searches.
 *
 * A tombstone [start, end)@seq deletes the user keys k with start <= k < end whose sequence is
 * below seq, for reads whose snapshot sequence is >= seq. Tombstones overlap freely (a table's
 * range_del block stores them as written), so a key may be covered by several. Fragmenting cuts
 * the key space at every start and end: between two consecutive cuts the set of covering
 * tombstones is constant, so each piece carries just the list of their sequence numbers.
 *
 *   input:      [a-------------e)@7
 *                     [c-------------g)@9
 *                     [c--d)@4
 *   fragments:  [a----c)  [c--d)  [d--e)  [e--g)
 *   seqs:        7         9,7,4   9,7     9
 *
 * Layout (flat arrays, no object per fragment): fragment i is [starts[i], ends[i]) and its
 * sequence numbers are seqs[seqOffsets[i] .. seqOffsets[i + 1]), strictly descending (equal
 * sequence numbers over one piece are redundant and kept once). seqOffsets holds absolute offsets,
 * so a sub-range of fragments can share `seqs` through a seqOffsets view (see clipFragments in
 * tombstoneIndex.ts). Gaps between fragments are uncovered; adjacent fragments may touch
 * (ends[i] === starts[i + 1] as bytes).
 *
 * Contract:
 * - Input may be unsorted and overlapping; tombstones with start >= end are empty and skipped
 *   (RocksDB ignores them the same way; clipping can produce them).
 * - The list keeps references to the input's start/end buffers (every fragment boundary is some
 *   tombstone's start or end), so callers must not mutate them afterwards. Readers hand in copies.
 * - Invariants, asserted by fragmentTombstones (checkInvariants): fragments sorted and disjoint (ends[i] <= starts[i+1]),
 *   non-empty (starts[i] < ends[i]), each with >= 1 sequence number, strictly descending.
 * - Fragmenting costs O(n log n + output) comparisons, done once per table or memtable, and is not
 *   counted in perf.keyComparisons (that counter measures reads, not table opens).
 */
import { assert } from '../util/errors';
import { compareUserKeys } from './keyCompare';

/** One range tombstone in user keys; `end` is exclusive. */
export interface RangeTombstone {
  start: Buffer;
  end: Buffer;
  seq: number;
}

const NO_BUFFERS: readonly Buffer[] = [];
const NO_OFFSETS = new Uint32Array(1);
const NO_SEQS = new Float64Array(0);

export class FragmentedTombstoneList {
  /** The list without tombstones, shared so an empty source allocates nothing. */
  static readonly EMPTY = new FragmentedTombstoneList(NO_BUFFERS, NO_BUFFERS, NO_OFFSETS, NO_SEQS);

  readonly starts: readonly Buffer[];
  readonly ends: readonly Buffer[];
  /** count + 1 absolute offsets into `seqs`. */
  readonly seqOffsets: Uint32Array;
  /** Float64Array: holds every sequence number a database assigns (< 2^53) exactly. */
  readonly seqs: Float64Array;
  readonly count: number;

  constructor(starts: readonly Buffer[], ends: readonly Buffer[], seqOffsets: Uint32Array, seqs: Float64Array) {
    assert(starts.length === ends.length, 'fragment starts and ends differ in number');
    assert(seqOffsets.length === starts.length + 1, 'a fragment list has one more seq offset than fragments');
    this.starts = starts;
    this.ends = ends;
    this.seqOffsets = seqOffsets;
    this.seqs = seqs;
    this.count = starts.length;
  }

  get isEmpty(): boolean {
    return this.count === 0;
  }

  /** The largest sequence number of fragment i that is <= readSeq, or 0 if none is visible. */
  largestSeqAtOrBelow(i: number, readSeq: number): number {
    const limit = this.seqOffsets[i + 1];
    for (let j = this.seqOffsets[i]; j < limit; j++) {
      const s = this.seqs[j];
      if (s <= readSeq) return s;
    }
    return 0;
  }

  /** Largest sequence number of fragment i. */
  maxSeqOf(i: number): number {
    return this.seqs[this.seqOffsets[i]];
  }

  /**
   * The fragments as tombstones, one per (fragment, seq), ordered by start then seq descending:
   * what a flush or compaction writes to a range_del block. Allocates; not for the read path.
   */
  toTombstones(): RangeTombstone[] {
    const out: RangeTombstone[] = [];
    for (let i = 0; i < this.count; i++) {
      for (let j = this.seqOffsets[i]; j < this.seqOffsets[i + 1]; j++)
        out.push({ start: this.starts[i], end: this.ends[i], seq: this.seqs[j] });
    }
    return out;
  }

  /** Asserts the invariants of the module comment: O(n) comparisons, run by fragmentTombstones. */
  checkInvariants(): void {
    for (let i = 0; i < this.count; i++) {
      assert(compareUserKeys(this.starts[i], this.ends[i]) < 0, `tombstone fragment ${i} is empty`);
      assert(
        i === 0 || compareUserKeys(this.ends[i - 1], this.starts[i]) <= 0,
        `tombstone fragment ${i} overlaps or precedes fragment ${i - 1}`,
      );
      const from = this.seqOffsets[i];
      const to = this.seqOffsets[i + 1];
      assert(from < to && to <= this.seqs.length, `tombstone fragment ${i} has no sequence numbers`);
      for (let j = from + 1; j < to; j++)
        assert(this.seqs[j - 1] > this.seqs[j], `sequence numbers of tombstone fragment ${i} are not strictly descending`);
    }
  }
}

/**
 * Fragments `tombstones` (see module comment). Sweep over the tombstones sorted by start, keeping
 * the "active" ones (started, not yet ended) sorted by end: before each new start, the pieces
 * between the current cut and min(next start, smallest active end) are emitted with the active
 * set's sequence numbers. O(n log n) plus O(active) per cut, the output size in the worst case.
 */
export function fragmentTombstones(tombstones: readonly RangeTombstone[]): FragmentedTombstoneList {
  const sorted: RangeTombstone[] = [];
  for (const t of tombstones) {
    assert(Number.isInteger(t.seq) && t.seq >= 0, `tombstone sequence number ${t.seq} must be a non-negative integer`);
    if (compareUserKeys(t.start, t.end) < 0) sorted.push(t);
  }
  if (sorted.length === 0) return FragmentedTombstoneList.EMPTY;
  sorted.sort((a, b) => compareUserKeys(a.start, b.start));

  const starts: Buffer[] = [];
  const ends: Buffer[] = [];
  const offsets: number[] = [0];
  const seqs: number[] = [];
  // Active tombstones, ascending by end (parallel arrays).
  const activeEnds: Buffer[] = [];
  const activeSeqs: number[] = [];
  const scratch: number[] = [];
  let cut: Buffer = sorted[0].start;

  const emit = (end: Buffer): void => {
    scratch.length = 0;
    for (const s of activeSeqs) scratch.push(s);
    scratch.sort((a, b) => b - a);
    for (let j = 0; j < scratch.length; j++) if (j === 0 || scratch[j] !== scratch[j - 1]) seqs.push(scratch[j]);
    starts.push(cut);
    ends.push(end);
    offsets.push(seqs.length);
    cut = end;
    let ended = 0;
    while (ended < activeEnds.length && compareUserKeys(activeEnds[ended], end) <= 0) ended++;
    activeEnds.splice(0, ended);
    activeSeqs.splice(0, ended);
  };

  /** Emits every piece between the current cut and `limit` (null: until nothing is active). */
  const flushUntil = (limit: Buffer | null): void => {
    while (activeEnds.length > 0) {
      if (limit !== null && compareUserKeys(cut, limit) >= 0) return;
      const firstEnd = activeEnds[0];
      emit(limit !== null && compareUserKeys(limit, firstEnd) < 0 ? limit : firstEnd);
    }
  };

  for (let i = 0; i < sorted.length;) {
    const start = sorted[i].start;
    flushUntil(start);
    cut = start;
    // Add every tombstone that starts here, keeping the active set sorted by end.
    for (; i < sorted.length && compareUserKeys(sorted[i].start, start) === 0; i++) {
      const t = sorted[i];
      let at = activeEnds.length;
      while (at > 0 && compareUserKeys(activeEnds[at - 1], t.end) > 0) at--;
      activeEnds.splice(at, 0, t.end);
      activeSeqs.splice(at, 0, t.seq);
    }
  }
  flushUntil(null);
  const list = new FragmentedTombstoneList(starts, ends, Uint32Array.from(offsets), Float64Array.from(seqs));
  list.checkInvariants();
  return list;
}
