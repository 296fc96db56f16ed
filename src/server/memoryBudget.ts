/**
 * The server's memory budget: one limit on the bytes every request together may hold, so no mix
 * of requests, however many and however slow, can take the process past it (per-request limits
 * alone allowed 1,024 connections x 16 MiB bodies = 16 GiB).
 *
 * What is charged, per request, before it is held (ServerMemoryBudget.reserve):
 * - a body read into memory (a PUT value, a batch): its Content-Length before the first byte is
 *   read, or, for a chunked body, each chunk as it arrives;
 * - a batch's decoded form: BATCH_DECODE_FACTOR times its body, before it is parsed;
 * - a scan: SCAN_RESERVE_BYTES, its chunk buffer;
 * - an import: its --memory-limit, for as long as it runs (its sort buffers and workers).
 * Bodies spooled to disk (imports, uploads) are not charged: they stream through fixed buffers.
 * Everything a request reserved is released when its answer is done (RequestMemory.releaseAll).
 *
 * When the budget is in use, a reservation waits (first come, first served) up to waitMs for
 * others to release; past that it fails with 503 UNAVAILABLE and Retry-After, naming the budget,
 * and the request is not applied. A reservation larger than the whole budget fails at once.
 *
 * The default budget (defaultMemoryBudgetBytes) is a quarter of the memory the process may use:
 * the cgroup's memory.max when there is one (a container), else the machine's; the rest is the
 * engine's (memtables, block cache), V8's and the kernel's.
 */
import * as fs from 'fs';
import * as os from 'os';
import { HttpError } from './httpErrors';
import { assert } from '../util/errors';

/** A batch body's decoded operations (JSON objects, then the write batch) per body byte. */
export const BATCH_DECODE_FACTOR = 3;
/** What a scan holds at most at once: a chunk of lines and the entry being encoded. */
export const SCAN_RESERVE_BYTES = 256 * 1024;
/** How long a reservation waits for the budget before the request is refused (503). */
export const DEFAULT_MEMORY_WAIT_MS = 1000;
const MIN_BUDGET_BYTES = 64 * 1024 * 1024;

/** A quarter of the memory the process may use (cgroup v2 memory.max, else the machine's), at least 64 MiB. */
export function defaultMemoryBudgetBytes(): number {
  let limit = os.totalmem();
  try {
    const text = fs.readFileSync('/sys/fs/cgroup/memory.max', 'utf8').trim();
    if (/^[0-9]+$/.test(text)) limit = Math.min(limit, Number(text));
  } catch {
    // No cgroup v2 limit: the machine's memory.
  }
  return Math.max(MIN_BUDGET_BYTES, Math.floor(limit / 4));
}

interface Waiter {
  bytes: number;
  grant: () => void;
}

export class ServerMemoryBudget {
  heldBytes = 0;
  peakHeldBytes = 0;
  /** Reservations refused (503) since start. */
  refusals = 0;
  private readonly waiters: Waiter[] = [];

  constructor(
    readonly limitBytes: number,
    private readonly waitMs: number = DEFAULT_MEMORY_WAIT_MS,
  ) {
    assert(limitBytes > 0 && waitMs >= 0, `memory budget ${limitBytes} bytes, wait ${waitMs} ms`);
  }

  /** Reserves at once if the budget has room and nobody waits before; false otherwise. */
  tryReserve(bytes: number): boolean {
    if (this.waiters.length > 0 || this.heldBytes + bytes > this.limitBytes) return false;
    this.take(bytes);
    return true;
  }

  /** Reserves `bytes`, waiting up to waitMs; 503 naming `what` past it. */
  async reserve(bytes: number, what: string): Promise<void> {
    if (this.tryReserve(bytes)) return;
    if (bytes > this.limitBytes) throw this.refusal(bytes, what);
    const granted = await new Promise<boolean>((resolve) => {
      const waiter: Waiter = { bytes, grant: () => resolve(true) };
      this.waiters.push(waiter);
      setTimeout(() => {
        const i = this.waiters.indexOf(waiter);
        if (i < 0) return; // granted meanwhile
        this.waiters.splice(i, 1);
        resolve(false);
        this.grantWaiters(); // a large waiter leaving may let smaller ones in
      }, this.waitMs).unref();
    });
    if (!granted) throw this.refusal(bytes, what);
  }

  release(bytes: number): void {
    assert(bytes >= 0 && bytes <= this.heldBytes, `release of ${bytes} bytes with ${this.heldBytes} held`);
    this.heldBytes -= bytes;
    this.grantWaiters();
  }

  private take(bytes: number): void {
    this.heldBytes += bytes;
    if (this.heldBytes > this.peakHeldBytes) this.peakHeldBytes = this.heldBytes;
  }

  /** First come, first served: the head waits until it fits, and those behind it wait with it. */
  private grantWaiters(): void {
    while (this.waiters.length > 0 && this.heldBytes + this.waiters[0].bytes <= this.limitBytes) {
      const w = this.waiters.shift() as Waiter;
      this.take(w.bytes);
      w.grant();
    }
  }

  /** The 503 of a request that found no room (counted). */
  refusal(bytes: number, what: string): HttpError {
    this.refusals++;
    const mib = (n: number): string => (n / (1 << 20)).toFixed(1);
    return new HttpError(
      503,
      'UNAVAILABLE',
      `${what}: the server's memory budget (${mib(this.limitBytes)} MiB) has no room for ${mib(bytes)} MiB now; retry`,
    );
  }
}

/** What one request reserved, released together when it is done. */
export class RequestMemory {
  private heldBytes = 0;

  constructor(private readonly budget: ServerMemoryBudget) {}

  async reserve(bytes: number, what: string): Promise<void> {
    await this.budget.reserve(bytes, what);
    this.heldBytes += bytes;
  }

  tryReserve(bytes: number): boolean {
    if (!this.budget.tryReserve(bytes)) return false;
    this.heldBytes += bytes;
    return true;
  }

  /** The 503 for `bytes` more that found no room (a chunked body's next chunk). */
  refused(bytes: number, what: string): HttpError {
    return this.budget.refusal(bytes, what);
  }

  releaseAll(): void {
    const n = this.heldBytes;
    this.heldBytes = 0;
    if (n > 0) this.budget.release(n);
  }
}
