import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { spawn } from 'child_process';
import { VersionEdit, FileMetaData } from '../../src/engine/versionEdit';
import { ManifestWriter, emptyManifestState, recoverManifest, readCurrent, applyEdit } from '../../src/engine/manifest';
import { FileKind, parseFileName, manifestFileName, logFileName, tableFileName } from '../../src/engine/fileNames';
import { DbLock } from '../../src/engine/lockFile';
import { makeInternalKey, ValueType } from '../../src/base/internalKey';
import { ByteSink } from '../../src/util/coding';
import { CorruptionError, IngestError } from '../../src/util/errors';
import { REPO_ROOT } from '../support/paths';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-manifest-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function meta(n: number, lo: string, hi: string, seqLo = n * 10, seqHi = n * 10 + 5): FileMetaData {
  return {
    fileNumber: n,
    fileSizeBytes: 1000 + n,
    smallest: makeInternalKey(Buffer.from(lo), seqHi, ValueType.Value),
    largest: makeInternalKey(Buffer.from(hi), seqLo, ValueType.Deletion),
    smallestSeq: seqLo,
    largestSeq: seqHi,
  };
}

describe('version edit', () => {
  test('encodes and decodes every field', () => {
    const e = new VersionEdit();
    e.comparator = 'leveldb.BytewiseComparator';
    e.logNumber = 17;
    e.nextFileNumber = 2 ** 40;
    e.lastSequence = 2 ** 50 + 3;
    e.addFile(0, meta(12, 'a', 'm'))
      .addFile(6, meta(13, 'n', 'z'))
      .deleteFile(3, 9);
    const d = VersionEdit.decode(e.encode(), 'M', 0);
    expect(d).toEqual(e);
  });

  test('an empty edit is empty', () => {
    expect(VersionEdit.decode(new VersionEdit().encode(), 'M', 0)).toEqual(new VersionEdit());
  });

  test('unknown tags, bad levels and truncation are corruption; ignorable custom fields are skipped', () => {
    const unknownTag = Buffer.from([99, 1]);
    expect(() => VersionEdit.decode(unknownTag, 'MANIFEST-000001', 77)).toThrow(
      /MANIFEST-000001 at offset 77: version edit: unknown tag 99/,
    );
    const badLevel = Buffer.from([6, 0xc8, 0x01, 1]);
    expect(() => VersionEdit.decode(badLevel, 'M', 0)).toThrow(/level 200/);
    // A RocksDB database with num_levels > 7: refused (NOT_SUPPORTED at recovery), not corruption.
    expect(VersionEdit.decode(Buffer.from([6, 9, 1]), 'M', 0).unsupported).toEqual(['num_levels above 7 (a file in level 9)']);
    const whole = new VersionEdit().addFile(1, meta(5, 'a', 'b')).encode();
    expect(() => VersionEdit.decode(whole.subarray(0, whole.length - 3), 'M', 0)).toThrow(CorruptionError);

    // A new-file record with a custom field (RocksDB's kNewFile4 rule): without bit 0x40 it is
    // skipped; with it, a field we do not know makes the open refuse (NOT_SUPPORTED, named).
    const withField = (tag: number): Buffer => {
      const body = Buffer.from(whole.subarray(0, whole.length - 1)); // drop the terminator (1)
      const s = new ByteSink();
      s.putBytes(body);
      s.putVarint32(tag);
      s.putVarint32(3);
      s.putBytes(Buffer.from('xyz'));
      s.putVarint32(1);
      return Buffer.from(s.view());
    };
    expect(VersionEdit.decode(withField(0x21), 'M', 0).newFiles[0].file).toEqual(meta(5, 'a', 'b'));
    expect(VersionEdit.decode(withField(0x50), 'M', 0).unsupported).toEqual(['new-file custom field 80 of a newer RocksDB (file 5)']);
  });
});

