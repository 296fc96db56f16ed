/**
 * The on-disk layout of RocksDB 7.8's built-in Bloom filters, shared by the writer
 * (src/sstwriter/filterBuilder.ts) and the reader (src/sstable/reader/filterReader.ts): the
 * metadata markers, the sizing rules, and how a key's hash sets and probes bits.
 *
 * Layout of format_version < 5, legacy Bloom (hash32 with seed 0xBC9F1D34):
 *
 *   lines * 64 bytes of bits ‖ u8 numProbes (1..30) ‖ u32le lines
 *
 *   wholeBits = floor((millibits + 500) / 1000); numProbes = clamp(floor(wholeBits * 0.69), 1, 30)
 *   lines = ceil(min(n * wholeBits, 0xFFFF0000) / 512), made odd by adding 1 if even.
 *   Key hash h selects line h mod lines; probe i sets bit (h + i * rotr32(h, 17)) mod 512 of it.
 *
 * Layout of format_version 5, FastLocalBloom (64-bit XXPH3, h1 = low 32 bits, h2 = high):
 *
 *   len bytes of bits ‖ 0xFF ‖ 0x00 ‖ u8 (numProbes | (log2(64) - 6) << 5) ‖ 0x00 0x00
 *
 *   len = round_up_64(ceil(n * millibits / 8000)), capped at 0xFFFFFFC0; numProbes from a
 *   millibits table. h1 selects 64-byte line floor(h1 * (len / 64) / 2^32); probe i sets bit
 *   (h2 * 0x9E3779B9^i mod 2^32) >> 23 of it.
 *
 * In both, bit b of a line is bit (b mod 8) of the line's byte b / 8. The line size of legacy
 * filters is the cache line of the CPU RocksDB was compiled for (64 bytes on x86-64); writers
 * use 64, readers derive it from the length and line count.
 */
import { IngestError } from '../util/errors';

/** Value of the `rocksdb.filter.policy` property for the built-in Bloom filters. */
export const BLOOM_FILTER_POLICY_NAME = 'bloomfilter';

/** Bytes of filter metadata at the end of every built-in filter. */
export const FILTER_METADATA_BYTES = 5;
/** Line size both builders use. */
export const CACHE_LINE_BYTES = 64;
export const LOG2_CACHE_LINE_BYTES = 6;

/** First metadata byte of the "new Bloom" family (-1 as int8); the next byte picks the variant. */
export const NEW_BLOOM_MARKER = 0xff;
/** First metadata byte of Ribbon filters (-2 as int8). */
export const RIBBON_MARKER = 0xfe;
/** Second metadata byte of a FastLocalBloom filter. */
export const FAST_LOCAL_BLOOM_SUB_IMPL = 0;

/** Legacy Bloom's total bits cap, kept for compatibility with 32-bit bit arithmetic. */
const LEGACY_MAX_TOTAL_BITS = 0xffff0000;
/** FastLocalBloom's largest length before rounding. */
const FAST_LOCAL_BLOOM_MAX_BYTES = 0xffffffc0;

/**
 * RocksDB's millibits per key for a configured bits per key, or 0 for "no filter".
 * NaN is rejected (RocksDB would silently turn it into 100).
 */
export function millibitsPerKey(bitsPerKey: number): number {
  if (Number.isNaN(bitsPerKey)) throw new IngestError('INVALID_ARGUMENT', 'Bloom filter bits per key is NaN');
  if (bitsPerKey < 0.5) return 0;
  const sanitized = bitsPerKey < 1 ? 1 : bitsPerKey < 100 ? bitsPerKey : 100;
  // The +0.500001 nudge makes values given with three decimals round as written on every platform.
  return Math.floor(sanitized * 1000 + 0.500001);
}

/** Whole bits per key used by the legacy Bloom filter. */
export function legacyWholeBitsPerKey(millibits: number): number {
  return Math.floor((millibits + 500) / 1000);
}

/** Legacy Bloom probes: about ln(2) * bits per key, in [1, 30]. 6 for 10 bits, 11 for 16. */
export function legacyNumProbes(wholeBitsPerKey: number): number {
  const probes = Math.floor(wholeBitsPerKey * 0.69);
  return probes < 1 ? 1 : probes > 30 ? 30 : probes;
}

/** Number of 64-byte lines of a legacy Bloom filter over `numEntries` hashes (always odd). */
export function legacyNumLines(numEntries: number, wholeBitsPerKey: number): number {
  const totalBits = Math.min(numEntries * wholeBitsPerKey, LEGACY_MAX_TOTAL_BITS);
  const lineBits = CACHE_LINE_BYTES * 8;
  const lines = Math.ceil(totalBits / lineBits);
  // An odd count makes `h mod lines` depend on more bits of h.
  return lines % 2 === 0 ? lines + 1 : lines;
}

/**
 * FastLocalBloom probes for a millibits-per-key budget: the count that minimises the false
 * positive rate of 512-bit lines at that density (RocksDB's table; 6 for 10 bits/key).
 */
