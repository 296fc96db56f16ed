/**
 * Block compression as RocksDB frames it.
 *
 * Only data and index blocks are ever compressed. The trailer's type byte says how a block is
 * stored: 0 = raw, 4 = LZ4, 5 = LZ4HC (same decoder). For format_version >= 2 an LZ4 payload is
 * `varint32 uncompressed size ‖ raw LZ4 block`; for format_version 0/1 the size is a u64le.
 * lz4-napi frames its raw block with a u32le size instead, so both directions re-frame.
 *
 * The writer keeps a compressed block only if it saves more than 1/8 of the raw size (RocksDB's
 * rule), so incompressible blocks cost nothing to read back.
 */
import { compressSync, uncompressSync } from 'lz4-napi';
import { readVarint32, writeVarint, varintLength, decoded } from '../util/coding';

export enum CompressionType {
  None = 0,
  Snappy = 1,
  Zlib = 2,
  BZip2 = 3,
  LZ4 = 4,
  LZ4HC = 5,
  Xpress = 6,
  ZSTD = 7,
  ZSTDNotFinal = 0x40,
}

const NAMES: Record<number, string> = {
  0: 'NoCompression',
  1: 'Snappy',
  2: 'Zlib',
  3: 'BZip2',
  4: 'LZ4',
  5: 'LZ4HC',
  6: 'Xpress',
  7: 'ZSTD',
  0x40: 'ZSTDNotFinal',
};

/** The name RocksDB records in `rocksdb.compression`. */
export function compressionName(t: number): string {
  return NAMES[t] ?? `Unknown(${t})`;
}

export function parseCompression(name: string): CompressionType {
  switch (name.toLowerCase()) {
    case 'none':
    case 'no':
      return CompressionType.None;
    case 'lz4':
      return CompressionType.LZ4;
    default:
      throw new RangeError(`unsupported compression "${name}" (expected lz4 or none)`);
  }
}

/**
 * Compresses `raw` with LZ4 in RocksDB framing; returns null when the result does not save
 * more than 1/8 of the input (the caller then stores the block raw).
 */
export function lz4CompressForBlock(raw: Buffer, formatVersion: number): Buffer | null {
  if (raw.length >= 0x7fffffff) return null;
  const framed = compressSync(raw); // u32le size ‖ raw LZ4 block
  const body = framed.length - 4;
  const headerBytes = formatVersion >= 2 ? varintLength(raw.length) : 8;
  const total = headerBytes + body;
  if (total >= raw.length - Math.floor(raw.length / 8)) return null;
  const out = Buffer.allocUnsafe(total);
  if (formatVersion >= 2) {
    writeVarint(out, 0, raw.length);
  } else {
    out.writeBigUInt64LE(BigInt(raw.length), 0);
  }
  framed.copy(out, headerBytes, 4);
  return out;
}

/**
 * Decodes an LZ4/LZ4HC block payload. Throws RangeError on a malformed payload or a size that
 * disagrees with the header (lz4-napi accepts an over-stated size, so the length is checked).
 */
export function lz4DecompressBlock(payload: Buffer, formatVersion: number): Buffer {
  let size: number;
  let headerBytes: number;
  if (formatVersion >= 2) {
    size = readVarint32(payload, 0);
    headerBytes = decoded.offset;
  } else {
    if (payload.length < 8) throw new RangeError('LZ4 payload shorter than its 8-byte size header');
    const big = payload.readBigUInt64LE(0);
    if (big > BigInt(0x7fffffff)) throw new RangeError(`LZ4 uncompressed size ${big} is implausible`);
    size = Number(big);
    headerBytes = 8;
  }
  const framed = Buffer.allocUnsafe(LZ4_NAPI_SIZE_BYTES + payload.length - headerBytes);
  payload.copy(framed, LZ4_NAPI_SIZE_BYTES, headerBytes);
  return uncompressFramed(framed, 0, framed.length, size);
}

/** Bytes lz4-napi's size prefix takes (u32le), i.e. the room lz4DecompressBlockInPlace needs before a payload. */
export const LZ4_NAPI_SIZE_BYTES = 4;

/**
 * lz4DecompressBlock without copying the payload: decodes `buf[start, end)` by writing lz4-napi's
 * u32le size prefix over the bytes just before the LZ4 body, i.e. over the size header and, when
 * the header is shorter than 4 bytes (the usual 2-byte varint), over up to 4 bytes before `start`.
 * So the caller must own `buf[start - LZ4_NAPI_SIZE_BYTES, end)`, and the payload is destroyed:
 * verify its checksum first. Returns a new buffer (it can be kept, e.g. in the block cache).
 */
export function lz4DecompressBlockInPlace(buf: Buffer, start: number, end: number, formatVersion: number): Buffer {
  if (start < LZ4_NAPI_SIZE_BYTES || end > buf.length || start > end)
    throw new RangeError(`LZ4 payload [${start}, ${end}) leaves no room for the size prefix`);
  if (formatVersion < 2) return lz4DecompressBlock(buf.subarray(start, end), formatVersion);
  const size = readVarint32(buf, start, end);
  const bodyStart = decoded.offset;
  return uncompressFramed(buf, bodyStart - LZ4_NAPI_SIZE_BYTES, end, size);
}

/** Writes the u32le `size` at `buf[frameStart]` and decodes `buf[frameStart, end)` with lz4-napi. */
function uncompressFramed(buf: Buffer, frameStart: number, end: number, size: number): Buffer {
  buf.writeUInt32LE(size, frameStart);
  let out: Buffer;
  try {
    out = uncompressSync(frameStart === 0 && end === buf.length ? buf : buf.subarray(frameStart, end));
  } catch (e) {
    throw new RangeError(`LZ4 payload does not decode: ${(e as Error).message}`);
  }
  if (out.length !== size) throw new RangeError(`LZ4 block decoded to ${out.length} bytes, header says ${size}`);
  return out;
}
