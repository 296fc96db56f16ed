/**
 * The level iterator: one InternalIterator over a sorted run of files with disjoint key ranges
 * (a level >= 1, or a single L0 file), opening each file's table only when iteration reaches it.
 *
 * Bounds (user keys, lower inclusive, upper exclusive) are checked once per file, not per key:
 * - Entering a file forward, its smallest key is compared with the upper bound (a file starting
 *   at or past it ends the iteration without being opened); backward, its largest key with the
 *   lower bound.
 * - A file's table iterator is given only the bounds the file straddles: none when the file lies
 *   wholly inside them, so its keys are never compared with a bound at all; otherwise the table
 *   iterator checks once per data block (see src/sstable/reader/tableIterator.ts).
 * - Seeks clamp their target into the bounds first, so a seek never opens a file outside them.
 * Bounds may change between seeks (setBounds); every seek re-derives the per-file decisions
 * (RocksDB PR 5111).
 *
 * trySeekUsingNext (src/base/iterator.ts: the level moved only forward since its last seekGE and not past
 * the answer): if the target is within the current file, the flag goes down to its table
 * iterator, which has not moved past the answer either (it stands on the level's current entry);
 * otherwise the level steps forward over at most TRY_SEEK_USING_NEXT_STEPS files before falling
 * back to binary search, and searches the new file from scratch. Neither needs the lower-bound
 * clamp: the current entry is within the bounds, so the target is past the bound or the current
 * entry answers it. A level exhausted by a seekGE stays exhausted.
 *
 * Range tombstones: given an aggregator (rangedel/rangeDelAggregator.ts), the level adds each
 * file's tombstones, clipped to the file's bounds, the first time it opens the file, and never
 * takes them back. That is enough for the reader above: whenever the merged stream stands on a
 * key k, every file whose range holds k was opened since the last repositioning (a seek lands in
 * or before the first file whose range reaches the target, stepping moves through files in order,
 * and trySeekUsingNext skips only files wholly below the target). Files outside the iteration
 * bounds are never opened and cannot cover a key inside them. A file without tombstones costs
 * one integer test when opened.
 *
 * largestSeqBefore (src/base/iterator.ts) answers from the files' metadata, so the merging iterator can
 * seek this level past a span a newer range tombstone covers (see MergingIterator).
 */
import { SeekOptions, TRY_SEEK_USING_NEXT_STEPS } from '../base/iterator';
import { BoundedInternalIterator, boundSeekKey, compareToBound } from './boundedIterator';
import { compareInternal } from '../base/keyCompare';
import { perf } from '../base/perfContext';
import { TableCache, TableHandle } from './tableCache';
import { TableIterator } from '../sstable/reader/tableIterator';
import { FileMetaData } from './versionEdit';
import { findFile, findLastFileBefore } from './version';
import { assert } from '../util/errors';
import { RangeDelAggregator } from './rangedel/rangeDelAggregator';

export interface LevelIteratorOptions {
  /** Receives each opened file's range tombstones (see the module comment). */
  rangeDel?: RangeDelAggregator;
  /** Insert the blocks read into the block cache (default true; compactions say false). */
  fillCache?: boolean;
}

export class LevelIterator implements BoundedInternalIterator {
  private readonly files: readonly FileMetaData[];
  private readonly tableCache: TableCache;
  private lowerBound: Buffer | null = null;
  private upperBound: Buffer | null = null;
  private lowerSeekKey: Buffer | null = null;
  private upperSeekKey: Buffer | null = null;

  /** Index of the open file, or -1. */
  private fileIndex = -1;
  private table: TableIterator | null = null;
  private handle: TableHandle | null = null;
  private isValid = false;
  private exhaustedBySeekGE = false;
  private closed = false;
  private readonly rangeDel: RangeDelAggregator | null;
  /** Files whose tombstones went to rangeDel; created at the first such file. */
  private filesWithTombstonesAdded: Set<number> | null = null;
  private readonly fillCache: boolean;

  constructor(
    files: readonly FileMetaData[],
    tableCache: TableCache,
    lowerBound?: Buffer,
    upperBound?: Buffer,
    opts: LevelIteratorOptions = {},
  ) {
    this.files = files;
    this.tableCache = tableCache;
    this.rangeDel = opts.rangeDel ?? null;
    this.fillCache = opts.fillCache ?? true;
    this.setBounds(lowerBound, upperBound);
  }

