/**
 * Block compression as RocksDB frames it: the codecs of the trailer's type byte, both ways.
 *
 * Only data and index blocks are ever compressed. The trailer's type byte says how a block is
 * stored (RocksDB's CompressionType):
 *   0 raw · 1 Snappy · 2 Zlib · 3 BZip2 · 4 LZ4 · 5 LZ4HC · 6 Xpress · 7 ZSTD · 0x40 ZSTDNotFinal
 * Payload layouts (format_version >= 2, the only ones the reader opens; RocksDB's
 * compress_format_version 2):
 *   Snappy        raw Snappy block (it starts with its own varint32 decoded length; no prefix)
 *   Zlib          varint32 decoded size ‖ raw deflate (no zlib header: RocksDB's window_bits -14)
 *   LZ4, LZ4HC    varint32 decoded size ‖ raw LZ4 block  (format_version 0/1: u64le size)
 *   ZSTD, 0x40    varint32 decoded size ‖ one ZSTD frame (never a dictionary here: the reader
 *                 refuses tables with a rocksdb.compression_dict meta block)
 * lz4-napi frames its raw block with a u32le size instead, so both directions re-frame.
 *
 * Contract:
 * - Read: NoCompression, Snappy, Zlib, LZ4, LZ4HC, ZSTD and ZSTDNotFinal (isReadableCompression).
 *   decompressBlock() returns the contents in a Buffer of their own and throws RangeError for a
 *   payload that does not decode, or decodes to another size than its header says, or whose
 *   size header exceeds the caller's limit or what the codec could expand the payload to (so a
 *   corrupt header never makes us allocate). BZip2 and Xpress are never decoded: the caller
 *   reports them as NOT_SUPPORTED.
 * - Write: NoCompression, LZ4, ZSTD (level 3, RocksDB's default) and Snappy
 *   (WRITABLE_COMPRESSIONS, parseCompression). compressForBlock() returns null when the result
 *   does not save more than 1/8 of the raw size (RocksDB's rule): the caller then stores the
 *   block raw, so incompressible blocks cost nothing to read back.
 * - Every function is synchronous and safe on any thread (each thread has its own ZSTD contexts).
 *   zstd-napi is loaded on first ZSTD use; if it cannot load, ZSTD alone is NOT_SUPPORTED (IngestError).
 *
 * Why these packages: lz4-napi (LZ4), snappy (napi-rs, Snappy's raw format both ways), zstd-napi
 * (libzstd built from its bundled source; its DCtx/CCtx decode into and encode from buffers we
 * size ourselves, so a decoded size is checked before anything is allocated), node:zlib (raw
 * deflate). The per-block costs are measured by bench/block-codecs.ts.
 */
import { inflateRawSync } from 'zlib';
import type * as Lz4Napi from 'lz4-napi';
import type * as SnappyNapi from 'snappy';
import type * as ZstdBinding from 'zstd-napi/binding';
import { readVarint32, writeVarint, varintLength, decoded } from '../util/coding';
import { IngestError } from '../util/errors';
import { onFirstUse } from '../util/onFirstUse';
import { NativeBlockCodec, nativeBlockCodec } from './nativeBlockCodec';

/**
 * lz4-napi and snappy, loaded on first use: with the native codec built, LZ4 never needs
 * lz4-napi, and Snappy is written only on request.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const lz4Napi = onFirstUse(() => require('lz4-napi') as typeof Lz4Napi);
// eslint-disable-next-line @typescript-eslint/no-require-imports
const snappyNapi = onFirstUse(() => require('snappy') as typeof SnappyNapi);

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

/** What the writer can produce, by the names `--compression` takes (first the default). */
export const WRITABLE_COMPRESSIONS: ReadonlyArray<{ name: string; type: CompressionType }> = [
  { name: 'lz4', type: CompressionType.LZ4 },
  { name: 'zstd', type: CompressionType.ZSTD },
  { name: 'snappy', type: CompressionType.Snappy },
  { name: 'none', type: CompressionType.None },
];

