/**
 * The block cache: an LRU of parsed, decompressed, checksum-verified blocks, bounded by bytes and
 * shared by every table reader of a process.
 *
 * Contract:
 * - Entries are keyed by (cacheId, blockOffset). Each table reader takes its own cacheId from
 *   `newCacheId()` (like RocksDB's per-file cache key prefix), so two files never collide even if
 *   they share a file number.
 * - `lookup` and `insert` return a handle that pins the entry: a pinned entry is never evicted.
 *   The caller must `release()` the handle exactly once when it stops using the block (iterators
 *   release on move/close). Releasing twice is a bug (asserted).
 * - Only unpinned entries sit in the LRU list. When usage exceeds `capacityBytes`, unpinned
 *   entries are evicted oldest first. Pinned entries may push usage over capacity (as RocksDB
 *   does without strict_capacity_limit); the excess is evicted as soon as they are released.
 * - Inserting a key that is already present returns a handle on the existing entry (another
 *   reader loaded the same block first); the new block is dropped.
 * - Hits are counted in perf.blockCacheHits.
 *
 * Charge per entry: the block's bytes plus a fixed overhead for the entry's bookkeeping.
 *
 * UncachedBlock is the same handle for a block that is in no cache, so that callers release
 * blocks alike whether a cache is configured or not.
 */
import { perf } from '../../base/perfContext';
import { assert, assertionFailed } from '../../util/errors';
import { Block } from './block';

/** Bytes charged for an entry's bookkeeping objects on top of the block bytes. */
const ENTRY_OVERHEAD_BYTES = 128;

export interface BlockCacheHandle {
  readonly block: Block;
  release(): void;
}

/** A block read without a cache (or for verification): "releasing" it just drops the reference. */
export class UncachedBlock implements BlockCacheHandle {
  constructor(readonly block: Block) {}
  release(): void {}
}

class CacheEntry implements BlockCacheHandle {
  readonly block: Block;
  readonly cacheId: number;
  readonly blockOffset: number;
  readonly chargeBytes: number;
  refs = 0;
  /** Still reachable through the map (false after eviction or erase while pinned). */
  inCache = true;
  /** LRU links; only meaningful while refs === 0 and inCache. */
  newer: CacheEntry | null = null;
  older: CacheEntry | null = null;
  private readonly cache: BlockCache;

  constructor(cache: BlockCache, cacheId: number, blockOffset: number, block: Block) {
    this.cache = cache;
    this.cacheId = cacheId;
    this.blockOffset = blockOffset;
    this.block = block;
    this.chargeBytes = block.chargeBytes + ENTRY_OVERHEAD_BYTES;
  }

  release(): void {
    this.cache.unpin(this);
  }
}

export class BlockCache {
  readonly capacityBytes: number;
  private usage = 0;
  private nextCacheId = 1;
  /** cacheId → (blockOffset → entry). Nested maps keep keys numeric (no string building). */
  private readonly files = new Map<number, Map<number, CacheEntry>>();
  /** LRU list of unpinned entries: `newest` is the most recently released. */
  private newest: CacheEntry | null = null;
  private oldest: CacheEntry | null = null;
  private pinnedEntries = 0;
  /** Lookups, and those that found their block: counters for the server's metrics (misses = lookups - hits). */
  lookups = 0;
  hits = 0;

  constructor(capacityBytes: number) {
    assert(
      Number.isSafeInteger(capacityBytes) && capacityBytes >= 0,
      `block cache capacity ${capacityBytes} must be a non-negative integer`,
    );
    this.capacityBytes = capacityBytes;
  }

  newCacheId(): number {
    return this.nextCacheId++;
  }

  /** Bytes charged by entries in the cache (pinned or not). */
  get usageBytes(): number {
    return this.usage;
  }

  /** Number of cache entries currently pinned by at least one handle. */
  get pinnedCount(): number {
    return this.pinnedEntries;
  }

  lookup(cacheId: number, blockOffset: number): BlockCacheHandle | null {
    this.lookups++;
    const entry = this.files.get(cacheId)?.get(blockOffset);
    if (entry === undefined) return null;
    perf.blockCacheHits++;
    this.hits++;
    // A block hit once is likely hit again: give it memory of its own so it does not keep an
    // arena slab of cold blocks alive (see src/sstable/reader/blockArena.ts).
    entry.block.leaveArena();
    this.pin(entry);
    return entry;
  }

  /** Inserts a block and returns a pinned handle to it (or to an entry already there). */
  insert(cacheId: number, blockOffset: number, block: Block): BlockCacheHandle {
    let file = this.files.get(cacheId);
    if (file === undefined) {
      file = new Map();
      this.files.set(cacheId, file);
    }
    const existing = file.get(blockOffset);
    if (existing !== undefined) {
      this.pin(existing);
      return existing;
    }
    const entry = new CacheEntry(this, cacheId, blockOffset, block);
    file.set(blockOffset, entry);
    this.usage += entry.chargeBytes;
    this.pin(entry);
    this.evictToCapacity();
    return entry;
  }

  /** Drops every unpinned entry of `cacheId` (a closed or deleted file); pinned ones go on release. */
  eraseFile(cacheId: number): void {
    const file = this.files.get(cacheId);
    if (file === undefined) return;
    for (const entry of file.values()) {
      if (entry.refs === 0) this.unlinkLru(entry);
      this.drop(entry);
    }
    this.files.delete(cacheId);
  }

  unpin(entry: CacheEntry): void {
    if (entry.refs <= 0) assertionFailed(`block cache handle (${entry.cacheId}, ${entry.blockOffset}) released more often than pinned`);
    entry.refs--;
    if (entry.refs > 0) return;
    this.pinnedEntries--;
    if (!entry.inCache) return; // evicted or erased while pinned: now unreachable garbage
    this.linkNewest(entry);
    this.evictToCapacity();
  }

  private pin(entry: CacheEntry): void {
    if (entry.refs === 0) {
      this.pinnedEntries++;
      if (entry.inCache) this.unlinkLru(entry);
    }
    entry.refs++;
  }

  private evictToCapacity(): void {
    while (this.usage > this.capacityBytes && this.oldest !== null) {
      const victim = this.oldest;
      this.unlinkLru(victim);
      this.files.get(victim.cacheId)?.delete(victim.blockOffset);
      this.drop(victim);
    }
  }

  /** Removes an entry from the accounting (the caller removes it from the map). */
  private drop(entry: CacheEntry): void {
    if (!entry.inCache) return;
    entry.inCache = false;
    this.usage -= entry.chargeBytes;
  }

  private linkNewest(entry: CacheEntry): void {
    entry.older = this.newest;
    entry.newer = null;
    if (this.newest !== null) this.newest.newer = entry;
    this.newest = entry;
    if (this.oldest === null) this.oldest = entry;
  }

  private unlinkLru(entry: CacheEntry): void {
    if (entry.newer !== null) entry.newer.older = entry.older;
    else if (this.newest === entry) this.newest = entry.older;
    if (entry.older !== null) entry.older.newer = entry.newer;
    else if (this.oldest === entry) this.oldest = entry.newer;
    entry.newer = null;
    entry.older = null;
  }
}
