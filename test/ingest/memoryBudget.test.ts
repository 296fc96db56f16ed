/**
 * MemoryBudget: the shares it hands out are the numbers the import used before the budget
 * existed (the formulas are restated here as the reference), and no share passes the whole limit.
 */
import { MIN_MEMORY_LIMIT_BYTES, MemoryBudget } from '../../src/ingest/memoryBudget';

const MIB = 1 << 20;
const LIMITS = [4 * MIB, 4 * MIB + 1, 5 * MIB, 16 * MIB, 100 * MIB + 12345, 256 * MIB, 1024 * MIB];

/** The former formulas: in-process sort buffer, per-worker sort buffer, merge fan-in, merge read buffer. */
const reference = {
  inProcessSortBytes: (limit: number): number => Math.max(limit - 2 * MIB, MIN_MEMORY_LIMIT_BYTES / 2),
  workerSortBytes: (limit: number, threads: number): number => Math.floor((limit - threads * 2 * MIB) / threads),
  fanIn: (limit: number, threads: number): number => Math.max(2, Math.floor(limit / 2 / (64 << 10) / threads)),
  readBufferBytes: (limit: number, readers: number): number =>
    Math.max(64 << 10, Math.min(MIB, Math.floor(limit / 2 / Math.max(readers, 1)))),
};

test('a limit below the minimum is a usage error', () => {
  expect(() => new MemoryBudget(MIN_MEMORY_LIMIT_BYTES - 1)).toThrow(
    expect.objectContaining({ code: 'USAGE', message: `--memory-limit must be at least ${MIN_MEMORY_LIMIT_BYTES} bytes` }),
  );
  expect(new MemoryBudget().memoryLimitBytes).toBe(256 * MIB);
});

test.each(LIMITS)('parser shares are the former numbers and fit the limit (%i bytes)', (limit) => {
  const budget = new MemoryBudget(limit);
  expect(budget.parserShare(1).sortBufferBytes).toBe(reference.inProcessSortBytes(limit));
  for (let threads = 1; threads <= 16; threads++) {
    const expected = reference.workerSortBytes(limit, threads);
    if (expected < 2 * MIB) {
      expect(() => budget.parserShare(threads)).toThrow(
        expect.objectContaining({ code: 'USAGE', message: `--memory-limit ${limit} is too small for ${threads} parse threads` }),
      );
      continue;
    }
    const share = budget.parserShare(threads);
    expect(share.sortBufferBytes).toBe(expected);
    expect(threads * (share.sortBufferBytes + share.fixedBytes)).toBeLessThanOrEqual(limit);
  }
});

test.each(LIMITS)('merge shares are the former numbers and the readers of every thread fit the limit (%i bytes)', (limit) => {
  const budget = new MemoryBudget(limit);
  for (const threads of [1, 2, 3, 8, 17, 40, 100]) {
    const fanIn = budget.mergeFanIn(threads);
    expect(fanIn).toBe(reference.fanIn(limit, threads));
    // Every reader count the import asks for: a group merge, one merge, or runs × key ranges.
    for (let readers = 0; readers <= fanIn * threads; readers += Math.max(1, Math.floor((fanIn * threads) / 50))) {
      const bytes = budget.mergeReadBufferBytes(readers);
      expect(Math.max(readers, 1) * bytes).toBeLessThanOrEqual(limit);
      // Only where the former minimum would pass the whole limit does the share differ from it.
      const former = reference.readBufferBytes(limit, readers);
      if (Math.max(readers, 1) * former <= limit) expect(bytes).toBe(former);
    }
  }
});
