/**
 * `ingest get | scan | stats --db DIR` on a directory that takes no writes (issue 41): opened
 * read-only by themselves (cli/commands/db.ts, EngineOptions.readOnly), they answer and leave the
 * directory byte for byte unchanged; `put` fails with a message naming the read-only directory
 * (exit 1, no stack trace). The read-only directory is a tmpfs remounted read-only (the tests
 * run as root, which ignores chmod; mounting needs root: elsewhere that suite is skipped, saying
 * so). Also: `--read-only` on a writable directory takes no LOCK and writes nothing, and does not
 * go with --server; --db naming a file is a clean usage error.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { execFileSync } from 'child_process';
import { runCli as run } from '../support/cli';
import { snapshotDir } from '../support/dirSnapshot';
import { Engine } from '../../src/engine/engine';

const isRoot = process.getuid?.() === 0;
const describeAsRoot = isRoot ? describe : describe.skip;

/** No line of a JavaScript stack trace. */
const STACK_LINE = /^\s+at .+\(?.*:\d+:\d+\)?$/m;

let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-db-ro-'));
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

async function buildDb(dir: string): Promise<void> {
  const e = await Engine.open(dir);
  try {
    await e.put('a', 'in-table');
    await e.flush();
    await e.put('b', 'in-wal');
  } finally {
    await e.close();
  }
}

describeAsRoot(`database commands on a read-only mount${isRoot ? '' : ' [skipped: mounting a tmpfs needs root]'}`, () => {
  let mount: string;
  let db: string;
  beforeEach(() => {
    mount = path.join(tmp, 'mnt');
    fs.mkdirSync(mount);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', mount]);
    db = path.join(mount, 'db');
  });
  afterEach(() => execFileSync('umount', [mount]));

  test('get, scan and stats succeed and change nothing; put fails naming the read-only directory, without a stack trace', async () => {
    await buildDb(db);
    execFileSync('mount', ['-o', 'remount,ro', mount]);
    const before = snapshotDir(db);

    const get = await run('get', '--db', db, 'b');
    expect(get).toEqual({ code: 0, stdout: 'in-wal\n', stderr: '' });
    const missing = await run('get', '--db', db, 'zz');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('not found: zz\n');
    const scan = await run('scan', '--db', db, '--json');
    expect(scan.code).toBe(0);
    expect(scan.stdout).toBe('{"key":"a","value":"in-table"}\n{"key":"b","value":"in-wal"}\n');
    const stats = await run('stats', '--db', db, '--json');
    expect(stats.code).toBe(0);
    const report = JSON.parse(stats.stdout) as { lastSequence: number; levels: Array<{ files: unknown[] }> };
    expect(report.lastSequence).toBe(2);
    expect(report.levels[0].files).toHaveLength(1);

    for (const args of [['put', 'c', '3'], ['delete', 'a'], ['compact']]) {
      const r = await run(args[0], '--db', db, ...args.slice(1));
      expect({ args, code: r.code }).toEqual({ args, code: 1 });
      expect(r.stderr).toContain(`cannot write to the database directory ${db} (EROFS: a read-only file system)`);
      expect(r.stderr).not.toMatch(STACK_LINE);
    }
    expect(snapshotDir(db)).toEqual(before);
  });
});

describe('--read-only', () => {
  test('takes no LOCK and writes nothing: it reads a database another engine holds open', async () => {
    const db = path.join(tmp, 'db');
    await buildDb(db);
    const holder = await Engine.open(db);
    try {
      const before = snapshotDir(db);
      expect(await run('get', '--db', db, 'a', '--read-only')).toEqual({ code: 0, stdout: 'in-table\n', stderr: '' });
      expect((await run('scan', '--db', db, '--read-only')).stdout).toBe('a : in-table\nb : in-wal\n');
      expect((await run('stats', '--db', db, '--read-only', '--json')).code).toBe(0);
      expect(snapshotDir(db)).toEqual(before);
      // Without it a read takes the LOCK, and the holder is named.
      const locked = await run('get', '--db', db, 'a');
      expect(locked.code).toBe(1);
      expect(locked.stderr).toMatch(/database is locked/);
    } finally {
      await holder.close();
    }
  });

  test('does not go with --server (exit 2); --db naming a file is a usage error, not a stack trace', async () => {
    for (const args of [['get', 'a'], ['scan'], ['stats']]) {
      const r = await run(args[0], '--server', 'http://127.0.0.1:9', '--read-only', ...args.slice(1));
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toContain('--read-only opens --db read-only; it does not go with --server');
    }
    const file = path.join(tmp, 'not-a-dir');
    fs.writeFileSync(file, 'x');
    for (const args of [['get', 'a'], ['scan'], ['put', 'a', '1']]) {
      const r = await run(args[0], '--db', file, ...args.slice(1));
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toContain(file);
      expect(r.stderr).not.toMatch(STACK_LINE);
    }
  });
});
