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
 * before that. Hashes are kept in chunks of HASH_CHUNK_ENTRIES (64 KiB a column), taken one at
 * a time as keys arrive: storage never doubles or copies, so a table's hashes touch fresh memory
 * only once (on the 2-core VM a first touch costs about 12 us per 4 KiB page, and a merge worker's
 * doubling arrays were about a quarter of its page faults). `reset()` gives the chunks to a
 * per-thread pool of at most HASH_POOL_MAX_CHUNKS, so the next table of the same thread reuses
 * them; TableBuilder resets its filter when the table is finished or abandoned.
 *
 * Bits per key (a double) is sanitised as RocksDB does: < 0.5 means no filter, [0.5, 1) becomes
 * 1, >= 100 becomes 100; then millibits = floor(bits * 1000 + 0.500001).
 */
import { IngestError, assert } from '../util/errors';
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
/** Stands for "no chunk yet": never written (a first key takes a chunk first). */
const EMPTY_CHUNK = new Uint32Array(0);

export interface FilterBuilder {
  /** Adds a user key; keys come in file order. Adjacent duplicate hashes are dropped. */
  addKey(userKey: Uint8Array): void;
  /**
   * Adds the XXPH3 hashes of `count` user keys, in file order, as addKey would have computed
   * them (lo[i] / hi[i]: bits 0..31 / 32..63). Only the FastLocalBloom builder (format_version 5)
   * takes hashes; the legacy one hashes differently and refuses them.
   */
  addHashes(lo: Uint32Array, hi: Uint32Array, count: number): void;
  /** Hashes kept so far (`rocksdb.num.filter_entries`). */
  numEntries(): number;
  /** The filter block contents including its metadata; null when no key was added. */
  finish(): Buffer | null;
  /** Forgets every key and gives its hash storage back to the thread's pool (see the module comment). */
  reset(): void;
}

// ---------------------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------------------

function tooManyKeys(maxEntries: number): IngestError {
  return new IngestError('INVALID_ARGUMENT', `a filter block holds at most ${maxEntries} distinct keys; cut the table into smaller files`);
}

/** Hashes per storage chunk: 2^14 uint32, 64 KiB (below malloc's mmap threshold, so a freed chunk is reused warm). */
export const HASH_CHUNK_ENTRIES = 1 << 14;
const HASH_CHUNK_MASK = HASH_CHUNK_ENTRIES - 1;
/** Chunks a thread keeps for its next tables: 8 MiB, FastLocalBloom's two columns for 1M keys. */
export const HASH_POOL_MAX_CHUNKS = 128;
const chunkPool: Uint32Array[] = [];

/** A chunk from this thread's pool, or a new one; its contents are garbage until written. */
function takeChunk(): Uint32Array {
  return chunkPool.pop() ?? new Uint32Array(HASH_CHUNK_ENTRIES);
}

/** Gives `chunks` to the pool (up to its bound; the rest is left to the garbage collector) and empties it. */
function releaseChunks(chunks: Uint32Array[]): void {
  for (const c of chunks) {
    if (chunkPool.length >= HASH_POOL_MAX_CHUNKS) break;
    chunkPool.push(c);
  }
  chunks.length = 0;
}

/** Chunks the pool holds now (for tests of the bound). */
export function pooledHashChunks(): number {
  return chunkPool.length;
}

/** Entries held in chunk `c` of a column holding `count` entries. */
function entriesInChunk(c: number, count: number): number {
  return Math.min(HASH_CHUNK_ENTRIES, count - c * HASH_CHUNK_ENTRIES);
}

/** One column of 32-bit hashes, in chunks taken from the thread's pool as entries arrive. */
class HashColumn {
  readonly chunks: Uint32Array[] = [];
  /** The chunk the next entry goes to (chunks' last). */
  private current: Uint32Array = EMPTY_CHUNK;

  /** Stores `hash` as entry `index`, which must be the number of entries held so far. */
  append(index: number, hash: number): void {
    const slot = index & HASH_CHUNK_MASK;
    if (slot === 0) this.chunks.push((this.current = takeChunk()));
    this.current[slot] = hash;
  }

  /** Gives every chunk to the pool; the column is empty after. */
  release(): void {
    releaseChunks(this.chunks);
    this.current = EMPTY_CHUNK;
  }
}

/** format_version < 5: one 32-bit hash per key, cache-line-local Bloom with odd line count. */
class LegacyBloomBuilder implements FilterBuilder {
  private readonly hashes = new HashColumn();
  private last = 0;
  private count = 0;
  private readonly wholeBitsPerKey: number;
  private readonly numProbes: number;

