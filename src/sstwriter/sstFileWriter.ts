/**
 * SstFileWriter: the public API for writing an external SST file that RocksDB 7.8 (or our engine)
 * can ingest, with the semantics of RocksDB's SstFileWriter.
 *
 * Contract:
 * - Point keys (put / delete / merge) must come in strictly ascending user-key order (bytewise);
 *   a key that is not greater than the previous one throws IngestError('KEY_ORDER') naming both
 *   keys and leaves the writer usable (the key is not added).
 * - Every point entry gets sequence number 0; on ingestion the database assigns the file a
 *   global sequence number (stored in the rocksdb.external_sst_file.global_seqno property).
 * - deleteRange(start, end) removes [start, end); it may be called at any point, independent of
 *   the point-key order, and requires start < end (else INVALID_ARGUMENT). Tombstones are stored
 *   in call order. As in RocksDB, they do not hide point keys of the same file (same seqno).
 * - The file is written to `${path}.<random>.tmp`; `finish()` fsyncs it, renames it to `path`
 *   (replacing any existing file) and fsyncs the directory, so `path` is either absent or
 *   complete. A file with no entries and no tombstones is refused (INVALID_ARGUMENT) and nothing
 *   is left behind. `abort()` removes the temporary file; call it after any error.
 * - Data blocks are compressed on a worker thread (`backgroundCompression`, on unless set to
 *   false; see tableBuilder.ts). The API stays synchronous and the bytes are the same either way.
 */
import * as fs from 'fs';
import * as nodePath from 'path';
import { randomBytes } from 'crypto';
import { IngestError } from '../util/errors';
import { ValueType, formatKey, TRAILER_BYTES } from '../base/internalKey';
import { TableProperties } from '../sstable/properties';
import { EncodedDataBlock, TableBuilderOptions } from './tableBuilder';
import { TableFileWriter } from './tableFileWriter';
import { copyBytes } from '../util/byteRanges';

/** SstFileWriter options: table options; the external-file properties are always written. */
export type SstFileWriterOptions = Omit<TableBuilderOptions, 'externalFile'>;

export interface SstFileMetadata {
  path: string;
  fileSizeBytes: number;
  /**
   * Internal keys bounding the file, including range tombstones: smallest = min(first point key,
   * each tombstone start as (start, seq, RangeDeletion)); largest = max(last point key, each
   * tombstone end as (end, MAX_SEQUENCE_NUMBER, RangeDeletion)).
   */
  smallestKey: Buffer;
  largestKey: Buffer;
  smallestSeq: number;
  largestSeq: number;
  /** Point entries plus range tombstones. */
  numEntries: number;
  numPointEntries: number;
  /** As rocksdb.deleted.keys: point deletions plus range tombstones. */
  numDeletions: number;
  numRangeDeletions: number;
  numDataBlocks: number;
  properties: TableProperties;
}

/** The table options an SstFileWriter writes with, given its own options (defaults still to resolve). */
export function sstFileTableOptions(options: Partial<SstFileWriterOptions>): Partial<TableBuilderOptions> {
  // Background compression is on unless asked otherwise: it only moves work to another core.
  return { ...options, backgroundCompression: options.backgroundCompression ?? true, externalFile: true };
}

/** Sequence number SstFileWriter gives every key. */
const EXTERNAL_FILE_SEQUENCE = 0;
const EMPTY_VALUE = new Uint8Array(0);

export class SstFileWriter {
  readonly path: string;
  readonly tempPath: string;
  private readonly table: TableFileWriter;
  /** Scratch buffer holding the internal key being added (reused, grown on demand). */
  private keyScratch = Buffer.allocUnsafe(256);
  /** A view of keyScratch reused while key lengths repeat, so fixed-size keys allocate nothing. */
  private keyView = this.keyScratch.subarray(0, 0);
  /** Length of the previous point user key, which keyScratch still holds; -1 before the first. */
  private previousKeyLength = -1;
  private done = false;
  /** The error that broke this writer, if any; only abort() is allowed after one. */
  private failure: unknown = null;

  constructor(path: string, options: Partial<SstFileWriterOptions> = {}) {
    this.path = path;
    this.tempPath = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    this.table = new TableFileWriter(this.tempPath, sstFileTableOptions(options));
  }

  put(userKey: Uint8Array, value: Uint8Array): void {
    this.addPoint(userKey, ValueType.Value, value);
  }

  delete(userKey: Uint8Array): void {
    this.addPoint(userKey, ValueType.Deletion, EMPTY_VALUE);
  }

  merge(userKey: Uint8Array, value: Uint8Array): void {
    this.addPoint(userKey, ValueType.Merge, value);
  }

  /**
   * The file's size if it were finished now, without its meta blocks. Blocks still at the
   * compression worker count at their raw size, so the estimate errs high by at most the
   * pipeline's in-flight bound; callers cutting files at a target size use it.
   */
  fileSizeEstimate(): number {
    return this.table.fileSizeEstimate();
  }

