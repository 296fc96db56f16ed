/**
 * Compaction outputs: writes the entries a flush or compaction keeps into one or more table files
 * of one level, cut at targetFileSizeBytes, each carrying the range-tombstone pieces of the key
 * range it owns.
 *
 * Cutting: once the open file's size estimate reaches targetFileSizeBytes, the file is finished
 * at the next change of user key, never inside one (all versions of a user key stay in one file,
 * so a level's files never share a user key through their point entries).
 *
 * Tombstones (rangedel/tombstoneBoundaries.ts has the rule and a picture): file i owns the user
 * keys [S_i, S_{i+1}), where S_i is the user key of its first point entry, S_0 = -inf and the
 * last file's end is +inf. It carries the output tombstones clipped to that range, so a tombstone
 * spanning the gap between two files is split between them: the first file extends left to the
 * first tombstone's start, each file extends right to the next file's first key or the
 * tombstone's end, whichever comes first. A file whose largest key comes from a tombstone ends at
 * the exclusive sentinel (end, MAX_SEQUENCE_NUMBER, RangeDeletion), which sorts before every entry
 * of user key `end`, so no two files of the level claim the same key (asserted between
 * neighbours). Only when no point entry survives at all is there a file of tombstones alone.
 * The bounds the table builder reports are checked against outputFileBounds (same rule).
 *
 * Contract: `add` takes internal keys in strictly increasing order (the table builder asserts it).
 * `finish()` closes the last file and returns every file's metadata in key order; `abort()`
 * deletes every file written so far, finished or not (the caller installs nothing). Files are
 * fsynced by their writers; syncing the directory is the caller's job, before it logs them.
 */
import { tableFileName } from '../fileNames';
import { FileMetaData } from '../versionEdit';
import { FragmentedTombstoneList } from '../../base/fragmenter';
import { clipFragments } from '../rangedel/tombstoneIndex';
import { filesClaimSameKey, outputFileBounds } from '../rangedel/tombstoneBoundaries';
import { compareByteRanges, compareInternal } from '../../base/keyCompare';
import { TableFileWriter } from '../../sstwriter/tableFileWriter';
import { TableBuilderOptions } from '../../sstwriter/tableBuilder';
import { TRAILER_BYTES } from '../../base/internalKey';
import { removeIfExists } from '../durableFs';
import { assert } from '../../util/errors';

export interface CompactionOutputOptions {
  dir: string;
  table: Partial<TableBuilderOptions>;
  /** A file is cut at the first user-key change after reaching this size (Infinity: one file). */
  targetFileSizeBytes: number;
  /** Hands out the number of each new file. */
  newFileNumber: () => number;
  /** The tombstones to distribute over the outputs (already filtered by the compaction iterator). */
  tombstones: FragmentedTombstoneList;
}

export class CompactionOutputs {
  private readonly opts: CompactionOutputOptions;
  private readonly files: FileMetaData[] = [];
  /** Every file created (finished or not), for abort(). */
  private readonly created: string[] = [];
  private writer: TableFileWriter | null = null;
  private writerFileNumber = 0;
  /** S_i of the open (or next) file: null for the first file (unbounded below). */
  private lowerSplit: Buffer | null = null;
  private firstPointKey: Buffer | null = null;
  /** Set once the open file is full: the user key it must move past before being cut. */
  private cutAfterUserKey: Buffer | null = null;
  /** The last point key added to the open file (reused buffer; its length in lastKeyLength). */
  private lastKey: Buffer = Buffer.allocUnsafe(64);
  private lastKeyLength = 0;
  private bytesWritten = 0;
  private done = false;

  constructor(opts: CompactionOutputOptions) {
    assert(opts.targetFileSizeBytes > 0, `targetFileSizeBytes must be positive, got ${opts.targetFileSizeBytes}`);
    this.opts = opts;
  }

  /** Bytes of the finished files. */
  get fileBytesWritten(): number {
    return this.bytesWritten;
  }

