/**
 * Version edits: the records a MANIFEST is made of. Each edit says which table files were added
 * to or removed from which level, and may move the database's counters (next file number, last
 * sequence number, oldest live WAL). Replaying every edit of a manifest in order rebuilds the
 * set of live files.
 *
 * Encoding: a sequence of tagged fields, each `varint32 tag ‖ payload` (the scheme RocksDB's
 * VersionEdit uses; the tag numbers are ours):
 *   1 comparator       varint32 length ‖ name bytes
 *   2 log number       varint64 (WALs numbered below it are obsolete)
 *   3 next file number varint64
 *   4 last sequence    varint64
 *   6 deleted file     varint32 level ‖ varint64 file number
 *   7 new file         varint32 level ‖ varint64 file number ‖ varint64 size ‖
 *                      length-prefixed smallest internal key ‖ length-prefixed largest internal key ‖
 *                      varint64 smallest seq ‖ varint64 largest seq ‖
 *                      custom fields: (varint32 field tag ‖ length-prefixed value)* ‖ varint32 0
 * Custom file fields let later versions attach properties to a file without a new tag. A reader
 * rejects an unknown custom field unless its tag has the "safe to ignore" bit (0x40) set, since
 * ignoring a field that changes how a file is read would silently misread it. Unknown top-level
 * tags are corruption. Custom fields defined:
 *   2 global seqno     varint64: the sequence number ingestion assigned to an external file
 *                      (ingest/ingestionJob.ts). Its keys are stored with sequence 0 and read
 *                      with this one (TableReader's globalSeqno option); not safe to ignore.
 */
import { ByteSink, decoded, readVarint32, readVarint64 } from '../util/coding';
import { CorruptionError } from '../util/errors';
import { TRAILER_BYTES } from '../base/internalKey';

export const NUM_LEVELS = 7;

/** What the engine knows about one table file without opening it. */
export interface FileMetaData {
  fileNumber: number;
  fileSizeBytes: number;
  /** Smallest and largest internal keys in the file (points and range-deletion starts/ends). */
  smallest: Buffer;
  largest: Buffer;
  smallestSeq: number;
  largestSeq: number;
  /**
   * Ingested external files only: the sequence number every key of the file is read with (the
   * file itself stores 0). Undefined for files the engine wrote. Moving a file between levels
   * must keep it.
   */
  globalSeqno?: number;
}

export interface NewFile {
  level: number;
  file: FileMetaData;
}

export interface DeletedFile {
  level: number;
  fileNumber: number;
}

const enum Tag {
  Comparator = 1,
  LogNumber = 2,
  NextFileNumber = 3,
  LastSequence = 4,
  DeletedFile = 6,
  NewFile = 7,
}

const CUSTOM_FIELD_TERMINATOR = 0;
/** Custom file field: an ingested file's global sequence number (varint64). */
const CUSTOM_FIELD_GLOBAL_SEQNO = 2;
const CUSTOM_FIELD_SAFE_TO_IGNORE = 0x40;
/** Longest key or name a manifest holds; anything longer is corruption, not data. */
const MAX_MANIFEST_SLICE_BYTES = 64 * 1024 * 1024;

export class VersionEdit {
  comparator: string | null = null;
  logNumber: number | null = null;
  nextFileNumber: number | null = null;
  lastSequence: number | null = null;
  readonly deletedFiles: DeletedFile[] = [];
  readonly newFiles: NewFile[] = [];

  addFile(level: number, file: FileMetaData): this {
    checkLevel(level);
    this.newFiles.push({ level, file });
    return this;
  }

  deleteFile(level: number, fileNumber: number): this {
    checkLevel(level);
    this.deletedFiles.push({ level, fileNumber });
    return this;
  }

