/**
 * The read-only open (EngineOptions.readOnly, src/engine/open.ts's openReadOnly; issue 41): on a
 * read-only file system (a tmpfs this test mounts, then remounts read-only: the tests run as
 * root, which ignores permission bits, so chmod would prove nothing) the database reads back
 * whole (tables, the WAL's data, including more than one write buffer of it), every kind of
 * write is refused with NOT_SUPPORTED, and the directory is byte for byte unchanged. A
 * read-write open of the same directory fails with an IO error that says the directory is
 * read-only. Mounting needs root; elsewhere the suite is skipped, saying so.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { execFileSync } from 'child_process';
import { Engine } from '../../src/engine/engine';
import { IngestError } from '../../src/util/errors';
import { SstFileWriter } from '../../src/sstwriter/sstFileWriter';
import { snapshotDir } from '../support/dirSnapshot';

const isRoot = process.getuid?.() === 0;
const describeAsRoot = isRoot ? describe : describe.skip;
const SUITE = `read-only open of a database on a read-only mount${isRoot ? '' : ' [skipped: mounting a tmpfs needs root]'}`;

const key = (i: number): string => `k${String(i).padStart(5, '0')}`;

describeAsRoot(SUITE, () => {
  let tmp: string;
  let mount: string;
  let dir: string;
  beforeEach(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-ro-'));
    mount = path.join(tmp, 'mnt');
    fs.mkdirSync(mount);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', mount]);
    dir = path.join(mount, 'db');
  });
  afterEach(() => {
    execFileSync('umount', [mount]);
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  /** Tables in L0 plus about 600 KB left in the WAL; returns the model. */
  async function build(): Promise<Map<string, string>> {
    const model = new Map<string, string>();
    const e = await Engine.open(dir, { writeBufferSizeBytes: 8 * 1024 * 1024 });
    try {
      for (let i = 0; i < 2000; i++) {
        await e.put(key(i), `table-${i}`);
        model.set(key(i), `table-${i}`);
      }
      await e.flush();
      for (let i = 0; i < 3000; i++) {
        await e.put(key(i * 2), `wal-${i}-${'x'.repeat(180)}`);
        model.set(key(i * 2), `wal-${i}-${'x'.repeat(180)}`);
      }
      await e.delete(key(1));
      model.delete(key(1));
      await e.deleteRange(key(3), key(6));
      for (const k of [key(3), key(4), key(5)]) model.delete(k);
    } finally {
      await e.close();
    }
    return model;
  }

  test('reads everything, refuses every write, and changes no byte of the directory', async () => {
    const model = await build();
    execFileSync('mount', ['-o', 'remount,ro', mount]);
    const before = snapshotDir(dir);
    // A small write buffer: the WAL's data replays into several memtables, all kept in memory.
    const e = await Engine.open(dir, { readOnly: true, writeBufferSizeBytes: 64 * 1024 });
    try {
      expect(e.readOnly).toBe(true);
      expect(e.stats().immutableMemtables).toBeGreaterThan(1);
      expect(e.get(key(0))?.toString()).toBe(model.get(key(0)));
      expect(e.get(key(1))).toBeNull();
      expect(e.get(key(4))).toBeNull();
      expect(e.get(key(7))?.toString()).toBe('table-7');
      const seen = new Map<string, string>();
      const it = e.newIterator();
      try {
        for (it.first(); it.valid(); it.next()) seen.set(it.key().toString(), it.value().toString());
      } finally {
        it.close();
      }
      expect(seen).toEqual(model);
      const sst = path.join(tmp, 'ext.sst');
      const w = new SstFileWriter(sst, { backgroundCompression: false });
      w.put(Buffer.from('zz'), Buffer.from('1'));
      w.finish();
      const refusals: Array<[string, () => Promise<unknown>]> = [
        ['put', () => e.put('a', 'b')],
        ['delete', () => e.delete(key(0))],
        ['deleteRange', () => e.deleteRange('a', 'b')],
        ['flush', () => e.flush()],
        ['compactRange', () => e.compactRange()],
        ['ingestExternalFiles', () => e.ingestExternalFiles([sst])],
      ];
      for (const [what, write] of refusals) {
        const err = await write().then(
          () => null,
          (x: unknown) => x,
        );
        expect({ what, err }).toEqual({ what, err: expect.any(IngestError) });
        expect({ what, code: (err as IngestError).code }).toEqual({ what, code: 'NOT_SUPPORTED' });
        expect((err as Error).message).toContain(`database ${dir} is open read-only`);
      }
      expect(e.get(key(0))?.toString()).toBe(model.get(key(0)));
    } finally {
      await e.close();
    }
    expect(snapshotDir(dir)).toEqual(before);
    expect(fs.readdirSync(dir).sort()).toEqual([...before.keys()].sort());
  });

  test('a read-write open of the read-only directory fails with an IO error naming it; a missing database is refused', async () => {
    await build();
    execFileSync('mount', ['-o', 'remount,ro', mount]);
    const before = snapshotDir(dir);
    await expect(Engine.open(dir)).rejects.toMatchObject({
      code: 'IO',
      message: expect.stringContaining(`cannot write to the database directory ${dir} (EROFS: a read-only file system)`),
    });
    await expect(Engine.open(path.join(mount, 'none'), { readOnly: true })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(snapshotDir(dir)).toEqual(before);
  });
});

describe('read-only open beside a writer', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-ro-rw-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('takes no LOCK (as RocksDB): it opens while another engine holds the database, and reads what was written before it opened', async () => {
    const writer = await Engine.open(dir);
    try {
      await writer.put('a', '1');
      await writer.flushWal();
      const before = new Set(fs.readdirSync(dir));
      const reader = await Engine.open(dir, { readOnly: true });
      try {
        expect(reader.get('a')?.toString()).toBe('1');
        await writer.put('b', '2');
        expect(reader.get('b')).toBeNull();
      } finally {
        await reader.close();
      }
      expect(new Set(fs.readdirSync(dir))).toEqual(before);
      expect(writer.get('b')?.toString()).toBe('2');
    } finally {
      await writer.close();
    }
  });
});