  add(ikey: Buffer, value: Buffer): void {
    assert(!this.done, 'CompactionOutputs used after finish() or abort()');
    const userKeyLength = ikey.length - TRAILER_BYTES;
    if (this.writer !== null) {
      if (this.cutAfterUserKey !== null) {
        const cut = this.cutAfterUserKey;
        if (compareByteRanges(ikey, 0, userKeyLength, cut, 0, cut.length) !== 0)
          this.finishFile(Buffer.from(ikey.subarray(0, userKeyLength)));
      } else if (this.writer.fileSizeEstimate() >= this.opts.targetFileSizeBytes) {
        // Full: cut before the next user key (this key's older versions still come here).
        this.cutAfterUserKey = Buffer.from(ikey.subarray(0, userKeyLength));
      }
    }
    if (this.writer === null) this.openFile(ikey);
    (this.writer as TableFileWriter).add(ikey, value);
    if (this.lastKey.length < ikey.length) this.lastKey = Buffer.allocUnsafe(Math.max(ikey.length, 2 * this.lastKey.length));
    ikey.copy(this.lastKey, 0);
    this.lastKeyLength = ikey.length;
  }

  /** Finishes the last file (or writes a tombstones-only file if nothing else was written). */
  finish(): FileMetaData[] {
    assert(!this.done, 'CompactionOutputs finished twice');
    if (this.writer !== null) {
      this.finishFile(null);
    } else if (this.files.length === 0 && this.opts.tombstones.count > 0) {
      this.openFile(null);
      this.finishFile(null);
    }
    this.done = true;
    return this.files;
  }

  abort(): void {
    this.done = true;
    if (this.writer !== null) {
      this.writer.abort();
      this.writer = null;
    }
    for (const path of this.created) removeIfExists(path);
  }

  private openFile(firstKey: Buffer | null): void {
    const fileNumber = this.opts.newFileNumber();
    const path = tableFileName(this.opts.dir, fileNumber);
    this.writer = new TableFileWriter(path, { ...this.opts.table, externalFile: false, originalFileNumber: fileNumber });
    this.created.push(path);
    this.writerFileNumber = fileNumber;
    this.firstPointKey = firstKey === null ? null : Buffer.from(firstKey);
    this.cutAfterUserKey = null;
    this.lastKeyLength = 0;
  }

  /** Adds the open file's tombstone pieces, [lowerSplit, upperSplit), and finishes it. */
  private finishFile(upperSplit: Buffer | null): void {
    const writer = this.writer as TableFileWriter;
    const pieces = clipFragments(this.opts.tombstones, this.lowerSplit, upperSplit);
    for (let i = 0; i < pieces.count; i++) {
      for (let j = pieces.seqOffsets[i]; j < pieces.seqOffsets[i + 1]; j++)
        writer.addRangeTombstone(pieces.starts[i], pieces.ends[i], pieces.seqs[j]);
    }
    const lastPointKey = this.firstPointKey === null ? null : Buffer.from(this.lastKey.subarray(0, this.lastKeyLength));
    const result = writer.finish();
    this.writer = null;
    const bounds = outputFileBounds(this.firstPointKey, lastPointKey, pieces);
    assert(
      compareInternal(bounds.smallest, result.smallestKey) === 0 && compareInternal(bounds.largest, result.largestKey) === 0,
      `output ${this.writerFileNumber}: table bounds differ from the tombstone-aware bounds`,
    );
    const meta: FileMetaData = {
      fileNumber: this.writerFileNumber,
      fileSizeBytes: result.fileSizeBytes,
      smallest: bounds.smallest,
      largest: bounds.largest,
      smallestSeq: result.smallestSeq,
      largestSeq: result.largestSeq,
    };
    const prev = this.files[this.files.length - 1];
    if (prev !== undefined)
      assert(!filesClaimSameKey(prev.largest, meta.smallest), `outputs ${prev.fileNumber} and ${meta.fileNumber} claim the same key`);
    this.files.push(meta);
    this.bytesWritten += result.fileSizeBytes;
    this.lowerSplit = upperSplit;
  }
}
