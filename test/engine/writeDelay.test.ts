/**
 * The write slowdown: the token bucket itself (driven by a fake clock), the option defaults and
 * checks, and the engine pacing writes once L0 holds level0SlowdownWritesTrigger files. Engine
 * assertions are on the delay the engine books (stats.writeDelayMs, computed from bytes and the
 * rate), never on elapsed time.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine, EngineOptions } from '../../src/engine/engine';
import { WriteBatch } from '../../src/engine/writeBatch';
import { MIN_WAIT_MS, WriteDelay } from '../../src/engine/writeDelay';
import { resolveCompactionOptions } from '../../src/engine/compaction/compactionOptions';

describe('WriteDelay', () => {
  it('admits writes at the rate, sleeps only once the debt reaches MIN_WAIT_MS, and forgets it on reset', () => {
    const d = new WriteDelay(1000); // 1 byte per ms
    expect(d.owing).toBe(false);
    expect(d.waitMs(0)).toBe(0);
    d.charge(500, 0);
    expect(d.waitMs(0)).toBe(500);
    expect(d.waitMs(100)).toBe(400);
    expect(d.waitMs(499.5)).toBe(0); // 0.5 ms owed: under MIN_WAIT_MS
    // Idle time is not banked: a write after the debt is paid starts from now.
    d.charge(MIN_WAIT_MS / 2, 600);
    expect(d.waitMs(600)).toBe(0);
    d.charge(2, 600);
    expect(d.waitMs(600)).toBeCloseTo(2.5, 9);
    // Writes booked back to back add up.
    d.charge(100, 600);
    expect(d.waitMs(600)).toBeCloseTo(102.5, 9);
    d.reset();
    expect(d.owing).toBe(false);
    expect(d.waitMs(600)).toBe(0);
    expect(() => new WriteDelay(0)).toThrow(/positive/);
  });
});

describe('slowdown options', () => {
  it("default to RocksDB's and keep the slowdown trigger between the compaction and stop triggers", () => {
    const d = resolveCompactionOptions({});
    expect([d.level0FileNumCompactionTrigger, d.level0SlowdownWritesTrigger, d.level0StopWritesTrigger]).toEqual([4, 20, 36]);
    expect(d.delayedWriteRateBytesPerSecond).toBe(16 * 1024 * 1024);
    expect(resolveCompactionOptions({ level0StopWritesTrigger: 10 }).level0SlowdownWritesTrigger).toBe(10);
    expect(resolveCompactionOptions({ level0FileNumCompactionTrigger: 30 }).level0SlowdownWritesTrigger).toBe(30);
    expect(() => resolveCompactionOptions({ level0SlowdownWritesTrigger: 2 })).toThrow(/level0SlowdownWritesTrigger is out of range/);
    expect(() => resolveCompactionOptions({ level0SlowdownWritesTrigger: 40 })).toThrow(/level0SlowdownWritesTrigger is out of range/);
    expect(() => resolveCompactionOptions({ delayedWriteRateBytesPerSecond: 0 })).toThrow(/delayedWriteRateBytesPerSecond/);
  });
});

describe('the engine under a slowdown', () => {
  const RATE_BYTES_PER_SECOND = 1024 * 1024;
  let dir: string;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'write-delay-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** Opens an engine and flushes `l0Files` small L0 files into it. */
  async function engineWithL0(l0Files: number, opts: EngineOptions): Promise<Engine> {
    const engine = await Engine.open(dir, opts);
    for (let f = 0; f < l0Files; f++) {
      await engine.put(Buffer.from(`file-${f}`), Buffer.from('x'));
      await engine.flush();
    }
    return engine;
  }

  /** A batch of about `bytes` bytes. */
  function bigBatch(bytes: number): WriteBatch {
    const b = new WriteBatch();
    for (let i = 0; b.byteSize < bytes; i++) b.put(Buffer.from(`big-${i}`), Buffer.alloc(1000, 0x61));
    return b;
  }

  /**
   * Commits a big batch, then in the same event-loop turn a small put: the put is the writer
   * that must pay for the batch (the compaction L0 asks for cannot have run yet).
   */
  async function writeBigThenSmall(engine: Engine, bytes: number): Promise<number> {
    const batch = bigBatch(bytes);
    const first = engine.write(batch);
    const second = engine.put(Buffer.from('after'), Buffer.from('y'));
    await Promise.all([first, second]);
    return batch.byteSize;
  }

  const slowdownAt2: EngineOptions = {
    level0FileNumCompactionTrigger: 2,
    level0SlowdownWritesTrigger: 2,
    delayedWriteRateBytesPerSecond: RATE_BYTES_PER_SECOND,
  };

  it('at the slowdown trigger, the next writer waits for the bytes before it at the delayed rate', async () => {
    const engine = await engineWithL0(2, slowdownAt2);
    try {
      expect(engine.stats().filesPerLevel[0]).toBe(2);
      const bytes = await writeBigThenSmall(engine, 64 * 1024);
      const s = engine.stats();
      const expectedMs = (bytes / RATE_BYTES_PER_SECOND) * 1000; // 62.5 ms for 64 KiB
      expect(s.delayedWrites).toBeGreaterThanOrEqual(1);
      // Booked at commit time; the waiter arrives a few microseconds later.
      expect(s.writeDelayMs).toBeGreaterThan(0.9 * expectedMs);
      expect(s.writeDelayMs).toBeLessThanOrEqual(expectedMs);
      expect(engine.get(Buffer.from('after'))?.toString()).toBe('y');
      console.log(
        `slowdown: ${bytes} bytes at ${RATE_BYTES_PER_SECOND} B/s → next writer told to wait ${s.writeDelayMs.toFixed(2)} ms (${expectedMs.toFixed(2)} ms by the rate)`,
      );
    } finally {
      await engine.close();
    }
  });

  it('below the trigger, or with automatic compactions off, nothing is delayed', async () => {
    for (const [files, opts] of [
      [1, slowdownAt2],
      [2, { ...slowdownAt2, disableAutoCompactions: true }],
    ] as Array<[number, EngineOptions]>) {
      fs.rmSync(dir, { recursive: true, force: true });
      const engine = await engineWithL0(files, opts);
      try {
        await writeBigThenSmall(engine, 64 * 1024);
        expect(engine.stats()).toMatchObject({ delayedWrites: 0, writeDelayMs: 0 });
      } finally {
        await engine.close();
      }
    }
  });
});
