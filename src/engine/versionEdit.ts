/**
 * Version edits: the records a MANIFEST is made of. Each edit says which table files were added
 * to or removed from which level, and may move the database's counters (next file number, last
 * sequence number, oldest live WAL). Replaying every edit of a manifest in order rebuilds the
 * set of live files.
 *
 * Encoding: RocksDB 7.8's VersionEdit (db/version_edit.h), so RocksDB reads our manifests and we
 * read its. A sequence of tagged fields, `varint32 tag ‖ payload`:
 *   1 comparator        length-prefixed name           9 prev log number      varint64
 *   2 log number        varint64 (older WALs obsolete) 10 min log to keep     varint64 (2PC)
 *   3 next file number  varint64                       200 column family id  varint32 (0 = default)
 *   4 last sequence     varint64                       201 column family add length-prefixed name
 *   5 compact cursor    varint32 level ‖ slice         202 column family drop (no payload)
 *   6 deleted file      varint32 level ‖ varint64 num  203 max column family  varint32
 *   100/102/103 new file (103 = kNewFile4, the only one written):
 *       varint32 level ‖ varint64 number ‖ [102: varint32 path id] ‖ varint64 size ‖
 *       slice smallest internal key ‖ slice largest internal key ‖ varint64 smallest seq ‖
 *       varint64 largest seq ‖ [103: custom fields (varint32 tag ‖ slice)* ‖ varint32 1]
 *   300 in atomic group varint32 (remaining entries)   400/401 blob file addition/garbage
 *   tags with bit 13 (0x2000) set are "safe to ignore" and always carry one length-prefixed slice:
 *   8193 db id, 8199/8200 WAL addition/deletion (tracked WALs), 8198 full_history_ts_low.
 * kNewFile4 custom fields: 1 terminator; 2 need compaction (1 byte); 3 min log to keep (fixed64);
 * 4 oldest blob file; 5 oldest ancester time; 6 file creation time; 7/8 file checksum and its
 * function name; 9 temperature; 10/11 min/max user timestamp; 12 unique id; 65 path id (1 byte).
 * A field with bit 6 (0x40) set must be understood; others may be skipped. Fields 2, 5-9 and 12
 * describe the file itself, so they are carried unchanged (`carriedFields`) when the manifest is
 * rewritten: RocksDB verifies the unique id against the table's properties, which do not change.
 *
 * Legacy: manifests of this engine before issue 17 used tag 7 for new files with sequence
 * numbers, custom fields `2 = global seqno` and terminator 0. RocksDB writes tag 7 only in
 * LevelDB-era databases (no sequence numbers), which we do not read, so tag 7 always decodes as
 * our legacy record; a database in the old format is upgraded by its first open, which writes a
 * fresh manifest in RocksDB's format (see manifest.ts).
 *
 * Features we cannot honour (blob files, user-defined timestamps, db_paths) are collected in
 * `unsupported` rather than thrown, so the open can refuse with NOT_SUPPORTED naming them.
 * Unknown tags without the safe-to-ignore bit are corruption.
 */
import { ByteSink, decoded, readVarint32, readVarint64 } from '../util/coding';
import { CorruptionError } from '../util/errors';
import { TRAILER_BYTES } from '../base/internalKey';

export const NUM_LEVELS = 7;
/** Above any num_levels a RocksDB database uses (ldb's own checks open with 64). */
const MAX_ROCKSDB_LEVELS = 64;

/** A kNewFile4 custom field kept verbatim. */
export interface CustomField {
  tag: number;
  value: Buffer;
}

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
   * Ingested external files: the sequence number every key of the file is read with (the file's
   * keys store 0). RocksDB records it as the file's smallest and largest seqno, and reads an
   * external file with its largest seqno (or its non-zero global-seqno property); so does the
   * table cache when this is undefined. Set by ingestion and by legacy manifests.
   */
  globalSeqno?: number;
  /** RocksDB's per-file custom fields, re-encoded unchanged (see the module comment). */
  carriedFields?: readonly CustomField[];
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
  CompactCursor = 5,
  DeletedFile = 6,
  LegacyNewFile = 7,
  PrevLogNumber = 9,
  MinLogNumberToKeep = 10,
  NewFile2 = 100,
  NewFile3 = 102,
  NewFile4 = 103,
  ColumnFamily = 200,
  ColumnFamilyAdd = 201,
  ColumnFamilyDrop = 202,
  MaxColumnFamily = 203,
  InAtomicGroup = 300,
  BlobFileAddition = 400,
  BlobFileGarbage = 401,
  SafeIgnoreMask = 1 << 13,
  DbId = SafeIgnoreMask + 1,
  WalAdditionUnprefixed = SafeIgnoreMask + 4,
  WalDeletionUnprefixed = SafeIgnoreMask + 5,
  FullHistoryTsLow = SafeIgnoreMask + 6,
}

