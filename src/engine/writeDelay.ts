/**
 * The write delay: the slowdown stage before a write stop, as RocksDB's WriteController applies
 * it. Once L0 holds level0SlowdownWritesTrigger files, writes are paced to a byte rate
 * (delayedWriteRateBytesPerSecond), so compactions can catch up before L0 reaches the stop
 * trigger, where writers needing a memtable wait outright. A stop stalls writers for as long as
 * a compaction takes; a slowdown spreads a smaller cost over every write.
 *
 * Contract: a token bucket with no burst. `charge(bytes, nowMs)` books a committed write:
 * writes are admitted at the rate, so the bucket's clock (`availableAtMs`) moves forward by
 * bytes / rate from the later of now and where it stood. `waitMs(nowMs)` is how long the next
 * writer must wait for the clock: writers wait only once the debt reaches MIN_WAIT_MS (a timer
 * per small write would cost more than the delay; the debt is paid in one sleep instead).
 * `reset()` forgets the debt when the slowdown ends. Pure arithmetic on the caller's clock, so
 * tests drive it deterministically; the engine supplies performance.now().
 */
import { assert } from '../util/errors';

/** Writers sleep only once the debt reaches this: Node's timers have 1 ms granularity. */
export const MIN_WAIT_MS = 1;

export class WriteDelay {
  private readonly bytesPerMs: number;
  /** When the bytes booked so far have been paid for; 0 while nothing is owed. */
  private availableAtMs = 0;

  constructor(rateBytesPerSecond: number) {
    assert(Number.isFinite(rateBytesPerSecond) && rateBytesPerSecond > 0, `delayed write rate ${rateBytesPerSecond} must be positive`);
    this.bytesPerMs = rateBytesPerSecond / 1000;
  }

  /** Books a committed write of `bytes` at time `nowMs`. */
  charge(bytes: number, nowMs: number): void {
    this.availableAtMs = Math.max(this.availableAtMs, nowMs) + bytes / this.bytesPerMs;
  }

  /** How long a writer arriving at `nowMs` must sleep: 0 while the debt is under MIN_WAIT_MS. */
  waitMs(nowMs: number): number {
    const owed = this.availableAtMs - nowMs;
    return owed >= MIN_WAIT_MS ? owed : 0;
  }

  /** True when something is owed (the caller then reads the clock and asks waitMs). */
  get owing(): boolean {
    return this.availableAtMs > 0;
  }

  /** The slowdown is over: nothing is owed any more. */
  reset(): void {
    this.availableAtMs = 0;
  }
}
