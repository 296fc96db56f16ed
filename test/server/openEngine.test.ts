/**
 * IngestServer.start({ engine }): an application serves the engine it already has open. The
 * server takes no second LOCK (which would fail: the application holds it), serves what the
 * application wrote and lets it see what clients write, and leaves the engine open when it stops;
 * the application closes it. `engine` always means an open Engine; options for one the server
 * opens are `engineOptions`, refused beside an open engine, as is a dbDir naming another place.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Engine } from '../../src/engine/engine';
import { IngestServer } from '../../src/server/server';
import { serverRecordPath } from '../../src/server/serverRecord';
import { send, tmpDir } from './helpers';

const quiet = (): void => undefined;
const roots: string[] = [];
function root(prefix: string): string {
  const dir = tmpDir(prefix);
  roots.push(dir);
  return dir;
}
afterAll(() => {
  for (const r of roots) fs.rmSync(r, { recursive: true, force: true });
});

test('serves an open engine over HTTP without reopening it, and leaves it open and usable when stopped', async () => {
  const dir = path.join(root('serve-open-engine-'), 'db');
  const engine = await Engine.open(dir);
  try {
    await engine.put('greeting', 'hello');
    const server = await IngestServer.start({ engine, host: '127.0.0.1', port: 0, log: quiet });
    try {
      expect(server.engine).toBe(engine);
      const got = await send(server.url, { path: '/v1/kv/greeting' });
      expect(got.status).toBe(200);
      expect(got.body.toString()).toBe('hello');
      const put = await send(server.url, { method: 'PUT', path: '/v1/kv/from-client', body: 'written over HTTP' });
      expect(put.status).toBe(204);
      // The application sees the client's write at once: one engine, not a copy.
      expect(engine.get('from-client')?.toString()).toBe('written over HTTP');
      expect(fs.existsSync(serverRecordPath(dir))).toBe(true);
    } finally {
      await server.close();
    }
    expect(fs.existsSync(serverRecordPath(dir))).toBe(false);
    // Still open: the server did not close the caller's engine.
    await engine.put('after', 'stop');
    expect(engine.get('after')?.toString()).toBe('stop');
    expect(engine.get('from-client')?.toString()).toBe('written over HTTP');
  } finally {
    await engine.close();
  }
  // Closed by its owner: the LOCK is free for the next opener.
  const again = await Engine.open(dir);
  expect(again.get('from-client')?.toString()).toBe('written over HTTP');
  await again.close();
});

test('an open engine refuses engineOptions and a dbDir of another database; no dbDir nor engine is refused', async () => {
  const dbRoot = root('serve-open-engine-args-');
  const engine = await Engine.open(path.join(dbRoot, 'db'));
  try {
    await expect(
      IngestServer.start({ engine, port: 0, log: quiet, engineOptions: { writeBufferSizeBytes: 1 << 20 } }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/engineOptions/) });
    await expect(IngestServer.start({ engine, dbDir: path.join(dbRoot, 'other'), port: 0, log: quiet })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/is not the directory of the engine/),
    });
    await expect(IngestServer.start({ port: 0, log: quiet })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    // The same directory spelled another way is the engine's own.
    const server = await IngestServer.start({ engine, dbDir: path.relative(process.cwd(), path.join(dbRoot, 'db')), port: 0, log: quiet });
    await server.close();
    expect(engine.get('nothing')).toBeNull();
  } finally {
    await engine.close();
  }
});

test('engineOptions reach the engine the server opens from dbDir', async () => {
  const dir = path.join(root('serve-engine-options-'), 'db');
  // A database that does not exist, with createIfMissing false: the open fails, so the option arrived.
  await expect(IngestServer.start({ dbDir: dir, port: 0, log: quiet, engineOptions: { createIfMissing: false } })).rejects.toThrow();
  const server = await IngestServer.start({ dbDir: dir, port: 0, log: quiet, engineOptions: { createIfMissing: true } });
  await server.close();
});
