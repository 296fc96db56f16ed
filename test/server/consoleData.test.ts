/**
 * The web console's data endpoints against an in-process server: GET /v1/console/imports shows a
 * running import's phase and advancing bytes (and one queued behind it), then its outcome and
 * counts; GET /v1/console/imports/{id}/conflicts pages and filters a conflicting import's report
 * and equals the 409's JSON report; GET /v1/console/history counts exactly the reads and writes
 * sent; /v1/stats shows each file's range deletions.
 */
import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { IngestServer } from '../../src/server/server';
import type { ImportView, ConflictPage } from '../../src/server/importRegistry';
import type { HistorySample } from '../../src/server/historySampler';
import type { ReportedConflict } from '../../src/conflict/report';
import { csvOf, expectError, send, tmpDir } from './helpers';

const TOKEN = 'console-data-token-0123456789';
let root: string;
beforeAll(() => {
  root = tmpDir('server-console-data-');
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

async function withServer(name: string, fn: (s: IngestServer) => Promise<void>): Promise<void> {
  const server = await IngestServer.start({
    dbDir: path.join(root, name),
    port: 0,
    token: TOKEN,
    limits: { maxConcurrentImports: 1, maxQueuedImports: 4 },
    log: () => undefined,
  });
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

async function getJson<T>(url: string, pathAndQuery: string): Promise<T> {
  const r = await send(url, { path: pathAndQuery, token: TOKEN });
  if (r.status !== 200) throw new Error(`GET ${pathAndQuery}: ${r.status} ${r.body.toString()}`);
  return JSON.parse(r.body.toString()) as T;
}

const imports = (url: string): Promise<{ running: ImportView[]; recent: ImportView[] }> => getJson(url, '/v1/console/imports');

/** Polls until `ready` returns a value (at most 200 tries, 25 ms apart), else fails naming `what`. */
async function until<T>(what: string, probe: () => Promise<T | null>): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const got = await probe();
    if (got !== null) return got;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A CSV import whose body is written by the test, chunk by chunk. */
function streamingImport(url: string, query: string): { req: http.ClientRequest; reply: Promise<{ status: number; body: string }> } {
  const u = new URL(url);
  let req: http.ClientRequest | null = null;
  const reply = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req = http.request(
      {
        host: u.hostname,
        port: Number(u.port),
        method: 'POST',
        path: `/v1/imports${query}`,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/csv' },
        agent: false,
      },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
  });
  return { req: req as unknown as http.ClientRequest, reply };
}

test('a running import shows its phase and advancing bytes, one queued behind it, then both outcomes and counts', async () => {
  await withServer('progress', async (s) => {
    const first = streamingImport(s.url, '?name=slow.csv');
    const part1 = csvOf(Array.from({ length: 20 }, (_, i) => [`a${String(i).padStart(3, '0')}`, `v${i}`] as const));
    first.req.write(part1);
    const receiving = await until('the first import receiving its first part', async () => {
      const v = (await imports(s.url)).running.find((r) => r.name === 'slow.csv');
      return v !== undefined && v.phase === 'receiving' && v.bytes === part1.length ? v : null;
    });
    expect(receiving).toMatchObject({ kind: 'csv', mode: 'import', outcome: 'running', finishedAt: null, counts: null });
    expect(receiving.id).toMatch(/^imp-[0-9a-z]+-1$/);
    // The second waits for the only slot.
    const second = send(s.url, { method: 'POST', path: '/v1/imports?name=next.csv', token: TOKEN, body: csvOf([['b001', 'x']]) });
    const queued = await until('the second import queued', async () => {
      const v = (await imports(s.url)).running.find((r) => r.name === 'next.csv');
      return v?.phase === 'queued' ? v : null;
    });
    expect(queued.id).toMatch(/-2$/);
    const part2 = csvOf(Array.from({ length: 30 }, (_, i) => [`a${String(i + 20).padStart(3, '0')}`, `v${i}`] as const));
    first.req.write(part2);
    await until('the first import receiving its second part', async () => {
      const v = (await imports(s.url)).running.find((r) => r.id === receiving.id);
      return v !== undefined && v.bytes === part1.length + part2.length ? v : null;
    });
    first.req.end();
    expect((await first.reply).status).toBe(200);
    expect((await second).status).toBe(200);
    const after = await imports(s.url);
    expect(after.running).toEqual([]);
    // Newest first.
    expect(after.recent.map((r) => r.id)).toEqual([queued.id, receiving.id]);
    expect(after.recent[1]).toMatchObject({
      phase: 'done',
      outcome: 'landed',
      counts: { sstKeys: 50, new: 50, unchanged: 0, conflicts: 0 },
      rows: 50,
      bytes: part1.length + part2.length,
      error: null,
      reportAvailable: true,
    });
    expect(Date.parse(after.recent[1].finishedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(after.recent[1].startedAt));
  });
});

test("a conflicting import's report is paged and filtered, and equals the 409's JSON report", async () => {
  await withServer('conflicts', async (s) => {
    const keys = Array.from({ length: 120 }, (_, i) => `${i % 3 === 0 ? 'x' : 'y'}${String(i).padStart(4, '0')}`);
    expect(
      (await send(s.url, { method: 'POST', path: '/v1/imports?name=base.csv', token: TOKEN, body: csvOf(keys.map((k) => [k, 'old'])) }))
        .status,
    ).toBe(200);
    const changed = csvOf(keys.map((k) => [k, `new-${k}`]));
    const refused = await send(s.url, {
      method: 'POST',
      path: '/v1/imports?name=night.csv&max-reported=1000',
      token: TOKEN,
      body: changed,
    });
    expect(refused.status).toBe(409);
    const report = (JSON.parse(refused.body.toString()) as { conflictReport: { conflicts: ReportedConflict[] } }).conflictReport;
    expect(report.conflicts).toHaveLength(120);
    const { recent } = await imports(s.url);
    expect(recent[0]).toMatchObject({
      name: 'night.csv',
      outcome: 'conflicts',
      counts: { sstKeys: 120, new: 0, unchanged: 0, conflicts: 120 },
    });
    const id = recent[0].id;
    const base = `/v1/console/imports/${id}/conflicts`;
    // Every page in turn: their concatenation is the report.
    const paged: ReportedConflict[] = [];
    for (let offset = 0; offset < 130; offset += 50) {
      const page = await getJson<ConflictPage>(s.url, `${base}?offset=${offset}&limit=50`);
      expect(page).toMatchObject({ id, total: 120, offset, limit: 50 });
      paged.push(...page.conflicts);
    }
    expect(paged).toEqual(report.conflicts);
    const xs = await getJson<ConflictPage>(s.url, `${base}?prefix=x&limit=500`);
    expect(xs.total).toBe(40);
    expect(xs.conflicts).toEqual(report.conflicts.filter((c) => c.key.startsWith('x')));
    const xPage = await getJson<ConflictPage>(s.url, `${base}?prefix=x&offset=30&limit=20`);
    expect(xPage.conflicts).toEqual(xs.conflicts.slice(30));
    expect((await getJson<ConflictPage>(s.url, `${base}?file=night.csv&prefix=y00&limit=500`)).conflicts).toEqual(
      report.conflicts.filter((c) => c.key.startsWith('y00') && c.source?.file === 'night.csv'),
    );
    expect(await getJson<ConflictPage>(s.url, `${base}?file=base.csv`)).toEqual({ id, total: 0, offset: 0, limit: 50, conflicts: [] });
    expectError(await send(s.url, { path: `${base}?limit=501`, token: TOKEN }), 400, 'USAGE', 'limit must be an integer 0..500');
    expectError(
      await send(s.url, { path: '/v1/console/imports/imp-none-1/conflicts', token: TOKEN }),
      404,
      'NOT_FOUND',
      'not among the recent imports',
    );
    expectError(await send(s.url, { path: base }), 401, 'UNAUTHORIZED', '');
  });
});

test("history samples count exactly the reads and writes sent; stats show each file's range deletions", async () => {
  await withServer('history', async (s) => {
    const reads = 7;
    const writes = 4;
    for (let i = 0; i < writes - 1; i++)
      expect((await send(s.url, { method: 'PUT', path: `/v1/kv/h${i}`, token: TOKEN, body: 'v' })).status).toBe(204);
    const batch = JSON.stringify([{ op: 'deleteRange', start: 'h1', end: 'h2' }]);
    expect(
      (await send(s.url, { method: 'POST', path: '/v1/batch', token: TOKEN, body: batch, headers: { 'content-type': 'application/json' } }))
        .status,
    ).toBe(200);
    for (let i = 0; i < reads - 1; i++) await send(s.url, { path: `/v1/kv/h${i}`, token: TOKEN });
    expect((await send(s.url, { path: '/v1/scan', token: TOKEN })).status).toBe(200);
    // Not reads or writes: stats, the history itself.
    await getJson(s.url, '/v1/stats');
    const samples = await until('samples holding every request', async () => {
      const h = await getJson<{ intervalMs: number; samples: HistorySample[] }>(s.url, '/v1/console/history');
      expect(h.intervalMs).toBe(1000);
      const sum = (f: (x: HistorySample) => number): number => h.samples.reduce((n, x) => n + f(x), 0);
      expect(sum((x) => x.reads)).toBeLessThanOrEqual(reads);
      return sum((x) => x.reads) === reads && sum((x) => x.writes) === writes ? h.samples : null;
    });
    const busy = samples.filter((x) => x.reads + x.writes > 0);
    for (const x of busy) {
      expect(x.latencyP50Ms).not.toBeNull();
      expect(x.latencyP99Ms as number).toBeGreaterThanOrEqual(x.latencyP50Ms as number);
    }
    for (let i = 1; i < samples.length; i++) expect(samples[i].t).toBeGreaterThan(samples[i - 1].t);
    await s.engine.flush();
    const stats = await getJson<{ levels: { files: { rangeDeletions: number }[] }[] }>(s.url, '/v1/stats');
    expect(stats.levels.flatMap((l) => l.files.map((f) => f.rangeDeletions))).toEqual([1]);
  });
});
