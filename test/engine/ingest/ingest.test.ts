/**
 * Ingestion of external SSTs into the engine (src/engine/ingest): validation, range-tombstone-
 * aware bounds, level placement, global sequence numbers, memtable flushes, replace-range, and
 * the manifest record of all of it across a reopen.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../../src/engine/engine';
import { SstFileWriter } from '../../../src/sstwriter/sstFileWriter';
import { VersionEdit, NUM_LEVELS } from '../../../src/engine/versionEdit';
import { makeInternalKey, MAX_SEQUENCE_NUMBER, sequenceOf, userKeyOf, ValueType } from '../../../src/base/internalKey';
import { CorruptionError, IngestError } from '../../../src/util/errors';
import { shutdownInspectionWorker } from '../../../src/engine/ingest/inspectFiles';
import { mulberry32 } from '../../../src/util/random';

const BOTTOM = NUM_LEVELS - 1;

let dir: string;
let dbDir: string;
let srcDir: string;
let fileCounter = 0;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-ingest-'));
  dbDir = path.join(dir, 'db');
  srcDir = path.join(dir, 'src');
  fs.mkdirSync(srcDir);
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});
afterAll(() => shutdownInspectionWorker());

const b = (s: string): Buffer => Buffer.from(s);

/** Background compactions are off so that files stay where ingestion put them. */
function open(options: Parameters<typeof Engine.open>[1] = {}): Promise<Engine> {
  return Engine.open(dbDir, { disableAutoCompactions: true, ...options });
}
const str = (v: Buffer | null): string | null => (v === null ? null : v.toString());

/** Writes an external SST with puts `entries` (any order; sorted here) and tombstones [start, end). */
function sst(entries: Record<string, string>, tombstones: Array<[string, string]> = []): string {
  const file = path.join(srcDir, `f${fileCounter++}.sst`);
  const w = new SstFileWriter(file, { backgroundCompression: false, blockSizeBytes: 256 });
  for (const k of Object.keys(entries).sort()) w.put(b(k), b(entries[k]));
  for (const [s, e] of tombstones) w.deleteRange(b(s), b(e));
  w.finish();
  return file;
}

function dbTables(): string[] {
  return fs
    .readdirSync(dbDir)
    .filter((f) => f.endsWith('.sst'))
    .sort();
}

function scan(engine: Engine): string[] {
  const it = engine.newIterator();
  const out: string[] = [];
  for (it.first(); it.valid(); it.next()) out.push(`${it.key().toString()}=${it.value().toString()}`);
  it.close();
  return out;
}

function scanBackward(engine: Engine): string[] {
  const it = engine.newIterator();
  const out: string[] = [];
  for (it.last(); it.valid(); it.prev()) out.push(`${it.key().toString()}=${it.value().toString()}`);
  it.close();
  return out;
}

