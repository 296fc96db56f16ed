/**
 * Span latches: an operation over a user-key span (a checked ingestion) holds a latch on it, and
 * every write whose keys fall inside a held span waits until the latch is released, while writes
 * elsewhere go on. This is what makes "check, then ingest" one atomic step against concurrent
 * writers: between the check's snapshot and the ingestion's commit no write can land inside the
 * span, so the state the check read is the state the ingestion commits over (CockroachDB latches
 * its AddSSTable span the same way; RocksDB's IngestExternalFile has no conflict check to protect).
 *
 * Contract:
 * - `acquire(span, timeoutMs, holder)` waits (FIFO among acquirers) until no held latch overlaps
 *   `span`, then holds it. Latches are exclusive: two overlapping spans are never held at once.
 *   Waiting longer than `timeoutMs` rejects with LATCH_TIMEOUT naming both spans and the holder.
 * - Writers ask `blockerOfKey(key)` / `blockerOfRange(start, end)` in the same synchronous step
 *   as their commit (see Engine.commitWhenUnlatched); a non-null answer is a latch to
 *   `waitForRelease` on, after which they ask again. The answer costs one length check while no
 *   latch is held, so writes pay nothing when no ingestion runs.
 * - A held latch is released exactly once (asserted); release wakes every waiter of that latch.
 *   `withLatch(span, timeoutMs, holder, body)` holds the span for `body` and releases it however
 *   body ends.
 * - Bounds: at most MAX_HELD_LATCHES held and MAX_WAITERS waiting (writers and acquirers
 *   together); one more is refused with LATCH_TIMEOUT at once rather than queued without end.
 *
 * Spans are user-key ranges [smallest, largest], or [smallest, largest) with largestExclusive.
 * Keys are held by reference and must not be modified while latched.
 */
import { IngestError, assert } from '../util/errors';
import { compareUserKeys } from '../base/keyCompare';
import { UserKeyRange, describeUserKeyRange, keyBeforeRangeEnd, userKeyRangesOverlap } from './runningCompactions';

/** Default EngineOptions.latchWaitTimeoutMs: longer than any check + ingest step of a nightly load. */
export const DEFAULT_LATCH_WAIT_TIMEOUT_MS = 60_000;

/** Latches held at once: one per concurrent ingestion, which is a handful in practice. */
export const MAX_HELD_LATCHES = 64;
/** Writers and acquirers waiting at once; past it a write fails at once instead of queueing. */
export const MAX_WAITERS = 65_536;

export interface HeldLatch {
  readonly span: UserKeyRange;
  /** What holds it, for error messages (e.g. "ingestion of 3 files"). */
  readonly holder: string;
  /** performance.now() when it was taken. */
  readonly sinceMs: number;
  release(): void;
}

interface LatchState extends HeldLatch {
  released: boolean;
  /** Resolves when released. */
  readonly releasedPromise: Promise<void>;
}

export class SpanLatches {
  private readonly held: LatchState[] = [];
  private waiters = 0;
  /** Acquisitions and write waits that ended by timeout (stats). */
  timeouts = 0;
  /** Waits of writes on a latch (stats; a write that meets two latches in turn counts twice). */
  writesDelayed = 0;

  /** Latches held now. */
  get heldCount(): number {
    return this.held.length;
  }

  /** The held latch covering user key `key`, or null. */
  blockerOfKey(key: Buffer): HeldLatch | null {
    if (this.held.length === 0) return null;
    for (const l of this.held) {
      if (compareUserKeys(key, l.span.smallest) >= 0 && keyBeforeRangeEnd(key, l.span)) return l;
    }
    return null;
  }

  /** The held latch overlapping the half-open range [start, end), or null. */
  blockerOfRange(start: Buffer, end: Buffer): HeldLatch | null {
    if (this.held.length === 0) return null;
    if (compareUserKeys(start, end) >= 0) return null; // an empty range deletes nothing
    const range: UserKeyRange = { smallest: start, largest: end, largestExclusive: true };
    for (const l of this.held) if (userKeyRangesOverlap(range, l.span)) return l;
    return null;
  }

  /** Waits until `latch` is released, or rejects with LATCH_TIMEOUT after `timeoutMs`. */
  async waitForRelease(latch: HeldLatch, timeoutMs: number, what: string): Promise<void> {
    const state = latch as LatchState;
    if (state.released) return;
    this.enterWait(what, latch);
    try {
      await withTimeout(state.releasedPromise, timeoutMs, () => {
        this.timeouts++;
        return latchTimeout(`${what} waited ${timeoutMs} ms`, latch);
      });
    } finally {
      this.waiters--;
    }
  }

  /** Holds `span` once no held latch overlaps it; see the module contract. */
  async acquire(span: UserKeyRange, timeoutMs: number, holder: string): Promise<HeldLatch> {
    assert(compareUserKeys(span.smallest, span.largest) <= 0, 'a latch span is not reversed');
    const deadlineMs = performance.now() + timeoutMs;
    for (;;) {
      const blocker = this.held.find((l) => userKeyRangesOverlap(l.span, span));
      if (blocker === undefined) return this.hold(span, holder);
      const leftMs = deadlineMs - performance.now();
      if (leftMs <= 0) {
        this.timeouts++;
        throw latchTimeout(`${holder} over ${describeUserKeyRange(span)} waited ${timeoutMs} ms`, blocker);
      }
      await this.waitForRelease(blocker, leftMs, `${holder} over ${describeUserKeyRange(span)}`);
    }
  }

  /** Runs `body` holding `span` (acquired as by acquire), releasing it however body ends. */
  async withLatch<T>(span: UserKeyRange, timeoutMs: number, holder: string, body: (latch: HeldLatch) => Promise<T>): Promise<T> {
    const latch = await this.acquire(span, timeoutMs, holder);
    try {
      return await body(latch);
    } finally {
      latch.release();
    }
  }

  private hold(span: UserKeyRange, holder: string): HeldLatch {
    if (this.held.length >= MAX_HELD_LATCHES) {
      throw new IngestError('LATCH_TIMEOUT', `${holder}: ${MAX_HELD_LATCHES} span latches are held already`);
    }
    let resolve: () => void = () => undefined;
    const releasedPromise = new Promise<void>((r) => {
      resolve = r;
    });
    const state: LatchState = {
      span,
      holder,
      sinceMs: performance.now(),
      released: false,
      releasedPromise,
      release: () => {
        assert(!state.released, 'a span latch is released once');
        state.released = true;
        const i = this.held.indexOf(state);
        assert(i >= 0, 'a released latch was held');
        this.held.splice(i, 1);
        resolve();
      },
    };
    this.held.push(state);
    return state;
  }

  private enterWait(what: string, latch: HeldLatch): void {
    if (this.waiters >= MAX_WAITERS) {
      this.timeouts++;
      throw latchTimeout(`${what}: ${MAX_WAITERS} operations wait on span latches already`, latch);
    }
    this.waiters++;
  }
}

function latchTimeout(what: string, latch: HeldLatch): IngestError {
  const heldMs = Math.round(performance.now() - latch.sinceMs);
  return new IngestError('LATCH_TIMEOUT', `${what} for span ${describeUserKeyRange(latch.span)}, held by ${latch.holder} for ${heldMs} ms`);
}

/** `p`, or a rejection with `onTimeout()` after `timeoutMs`; the timer never outlives the race. */
function withTimeout(p: Promise<void>, timeoutMs: number, onTimeout: () => Error): Promise<void> {
  if (!Number.isFinite(timeoutMs)) return p;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), Math.max(0, timeoutMs));
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
