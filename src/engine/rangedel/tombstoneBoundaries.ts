/**
 * Tombstone-aware file boundaries: which range-tombstone pieces each output file of a flush or
 * compaction carries, and the smallest/largest internal keys the file then has; plus the same
 * bound rule for a single file (ingestion, SstFileWriter) and the read-side inverse (the user-key
 * range a file's tombstones are clipped to).
 *
 * The rule (as RocksDB's compaction outputs and Pebble's compaction splitter apply it). The
 * output writer decides where point keys go; tombstones follow the point keys' split points:
 *
 *   user keys:     a    b    c    d    e    f    g    h    i    j    k
 *   point keys:         b----c              f----g         i
 *                       file 0              file 1         file 2
 *   tombstones:   [a------------d)@7   [e------------h)@9        [j----k)@5
 *   split keys:                             S1=f           S2=i
 *   file 0 (-inf, f):  [a, d)@7, [e, f)@9   smallest (a,7,RangeDel)  largest (f,MAX,RangeDel)
 *   file 1 [f, i):     [f, h)@9             smallest min((f,9,RangeDel), first point of f)
 *                                           largest (h,MAX,RangeDel)
 *   file 2 [i, +inf):  [j, k)@5             smallest first point (i,..)  largest (k,MAX,RangeDel)
 *
 * - Split key S_i between files i-1 and i: the user key of file i's first point key. Files never
 *   split a user key (file i-1's last point user key < S_i). File i carries the fragments
 *   intersected with [S_i, S_{i+1}), S_0 = -inf, S_n = +inf: the first file extends left to the
 *   first tombstone's start, each file extends right until the next file's start or the
 *   tombstone's end, whichever comes first, and the last file takes every tombstone after it.
 * - A file whose largest key comes from a tombstone piece ends at (end, MAX_SEQUENCE_NUMBER,
 *   RangeDeletion): an exclusive sentinel, since the piece deletes keys < end only. It sorts before
 *   every real entry of user key `end`, so when end = S_{i+1} the next file, starting at
 *   (S_{i+1}, seq < MAX, ...), comes strictly after it and no two files of a level claim the same
 *   key. A piece's start key is (start, its largest seq, RangeDeletion): below every entry it
 *   deletes at that user key.
 * - A file without point keys (tombstones only) is allowed if its neighbours have point keys: its
 *   start, when it follows a file, is the first fragment start after that file's last point key.
 *   Every file must end up with a point key or a tombstone piece.
 *
 * Compared with RocksDB 7.8 (CompactionOutputs::AddRangeDels), on the same split points the
 * bounds agree except in one place: where a piece is cut at a file's first point key S, RocksDB
 * takes (S, 0, RangeDeletion) as the start candidate (its reads truncate tombstones at internal-key
 * precision and it wants the fake key to sort late), we take (S, piece seq, RangeDeletion), as
 * Pebble does. Both sort after the previous file's sentinel (S, MAX, RangeDeletion), and reads here
 * clip at user-key precision (clipRangeOfFile), so the difference is never observable. RocksDB
 * also writes whole fragments and relies on the bounds to truncate them; we write the cut pieces,
 * so a file's range_del block never reaches outside its own bounds.
 *
 * Keys are internal keys (user key ‖ trailer) unless named user keys. Functions here are pure and
 * allocate their results; they run once per output file, not per key.
 */
import { assert } from '../../util/errors';
import { compareInternal, compareUserKeys } from '../../base/keyCompare';
import { formatKey, makeInternalKey, MAX_SEQUENCE_NUMBER, sequenceOf, typeOf, userKeyOf, ValueType } from '../../base/internalKey';
import { FragmentedTombstoneList, RangeTombstone } from '../../base/fragmenter';
import { clipFragments } from './tombstoneIndex';

/** The internal key a tombstone piece [start, ...)@seq starts at. */
export function tombstoneStartKey(start: Uint8Array, seq: number): Buffer {
  return makeInternalKey(start, seq, ValueType.RangeDeletion);
}

/** The exclusive sentinel a tombstone piece [..., end) ends at: (end, MAX_SEQUENCE_NUMBER, RangeDeletion). */
export function tombstoneEndSentinel(end: Uint8Array): Buffer {
  return makeInternalKey(end, MAX_SEQUENCE_NUMBER, ValueType.RangeDeletion);
}

