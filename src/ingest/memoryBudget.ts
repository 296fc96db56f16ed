/**
 * The import's memory budget: one object, made from `--memory-limit`, that hands out every share
 * of it the import's buffers take, so the split lives in one place and can be checked.
 *
 * Contract:
 * - The limit is at least MIN_MEMORY_LIMIT_BYTES (else IngestError 'USAGE').
 * - Parse phase: each parser (the main thread, or each parse worker) gets a sort buffer and its
 *   fixed buffers (read window and spill chunk, PARSER_FIXED_BYTES); all parsers together take at
 *   most the whole limit. Too many parsers for the limit is IngestError 'USAGE'.
 * - Merge phase (after the parse, whose buffers are gone by then): one read buffer per run
 *   reader, sized from half the limit and clamped to [MERGE_READ_BUFFER_MIN_BYTES,
 *   MERGE_READ_BUFFER_MAX_BYTES]; `mergeFanIn` bounds the runs one merge may open so that the
 *   readers of every merge thread together stay within half the limit. Only with more merge
 *   threads than the limit serves (fan-in 2 each) could the minimum buffers pass the whole; then
 *   the readers split the whole limit evenly instead, below the usual minimum (slower, same output).
 * - Every share handed out is asserted to fit in the whole: a failed assertion is a bug here.
 *
 * Not in the limit (as docs/import.md says): Node's own heap, and each SST writer's buffers with
 * its block compression pipeline (src/sstwriter/blockCompressionPipeline.ts, about 11 MiB per
 * writer). The pipeline bounds itself; counting it here would change every share above.
 */
import { IngestError, assert } from '../util/errors';
import { DEFAULT_READ_BUFFER_BYTES } from './csv/csvReader';
import { DEFAULT_CHUNK_BYTES } from './sort/sortBuffer';

export const DEFAULT_MEMORY_LIMIT_BYTES = 256 << 20;
/** Smallest --memory-limit: enough for a useful sort buffer per parser plus fixed buffers. */
export const MIN_MEMORY_LIMIT_BYTES = 4 << 20;
/** Per-parser buffers outside the sort buffer: the read window and the run writer's chunk. */
export const PARSER_FIXED_BYTES = DEFAULT_READ_BUFFER_BYTES + DEFAULT_CHUNK_BYTES;
/** The smallest sort buffer a parser gets: the in-process parser's share at MIN_MEMORY_LIMIT_BYTES. */
const MIN_PARSER_SORT_BUFFER_BYTES = 2 << 20;
export const MERGE_READ_BUFFER_MIN_BYTES = 64 << 10;
export const MERGE_READ_BUFFER_MAX_BYTES = 1 << 20;
/** The merge's read buffers are sized from this fraction of the limit. */
const MERGE_SHARE_DIVISOR = 2;

/** What one parser may hold. */
export interface ParserShare {
  sortBufferBytes: number;
  /** The read window and spill chunk beside the sort buffer. */
  fixedBytes: number;
}

export class MemoryBudget {
  constructor(readonly memoryLimitBytes: number = DEFAULT_MEMORY_LIMIT_BYTES) {
    if (memoryLimitBytes < MIN_MEMORY_LIMIT_BYTES)
      throw new IngestError('USAGE', `--memory-limit must be at least ${MIN_MEMORY_LIMIT_BYTES} bytes`);
  }

  /** The share of each of `parsers` parsers running at once (1 for the in-process parse). */
  parserShare(parsers: number): ParserShare {
    assert(Number.isInteger(parsers) && parsers >= 1, `parser count ${parsers}`);
    const sortBufferBytes = Math.floor((this.memoryLimitBytes - parsers * PARSER_FIXED_BYTES) / parsers);
    if (sortBufferBytes < MIN_PARSER_SORT_BUFFER_BYTES)
      throw new IngestError('USAGE', `--memory-limit ${this.memoryLimitBytes} is too small for ${parsers} parse threads`);
    this.assertWithin(parsers * (sortBufferBytes + PARSER_FIXED_BYTES), `${parsers} parser share(s)`);
    return { sortBufferBytes, fixedBytes: PARSER_FIXED_BYTES };
  }

  /**
   * Most runs one merge may read at once when `mergeThreads` merges run side by side; more runs
   * are first merged in groups of this many. At least 2, or no merge could make progress.
   */
  mergeFanIn(mergeThreads: number): number {
    assert(Number.isInteger(mergeThreads) && mergeThreads >= 1, `merge thread count ${mergeThreads}`);
    return Math.max(2, Math.floor(this.memoryLimitBytes / MERGE_SHARE_DIVISOR / MERGE_READ_BUFFER_MIN_BYTES / mergeThreads));
  }

  /**
   * The read buffer of each of `readers` run readers open at once (over every merge thread); the
   * caller keeps `readers` within mergeFanIn(threads) × threads.
   */
  mergeReadBufferBytes(readers: number): number {
    const count = Math.max(readers, 1);
    const share = Math.floor(this.memoryLimitBytes / MERGE_SHARE_DIVISOR / count);
    let bytes = Math.max(MERGE_READ_BUFFER_MIN_BYTES, Math.min(MERGE_READ_BUFFER_MAX_BYTES, share));
    // The over-subscribed case of the module comment: the minimum would pass the whole limit.
    if (count * bytes > this.memoryLimitBytes) bytes = Math.floor(this.memoryLimitBytes / count);
    this.assertWithin(count * bytes, `${readers} merge read buffer(s)`);
    return bytes;
  }

  private assertWithin(totalBytes: number, what: string): void {
    assert(totalBytes <= this.memoryLimitBytes, `${what} take ${totalBytes} bytes, over the ${this.memoryLimitBytes}-byte memory limit`);
  }
}