describe('level placement', () => {
  test('an empty database puts the files in the bottom level with sequence number 0', async () => {
    const e = await open();
    const f1 = sst({ a: '1', b: '2' });
    const f2 = sst({ c: '3', d: '4' });
    const r = await e.ingestExternalFiles([f2, f1]);
    // Reported in key order, both bottom, neither overlapping anything.
    expect(r.files.map((f) => [path.basename(f.path as string), f.targetLevel, f.globalSeqno])).toEqual([
      [path.basename(f1), BOTTOM, 0],
      [path.basename(f2), BOTTOM, 0],
    ]);
    expect(r.memtableFlushes).toBe(0);
    // Copied by default (RocksDB's move_files=false): the source is untouched and not shared.
    expect(r.files.every((f) => !f.linked)).toBe(true);
    expect(e.lastSequence).toBe(0);
    expect(e.levelFiles()[BOTTOM].map((f) => f.fileNumber)).toEqual(r.files.map((f) => f.fileNumber));
    expect(['a', 'b', 'c', 'd'].map((k) => str(e.get(b(k))))).toEqual(['1', '2', '3', '4']);
    expect(fs.statSync(f1).nlink).toBe(1);
    await e.close();
  });

  test('data overlapping only in L6 puts the file in L5 with the next sequence number', async () => {
    const e = await open();
    await e.ingestExternalFiles([sst({ a: 'old', m: 'old', z: 'old' })]);
    await e.put(b('unrelated'), b('x')); // lastSequence 1, in the memtable, outside the range
    const r = await e.ingestExternalFiles([sst({ m: 'new', n: 'new' })]);
    expect(r.files[0]).toMatchObject({ targetLevel: 5, globalSeqno: 2, stoppedAtLevel: BOTTOM, stopReason: 'data' });
    expect(r.memtableFlushes).toBe(0);
    expect(e.lastSequence).toBe(2);
    expect(str(e.get(b('m')))).toBe('new');
    expect(scan(e)).toEqual(['a=old', 'm=new', 'n=new', 'unrelated=x', 'z=old']);
    expect(scanBackward(e)).toEqual(['z=old', 'unrelated=x', 'n=new', 'm=new', 'a=old']);
    // Writes after the ingestion get higher sequence numbers and win.
    await e.put(b('m'), b('newer'));
    expect(e.lastSequence).toBe(3);
    expect(str(e.get(b('m')))).toBe('newer');
    await e.close();
  });

  test('file boundaries that overlap without data let the file pass to a deeper level', async () => {
    const e = await open();
    await e.ingestExternalFiles([sst({ a: '6', b: '6' }), sst({ y: '6', z: '6' })]); // L6: [a,b] [y,z]
    const straddle = await e.ingestExternalFiles([sst({ a: '5', z: '5' })]); // overlaps a and z in L6
    expect(straddle.files[0]).toMatchObject({ targetLevel: 5, globalSeqno: 1 });
    // [m, n]: L5's [a, z] spans it but holds no key in it (passed, does not fit); L6 fits.
    const r = await e.ingestExternalFiles([sst({ m: '!', n: '!' })]);
    expect(r.files[0]).toMatchObject({ targetLevel: BOTTOM, globalSeqno: 0, stoppedAtLevel: null });
    // [b, c]: L5 spans it without data; L6 holds b: stop, and L5 does not fit, so L4.
    const r2 = await e.ingestExternalFiles([sst({ b: '4', c: '4' })]);
    expect(r2.files[0]).toMatchObject({ targetLevel: 4, globalSeqno: 2, stoppedAtLevel: BOTTOM });
    expect(scan(e)).toEqual(['a=5', 'b=4', 'c=4', 'm=!', 'n=!', 'y=6', 'z=5']);
    await e.close();
  });

  test('a memtable overlapping the file is flushed first; the file then goes to L0 above it', async () => {
    const e = await open();
    await e.put(b('k'), b('memtable'));
    await e.put(b('zz'), b('other'));
    const f = sst({ j: 'ingested', k: 'ingested' });
    const plan = await e.planIngestion([f]);
    expect(plan.memtableFlushNeeded).toBe(true);
    expect(plan.files[0]).toMatchObject({ targetLevel: 0, globalSeqno: 3, stopReason: 'memtable' });
    const flushesBefore = e.stats().flushes;
    const r = await e.ingestExternalFiles([f]);
    expect(r.memtableFlushes).toBe(1);
    expect(e.stats().flushes).toBe(flushesBefore + 1);
    expect(r.files[0]).toMatchObject({ targetLevel: 0, globalSeqno: 3, stoppedAtLevel: 0, stopReason: 'data' });
    expect(e.levelFiles()[0]).toHaveLength(2);
    // L0 newest first: the ingested file, then the flushed memtable.
    expect(e.levelFiles()[0][0].fileNumber).toBe(r.files[0].fileNumber);
    expect(str(e.get(b('k')))).toBe('ingested');
    expect(scan(e)).toEqual(['j=ingested', 'k=ingested', 'zz=other']);
    await e.close();
  });

  test('allowBlockingFlush: false fails on a memtable overlap and leaves nothing behind', async () => {
    const e = await open();
    await e.put(b('k'), b('memtable'));
    const tablesBefore = dbTables();
    await expect(e.ingestExternalFiles([sst({ k: 'x' })], { allowBlockingFlush: false })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/overlaps unflushed writes/),
    });
    expect(dbTables()).toEqual(tablesBefore);
    expect(e.stats().flushes).toBe(0);
    // A file outside the memtable's keys needs no flush.
    const r = await e.ingestExternalFiles([sst({ z: 'x' })], { allowBlockingFlush: false });
    expect(r.files[0].targetLevel).toBe(BOTTOM);
    expect(str(e.get(b('k')))).toBe('memtable');
    await e.close();
  });

  test("a file whose range tombstone reaches into a neighbour's range lands above it", async () => {
    const e = await open();
    await e.ingestExternalFiles([sst({ m: 'old', n: 'old', p: 'old' })]); // L6 [m, p]
    // Points a, c only; the tombstone [b, n) reaches m: bounds [a, n), data overlap at L6.
    const reaching = sst({ a: 'new', c: 'new' }, [['b', 'n']]);
    const plan = await e.planIngestion([reaching]);
    expect(plan.files[0]).toMatchObject({ smallest: b('a'), largest: b('n'), largestExclusive: true, targetLevel: 5, globalSeqno: 1 });
    const r = await e.ingestExternalFiles([reaching]);
    expect(r.files[0]).toMatchObject({ targetLevel: 5, globalSeqno: 1 });
    const meta = e.levelFiles()[5][0];
    // The largest bound is the tombstone's exclusive end sentinel; the smallest carries the seqno.
    expect(meta.largest.equals(makeInternalKey(b('n'), MAX_SEQUENCE_NUMBER, ValueType.RangeDeletion))).toBe(true);
    expect(userKeyOf(meta.smallest).toString()).toBe('a');
    expect(sequenceOf(meta.smallest)).toBe(1);
    expect(meta).toMatchObject({ smallestSeq: 1, largestSeq: 1, globalSeqno: 1 });
    await e.close();
  });

  test('a tombstone ending exactly where a neighbour starts does not overlap it (exclusive end)', async () => {
    const e = await open();
    await e.ingestExternalFiles([sst({ m: 'old', p: 'old' })]); // L6 [m, p]
    const r = await e.ingestExternalFiles([sst({ a: 'new' }, [['b', 'm']])]); // bounds [a, m)
    expect(r.files[0]).toMatchObject({ largestExclusive: true, targetLevel: BOTTOM, globalSeqno: 0 });
    expect(e.levelFiles()[BOTTOM]).toHaveLength(2);
    expect(scan(e)).toEqual(['a=new', 'm=old', 'p=old']);
    await e.close();
  });

  test('a running compaction whose output overlaps the file stops the walk above its level', async () => {
    const e = await open();
    const compaction = e.runningCompactions.register(BOTTOM, b('a'), b('f'));
    const f = sst({ c: '1' });
    expect((await e.planIngestion([f])).files[0]).toMatchObject({
      targetLevel: 5,
      globalSeqno: 1,
      stoppedAtLevel: BOTTOM,
      stopReason: 'compaction',
    });
    compaction.release();
    expect((await e.planIngestion([f])).files[0]).toMatchObject({ targetLevel: BOTTOM, globalSeqno: 0 });
    expect(() => compaction.release()).toThrow(/released twice/);
    await e.close();
  });

  test('requireBottommost fails instead of placing higher', async () => {
    const e = await open();
    const r = await e.ingestExternalFiles([sst({ a: '1', c: '1' })], { requireBottommost: true });
    expect(r.files[0].targetLevel).toBe(BOTTOM);
    const tablesBefore = dbTables();
    await expect(e.ingestExternalFiles([sst({ b: '2', c: '2' })], { requireBottommost: true })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/cannot go to the bottom level L6: data overlap at L6, it would go to L5/),
    });
    expect(dbTables()).toEqual(tablesBefore);
    expect(str(e.get(b('c')))).toBe('1');
    await e.close();
  });

  test('a live snapshot forces a sequence number, so the snapshot does not see the files', async () => {
    const e = await open();
    await e.put(b('x'), b('1'));
    const snap = e.getSnapshot();
    const r = await e.ingestExternalFiles([sst({ k: 'v' })]);
    expect(r.files[0]).toMatchObject({ targetLevel: BOTTOM, globalSeqno: 2 });
    expect(e.get(b('k'), { snapshot: snap })).toBeNull();
    expect(str(e.get(b('k')))).toBe('v');
    snap.release();
    await e.close();
  });

  test('each overlapping file of one call gets its own consecutive sequence number', async () => {
    const e = await open();
    await e.ingestExternalFiles([sst({ a: '0', c: '0', e: '0' })]);
    const r = await e.ingestExternalFiles([sst({ a: '1' }), sst({ b: '1' }), sst({ c: '1' })]);
    // a and c overlap L6 data; b does not (L6's span covers it: it cannot go there, but to L5).
    expect(r.files.map((f) => [f.targetLevel, f.globalSeqno])).toEqual([
      [5, 1],
      [5, 0],
      [5, 2],
    ]);
    expect(e.lastSequence).toBe(2);
    await e.close();
  });
});