/** The `--compression` names, for option choices. */
export const WRITABLE_COMPRESSION_NAMES: readonly string[] = WRITABLE_COMPRESSIONS.map((c) => c.name);

export function parseCompression(name: string): CompressionType {
  const lower = name.toLowerCase();
  if (lower === 'no') return CompressionType.None;
  const found = WRITABLE_COMPRESSIONS.find((c) => c.name === lower);
  if (found === undefined) {
    throw new RangeError(`unsupported compression "${name}" (expected ${WRITABLE_COMPRESSION_NAMES.join(', ')})`);
  }
  return found.type;
}

/** True for the types compressForBlock() writes. */
export function isWritableCompression(t: number): boolean {
  return WRITABLE_COMPRESSIONS.some((c) => c.type === t);
}

const READABLE: ReadonlySet<number> = new Set([
  CompressionType.None,
  CompressionType.Snappy,
  CompressionType.Zlib,
  CompressionType.LZ4,
  CompressionType.LZ4HC,
  CompressionType.ZSTD,
  CompressionType.ZSTDNotFinal,
]);

/** True for the trailer types the reader decodes; the others (BZip2, Xpress, unknown) are NOT_SUPPORTED. */
export function isReadableCompression(t: number): boolean {
  return READABLE.has(t);
}

/** The readable types' names, for NOT_SUPPORTED messages. */
export const READABLE_COMPRESSION_NAMES: readonly string[] = [...READABLE].map(compressionName);

/**
 * The stored payload of `raw` under `type` (one of WRITABLE_COMPRESSIONS other than None), or
 * null when it does not save more than 1/8 (the caller stores the block raw). With `scratch`,
 * the result may be a view of it (valid until the scratch is used again) instead of a new Buffer.
 */
export function compressForBlock(type: CompressionType, raw: Buffer, formatVersion: number, scratch?: Buffer): Buffer | null {
  switch (type) {
    case CompressionType.LZ4:
      return lz4CompressForBlock(raw, formatVersion, scratch);
    case CompressionType.ZSTD:
      return zstdCompressForBlock(raw);
    case CompressionType.Snappy:
      return snappyCompressForBlock(raw);
    default:
      throw new RangeError(`compression ${compressionName(type)} cannot be written`);
  }
}

/** RocksDB keeps a compressed block only if it is smaller than raw - raw/8. */
function savesEnough(storedBytes: number, rawBytes: number): boolean {
  return storedBytes < rawBytes - Math.floor(rawBytes / 8);
}

/** ZSTD's default level, which RocksDB 7.8 uses when none is configured. */
export const ZSTD_LEVEL = 3;

/** Per-thread ZSTD contexts, made on first use (a context costs ~100 KiB-1 MiB, reused across blocks). */
let zstdCompressContext: ZstdBinding.CCtx | null = null;
let zstdDecompressContext: ZstdBinding.DCtx | null = null;
/**
 * zstd-napi's binding, loaded on first use: its native module is built at install time, and a
 * package installed without install scripts (or whose build failed) must still load and serve
 * every other compression. Without it, ZSTD is IngestError NOT_SUPPORTED saying why.
 */
const zstd = onFirstUse((): typeof ZstdBinding => {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('zstd-napi/binding') as typeof ZstdBinding;
  } catch (e) {
    throw new IngestError('NOT_SUPPORTED', `ZSTD compression needs the zstd-napi package, which did not load: ${(e as Error).message}`);
  }
});

