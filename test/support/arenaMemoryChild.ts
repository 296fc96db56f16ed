/**
 * Child process for test/sstable/nativeBlockCodec.test.ts (run with --expose-gc): reads random data
 * blocks of one table through a small block cache, remembers a weak reference to every distinct
 * ArrayBuffer a block lived in (arena slabs, and the own copies of blocks the cache hit), then
 * collects garbage and prints, as JSON, how many of those buffers and bytes are still alive.
 *
 * Usage: node --expose-gc --require test/support/swc-register.js arenaMemoryChild.ts FILE CACHE_BYTES READS
 */
import { TableReader } from '../../src/sstable/reader/tableReader';
import { BlockCache } from '../../src/sstable/reader/blockCache';
import { mulberry32 } from '../../src/util/random';

async function main(): Promise<void> {
  const [file, cacheBytesArg, readsArg] = process.argv.slice(2);
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with --expose-gc');
  const cache = new BlockCache(Number(cacheBytesArg));
  const reader = TableReader.open(file, { blockCache: cache });
  const index = reader.newIndexIterator();
  const handles: Array<[number, number]> = [];
  for (index.first(); index.valid(); index.next()) handles.push([index.handleOffset, index.handleSize]);

  const seen = new WeakSet<ArrayBufferLike>();
  const refs: Array<WeakRef<ArrayBufferLike>> = [];
  const next = mulberry32(7);
  for (let i = 0; i < Number(readsArg); i++) {
    const [offset, size] = handles[Math.floor(next() * handles.length)];
    const handle = reader.loadDataBlock(offset, size);
    const buffer = handle.block.data.buffer;
    if (!seen.has(buffer)) {
      seen.add(buffer);
      refs.push(new WeakRef(buffer));
    }
    handle.release();
  }
  // Let the collector and the finalizers of external memory run.
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  let aliveBuffers = 0;
  let aliveBytes = 0;
  for (const r of refs) {
    const b = r.deref();
    if (b === undefined) continue;
    aliveBuffers++;
    aliveBytes += b.byteLength;
  }
  console.log(
    JSON.stringify({ blocks: handles.length, buffersSeen: refs.length, aliveBuffers, aliveBytes, cacheUsageBytes: cache.usageBytes }),
  );
  reader.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
