/**
 * A full disk is a state the server recovers from (issue 41, item 4): a WAL write that finds the
 * disk full makes writes answer 507 NO_SPACE and /healthz 503 "degraded" while reads go on; once
 * space is freed the server resumes the engine by itself (no restart), and every write it
 * acknowledged, before and after, is there, also after a reopen. A log that cannot be written
 * (stderr on the full disk) does not take the server down. The small disk is a tmpfs this test
 * mounts (root, as CI has), as test/server/diskFull.test.ts does.
 */
import * as fs from 'fs';
import * as path from 'path';
import { execFileSync } from 'child_process';
import { IngestServer } from '../../src/server/server';
import { Engine } from '../../src/engine/engine';
import { send, startChildServer, tmpDir } from './helpers';

const DISK_KIB = 4096;
const VALUE_BYTES = 96 * 1024;

let root: string;
let disk: string;
beforeEach(() => {
  root = tmpDir('server-disk-recovery-');
  disk = path.join(root, 'disk');
  fs.mkdirSync(disk);
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${DISK_KIB}k`, 'tmpfs', disk]);
});
afterEach(() => {
  execFileSync('umount', ['-l', disk]);
  fs.rmSync(root, { recursive: true, force: true });
});

/** Fills the disk but for about `leaveBytes`; returns the filler's path. */
function fillDisk(leaveBytes: number): string {
  const filler = path.join(disk, 'filler');
  const free = fs.statfsSync(disk).bavail * fs.statfsSync(disk).bsize;
  fs.writeFileSync(filler, Buffer.alloc(Math.max(0, free - leaveBytes)));
  return filler;
}

function valueOf(i: number): string {
  return `${i}:`.padEnd(VALUE_BYTES, String.fromCharCode(97 + (i % 26)));
}

async function waitFor(what: string, check: () => Promise<boolean>, limitMs = 10_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

test('a WAL write on a full disk: 507 and degraded while it lasts, resumed without a restart once space is back, nothing acknowledged lost', async () => {
  const db = path.join(disk, 'db');
  const server = await IngestServer.start({ dbDir: db, port: 0, log: () => undefined, recoveryPollMs: 50 });
  const acknowledged = new Map<string, string>();
  let filler = '';
  try {
    for (let i = 0; i < 3; i++) {
      expect((await send(server.url, { method: 'PUT', path: `/v1/kv/before${i}`, body: valueOf(i) })).status).toBe(204);
      acknowledged.set(`before${i}`, valueOf(i));
    }
    filler = fillDisk(VALUE_BYTES / 2);
    let refused = 0;
    for (let i = 0; i < 20 && refused === 0; i++) {
      const r = await send(server.url, { method: 'PUT', path: `/v1/kv/during${i}`, body: valueOf(100 + i) });
      if (r.status === 204) acknowledged.set(`during${i}`, valueOf(100 + i));
      else {
        expect(r.status).toBe(507);
        expect(JSON.parse(r.body.toString()).error.code).toBe('NO_SPACE');
        refused++;
      }
    }
    expect(refused).toBe(1);
    // Degraded: writes refused with 507 (even small ones), reads go on, /healthz says so.
    expect((await send(server.url, { method: 'PUT', path: '/v1/kv/small', body: 'x' })).status).toBe(507);
    const health = await send(server.url, { path: '/healthz' });
    expect(health.status).toBe(503);
    expect(JSON.parse(health.body.toString())).toMatchObject({ status: 'degraded', writable: false, error: { code: 'NO_SPACE' } });
    for (const [k, v] of acknowledged) expect((await send(server.url, { path: `/v1/kv/${k}` })).body.toString()).toBe(v);
    // Space back: the server resumes by itself.
    fs.rmSync(filler);
    await waitFor('/healthz ok', async () => (await send(server.url, { path: '/healthz' })).status === 200);
    for (let i = 0; i < 3; i++) {
      expect((await send(server.url, { method: 'PUT', path: `/v1/kv/after${i}`, body: valueOf(200 + i) })).status).toBe(204);
      acknowledged.set(`after${i}`, valueOf(200 + i));
    }
    for (const [k, v] of acknowledged) expect((await send(server.url, { path: `/v1/kv/${k}` })).body.toString()).toBe(v);
  } finally {
    await server.close();
  }
  // And after a reopen, which replays what the logs hold: every acknowledged write.
  const engine = await Engine.open(db, { createIfMissing: false });
  try {
    for (const [k, v] of acknowledged) expect(engine.get(Buffer.from(k))?.toString()).toBe(v);
  } finally {
    await engine.close();
  }
}, 60_000);

test('a log that cannot be written (stderr on the full disk) does not take the server down', async () => {
  const db = path.join(disk, 'db');
  const logFd = fs.openSync(path.join(disk, 'serve.log'), 'w');
  const server = await startChildServer(db, [], logFd);
  fs.closeSync(logFd);
  const { url, child } = server;
  try {
    const filler = fillDisk(VALUE_BYTES / 2);
    // Every 5xx answer is logged with its stack: with the disk full, the log write fails too.
    let refused = 0;
    for (let i = 0; i < 20 && refused < 3; i++) {
      const r = await send(url, { method: 'PUT', path: `/v1/kv/k${i}`, body: valueOf(i) });
      if (r.status === 507) refused++;
    }
    expect(refused).toBe(3);
    expect((await send(url, { path: '/healthz' })).status).toBe(503);
    fs.rmSync(filler);
    await waitFor('/healthz ok', async () => (await send(url, { path: '/healthz' })).status === 200);
    expect((await send(url, { method: 'PUT', path: '/v1/kv/after', body: 'v' })).status).toBe(204);
    child.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}, 60_000);
