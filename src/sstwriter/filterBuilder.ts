/**
 * Full-filter builders for RocksDB 7.8's built-in Bloom filter policy (`NewBloomFilterPolicy`),
 * whose bit layouts src/sstable/bloomFilter.ts describes.
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
 */
import { IngestError } from '../util/errors';
import { LEGACY_BLOOM_HASH_SEED, hash32, xxph3, xxph3Result } from '../sstable/hash';
import {
  CACHE_LINE_BYTES,
  FAST_LOCAL_BLOOM_SUB_IMPL,
  FILTER_METADATA_BYTES,
  LOG2_CACHE_LINE_BYTES,
  NEW_BLOOM_MARKER,
  fastLocalBloomAddHash,
  fastLocalBloomLengthBytes,
  fastLocalBloomNumProbes,
  legacyAddHash,
  legacyNumLines,
  legacyNumProbes,
  legacyWholeBitsPerKey,
  millibitsPerKey,
} from '../sstable/bloomFilter';

/** Default bound on hashes held by one builder; see the module comment. */
export const FILTER_MAX_ENTRIES = 1 << 26;
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

// ---------------------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------------------

function tooManyKeys(maxEntries: number): IngestError {
  return new IngestError('INVALID_ARGUMENT', `a filter block holds at most ${maxEntries} distinct keys; cut the table into smaller files`);
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

  constructor(
    millibits: number,
    private readonly maxEntries: number,
  ) {
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

  constructor(
    private readonly millibits: number,
    private readonly maxEntries: number,
  ) {
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
