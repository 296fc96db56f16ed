/**
 * The LOCK's fcntl lock (src/engine/lockFile.ts through src/util/fileLock.ts): RocksDB and this
 * engine exclude each other both ways (issue 41). RocksDB's side is played by `ldb` (which fails
 * on a directory whose LOCK another process holds with fcntl F_SETLK) and by python3's
 * fcntl.lockf (the same whole-file POSIX write lock RocksDB takes, held as long as we like: ldb
 * exits at once). The lock needs the native addon: without it these suites are skipped, or fail
 * under SST_INGEST_REQUIRE_NATIVE=1 (test/support/native.ts).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ChildProcessWithoutNullStreams, spawn } from 'child_process';
import { Engine } from '../../src/engine/engine';
import { DbLock } from '../../src/engine/lockFile';
import { DbLockedError } from '../../src/util/errors';
import { nativeFileLock, nativeFileLockStatus } from '../../src/util/fileLock';
import { describeIfNative } from '../support/native';
import { describeIfRocksdb, rocksdbTools, runTool } from '../support/rocksdbTools';

/** RocksDB 7.8's words when another process holds DIR/LOCK. */
const ROCKSDB_LOCK_ERROR = /lock hold by current process|Resource temporarily unavailable|IO error: While lock file/;

const PYTHON_LOCKER = [
  'import fcntl, os, sys',
  'fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)',
  'try:',
  '    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)',
  '    print("locked", flush=True)',
  'except OSError as e:',
  '    print("refused", e.errno, flush=True)',
  '    sys.exit(0)',
  'sys.stdin.read()',
].join('\n');

let tmp: string;
let dir: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lock-fcntl-'));
  dir = path.join(tmp, 'db');
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** python3 trying fcntl.lockf on `file`; resolves with its first line ("locked" or "refused N") and the child. */
async function pythonLock(file: string): Promise<{ line: string; child: ChildProcessWithoutNullStreams }> {
  const child = spawn('python3', ['-c', PYTHON_LOCKER, file]);
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(out.trim());
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`python3 exited with ${code} before answering: ${out}`)));
  });
  return { line, child };
}

async function stop(child: ChildProcessWithoutNullStreams): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.stdin.end();
  await exited;
}

describeIfNative('the LOCK is fcntl-locked while the engine holds it', () => {
  test('the addon exports the lock calls', () => {
    expect({ loaded: nativeFileLock !== null, status: nativeFileLockStatus }).toEqual({ loaded: true, status: expect.any(String) });
  });

  test('another process cannot take an fcntl lock on LOCK while an engine has the database open; it can after close', async () => {
    const engine = await Engine.open(dir);
    let held: { line: string; child: ChildProcessWithoutNullStreams } | null = null;
    try {
      held = await pythonLock(path.join(dir, 'LOCK'));
      expect(held.line).toMatch(/^refused (11|13)$/);
    } finally {
      if (held !== null) await stop(held.child);
      await engine.close();
    }
    const after = await pythonLock(path.join(dir, 'LOCK'));
    await stop(after.child);
    expect(after.line).toBe('locked');
  });

  for (const lockContent of ['', '999999999 1\n']) {
    test(`a process holding an fcntl lock on ${lockContent === '' ? "RocksDB's empty LOCK" : "a dead opener's LOCK of ours"} makes Engine.open fail with DB_LOCKED naming LOCK and the pid`, async () => {
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, 'LOCK'), lockContent);
      const { line, child } = await pythonLock(path.join(dir, 'LOCK'));
      try {
        expect(line).toBe('locked');
        const err = await Engine.open(dir).then(
          () => null,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(DbLockedError);
        expect(err).toMatchObject({ code: 'DB_LOCKED', pid: child.pid });
        expect((err as Error).message).toContain(`held by pid ${child.pid}`);
        expect((err as Error).message).toContain(path.join(fs.realpathSync(dir), 'LOCK'));
        // Refused: the LOCK is as the holder left it.
        expect(fs.readFileSync(path.join(dir, 'LOCK'), 'latin1')).toBe(lockContent);
      } finally {
        await stop(child);
      }
      // Released: taken over, and put back as it was found when it was RocksDB's.
      const lock = DbLock.acquire(dir);
      lock.release();
      expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(lockContent === '');
    });
  }
});

describeIfRocksdb('RocksDB (ldb) and the engine exclude each other through LOCK', () => {
  describeIfNative('with the native addon', () => {
    // ldb's read commands (get, scan) open read-only, which in RocksDB takes no lock; its writes lock.
    test('ldb put, delete and compact fail with its lock error while the engine has the database open; they work after close', async () => {
      const ldb = (rocksdbTools as { ldb: string }).ldb;
      const engine = await Engine.open(dir);
      try {
        await engine.put('x', 'engine');
        for (const args of [['put', 'x', 'ldb'], ['delete', 'x'], ['compact']]) {
          const r = runTool(ldb, [`--db=${dir}`, ...args]);
          expect({ args, status: r.status }).toEqual({ args, status: 1 });
          expect(r.stdout + r.stderr).toMatch(ROCKSDB_LOCK_ERROR);
        }
      } finally {
        await engine.close();
      }
      // Nothing ldb tried landed; once the engine is closed ldb writes, and the engine reads that.
      expect(await engineGet(dir, 'x')).toBe('engine');
      const put = runTool(ldb, [`--db=${dir}`, 'put', 'x', 'ldb']);
      expect({ status: put.status, out: put.stdout.trim() }).toEqual({ status: 0, out: 'OK' });
      expect(await engineGet(dir, 'x')).toBe('ldb');
    });
  });
});

async function engineGet(db: string, key: string): Promise<string | null> {
  const e = await Engine.open(db);
  try {
    return e.get(key)?.toString() ?? null;
  } finally {
    await e.close();
  }
}
