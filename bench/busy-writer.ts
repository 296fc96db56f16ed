/**
 * A busy writer for benches: one loop putting into an engine while something else runs on the same
 * event loop (an ingestion, an import), recording when each write completed so the caller can
 * read the writer's throughput in any time window afterwards (before, during each phase, after),
 * and the longest stall between two writes.
 *
 * Contract: writes are put() one at a time, each awaited; the loop yields to the event loop every
 * `yieldEveryWrites` writes (as a server does between requests), so other work on the loop gets
 * turns and the writer gets turns between the other work's awaits. Synchronous work elsewhere
 * (a conflict scan, a manifest fsync) holds the writer up entirely; the recorded gaps show it.
 * Completion times are kept for at most `maxRecordedWrites` writes (a Float64Array, 8 bytes each);
 * writes past that still happen but are not counted, and `recordsFull` says so.
 */
import { Engine } from '../src/engine/engine';

export interface BusyWriterOptions {
  /** The key of the n-th write (n from 0). */
  keyOf: (n: number) => Buffer;
  /** The value every write puts. */
  value: Buffer;
  yieldEveryWrites?: number;
  maxRecordedWrites?: number;
}

export interface BusyWriter {
  /** Seconds since the writer started: the clock every window is given in. */
  now(): number;
  /** Stops the loop after its current write; resolves when it has stopped. */
  stop(): Promise<void>;
  /** Writes recorded in total. */
  readonly writes: number;
  /** True when more writes completed than could be recorded. */
  readonly recordsFull: boolean;
  /** Writes completed in [fromSeconds, toSeconds). */
  writesIn(fromSeconds: number, toSeconds: number): number;
  /** Writes per second in [fromSeconds, toSeconds) (0 for an empty window). */
  rateIn(fromSeconds: number, toSeconds: number): number;
  /**
   * The longest time in ms within [fromSeconds, toSeconds) in which no write completed (the
   * window's ends count as bounds: a window without writes is one stall of its whole length).
   */
  longestGapMsIn(fromSeconds: number, toSeconds: number): number;
}

const DEFAULT_YIELD_EVERY_WRITES = 64;
const DEFAULT_MAX_RECORDED_WRITES = 1 << 24;

export function startBusyWriter(engine: Engine, opts: BusyWriterOptions): BusyWriter {
  const yieldEvery = opts.yieldEveryWrites ?? DEFAULT_YIELD_EVERY_WRITES;
  const done = new Float64Array(opts.maxRecordedWrites ?? DEFAULT_MAX_RECORDED_WRITES);
  let count = 0;
  let full = false;
  let stopping = false;
  const t0 = process.hrtime.bigint();
  const now = (): number => Number(process.hrtime.bigint() - t0) / 1e9;
  const loop = (async () => {
    for (let n = 0; !stopping; n++) {
      await engine.put(opts.keyOf(n), opts.value);
      if (count < done.length) done[count++] = now();
      else full = true;
      if (n % yieldEvery === 0) await new Promise((r) => setImmediate(r));
    }
  })();
  // Completion times are increasing: a window is a binary-searched index range.
  const firstAtOrAfter = (t: number): number => {
    let lo = 0;
    let hi = count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (done[mid] < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const writesIn = (from: number, to: number): number => Math.max(0, firstAtOrAfter(to) - firstAtOrAfter(from));
  return {
    now,
    stop: async () => {
      stopping = true;
      await loop;
    },
    get writes() {
      return count;
    },
    get recordsFull() {
      return full;
    },
    writesIn,
    rateIn: (from, to) => (to > from ? writesIn(from, to) / (to - from) : 0),
    longestGapMsIn: (from, to) => {
      let longest = 0;
      let previous = from;
      for (let i = firstAtOrAfter(from), end = firstAtOrAfter(to); i < end; i++) {
        longest = Math.max(longest, done[i] - previous);
        previous = done[i];
      }
      return Math.max(longest, to - previous) * 1000;
    },
  };
}
