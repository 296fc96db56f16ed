/**
 * Full-filter builders for RocksDB 7.8's built-in Bloom filter policy (`NewBloomFilterPolicy`),
 * plus the bit layouts that `engine/table/filterReader.ts` probes with.
 *
 * Contract: `createFilterBuilder(formatVersion, bitsPerKey)` returns a builder that takes the
 * user keys of a table's point entries in file order and produces the contents of the
 * `fullfilter.rocksdb.BuiltinBloomFilter` block (without the 5-byte block trailer, which the
 * table writer adds; filter blocks are never compressed). The bytes are identical to what
 * RocksDB 7.8 writes for the same keys and bits per key. Each key is hashed as it is added and
 * only the hash is kept; a hash equal to the previous one is dropped (so the versions of one user
 * key count once; the number kept is `rocksdb.num.filter_entries`). `finish()` does not clear
 * the builder; `reset()` does.
 *
 * Memory bound: at most `maxEntries` hashes (default FILTER_MAX_ENTRIES = 2^26), i.e. at most
 * 512 MiB of hashes for FastLocalBloom (8 bytes each) or 256 MiB for legacy Bloom (4 bytes), and
 * a filter of at most 2^26 * 100 / 8 bytes (~800 MiB at the 100 bits/key ceiling, ~80 MiB at
 * 10 bits/key). One more key is an INVALID_ARGUMENT error: the table writer must cut files
 * before that. Hash storage grows by doubling from 1024 entries (a transient old+new copy
 * while it grows).
 *
 * Bits per key (a double) is sanitised as RocksDB does: < 0.5 means no filter, [0.5, 1) becomes
 * 1, >= 100 becomes 100; then millibits = floor(bits * 1000 + 0.500001).
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
import { LEGACY_BLOOM_HASH_SEED, hash32, xxph3, xxph3Result } from './hash';

/** Value of the `rocksdb.filter.policy` property for the built-in Bloom filters. */
export const BLOOM_FILTER_POLICY_NAME = 'bloomfilter';

/** Bytes of filter metadata at the end of every built-in filter. */
export const FILTER_METADATA_BYTES = 5;
/** Line size both builders use. */
export const CACHE_LINE_BYTES = 64;
export const LOG2_CACHE_LINE_BYTES = 6;
/** Default bound on hashes held by one builder; see the module comment. */
export const FILTER_MAX_ENTRIES = 1 << 26;

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
const INITIAL_CAPACITY_ENTRIES = 1024;

export interface FilterBuilder {
  /** Adds a user key; keys come in file order. Adjacent duplicate hashes are dropped. */
  addKey(userKey: Uint8Array): void;
  /** Hashes kept so far (`rocksdb.num.filter_entries`). */
  numEntries(): number;
  /** The filter block contents including its metadata; null when no key was added. */
  finish(): Buffer | null;
  /** Forgets every key. */
  reset(): void;
}

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
  const partial = (hash >>> 16) * range + Math.floor((hash & 0xffff) * range / 65536);
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

// ---------------------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------------------

function tooManyKeys(maxEntries: number): IngestError {
  return new IngestError(
    'INVALID_ARGUMENT',
    `a filter block holds at most ${maxEntries} distinct keys; cut the table into smaller files`,
  );
}

function initialCapacity(maxEntries: number): number {
  return Math.min(INITIAL_CAPACITY_ENTRIES, maxEntries);
}

/** `a` with twice the capacity (at most maxEntries); throws when `a` is already at the bound. */
function grow(a: Uint32Array, maxEntries: number): Uint32Array {
  if (a.length >= maxEntries) throw tooManyKeys(maxEntries);
  const next = new Uint32Array(Math.min(a.length * 2, maxEntries));
  next.set(a);
  return next;
}

/** format_version < 5: one 32-bit hash per key, cache-line-local Bloom with odd line count. */
class LegacyBloomBuilder implements FilterBuilder {
  private hashes: Uint32Array;
  private count = 0;
  private readonly wholeBitsPerKey: number;
  private readonly numProbes: number;

  constructor(millibits: number, private readonly maxEntries: number) {
    this.hashes = new Uint32Array(initialCapacity(maxEntries));
    this.wholeBitsPerKey = legacyWholeBitsPerKey(millibits);
    this.numProbes = legacyNumProbes(this.wholeBitsPerKey);
  }

  addKey(userKey: Uint8Array): void {
    const h = hash32(userKey, 0, userKey.length, LEGACY_BLOOM_HASH_SEED);
    if (this.count > 0 && this.hashes[this.count - 1] === h) return;
    if (this.count === this.hashes.length) this.hashes = grow(this.hashes, this.maxEntries);
    this.hashes[this.count++] = h;
  }

