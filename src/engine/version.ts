/**
 * Versions: immutable snapshots of which table files make up each level.
 *
 * Layout: level 0 holds files written by flushes (and, later, ingestions); they may overlap, so
 * it is kept newest first (by largest sequence number, then file number) and a read must visit
 * every L0 file whose key range covers the key, in that order. Levels 1 and up hold files with
 * disjoint key ranges, sorted by smallest key, so a read visits at most one file per level,
 * found by binary search on the files' largest keys.
 *
 * Contract:
 * - A Version never changes. Applying an edit builds a new one.
 * - Versions are reference-counted: the version set holds its current version, and every
 *   iterator holds the version it reads. When the count drops to zero the version reports
 *   itself to its owner, which then knows which files no version needs any more.
 * - Construction asserts the level invariants (sorted, non-overlapping above L0).
 */
import { assert } from '../util/errors';
import { TRAILER_BYTES } from '../base/internalKey';
import { compareByteRanges, compareInternal } from '../base/keyCompare';
import { perf } from '../base/perfContext';
import { FileMetaData, NUM_LEVELS } from './versionEdit';

/** Newest first: larger largest-sequence first, then the later file. */
export function compareL0NewestFirst(a: FileMetaData, b: FileMetaData): number {
  if (a.largestSeq !== b.largestSeq) return b.largestSeq - a.largestSeq;
  return b.fileNumber - a.fileNumber;
}

export function compareBySmallest(a: FileMetaData, b: FileMetaData): number {
  return compareInternal(a.smallest, b.smallest);
}

/** Compares user key `userKey` with the user key of internal key `ikey`; counts a comparison. */
export function compareUserKeyToFileBound(userKey: Buffer, ikey: Buffer): number {
  perf.keyComparisons++;
  return compareByteRanges(userKey, 0, userKey.length, ikey, 0, ikey.length - TRAILER_BYTES);
}

/** True when `userKey` lies within the file's user-key range [smallest, largest]. */
export function fileMayContain(file: FileMetaData, userKey: Buffer): boolean {
  return compareUserKeyToFileBound(userKey, file.smallest) >= 0 && compareUserKeyToFileBound(userKey, file.largest) <= 0;
}

/**
 * Index of the first file in files[from..] (sorted, disjoint) whose largest internal key is
 * >= `ikey`, or files.length. Binary search: O(log n) comparisons.
 */
export function findFile(files: readonly FileMetaData[], ikey: Buffer, from = 0): number {
  let lo = from;
  let hi = files.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    perf.keyComparisons++;
    if (compareInternal(files[mid].largest, ikey) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the last file whose smallest internal key is < `ikey`, or -1. */
export function findLastFileBefore(files: readonly FileMetaData[], ikey: Buffer): number {
  let lo = 0;
  let hi = files.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    perf.keyComparisons++;
    if (compareInternal(files[mid].smallest, ikey) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}

export class Version {
  /** files[level]: L0 newest first; deeper levels by smallest key, disjoint. */
  readonly files: ReadonlyArray<ReadonlyArray<FileMetaData>>;
  private refs = 0;
  private readonly onUnreferenced: (v: Version) => void;

  constructor(files: FileMetaData[][], onUnreferenced: (v: Version) => void) {
    assert(files.length === NUM_LEVELS, `a version has ${NUM_LEVELS} levels, got ${files.length}`);
    files[0].sort(compareL0NewestFirst);
    for (let level = 1; level < NUM_LEVELS; level++) {
      const fs = files[level];
      fs.sort(compareBySmallest);
      for (let i = 1; i < fs.length; i++) {
        assert(
          compareInternal(fs[i - 1].largest, fs[i].smallest) < 0,
          `level ${level}: file ${fs[i - 1].fileNumber} overlaps file ${fs[i].fileNumber}`,
        );
      }
    }
    this.files = files;
    this.onUnreferenced = onUnreferenced;
  }

  ref(): void {
    this.refs++;
  }

  unref(): void {
    assert(this.refs > 0, 'version unreferenced more often than referenced');
    if (--this.refs === 0) this.onUnreferenced(this);
  }

  get refCount(): number {
    return this.refs;
  }

  numFiles(level: number): number {
    return this.files[level].length;
  }

  totalFiles(): number {
    let n = 0;
    for (const fs of this.files) n += fs.length;
    return n;
  }

  /** Every file number in this version. */
  fileNumbers(): number[] {
    const out: number[] = [];
    for (const fs of this.files) for (const f of fs) out.push(f.fileNumber);
    return out;
  }
}
