import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../src/engine/engine';
import { WriteBatch } from '../../src/engine/writeBatch';
import { VersionEdit, FileMetaData } from '../../src/engine/versionEdit';
import { tableFileName } from '../../src/engine/fileNames';
import { TableFileWriter } from '../../src/sstwriter/tableFileWriter';
import { makeInternalKey, ValueType } from '../../src/base/internalKey';
import { CorruptionError, IngestError } from '../../src/util/errors';
import { perf, resetPerfContext } from '../../src/base/perfContext';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const b = (s: string): Buffer => Buffer.from(s);
const str = (v: Buffer | null): string | null => (v === null ? null : v.toString());
const files = (suffix: string): string[] =>
  fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(suffix))
    .sort();

function scan(engine: Engine, opts: Parameters<Engine['newIterator']>[0] = {}): string[] {
  const it = engine.newIterator(opts);
  const out: string[] = [];
  for (it.first(); it.valid(); it.next()) out.push(`${it.key().toString()}=${it.value().toString()}`);
  it.close();
  return out;
}

describe('open and close', () => {
  test('a second opener is refused with DB_LOCKED until the first closes', async () => {
    const e = await Engine.open(dir);
    await expect(Engine.open(dir)).rejects.toMatchObject({
      code: 'DB_LOCKED',
      message: `database is locked: ${dir} (held by pid ${process.pid})`,
    });
    await e.close();
    const again = await Engine.open(dir);
    await again.close();
  });

  test('createIfMissing and errorIfExists', async () => {
    await expect(Engine.open(path.join(dir, 'nope'), { createIfMissing: false })).rejects.toThrow(/does not exist/);
    await expect(Engine.open(dir, { createIfMissing: false })).rejects.toThrow(/holds no database/);
    // The failed open released the lock.
    const e = await Engine.open(dir);
    await e.close();
    await expect(Engine.open(dir, { errorIfExists: true })).rejects.toThrow(/already exists/);
  });

  test('close flushes nothing: data comes back from the WAL', async () => {
    const e = await Engine.open(dir);
    for (let i = 0; i < 100; i++) await e.put(b(`k${i}`), b(`v${i}`));
    await e.delete(b('k5'));
    await e.close();
    expect(files('.sst')).toEqual([]);
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
    const r = await Engine.open(dir);
    expect(r.recovery.batchesReplayed).toBe(101);
    expect(r.lastSequence).toBe(101);
    expect(str(r.get(b('k7')))).toBe('v7');
    expect(r.get(b('k5'))).toBeNull();
    await r.close();
  });

  test('recovery drops a torn WAL tail and rejects corruption in the middle', async () => {
    const e = await Engine.open(dir);
    for (let i = 0; i < 10; i++) await e.put(b(`k${i}`), b(`v${i}`));
    await e.close();
    const [wal] = files('.log');
    const walPath = path.join(dir, wal);
    const full = fs.readFileSync(walPath);
    fs.writeFileSync(walPath, full.subarray(0, full.length - 3));
    const r = await Engine.open(dir);
    expect(r.recovery.droppedTails.length).toBe(1);
    expect(str(r.get(b('k8')))).toBe('v8');
    expect(r.get(b('k9'))).toBeNull();
    expect(r.lastSequence).toBe(9);
    await r.close();

    // Damage the second record of the (still live) first WAL: intact records follow it.
    const damaged = Buffer.from(full);
    const secondRecordOffset = full.length / 10; // ten equally sized records
    damaged[secondRecordOffset + 9] ^= 0xff;
    fs.writeFileSync(walPath, damaged);
    let err: unknown;
    try {
      await Engine.open(dir);
    } catch (x) {
      err = x;
    }
    expect(err).toBeInstanceOf(CorruptionError);
    expect((err as CorruptionError).file).toBe(walPath);
    expect((err as CorruptionError).offset).toBe(secondRecordOffset);
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
  });

  test('recovered data larger than a write buffer is flushed at open and its WALs retired', async () => {
    const e = await Engine.open(dir, { writeBufferSizeBytes: 4 << 20 });
    for (let i = 0; i < 3000; i++) await e.put(b(`key${String(i).padStart(5, '0')}`), Buffer.alloc(100, i & 0xff));
    await e.close();
    const r = await Engine.open(dir, { writeBufferSizeBytes: 64 * 1024 });
    expect(r.recovery.tablesFlushedAtOpen).toBeGreaterThan(1);
    expect(files('.log').length).toBe(1);
    expect(r.get(b('key02999'))?.equals(Buffer.alloc(100, 2999 & 0xff))).toBe(true);
    expect(scan(r).length).toBe(3000);
    await r.close();
  });
});