/** `varint32 size ‖ ZSTD frame` (RocksDB's layout for every format_version), or null. */
function zstdCompressForBlock(raw: Buffer): Buffer | null {
  if (raw.length >= 0x7fffffff) return null;
  const z = zstd();
  zstdCompressContext ??= new z.CCtx();
  const headerBytes = varintLength(raw.length);
  const out = Buffer.allocUnsafe(headerBytes + z.compressBound(raw.length));
  writeVarint(out, 0, raw.length);
  const frameBytes = zstdCompressContext.compress(out.subarray(headerBytes), raw, ZSTD_LEVEL);
  const total = headerBytes + frameBytes;
  if (!savesEnough(total, raw.length)) return null;
  return out.subarray(0, total);
}

/** A raw Snappy block (Snappy carries its own length), or null. */
function snappyCompressForBlock(raw: Buffer): Buffer | null {
  if (raw.length >= 0x7fffffff) return null;
  const out = snappyNapi().compressSync(raw);
  return savesEnough(out.length, raw.length) ? out : null;
}

/**
 * Compresses `raw` with LZ4 in RocksDB framing; returns null when the result does not save
 * more than 1/8 of the input (the caller then stores the block raw). `scratch`: see compressForBlock.
 */
export function lz4CompressForBlock(raw: Buffer, formatVersion: number, scratch?: Buffer): Buffer | null {
  if (raw.length >= 0x7fffffff) return null;
  if (nativeBlockCodec !== null) return nativeLz4CompressForBlock(nativeBlockCodec, raw, formatVersion, scratch);
  const framed = lz4Napi().compressSync(raw); // u32le size ‖ raw LZ4 block
  const body = framed.length - 4;
  const headerBytes = formatVersion >= 2 ? varintLength(raw.length) : 8;
  const total = headerBytes + body;
  if (!savesEnough(total, raw.length)) return null;
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
 * lz4CompressForBlock through the native encoder (native/lz4Encode.c): it encodes straight
 * into the output after the size header, bounded so that a result that does not save enough
 * is abandoned as soon as it is too long. The output is `scratch` when it is large enough: a
 * Buffer per block cost a merge worker about 30 ms per 500,000 rows in Buffer-pool refills.
 */
function nativeLz4CompressForBlock(codec: NativeBlockCodec, raw: Buffer, formatVersion: number, scratch?: Buffer): Buffer | null {
  const headerBytes = formatVersion >= 2 ? varintLength(raw.length) : 8;
  // savesEnough(total, raw.length) ⇔ total <= raw.length - floor(raw.length / 8) - 1.
  const maxTotal = raw.length - Math.floor(raw.length / 8) - 1;
  if (maxTotal <= headerBytes) return null;
  const out = scratch !== undefined && scratch.length >= maxTotal ? scratch : Buffer.allocUnsafe(maxTotal);
  const body = codec.lz4EncodeInto(raw, 0, raw.length, out, headerBytes, maxTotal);
  if (body === 0) return null;
  if (formatVersion >= 2) {
    writeVarint(out, 0, raw.length);
  } else {
    out.writeBigUInt64LE(BigInt(raw.length), 0);
  }
  return out.subarray(0, headerBytes + body);
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
    out = lz4Napi().uncompressSync(frameStart === 0 && end === buf.length ? buf : buf.subarray(frameStart, end));
  } catch (e) {
    throw new RangeError(`LZ4 payload does not decode: ${(e as Error).message}`);
  }
  if (out.length !== size) throw new RangeError(`LZ4 block decoded to ${out.length} bytes, header says ${size}`);
  return out;
}

/**
 * Largest expansion of each codec: a size header above `payload bytes * factor + slack` cannot be
 * right. Snappy: a 3-byte copy emits at most 64 bytes. LZ4: 255 bytes per length byte. Zlib:
 * deflate's limit is about 1032:1.
 * ZSTD has none worth stating (an RLE block of 128 KiB takes 4 bytes), so only the caller's
 * limit applies to it.
 */
const SNAPPY_MAX_EXPANSION = 22;
const LZ4_MAX_EXPANSION = 255;
const ZLIB_MAX_EXPANSION = 1032;
const EXPANSION_SLACK_BYTES = 64;

