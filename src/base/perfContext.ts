/**
 * The perf context: per-operation counters of the work a read does, like RocksDB's PerfContext.
 *
 * Node runs our engine on one thread, so a single module-level context plays the role of
 * RocksDB's thread-local one. Callers `resetPerfContext()`, run an operation, and read `perf`.
 * Counting is a plain integer increment in the hot loop; nothing is allocated.
 */

export interface PerfContext {
  /** User-key or internal-key comparisons made by iterators, seeks and bound checks. */
  keyComparisons: number;
  /** Of those, comparisons made only to check an iterator's upper/lower bound. */
  boundComparisons: number;
  dataBlocksRead: number;
  indexBlocksRead: number;
  filterBlocksRead: number;
  /** Blocks served from the block cache instead of the file. */
  blockCacheHits: number;
  /** Bloom filter probes and how many of them answered "definitely absent". */
  bloomChecks: number;
  bloomNegatives: number;
  seeks: number;
  nexts: number;
  prevs: number;
  /** Bytes read from table files (block contents plus trailers). */
  blockBytesRead: number;
  /**
   * Data blocks taken from an iterator's readahead buffer instead of a read of their own, and
   * the reads that filled it (src/sstable/reader/blockPrefetcher.ts).
   */
  readaheadBlocks: number;
  readaheadReads: number;
  /**
   * Times a child iterator was moved past a span a range tombstone covers instead of stepping
   * through its deleted entries (MergingIterator.skipCoveredForward).
   */
  rangeDelSkips: number;
}

export const perf: PerfContext = newPerfContext();

export function newPerfContext(): PerfContext {
  return {
    keyComparisons: 0,
    boundComparisons: 0,
    dataBlocksRead: 0,
    indexBlocksRead: 0,
    filterBlocksRead: 0,
    blockCacheHits: 0,
    bloomChecks: 0,
    bloomNegatives: 0,
    seeks: 0,
    nexts: 0,
    prevs: 0,
    blockBytesRead: 0,
    readaheadBlocks: 0,
    readaheadReads: 0,
    rangeDelSkips: 0,
  };
}

export function resetPerfContext(): void {
  Object.assign(perf, newPerfContext());
}

export function snapshotPerfContext(): PerfContext {
  return { ...perf };
}
