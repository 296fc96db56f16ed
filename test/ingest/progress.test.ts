/**
 * Progress as scripts and people read it (src/ingest/progress.ts, progressMeter.ts), on a fake
 * clock: no rate before a phase has run a second, rates over the last second or more, counts that
 * never go back, bytes never past their total, and an ETA that converges on the time left.
 */
import { Writable } from 'stream';
import { Progress, ProgressEvent } from '../../src/ingest/progress';
import { ProgressMeter, WINDOW_MS } from '../../src/ingest/progressMeter';

/** A stream that keeps what is written. */
function capture(): { out: Writable; text: () => string } {
  let text = '';
  const out = new Writable({
    write(chunk: Buffer, _enc, done) {
      text += chunk.toString();
      done();
    },
  });
  return { out, text: () => text };
}

const sample = (rowsDone: number, bytesDone: number, bytesTotal: number | null = 1000, rowsTotal: number | null = null) => ({
  rowsDone,
  rowsTotal,
  bytesDone,
  bytesTotal,
});

describe('the progress meter', () => {
  it('gives no rate or ETA in a phase first second, then rates over the window', () => {
    const m = new ProgressMeter();
    m.observe('parse', sample(10, 10), 0);
    m.observe('parse', sample(20, 20), 1);
    // The first sample a millisecond in: no rate, not 10 rows / 0.001 s.
    expect(m.read(1)).toMatchObject({ rowsPerSecond: null, bytesPerSecond: null, etaSeconds: null, rowsDone: 20 });
    m.observe('parse', sample(110, 110), WINDOW_MS);
    // From the sample at 0 (10 rows) to 110 rows in one second.
    expect(m.read(WINDOW_MS)).toMatchObject({ rowsPerSecond: 100, bytesPerSecond: 100, etaSeconds: 8.9 });
    // A slowdown shows within a window: 10 more rows in the next second, not the average since the start.
    m.observe('parse', sample(115, 115), 1500);
    m.observe('parse', sample(120, 120), 2 * WINDOW_MS);
    expect(m.read(2 * WINDOW_MS).rowsPerSecond).toBe(10);
  });

  it('holds counts that dip and clamps bytes at their total; a new phase starts over', () => {
    const m = new ProgressMeter();
    m.observe('parse', sample(594_904, 900), 0);
    m.observe('parse', sample(248_654, 950), 500);
    expect(m.read(500)).toMatchObject({ rowsDone: 594_904, bytesDone: 950 });
    // A range parsed past its stop, or twice: bytes read pass the file's size.
    m.observe('parse', sample(600_000, 1010), 1200);
    expect(m.read(1200)).toMatchObject({ bytesDone: 1000, bytesTotal: 1000, etaSeconds: 0 });
    expect(m.observe('merge', sample(5, 0, null, 1000), 1300)).toBe(true);
    expect(m.read(1300)).toMatchObject({ rowsDone: 5, bytesDone: 0, rowsPerSecond: null, phaseSeconds: 0 });
  });

  it('has a rate however often it is observed (a sample a millisecond for two seconds)', () => {
    const m = new ProgressMeter();
    for (let t = 0; t <= 2 * WINDOW_MS; t++) m.observe('parse', sample(t * 3, t * 3, null), t);
    // Three rows a millisecond: 3,000 a second over the last second or more.
    expect(m.read(2 * WINDOW_MS).rowsPerSecond).toBe(3000);
  });

  it('has an ETA that converges on the time left at a steady rate, from rows when bytes have no total', () => {
    const m = new ProgressMeter();
    const totalRows = 10_000;
    const etas: number[] = [];
    for (let t = 0; t <= 10_000; t += 250) {
      m.observe('merge', sample(t, 0, null, totalRows), t); // one row a millisecond
      const eta = m.read(t).etaSeconds;
      if (eta !== null) etas.push(eta);
      if (t >= WINDOW_MS) expect(eta).toBeCloseTo((totalRows - t) / 1000, 6);
    }
    expect(etas[etas.length - 1]).toBe(0);
    for (let i = 1; i < etas.length; i++) expect(etas[i]).toBeLessThan(etas[i - 1]);
  });
});

describe('--progress json on a fake clock', () => {
  it('writes at most one event a second, with null rates until the phase has run a second', () => {
    let now = 1_000_000;
    const { out, text } = capture();
    const p = new Progress('json', out, () => now);
    for (let i = 0; i <= 30; i++) {
      now = 1_000_000 + i * 100;
      p.update({ phase: 'parse (2 threads)', doneBytes: i * 10_000, totalBytes: 300_000, rows: i * 100, totalRows: null });
    }
    p.finishDone({ ok: true }, 0);
    const events = text()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as ProgressEvent | { event: 'done'; exitCode: number });
    const progress = events.filter((e): e is ProgressEvent => e.event === 'progress');
    expect(progress.map((e) => e.elapsedSeconds)).toEqual([0, 1, 2, 3]);
    expect(progress[0]).toMatchObject({ phase: 'parse', rowsPerSecond: null, bytesPerSecond: null, etaSeconds: null });
    // 100 rows and 10,000 bytes each 100 ms: 1,000 rows/s; the ETA is the bytes left over that rate.
    expect(progress[1]).toMatchObject({ rowsPerSecond: 1000, bytesPerSecond: 100_000, etaSeconds: 2, bytesDone: 100_000 });
    expect(progress[3]).toMatchObject({ bytesDone: 300_000, etaSeconds: 0 });
    expect(events[events.length - 1]).toMatchObject({ event: 'done', exitCode: 0 });
  });
});