/**
 * Decodes a Snappy, Zlib or ZSTD(NotFinal) block payload (format_version >= 2) into a new
 * Buffer of exactly the size its header states, at most `maxDecodedBytes`. Throws RangeError
 * when it does not decode (see the contract). LZ4 has its own in-place path (below).
 */
export function decompressBlock(type: CompressionType, payload: Buffer, maxDecodedBytes: number): Buffer {
  switch (type) {
    case CompressionType.Snappy:
      return snappyDecompressBlock(payload, maxDecodedBytes);
    case CompressionType.Zlib:
      return zlibDecompressBlock(payload, maxDecodedBytes);
    case CompressionType.ZSTD:
    case CompressionType.ZSTDNotFinal:
      return zstdDecompressBlock(payload, maxDecodedBytes);
    case CompressionType.LZ4:
    case CompressionType.LZ4HC:
      readSizeHeader('LZ4', payload, maxDecodedBytes, LZ4_MAX_EXPANSION);
      return lz4DecompressBlock(payload, 2);
    default:
      throw new RangeError(`compression ${compressionName(type)} is not decoded here`);
  }
}

/** The varint32 size header at the start of `payload`, checked; sets decoded.offset past it. */
function readSizeHeader(codec: string, payload: Buffer, maxDecodedBytes: number, maxExpansion: number): number {
  let size: number;
  try {
    size = readVarint32(payload, 0);
  } catch (e) {
    throw new RangeError(`bad ${codec} size header: ${(e as Error).message}`);
  }
  const bodyBytes = payload.length - decoded.offset;
  if (size > maxDecodedBytes || size > bodyBytes * maxExpansion + EXPANSION_SLACK_BYTES) {
    throw new RangeError(`${codec} size header ${size} is implausible for ${bodyBytes} payload bytes`);
  }
  return size;
}

function snappyDecompressBlock(payload: Buffer, maxDecodedBytes: number): Buffer {
  // Snappy's own header is the same varint32; check it before the decoder allocates by it.
  readSizeHeader('Snappy', payload, maxDecodedBytes, SNAPPY_MAX_EXPANSION);
  let out: string | Buffer;
  try {
    out = snappyNapi().uncompressSync(payload, { asBuffer: true });
  } catch (e) {
    throw new RangeError(`Snappy payload does not decode: ${(e as Error).message}`);
  }
  if (typeof out === 'string') throw new RangeError('Snappy decoder returned a string');
  return out;
}

function zlibDecompressBlock(payload: Buffer, maxDecodedBytes: number): Buffer {
  const size = readSizeHeader('Zlib', payload, maxDecodedBytes, ZLIB_MAX_EXPANSION);
  const body = payload.subarray(decoded.offset);
  let out: Buffer;
  try {
    // One byte of room past the stated size, so an over-long stream shows as a size mismatch.
    out = inflateRawSync(body, { maxOutputLength: size + 1 });
  } catch (e) {
    throw new RangeError(`Zlib payload does not decode: ${(e as Error).message}`);
  }
  if (out.length !== size) throw new RangeError(`Zlib block decoded to ${out.length} bytes, header says ${size}`);
  return out;
}

function zstdDecompressBlock(payload: Buffer, maxDecodedBytes: number): Buffer {
  const size = readSizeHeader('ZSTD', payload, maxDecodedBytes, Number.MAX_SAFE_INTEGER);
  const body = payload.subarray(decoded.offset);
  zstdDecompressContext ??= new (zstd().DCtx)();
  const out = Buffer.allocUnsafe(size);
  let written: number;
  try {
    // Into exactly `size` bytes: a frame that decodes to more fails (dstSize_tooSmall).
    written = zstdDecompressContext.decompress(out, body);
  } catch (e) {
    throw new RangeError(`ZSTD payload does not decode: ${(e as Error).message}`);
  }
  if (written !== size) throw new RangeError(`ZSTD block decoded to ${written} bytes, header says ${size}`);
  return out;
}
