/**
 * The native block codec (native/*.c, built by `npm ci` through scripts/build-native.js), or
 * null when it is not built or is switched off.
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
 * Contract: see native/blockcodec.c. Errors it throws carry a `code` (NativeCodecErrorCode);
 * the caller (src/sstable/reader/blockFetcher.ts) wraps them into CorruptionError / IngestError
 * with the file name and block offset.
 *
 * Switches: SST_INGEST_NATIVE=0 in the environment disables the codec (for comparisons and for
 * testing the fallback); the module is looked up as build/Release/blockcodec.node in the nearest
 * ancestor directory of this file that has one (src/sstable/ in tests, dist/src/sstable/ when built).
 */
import * as fs from 'fs';
import * as path from 'path';

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
   * compression type is UNSUPPORTED_COMPRESSION (after the checksum was verified).
   */
  readBlock(fd: number, position: number, blockBytes: number, checksumType: number, verify: boolean, maxDecodedBytes: number): Buffer;
  /**
   * The same, decoding into dest[destOffset, dest.length) instead of a new Buffer: returns the
   * decoded length, or minus the length needed when it does not fit (dest is then untouched).
   */
  readBlock(
    fd: number,
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
  /** madvise(MADV_HUGEPAGE) over the view's 2 MiB-aligned interior; false when not possible. */
  adviseHugePages(view: ArrayBufferView): boolean;
  /**
   * madvise(MADV_DONTNEED) over the whole pages inside the view: their memory goes back to the
   * kernel now (the view stays valid and reads zeros there). For a buffer about to be dropped.
   */
  releasePages(view: ArrayBufferView): boolean;
  /**
   * Starts the writeback of fd's bytes [offset, offset + length) without waiting for it (Linux
   * sync_file_range(SYNC_FILE_RANGE_WRITE)); false where refused or unavailable. A hint: only
   * fsync makes data durable.
   */
  startWriteback(fd: number, offset: number, length: number): boolean;
  /** Punches fd's bytes [offset, offset + length) out of the file, size kept (Linux fallocate PUNCH_HOLE); false where refused. */
  punchHole(fd: number, offset: number, length: number): boolean;
  /**
   * CPU seconds of the calling thread alone (CLOCK_THREAD_CPUTIME_ID), -1 where unavailable:
   * unlike process.cpuUsage(), V8's background compiler and GC threads are not counted.
   */
  threadCpuSeconds(): number;
  /**
   * SortBuffer.sort() natively (native/rowSort.c): sets order[0, count) to the entries in key
   * order, equal keys in entry order, using the scratch columns given and nothing else.
   */
  sortEntries(
    arena: Uint8Array,
    offset: Uint32Array,
    keyLength: Uint32Array,
    count: number,
    order: Uint32Array,
    high: Uint32Array,
    low: Uint32Array,
    lengthClass: Uint8Array,
    orderScratch: Uint32Array,
    highScratch: Uint32Array,
    lowScratch: Uint32Array,
    classScratch: Uint8Array,
  ): void;
  /**
   * Writes run-file entries order[state[0]], ... at out[state[1]..] (src/ingest/sort/runFile.ts),
   * stopping before `to`, before an entry that would not end by outEnd (with the longest header)
   * and before one that would start at or past stopAtFill; leaves the next index in state[0] and
   * the fill in state[1].
   */
  gatherRun(
    arena: Uint8Array,
    order: Uint32Array,
    offset: Uint32Array,
    keyLength: Uint32Array,
    valueLength: Uint32Array,
    source: Uint32Array,
    line: Float64Array,
    to: number,
    out: Uint8Array,
    outEnd: number,
    stopAtFill: number,
    state: Uint32Array,
  ): void;
  /**
   * The CSV fast path for a one-column key and raw values (native/rowParse.c): from state[0] (the
   * input position; state[1] its line), takes every record of src[.., end) that starts before
   * stopAt, is simple (no quote, not empty, not a comment, fieldCount fields, a key that parses)
   * and fits the sort buffer, encoding each at arena[state[3]..] as entry state[2]; leaves the
   * four where it stopped and returns the records taken. layout: [delimiter, quote, comment,
   * fieldCount, keyField, keyType (0 bytes, 1 int64, 2 uint64), valueDelimiter, fixedBytes,
   * source]; limits: [arenaStart, memoryLimitBytes, bytesPerEntry].
   */
  parseRows(
    src: Uint8Array,
    end: number,
    stopAt: number,
    layout: Int32Array,
    valueFields: Int32Array,
    arena: Uint8Array,
    limits: Float64Array,
    offset: Uint32Array,
    keyLength: Uint32Array,
    valueLength: Uint32Array,
    source: Uint32Array,
    line: Float64Array,
    state: Float64Array,
  ): number;
  /** Bytes of a merge context for `runs` runs (native/mergeBlocks.c; driven by src/ingest/sort/nativeMerge.ts). */
  mergeContextBytes(runs: number): number;
  /**
   * Resets `ctx` (8-byte aligned, mergeContextBytes(runs) long) for a merge of `runs` runs into
   * data blocks cut by these rules, hashing user keys for a FastLocalBloom filter when `hashKeys`,
   * over keys in [low, high) (null: unbounded). low / high must stay alive while ctx is used.
   */
  mergeInit(
    ctx: Uint8Array,
    runs: number,
    blockSizeBytes: number,
    deviationLimitBytes: number,
    restartInterval: number,
    hashKeys: boolean,
    targetFileSizeBytes: number,
    low: Uint8Array | null,
    high: Uint8Array | null,
  ): void;
  /** Lends run i's read buffer; its valid bytes are [pos, limit). It must stay alive until replaced. */
  mergeSetReader(ctx: Uint8Array, i: number, buf: Uint8Array, pos: number, limit: number, eof: boolean): void;
  /** Lends the outputs: the block, its restart offsets, the key hashes, three internal-key slots (keys / 3 each). */
  mergeSetOutput(
    ctx: Uint8Array,
    block: Uint8Array,
    restarts: Uint32Array,
    hashLo: Uint32Array,
    hashHi: Uint32Array,
    keys: Uint8Array,
  ): void;
  /** Runs the merge until it must stop; returns why (MergeStop in src/ingest/sort/nativeMerge.ts), details in io. */
  mergeBlocks(ctx: Uint8Array, io: Float64Array): number;
  /** XXPH3-64 of data[start, end) as [lo, hi] uint32 halves (native/xxph3.c). */
  xxph3(data: Uint8Array, start: number, end: number): [number, number];
}

