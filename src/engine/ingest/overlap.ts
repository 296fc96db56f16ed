/**
 * Overlap questions ingestion asks of the database, for a user-key range R (an ingested file's
 * span; exclusive at the end when the file ends at a range-tombstone sentinel):
 *
 * - boundaries: does R intersect the [smallest, largest] span of some file of a level? Decides
 *   whether a file may be placed in that level (levels >= 1 must stay disjoint).
 * - data: does some entry actually lie in R? Decides where the walk down the levels stops and
 *   whether the file needs a sequence number above the existing data. A file's span may cover R
 *   without any of its keys lying in R (its keys straddle R): then there is no data overlap.
 *   Range tombstones count as data: a tombstone reaching into R must not hide the ingested keys,
 *   so the file has to be newer than it.
 *
 * Data checks seek an iterator to R's start and look at one key, and scan the range tombstones
 * (of a table: clipped to the table's own bounds, as reads clip them; see clipRangeOfFile). They
 * open tables through the table cache, so an ingested file is read with its global seqno. Costs:
 * one seek per table whose span intersects R (at most one table per level >= 1 in the common case
 * of a narrow R); ingestion runs them once per file, never per key.
 */
import { compareByteRanges, compareUserKeys } from '../../base/keyCompare';
import { makeInternalKey, MAX_SEQUENCE_NUMBER, TRAILER_BYTES, userKeyOf, ValueType } from '../../base/internalKey';
import { Memtable } from '../memtable/memtable';
import { TableCache } from '../tableCache';
import { FileMetaData } from '../versionEdit';
import { findFile } from '../version';
import { clipRangeOfFile, isExclusiveSentinel } from '../rangedel/tombstoneBoundaries';
import { keyBeforeRangeEnd, UserKeyRange, userKeyRangesOverlap } from '../runningCompactions';

/** The user-key span of a file of the database. */
export function rangeOfFile(file: FileMetaData): UserKeyRange {
  return { smallest: userKeyOf(file.smallest), largest: userKeyOf(file.largest), largestExclusive: isExclusiveSentinel(file.largest) };
}

/** True when the user key of internal key `ikey` is not past the end of `range`. */
function internalKeyBeforeRangeEnd(ikey: Buffer, range: UserKeyRange): boolean {
  const c = compareByteRanges(ikey, 0, ikey.length - TRAILER_BYTES, range.largest, 0, range.largest.length);
  return range.largestExclusive ? c < 0 : c <= 0;
}

/** True when [start, end) shares a user key with `range`. */
function tombstoneOverlaps(start: Buffer, end: Buffer, range: UserKeyRange): boolean {
  return keyBeforeRangeEnd(start, range) && compareUserKeys(end, range.smallest) > 0;
}

/**
 * The files of a level whose spans intersect `range`: every such L0 file, or the run of them
 * found by binary search in a sorted, disjoint level.
 */
export function filesOverlappingRange(files: readonly FileMetaData[], level: number, range: UserKeyRange): FileMetaData[] {
  const out: FileMetaData[] = [];
  if (level === 0) {
    for (const f of files) if (userKeyRangesOverlap(rangeOfFile(f), range)) out.push(f);
    return out;
  }
  // The first file whose largest key is at or past R's first internal key; then forward while
  // files still start inside R.
  for (let i = findFile(files, makeInternalKey(range.smallest, MAX_SEQUENCE_NUMBER, ValueType.Seek)); i < files.length; i++) {
    const f = files[i];
    if (!keyBeforeRangeEnd(userKeyOf(f.smallest), range)) break;
    if (userKeyRangesOverlap(rangeOfFile(f), range)) out.push(f);
  }
  return out;
}

/** True when a point entry or a range tombstone of the memtable lies in `range`. */
export function memtableHasDataIn(mem: Memtable, range: UserKeyRange): boolean {
  const it = mem.newIterator();
  try {
    it.seekGE(makeInternalKey(range.smallest, MAX_SEQUENCE_NUMBER, ValueType.Seek));
    if (it.valid() && internalKeyBeforeRangeEnd(it.key(), range)) return true;
  } finally {
    it.close();
  }
  if (mem.rangeTombstoneCount === 0) return false;
  // Tombstones are ordered by start: stop at the first one starting past R.
  const tombstones = mem.newRangeTombstoneIterator();
  try {
    for (tombstones.first(); tombstones.valid(); tombstones.next()) {
      const key = tombstones.key();
      if (!internalKeyBeforeRangeEnd(key, range)) break;
      if (compareUserKeys(tombstones.value(), range.smallest) > 0) return true;
    }
  } finally {
    tombstones.close();
  }
  return false;
}

/** True when a point entry or a (clipped) range tombstone of the table lies in `range`. */
export function tableHasDataIn(tableCache: TableCache, file: FileMetaData, range: UserKeyRange): boolean {
  const handle = tableCache.acquire(file);
  try {
    const reader = handle.reader;
    const it = reader.newIterator();
    try {
      it.seekGE(makeInternalKey(range.smallest, MAX_SEQUENCE_NUMBER, ValueType.Seek));
      if (it.valid() && internalKeyBeforeRangeEnd(it.key(), range)) return true;
    } finally {
      it.close();
    }
    const clip = clipRangeOfFile(file.smallest, file.largest);
    for (const t of reader.rangeTombstones()) {
      const start = compareUserKeys(t.start, clip.lower) < 0 ? clip.lower : t.start;
      const end = compareUserKeys(t.end, clip.upper) > 0 ? clip.upper : t.end;
      if (compareUserKeys(start, end) < 0 && tombstoneOverlaps(start, end, range)) return true;
    }
    return false;
  } finally {
    handle.release();
  }
}

/** True when some file of the level holds data in `range`. */
export function levelHasDataIn(tableCache: TableCache, files: readonly FileMetaData[], level: number, range: UserKeyRange): boolean {
  for (const f of filesOverlappingRange(files, level, range)) {
    if (tableHasDataIn(tableCache, f, range)) return true;
  }
  return false;
}

/** True when `range` intersects the span of some file of the level (level >= 1: sorted, disjoint). */
export function levelBoundariesOverlap(files: readonly FileMetaData[], level: number, range: UserKeyRange): boolean {
  return filesOverlappingRange(files, level, range).length > 0;
}