/** True when a file's largest key is a tombstone end sentinel (its user key is not in the file). */
export function isExclusiveSentinel(internalKey: Buffer): boolean {
  return typeOf(internalKey) === ValueType.RangeDeletion && sequenceOf(internalKey) === MAX_SEQUENCE_NUMBER;
}

export interface FileBounds {
  smallest: Buffer;
  largest: Buffer;
}

/**
 * Bounds of one file holding point keys [firstPointKey .. lastPointKey] (null/undefined: none)
 * and whole tombstones in any order: smallest = min(first point key, each (start, seq,
 * RangeDeletion)), largest = max(last point key, each end sentinel). The ingestion-side rule;
 * TableBuilder.finish() computes the same bounds for the tables it writes.
 */
export function fileBoundsWithTombstones(
  firstPointKey: Buffer | null | undefined,
  lastPointKey: Buffer | null | undefined,
  tombstones: readonly RangeTombstone[],
): FileBounds {
  assert((firstPointKey == null) === (lastPointKey == null), 'a file has both a first and a last point key, or neither');
  let smallest: Buffer | null = firstPointKey ?? null;
  let largest: Buffer | null = lastPointKey ?? null;
  for (const t of tombstones) {
    assert(compareUserKeys(t.start, t.end) < 0, `range tombstone [${formatKey(t.start)}, ${formatKey(t.end)}) is empty`);
    const start = tombstoneStartKey(t.start, t.seq);
    if (smallest === null || compareInternal(start, smallest) < 0) smallest = start;
    // Sentinels of equal user keys are equal, so only a larger end user key can raise `largest`.
    if (largest === null || compareUserKeys(t.end, userKeyOf(largest)) > 0) largest = tombstoneEndSentinel(t.end);
  }
  assert(smallest !== null && largest !== null, 'a file needs a point key or a range tombstone');
  return { smallest, largest };
}

/** One output file's point keys, as the compaction/flush output writer cut them. */
export interface OutputPointKeys {
  /** First and last point internal keys, or null for a file without point keys. */
  firstPointKey: Buffer | null;
  lastPointKey: Buffer | null;
}

export interface OutputFileTombstones extends FileBounds {
  /** The pieces the file carries, by start then seq descending: what its range_del block holds. */
  tombstones: RangeTombstone[];
  /** The user-key range [lower, upper) the file owns; null: unbounded. */
  lower: Buffer | null;
  upper: Buffer | null;
}

/**
 * Assigns the fragmented tombstones of a flush or compaction to its output files and computes
 * each file's bounds (see the module comment for the rule). `outputs` are in key order.
 */
export function assignTombstonesToOutputs(outputs: readonly OutputPointKeys[], fragments: FragmentedTombstoneList): OutputFileTombstones[] {
  const n = outputs.length;
  assert(n > 0, 'a flush or compaction has at least one output file');
  for (let i = 0; i < n; i++) {
    const o = outputs[i];
    assert((o.firstPointKey === null) === (o.lastPointKey === null), `output ${i} has both a first and a last point key, or neither`);
    if (o.firstPointKey !== null && o.lastPointKey !== null) {
      assert(compareInternal(o.firstPointKey, o.lastPointKey) <= 0, `output ${i}: first point key after last`);
    }
  }
  // splits[i] = S_i, the user key where file i starts; splits[0] = splits[n] = null (unbounded).
  const splits: (Buffer | null)[] = new Array<Buffer | null>(n + 1).fill(null);
  for (let i = 1; i < n; i++) {
    const cur = outputs[i];
    const prev = outputs[i - 1];
    if (cur.firstPointKey !== null) {
      splits[i] = userKeyOf(cur.firstPointKey);
      if (prev.lastPointKey !== null) {
        assert(
          compareUserKeys(userKeyOf(prev.lastPointKey), splits[i] as Buffer) < 0,
          `outputs ${i - 1} and ${i} overlap or split user key ${formatKey(userKeyOf(cur.firstPointKey))}`,
        );
      }
    } else {
      assert(prev.lastPointKey !== null, `outputs ${i - 1} and ${i} both lack point keys: no split key between them`);
      splits[i] = firstFragmentStartAfter(fragments, userKeyOf(prev.lastPointKey));
      assert(splits[i] !== null, `output ${i} has no point keys and no tombstone after output ${i - 1}`);
    }
  }
  for (let i = 2; i < n; i++) {
    const a = splits[i - 1];
    const b = splits[i];
    assert(a !== null && b !== null && compareUserKeys(a, b) < 0, `output ${i - 1} owns an empty key range`);
  }

  const result: OutputFileTombstones[] = [];
  for (let i = 0; i < n; i++) {
    const lower = splits[i];
    const upper = splits[i + 1];
    const pieces = clipFragments(fragments, lower, upper);
    const o = outputs[i];
    assert(o.firstPointKey !== null || pieces.count > 0, `output ${i} holds neither point keys nor tombstones`);
    const { smallest, largest } = outputFileBounds(o.firstPointKey, o.lastPointKey, pieces);
    result.push({ tombstones: pieces.toTombstones(), smallest, largest, lower, upper });
  }
  for (let i = 1; i < n; i++) {
    assert(!filesClaimSameKey(result[i - 1].largest, result[i].smallest), `outputs ${i - 1} and ${i} claim the same key`);
  }
  return result;
}

