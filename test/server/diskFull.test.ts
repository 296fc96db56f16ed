/**
 * A full disk while the server spools an import's body is the server's condition, answered 507
 * NO_SPACE (retry once space is freed), not a 400 blaming a truncated body (issue 41, item 4),
 * and the message names no path of the server's. The small disk is a tmpfs this test mounts
 * (it needs root, which CI has), as test/ingest/diskFull.test.ts does.
 */
import * as fs from 'fs';
import * as path from 'path';
import { execFileSync } from 'child_process';
import { IngestServer } from '../../src/server/server';
import { send, tmpDir } from './helpers';

const DISK_KIB = 2048;

test('ENOSPC while spooling a CSV body is 507 NO_SPACE, and the server keeps serving', async () => {
  const dir = tmpDir('server-disk-full-');
  const disk = path.join(dir, 'disk');
  fs.mkdirSync(disk);
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${DISK_KIB}k`, 'tmpfs', disk]);
  const server = await IngestServer.start({ dbDir: path.join(disk, 'db'), port: 0, log: () => undefined });
  try {
    const rows = Array.from({ length: 60_000 }, (_, i) => `key${String(i).padStart(8, '0')},${'v'.repeat(60)}`);
    const body = `${rows.join('\n')}\n`;
    expect(body.length).toBeGreaterThan(2 * DISK_KIB * 1024);
    const reply = await send(server.url, { method: 'POST', path: '/v1/imports?name=big.csv', body });
    expect(reply.status).toBe(507);
    const error = (JSON.parse(reply.body.toString()) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('NO_SPACE');
    expect(error.message).toContain("the server's disk is full");
    expect(error.message).not.toContain(disk);
    // Its scratch directory went with the request; small writes still succeed.
    expect(fs.readdirSync(path.join(disk, 'db')).filter((f) => f.startsWith('.import-tmp'))).toEqual([]);
    expect((await send(server.url, { method: 'PUT', path: '/v1/kv/k', body: 'v' })).status).toBe(204);
  } finally {
    await server.close();
    execFileSync('umount', [disk]);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