describe('writes and reads', () => {
  test('batches are atomic and take consecutive sequence numbers', async () => {
    const e = await Engine.open(dir);
    await e.put(b('a'), b('1'));
    const batch = new WriteBatch().put(b('b'), b('2')).delete(b('a')).put(b('c'), b('3'));
    await e.write(batch);
    expect(batch.sequence).toBe(2);
    expect(e.lastSequence).toBe(4);
    expect(scan(e)).toEqual(['b=2', 'c=3']);
    await e.close();
  });

  test('snapshots pin a sequence number for gets and iterators', async () => {
    const e = await Engine.open(dir, { writeBufferSizeBytes: 8192 });
    await e.put(b('k'), b('old'));
    await e.put(b('gone'), b('here'));
    const snap = e.getSnapshot();
    await e.put(b('k'), b('new'));
    await e.delete(b('gone'));
    await e.put(b('later'), b('x'));
    await e.flush(); // the snapshot must also hold across a flush into L0
    expect(str(e.get(b('k')))).toBe('new');
    expect(str(e.get(b('k'), { snapshot: snap }))).toBe('old');
    expect(str(e.get(b('gone'), { snapshot: snap }))).toBe('here');
    expect(e.get(b('gone'))).toBeNull();
    expect(scan(e, { snapshot: snap })).toEqual(['gone=here', 'k=old']);
    expect(scan(e)).toEqual(['k=new', 'later=x']);
    expect(e.stats().liveSnapshots).toBe(1);
    snap.release();
    expect(e.stats().liveSnapshots).toBe(0);
    await e.close();
  });

  test('iterators: bounds, reverse, direction switches and seeks over memtable and tables', async () => {
    const e = await Engine.open(dir, { writeBufferSizeBytes: 8192 });
    for (let i = 0; i < 300; i++) await e.put(b(`k${String(i).padStart(3, '0')}`), b(`v${i}`));
    await e.flush();
    for (let i = 0; i < 300; i += 3) await e.delete(b(`k${String(i).padStart(3, '0')}`));
    for (let i = 1; i < 300; i += 3) await e.put(b(`k${String(i).padStart(3, '0')}`), b(`w${i}`));
    const it = e.newIterator({ lowerBound: b('k100'), upperBound: b('k110') });
    const fwd: string[] = [];
    for (it.first(); it.valid(); it.next()) fwd.push(`${it.key()}=${it.value()}`);
    expect(fwd).toEqual(['k100=w100', 'k101=v101', 'k103=w103', 'k104=v104', 'k106=w106', 'k107=v107', 'k109=w109']);
    const rev: string[] = [];
    for (it.last(); it.valid(); it.prev()) rev.push(`${it.key()}=${it.value()}`);
    expect(rev).toEqual([...fwd].reverse());
    it.seekGE(b('k105'));
    expect(it.key().toString()).toBe('k106');
    it.prev();
    expect(it.key().toString()).toBe('k104');
    it.next();
    it.next();
    expect(it.key().toString()).toBe('k107');
    it.seekLT(b('k103'));
    expect(it.key().toString()).toBe('k101');
    it.seekGE(b('k000')); // below the lower bound: clamped
    expect(it.key().toString()).toBe('k100');
    it.seekLT(b('k999')); // above the upper bound: clamped
    expect(it.key().toString()).toBe('k109');
    it.setBounds(b('k290'), undefined);
    it.seekGE(b('k000'));
    expect(it.key().toString()).toBe('k290');
    it.close();
    await e.close();
  });

  test('writers stall while too many memtables await flushing, and never fail', async () => {
    const e = await Engine.open(dir, { writeBufferSizeBytes: 4096, maxImmutableMemtables: 1, flushSliceEntries: 1 });
    const writes: Array<Promise<number>> = [];
    for (let i = 0; i < 3000; i++) writes.push(e.put(b(`key${String(i).padStart(5, '0')}`), Buffer.alloc(40, i & 0xff)));
    await Promise.all(writes);
    const stats = e.stats();
    expect(stats.writeStalls).toBeGreaterThan(0);
    expect(stats.immutableMemtables).toBeLessThanOrEqual(1);
    await e.waitForFlushes();
    expect(e.stats().flushes).toBeGreaterThan(10);
    for (let i = 0; i < 3000; i += 97) expect(e.get(b(`key${String(i).padStart(5, '0')}`))?.equals(Buffer.alloc(40, i & 0xff))).toBe(true);
    expect(scan(e).length).toBe(3000);
    // Obsolete WALs are gone: only the live one remains.
    expect(files('.log').length).toBe(1);
    await e.close();
  });

  test('deleteRange is stored, flushed and recovered, and hides what it covers', async () => {
    const e = await Engine.open(dir);
    await e.put(b('b'), b('1'));
    await e.deleteRange(b('a'), b('c'));
    const snap = e.getSnapshot();
    await e.write(new WriteBatch().deleteRange(b('x'), b('z')).put(b('y'), b('2')));
    const seen = (eng: Engine, s?: typeof snap): string[] =>
      eng
        .rangeTombstones({ snapshot: s })
        .map((t) => `${t.start}-${t.end}@${t.seq}`)
        .sort();
    expect(seen(e)).toEqual(['a-c@2', 'x-z@3']);
    expect(seen(e, snap)).toEqual(['a-c@2']);
    snap.release();
    await e.close();
    const r = await Engine.open(dir);
    expect(seen(r)).toEqual(['a-c@2', 'x-z@3']);
    await r.flush();
    expect(files('.sst').length).toBe(1);
    await r.close();
    const t = await Engine.open(dir);
    expect(t.recovery.batchesReplayed).toBe(0);
    expect(seen(t)).toEqual(['a-c@2', 'x-z@3']);
    const l0 = t.levelFiles()[0][0];
    // The file's bounds include the tombstones: smallest is a's start, largest z's sentinel end.
    expect(l0.smallest.subarray(0, 1).toString()).toBe('a');
    expect(l0.largest.subarray(0, 1).toString()).toBe('z');
    // b@1 lies under [a, c)@2; y@4 was written after [x, z)@3.
    expect(t.get(b('b'))).toBeNull();
    expect(str(t.get(b('y')))).toBe('2');
    await t.close();
  });
});