/**
 * Bounds of one output file: point keys [firstPointKey .. lastPointKey] (null: none) and the
 * tombstone pieces it carries, already cut to the range it owns (sorted, disjoint; see
 * clipFragments). smallest = min(first point key, (first piece start, its largest seq,
 * RangeDeletion)); largest = the last point key unless the last piece ends past its user key,
 * then that piece's end sentinel. Copies. A compaction writing its outputs one at a time calls
 * this per file; assignTombstonesToOutputs does the same for a whole list of outputs.
 */
export function outputFileBounds(firstPointKey: Buffer | null, lastPointKey: Buffer | null, pieces: FragmentedTombstoneList): FileBounds {
  assert((firstPointKey === null) === (lastPointKey === null), 'a file has both a first and a last point key, or neither');
  let smallest = firstPointKey;
  let largest = lastPointKey;
  if (pieces.count > 0) {
    const start = tombstoneStartKey(pieces.starts[0], pieces.maxSeqOf(0));
    if (smallest === null || compareInternal(start, smallest) < 0) smallest = start;
    const lastEnd = pieces.ends[pieces.count - 1];
    if (largest === null || compareUserKeys(lastEnd, userKeyOf(largest)) > 0) largest = tombstoneEndSentinel(lastEnd);
  }
  assert(smallest !== null && largest !== null, 'a file needs a point key or a range tombstone');
  return { smallest: Buffer.from(smallest), largest: Buffer.from(largest) };
}

/**
 * True when a file ending at internal key `largest` and the next file starting at `smallest`
 * could both hold an entry: they overlap in internal-key order, or share a user key that the
 * first file includes (its largest is not an exclusive sentinel).
 */
export function filesClaimSameKey(largest: Buffer, smallest: Buffer): boolean {
  if (compareInternal(largest, smallest) >= 0) return true;
  return !isExclusiveSentinel(largest) && compareUserKeys(userKeyOf(largest), userKeyOf(smallest)) === 0;
}

/**
 * The user-key range [lower, upper) a file's tombstones count in, from its bounds: lower = the
 * smallest key's user key; upper = the largest key's user key when that is an exclusive sentinel,
 * else its immediate successor (user key ‖ 0x00), so that user key itself is included.
 */
export function clipRangeOfFile(smallest: Buffer, largest: Buffer): { lower: Buffer; upper: Buffer } {
  const lower = userKeyOf(smallest);
  const largestUserKey = userKeyOf(largest);
  if (isExclusiveSentinel(largest)) return { lower, upper: largestUserKey };
  const upper = Buffer.alloc(largestUserKey.length + 1);
  largestUserKey.copy(upper, 0);
  return { lower, upper };
}

/** The first fragment start > userKey, or null. */
function firstFragmentStartAfter(fragments: FragmentedTombstoneList, userKey: Buffer): Buffer | null {
  for (let i = 0; i < fragments.count; i++) {
    if (compareUserKeys(fragments.starts[i], userKey) > 0) return fragments.starts[i];
  }
  return null;
}