describe('levels in use', () => {
  test('with numLevels 4 the bottom level is L3', async () => {
    const e = await open({ numLevels: 4 });
    const r = await e.ingestExternalFiles([sst({ a: '1' })], { requireBottommost: true });
    expect(r.files[0].targetLevel).toBe(3);
    const r2 = await e.ingestExternalFiles([sst({ a: '2' })]);
    expect(r2.files[0]).toMatchObject({ targetLevel: 2, globalSeqno: 1, stoppedAtLevel: 3 });
    await e.close();
  });
});

describe('with background compactions', () => {
  test('ingestions, puts and compactions interleaved match a model', async () => {
    const e = await Engine.open(dbDir, {
      writeBufferSizeBytes: 8 * 1024,
      level0FileNumCompactionTrigger: 2,
      maxBytesForLevelBase: 16 * 1024,
      targetFileSizeBytes: 8 * 1024,
      compactionSliceEntries: 64,
      table: { blockSizeBytes: 256 },
    });
    const model = new Map<string, string>();
    const r = mulberry32(42);
    const key = (i: number): string => `key${String(i).padStart(3, '0')}`;
    const levelsUsed = new Set<number>();
    for (let step = 0; step < 50; step++) {
      if (r() < 0.4) {
        for (let j = 0; j < 20; j++) {
          const k = key(Math.floor(r() * 300));
          await e.put(b(k), b(`p${step}`));
          model.set(k, `p${step}`);
        }
        continue;
      }
      // 1-2 adjacent files over a random slice, sometimes replacing the slice.
      const start = Math.floor(r() * 250);
      const files: Record<string, string>[] = [{}, {}];
      const cut = start + 1 + Math.floor(r() * 20);
      for (let i = start; i < start + 40; i += 1 + Math.floor(r() * 3)) files[i < cut ? 0 : 1][key(i)] = `i${step}`;
      const paths = files.filter((f) => Object.keys(f).length > 0).map((f) => sst(f));
      const replace = r() < 0.3;
      const ingest = e.ingestExternalFiles(paths, replace ? { replaceRange: { start: b(key(start)), end: b(key(start + 40)) } } : {});
      const applyIngest = (): void => {
        if (replace) for (const k of [...model.keys()]) if (k >= key(start) && k < key(start + 40)) model.delete(k);
        for (const f of files) for (const [k, v] of Object.entries(f)) model.set(k, v);
      };
      if (r() < 0.5) {
        // A write while the ingestion is under way: it lands before or after, by sequence number.
        const racing = key(Math.floor(r() * 300));
        const racingPut = e.put(b(racing), b(`race${step}`)).then(() => e.lastSequence);
        const [result, racingSeq] = await Promise.all([ingest, racingPut]);
        for (const f of result.files) levelsUsed.add(f.targetLevel);
        const fileSeq = Math.max(...result.files.map((f) => f.globalSeqno));
        if (racingSeq > fileSeq) {
          applyIngest();
          model.set(racing, `race${step}`);
        } else {
          model.set(racing, `race${step}`);
          applyIngest();
        }
      } else {
        for (const f of (await ingest).files) levelsUsed.add(f.targetLevel);
        applyIngest();
      }
      if (step % 10 === 9) {
        expect(scan(e)).toEqual([...model].sort(([x], [y]) => (x < y ? -1 : 1)).map(([k, v]) => `${k}=${v}`));
      }
    }
    await e.waitForCompactions();
    const expected = [...model].sort(([x], [y]) => (x < y ? -1 : 1)).map(([k, v]) => `${k}=${v}`);
    expect(scan(e)).toEqual(expected);
    expect(scanBackward(e)).toEqual([...expected].reverse());
    expect(e.stats().compaction.count).toBeGreaterThan(0);
    expect(levelsUsed.size).toBeGreaterThan(1);
    await e.close();
    const again = await Engine.open(dbDir);
    expect(scan(again)).toEqual(expected);
    await again.close();
  });
});