  /**
   * Writes a data block of Puts the caller encoded itself (see EncodedDataBlock in
   * tableBuilder.ts): the import's native merge. A writer takes either these or put / delete /
   * merge, not both; blocks must come in key order (KEY_ORDER otherwise, which breaks the writer).
   */
  putEncodedBlock(block: EncodedDataBlock): void {
    if (this.done || this.failure !== null) this.checkOpen();
    if (this.previousKeyLength >= 0)
      throw new IngestError('INVALID_ARGUMENT', `SstFileWriter for ${this.path}: putEncodedBlock() after put()`);
    try {
      this.table.addEncodedDataBlock(block);
    } catch (e) {
      this.failure = e;
      throw e;
    }
  }

  deleteRange(startUserKey: Uint8Array, endUserKey: Uint8Array): void {
    this.checkOpen();
    if (Buffer.compare(startUserKey, endUserKey) >= 0) {
      throw new IngestError(
        'INVALID_ARGUMENT',
        `deleteRange start ${formatKey(startUserKey)} must be below its end ${formatKey(endUserKey)}`,
      );
    }
    this.table.addRangeTombstone(startUserKey, endUserKey, EXTERNAL_FILE_SEQUENCE);
  }

  /** Writes the rest of the file, makes it durable under `path`, and returns its metadata. */
  finish(): SstFileMetadata {
    this.checkOpen();
    this.done = true;
    if (this.table.numEntries() === 0) {
      this.table.abort();
      throw new IngestError(
        'INVALID_ARGUMENT',
        `cannot create SST file ${this.path} with no entries (no keys and no range tombstones were added)`,
      );
    }
    let meta;
    try {
      meta = this.table.finish();
    } catch (e) {
      this.table.abort();
      throw e;
    }
    try {
      fs.renameSync(this.tempPath, this.path);
    } catch (e) {
      fs.rmSync(this.tempPath, { force: true });
      throw new IngestError('IO', `cannot move ${this.tempPath} to ${this.path}: ${(e as Error).message}`, { cause: e });
    }
    syncDirectory(nodePath.dirname(this.path));
    return {
      path: this.path,
      fileSizeBytes: meta.fileSizeBytes,
      smallestKey: meta.smallestKey,
      largestKey: meta.largestKey,
      smallestSeq: meta.smallestSeq,
      largestSeq: meta.largestSeq,
      numEntries: meta.numEntries,
      numPointEntries: meta.numPointEntries,
      numDeletions: meta.numDeletions,
      numRangeDeletions: meta.numRangeDeletions,
      numDataBlocks: meta.numDataBlocks,
      properties: meta.properties,
    };
  }

  /** Closes and removes the temporary file. Idempotent; does nothing after a successful finish. */
  abort(): void {
    this.done = true;
    this.table.abort();
  }

  private addPoint(userKey: Uint8Array, type: ValueType, value: Uint8Array): void {
    if (this.done || this.failure !== null) this.checkOpen();
    const n = userKey.length;
    const previous = this.previousKeyLength;
    let scratch = this.keyScratch;
    // One pass finds where the key departs from the previous one: that decides the order, and
    // the bytes before it are already in keyScratch.
    const limit = previous < n ? previous : n;
    let d = 0;
    while (d < limit && scratch[d] === userKey[d]) d++;
    if (previous >= 0 && (d === n || (d < previous && scratch[d] > userKey[d]))) {
      throw new IngestError(
        'KEY_ORDER',
        `keys must be added in strictly ascending order: ${formatKey(userKey)} after ${formatKey(scratch.subarray(0, previous))} in ${this.path}`,
      );
    }
    const ikeyBytes = n + TRAILER_BYTES;
    if (ikeyBytes > scratch.length) {
      scratch = this.keyScratch = Buffer.allocUnsafe(Math.max(ikeyBytes, 2 * scratch.length));
      this.keyView = scratch.subarray(0, ikeyBytes);
      d = 0;
    } else if (this.keyView.length !== ikeyBytes) {
      this.keyView = scratch.subarray(0, ikeyBytes);
    }
    copyBytes(userKey, d, n, scratch, d);
    // The trailer of sequence 0: the type byte, then seven zero bytes.
    scratch[n] = type;
    for (let i = n + 1; i < ikeyBytes; i++) scratch[i] = 0;
    try {
      this.table.add(this.keyView, value, userKey);
    } catch (e) {
      // keyScratch no longer holds the previous key and the table may be half-written.
      this.failure = e;
      throw e;
    }
    this.previousKeyLength = n;
  }

  private checkOpen(): void {
    if (this.done) throw new IngestError('INVALID_ARGUMENT', `SstFileWriter for ${this.path} is already finished or aborted`);
    if (this.failure !== null) {
      throw new IngestError(
        'INVALID_ARGUMENT',
        `SstFileWriter for ${this.path} failed earlier (${(this.failure as Error).message}); call abort()`,
        { cause: this.failure },
      );
    }
  }
}

/** fsync a directory so a rename inside it survives a crash. */
export function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch (e) {
    throw new IngestError('IO', `cannot sync directory ${dir}: ${(e as Error).message}`, { cause: e });
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