const MODULE_RELATIVE_PATH = path.join('build', 'Release', 'blockcodec.node');
/** How many ancestor directories to look through: src/sstable → root is 2, dist/src/sstable → 3. */
const MAX_ANCESTORS_SEARCHED = 4;

function findModule(): string | null {
  let dir = __dirname;
  for (let i = 0; i <= MAX_ANCESTORS_SEARCHED; i++) {
    const candidate = path.join(dir, MODULE_RELATIVE_PATH);
    if (fs.existsSync(candidate)) return candidate;
    dir = path.dirname(dir);
  }
  return null;
}

function isNativeBlockCodec(m: unknown): m is NativeBlockCodec {
  if (typeof m !== 'object' || m === null) return false;
  const r = m as Record<string, unknown>;
  return (
    typeof r.readBlock === 'function' &&
    typeof r.xxh3Low32 === 'function' &&
    typeof r.lz4DecodeInto === 'function' &&
    typeof r.snappyDecodeInto === 'function' &&
    typeof r.lz4EncodeInto === 'function' &&
    typeof r.adviseHugePages === 'function' &&
    typeof r.releasePages === 'function' &&
    typeof r.startWriteback === 'function' &&
    typeof r.threadCpuSeconds === 'function' &&
    typeof r.sortEntries === 'function' &&
    typeof r.gatherRun === 'function' &&
    typeof r.mergeBlocks === 'function' &&
    typeof r.punchHole === 'function' &&
    typeof r.xxph3 === 'function'
  );
}

function load(): { codec: NativeBlockCodec | null; reason: string } {
  if (process.env.SST_INGEST_NATIVE === '0') return { codec: null, reason: 'disabled by SST_INGEST_NATIVE=0' };
  const file = findModule();
  if (file === null) return { codec: null, reason: `${MODULE_RELATIVE_PATH} not built (npm ci builds it with node-gyp)` };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const m: unknown = require(file);
    if (!isNativeBlockCodec(m)) return { codec: null, reason: `${file} does not export the block codec` };
    return { codec: m, reason: `loaded ${file}` };
  } catch (e) {
    return { codec: null, reason: `cannot load ${file}: ${(e as Error).message}` };
  }
}

const loaded = load();

/** The native codec, or null (then every caller uses its JavaScript path). */
export const nativeBlockCodec: NativeBlockCodec | null = loaded.codec;

/** Why the codec is or is not in use, for benchmarks and `--version`-style diagnostics. */
export const nativeBlockCodecStatus: string = loaded.reason;

/**
 * True for an error the codec threw. Not `instanceof Error`: native code creates its errors in the
 * main context, which is another realm than a vm context such as Jest's.
 */
export function isNativeCodecError(e: unknown): e is NativeCodecError {
  if (typeof e !== 'object' || e === null) return false;
  const r = e as { code?: unknown; message?: unknown };
  return typeof r.code === 'string' && typeof r.message === 'string';
}
