/**
 * The block cache (src/sstable/reader/blockCache.ts): hit counting, eviction of the least
 * recently released entries first, pinned entries never evicted (even over capacity), a second
 * insert returning the first, double release caught, and eraseFile.
 */
import { Block } from '../../../src/sstable/reader/block';
import { BlockCache } from '../../../src/sstable/reader/blockCache';
import { perf, resetPerfContext } from '../../../src/base/perfContext';

describe('BlockCache', () => {
  const blockOf = (bytes: number): Block =>
    Block.parse(Buffer.concat([Buffer.alloc(bytes - 8), Buffer.from([0, 0, 0, 0, 0, 0, 0, 0])]), 'c.sst', 0);

  test('hits are counted; least recently released entries are evicted first; pinned ones never', () => {
    const cache = new BlockCache(3 * 1128);
    const id = cache.newCacheId();
    resetPerfContext();
    for (const offset of [0, 1, 2]) cache.insert(id, offset, blockOf(1000)).release();
    expect(cache.usageBytes).toBe(3 * 1128);
    const pinned = cache.lookup(id, 0); // 0 becomes pinned (and most recent)
    expect(pinned).not.toBeNull();
    expect(perf.blockCacheHits).toBe(1);
    cache.insert(id, 3, blockOf(1000)).release(); // over capacity: evicts 1, the oldest unpinned
    expect(cache.lookup(id, 1)).toBeNull();
    const two = cache.lookup(id, 2);
    expect(two).not.toBeNull();
    two?.release();
    expect(perf.blockCacheHits).toBe(2);
    // Pin entries beyond capacity: pinned ones stay although usage exceeds capacity.
    const handles = [4, 5, 6].map((o) => cache.insert(id, o, blockOf(1000)));
    expect(cache.usageBytes).toBe(4 * 1128); // 0, 4, 5, 6 pinned; 2 and 3 evicted
    expect(cache.pinnedCount).toBe(4);
    const zero = cache.lookup(id, 0);
    expect(zero?.block).toBe(pinned?.block);
    zero?.release();
    for (const h of handles) h.release(); // released while over capacity: evicted down to capacity
    expect(cache.usageBytes).toBeLessThanOrEqual(3 * 1128);
    const six = cache.lookup(id, 6); // the most recently released survived
    expect(six).not.toBeNull();
    six?.release();
    pinned?.release();
    expect(cache.usageBytes).toBeLessThanOrEqual(3 * 1128);
    expect(cache.pinnedCount).toBe(0);
  });

  test('a second insert of the same block returns the first; releasing twice is a bug; eraseFile drops a file', () => {
    const cache = new BlockCache(1 << 20);
    const a = cache.newCacheId();
    const b = cache.newCacheId();
    const first = cache.insert(a, 10, blockOf(100));
    const second = cache.insert(a, 10, blockOf(100));
    expect(second.block).toBe(first.block);
    first.release();
    second.release();
    expect(() => second.release()).toThrow(/released more often/);
    cache.insert(b, 10, blockOf(100)).release();
    cache.eraseFile(a);
    expect(cache.lookup(a, 10)).toBeNull();
    expect(cache.lookup(b, 10)).not.toBeNull();
  });
});
