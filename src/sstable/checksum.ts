/**
 * Block checksums: every block is followed by a 5-byte trailer, `u8 compression type ‖ u32le
 * checksum`, and the checksum covers the stored block contents plus the type byte.
 *
 * The footer names the algorithm (`ChecksumType`). kCRC32c is masked CRC32C over contents+type;
 * kxxHash / kxxHash64 are XXH32 / low 32 bits of XXH64 (seed 0) over contents+type; kXXH3
 * (RocksDB 7.8's default) is low32(XXH3_64(contents)) XOR (type * 0x6b9083d9), i.e. the type
 * byte is folded in arithmetically rather than hashed. kNoChecksum stores 0.
 *
 * Hashing is done by native or WebAssembly code because checksums sit on every block read and
 * write. XXH3 goes through the project's native block codec when it is built
 * (src/sstable/nativeBlockCodec.ts: about 0.4 µs per 4 KiB block, call included), otherwise through
 * hash-wasm (about 1 µs; @node-rs/xxhash's napi call returns a BigInt and costs about 2.5 µs).
 * hash-wasm instantiates its module asynchronously, so until `checksumsReady` resolves (a few
 * event-loop turns after this module loads) that path falls back to @node-rs/xxhash, which
 * computes the same values.
 */
import { crc32c } from '../util/crc32c';
import type { IHasher } from 'hash-wasm';
import { nativeBlockCodec } from './nativeBlockCodec';
import { onFirstUse } from '../util/onFirstUse';

/** @node-rs/xxhash, loaded on first use: only xxHash/xxHash64 files and the XXH3 fallback need it. */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const xxhash = onFirstUse(() => require('@node-rs/xxhash') as typeof import('@node-rs/xxhash'));

export enum ChecksumType {
  None = 0,
  CRC32c = 1,
  xxHash = 2,
  xxHash64 = 3,
  XXH3 = 4,
}

export const BLOCK_TRAILER_BYTES = 5;
const CRC_MASK_DELTA = 0xa282ead8;

/** hash-wasm's XXH3-64 (seed 0) once instantiated, else null (see the top of this file). */
let wasmXxh3: IHasher | null = null;
/**
 * Resolves when XXH3 runs on WebAssembly, at once when the native codec computes it (hash-wasm
 * is then never loaded); never rejects (the napi fallback stays in use).
 */
export const checksumsReady: Promise<void> =
  nativeBlockCodec !== null
    ? Promise.resolve()
    : // eslint-disable-next-line @typescript-eslint/no-require-imports
      (require('hash-wasm') as typeof import('hash-wasm')).createXXHash3().then(
        (hasher) => {
          wasmXxh3 = hasher;
        },
        () => undefined,
      );

/** Low 32 bits of XXH3-64 (seed 0) of `data`. */
function xxh3Low32(data: Buffer): number {
  if (nativeBlockCodec !== null) return nativeBlockCodec.xxh3Low32(data, 0, data.length);
  if (wasmXxh3 === null) return Number(BigInt.asUintN(32, xxhash().xxh3.xxh64(data)));
  const digest = wasmXxh3.init().update(data).digest('binary'); // 8 bytes, big-endian
  return ((digest[4] << 24) | (digest[5] << 16) | (digest[6] << 8) | digest[7]) >>> 0;
}

export function checksumTypeName(t: number): string {
  return ['none', 'crc32c', 'xxhash', 'xxhash64', 'xxh3'][t] ?? `unknown(${t})`;
}

export function parseChecksumType(name: string): ChecksumType {
  switch (name.toLowerCase()) {
    case 'none':
      return ChecksumType.None;
    case 'crc32c':
      return ChecksumType.CRC32c;
    case 'xxhash':
    case 'xxhash32':
      return ChecksumType.xxHash;
    case 'xxhash64':
      return ChecksumType.xxHash64;
    case 'xxh3':
      return ChecksumType.XXH3;
    default:
      throw new RangeError(`unknown checksum type "${name}" (expected none, crc32c, xxhash, xxhash64 or xxh3)`);
  }
}

/** LevelDB/RocksDB CRC masking: rotate right 15 bits and add a constant. */
export function maskCrc(crc: number): number {
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + CRC_MASK_DELTA) >>> 0;
}
export function unmaskCrc(masked: number): number {
  const rot = (masked - CRC_MASK_DELTA) >>> 0;
  return ((rot >>> 17) | (rot << 15)) >>> 0;
}

/**
 * Computes the trailer checksum of `data[start, end)` followed by `typeByte`.
 * `data[end]` must be the type byte for the CRC and xxHash variants (they hash it in place),
 * which is how blocks sit on disk and in the writer's output buffer.
 */
export function computeBlockChecksum(type: number, data: Buffer, start: number, end: number, typeByte: number): number {
  switch (type) {
    case ChecksumType.None:
      return 0;
    case ChecksumType.CRC32c:
      return maskCrc(crc32c(withType(data, start, end, typeByte)));
    case ChecksumType.xxHash:
      return xxhash().xxh32(withType(data, start, end, typeByte), 0) >>> 0;
    case ChecksumType.xxHash64:
      return Number(BigInt.asUintN(32, xxhash().xxh64(withType(data, start, end, typeByte), BigInt(0))));
    case ChecksumType.XXH3: {
      const h = xxh3Low32(data.subarray(start, end));
      return (h ^ Math.imul(typeByte, 0x6b9083d9)) >>> 0;
    }
    default:
      throw new RangeError(`unsupported checksum type ${type}`);
  }
}

function withType(data: Buffer, start: number, end: number, typeByte: number): Buffer {
  if (end < data.length && data[end] === typeByte) return data.subarray(start, end + 1);
  const b = Buffer.allocUnsafe(end - start + 1);
  data.copy(b, 0, start, end);
  b[end - start] = typeByte;
  return b;
}