describe('manifest', () => {
  test('create writes a snapshot and CURRENT; appended edits replay in order', () => {
    const st = emptyManifestState();
    st.nextFileNumber = 3;
    st.levels[0].set(2, meta(2, 'a', 'c'));
    const w = ManifestWriter.create(dir, 3, { ...st, nextFileNumber: 4 });
    expect(readCurrent(dir)).toBe(3);
    expect(fs.readFileSync(path.join(dir, 'CURRENT'), 'latin1')).toBe('MANIFEST-000003\n');
    const e1 = new VersionEdit();
    e1.addFile(0, meta(4, 'b', 'd'));
    e1.nextFileNumber = 5;
    e1.lastSequence = 45;
    e1.logNumber = 4;
    w.append(e1);
    const e2 = new VersionEdit();
    e2.deleteFile(0, 2).addFile(1, meta(5, 'a', 'd'));
    e2.nextFileNumber = 6;
    w.append(e2);
    w.close();
    const rec = recoverManifest(dir)!;
    expect(rec.manifestNumber).toBe(3);
    expect(rec.editCount).toBe(3);
    expect(rec.state.nextFileNumber).toBe(6);
    expect(rec.state.lastSequence).toBe(45);
    expect(rec.state.logNumber).toBe(4);
    expect([...rec.state.levels[0].keys()]).toEqual([4]);
    expect(rec.state.levels[1].get(5)).toEqual(meta(5, 'a', 'd'));
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.dbtmp'))).toEqual([]);
  });

  test('a new manifest replaces the old one only once it is complete', () => {
    const st = emptyManifestState();
    st.nextFileNumber = 10;
    st.levels[2].set(7, meta(7, 'k', 'q'));
    ManifestWriter.create(dir, 8, st).close();
    const rec = recoverManifest(dir)!;
    rec.state.nextFileNumber = 12;
    ManifestWriter.create(dir, 11, rec.state).close();
    const again = recoverManifest(dir)!;
    expect(again.manifestNumber).toBe(11);
    expect(again.state.levels[2].get(7)).toEqual(meta(7, 'k', 'q'));
  });

  test('no CURRENT means no database', () => {
    expect(recoverManifest(dir)).toBeNull();
  });

  test('a torn last edit is dropped; a damaged middle edit is an error', () => {
    const st = emptyManifestState();
    st.nextFileNumber = 2;
    const w = ManifestWriter.create(dir, 1, st);
    const e = new VersionEdit();
    e.addFile(0, meta(2, 'a', 'b'));
    e.nextFileNumber = 3;
    const firstAppendOffset = w.sizeBytes;
    w.append(e);
    const e2 = new VersionEdit();
    e2.addFile(0, meta(3, 'c', 'd'));
    e2.nextFileNumber = 4;
    w.append(e2);
    w.close();
    const file = manifestFileName(dir, 1);
    const full = fs.readFileSync(file);
    fs.writeFileSync(file, full.subarray(0, full.length - 4));
    const rec = recoverManifest(dir)!;
    expect([...rec.state.levels[0].keys()]).toEqual([2]);
    expect(rec.droppedTail).not.toBeNull();
    const damaged = Buffer.from(full);
    damaged[firstAppendOffset + 10] ^= 0x55; // inside the first appended edit
    fs.writeFileSync(file, damaged);
    expect(() => recoverManifest(dir)).toThrow(`corruption in ${file} at offset ${firstAppendOffset}`);
  });

  test('edits that contradict the live files are corruption', () => {
    const st = emptyManifestState();
    const del = new VersionEdit().deleteFile(0, 42);
    expect(() => applyEdit(st, del, 'MANIFEST-000009', 120)).toThrow(/MANIFEST-000009 at offset 120: edit deletes file 42 from level 0/);
    applyEdit(st, new VersionEdit().addFile(0, meta(5, 'a', 'b')), 'M', 0);
    expect(() => applyEdit(st, new VersionEdit().addFile(3, meta(5, 'a', 'b')), 'M', 0)).toThrow(/already live in level 0/);
  });

  test('a next file number at or below a live file is corruption', () => {
    const st = emptyManifestState();
    st.nextFileNumber = 3;
    st.levels[0].set(5, meta(5, 'a', 'b'));
    ManifestWriter.create(dir, 2, st).close();
    expect(() => recoverManifest(dir)).toThrow(/next file number 3 is not above file number 5/);
  });
});

