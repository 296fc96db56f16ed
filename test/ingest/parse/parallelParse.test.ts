/**
 * Range planning of the parallel parse (planTaskBytes): a range never holds more than one sort
 * buffer's worth, the ranges come in whole rounds of the thread count, and there are at least
 * MIN_PARSE_ROUNDS rounds, so every worker's sort buffer is reused at least once.
 */
import { MIN_PARSE_ROUNDS, planTaskBytes } from '../../../src/ingest/parse/parallelParse';

const MiB = 1 << 20;

/** Ranges of `taskBytes` that cover `dataBytes` (the planner cuts the input so). */
const rangesOf = (dataBytes: number, taskBytes: number): number => Math.ceil(dataBytes / taskBytes);

describe('planTaskBytes', () => {
  test('an input smaller than the sort buffers still gets MIN_PARSE_ROUNDS rounds per worker', () => {
    expect(MIN_PARSE_ROUNDS).toBe(2);
    // 113 MB of input, sort buffers that would take 85 MiB each: one round would fit.
    const data = 113_420_723;
    const task = planTaskBytes(data, 85 * MiB, 2);
    expect(rangesOf(data, task)).toBe(2 * MIN_PARSE_ROUNDS);
    expect(task).toBe(Math.ceil(data / 4));
  });

  test('a large input keeps the rounds its size needs, each range within one sort buffer', () => {
    const data = 1_134_170_976;
    const largest = 85 * MiB;
    const task = planTaskBytes(data, largest, 2);
    expect(task).toBeLessThanOrEqual(largest);
    const ranges = rangesOf(data, task);
    expect(ranges % 2).toBe(0);
    expect(ranges).toBe(2 * Math.ceil(data / largest / 2)); // 14: more than the minimum, unchanged by it
  });

  test('ranges never go below 1 MiB, so tiny inputs are not cut into slivers', () => {
    expect(planTaskBytes(3 * MiB, 85 * MiB, 2)).toBe(MiB);
    expect(planTaskBytes(100, 85 * MiB, 2)).toBe(MiB);
    expect(planTaskBytes(0, 85 * MiB, 4)).toBe(MiB);
  });

  test('one thread: two ranges of half the input', () => {
    expect(planTaskBytes(40 * MiB, 85 * MiB, 1)).toBe(20 * MiB);
  });

  test('rejects a thread count that is not a positive integer', () => {
    expect(() => planTaskBytes(MiB, MiB, 0)).toThrow(/positive integer/);
    expect(() => planTaskBytes(MiB, MiB, 1.5)).toThrow(/positive integer/);
  });
});
