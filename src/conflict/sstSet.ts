/**
 * The new data of a conflict check: a set of external SST files, disjoint in keys (as `ingest
 * import` writes them), read as one sorted stream of unique user keys, with a seek that can skip whole files.
 *
 * Contract:
 * - Every file holds only point puts (no deletions, merge operands or range tombstones), each
 *   user key at most once, which is what SstFileWriter produces from sorted rows; anything else
 *   is IngestError NOT_SUPPORTED naming the file. Files with no entries are ignored.
 * - Files may be given in any order; they are sorted by smallest key and must not overlap
 *   (IngestError INVALID_ARGUMENT naming both files): the set is then one sorted sequence.
 * - Every file stays open (one descriptor each) until close(); the set is meant for the file
 *   sets one import produces (tens to hundreds of files), not for thousands at once.
 *
 * The iterator yields user keys: `key()` as a view, or `internalKey()` (the key with its
 * trailer, which the table iterator keeps per position) to compare without making one.
 * `seekGE(userKey, trySeekUsingNext)` finds the first key >= userKey; with the flag (the caller
 * promises userKey >= the current key), it stays if the current key answers, takes one step if
 * the next one does, else searches forward within the current file (see TableIterator) or over
 * at most TRY_SEEK_USING_NEXT_STEPS files before a binary search over the rest. Either way a
 * file holding nothing >= the target is never opened at a data block: its largest key, known up
 * front, rules it out.
 */
import { IngestError } from '../util/errors';
import { MAX_SEQUENCE_NUMBER, TRAILER_BYTES, ValueType, writeTrailer } from '../base/internalKey';
import { compareByteRanges, compareUserKeys } from '../base/keyCompare';
import { TRY_SEEK_USING_NEXT_STEPS } from '../base/iterator';
import { perf } from '../base/perfContext';
import { BlockCache } from '../sstable/reader/blockCache';
import { TableReader } from '../sstable/reader/tableReader';
import { TableIterator } from '../sstable/reader/tableIterator';

/** Keys up to this length are copied byte by byte (see seekKey). */
const SHORT_KEY_BYTES = 32;

export interface SstSetFile {
  readonly path: string;
  readonly reader: TableReader;
  /** Smallest and largest user keys (copies). */
  readonly smallest: Buffer;
  readonly largest: Buffer;
  readonly entries: number;
  readonly fileSizeBytes: number;
  /** Bytes of data blocks (rocksdb.data.size): they come first in the file. */
  readonly dataBytes: number;
  /** Entries in the files before this one in the run (its first entry's ordinal). */
  firstOrdinal: number;
}

export interface SstSetOptions {
  /** Verify block checksums as blocks are read (default true). */
  verifyChecksums?: boolean;
  /** Shared block cache for the run's data blocks; default none (each block read once per visit). */
  blockCache?: BlockCache;
}

export class SstSet {
  /** Non-empty files, sorted by key. */
  readonly files: readonly SstSetFile[];
  readonly totalEntries: number;
  readonly totalFileBytes: number;
  private closed = false;

  private constructor(files: SstSetFile[]) {
    this.files = files;
    this.totalEntries = files.reduce((n, f) => n + f.entries, 0);
    this.totalFileBytes = files.reduce((n, f) => n + f.fileSizeBytes, 0);
  }

