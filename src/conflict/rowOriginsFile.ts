/**
 * The row-origins side file (rowOrigins.ts says what it is for): its writer, which the import's
 * merge streams while it writes each SST, and its parser. Kept apart from RowOriginIndex, which
 * reads SSTs, so the merge workers that write origins do not load the table reader stack (about
 * 12 ms of module loading per worker, on the merge's critical path).
 *
 * File `<stem>.origins` beside `<stem>.sst` (layout, version 1):
 *   magic        8 bytes "SSTORIG1"
 *   sourceCount  varint32
 *   sources      sourceCount × (varint32 byteLength ‖ UTF-8 display name of an input)
 *   entries      (varint32 source index ‖ varint64 line) per SST entry, in the SST's key order
 *   entryCount   fixed64 little-endian
 *   checksum     fixed32 little-endian: masked CRC32C of every byte before it
 * The count and checksum come last so the writer streams in one pass with bounded memory.
 * About 4 bytes per row. Entry i describes the SST's i-th key: the file holds no keys.
 */
import * as fs from 'fs';
import * as nodePath from 'path';
import { randomBytes } from 'crypto';
import { crc32c } from '../util/crc32c';
import { ByteSink, decoded, readVarint32 } from '../util/coding';
import { CorruptionError, IngestError } from '../util/errors';
import { maskCrc } from '../sstable/checksum';

const MAGIC = Buffer.from('SSTORIG1', 'latin1');
const CHECKSUM_BYTES = 4;
const COUNT_BYTES = 8;
const TRAILER_FIXED_BYTES = COUNT_BYTES + CHECKSUM_BYTES;
const TWO_POW_32 = 4294967296;
/** Buffered bytes before the writer appends them to the file. */
const WRITE_CHUNK_BYTES = 1 << 20;
/** Largest origins file read into memory (~250M rows); larger is refused as corrupt. */
const MAX_ORIGINS_FILE_BYTES = 1 << 30;

/** `<dir>/<stem>.origins` for `<dir>/<stem>.sst`. */
export function originsPathFor(sstPath: string): string {
  const ext = nodePath.extname(sstPath);
  return nodePath.join(nodePath.dirname(sstPath), `${nodePath.basename(sstPath, ext)}.origins`);
}

/** Streams one origins file: add() once per SST entry, in the SST's order, then finish(). */
export class RowOriginsWriter {
  readonly path: string;
  private readonly tempPath: string;
  private fd: number;
  private readonly sink = new ByteSink(64 * 1024);
  /** CRC32C (unmasked) of the bytes already written to the file. */
  private crc = 0;
  private entries = 0;
  private done = false;

  constructor(path: string, sources: readonly string[]) {
    this.path = path;
    this.tempPath = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      this.fd = fs.openSync(this.tempPath, 'w');
    } catch (e) {
      throw new IngestError('IO', `cannot create ${this.tempPath}: ${(e as Error).message}`, { cause: e });
    }
    this.sink.putBytes(MAGIC);
    this.sink.putVarint32(sources.length);
    for (const s of sources) {
      const b = Buffer.from(s, 'utf8');
      this.sink.putVarint32(b.length);
      this.sink.putBytes(b);
    }
  }

  add(source: number, line: number): void {
    this.sink.putVarint32(source);
    this.sink.putVarint64(line);
    this.entries++;
    if (this.sink.length >= WRITE_CHUNK_BYTES) this.flushChunk();
  }

  /** Writes the count and the checksum, fsyncs, and renames into place. */
  finish(): void {
    if (this.done) throw new IngestError('INVALID_ARGUMENT', `RowOriginsWriter for ${this.path} already finished`);
    this.done = true;
    try {
      this.sink.putFixed32(this.entries % TWO_POW_32);
      this.sink.putFixed32(Math.floor(this.entries / TWO_POW_32));
      this.flushChunk();
      this.sink.putFixed32(maskCrc(this.crc));
      fs.writeSync(this.fd, this.sink.view());
      this.sink.clear();
      fs.fsyncSync(this.fd);
      fs.closeSync(this.fd);
      this.fd = -1;
      fs.renameSync(this.tempPath, this.path);
    } catch (e) {
      this.abort();
      throw new IngestError('IO', `cannot write ${this.path}: ${(e as Error).message}`, { cause: e });
    }
  }

  /** Closes and removes the temporary file; idempotent. */
  abort(): void {
    this.done = true;
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
    fs.rmSync(this.tempPath, { force: true });
  }

  private flushChunk(): void {
    const chunk = this.sink.view();
    this.crc = crc32c(chunk, this.crc);
    fs.writeSync(this.fd, chunk);
    this.sink.clear();
  }
}

/** Parsed origins of one SST, with a forward cursor over its entries. */
export interface OriginsFile {
  sources: string[];
  entryCount: number;
  /** The file without its count and checksum: header then entries. */
  data: Buffer;
  firstEntryOffset: number;
  /** Cursor: entry `ordinal` starts at `offset`. */
  offset: number;
  ordinal: number;
}

export function readOriginsFile(path: string): OriginsFile {
  const size = fs.statSync(path).size;
  if (size > MAX_ORIGINS_FILE_BYTES)
    throw new CorruptionError(path, 0, `origins file of ${size} bytes exceeds the ${MAX_ORIGINS_FILE_BYTES}-byte limit`);
  const file = fs.readFileSync(path);
  if (file.length < MAGIC.length + TRAILER_FIXED_BYTES || !file.subarray(0, MAGIC.length).equals(MAGIC))
    throw new CorruptionError(path, 0, 'not an origins file (bad magic)');
  const checksumAt = file.length - CHECKSUM_BYTES;
  if (maskCrc(crc32c(file.subarray(0, checksumAt))) >>> 0 !== file.readUInt32LE(checksumAt))
    throw new CorruptionError(path, checksumAt, 'origins checksum mismatch');
  const countAt = checksumAt - COUNT_BYTES;
  const entryCount = file.readUInt32LE(countAt) + file.readUInt32LE(countAt + 4) * TWO_POW_32;
  const data = file.subarray(0, countAt);
  let p = MAGIC.length;
  const count = readVarint32(data, p, data.length);
  p = decoded.offset;
  const sources: string[] = [];
  for (let i = 0; i < count; i++) {
    const n = readVarint32(data, p, data.length);
    p = decoded.offset;
    if (p + n > data.length) throw new CorruptionError(path, p, 'source name runs past the end');
    sources.push(data.toString('utf8', p, p + n));
    p += n;
  }
  return { sources, entryCount, data, firstEntryOffset: p, offset: p, ordinal: 0 };
}