describe('validation', () => {
  test('files of one call must not overlap; touching at an exclusive tombstone end is fine', async () => {
    const e = await open();
    const f1 = sst({ a: '1', m: '1' });
    const f2 = sst({ m: '2', z: '2' });
    await expect(e.ingestExternalFiles([f1, f2])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/must not overlap/),
    });
    await expect(e.ingestExternalFiles([f1, f1])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const left = sst({ a: '1' }, [['b', 'm']]); // [a, m)
    const right = sst({ m: '2', z: '2' }); // [m, z]
    const r = await e.ingestExternalFiles([right, left]);
    expect(r.files.map((f) => f.targetLevel)).toEqual([BOTTOM, BOTTOM]);
    expect(dbTables()).toHaveLength(2);
    await e.close();
  });

  test('a corrupt block is refused unless verifyChecksums is false; nothing is left behind', async () => {
    const e = await open();
    const entries: Record<string, string> = {};
    for (let i = 0; i < 200; i++) entries[`key${String(i).padStart(4, '0')}`] = `value-${i}`.repeat(3);
    const f = sst(entries);
    // Flip a byte in the middle of the data blocks (not the first or last block).
    const data = fs.readFileSync(f);
    data[Math.floor(data.length / 4)] ^= 0xff;
    fs.writeFileSync(f, data);
    await expect(e.ingestExternalFiles([f])).rejects.toMatchObject({ code: 'CORRUPTION' });
    expect(dbTables()).toEqual([]);
    // Without verification only the meta blocks and the first and last keys are read.
    const r = await e.ingestExternalFiles([f], { verifyChecksums: false });
    expect(r.files[0].targetLevel).toBe(BOTTOM);
    await e.close();
  });

  test('verification on a worker thread gives the same bounds and the same errors', async () => {
    const e = await open();
    const good = sst({ a: '1', c: '1' }, [['b', 'd']]);
    const entries: Record<string, string> = {};
    for (let i = 0; i < 200; i++) entries[`key${String(i).padStart(4, '0')}`] = `value-${i}`.repeat(3);
    const bad = sst(entries);
    const data = fs.readFileSync(bad);
    data[Math.floor(data.length / 4)] ^= 0xff;
    fs.writeFileSync(bad, data);
    const inline = await e.planIngestion([good], { verifyInWorker: false });
    const inWorker = await e.planIngestion([good], { verifyInWorker: true });
    expect(inWorker).toEqual(inline);
    expect(inWorker.files[0]).toMatchObject({ smallest: b('a'), largest: b('d'), largestExclusive: true });
    const inlineError = await e.ingestExternalFiles([bad], { verifyInWorker: false }).catch((err: unknown) => err);
    const workerError = await e.ingestExternalFiles([bad], { verifyInWorker: true }).catch((err: unknown) => err);
    expect(workerError).toBeInstanceOf(CorruptionError);
    expect(workerError).toMatchObject({
      code: 'CORRUPTION',
      file: bad,
      message: (inlineError as Error).message,
      offset: (inlineError as CorruptionError).offset,
    });
    expect(dbTables()).toEqual([]);
    await e.close();
  });

  test('files that are not external SSTs, or that are missing, are refused', async () => {
    const e = await open();
    await e.put(b('a'), b('1'));
    await e.flush();
    const flushed = path.join(dbDir, dbTables()[0]);
    const copy = path.join(srcDir, 'engine-table.sst');
    fs.copyFileSync(flushed, copy);
    await expect(e.ingestExternalFiles([copy])).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/not an external SST file/),
    });
    await expect(e.ingestExternalFiles([path.join(srcDir, 'missing.sst')])).rejects.toMatchObject({ code: 'IO' });
    await expect(e.ingestExternalFiles([])).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    fs.writeFileSync(path.join(srcDir, 'junk.sst'), Buffer.alloc(100, 7));
    await expect(e.ingestExternalFiles([path.join(srcDir, 'junk.sst')])).rejects.toBeInstanceOf(IngestError);
    expect(dbTables()).toHaveLength(1);
    await e.close();
  });

  test('a copied file (the default) can be rewritten or removed afterwards: the database keeps its own', async () => {
    const e = await open();
    const f = sst({ a: '1', b: '2' });
    const r = await e.ingestExternalFiles([f], { fileMode: 'copy' });
    expect(r.files[0].linked).toBe(false);
    expect(fs.statSync(f).nlink).toBe(1);
    // The owner rewrites its file with other rows, then truncates it: nothing changes in the database.
    fs.copyFileSync(sst({ a: 'rewritten', c: '3' }), f);
    expect(str(e.get(b('a')))).toBe('1');
    expect(e.get(b('c'))).toBeNull();
    fs.truncateSync(f, 10);
    await e.close();
    const again = await open();
    expect(['a', 'b'].map((k) => str(again.get(b(k))))).toEqual(['1', '2']);
    await again.close();
  });

  test('link shares the file (hard link); move links it and removes the given path once committed', async () => {
    const e = await open();
    const linkedFile = sst({ a: '1' });
    const linked = await e.ingestExternalFiles([linkedFile], { fileMode: 'link' });
    expect(linked.files[0].linked).toBe(true);
    expect(fs.statSync(linkedFile).nlink).toBe(2);
    const moved = sst({ m: '2' });
    const r = await e.ingestExternalFiles([moved], { fileMode: 'move' });
    expect(r.files[0].linked).toBe(true);
    expect(fs.existsSync(moved)).toBe(false);
    expect(str(e.get(b('m')))).toBe('2');
    await e.close();
  });

  test('a table changed behind the database (a linked file truncated by its owner) is refused at open, named', async () => {
    const e = await open();
    const f = sst({ a: '1', b: '2' });
    const r = await e.ingestExternalFiles([f], { fileMode: 'link' });
    await e.close();
    fs.truncateSync(f, 64);
    const table = path.join(dbDir, `${String(r.files[0].fileNumber).padStart(6, '0')}.sst`);
    await expect(open()).rejects.toMatchObject({
      code: 'CORRUPTION',
      message: expect.stringContaining(`table ${table} is 64 bytes but the MANIFEST records`),
    });
    fs.rmSync(table);
    await expect(open()).rejects.toMatchObject({
      code: 'CORRUPTION',
      message: expect.stringContaining(`table ${table}, named by the MANIFEST, cannot be read`),
    });
  });
});