  constructor(
    millibits: number,
    private readonly maxEntries: number,
  ) {
    this.wholeBitsPerKey = legacyWholeBitsPerKey(millibits);
    this.numProbes = legacyNumProbes(this.wholeBitsPerKey);
  }

  addKey(userKey: Uint8Array): void {
    const h = hash32(userKey, 0, userKey.length, LEGACY_BLOOM_HASH_SEED);
    if (this.count > 0 && this.last === h) return;
    if (this.count === this.maxEntries) throw tooManyKeys(this.maxEntries);
    this.hashes.append(this.count, h);
    this.last = h;
    this.count++;
  }

  addHashes(): void {
    assert(false, 'the legacy Bloom filter hashes keys itself: use addKey()');
  }

  numEntries(): number {
    return this.count;
  }

  finish(): Buffer | null {
    if (this.count === 0) return null;
    const lines = legacyNumLines(this.count, this.wholeBitsPerKey);
    const lengthBytes = lines * CACHE_LINE_BYTES;
    const out = Buffer.alloc(lengthBytes + FILTER_METADATA_BYTES);
    const chunks = this.hashes.chunks;
    for (let c = 0; c < chunks.length; c++) {
      const hashes = chunks[c];
      const n = entriesInChunk(c, this.count);
      for (let i = 0; i < n; i++) legacyAddHash(hashes[i], lines, this.numProbes, out, LOG2_CACHE_LINE_BYTES);
    }
    out[lengthBytes] = this.numProbes;
    out.writeUInt32LE(lines, lengthBytes + 1);
    return out;
  }

  reset(): void {
    this.count = 0;
    this.hashes.release();
  }
}

/** format_version 5: one 64-bit XXPH3 hash per key (two uint32 arrays), FastLocalBloom. */
class FastLocalBloomBuilder implements FilterBuilder {
  private readonly hashLo = new HashColumn();
  private readonly hashHi = new HashColumn();
  private lastLo = 0;
  private lastHi = 0;
  private count = 0;
  private readonly numProbes: number;

  constructor(
    private readonly millibits: number,
    private readonly maxEntries: number,
  ) {
    this.numProbes = fastLocalBloomNumProbes(millibits);
  }

  addKey(userKey: Uint8Array): void {
    xxph3(userKey, 0, userKey.length);
    this.addHash(xxph3Result.lo, xxph3Result.hi);
  }

  addHashes(lo: Uint32Array, hi: Uint32Array, count: number): void {
    if (!(count <= lo.length && count <= hi.length)) assert(false, 'more hashes than the arrays hold');
    for (let i = 0; i < count; i++) this.addHash(lo[i], hi[i]);
  }

  /** Keeps one key's hash (bits 0..31 / 32..63), unless it equals the previous one. */
  private addHash(lo: number, hi: number): void {
    if (this.count > 0 && this.lastLo === lo && this.lastHi === hi) return;
    if (this.count === this.maxEntries) throw tooManyKeys(this.maxEntries);
    this.hashLo.append(this.count, lo);
    this.hashHi.append(this.count, hi);
    this.lastLo = lo;
    this.lastHi = hi;
    this.count++;
  }

  numEntries(): number {
    return this.count;
  }

  finish(): Buffer | null {
    if (this.count === 0) return null;
    const lengthBytes = fastLocalBloomLengthBytes(this.count, this.millibits);
    const out = Buffer.alloc(lengthBytes + FILTER_METADATA_BYTES);
    const loChunks = this.hashLo.chunks;
    const hiChunks = this.hashHi.chunks;
    for (let c = 0; c < loChunks.length; c++) {
      const lo = loChunks[c];
      const hi = hiChunks[c];
      const n = entriesInChunk(c, this.count);
      for (let i = 0; i < n; i++) fastLocalBloomAddHash(lo[i], hi[i], lengthBytes, this.numProbes, out);
    }
    out[lengthBytes] = NEW_BLOOM_MARKER;
    out[lengthBytes + 1] = FAST_LOCAL_BLOOM_SUB_IMPL;
    out[lengthBytes + 2] = this.numProbes | ((LOG2_CACHE_LINE_BYTES - 6) << 5);
    // Bytes +3 and +4 are reserved and stay zero: a reader treats non-zero as "always maybe".
    return out;
  }

  reset(): void {
    this.count = 0;
    this.hashLo.release();
    this.hashHi.release();
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
