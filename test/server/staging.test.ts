/**
 * Staged ingestion (src/server/stagedImports.ts, routes/stagedFiles.ts): SSTs PUT one by one,
 * listed, retried, refused when different or corrupt, committed at once in one ingestion; kept
 * across a restart; deleted; bounded by the staging quota; expired when untouched.
 */
import * as fs from 'fs';
import * as path from 'path';
import { IngestServer, ServeOptions } from '../../src/server/server';
import { STAGED_IMPORTS_DIR } from '../../src/server/stagedImports';
import { entriesAsMap, expectError, scanAll, send, tmpDir, writeSst } from './helpers';

let root: string;
const servers: IngestServer[] = [];

beforeEach(() => {
  root = tmpDir('staging-');
});
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
  fs.rmSync(root, { recursive: true, force: true });
});

async function start(dbDir: string, opts: Partial<ServeOptions> = {}): Promise<IngestServer> {
  const server = await IngestServer.start({ dbDir, port: 0, log: () => undefined, ...opts });
  servers.push(server);
  return server;
}

async function stop(server: IngestServer): Promise<void> {
  servers.splice(servers.indexOf(server), 1);
  await server.close();
}

function sst(name: string, entries: ReadonlyArray<readonly [string, string]>): Buffer {
  return writeSst(path.join(root, name), entries);
}

function put(url: string, id: string, name: string, body: Buffer): ReturnType<typeof send> {
  return send(url, {
    method: 'PUT',
    path: `/v1/imports/${id}/files/${name}`,
    body,
    headers: { 'content-type': 'application/octet-stream' },
  });
}

function json(reply: { body: Buffer }): Record<string, unknown> {
  return JSON.parse(reply.body.toString('utf8')) as Record<string, unknown>;
}

const A = [
  ['a1', 'one'],
  ['a2', 'two'],
] as const;
const B = [
  ['b1', 'three'],
  ['b2', 'four'],
] as const;

test('stage two SSTs, list them, retry one, refuse a different and a corrupt file, commit both as one', async () => {
  const db = path.join(root, 'db');
  const server = await start(db);
  const a = sst('a.sst', A);
  const b = sst('b.sst', B);
  const first = await put(server.url, 'job1', '000001.sst', a);
  expect(first.status).toBe(201);
  expect(json(first)).toMatchObject({ id: 'job1', name: '000001.sst', sizeBytes: a.length, staged: true });
  expect((await put(server.url, 'job1', '000002.sst', b)).status).toBe(201);

  const listed = json(await send(server.url, { path: '/v1/imports/job1' }));
  expect((listed.files as Array<{ name: string }>).map((f) => f.name)).toEqual(['000001.sst', '000002.sst']);
  expect(listed.totalBytes).toBe(a.length + b.length);
  expect(json(await send(server.url, { path: '/v1/imports' })).imports).toEqual([listed]);

  // A retry of the same bytes: accepted, nothing staged again.
  const retry = await put(server.url, 'job1', '000001.sst', a);
  expect(retry.status).toBe(200);
  expect(json(retry)).toMatchObject({ staged: false, identical: true, sha256: json(first).sha256 });
  expect(server.staging.counters).toMatchObject({ filesStaged: 2, identicalPuts: 1 });
  // Other bytes under a staged name (same size or not): 409.
  expectError(await put(server.url, 'job1', '000001.sst', b), 409, 'CONFLICT', '000001.sst');
  const sameSize = Buffer.from(a);
  sameSize[sameSize.length - 1] ^= 0xff;
  expectError(await put(server.url, 'job1', '000001.sst', sameSize), 409, 'CONFLICT', 'different');
  // A corrupt SST: 422 naming it as sent, not kept.
  const corrupt = Buffer.from(sst('c.sst', [['c1', 'x'.repeat(200)]]));
  corrupt[20] ^= 0xff;
  const refused = expectError(await put(server.url, 'job1', '000003.sst', corrupt), 422, 'CORRUPTION', '000003.sst');
  expect(refused.message).not.toContain(db);
  expect(json(await send(server.url, { path: '/v1/imports/job1' }))).toEqual(listed);

  // Data inside both files' ranges: each file then takes a global seqno above it.
  for (const key of ['a15', 'b15']) expect((await send(server.url, { method: 'PUT', path: `/v1/kv/${key}`, body: 'w' })).status).toBe(204);
  const before = server.engine.lastSequence;
  const commit = await send(server.url, { method: 'POST', path: '/v1/imports/job1/commit' });
  expect(commit.status).toBe(200);
  const doc = json(commit) as { uploads: Array<{ name: string }>; ingest: { files: Array<{ globalSeqno: number }> } };
  expect(doc.uploads.map((u) => u.name)).toEqual(['000001.sst', '000002.sst']);
  // Both files in one ingestion (one version edit): consecutive seqnos right after the writes.
  expect(doc.ingest.files.map((f) => f.globalSeqno)).toEqual([before + 1, before + 2]);
  expect(server.engine.lastSequence).toBe(before + 2);
  expect(entriesAsMap(await scanAll(server.url))).toEqual(new Map([...A, ...B, ['a15', 'w'], ['b15', 'w']]));
  expect(fs.existsSync(path.join(db, STAGED_IMPORTS_DIR, 'job1'))).toBe(false);
  expectError(await send(server.url, { path: '/v1/imports/job1' }), 404, 'NOT_FOUND', 'job1');
  expect(json(await send(server.url, { path: '/v1/imports' })).imports).toEqual([]);
});

