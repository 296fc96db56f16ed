/**
 * Row origins: a side file per SST saying which input file and line each of its entries came
 * from, so a conflict report can name the CSV row of a conflicting key. The importer knows
 * (source, line) for every row it merges (its runs carry them); it writes one origins file per
 * SST, entry for entry, while it writes the SST.
 *
 * File `<stem>.origins` beside `<stem>.sst` (layout, version 1):
 *   magic        8 bytes "SSTORIG1"
 *   sourceCount  varint32
 *   sources      sourceCount × (varint32 byteLength ‖ UTF-8 display name of an input)
 *   entries      (varint32 source index ‖ varint64 line) per SST entry, in the SST's key order
 *   entryCount   fixed64 little-endian
 *   checksum     fixed32 little-endian: masked CRC32C of every byte before it
 * The count and checksum come last so the writer streams in one pass with bounded memory.
 * About 4 bytes per row. Entry i describes the SST's i-th key: the file holds no keys, so the
 * lookup walks the SST and the origins side by side. That costs a forward pass over the SST's
 * keys up to the last key looked up, paid only when conflicts are listed.
 *
 * Lookups (RowOriginIndex.sourceOf) must come in ascending key order per file for the walk to
 * stay forward (checkSstConflicts calls in key order); a smaller key restarts that file's walk.
 */
import * as fs from 'fs';
import * as nodePath from 'path';
import { randomBytes } from 'crypto';
import { crc32c } from '@node-rs/crc32';
import { ByteSink, decoded, readVarint32, readVarint64 } from '../util/coding';
import { CorruptionError, IngestError } from '../util/errors';
import { maskCrc } from '../sstable/checksum';
import { TRAILER_BYTES } from '../base/internalKey';
import { compareByteRanges } from '../base/keyCompare';
import { TableIterator } from '../sstable/reader/tableIterator';
import { SstRun } from './sstRun';
import { RowSource } from './report';

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
interface OriginsFile {
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

/**
 * sourceOf for checkSstConflicts over SSTs with origins files beside them. Files without one
 * answer undefined. Keep it open for the check, then close() it.
 */
export class RowOriginIndex {
  private readonly run: SstRun;
  private readonly walks: Array<{ origins: OriginsFile | null; it: TableIterator | null; ordinal: number } | undefined>;

  private constructor(run: SstRun) {
    this.run = run;
    this.walks = new Array(run.files.length);
  }

  static open(sstPaths: readonly string[]): RowOriginIndex {
    return new RowOriginIndex(SstRun.open(sstPaths));
  }

  /** An index when at least one SST has an origins file beside it, else null (nothing opened). */
  static openIfPresent(sstPaths: readonly string[]): RowOriginIndex | null {
    return sstPaths.some((p) => fs.existsSync(originsPathFor(p))) ? RowOriginIndex.open(sstPaths) : null;
  }

  /** Where the row with `userKey` came from, or undefined when unknown. */
  sourceOf(userKey: Buffer): RowSource | undefined {
    const i = this.run.fileHolding(userKey);
    if (i < 0) return undefined;
    let w = this.walks[i];
    if (w === undefined) {
      const path = originsPathFor(this.run.files[i].path);
      const origins = fs.existsSync(path) ? readOriginsFile(path) : null;
      if (origins !== null && origins.entryCount !== this.run.files[i].entries) {
        throw new CorruptionError(
          path,
          0,
          `origins file lists ${origins.entryCount} rows but ${this.run.files[i].path} holds ${this.run.files[i].entries}`,
        );
      }
      w = { origins, it: null, ordinal: -1 };
      this.walks[i] = w;
    }
    if (w.origins === null) return undefined;
    // Walk the SST forward to the key, counting entries (restart if the key is behind us).
    if (w.it === null || (w.it.valid() && compareKeyOf(w.it, userKey) > 0)) {
      w.it?.close();
      w.it = this.run.files[i].reader.newIterator();
      w.it.first();
      w.ordinal = 0;
    }
    const it = w.it;
    while (it.valid() && compareKeyOf(it, userKey) < 0) {
      it.next();
      w.ordinal++;
    }
    if (!it.valid() || compareKeyOf(it, userKey) !== 0) return undefined;
    const o = w.origins;
    if (o.ordinal > w.ordinal) {
      o.ordinal = 0;
      o.offset = o.firstEntryOffset;
    }
    const data = o.data;
    let p = o.offset;
    while (o.ordinal < w.ordinal) {
      readVarint32(data, p, data.length);
      readVarint64(data, decoded.offset, data.length);
      p = decoded.offset;
      o.ordinal++;
    }
    o.offset = p;
    const source = readVarint32(data, p, data.length);
    const line = readVarint64(data, decoded.offset, data.length);
    if (source >= o.sources.length)
      throw new CorruptionError(originsPathFor(this.run.files[i].path), p, `source index ${source} out of range`);
    return { file: o.sources[source], line };
  }

  close(): void {
    for (const w of this.walks) w?.it?.close();
    this.run.close();
  }
}

function compareKeyOf(it: TableIterator, userKey: Buffer): number {
  const k = it.key();
  return compareByteRanges(k, 0, k.length - TRAILER_BYTES, userKey, 0, userKey.length);
}