const enum Field {
  Terminate = 1,
  NeedCompaction = 2,
  MinLogNumberToKeepHack = 3,
  OldestBlobFileNumber = 4,
  MinTimestamp = 10,
  MaxTimestamp = 11,
  NonSafeIgnoreMask = 1 << 6,
  PathId = NonSafeIgnoreMask + 1,
}

/** Custom fields that describe the file itself and survive a manifest rewrite unchanged. */
const CARRIED_FIELDS: ReadonlySet<number> = new Set([2, 5, 6, 7, 8, 9, 12]);

const LEGACY_FIELD_TERMINATOR = 0;
const LEGACY_FIELD_GLOBAL_SEQNO = 2;
const LEGACY_FIELD_SAFE_TO_IGNORE = 0x40;
/** Longest key or name a manifest holds; anything longer is corruption, not data. */
const MAX_MANIFEST_SLICE_BYTES = 64 * 1024 * 1024;

export class VersionEdit {
  dbId: string | null = null;
  comparator: string | null = null;
  logNumber: number | null = null;
  prevLogNumber: number | null = null;
  nextFileNumber: number | null = null;
  lastSequence: number | null = null;
  maxColumnFamily: number | null = null;
  minLogNumberToKeep: number | null = null;
  /** The column family the edit's files and log number belong to (0 = default). */
  columnFamily = 0;
  columnFamilyAdd: string | null = null;
  columnFamilyDrop = false;
  readonly deletedFiles: DeletedFile[] = [];
  readonly newFiles: NewFile[] = [];
  /** Decoded only: features found in the edit that this engine cannot honour, named for the user. */
  readonly unsupported: string[] = [];

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

  /** RocksDB's encoding (module comment); field order as RocksDB's EncodeTo writes them. */
  encode(): Buffer {
    const sink = new ByteSink(256);
    if (this.dbId !== null) putTaggedSlice(sink, Tag.DbId, Buffer.from(this.dbId, 'latin1'));
    if (this.comparator !== null) putTaggedSlice(sink, Tag.Comparator, Buffer.from(this.comparator, 'utf8'));
    putTaggedVarint64(sink, Tag.LogNumber, this.logNumber);
    putTaggedVarint64(sink, Tag.PrevLogNumber, this.prevLogNumber);
    putTaggedVarint64(sink, Tag.NextFileNumber, this.nextFileNumber);
    putTaggedVarint64(sink, Tag.MaxColumnFamily, this.maxColumnFamily);
    putTaggedVarint64(sink, Tag.MinLogNumberToKeep, this.minLogNumberToKeep);
    putTaggedVarint64(sink, Tag.LastSequence, this.lastSequence);
    for (const d of this.deletedFiles) {
      sink.putVarint32(Tag.DeletedFile);
      sink.putVarint32(d.level);
      sink.putVarint64(d.fileNumber);
    }
    for (const { level, file } of this.newFiles) encodeNewFile4(sink, level, file);
    if (this.columnFamily !== 0) putTaggedVarint64(sink, Tag.ColumnFamily, this.columnFamily);
    if (this.columnFamilyAdd !== null) putTaggedSlice(sink, Tag.ColumnFamilyAdd, Buffer.from(this.columnFamilyAdd, 'utf8'));
    if (this.columnFamilyDrop) sink.putVarint32(Tag.ColumnFamilyDrop);
    return Buffer.from(sink.view());
  }

  /** Decodes an edit read from `file` at `offset` (named in any CorruptionError). */
  static decode(data: Buffer, file: string, offset: number): VersionEdit {
    const edit = new VersionEdit();
    const r = new EditReader(data, file, offset);
    while (!r.done()) {
      if (!decodeField(edit, r, r.v32())) break;
    }
    return edit;
  }
}

/**
 * Decodes one top-level field into `edit`; false when the rest of the edit cannot be parsed
 * (a blob record, whose layout we do not read: the edit is refused as a whole anyway).
 */