export function fastLocalBloomNumProbes(millibits: number): number {
  if (millibits <= 2080) return 1;
  if (millibits <= 3580) return 2;
  if (millibits <= 5100) return 3;
  if (millibits <= 6640) return 4;
  if (millibits <= 8300) return 5;
  if (millibits <= 10070) return 6;
  if (millibits <= 11720) return 7;
  if (millibits <= 14001) return 8;
  if (millibits <= 16050) return 9;
  if (millibits <= 18300) return 10;
  if (millibits <= 22001) return 11;
  if (millibits <= 25501) return 12;
  if (millibits > 50000) return 24;
  return Math.floor((millibits - 1) / 2000) - 1;
}

/** Bytes of bits (metadata excluded) of a FastLocalBloom filter over `numEntries` hashes. */
export function fastLocalBloomLengthBytes(numEntries: number, millibits: number): number {
  const raw = Math.min(Math.floor((numEntries * millibits + 7999) / 8000), FAST_LOCAL_BLOOM_MAX_BYTES);
  return Math.ceil(raw / CACHE_LINE_BYTES) * CACHE_LINE_BYTES;
}

const TWO_POW_MINUS_32 = 1 / 4294967296;
/** Largest range whose product with any uint32 stays below 2^53. */
const FAST_RANGE_EXACT_MAX = 2 ** 21;

/** floor(hash * range / 2^32) for uint32 hash and range, exactly ("fastrange"). */
export function fastRange32(hash: number, range: number): number {
  // A product below 2^53 is exact in a double, and scaling by 2^-32 is exact too. This covers
  // every filter up to 2^21 lines (128 MiB), i.e. all but the largest, with one multiply.
  if (range <= FAST_RANGE_EXACT_MAX) return Math.floor((hash >>> 0) * range * TWO_POW_MINUS_32);
  // hash = hi16 * 2^16 + lo16; both partial products stay below 2^48, exact in a double.
  const partial = (hash >>> 16) * range + Math.floor(((hash & 0xffff) * range) / 65536);
  return Math.floor(partial / 65536);
}

// ---------------------------------------------------------------------------------------------
// Bit layouts (shared with the reader)
// ---------------------------------------------------------------------------------------------

/** Sets the legacy Bloom bits of hash `h` in `bits` (lines of 2^log2LineBytes bytes). */
export function legacyAddHash(h: number, numLines: number, numProbes: number, bits: Uint8Array, log2LineBytes: number): void {
  const lineStart = (h % numLines) * 2 ** log2LineBytes;
  const bitMask = log2LineBytes + 3 >= 32 ? 0xffffffff : (1 << (log2LineBytes + 3)) - 1;
  const delta = ((h >>> 17) | (h << 15)) >>> 0;
  for (let i = 0; i < numProbes; i++) {
    const bit = (h & bitMask) >>> 0;
    bits[lineStart + (bit >>> 3)] |= 1 << (bit & 7);
    h = (h + delta) >>> 0;
  }
}

/** True if every legacy Bloom bit of hash `h` is set. */
export function legacyHashMayMatch(h: number, numLines: number, numProbes: number, bits: Uint8Array, log2LineBytes: number): boolean {
  const lineStart = (h % numLines) * 2 ** log2LineBytes;
  const bitMask = log2LineBytes + 3 >= 32 ? 0xffffffff : (1 << (log2LineBytes + 3)) - 1;
  const delta = ((h >>> 17) | (h << 15)) >>> 0;
  for (let i = 0; i < numProbes; i++) {
    const bit = (h & bitMask) >>> 0;
    if ((bits[lineStart + (bit >>> 3)] & (1 << (bit & 7))) === 0) return false;
    h = (h + delta) >>> 0;
  }
  return true;
}

/** Sets the FastLocalBloom bits of hash (h1, h2) in the first `lengthBytes` bytes of `bits`. */
export function fastLocalBloomAddHash(h1: number, h2: number, lengthBytes: number, numProbes: number, bits: Uint8Array): void {
  const lineStart = fastRange32(h1, Math.floor(lengthBytes / CACHE_LINE_BYTES)) * CACHE_LINE_BYTES;
  let h = h2 | 0;
  for (let i = 0; i < numProbes; i++) {
    const bit = h >>> 23; // the top 9 bits address the 512 bits of the line
    bits[lineStart + (bit >>> 3)] |= 1 << (bit & 7);
    h = Math.imul(h, 0x9e3779b9);
  }
}

/** True if every FastLocalBloom bit of hash (h1, h2) is set. */
export function fastLocalBloomHashMayMatch(h1: number, h2: number, lengthBytes: number, numProbes: number, bits: Uint8Array): boolean {
  const lineStart = fastRange32(h1, Math.floor(lengthBytes / CACHE_LINE_BYTES)) * CACHE_LINE_BYTES;
  let h = h2 | 0;
  for (let i = 0; i < numProbes; i++) {
    const bit = h >>> 23;
    if ((bits[lineStart + (bit >>> 3)] & (1 << (bit & 7))) === 0) return false;
    h = Math.imul(h, 0x9e3779b9);
  }
  return true;
}
