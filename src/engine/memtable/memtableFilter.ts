/**
 * A Bloom filter over one memtable's user keys: a point lookup asks it first and skips the
 * memtable's skiplist when the key was never written there (RocksDB's memtable whole-key
 * filtering, `memtable_whole_key_filtering` with `memtable_prefix_bloom_size_ratio`).
 *
 * Why: a get searches the active memtable and every immutable one, newest first, before any
 * table. A skiplist search of a few hundred thousand entries walks about 20 nodes spread over
 * the arena, each a cache miss; with two immutable memtables waiting for their flush, a key
 * written long ago (or never) costs three such walks. A filter probe is one cache line.
 *
 * Layout: FastLocalBloom (src/sstable/bloomFilter.ts, the layout of the tables' filters):
 * 64-byte lines, the line chosen by the low half of the key's XXPH3-64 hash, PROBES bits set in
 * it by the high half. The size is fixed when the memtable is made: 1/FILTER_ARENA_DIVISOR of its
 * initial arena (the engine sizes that arena from writeBufferSizeBytes), so 1 MiB for the 64 MiB
 * default: about 25 bits per key at 330k keys of 120-byte values (under 0.1% false positives),
 * about 8 at a million small entries (about 2%). Memory: that 1/64 comes on top of the write
 * buffer, and is not counted toward it (the flush trigger stays the arena's size).
 *
 * Contract: `add` every user key the memtable holds a point entry for (values and deletions);
 * `mayContain` is false only for a key never added. A lookup hashes its key once (`KeyHash`)
 * and probes every memtable's filter with that hash. Range deletions are not filtered: the
 * read path applies them separately. Not thread-safe (the engine's event loop is the only user).
 */
import { fastLocalBloomAddHash, fastLocalBloomHashMayMatch, CACHE_LINE_BYTES } from '../../sstable/bloomFilter';
import { xxph3, xxph3Result } from '../../sstable/hash';
import { assert } from '../../util/errors';

/** The filter gets this fraction of the memtable's initial arena. */
export const FILTER_ARENA_DIVISOR = 64;
/** Bits set per key: the FastLocalBloom count for about 10 to 25 bits per key. */
const PROBES = 6;
/** At most 16 MiB, whatever the arena: beyond that a filter misses the CPU caches anyway. */
const MAX_FILTER_BYTES = 16 * 1024 * 1024;

/** A user key's filter hash, XXPH3-64 in two halves: computed once per lookup, probed per memtable. */
export class KeyHash {
  lo = 0;
  hi = 0;

  /** Hashes `userKey` into this object and returns it. */
  of(userKey: Uint8Array): this {
    xxph3(userKey, 0, userKey.length);
    this.lo = xxph3Result.lo;
    this.hi = xxph3Result.hi;
    return this;
  }
}

export class MemtableFilter {
  private readonly bits: Uint8Array;
  readonly lengthBytes: number;

  constructor(arenaBytes: number) {
    const lines = Math.max(1, Math.floor(Math.min(MAX_FILTER_BYTES, arenaBytes / FILTER_ARENA_DIVISOR) / CACHE_LINE_BYTES));
    this.lengthBytes = lines * CACHE_LINE_BYTES;
    assert(this.lengthBytes >= CACHE_LINE_BYTES && this.lengthBytes <= MAX_FILTER_BYTES, 'memtable filter size out of range');
    this.bits = new Uint8Array(this.lengthBytes);
  }

  add(userKey: Uint8Array): void {
    xxph3(userKey, 0, userKey.length);
    fastLocalBloomAddHash(xxph3Result.lo, xxph3Result.hi, this.lengthBytes, PROBES, this.bits);
  }

  /** False only if the key `hash` was made of was never added. */
  mayContain(hash: KeyHash): boolean {
    return fastLocalBloomHashMayMatch(hash.lo, hash.hi, this.lengthBytes, PROBES, this.bits);
  }
}