function decodeField(edit: VersionEdit, r: EditReader, tag: number): boolean {
  switch (tag) {
    case Tag.Comparator:
      edit.comparator = r.slice().toString('utf8');
      return true;
    case Tag.LogNumber:
      edit.logNumber = r.v64();
      return true;
    case Tag.PrevLogNumber:
      edit.prevLogNumber = r.v64();
      return true;
    case Tag.NextFileNumber:
      edit.nextFileNumber = r.v64();
      return true;
    case Tag.LastSequence:
      edit.lastSequence = r.v64();
      return true;
    case Tag.MinLogNumberToKeep:
      edit.minLogNumberToKeep = r.v64();
      return true;
    case Tag.MaxColumnFamily:
      edit.maxColumnFamily = r.v32();
      return true;
    case Tag.CompactCursor: // a round-robin compaction hint: dropped, RocksDB restarts it
      r.v32();
      r.slice();
      return true;
    case Tag.DeletedFile: {
      const level = r.level(edit);
      const fileNumber = r.v64();
      if (level >= 0) edit.deletedFiles.push({ level, fileNumber });
      return true;
    }
    case Tag.LegacyNewFile:
      edit.newFiles.push(decodeLegacyNewFile(r));
      return true;
    case Tag.NewFile2:
    case Tag.NewFile3:
    case Tag.NewFile4: {
      const added = decodeNewFile(edit, r, tag);
      if (added.level >= 0) edit.newFiles.push(added);
      return true;
    }
    default:
      return decodeOtherField(edit, r, tag);
  }
}

/** The column-family, atomic-group, blob and safe-to-ignore fields. */
function decodeOtherField(edit: VersionEdit, r: EditReader, tag: number): boolean {
  switch (tag) {
    case Tag.ColumnFamily:
      edit.columnFamily = r.v32();
      return true;
    case Tag.ColumnFamilyAdd:
      edit.columnFamilyAdd = r.slice().toString('utf8');
      return true;
    case Tag.ColumnFamilyDrop:
      edit.columnFamilyDrop = true;
      return true;
    case Tag.InAtomicGroup: // only atomic_flush across column families writes groups; those are refused
      r.v32();
      return true;
    case Tag.BlobFileAddition:
    case Tag.BlobFileGarbage:
      edit.unsupported.push('blob files (BlobDB: enable_blob_files)');
      return false;
    case Tag.WalAdditionUnprefixed:
    case Tag.WalDeletionUnprefixed:
      edit.unsupported.push(`WAL tracking records of an older RocksDB (manifest tag ${tag})`);
      return false;
    case Tag.DbId:
      edit.dbId = r.slice().toString('latin1');
      return true;
    case Tag.FullHistoryTsLow:
      r.slice();
      edit.unsupported.push('user-defined timestamps (full_history_ts_low)');
      return true;
    default:
      // WAL additions/deletions (track_and_verify_wals_in_manifest) and future ignorable records.
      if ((tag & Tag.SafeIgnoreMask) !== 0) {
        r.slice();
        return true;
      }
      return r.fail(`unknown tag ${tag}`);
  }
}

/** kNewFile2/3/4: RocksDB's new-file records (level -1: a level we do not keep, see EditReader.level). */
function decodeNewFile(edit: VersionEdit, r: EditReader, tag: number): NewFile {
  const level = r.level(edit);
  const fileNumber = r.v64();
  if (tag === Tag.NewFile3) {
    const pathId = r.v32();
    if (pathId !== 0) edit.unsupported.push(`db_paths/cf_paths (file ${fileNumber} has path id ${pathId})`);
  }
  const meta = r.fileBody(fileNumber);
  if (tag !== Tag.NewFile4) return { level, file: meta };
  const carried: CustomField[] = [];
  for (let field = r.v32(); field !== Field.Terminate; field = r.v32()) {
    const value = r.slice();
    if (CARRIED_FIELDS.has(field)) {
      carried.push({ tag: field, value });
    } else if (field === Field.MinLogNumberToKeepHack) {
      if (value.length !== 8) r.fail(`file ${fileNumber}: min log number field is not 8 bytes`);
      edit.minLogNumberToKeep = Number(value.readBigUInt64LE(0));
    } else if (field === Field.OldestBlobFileNumber) {
      edit.unsupported.push(`blob files (file ${fileNumber} refers to blob files)`);
    } else if (field === Field.MinTimestamp || field === Field.MaxTimestamp) {
      edit.unsupported.push(`user-defined timestamps (file ${fileNumber} records timestamps)`);
    } else if (field === Field.PathId) {
      if (value.length !== 1) r.fail(`file ${fileNumber}: path id field is not 1 byte`);
      if (value[0] !== 0) edit.unsupported.push(`db_paths/cf_paths (file ${fileNumber} has path id ${value[0]})`);
    } else if ((field & Field.NonSafeIgnoreMask) !== 0) {
      edit.unsupported.push(`new-file custom field ${field} of a newer RocksDB (file ${fileNumber})`);
    }
  }
  if (carried.length > 0) meta.carriedFields = carried;
  return { level, file: meta };
}