describe('manifest record', () => {
  test('levels, bounds and global sequence numbers survive a reopen', async () => {
    let e = await open();
    await e.ingestExternalFiles([sst({ a: 'old', k: 'old' })]);
    const r = await e.ingestExternalFiles([sst({ k: 'new' }, [['b', 'c']])]);
    // RocksDB's manifest records a global seqno as the file's smallest and largest seqno only
    // (versionEdit.ts): after a reopen the file carries it there, and is read with it.
    const withoutGlobal = (): unknown =>
      e.levelFiles().map((l) =>
        l.map((f) => {
          const { globalSeqno, ...rest } = f;
          void globalSeqno;
          return rest;
        }),
      );
    const before = withoutGlobal();
    expect(e.levelFiles()[5][0]).toMatchObject({ globalSeqno: 1, smallestSeq: 1, largestSeq: 1 });
    await e.close();
    e = await open();
    expect(e.lastSequence).toBe(1);
    expect(withoutGlobal()).toEqual(before);
    expect(e.levelFiles()[5][0]).toMatchObject({ fileNumber: r.files[0].fileNumber, smallestSeq: 1, largestSeq: 1 });
    expect(e.levelFiles()[BOTTOM][0]).toMatchObject({ smallestSeq: 0, largestSeq: 0 });
    // The table is read with the recorded seqno: its tombstone comes back at sequence 1.
    expect(e.rangeTombstones().map((t) => [t.start.toString(), t.end.toString(), t.seq])).toEqual([['b', 'c', 1]]);
    expect(str(e.get(b('k')))).toBe('new');
    await e.close();
  });

  test("a version edit records a global seqno as RocksDB does: the file's seqnos", () => {
    const edit = new VersionEdit();
    const meta = {
      fileNumber: 7,
      fileSizeBytes: 100,
      smallest: makeInternalKey(b('a'), 9, ValueType.Value),
      largest: makeInternalKey(b('z'), 9, ValueType.Value),
      smallestSeq: 9,
      largestSeq: 9,
    };
    edit.addFile(3, { ...meta, globalSeqno: 9 });
    edit.addFile(4, { ...meta, fileNumber: 8 });
    const decoded = VersionEdit.decode(edit.encode(), 'MANIFEST-test', 0);
    expect(decoded.newFiles[0].file).toEqual(meta);
    expect(decoded.newFiles[1].file).toEqual({ ...meta, fileNumber: 8 });
  });
});