  encode(): Buffer {
    const sink = new ByteSink(256);
    if (this.comparator !== null) {
      sink.putVarint32(Tag.Comparator);
      putSlice(sink, Buffer.from(this.comparator, 'utf8'));
    }
    if (this.logNumber !== null) {
      sink.putVarint32(Tag.LogNumber);
      sink.putVarint64(this.logNumber);
    }
    if (this.nextFileNumber !== null) {
      sink.putVarint32(Tag.NextFileNumber);
      sink.putVarint64(this.nextFileNumber);
    }
    if (this.lastSequence !== null) {
      sink.putVarint32(Tag.LastSequence);
      sink.putVarint64(this.lastSequence);
    }
    for (const d of this.deletedFiles) {
      sink.putVarint32(Tag.DeletedFile);
      sink.putVarint32(d.level);
      sink.putVarint64(d.fileNumber);
    }
    for (const { level, file } of this.newFiles) {
      sink.putVarint32(Tag.NewFile);
      sink.putVarint32(level);
      sink.putVarint64(file.fileNumber);
      sink.putVarint64(file.fileSizeBytes);
      putSlice(sink, file.smallest);
      putSlice(sink, file.largest);
      sink.putVarint64(file.smallestSeq);
      sink.putVarint64(file.largestSeq);
      if (file.globalSeqno !== undefined) {
        sink.putVarint32(CUSTOM_FIELD_GLOBAL_SEQNO);
        const value = new ByteSink(10);
        value.putVarint64(file.globalSeqno);
        putSlice(sink, value.view());
      }
      sink.putVarint32(CUSTOM_FIELD_TERMINATOR);
    }
    return Buffer.from(sink.view());
  }

  /** Decodes an edit read from `file` at `offset` (named in any CorruptionError). */
  static decode(data: Buffer, file: string, offset: number): VersionEdit {
    const edit = new VersionEdit();
    let pos = 0;
    const fail = (reason: string): never => {
      throw new CorruptionError(file, offset, `version edit: ${reason}`);
    };
    const v32 = (): number => {
      try {
        readVarint32(data, pos);
      } catch (err) {
        fail((err as Error).message);
      }
      pos = decoded.offset;
      return decoded.value;
    };
    const v64 = (): number => {
      try {
        readVarint64(data, pos);
      } catch (err) {
        fail((err as Error).message);
      }
      pos = decoded.offset;
      return decoded.value;
    };
    const slice = (): Buffer => {
      const len = v32();
      if (len > MAX_MANIFEST_SLICE_BYTES || pos + len > data.length) fail(`field of ${len} bytes runs past the edit`);
      const s = Buffer.from(data.subarray(pos, pos + len));
      pos += len;
      return s;
    };
    const level = (): number => {
      const l = v32();
      if (l >= NUM_LEVELS) fail(`level ${l} is not below ${NUM_LEVELS}`);
      return l;
    };
    while (pos < data.length) {
      const tag = v32();
      switch (tag) {
        case Tag.Comparator:
          edit.comparator = slice().toString('utf8');
          break;
        case Tag.LogNumber:
          edit.logNumber = v64();
          break;
        case Tag.NextFileNumber:
          edit.nextFileNumber = v64();
          break;
        case Tag.LastSequence:
          edit.lastSequence = v64();
          break;
        case Tag.DeletedFile: {
          const l = level();
          edit.deletedFiles.push({ level: l, fileNumber: v64() });
          break;
        }
        case Tag.NewFile: {
          const l = level();
          const fileNumber = v64();
          const fileSizeBytes = v64();
          const smallest = slice();
          const largest = slice();
          if (smallest.length < TRAILER_BYTES || largest.length < TRAILER_BYTES)
            fail(`file ${fileNumber} has a bound shorter than an internal key`);
          const smallestSeq = v64();
          const largestSeq = v64();
          let globalSeqno: number | undefined;
          for (let field = v32(); field !== CUSTOM_FIELD_TERMINATOR; field = v32()) {
            const value = slice();
            if (field === CUSTOM_FIELD_GLOBAL_SEQNO) {
              globalSeqno = decodeVarint64Field(value, () => fail(`file ${fileNumber} has a malformed global seqno field`));
            } else if ((field & CUSTOM_FIELD_SAFE_TO_IGNORE) === 0) {
              fail(`file ${fileNumber} has unknown custom field ${field}`);
            }
          }
          const meta: FileMetaData = { fileNumber, fileSizeBytes, smallest, largest, smallestSeq, largestSeq };
          if (globalSeqno !== undefined) meta.globalSeqno = globalSeqno;
          edit.newFiles.push({ level: l, file: meta });
          break;
        }
        default:
          fail(`unknown tag ${tag}`);
      }
    }
    return edit;
  }
}

/** A custom field holding exactly one varint64; `fail` throws. */
function decodeVarint64Field(value: Buffer, fail: () => never): number {
  try {
    readVarint64(value, 0);
  } catch {
    fail();
  }
  if (decoded.offset !== value.length) fail();
  return decoded.value;
}

function putSlice(sink: ByteSink, s: Uint8Array): void {
  sink.putVarint32(s.length);
  sink.putBytes(s);
}

function checkLevel(level: number): void {
  if (!Number.isInteger(level) || level < 0 || level >= NUM_LEVELS) throw new RangeError(`level ${level} is not in [0, ${NUM_LEVELS})`);
}