test('a commit that aborts on conflicts removes the import; a plan keeps it', async () => {
  const server = await start(path.join(root, 'db'));
  expect((await send(server.url, { method: 'PUT', path: '/v1/kv/a1', body: 'old' })).status).toBe(204);
  expect((await put(server.url, 'job', '1.sst', sst('a.sst', A))).status).toBe(201);
  const plan = await send(server.url, { method: 'POST', path: '/v1/imports/job/commit?mode=plan' });
  expect(plan.status).toBe(200);
  expect((json(plan) as { conflictReport: { summary: { conflicts: number } } }).conflictReport.summary.conflicts).toBe(1);
  expect((await send(server.url, { path: '/v1/imports/job' })).status).toBe(200);
  const aborted = await send(server.url, { method: 'POST', path: '/v1/imports/job/commit' });
  expectError(aborted, 409, 'CONFLICT', /conflict/i);
  expect((await send(server.url, { path: '/v1/imports/job' })).status).toBe(404);
  expect(entriesAsMap(await scanAll(server.url))).toEqual(new Map([['a1', 'old']]));
});

test('a staged import survives a restart of the server and commits after it', async () => {
  const db = path.join(root, 'db');
  let server = await start(db);
  expect((await put(server.url, 'keep', '1.sst', sst('a.sst', A))).status).toBe(201);
  const listed = json(await send(server.url, { path: '/v1/imports/keep' }));
  await stop(server);
  server = await start(db);
  expect(json(await send(server.url, { path: '/v1/imports/keep' }))).toEqual(listed);
  expect((await put(server.url, 'keep', '2.sst', sst('b.sst', B))).status).toBe(201);
  expect((await send(server.url, { method: 'POST', path: '/v1/imports/keep/commit' })).status).toBe(200);
  expect(entriesAsMap(await scanAll(server.url))).toEqual(new Map([...A, ...B]));
});