describe('flushWal', () => {
  const walBytesOnDisk = (): number => files('.log').reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);

  it('resolves once the returned writes are in the WAL file, where a process crash cannot lose them', async () => {
    const engine = await Engine.open(dir);
    try {
      const before = walBytesOnDisk();
      await engine.put(b('k1'), b('v1'));
      await engine.put(b('k2'), b('v2'));
      // Still in the writer's buffer within this turn of the event loop: not yet in the file.
      expect(walBytesOnDisk()).toBe(before);
      await engine.flushWal();
      expect(walBytesOnDisk()).toBeGreaterThan(before);
    } finally {
      await engine.close();
    }
  });

  it('resolves for every writer of one turn, and their writes are all there after a reopen', async () => {
    const engine = await Engine.open(dir);
    try {
      const writes = Array.from({ length: 50 }, (_, i) => engine.put(b(`k${i}`), b('v')).then(() => engine.flushWal()));
      await Promise.all(writes);
      const reopenedDir = dir;
      await engine.close();
      const again = await Engine.open(reopenedDir);
      expect(scan(again)).toHaveLength(50);
      await again.close();
    } finally {
      await engine.close();
    }
  });
});

describe('levels', () => {
  /** Writes a table of (key, seq, type, value) entries, sorted by the caller. */
  function writeTable(number: number, entries: Array<[string, number, ValueType, string]>): FileMetaData {
    const w = new TableFileWriter(tableFileName(dir, number), { blockSizeBytes: 256 });
    for (const [k, seq, type, v] of entries) w.add(makeInternalKey(b(k), seq, type), b(v));
    const r = w.finish();
    return {
      fileNumber: number,
      fileSizeBytes: r.fileSizeBytes,
      smallest: r.smallestKey,
      largest: r.largestKey,
      smallestSeq: r.smallestSeq,
      largestSeq: r.largestSeq,
    };
  }

  test('get and iterators find files placed in deeper levels, newest level first', async () => {
    const e = await Engine.open(dir);
    // Take sequence numbers 1..1000 so the files' keys are visible.
    const filler = new WriteBatch();
    for (let i = 0; i < 1000; i++) filler.put(b('~filler'), b(String(i)));
    await e.write(filler);
    const snapAt = (seq: number) => ({ sequence: seq }) as unknown as ReturnType<Engine['getSnapshot']>;

    // L3: old versions of k00..k99 (seq 1..100) in ten files; L2: newer versions of the even
    // keys (seq 200+), a deletion of k10; L1: the newest k50.
    const edit = new VersionEdit();
    for (let f = 0; f < 10; f++) {
      const entries: Array<[string, number, ValueType, string]> = [];
      for (let i = f * 10; i < f * 10 + 10; i++) entries.push([`k${String(i).padStart(2, '0')}`, i + 1, ValueType.Value, `old${i}`]);
      edit.addFile(3, writeTable(e.newFileNumber(), entries));
    }
    const l2: Array<[string, number, ValueType, string]> = [];
    for (let i = 0; i < 100; i += 2)
      l2.push([`k${String(i).padStart(2, '0')}`, 200 + i, i === 10 ? ValueType.Deletion : ValueType.Value, i === 10 ? '' : `mid${i}`]);
    edit.addFile(2, writeTable(e.newFileNumber(), l2.slice(0, 25)));
    edit.addFile(2, writeTable(e.newFileNumber(), l2.slice(25)));
    edit.addFile(1, writeTable(e.newFileNumber(), [['k50', 900, ValueType.Value, 'new50']]));
    e.applyVersionEdit(edit);
    expect(e.stats().filesPerLevel).toEqual([0, 1, 2, 10, 0, 0, 0]);

    expect(str(e.get(b('k51')))).toBe('old51');
    expect(str(e.get(b('k52')))).toBe('mid52');
    expect(e.get(b('k10'))).toBeNull();
    expect(str(e.get(b('k50')))).toBe('new50');
    expect(str(e.get(b('k50'), { snapshot: snapAt(500) }))).toBe('mid50');
    expect(str(e.get(b('k50'), { snapshot: snapAt(150) }))).toBe('old50');
    expect(e.get(b('k5'))).toBeNull();

    // One file per deeper level, found by binary search: a handful of comparisons, one Bloom probe per level holding the key's range.
    resetPerfContext();
    e.get(b('k77'));
    expect(perf.bloomChecks).toBeLessThanOrEqual(2);
    expect(perf.keyComparisons).toBeLessThan(40);

    const all = scan(e, { lowerBound: b('k'), upperBound: b('l') });
    expect(all.length).toBe(99);
    expect(all[0]).toBe('k00=mid0');
    expect(all).toContain('k50=new50');
    expect(all).not.toContain('k10=old10');
    const reverse: string[] = [];
    const it = e.newIterator({ upperBound: b('k20') });
    for (it.last(); it.valid(); it.prev()) reverse.push(it.key().toString());
    it.close();
    expect(reverse.length).toBe(19);
    expect(reverse[0]).toBe('k19');
    await e.close();
    // The placement is durable.
    const r = await Engine.open(dir);
    expect(r.stats().filesPerLevel).toEqual([0, 1, 2, 10, 0, 0, 0]);
    expect(str(r.get(b('k50')))).toBe('new50');
    await r.close();
  });

  test('a file dropped from the version is deleted once no iterator reads it', async () => {
    const e = await Engine.open(dir);
    await e.put(b('x'), b('1'));
    const f = writeTable(e.newFileNumber(), [['a', 1, ValueType.Value, 'v']]);
    e.applyVersionEdit(new VersionEdit().addFile(1, f));
    const it = e.newIterator();
    it.first();
    expect(it.key().toString()).toBe('a');
    e.applyVersionEdit(new VersionEdit().deleteFile(1, f.fileNumber));
    expect(fs.existsSync(tableFileName(dir, f.fileNumber))).toBe(true);
    expect(e.get(b('a'))).toBeNull();
    it.next();
    expect(it.key().toString()).toBe('x');
    it.close();
    expect(fs.existsSync(tableFileName(dir, f.fileNumber))).toBe(false);
    await e.close();
  });

  test('an edit that contradicts the version is refused and nothing is logged', async () => {
    const e = await Engine.open(dir);
    expect(() => e.applyVersionEdit(new VersionEdit().deleteFile(2, 12345))).toThrow(IngestError);
    await e.close();
    const r = await Engine.open(dir);
    expect(r.stats().filesPerLevel).toEqual([0, 0, 0, 0, 0, 0, 0]);
    await r.close();
  });
});