  numEntries(): number {
    return this.count;
  }

  finish(): Buffer | null {
    if (this.count === 0) return null;
    const lines = legacyNumLines(this.count, this.wholeBitsPerKey);
    const lengthBytes = lines * CACHE_LINE_BYTES;
    const out = Buffer.alloc(lengthBytes + FILTER_METADATA_BYTES);
    for (let i = 0; i < this.count; i++) {
      legacyAddHash(this.hashes[i], lines, this.numProbes, out, LOG2_CACHE_LINE_BYTES);
    }
    out[lengthBytes] = this.numProbes;
    out.writeUInt32LE(lines, lengthBytes + 1);
    return out;
  }

  reset(): void {
    this.count = 0;
    // Give back memory a large table took; keep the small initial arrays.
    if (this.hashes.length > INITIAL_CAPACITY_ENTRIES) this.hashes = new Uint32Array(initialCapacity(this.maxEntries));
  }
}

/** format_version 5: one 64-bit XXPH3 hash per key (two uint32 arrays), FastLocalBloom. */
class FastLocalBloomBuilder implements FilterBuilder {
  private hashLo: Uint32Array;
  private hashHi: Uint32Array;
  private count = 0;
  private readonly numProbes: number;

  constructor(private readonly millibits: number, private readonly maxEntries: number) {
    this.hashLo = new Uint32Array(initialCapacity(maxEntries));
    this.hashHi = new Uint32Array(initialCapacity(maxEntries));
    this.numProbes = fastLocalBloomNumProbes(millibits);
  }

  addKey(userKey: Uint8Array): void {
    xxph3(userKey, 0, userKey.length);
    const lo = xxph3Result.lo;
    const hi = xxph3Result.hi;
    const last = this.count - 1;
    if (last >= 0 && this.hashLo[last] === lo && this.hashHi[last] === hi) return;
    if (this.count === this.hashLo.length) {
      this.hashLo = grow(this.hashLo, this.maxEntries);
      this.hashHi = grow(this.hashHi, this.maxEntries);
    }
    this.hashLo[this.count] = lo;
    this.hashHi[this.count] = hi;
    this.count++;
  }

  numEntries(): number {
    return this.count;
  }

  finish(): Buffer | null {
    if (this.count === 0) return null;
    const lengthBytes = fastLocalBloomLengthBytes(this.count, this.millibits);
    const out = Buffer.alloc(lengthBytes + FILTER_METADATA_BYTES);
    for (let i = 0; i < this.count; i++) {
      fastLocalBloomAddHash(this.hashLo[i], this.hashHi[i], lengthBytes, this.numProbes, out);
    }
    out[lengthBytes] = NEW_BLOOM_MARKER;
    out[lengthBytes + 1] = FAST_LOCAL_BLOOM_SUB_IMPL;
    out[lengthBytes + 2] = this.numProbes | ((LOG2_CACHE_LINE_BYTES - 6) << 5);
    // Bytes +3 and +4 are reserved and stay zero: a reader treats non-zero as "always maybe".
    return out;
  }

  reset(): void {
    this.count = 0;
    if (this.hashLo.length > INITIAL_CAPACITY_ENTRIES) {
      this.hashLo = new Uint32Array(initialCapacity(this.maxEntries));
      this.hashHi = new Uint32Array(initialCapacity(this.maxEntries));
    }
  }
}

/**
 * The builder RocksDB 7.8 would use: legacy Bloom below format_version 5, FastLocalBloom at 5.
 * Returns null when `bitsPerKey` < 0.5 (no filter). `maxEntries` lowers the memory bound.
 */
export function createFilterBuilder(
  formatVersion: number,
  bitsPerKey: number,
  maxEntries: number = FILTER_MAX_ENTRIES,
): FilterBuilder | null {
  if (!Number.isInteger(formatVersion) || formatVersion < 0 || formatVersion > 5) {
    throw new IngestError('INVALID_ARGUMENT', `format_version must be an integer in 0..5 for a filter, got ${formatVersion}`);
  }
  if (!Number.isInteger(maxEntries) || maxEntries < 1 || maxEntries > FILTER_MAX_ENTRIES) {
    throw new IngestError('INVALID_ARGUMENT', `filter maxEntries must be in 1..${FILTER_MAX_ENTRIES}, got ${maxEntries}`);
  }
  const millibits = millibitsPerKey(bitsPerKey);
  if (millibits === 0) return null;
  return formatVersion >= 5 ? new FastLocalBloomBuilder(millibits, maxEntries) : new LegacyBloomBuilder(millibits, maxEntries);
}