  /** Opens and validates every file; on any error, closes what it opened. */
  static open(paths: readonly string[], opts: SstSetOptions = {}): SstSet {
    const files: SstSetFile[] = [];
    try {
      for (const path of paths) {
        const reader = TableReader.open(path, { verifyChecksums: opts.verifyChecksums ?? true, blockCache: opts.blockCache });
        const p = reader.properties;
        if (p.numDeletions !== 0 || p.numMergeOperands !== 0 || p.numRangeDeletions !== 0) {
          reader.close();
          throw new IngestError(
            'NOT_SUPPORTED',
            `${path}: the conflict check reads put-only SSTs (as ingest import writes them), but this file holds ` +
              `${p.numDeletions} deletion(s), ${p.numMergeOperands} merge operand(s), ${p.numRangeDeletions} range deletion(s)`,
          );
        }
        const smallest = reader.smallestKey();
        const largest = reader.largestKey();
        if (smallest === null || largest === null) {
          reader.close();
          continue;
        }
        files.push({
          path,
          reader,
          smallest: smallest.subarray(0, smallest.length - TRAILER_BYTES),
          largest: largest.subarray(0, largest.length - TRAILER_BYTES),
          entries: p.numEntries,
          fileSizeBytes: reader.fileSizeBytes,
          dataBytes: p.dataSize,
          firstOrdinal: 0,
        });
      }
      files.sort((a, b) => compareUserKeys(a.smallest, b.smallest));
      let ordinal = 0;
      for (const f of files) {
        f.firstOrdinal = ordinal;
        ordinal += f.entries;
      }
      for (let i = 1; i < files.length; i++) {
        if (compareUserKeys(files[i - 1].largest, files[i].smallest) >= 0) {
          throw new IngestError(
            'INVALID_ARGUMENT',
            `SST files overlap: ${files[i - 1].path} ends at or after the start of ${files[i].path}; the check needs non-overlapping files`,
          );
        }
      }
      return new SstSet(files);
    } catch (e) {
      for (const f of files) f.reader.close();
      throw e;
    }
  }

  get isEmpty(): boolean {
    return this.files.length === 0;
  }

  /** Smallest user key of the run; the run must not be empty. */
  get smallest(): Buffer {
    return this.files[0].smallest;
  }

  /** Largest user key of the run; the run must not be empty. */
  get largest(): Buffer {
    return this.files[this.files.length - 1].largest;
  }

  /** Index of the file whose key range holds `userKey`, or -1. */
  fileHolding(userKey: Buffer): number {
    let lo = 0;
    let hi = this.files.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareUserKeys(this.files[mid].largest, userKey) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.files.length && compareUserKeys(this.files[lo].smallest, userKey) <= 0 ? lo : -1;
  }

  newIterator(): SstSetIterator {
    if (this.closed) throw new IngestError('INVALID_ARGUMENT', 'SstSet used after close()');
    return new SstSetIterator(this.files);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const f of this.files) f.reader.close();
  }
}

export class SstSetIterator {
  private readonly files: readonly SstSetFile[];
  /** Index of the open file, or files.length once exhausted (or -1 before positioning). */
  private fileIndex = -1;
  private table: TableIterator | null = null;
  private isValid = false;
  private seekKeyBuf = Buffer.allocUnsafe(64);
  /** A view of seekKeyBuf reused while seek keys keep one length (fixed-size keys allocate nothing). */
  private seekKeyView = this.seekKeyBuf.subarray(0, 0);
  private readonly trySeekOpts = { trySeekUsingNext: true };
  /** key()'s last answer and the internal-key view it was cut from. */
  private userKeyOf: Buffer | null = null;
  private userKeyView: Buffer = Buffer.alloc(0);

  constructor(files: readonly SstSetFile[]) {
    this.files = files;
  }

  valid(): boolean {
    return this.isValid;
  }

  /** The current internal key (user key ‖ 8-byte trailer), a view valid until the iterator moves. */
  internalKey(): Buffer {
    return (this.table as TableIterator).key();
  }

  /** The current user key as a view (valid until the iterator moves). */
  key(): Buffer {
    const ikey = (this.table as TableIterator).key();
    // The table iterator hands out one view while key lengths stay: so can we.
    if (ikey !== this.userKeyOf) {
      this.userKeyOf = ikey;
      this.userKeyView = ikey.subarray(0, ikey.length - TRAILER_BYTES);
    }
    return this.userKeyView;
  }

  value(): Buffer {
    return (this.table as TableIterator).value();
  }

  /**
   * About how many keys of the run lie before the current one (the run's entry count once
   * exhausted): exact at file starts, proportional to the byte position within a file (see
   * TableIterator.approximateFileOffset). For cost estimates only; reads nothing.
   */
  approximateOrdinal(): number {
    if (this.fileIndex < 0) return 0;
    if (!this.isValid)
      return this.files.length === 0 ? 0 : this.files[this.files.length - 1].firstOrdinal + this.files[this.files.length - 1].entries;
    const f = this.files[this.fileIndex];
    const offset = (this.table as TableIterator).approximateFileOffset();
    return f.firstOrdinal + (f.dataBytes > 0 ? Math.min(f.entries, (f.entries * offset) / f.dataBytes) : 0);
  }

  /** Index (into SstSet.files) of the file the current key comes from. */
  get currentFile(): number {
    return this.fileIndex;
  }

