/**
 * Engine.ingestExternalFilesChecked step by step, with a check the test holds open: writes
 * outside the span commit at once, a write inside it waits and lands after the files (it wins),
 * a write that waits too long fails with LATCH_TIMEOUT, and a check that chooses a file outside
 * the latched span is refused with nothing ingested and the latch released.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../../src/engine/engine';
import { SstFileWriter } from '../../../src/sstwriter/sstFileWriter';
import { IngestError } from '../../../src/util/errors';

const b = (s: string): Buffer => Buffer.from(s, 'latin1');

function writeSst(file: string, rows: Array<[string, string]>): string {
  const w = new SstFileWriter(file);
  for (const [k, v] of rows) w.put(b(k), b(v));
  w.finish();
  return file;
}

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((r) => {
    open = r;
  });
  return { opened, open };
}

describe('Engine.ingestExternalFilesChecked', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'checked-ingestion-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('lets writes outside the span through while the check runs, and holds writes inside it until the commit', async () => {
    const e = await Engine.open(path.join(dir, 'db'));
    await e.put(b('m1'), b('old'));
    const sst = writeSst(path.join(dir, 'a.sst'), [
      ['m1', 'new'],
      ['m5', 'new'],
    ]);
    const checkRunning = gate();
    const finishCheck = gate();
    const ingestion = e.ingestExternalFilesChecked([sst], async (ctx) => {
      expect(ctx.span.smallest.toString()).toBe('m1');
      expect(ctx.span.largest.toString()).toBe('m5');
      expect(ctx.snapshot.sequence).toBe(1);
      checkRunning.open();
      await finishCheck.opened;
      return { ingest: [sst], result: 'checked' };
    });
    await checkRunning.opened;
    const outsideSeq = await e.put(b('z'), b('free')); // outside [m1, m5]: commits now
    let insideSeq = -1;
    const inside = e.put(b('m3'), b('racing')).then((seq) => {
      insideSeq = seq;
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(insideSeq).toBe(-1); // still waiting on the latch
    expect(e.stats().latches.held).toBe(1);
    finishCheck.open();
    const done = await ingestion;
    await inside;
    expect(done.result).toBe('checked');
    expect(done.snapshotSequence).toBe(1);
    expect(outsideSeq).toBe(2);
    const commitSeq = (done.ingestion as NonNullable<typeof done.ingestion>).lastSequence;
    expect(insideSeq).toBeGreaterThan(commitSeq); // landed above the files
    expect(e.get(b('m1'))?.toString()).toBe('new');
    expect(e.get(b('m3'))?.toString()).toBe('racing');
    expect(e.stats().latches).toEqual({ held: 0, writesDelayed: 1, timeouts: 0 });
    await e.close();
  });

  it('fails a write that waits past latchWaitTimeoutMs with LATCH_TIMEOUT, and the ingestion still lands', async () => {
    const e = await Engine.open(path.join(dir, 'db'), { latchWaitTimeoutMs: 30 });
    const sst = writeSst(path.join(dir, 'a.sst'), [['k', 'v']]);
    const checkRunning = gate();
    const finishCheck = gate();
    const ingestion = e.ingestExternalFilesChecked([sst], async () => {
      checkRunning.open();
      await finishCheck.opened;
      return { ingest: [sst], result: null };
    });
    await checkRunning.opened;
    const err = await e.put(b('k'), b('late')).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(IngestError);
    expect((err as IngestError).code).toBe('LATCH_TIMEOUT');
    expect((err as Error).message).toMatch(/a put of "k" waited 30 ms for span \["k", "k"\], held by checked ingestion of 1 file/);
    finishCheck.open();
    await ingestion;
    expect(e.get(b('k'))?.toString()).toBe('v'); // the timed-out write was never applied
    await e.close();
  });

  it('refuses a choice outside the latched span, ingests nothing and releases the latch', async () => {
    const e = await Engine.open(path.join(dir, 'db'));
    const sst = writeSst(path.join(dir, 'a.sst'), [['b', '1']]);
    const wider = writeSst(path.join(dir, 'wider.sst'), [
      ['b', '1'],
      ['x', '2'],
    ]);
    const err = await e.ingestExternalFilesChecked([sst], async () => ({ ingest: [wider], result: null })).catch((x: unknown) => x);
    expect((err as IngestError).code).toBe('INVALID_ARGUMENT');
    expect((err as Error).message).toMatch(/reaches outside the latched span/);
    expect(e.get(b('b'))).toBeNull();
    expect(e.stats().latches.held).toBe(0);
    await e.put(b('b'), b('after')); // would wait forever if the latch had leaked
    expect(e.get(b('b'))?.toString()).toBe('after');
    await e.close();
  });

  it('ingests nothing when the check says so', async () => {
    const e = await Engine.open(path.join(dir, 'db'));
    const sst = writeSst(path.join(dir, 'a.sst'), [['q', '1']]);
    const r = await e.ingestExternalFilesChecked([sst], async () => ({ ingest: null, result: 'aborted' }));
    expect(r.ingestion).toBeNull();
    expect(r.result).toBe('aborted');
    expect(e.get(b('q'))).toBeNull();
    expect(e.levelFiles().every((l) => l.length === 0)).toBe(true);
    await e.close();
  });
});