test('DELETE removes a staged import; unknown ids are 404, bad ids and names 400', async () => {
  const db = path.join(root, 'db');
  const server = await start(db);
  expect((await put(server.url, 'gone', '1.sst', sst('a.sst', A))).status).toBe(201);
  expect((await send(server.url, { method: 'DELETE', path: '/v1/imports/gone' })).status).toBe(204);
  expect(fs.existsSync(path.join(db, STAGED_IMPORTS_DIR, 'gone'))).toBe(false);
  expectError(await send(server.url, { method: 'DELETE', path: '/v1/imports/gone' }), 404, 'NOT_FOUND', 'gone');
  expectError(await send(server.url, { method: 'POST', path: '/v1/imports/gone/commit' }), 404, 'NOT_FOUND', 'gone');
  expectError(await put(server.url, 'bad.id', '1.sst', Buffer.from('x')), 400, 'USAGE', 'import id');
  expectError(await put(server.url, 'ok', '1.csv', Buffer.from('x')), 400, 'USAGE', 'NAME.sst');
  expectError(await put(server.url, 'ok', '..sst', Buffer.from('x')), 400, 'USAGE', 'NAME.sst');
  // Nothing staged: no staging directory either (it goes with its last import).
  expect(fs.existsSync(path.join(db, STAGED_IMPORTS_DIR))).toBe(false);
});

test('a commit that fails on the server keeps the import; a PUT without Content-Length is 411', async () => {
  const db = path.join(root, 'db');
  const server = await start(db);
  expect((await put(server.url, 'broken', '1.sst', sst('a.sst', A))).status).toBe(201);
  // The staged file lost from under the server: the commit cannot read it (5xx), the import stays.
  fs.rmSync(path.join(db, STAGED_IMPORTS_DIR, 'broken', 'files', '1.sst'));
  const failed = await send(server.url, { method: 'POST', path: '/v1/imports/broken/commit' });
  expect(failed.status).toBeGreaterThanOrEqual(500);
  expect(failed.body.toString('utf8')).not.toContain(db);
  expect((await send(server.url, { path: '/v1/imports/broken' })).status).toBe(200);
  expect(await scanAll(server.url)).toEqual([]);
  const chunked = await send(server.url, {
    method: 'PUT',
    path: '/v1/imports/broken/files/2.sst',
    headers: { 'transfer-encoding': 'chunked' },
    body: sst('b.sst', B),
  });
  expectError(chunked, 411, 'USAGE', 'Content-Length');
});

test('the staging quota refuses a PUT before its body is read; a retry of a staged file still passes', async () => {
  const a = sst('a.sst', A);
  const server = await start(path.join(root, 'db'), { limits: { maxStagedBytes: a.length + 10 } });
  expect((await put(server.url, 'q', '1.sst', a)).status).toBe(201);
  expectError(await put(server.url, 'q', '2.sst', sst('b.sst', B)), 507, 'NO_SPACE', 'staging quota');
  expect((await put(server.url, 'q', '1.sst', a)).status).toBe(200);
  expect(server.staging.stagedBytes).toBe(a.length);
});

test('imports untouched past stagedMaxAgeMs are removed at start; fresh ones stay', async () => {
  const db = path.join(root, 'db');
  let server = await start(db);
  expect((await put(server.url, 'old', '1.sst', sst('a.sst', A))).status).toBe(201);
  expect((await put(server.url, 'new', '1.sst', sst('b.sst', B))).status).toBe(201);
  await stop(server);
  const meta = path.join(db, STAGED_IMPORTS_DIR, 'old', 'meta.json');
  const record = JSON.parse(fs.readFileSync(meta, 'utf8')) as { updatedAt: string };
  record.updatedAt = new Date(Date.now() - 7200_000).toISOString();
  fs.writeFileSync(meta, JSON.stringify(record));
  server = await start(db, { limits: { stagedMaxAgeMs: 3600_000 } });
  const ids = (json(await send(server.url, { path: '/v1/imports' })).imports as Array<{ id: string }>).map((i) => i.id);
  expect(ids).toEqual(['new']);
  expect(fs.existsSync(path.dirname(meta))).toBe(false);
  expect(server.staging.counters.expired).toBe(1);
});
