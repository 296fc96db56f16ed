/**
 * ImportOptions.onProgress (src/ingest/progress.ts, Progress.toCallback): a library caller gets
 * the typed "progress" events of --progress json through a function, with nothing written to
 * stderr. On a fake clock: the json rate (at most one a second) plus each phase's last sample
 * when it ends; a callback that throws does not stop the caller. On a real import: events arrive
 * for the parse and then the merge, with typed fields and counts that never go back.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Progress, ProgressEvent } from '../../src/ingest/progress';
import { runImport } from '../../src/ingest/importer';

describe('Progress.toCallback on a fake clock', () => {
  it('hands over events at the json rate, and the last sample of each phase when it ends', () => {
    let now = 5_000;
    const events: ProgressEvent[] = [];
    const p = Progress.toCallback(
      (e) => events.push(e),
      () => now,
    );
    for (let i = 0; i <= 12; i++) {
      now = 5_000 + i * 100;
      p.update({ phase: 'parse (2 threads)', doneBytes: i * 10, totalBytes: 120, rows: i, totalRows: null });
    }
    p.done();
    now += 50;
    p.update({ phase: 'merge', doneBytes: 0, totalBytes: null, rows: 5, totalRows: 12 });
    now += 50;
    p.update({ phase: 'merge', doneBytes: 0, totalBytes: null, rows: 12, totalRows: 12 });
    p.done();
    p.done(); // nothing new since: no event
    expect(events.map((e) => [e.phase, e.rowsDone])).toEqual([
      ['parse', 0],
      ['parse', 10],
      ['parse', 12],
      ['merge', 12],
    ]);
    expect(events[2]).toMatchObject({ event: 'progress', bytesDone: 120, bytesTotal: 120, etaSeconds: 0 });
    expect(events[3]).toMatchObject({ rowsTotal: 12, bytesTotal: null });
  });

  it('writes no final event anywhere, and a callback that throws stops nothing', () => {
    let calls = 0;
    const p = Progress.toCallback(() => {
      calls++;
      throw new Error('a bug of the caller');
    });
    expect(() => p.update({ phase: 'parse', doneBytes: 1, totalBytes: 2, rows: 1, totalRows: null })).not.toThrow();
    const write = jest.spyOn(process.stderr, 'write');
    try {
      p.finishDone({ summary: true }, 0);
      p.finishError('IO', 'x', 1);
      expect(write).not.toHaveBeenCalled();
    } finally {
      write.mockRestore();
    }
    expect(calls).toBe(1);
  });
});

describe('onProgress on a real import', () => {
  let root: string;
  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'progress-callback-'));
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('gets typed parse then merge events, counts never going back, and nothing on stderr', async () => {
    const rows = 150_000;
    const lines: string[] = [];
    for (let i = 0; i < rows; i++) lines.push(`${String(i).padStart(8, '0')},value-${i}`);
    const csv = path.join(root, 'rows.csv');
    fs.writeFileSync(csv, `${lines.join('\n')}\n`);
    const events: ProgressEvent[] = [];
    const write = jest.spyOn(process.stderr, 'write');
    let summary;
    try {
      // In-process parse and merge: their progress comes from the readers, not from worker timers.
      summary = await runImport({ inputs: [csv], outputDir: path.join(root, 'out'), parseThreads: 0, onProgress: (e) => events.push(e) });
      expect(write).not.toHaveBeenCalled();
    } finally {
      write.mockRestore();
    }
    expect(summary.rowsWritten).toBe(rows);
    const phases = events.map((e) => e.phase);
    expect(phases[0]).toBe('parse');
    expect(phases).toContain('merge');
    // Phases in order: every parse event before the first merge event.
    expect(phases.lastIndexOf('parse')).toBeLessThan(phases.indexOf('merge'));
    for (const e of events) {
      expect(e.event).toBe('progress');
      expect(typeof e.elapsedSeconds).toBe('number');
      expect(typeof e.rowsDone).toBe('number');
      expect(e.rowsPerSecond === null || typeof e.rowsPerSecond === 'number').toBe(true);
    }
    for (const phase of ['parse', 'merge']) {
      const of = events.filter((e) => e.phase === phase);
      for (let i = 1; i < of.length; i++) {
        expect(of[i].rowsDone).toBeGreaterThanOrEqual(of[i - 1].rowsDone);
        expect(of[i].bytesDone).toBeGreaterThanOrEqual(of[i - 1].bytesDone);
        expect(of[i].elapsedSeconds).toBeGreaterThanOrEqual(of[i - 1].elapsedSeconds);
      }
    }
    const lastParse = events[phases.lastIndexOf('parse')];
    expect(lastParse.bytesTotal).toBe(fs.statSync(csv).size);
    expect(lastParse.bytesDone).toBe(lastParse.bytesTotal);
    const lastMerge = events[phases.lastIndexOf('merge')];
    expect(lastMerge.rowsTotal).toBe(rows);
    expect(lastMerge.rowsDone).toBeGreaterThan(0);
    expect(lastMerge.rowsDone).toBeLessThanOrEqual(rows);
  });

  it('refuses progress and onProgress together', async () => {
    await expect(
      runImport({ inputs: ['-'], outputDir: path.join(root, 'both'), progress: new Progress('none'), onProgress: () => undefined }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
