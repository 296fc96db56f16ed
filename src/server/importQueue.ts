/**
 * The import queue: at most maxConcurrentImports imports run at once (each one parses, sorts and
 * checks with worker threads and holds a span latch while it lands, so running many at once only
 * makes each slower and the serving thread busier); up to maxQueuedImports more wait their turn,
 * in arrival order; beyond that a request gets 429 BUSY at once, before its body is read, so a
 * queued client never uploads gigabytes only to be refused. p-limit keeps the order and counts.
 */
import pLimit from 'p-limit';
import { HttpError } from './httpErrors';

export class ImportQueue {
  private readonly limit: pLimit.Limit;

  constructor(
    readonly maxConcurrent: number,
    readonly maxQueued: number,
  ) {
    if (!(Number.isInteger(maxConcurrent) && maxConcurrent >= 1)) throw new RangeError('maxConcurrentImports must be an integer >= 1');
    if (!(Number.isInteger(maxQueued) && maxQueued >= 0)) throw new RangeError('maxQueuedImports must be an integer >= 0');
    this.limit = pLimit(maxConcurrent);
  }

  get running(): number {
    return this.limit.activeCount;
  }

  get queued(): number {
    return this.limit.pendingCount;
  }

  /** Throws 429 when the queue is full (a job given to run() now would be refused). */
  checkRoom(): void {
    if (this.limit.activeCount >= this.maxConcurrent && this.limit.pendingCount >= this.maxQueued) {
      throw new HttpError(
        429,
        'BUSY',
        `${this.limit.activeCount} import(s) running and ${this.limit.pendingCount} queued, the most this server takes; retry later`,
      );
    }
  }

  /** Runs `job` in its turn; throws 429 when the queue is full. */
  run<T>(job: () => Promise<T>): Promise<T> {
    this.checkRoom();
    return this.limit(job);
  }
}
