/**
 * The table format's native functions (native/sstableExports.c, in the addon that
 * src/util/nativeAddon.ts loads), or null when the addon is not built or is switched off.
 *
 * Why native code: on a block-cache miss, reading, checksumming and LZ4-decoding one 4 KiB block
 * through JavaScript packages cost about 9.6 µs, most of it per-call overhead (lz4-napi alone
 * about 5 µs, against about 0.4 µs for the same decode here). `readBlock` does the read, the
 * XXH3 check and the decode (LZ4, or Snappy: RocksDB's default compression) in one call.
 * Everything it does also exists in JavaScript (fs.readSync, @node-rs/xxhash or hash-wasm,
 * lz4-napi, snappy), which the callers use when `nativeBlockCodec` is null, so a machine without
 * a C compiler still works, only slower. Zlib and ZSTD blocks are always decoded in JavaScript
 * (readBlock reports them as UNSUPPORTED_COMPRESSION). Tests run both paths.
 *
 * Contract: see native/sstableExports.c. Errors it throws carry a `code` (NativeCodecErrorCode);
 * the caller (src/sstable/reader/blockFetcher.ts) wraps them into CorruptionError / IngestError
 * with the file name and block offset. The import's native functions are src/ingest/nativeImport.ts,
 * the generic ones (pages, writeback, CPU time) src/util/nativeUtil.ts.
 *
 * Switches: SST_INGEST_NATIVE=0 in the environment disables the codec (src/util/nativeAddon.ts).
 */
import { nativeFace } from '../util/nativeAddon';

export type NativeCodecErrorCode =
  'SHORT_READ' | 'IO' | 'CHECKSUM_MISMATCH' | 'LZ4_MALFORMED' | 'SNAPPY_MALFORMED' | 'UNSUPPORTED_COMPRESSION' | 'INVALID_ARGUMENT';

export interface NativeCodecError extends Error {
  code: NativeCodecErrorCode;
  /** SHORT_READ: bytes the file lacks. */
  missingBytes?: number;
  /** CHECKSUM_MISMATCH: the trailer's value and the one computed. */
  stored?: number;
  computed?: number;
  /** UNSUPPORTED_COMPRESSION: the trailer's type byte. */
  compressionType?: number;
}

/** Checksum types readBlock verifies itself; other files stay on the JavaScript path. */
export const NATIVE_CHECKSUM_TYPES: ReadonlySet<number> = new Set([0 /* none */, 4 /* XXH3 */]);

export interface NativeBlockCodec {
  /**
   * Reads `blockBytes` of contents plus the 5-byte trailer at `position` of `fd`, verifies the
   * trailer checksum when `verify` (checksumType 0 = none or 4 = XXH3 only), and returns the
   * contents, LZ4- or Snappy-decoded if the trailer says so, in a new Buffer of their own. A
   * decoded size above `maxDecodedBytes` is LZ4_MALFORMED / SNAPPY_MALFORMED; another
   * compression type is UNSUPPORTED_COMPRESSION (after the checksum was verified). `source` may
   * instead be bytes already holding the block and its trailer at `position` (a readahead buffer).
   */
  readBlock(
    source: number | Uint8Array,
    position: number,
    blockBytes: number,
    checksumType: number,
    verify: boolean,
    maxDecodedBytes: number,
  ): Buffer;
  /**
   * The same, decoding into dest[destOffset, dest.length) instead of a new Buffer: returns the
   * decoded length, or minus the length needed when it does not fit (dest is then untouched).
   */
  readBlock(
    source: number | Uint8Array,
    position: number,
    blockBytes: number,
    checksumType: number,
    verify: boolean,
    maxDecodedBytes: number,
    dest: Uint8Array,
    destOffset: number,
  ): number;
  /** Low 32 bits of XXH3-64 (seed 0) of data[start, end). */
  xxh3Low32(data: Uint8Array, start: number, end: number): number;
  /** Decodes the raw LZ4 block src[srcStart, srcEnd) into exactly all of dst, or throws LZ4_MALFORMED. */
  lz4DecodeInto(src: Uint8Array, srcStart: number, srcEnd: number, dst: Uint8Array): void;
  /**
   * Decodes the raw Snappy block src[srcStart, srcEnd) (its length preamble included) into
   * exactly all of dst, or throws SNAPPY_MALFORMED.
   */
  snappyDecodeInto(src: Uint8Array, srcStart: number, srcEnd: number, dst: Uint8Array): void;
  /**
   * Encodes src[srcStart, srcEnd) as a raw LZ4 block at dst[dstStart..]: its length, or 0 when it
   * does not fit in dst[dstStart, dstEnd).
   */
  lz4EncodeInto(src: Uint8Array, srcStart: number, srcEnd: number, dst: Uint8Array, dstStart: number, dstEnd: number): number;
  /** XXPH3-64 of data[start, end) as [lo, hi] uint32 halves (native/xxph3.c). */
  xxph3(data: Uint8Array, start: number, end: number): [number, number];
  /**
   * A block's SeekGE over its bytes (native/blockSearch.c): the first entry of `data` whose key
   * is >= target, under the order and value format `io` describes (layout: BlockSearchIo in
   * src/sstable/reader/nativeSearch.ts). Returns its offset with its raw key in keyOut and its
   * extent in io, -1 when every key is below the target, or -2 when it declines (a malformed
   * entry, a key longer than keyOut): the caller's JavaScript search then answers, or reports.
   */
  blockSeekGE(data: Uint8Array, target: Uint8Array, keyOut: Uint8Array, io: Float64Array): number;
  /** A FastLocalBloom probe of bits[0, lengthBytes) for key (hashed here with XXPH3-64). */
  bloomMayMatch(bits: Uint8Array, lengthBytes: number, numProbes: number, key: Uint8Array): boolean;
}

const loaded = nativeFace<NativeBlockCodec>({
  readBlock: true,
  xxh3Low32: true,
  lz4DecodeInto: true,
  snappyDecodeInto: true,
  lz4EncodeInto: true,
  xxph3: true,
  blockSeekGE: true,
  bloomMayMatch: true,
});

/** The native codec, or null (then every caller uses its JavaScript path). */
export const nativeBlockCodec: NativeBlockCodec | null = loaded.face;

/** Why the codec is or is not in use, for benchmarks and `--version`-style diagnostics. */
export const nativeBlockCodecStatus: string = loaded.status;

/**
 * True for an error the codec threw. Not `instanceof Error`: native code creates its errors in the
 * main context, which is another realm than a vm context such as Jest's.
 */
export function isNativeCodecError(e: unknown): e is NativeCodecError {
  if (typeof e !== 'object' || e === null) return false;
  const r = e as { code?: unknown; message?: unknown };
  return typeof r.code === 'string' && typeof r.message === 'string';
}