  setBounds(lowerBound: Buffer | undefined, upperBound: Buffer | undefined): void {
    this.lowerBound = lowerBound ?? null;
    this.upperBound = upperBound ?? null;
    this.lowerSeekKey = lowerBound === undefined ? null : boundSeekKey(lowerBound);
    this.upperSeekKey = upperBound === undefined ? null : boundSeekKey(upperBound);
    // The open table's bounds were derived from the old bounds.
    this.closeTable();
    this.isValid = false;
    this.exhaustedBySeekGE = false;
  }

  valid(): boolean {
    return this.isValid;
  }

  key(): Buffer {
    return (this.table as TableIterator).key();
  }

  value(): Buffer {
    return (this.table as TableIterator).value();
  }

  first(): void {
    this.exhaustedBySeekGE = false;
    if (this.lowerSeekKey !== null) {
      this.seekGEFrom(0, this.lowerSeekKey);
      return;
    }
    if (this.enterFileForward(0)) (this.table as TableIterator).first();
    this.settleForward();
  }

  last(): void {
    this.exhaustedBySeekGE = false;
    if (this.upperSeekKey !== null) {
      this.seekLTInternal(this.upperSeekKey);
      return;
    }
    if (this.enterFileBackward(this.files.length - 1)) (this.table as TableIterator).last();
    this.settleBackward();
  }

  /**
   * The largest sequence number of the files from the current one up to the first file starting
   * at or after `endUserKey` (a file's largestSeq covers its range tombstones too): nothing this
   * level yields before `endUserKey` can be newer.
   */
  largestSeqBefore(endUserKey: Buffer): number {
    assert(this.fileIndex >= 0, 'LevelIterator.largestSeqBefore() on an unpositioned level');
    let largest = 0;
    for (let i = this.fileIndex; i < this.files.length; i++) {
      const file = this.files[i];
      if (i > this.fileIndex && compareToBound(file.smallest, endUserKey) >= 0) break;
      if (file.largestSeq > largest) largest = file.largestSeq;
    }
    return largest;
  }

  /** largestSeqBefore's mirror: the files from the current one down to the last ending before `startUserKey`. */
  largestSeqFrom(startUserKey: Buffer): number {
    assert(this.fileIndex >= 0, 'LevelIterator.largestSeqFrom() on an unpositioned level');
    let largest = 0;
    for (let i = this.fileIndex; i >= 0; i--) {
      const file = this.files[i];
      if (i < this.fileIndex && compareToBound(file.largest, startUserKey) < 0) break;
      if (file.largestSeq > largest) largest = file.largestSeq;
    }
    return largest;
  }

  seekGE(target: Buffer, opts?: SeekOptions): void {
    this.checkOpen();
    let t = target;
    if (opts !== undefined && opts.trySeekUsingNext === true) {
      if (this.exhaustedBySeekGE) return;
      // A table is open only while the level stands on an entry, which is within the bounds: a
      // target below the lower bound is below that entry too, so it needs no clamp (the table
      // iterator keeps its place).
      if (this.table !== null) {
        perf.keyComparisons++;
        if (compareInternal(t, this.files[this.fileIndex].largest) <= 0) {
          this.table.seekGE(t, opts);
          this.settleForward();
          this.exhaustedBySeekGE = !this.isValid;
          return;
        }
        // Past this file: try the next few files before a binary search over the rest.
        const from = this.fileIndex + 1;
        const stepLimit = Math.min(this.files.length, from + TRY_SEEK_USING_NEXT_STEPS);
        let i = from;
        while (i < stepLimit) {
          perf.keyComparisons++;
          if (compareInternal(t, this.files[i].largest) <= 0) break;
          i++;
        }
        if (i === stepLimit && i < this.files.length) i = findFile(this.files, t, stepLimit);
        this.seekGEInFile(i, t);
        return;
      }
    }
    if (this.lowerBound !== null && compareToBound(t, this.lowerBound) < 0) t = this.lowerSeekKey as Buffer;
    this.seekGEFrom(0, t);
  }

  seekLT(target: Buffer): void {
    this.checkOpen();
    this.exhaustedBySeekGE = false;
    let t = target;
    if (this.upperBound !== null && compareToBound(t, this.upperBound) >= 0) t = this.upperSeekKey as Buffer;
    this.seekLTInternal(t);
  }