  first(): void {
    this.enterFile(0);
    if (this.table !== null) this.table.first();
    this.settle();
  }

  next(): void {
    (this.table as TableIterator).next();
    this.settle();
  }

  /**
   * Positions at the first key >= userKey. With trySeekUsingNext the caller promises that
   * userKey >= the current key (or the iterator is exhausted, which it then stays).
   */
  seekGE(userKey: Buffer, trySeekUsingNext = false): void {
    const files = this.files;
    if (trySeekUsingNext && this.fileIndex >= 0) {
      if (!this.isValid) return;
      // Stay, or take one step: where the run and the engine interleave, the key wanted is
      // usually the current or the next one, and a step costs less than a seek's layers.
      if (this.currentKeyAtLeast(userKey)) return;
      this.next();
      if (!this.isValid || this.currentKeyAtLeast(userKey)) return;
      perf.keyComparisons++;
      if (compareUserKeys(userKey, files[this.fileIndex].largest) <= 0) {
        (this.table as TableIterator).seekGE(this.seekKey(userKey), this.trySeekOpts);
        this.settle();
        return;
      }
      // Past this file: step over a few files, then search the rest.
      let i = this.fileIndex + 1;
      const stepLimit = Math.min(files.length, i + TRY_SEEK_USING_NEXT_STEPS);
      while (i < stepLimit && this.largestBelow(i, userKey)) i++;
      if (i === stepLimit) i = this.findFile(userKey, i);
      this.seekInFile(i, userKey);
      return;
    }
    this.seekInFile(this.findFile(userKey, 0), userKey);
  }

  close(): void {
    this.closeTable();
    this.isValid = false;
  }

  // --- internals -------------------------------------------------------------------------------

  private currentKeyAtLeast(userKey: Buffer): boolean {
    const ikey = (this.table as TableIterator).key();
    perf.keyComparisons++;
    return compareByteRanges(ikey, 0, ikey.length - TRAILER_BYTES, userKey, 0, userKey.length) >= 0;
  }

  private largestBelow(i: number, userKey: Buffer): boolean {
    perf.keyComparisons++;
    return compareUserKeys(this.files[i].largest, userKey) < 0;
  }

  /** First file in files[from..] whose largest key is >= userKey, or files.length. */
  private findFile(userKey: Buffer, from: number): number {
    let lo = from;
    let hi = this.files.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.largestBelow(mid, userKey)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private seekInFile(i: number, userKey: Buffer): void {
    this.enterFile(i);
    if (this.table !== null) this.table.seekGE(this.seekKey(userKey));
    this.settle();
  }

  /** After a move: steps into later files while the current one is exhausted. */
  private settle(): void {
    while (this.table !== null && !this.table.valid()) {
      this.enterFile(this.fileIndex + 1);
      if (this.table !== null) this.table.first();
    }
    this.isValid = this.table !== null;
  }

  private enterFile(i: number): void {
    if (i === this.fileIndex && this.table !== null) return;
    this.closeTable();
    this.fileIndex = i;
    if (i < this.files.length) this.table = this.files[i].reader.newIterator();
  }

  private closeTable(): void {
    if (this.table !== null) {
      this.table.close();
      this.table = null;
    }
  }

  /** (userKey, max seq, Seek) in a reused buffer: sorts before every entry of userKey. */
  private seekKey(userKey: Buffer): Buffer {
    const n = userKey.length + TRAILER_BYTES;
    if (this.seekKeyBuf.length < n) {
      this.seekKeyBuf = Buffer.allocUnsafe(2 * n);
      this.seekKeyView = this.seekKeyBuf.subarray(0, 0);
    }
    if (this.seekKeyView.length !== n) this.seekKeyView = this.seekKeyBuf.subarray(0, n);
    const buf = this.seekKeyBuf;
    const userKeyLength = userKey.length;
    // A byte loop beats Buffer#copy's native call for short keys.
    if (userKeyLength <= SHORT_KEY_BYTES) {
      for (let i = 0; i < userKeyLength; i++) buf[i] = userKey[i];
    } else {
      userKey.copy(buf, 0);
    }
    writeTrailer(buf, userKeyLength, MAX_SEQUENCE_NUMBER, ValueType.Seek);
    return this.seekKeyView;
  }
}