describe('file names', () => {
  test('round-trip through the parser', () => {
    expect(parseFileName(path.basename(manifestFileName(dir, 12)))).toEqual({ kind: FileKind.Manifest, number: 12 });
    expect(parseFileName(path.basename(logFileName(dir, 1234567)))).toEqual({ kind: FileKind.Log, number: 1234567 });
    expect(parseFileName(path.basename(tableFileName(dir, 5)))).toEqual({ kind: FileKind.Table, number: 5 });
    expect(path.basename(tableFileName(dir, 5))).toBe('000005.sst');
    expect(parseFileName('CURRENT')?.kind).toBe(FileKind.Current);
    expect(parseFileName('LOCK')?.kind).toBe(FileKind.Lock);
    expect(parseFileName('notes.txt')).toBeNull();
    expect(parseFileName('12.sst.bak')).toBeNull();
  });
});

describe('lock file', () => {
  test('a second opener in the same process is refused until the first releases', () => {
    const lock = DbLock.acquire(dir);
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(true);
    let err: unknown;
    try {
      DbLock.acquire(dir);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(IngestError);
    expect((err as IngestError).code).toBe('DB_LOCKED');
    expect((err as Error).message).toBe(`database is locked: ${dir} (held by pid ${process.pid})`);
    lock.release();
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
    DbLock.acquire(dir).release();
  });

  test('another live process holds it; after it is SIGKILLed the stale lock is taken over', async () => {
    const root = REPO_ROOT;
    const child = spawn(
      process.execPath,
      ['--require', path.join(root, 'test/support/swc-register.js'), path.join(root, 'test/support/lockHolder.ts'), dir],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d: Buffer) => {
          if (d.toString().includes('locked')) resolve();
        });
        child.on('exit', (code) => reject(new Error(`lock holder exited early with ${code}`)));
      });
      expect(() => DbLock.acquire(dir)).toThrow(`database is locked: ${dir} (held by pid ${child.pid})`);
    } finally {
      child.kill('SIGKILL');
    }
    await new Promise((resolve) => child.on('exit', resolve));
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(true);
    const lock = DbLock.acquire(dir);
    expect(fs.readFileSync(path.join(dir, 'LOCK'), 'latin1')).toMatch(new RegExp(`^${process.pid} `));
    lock.release();
  });

  // Process start times come from Linux's /proc/<pid>/stat; without it the pid alone decides (see src/engine/lockFile.ts).
  const hasProcStartTimes = fs.existsSync('/proc/self/stat');
  (hasProcStartTimes ? test : test.skip)(
    `a live pid with another start time is a reused pid: stale${hasProcStartTimes ? '' : ' [skipped: needs /proc/<pid>/stat start times]'}`,
    () => {
      // Our parent process is alive, but it did not start at tick 1.
      fs.writeFileSync(path.join(dir, 'LOCK'), `${process.ppid} 1\n`);
      DbLock.acquire(dir).release();
      // With its real start time it is a live holder.
      const stat = fs.readFileSync(`/proc/${process.ppid}/stat`, 'latin1');
      const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
      fs.writeFileSync(path.join(dir, 'LOCK'), `${process.ppid} ${start}\n`);
      expect(() => DbLock.acquire(dir)).toThrow(/held by pid/);
    },
  );

  test('an unparsable LOCK is never deleted: held by an unknown pid', () => {
    fs.writeFileSync(path.join(dir, 'LOCK'), 'garbage');
    expect(() => DbLock.acquire(dir)).toThrow(/held by pid unknown/);
    expect(fs.readFileSync(path.join(dir, 'LOCK'), 'latin1')).toBe('garbage');
  });
});