describe('planIngestion', () => {
  test('predicts what ingestExternalFiles does and changes nothing', async () => {
    const e = await open();
    await e.ingestExternalFiles([sst({ c: '0', h: '0' })]);
    const files = [sst({ a: '1', b: '1' }), sst({ c: '1', d: '1' }), sst({ x: '1' })];
    const tablesBefore = dbTables();
    const plan = await e.planIngestion(files);
    expect(dbTables()).toEqual(tablesBefore);
    expect(e.lastSequence).toBe(0);
    expect(plan.memtableFlushNeeded).toBe(false);
    const r = await e.ingestExternalFiles(files);
    expect(r.files.map((f) => ({ path: f.path, targetLevel: f.targetLevel, globalSeqno: f.globalSeqno }))).toEqual(
      plan.files.map((f) => ({ path: f.path, targetLevel: f.targetLevel, globalSeqno: f.globalSeqno })),
    );
    expect(plan.lastSequence).toBe(e.lastSequence);
    expect(plan.files.map((f) => f.targetLevel)).toEqual([BOTTOM, 5, BOTTOM]);
    await e.close();
  });
});

describe('replaceRange', () => {
  test('the tombstone table goes below the new files, all in one edit', async () => {
    const e = await open();
    await e.ingestExternalFiles([sst({ c: '1', d: '1', g: '1', z: '1' })]);
    const r = await e.ingestExternalFiles([sst({ d: '2', e: '2' })], { replaceRange: { start: b('b'), end: b('h') } });
    expect(r.files.map((f) => [f.path === null ? 'tombstone' : 'data', f.targetLevel, f.globalSeqno])).toEqual([
      ['tombstone', 5, 1],
      ['data', 4, 2],
    ]);
    const tombstoneFile = e.levelFiles()[5][0];
    expect(tombstoneFile.fileNumber).toBe(r.files[0].fileNumber);
    expect(e.rangeTombstones().map((t) => [t.start.toString(), t.end.toString(), t.seq])).toEqual([['b', 'h', 1]]);
    expect(str(e.get(b('d')))).toBe('2');
    expect(str(e.get(b('e')))).toBe('2');
    expect(str(e.get(b('z')))).toBe('1');
    await e.close();
  });

  test('with nothing to delete the tombstone table is dropped', async () => {
    const e = await open();
    await e.ingestExternalFiles([sst({ x: '1' })]);
    const r = await e.ingestExternalFiles([sst({ b: '2' })], { replaceRange: { start: b('a'), end: b('c') } });
    expect(r.files.map((f) => [f.path === null, f.targetLevel, f.globalSeqno])).toEqual([[false, BOTTOM, 0]]);
    expect(dbTables()).toHaveLength(2);
    expect(e.rangeTombstones()).toEqual([]);
    await expect(e.ingestExternalFiles([], { replaceRange: { start: b('c'), end: b('a') } })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    const manifest = path.join(dbDir, `MANIFEST-${String(e.stats().manifestNumber).padStart(6, '0')}`);
    const manifestBytes = fs.statSync(manifest).size;
    const none = await e.ingestExternalFiles([], { replaceRange: { start: b('c'), end: b('d') } });
    expect(none.files).toEqual([]);
    expect(fs.statSync(manifest).size).toBe(manifestBytes); // no edit logged
    expect(dbTables()).toHaveLength(2);
    // With no files, replaceRange alone deletes the range.
    const del = await e.ingestExternalFiles([], { replaceRange: { start: b('a'), end: b('y') } });
    expect(del.files.map((f) => [f.path, f.targetLevel, f.globalSeqno])).toEqual([[null, 5, 1]]);
    expect(e.rangeTombstones().map((t) => [t.start.toString(), t.end.toString(), t.seq])).toEqual([['a', 'y', 1]]);
    await e.close();
  });
});

describe('writes during ingestion', () => {
  test('writes racing an ingestion stay ordered by sequence number', async () => {
    const e = await open();
    await e.put(b('k'), b('before'));
    const f = sst({ k: 'ingested' });
    const ingest = e.ingestExternalFiles([f]);
    // This write lands while the ingestion links and flushes; whichever got the higher sequence
    // number must be the visible value.
    const seqs: number[] = [];
    const writer = (async () => {
      for (let i = 0; i < 20; i++) {
        await e.put(b(`w${i}`), b('x'));
        seqs.push(e.lastSequence);
      }
      await e.put(b('k'), b('racing'));
      seqs.push(e.lastSequence);
    })();
    const [r] = await Promise.all([ingest, writer]);
    const racingSeq = seqs[seqs.length - 1];
    const fileSeq = r.files[0].globalSeqno;
    expect(fileSeq).toBeGreaterThan(1);
    expect(racingSeq).not.toBe(fileSeq);
    expect(str(e.get(b('k')))).toBe(racingSeq > fileSeq ? 'racing' : 'ingested');
    expect(scan(e)).toHaveLength(21);
    await e.close();
  });
});

// Engine reads apply range deletions, so these assert unconditionally: a broken read path fails
// them instead of skipping them.
describe('range tombstones of ingested files hide older keys', () => {
  test('in get and in scans both ways', async () => {
    const e = await open();
    await e.ingestExternalFiles([sst({ m: 'old', n: 'old', p: 'old' })]);
    await e.put(b('q'), b('mem'));
    await e.ingestExternalFiles([sst({ a: 'new', c: 'new' }, [['b', 'n']])]);
    expect(str(e.get(b('m')))).toBeNull();
    expect(str(e.get(b('n')))).toBe('old');
    expect(str(e.get(b('c')))).toBe('new');
    expect(scan(e)).toEqual(['a=new', 'c=new', 'n=old', 'p=old', 'q=mem']);
    expect(scanBackward(e)).toEqual(['q=mem', 'p=old', 'n=old', 'c=new', 'a=new']);
    await e.close();
  });

  test('replaceRange replaces the range atomically, also after a reopen', async () => {
    let e = await open();
    await e.ingestExternalFiles([sst({ c: '1', d: '1', g: '1', z: '1' })]);
    await e.put(b('f'), b('mem'));
    const r = await e.ingestExternalFiles([sst({ d: '2', e: '2' })], { replaceRange: { start: b('b'), end: b('h') } });
    expect(r.memtableFlushes).toBe(1);
    const expected = ['d=2', 'e=2', 'z=1'];
    expect(scan(e)).toEqual(expected);
    expect(scanBackward(e)).toEqual([...expected].reverse());
    await e.close();
    e = await open();
    expect(scan(e)).toEqual(expected);
    expect(['c', 'd', 'f', 'g'].map((k) => str(e.get(b(k))))).toEqual([null, '2', null, null]);
    await e.close();
  });
});
