/**
 * Point queries over a FragmentedTombstoneList: which fragment holds a key, the newest tombstone
 * covering a key at a read sequence, and clipping a list to a file's key range.
 *
 * Contract:
 * - Keys are user keys, passed as a byte range (buffer, start, length) so an internal key's user
 *   part is searched without slicing a view. Nothing here allocates, except clipFragments when it
 *   actually has to clip (a few pointers per kept fragment).
 * - Every key comparison is counted in perf.keyComparisons; a list without fragments is answered
 *   without comparing anything.
 * - "No covering tombstone" is sequence 0: a tombstone deletes only keys with a smaller sequence,
 *   so one at sequence 0 deletes nothing and the two answers mean the same.
 */
import { perf } from '../../base/perfContext';
import { compareByteRanges, compareUserKeys } from '../../base/keyCompare';
import { FragmentedTombstoneList } from '../../base/fragmenter';
import { TRAILER_BYTES } from '../../base/internalKey';

/** Compares key range [keyStart, keyStart + keyLength) of `key` with user key `bound`; counts. */
export function compareKeyToBound(key: Buffer, keyStart: number, keyLength: number, bound: Buffer): number {
  perf.keyComparisons++;
  return compareByteRanges(key, keyStart, keyLength, bound, 0, bound.length);
}

/**
 * Index in [from, to) of the first fragment whose end is > key, or `to` if none: the fragment
 * holding the key if any holds it, else the first one after it. Binary search.
 */
export function firstFragmentEndingAfter(
  list: FragmentedTombstoneList,
  key: Buffer,
  keyStart: number,
  keyLength: number,
  from = 0,
  to = list.count,
): number {
  const ends = list.ends;
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKeyToBound(key, keyStart, keyLength, ends[mid]) >= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the fragment containing the key, or -1. */
export function findFragment(list: FragmentedTombstoneList, key: Buffer, keyStart = 0, keyLength = key.length): number {
  if (list.count === 0) return -1;
  const i = firstFragmentEndingAfter(list, key, keyStart, keyLength);
  if (i < list.count && compareKeyToBound(key, keyStart, keyLength, list.starts[i]) >= 0) return i;
  return -1;
}

/**
 * The largest sequence number <= readSeq among the tombstones covering `userKey`, or 0 if none
 * (what a point lookup needs: the key's newest visible version at seq s is deleted iff s < this).
 */
export function maxCoveringSeq(list: FragmentedTombstoneList, userKey: Buffer, readSeq: number): number {
  const i = findFragment(list, userKey);
  return i < 0 ? 0 : list.largestSeqAtOrBelow(i, readSeq);
}

/** As maxCoveringSeq, for the user key of internal key `internalKey` (no view allocated). */
export function maxCoveringSeqOfInternalKey(list: FragmentedTombstoneList, internalKey: Buffer, readSeq: number): number {
  const i = findFragment(list, internalKey, 0, internalKey.length - TRAILER_BYTES);
  return i < 0 ? 0 : list.largestSeqAtOrBelow(i, readSeq);
}

/**
 * The fragments of `list` restricted to user keys [lower, upper) (null: unbounded on that side).
 * Returns `list` itself when nothing needs clipping and FragmentedTombstoneList.EMPTY when
 * nothing is left; otherwise a new list sharing `list.seqs`, whose first start and last end are
 * replaced by the bounds where they cut a fragment. O(log n) comparisons plus O(kept) pointers.
 */
export function clipFragments(list: FragmentedTombstoneList, lower: Buffer | null, upper: Buffer | null): FragmentedTombstoneList {
  const n = list.count;
  if (n === 0) return list;
  if (lower !== null && upper !== null) {
    perf.keyComparisons++;
    if (compareUserKeys(lower, upper) >= 0) return FragmentedTombstoneList.EMPTY;
  }
  const from = lower === null ? 0 : firstFragmentEndingAfter(list, lower, 0, lower.length);
  let to = n;
  if (upper !== null) {
    // First fragment starting at or after `upper`.
    let lo = from;
    while (lo < to) {
      const mid = (lo + to) >>> 1;
      if (compareKeyToBound(list.starts[mid], 0, list.starts[mid].length, upper) < 0) lo = mid + 1;
      else to = mid;
    }
  }
  if (from >= to) return FragmentedTombstoneList.EMPTY;
  const cutsStart = lower !== null && compareKeyToBound(list.starts[from], 0, list.starts[from].length, lower) < 0;
  const cutsEnd = upper !== null && compareKeyToBound(list.ends[to - 1], 0, list.ends[to - 1].length, upper) > 0;
  if (from === 0 && to === n && !cutsStart && !cutsEnd) return list;
  const starts = list.starts.slice(from, to);
  const ends = list.ends.slice(from, to);
  if (cutsStart && lower !== null) starts[0] = lower;
  if (cutsEnd && upper !== null) ends[ends.length - 1] = upper;
  return new FragmentedTombstoneList(starts, ends, list.seqOffsets.subarray(from, to + 1), list.seqs);
}