/** Tag 7 as this engine wrote it before issue 17 (module comment). */
function decodeLegacyNewFile(r: EditReader): NewFile {
  const level = r.level();
  const fileNumber = r.v64();
  const meta = r.fileBody(fileNumber);
  for (let field = r.v32(); field !== LEGACY_FIELD_TERMINATOR; field = r.v32()) {
    const value = r.slice();
    if (field === LEGACY_FIELD_GLOBAL_SEQNO) {
      meta.globalSeqno = decodeVarint64Field(value, () => r.fail(`file ${fileNumber} has a malformed global seqno field`));
    } else if ((field & LEGACY_FIELD_SAFE_TO_IGNORE) === 0) {
      r.fail(`file ${fileNumber} has unknown custom field ${field}`);
    }
  }
  return { level, file: meta };
}

function encodeNewFile4(sink: ByteSink, level: number, file: FileMetaData): void {
  sink.putVarint32(Tag.NewFile4);
  sink.putVarint32(level);
  sink.putVarint64(file.fileNumber);
  sink.putVarint64(file.fileSizeBytes);
  putSlice(sink, file.smallest);
  putSlice(sink, file.largest);
  sink.putVarint64(file.smallestSeq);
  sink.putVarint64(file.largestSeq);
  for (const f of file.carriedFields ?? []) putTaggedSlice(sink, f.tag, f.value);
  sink.putVarint32(Field.Terminate);
}

/** Cursor over one encoded edit; every failure is a CorruptionError naming the manifest. */
class EditReader {
  private pos = 0;
  constructor(
    private readonly data: Buffer,
    private readonly file: string,
    private readonly offset: number,
  ) {}

  done(): boolean {
    return this.pos >= this.data.length;
  }

  fail(reason: string): never {
    throw new CorruptionError(this.file, this.offset, `version edit: ${reason}`);
  }

  v32(): number {
    try {
      readVarint32(this.data, this.pos);
    } catch (err) {
      this.fail((err as Error).message);
    }
    this.pos = decoded.offset;
    return decoded.value;
  }

  v64(): number {
    try {
      readVarint64(this.data, this.pos);
    } catch (err) {
      this.fail((err as Error).message);
    }
    this.pos = decoded.offset;
    return decoded.value;
  }

  slice(): Buffer {
    const len = this.v32();
    if (len > MAX_MANIFEST_SLICE_BYTES || this.pos + len > this.data.length) this.fail(`field of ${len} bytes runs past the edit`);
    const s = Buffer.from(this.data.subarray(this.pos, this.pos + len));
    this.pos += len;
    return s;
  }

  /**
   * A level. RocksDB databases may be configured with more levels (num_levels) than we keep: a
   * level up to MAX_ROCKSDB_LEVELS is then named in `edit.unsupported` (when one is given) and
   * -1 returned; anything beyond is corruption.
   */
  level(edit?: VersionEdit): number {
    const l = this.v32();
    if (l < NUM_LEVELS) return l;
    if (edit === undefined || l >= MAX_ROCKSDB_LEVELS) this.fail(`level ${l} is not below ${NUM_LEVELS}`);
    edit.unsupported.push(`num_levels above ${NUM_LEVELS} (a file in level ${l})`);
    return -1;
  }

  /** size ‖ smallest ‖ largest ‖ smallest seq ‖ largest seq: the body every new-file record shares. */
  fileBody(fileNumber: number): FileMetaData {
    const fileSizeBytes = this.v64();
    const smallest = this.slice();
    const largest = this.slice();
    if (smallest.length < TRAILER_BYTES || largest.length < TRAILER_BYTES) {
      this.fail(`file ${fileNumber} has a bound shorter than an internal key`);
    }
    const smallestSeq = this.v64();
    const largestSeq = this.v64();
    return { fileNumber, fileSizeBytes, smallest, largest, smallestSeq, largestSeq };
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

function putTaggedVarint64(sink: ByteSink, tag: number, v: number | null): void {
  if (v === null) return;
  sink.putVarint32(tag);
  sink.putVarint64(v);
}

function putTaggedSlice(sink: ByteSink, tag: number, s: Uint8Array): void {
  sink.putVarint32(tag);
  putSlice(sink, s);
}

function putSlice(sink: ByteSink, s: Uint8Array): void {
  sink.putVarint32(s.length);
  sink.putBytes(s);
}

function checkLevel(level: number): void {
  if (!Number.isInteger(level) || level < 0 || level >= NUM_LEVELS) throw new RangeError(`level ${level} is not in [0, ${NUM_LEVELS})`);
}