  next(): void {
    assert(this.isValid, 'LevelIterator.next() on an invalid iterator');
    this.exhaustedBySeekGE = false;
    (this.table as TableIterator).next();
    this.settleForward();
  }

  prev(): void {
    assert(this.isValid, 'LevelIterator.prev() on an invalid iterator');
    this.exhaustedBySeekGE = false;
    (this.table as TableIterator).prev();
    this.settleBackward();
  }

  close(): void {
    if (this.closed) return;
    this.closeTable();
    this.isValid = false;
    this.closed = true;
  }

  /** The number of the file the iterator stands in, or -1 (for tests and diagnostics). */
  get currentFileNumber(): number {
    return this.fileIndex < 0 ? -1 : this.files[this.fileIndex].fileNumber;
  }

  // --- internals -------------------------------------------------------------------------------

  private checkOpen(): void {
    assert(!this.closed, 'LevelIterator used after close()');
  }

  /** Full seek: binary search for the first file whose largest key is >= t. */
  private seekGEFrom(from: number, t: Buffer): void {
    this.seekGEInFile(findFile(this.files, t, from), t);
  }

  private seekGEInFile(i: number, t: Buffer): void {
    if (this.enterFileForward(i)) (this.table as TableIterator).seekGE(t);
    this.settleForward();
    this.exhaustedBySeekGE = !this.isValid;
  }

  private seekLTInternal(t: Buffer): void {
    // The last file starting below t holds the answer, or the answer is in an earlier file.
    const i = findLastFileBefore(this.files, t);
    if (this.enterFileBackward(i)) (this.table as TableIterator).seekLT(t);
    this.settleBackward();
  }

  /** Moves to later files until the table stands on a key or the level (or bound) ends. */
  private settleForward(): void {
    while (this.table !== null && !this.table.valid()) {
      if (!this.enterFileForward(this.fileIndex + 1)) break;
      this.table.first();
    }
    this.isValid = this.table !== null && this.table.valid();
  }

  private settleBackward(): void {
    while (this.table !== null && !this.table.valid()) {
      if (!this.enterFileBackward(this.fileIndex - 1)) break;
      this.table.last();
    }
    this.isValid = this.table !== null && this.table.valid();
  }

  /**
   * Opens file i for forward iteration unless it does not exist or starts at or past the upper
   * bound; on false the level is exhausted (no table open).
   */
  private enterFileForward(i: number): boolean {
    if (i >= this.files.length || (this.upperBound !== null && compareToBound(this.files[i].smallest, this.upperBound) >= 0)) {
      this.closeTable();
      return false;
    }
    this.openFile(i);
    return true;
  }

  private enterFileBackward(i: number): boolean {
    if (i < 0 || (this.lowerBound !== null && compareToBound(this.files[i].largest, this.lowerBound) < 0)) {
      this.closeTable();
      return false;
    }
    this.openFile(i);
    return true;
  }

  /** Opens file i's table with only the bounds the file straddles. */
  private openFile(i: number): void {
    if (this.fileIndex === i && this.table !== null) return;
    this.closeTable();
    const file = this.files[i];
    const lower = this.lowerBound !== null && compareToBound(file.smallest, this.lowerBound) < 0 ? this.lowerBound : undefined;
    const upper = this.upperBound !== null && compareToBound(file.largest, this.upperBound) >= 0 ? this.upperBound : undefined;
    this.handle = this.tableCache.acquire(file);
    this.table = this.handle.reader.newIterator({ lowerBound: lower, upperBound: upper, fillCache: this.fillCache });
    this.fileIndex = i;
    if (this.rangeDel !== null) {
      const tombstones = this.handle.fileTombstones(file);
      if (tombstones.count > 0) {
        if (this.filesWithTombstonesAdded === null) this.filesWithTombstonesAdded = new Set();
        if (!this.filesWithTombstonesAdded.has(file.fileNumber)) {
          this.filesWithTombstonesAdded.add(file.fileNumber);
          this.rangeDel.addSource(tombstones);
        }
      }
    }
  }

  private closeTable(): void {
    if (this.table !== null) {
      this.table.close();
      this.table = null;
    }
    if (this.handle !== null) {
      this.handle.release();
      this.handle = null;
    }
    this.fileIndex = -1;
  }
}
