/**
 * The server's log, from a child `ingest serve` with a token (stderr a pipe: JSON lines): every
 * request appears as exactly one "request" line with its id, method, route template, status,
 * duration and bytes; every import as its lifecycle lines (accepted, phases, its outcome with
 * counts); start-up and shutdown lines; and no line holds the token, a key or a value sent.
 */
import * as fs from 'fs';
import * as path from 'path';
import { csvOf, send, startChildServer, tmpDir } from './helpers';

const TOKEN = 'log-test-token-never-logged-7f3a9c';
const SECRET_KEY = 'key-never-logged-4711';
const SECRET_VALUE = 'value-never-logged-0815';

interface LogLine {
  level: string;
  time: number;
  pid: number;
  msg: string;
  [field: string]: unknown;
}

let root: string;
beforeAll(() => {
  root = tmpDir('server-logs-');
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

test('one JSON line per request and per import event, start-up and shutdown lines, never the token, keys or values', async () => {
  const tokenFile = path.join(root, 'token');
  fs.writeFileSync(tokenFile, `${TOKEN}\n`);
  const db = path.join(root, 'db');
  const server = await startChildServer(db, ['--token-file', tokenFile]);
  const sent: { method: string; route: string; status: number }[] = [];
  const call = async (
    method: string,
    route: string,
    pathAndQuery: string,
    body?: string,
    token: string | null = TOKEN,
  ): Promise<number> => {
    const r = await send(server.url, { method, path: pathAndQuery, body, token: token ?? undefined });
    sent.push({ method, route, status: r.status });
    return r.status;
  };
  try {
    expect(await call('PUT', '/v1/kv/{key}', `/v1/kv/${SECRET_KEY}`, SECRET_VALUE)).toBe(204);
    expect(await call('GET', '/v1/kv/{key}', `/v1/kv/${SECRET_KEY}`)).toBe(200);
    expect(await call('GET', '/v1/kv/{key}', '/v1/kv/absent')).toBe(404);
    expect(await call('GET', '/v1/stats', '/v1/stats', undefined, null)).toBe(401);
    expect(await call('GET', '/v1/scan', `/v1/scan?from=${SECRET_KEY}`)).toBe(200);
    expect(await call('GET', 'unmatched', `/nothing/${SECRET_KEY}`)).toBe(404);
    const rows = csvOf([
      ['a1', SECRET_VALUE],
      ['a2', 'x'],
    ]);
    expect(await call('POST', '/v1/imports', '/v1/imports?name=landed.csv', rows)).toBe(200);
    expect(await call('POST', '/v1/imports', '/v1/imports?name=refused.csv', csvOf([['a1', 'changed']]))).toBe(409);
    expect(await call('POST', '/v1/imports', '/v1/imports?name=bad.csv&key=1:int64', 'x,1\n')).toBe(400);
  } finally {
    server.child.kill('SIGTERM');
  }
  expect((await server.exited).code).toBe(0);
  const text = server.stderr();
  expect(text).not.toContain(TOKEN);
  expect(text).not.toContain(SECRET_KEY);
  expect(text).not.toContain(SECRET_VALUE);
  const lines = text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as LogLine);
  for (const l of lines) {
    expect(l.pid).toBe(server.pid);
    expect(typeof l.time).toBe('number');
    expect(['info', 'warn', 'error']).toContain(l.level);
  }

  // Requests: exactly one line each, in the order answered, with every field.
  const requests = lines.filter((l) => l.msg === 'request');
  expect(requests.map((l) => ({ method: l.method, route: l.route, status: l.status }))).toEqual(sent);
  expect(new Set(requests.map((l) => l.id)).size).toBe(sent.length);
  for (const l of requests) {
    expect(l.id).toMatch(/^[0-9a-z]+-\d+$/);
    expect(l.durationMs as number).toBeGreaterThanOrEqual(0);
    expect(l.bytesIn as number).toBeGreaterThan(0);
    expect(l.bytesOut as number).toBeGreaterThan(0);
  }
  const put = requests[0];
  expect(put.bytesIn as number).toBeGreaterThanOrEqual(SECRET_VALUE.length);

  // Imports: accepted (naming the request), phases, the outcome with counts; a failure with its code.
  const imports = lines.filter((l) => typeof l.importId === 'string');
  const ids = [...new Set(imports.map((l) => l.importId as string))];
  expect(ids).toHaveLength(3);
  const eventsOf = (id: string): LogLine[] => imports.filter((l) => l.importId === id);
  const importRequests = requests.filter((l) => l.route === '/v1/imports');
  ids.forEach((id, i) => {
    const events = eventsOf(id);
    expect(events[0]).toMatchObject({ msg: 'import accepted', requestId: importRequests[i].id, kind: 'csv', mode: 'import' });
    expect(events.slice(1, -1).every((e) => e.msg === 'import phase')).toBe(true);
    expect(events.filter((e) => e.msg !== 'import phase')).toHaveLength(2);
  });
  const [landed, refused, bad] = ids.map((id) => eventsOf(id));
  // The CSV pipeline's own phases (parse, merge) show when its progress reported them (at most once a second).
  const phases = landed.map((e) => e.phase ?? e.msg);
  expect([phases[0], phases[1], ...phases.slice(-2)]).toEqual(['import accepted', 'receiving', 'ingesting', 'import landed']);
  expect(phases.slice(2, -2).every((p) => p === 'parse' || p === 'merge')).toBe(true);
  expect(landed[landed.length - 1]).toMatchObject({
    outcome: 'landed',
    counts: { sstKeys: 2, new: 2, unchanged: 0, conflicts: 0 },
    rows: 2,
  });
  expect(refused[refused.length - 1]).toMatchObject({ msg: 'import conflicts', level: 'info', counts: { conflicts: 1 } });
  expect(bad[bad.length - 1]).toMatchObject({ msg: 'import failed', level: 'warn', outcome: 'failed', error: { code: 'BAD_INPUT' } });

  // Start-up and shutdown.
  expect(lines[0]).toMatchObject({ msg: 'listening', url: server.url, db });
  expect(lines[0].version).toMatch(/^\d+\.\d+\.\d+/);
  expect(lines.slice(-2).map((l) => l.msg)).toEqual(['draining', 'stopped']);
  expect(lines[lines.length - 2]).toMatchObject({ reason: 'SIGTERM', inFlight: 0 });
  // Nothing else on stderr: every line is one of these.
  expect(lines.length).toBe(requests.length + imports.length + 3);
}, 60_000);
