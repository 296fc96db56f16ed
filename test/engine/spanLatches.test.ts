/**
 * Span latches (src/engine/spanLatches.ts) on their own: which keys and ranges a held span blocks,
 * exclusivity and FIFO hand-over between acquirers, release waking waiters, and the bounded waits.
 */
import { SpanLatches } from '../../src/engine/spanLatches';
import { IngestError } from '../../src/util/errors';

const k = (s: string): Buffer => Buffer.from(s, 'latin1');
const span = (a: string, b: string, largestExclusive = false) => ({ smallest: k(a), largest: k(b), largestExclusive });

describe('SpanLatches', () => {
  it('blocks keys and ranges inside a held span only', async () => {
    const latches = new SpanLatches();
    expect(latches.blockerOfKey(k('m'))).toBeNull();
    const held = await latches.acquire(span('c', 'f'), 1000, 'test');
    for (const key of ['c', 'd', 'e', 'f']) expect(latches.blockerOfKey(k(key))).toBe(held);
    for (const key of ['b', 'f\x00', 'g']) expect(latches.blockerOfKey(k(key))).toBeNull();
    expect(latches.blockerOfRange(k('a'), k('c'))).toBeNull(); // [a, c) ends before c
    expect(latches.blockerOfRange(k('a'), k('c\x00'))).toBe(held);
    expect(latches.blockerOfRange(k('f'), k('z'))).toBe(held);
    expect(latches.blockerOfRange(k('f\x00'), k('z'))).toBeNull();
    expect(latches.blockerOfRange(k('e'), k('d'))).toBeNull(); // empty range
    held.release();
    expect(latches.blockerOfKey(k('d'))).toBeNull();
    expect(latches.heldCount).toBe(0);
  });

  it('honours an exclusive end', async () => {
    const latches = new SpanLatches();
    const held = await latches.acquire(span('c', 'f', true), 1000, 'test');
    expect(latches.blockerOfKey(k('e\xff'))).toBe(held);
    expect(latches.blockerOfKey(k('f'))).toBeNull();
    held.release();
  });

  it('wakes waiters on release and refuses a second release', async () => {
    const latches = new SpanLatches();
    const held = await latches.acquire(span('a', 'z'), 1000, 'test');
    let woke = false;
    const waiting = latches.waitForRelease(held, 5000, 'a put').then(() => {
      woke = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(woke).toBe(false);
    held.release();
    await waiting;
    expect(woke).toBe(true);
    expect(() => held.release()).toThrow(/released once/);
  });

  it('keeps overlapping spans exclusive and lets disjoint ones run together', async () => {
    const latches = new SpanLatches();
    const first = await latches.acquire(span('a', 'm'), 1000, 'first');
    const disjoint = await latches.acquire(span('n', 'z'), 1000, 'disjoint');
    const order: string[] = [];
    const second = latches.acquire(span('k', 'p'), 5000, 'second').then((l) => {
      order.push('second');
      return l;
    });
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([]);
    first.release();
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual([]); // still overlaps the disjoint latch
    disjoint.release();
    (await second).release();
    expect(order).toEqual(['second']);
  });

  it('times out a wait with LATCH_TIMEOUT naming the span and holder', async () => {
    const latches = new SpanLatches();
    const held = await latches.acquire(span('a', 'b'), 1000, 'ingestion of 2 files');
    const err = await latches.waitForRelease(held, 20, 'a put of "a"').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IngestError);
    expect((err as IngestError).code).toBe('LATCH_TIMEOUT');
    expect((err as Error).message).toMatch(/a put of "a" waited 20 ms for span \["a", "b"\], held by ingestion of 2 files/);
    const acq = await latches.acquire(span('b', 'c'), 20, 'another ingestion').catch((e: unknown) => e);
    expect((acq as IngestError).code).toBe('LATCH_TIMEOUT');
    expect(latches.timeouts).toBe(2);
    held.release();
    (await latches.acquire(span('b', 'c'), 20, 'another ingestion')).release();
  });
});
