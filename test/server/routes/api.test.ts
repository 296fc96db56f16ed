/**
 * The HTTP API of `ingest serve` route by route (src/server/routes/*.ts are the contract), against
 * an in-process IngestServer on 127.0.0.1: status codes, bodies and headers of kv, batch, scan,
 * stats and healthz; raw-byte keys percent-encoded (%00, %FF) and in hex mode; scan bounds, limit
 * and reverse; a batch with one bad operation applies nothing; the bearer token (401 without or
 * with a wrong one, healthz without); 404/405; 413 for oversized values, keys, batches; 408 for a
 * body that never completes; 429 when the import queue is full; CSV imports (200, 409 listing the
 * conflicts with nothing ingested, gzip, 400 naming the body's name and line); SST uploads (our
 * own SST lands, a corrupt one is a 422 naming file and offset with nothing ingested); and
 * close() draining an in-flight request and releasing the LOCK.
 */
import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import * as zlib from 'zlib';
import { Engine } from '../../../src/engine/engine';
import { IngestServer } from '../../../src/server/server';
import { DEFAULT_LIMITS, ServerLimits } from '../../../src/server/limits';
import { ScanEntry, csvOf, entriesAsMap, expectError, multipartOf, scanAll as scanAllOf, send, tmpDir, writeSst } from '../helpers';

const LIMITS: Partial<ServerLimits> = {
  maxKeyBytes: 64,
  maxValueBytes: 4096,
  maxBatchBodyBytes: 8192,
  maxBatchOperations: 20,
  maxScanLimit: 500,
  defaultScanLimit: 100,
};
const quiet = (): void => undefined;
const scanAll = (u: string): Promise<ScanEntry[]> => scanAllOf(u, { limit: 500 });

let root: string;
beforeAll(() => {
  root = tmpDir('server-api-');
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

async function withServer<T>(
  name: string,
  opts: { limits?: Partial<ServerLimits>; token?: string },
  fn: (s: IngestServer) => Promise<T>,
): Promise<T> {
  const server = await IngestServer.start({
    dbDir: path.join(root, name),
    port: 0,
    limits: { ...LIMITS, ...opts.limits },
    token: opts.token,
    log: quiet,
  });
  try {
    expect(new URL(server.url).hostname).toBe('127.0.0.1');
    return await fn(server);
  } finally {
    await server.close();
  }
}

function sequenceOf(reply: { headers: http.IncomingHttpHeaders }): number {
  const text = reply.headers['ingest-sequence'];
  expect(typeof text).toBe('string');
  const n = Number(text);
  expect(Number.isSafeInteger(n) && n > 0).toBe(true);
  return n;
}

test('kv: PUT 204 with ingest-sequence, GET 200 octet-stream, DELETE 204, GET 404; binary keys percent-encoded and in hex', async () => {
  await withServer('kv', {}, async (s) => {
    const u = s.url;
    const put1 = await send(u, { method: 'PUT', path: '/v1/kv/alpha', body: 'one' });
    expect(put1.status).toBe(204);
    expect(put1.body.length).toBe(0);
    const seq1 = sequenceOf(put1);
    const get1 = await send(u, { path: '/v1/kv/alpha' });
    expect(get1.status).toBe(200);
    expect(get1.headers['content-type']).toBe('application/octet-stream');
    expect(get1.body.toString()).toBe('one');

    // Raw bytes: %00 and %FF are the bytes 00 and ff (not UTF-8 text); '+' in a path stays '+'; an empty value is kept.
    const binKey = Buffer.from([0x00, 0xff, 0x61, 0x2f, 0x2b]);
    const binValue = Buffer.from([0xff, 0x00, 0x80, 0x0a]);
    const put2 = await send(u, { method: 'PUT', path: '/v1/kv/%00%FFa%2F+', body: binValue });
    expect(put2.status).toBe(204);
    expect(sequenceOf(put2)).toBe(seq1 + 1);
    const byHex = await send(u, { path: `/v1/kv/${binKey.toString('hex')}?hex=1` });
    expect(byHex.status).toBe(200);
    expect(byHex.body.equals(binValue)).toBe(true);
    const byPct = await send(u, { path: '/v1/kv/%00%ffa%2f%2B' });
    expect(byPct.body.equals(binValue)).toBe(true);
    expect(s.engine.get(binKey)?.equals(binValue)).toBe(true);
    // Hex mode writes too; a UTF-8 key sent as percent-encoded UTF-8 is its UTF-8 bytes.
    expect((await send(u, { method: 'PUT', path: '/v1/kv/00?hex=1', body: 'zero' })).status).toBe(204);
    expect(s.engine.get(Buffer.from([0]))?.toString()).toBe('zero');
    expect((await send(u, { method: 'PUT', path: `/v1/kv/${encodeURIComponent('clé')}`, body: '' })).status).toBe(204);
    const empty = await send(u, { path: '/v1/kv/cl%C3%A9' });
    expect(empty.status).toBe(200);
    expect(empty.body.length).toBe(0);

    const del = await send(u, { method: 'DELETE', path: '/v1/kv/alpha' });
    expect(del.status).toBe(204);
    expect(sequenceOf(del)).toBeGreaterThan(seq1 + 1);
    const gone = await send(u, { path: '/v1/kv/alpha' });
    expectError(gone, 404, 'NOT_FOUND', `key 0x${Buffer.from('alpha').toString('hex')} not found`);
    // A DELETE of an absent key is still a write (204).
    expect((await send(u, { method: 'DELETE', path: '/v1/kv/never' })).status).toBe(204);

    expectError(await send(u, { path: '/v1/kv/%G0' }), 400, 'USAGE', /invalid percent-encoding in the key at character 0/);
    expectError(await send(u, { path: '/v1/kv/ab%' }), 400, 'USAGE', /invalid percent-encoding in the key at character 2/);
    expectError(await send(u, { path: '/v1/kv/abc?hex=1' }), 400, 'USAGE', 'the key is not hex (hex=1)');
    expectError(await send(u, { path: '/v1/kv/zz?hex=1' }), 400, 'USAGE', 'the key is not hex');
    expectError(await send(u, { path: '/v1/kv/' }), 400, 'USAGE', 'the key is empty');
    expectError(await send(u, { path: '/v1/kv/a?hex=2' }), 400, 'USAGE', 'query parameter hex must be 1, true, 0 or false');
  });
});

test('scan: NDJSON in key order within [from, to), limit, reverse, hex; bad bounds and limits are 400', async () => {
  await withServer('scan', {}, async (s) => {
    const u = s.url;
    for (let i = 1; i <= 10; i++) {
      expect((await send(u, { method: 'PUT', path: `/v1/kv/s${String(i).padStart(2, '0')}`, body: `v${i}` })).status).toBe(204);
    }
    expect((await send(u, { method: 'PUT', path: '/v1/kv/t%FF', body: Buffer.from([0xfe]) })).status).toBe(204);
    const lines = async (query: string): Promise<Array<Record<string, string>>> => {
      const r = await send(u, { path: `/v1/scan${query}` });
      expect(r.status).toBe(200);
      expect(r.headers['content-type']).toBe('application/x-ndjson');
      const text = r.body.toString();
      return text === ''
        ? []
        : text
            .trimEnd()
            .split('\n')
            .map((l) => JSON.parse(l) as Record<string, string>);
    };
    const keys = (rows: Array<Record<string, string>>): string[] => rows.map((r) => r.key ?? `0x${r.keyHex}`);
    expect(keys(await lines('?from=s03&to=s07'))).toEqual(['s03', 's04', 's05', 's06']);
    expect(await lines('?from=s03&to=s05')).toEqual([
      { key: 's03', value: 'v3' },
      { key: 's04', value: 'v4' },
    ]);
    // Cut by the limit: a last line says where the next request starts; a range that ends within the limit has none.
    expect(await lines('?from=s03&to=s07&limit=2')).toEqual([
      { key: 's03', value: 'v3' },
      { key: 's04', value: 'v4' },
      { next: { from: 's05' } },
    ]);
    expect(keys(await lines('?from=s03&to=s07&limit=4'))).toEqual(['s03', 's04', 's05', 's06']);
    expect(await lines('?from=s10&limit=1')).toEqual([{ key: 's10', value: 'v10' }, { next: { fromHex: '74ff' } }]);
    expect(await lines('?from=s05&to=s07&reverse=1&limit=1')).toEqual([{ key: 's06', value: 'v6' }, { next: { to: 's06' } }]);
    expect(keys(await lines('?from=s03&to=s07&reverse=1'))).toEqual(['s06', 's05', 's04', 's03']);
    expect(await lines('?to=s03&reverse=true&limit=1')).toEqual([{ key: 's02', value: 'v2' }, { next: { to: 's02' } }]);
    expect(keys(await lines('?to=s03&reverse=true&limit=2'))).toEqual(['s02', 's01']);
    expect(keys(await lines('?from=s09'))).toEqual(['s09', 's10', '0x74ff']);
    expect(await lines('?from=t')).toEqual([{ keyHex: '74ff', valueHex: 'fe' }]);
    expect(await lines('?from=73&to=7331&hex=1&limit=1')).toEqual([
      { keyHex: '733031', valueHex: '7631' },
      { next: { fromHex: '733032' } },
    ]);
    expect(await lines('?from=s05&to=s05')).toEqual([]);
    expect(await lines('?limit=0')).toEqual([{ next: { from: 's01' } }]);
    expect(await lines('?from=u&limit=0')).toEqual([]);
    expect((await lines('')).length).toBe(11);
    expect(keys(await lines('?from=s%30%39&to=t'))).toEqual(['s09', 's10']);

    expectError(await send(u, { path: '/v1/scan?from=b&to=a' }), 400, 'USAGE', 'scan: from sorts after to');
    expectError(await send(u, { path: '/v1/scan?limit=501' }), 400, 'USAGE', 'scan: limit must be an integer 0..500, got "501"');
    expectError(await send(u, { path: '/v1/scan?limit=-1' }), 400, 'USAGE', 'scan: limit must be an integer');
    expectError(await send(u, { path: '/v1/scan?limit=x' }), 400, 'USAGE', 'got "x"');
    expectError(await send(u, { path: '/v1/scan?reverse=maybe' }), 400, 'USAGE', 'query parameter reverse must be 1, true, 0 or false');
    expectError(await send(u, { path: '/v1/scan?from=%zz' }), 400, 'USAGE', 'invalid percent-encoding in query parameter from');
    expectError(await send(u, { path: '/v1/scan?from=a&from=b' }), 400, 'USAGE', 'query parameter from is given twice');
    expectError(
      await send(u, { path: `/v1/scan?from=${'k'.repeat(65)}` }),
      413,
      'TOO_LARGE',
      'query parameter from is 65 bytes, over the limit of 64',
    );
  });
});

test('batch: applied atomically (200 {sequence, count}); one bad operation anywhere applies nothing', async () => {
  await withServer('batch', {}, async (s) => {
    const u = s.url;
    const post = (ops: unknown, query = ''): Promise<ReturnType<typeof send> extends Promise<infer R> ? R : never> =>
      send(u, { method: 'POST', path: `/v1/batch${query}`, headers: { 'content-type': 'application/json' }, body: JSON.stringify(ops) });
    for (const k of ['r1', 'r2', 'r3', 'x']) expect((await send(u, { method: 'PUT', path: `/v1/kv/${k}`, body: 'old' })).status).toBe(204);
    const before = s.engine.lastSequence;
    const ok = await post([
      { op: 'put', key: 'b1', value: 'one' },
      { op: 'put', key: 'b2', value: 'two' },
      { op: 'delete', key: 'x' },
      { op: 'deleteRange', start: 'r1', end: 'r3' },
    ]);
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body.toString())).toEqual({ sequence: before + 1, count: 4 });
    expect(entriesAsMap(await scanAll(u))).toEqual(
      new Map([
        ['b1', 'one'],
        ['b2', 'two'],
        ['r3', 'old'],
      ]),
    );
    // Hex mode: keys and values as hex strings.
    const hex = await post([{ op: 'put', key: '00ff', value: 'ff00' }], '?hex=1');
    expect(hex.status).toBe(200);
    expect(s.engine.get(Buffer.from([0, 0xff]))?.equals(Buffer.from([0xff, 0]))).toBe(true);

    const state = await scanAll(u);
    const seq = s.engine.lastSequence;
    const good = [
      { op: 'put', key: 'n1', value: 'a' },
      { op: 'delete', key: 'b1' },
      { op: 'deleteRange', start: 'a', end: 'z' },
    ];
    const bad: Array<[unknown, RegExp | string]> = [
      [{ op: 'put', key: 'n2' }, 'batch operation 3: value must be a string'],
      [{ op: 'put', key: '', value: 'v' }, 'batch operation 3: key is empty'],
      [{ op: 'put', key: 7, value: 'v' }, 'batch operation 3: key must be a string'],
      [{ op: 'upsert', key: 'n2', value: 'v' }, 'batch operation 3: op must be put, delete or deleteRange, got "upsert"'],
      [{ op: 'deleteRange', start: 'q', end: 'b' }, 'batch operation 3: start must sort below end'],
      [[1], 'batch operation 3 must be an object'],
      [null, 'batch operation 3 must be an object'],
    ];
    for (const [op, message] of bad) expectError(await post([...good, op]), 400, 'USAGE', message);
    expectError(
      await post([...good, { op: 'put', key: 'k'.repeat(65), value: 'v' }]),
      413,
      'TOO_LARGE',
      'batch operation 3: key is 65 bytes',
    );
    expectError(
      await post([{ op: 'put', key: 'n3', value: 'v'.repeat(4097) }]),
      413,
      'TOO_LARGE',
      'batch operation 0: value is over 4096 bytes',
    );
    expectError(
      await post(
        [
          { op: 'put', key: '6e31', value: '61' },
          { op: 'put', key: 'zz', value: '00' },
        ],
        '?hex=1',
      ),
      400,
      'USAGE',
      'batch operation 1: key is not hex',
    );
    expectError(await post([]), 400, 'USAGE', 'batch: no operations');
    expectError(await post({ op: 'put' }), 400, 'USAGE', 'batch: the body must be a JSON array of operations');
    expectError(await send(u, { method: 'POST', path: '/v1/batch', body: '[{"op":"put",' }), 400, 'USAGE', 'batch: the body is not JSON');
    const many = Array.from({ length: 21 }, (_, i) => ({ op: 'put', key: `m${i}`, value: 'v' }));
    expectError(await post(many), 413, 'TOO_LARGE', 'batch: 21 operations, over the limit of 20');
    expectError(
      await send(u, { method: 'POST', path: '/v1/batch', body: `[${' '.repeat(8200)}]` }),
      413,
      'TOO_LARGE',
      'batch: body of 8202 bytes is over the limit of 8192',
    );
    expect(s.engine.lastSequence).toBe(seq);
    expect(await scanAll(u)).toEqual(state);
  });
});

test('stats and healthz; a token server: 401 without or with a wrong token, healthz needs none; 404 and 405', async () => {
  const token = 'a-secret-token-of-32-characters!';
  await withServer('auth', { token }, async (s) => {
    const u = s.url;
    const health = await send(u, { path: '/healthz' });
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body.toString())).toEqual({ status: 'ok' });
    for (const spec of [
      { path: '/v1/kv/a' },
      { method: 'PUT', path: '/v1/kv/a', body: 'v' },
      { method: 'DELETE', path: '/v1/kv/a' },
      { method: 'POST', path: '/v1/batch', body: '[]' },
      { path: '/v1/scan' },
      { path: '/v1/stats' },
      { method: 'POST', path: '/v1/imports', body: 'a,1\n' },
      { method: 'POST', path: '/v1/imports/sst', headers: { 'content-type': 'application/octet-stream' }, body: 'x' },
    ]) {
      expectError(await send(u, spec), 401, 'UNAUTHORIZED', 'missing Authorization: Bearer <token>');
      expectError(await send(u, { ...spec, token: `${token}x` }), 401, 'UNAUTHORIZED', 'invalid token');
      expectError(await send(u, { ...spec, headers: { ...spec.headers, authorization: token } }), 401, 'UNAUTHORIZED', 'invalid token');
    }
    expect(s.engine.lastSequence).toBe(0);
    expect((await send(u, { method: 'PUT', path: '/v1/kv/a', body: 'v', token })).status).toBe(204);
    expect((await send(u, { path: '/v1/kv/a', token })).body.toString()).toBe('v');
    expect((await send(u, { path: '/v1/kv/a', headers: { authorization: `bearer  ${token}` } })).status).toBe(200);

    const stats = await send(u, { path: '/v1/stats', token });
    expect(stats.status).toBe(200);
    const doc = JSON.parse(stats.body.toString()) as { lastSequence: number; levels: unknown[]; server: Record<string, number> };
    expect(doc.lastSequence).toBe(1);
    expect(doc.levels.length).toBe(7);
    // inFlightRequests counts the requests in flight beside this one: none.
    expect(doc.server).toMatchObject({ connections: 1, inFlightRequests: 0, importsRunning: 0, importsQueued: 0 });
    expect(doc.server.requests).toBeGreaterThanOrEqual(29);
    expect(doc.server.errors).toBeGreaterThanOrEqual(24);

    // Routing is decided before the token: an unknown path is a 404, a wrong method a 405 with Allow.
    expectError(await send(u, { path: '/v2/kv/a', token }), 404, 'NOT_FOUND', 'no route /v2/kv/a');
    expectError(await send(u, { path: '/', token }), 404, 'NOT_FOUND', 'no route /');
    const m405 = await send(u, { path: '/v1/batch', token });
    expectError(m405, 405, 'USAGE', 'GET is not allowed on /v1/batch');
    expect(m405.headers.allow).toBe('POST');
    const kv405 = await send(u, { method: 'POST', path: '/v1/kv/a', token });
    expectError(kv405, 405, 'USAGE', 'POST is not allowed on /v1/kv/{key}');
    expect(kv405.headers.allow).toBe('GET, PUT, DELETE');
    expect((await send(u, { method: 'DELETE', path: '/healthz' })).headers.allow).toBe('GET');
  });
});

test('413 for an oversized value (declared or chunked) and key; 408 for a body that never completes', async () => {
  await withServer('limits', { limits: { requestTimeoutMs: 400 } }, async (s) => {
    const u = s.url;
    expectError(
      await send(u, { method: 'PUT', path: '/v1/kv/big', body: Buffer.alloc(4097) }),
      413,
      'TOO_LARGE',
      'body of 4097 bytes is over the limit of 4096',
    );
    expect((await send(u, { method: 'PUT', path: '/v1/kv/fits', body: Buffer.alloc(4096, 1) })).status).toBe(204);
    // Chunked (no Content-Length): cut off once past the limit.
    const chunked = await new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
      const target = new URL(u);
      const req = http.request(
        { host: target.hostname, port: Number(target.port), method: 'PUT', path: '/v1/kv/big2', agent: false },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        },
      );
      req.on('error', reject);
      req.write(Buffer.alloc(3000));
      req.write(Buffer.alloc(3000));
      req.end();
    });
    expect(chunked.status).toBe(413);
    expect(JSON.parse(chunked.body.toString())).toEqual({
      error: { code: 'TOO_LARGE', message: 'PUT of key 0x62696732: body is over the limit of 4096 bytes' },
    });
    expectError(
      await send(u, { method: 'PUT', path: `/v1/kv/${'k'.repeat(65)}`, body: 'v' }),
      413,
      'TOO_LARGE',
      'the key is 65 bytes, over the limit of 64',
    );
    expectError(await send(u, { path: `/v1/kv/${'%ff'.repeat(65)}` }), 413, 'TOO_LARGE', 'the key is 65 bytes');
    expect((await send(u, { path: `/v1/kv/${'k'.repeat(64)}` })).status).toBe(404);

    // A PUT whose body stops coming: 408 after requestTimeoutMs, nothing written.
    const seq = s.engine.lastSequence;
    const timedOut = await new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
      const target = new URL(u);
      const req = http.request(
        {
          host: target.hostname,
          port: Number(target.port),
          method: 'PUT',
          path: '/v1/kv/slow',
          headers: { 'content-length': 10 },
          agent: false,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        },
      );
      req.on('error', reject);
      req.write('abc');
    });
    expect(timedOut.status).toBe(408);
    expect(JSON.parse(timedOut.body.toString())).toEqual({ error: { code: 'TIMEOUT', message: 'the request took over 400 ms' } });
    expect(s.engine.lastSequence).toBe(seq);
    expect(s.engine.get(Buffer.from('slow'))).toBeNull();
  });
});

interface ImportDoc {
  import: { rowsWritten: number; inputs: Array<{ path: string }> };
  check: { conflicts: number; new: number };
  ingest: unknown;
  conflictReport: {
    snapshotSequence: number;
    summary: { conflicts: number; new: number; unchanged: number };
    conflicts: Array<{
      key: string;
      existingValue: { data: string };
      newValue: { data: string };
      existingSeq: number;
      source: { file: string; line: number } | null;
    }>;
  };
  error?: { code: string; message: string };
  uploads?: Array<{ name: string; entries: number; smallestHex: string; largestHex: string }>;
}

function importPost(u: string, query: string, body: Buffer | string, headers: http.OutgoingHttpHeaders = {}): ReturnType<typeof send> {
  return send(u, { method: 'POST', path: `/v1/imports${query}`, headers: { 'content-type': 'text/csv', ...headers }, body });
}

test('CSV imports: 200 lands; 409 lists the conflicts and ingests nothing; gzip; 400 names the body and line', async () => {
  await withServer('imports', {}, async (s) => {
    const u = s.url;
    const rows = Array.from({ length: 50 }, (_, i) => [`i${String(i).padStart(3, '0')}`, `val${i}`] as const);
    const ok = await importPost(u, '?name=first.csv', csvOf(rows));
    expect(ok.status).toBe(200);
    const doc = JSON.parse(ok.body.toString()) as ImportDoc;
    expect(doc.import.rowsWritten).toBe(50);
    expect(doc.import.inputs.map((i) => i.path)).toEqual(['first.csv']);
    expect(doc.conflictReport.summary).toMatchObject({ new: 50, conflicts: 0 });
    expect(doc.ingest).not.toBeNull();
    expect(entriesAsMap(await scanAll(u))).toEqual(new Map(rows));

    // Conflicts: two keys with other values, one new key; abort (the default) ingests nothing.
    expect((await send(u, { method: 'PUT', path: '/v1/kv/i010', body: 'live' })).status).toBe(204);
    const before = await scanAll(u);
    const seq = s.engine.lastSequence;
    const files = JSON.stringify(s.engine.levelFiles());
    const conflicting = csvOf([
      ['i005', 'other5'],
      ['i006', 'val6'],
      ['i010', 'other10'],
      ['i999', 'new'],
    ]);
    const aborted = await importPost(u, '?name=second.csv', conflicting);
    expect(aborted.status).toBe(409);
    const report = JSON.parse(aborted.body.toString()) as ImportDoc;
    expect(report.error?.code).toBe('CONFLICT');
    expect(report.conflictReport.summary).toMatchObject({ conflicts: 2, unchanged: 1, new: 1 });
    expect(report.conflictReport.snapshotSequence).toBe(seq);
    expect(
      report.conflictReport.conflicts.map((c) => [
        c.key,
        c.existingValue.data,
        c.newValue.data,
        c.existingSeq === 0 || c.existingSeq === seq,
        c.source,
      ]),
    ).toEqual([
      ['i005', 'val5', 'other5', true, { file: 'second.csv', line: 1 }],
      ['i010', 'live', 'other10', true, { file: 'second.csv', line: 3 }],
    ]);
    expect(report.conflictReport.conflicts[1].existingSeq).toBe(seq);
    expect(await scanAll(u)).toEqual(before);
    expect(s.engine.lastSequence).toBe(seq);
    expect(JSON.stringify(s.engine.levelFiles())).toBe(files);

    // on-conflict=overwrite lands it; max-reported bounds the list, not the count.
    const over = await importPost(u, '?name=second.csv&on-conflict=overwrite&max-reported=1', conflicting);
    expect(over.status).toBe(200);
    const overDoc = JSON.parse(over.body.toString()) as ImportDoc;
    expect(overDoc.conflictReport.summary.conflicts).toBe(2);
    expect(overDoc.conflictReport.conflicts.map((c) => c.key)).toEqual(['i005']);
    expect((await send(u, { path: '/v1/kv/i010' })).body.toString()).toBe('other10');
    expect((await send(u, { path: '/v1/kv/i999' })).body.toString()).toBe('new');

    // gzip Content-Encoding, header row, typed key.
    const gz = zlib.gzipSync('id,name\n7,seven\n3,three\n');
    const gzOk = await importPost(u, '?name=g.csv.gz&header=1&key=id:int64', gz, { 'content-encoding': 'gzip' });
    expect(gzOk.status).toBe(200);
    expect((JSON.parse(gzOk.body.toString()) as ImportDoc).import.rowsWritten).toBe(2);
    const seven = Buffer.alloc(8);
    seven.writeBigInt64BE(7n);
    seven[0] ^= 0x80;
    expect(s.engine.get(seven)?.toString()).toBe('seven');

    // Bad input: 400 naming the `name` and the line; nothing ingested.
    const afterGood = await scanAll(u);
    const seq2 = s.engine.lastSequence;
    expectError(
      await importPost(u, '?name=ints.csv&key=1:int64', '1,a\n2,b\nthree,c\n'),
      400,
      'BAD_INPUT',
      'ints.csv line 3: key column 1 is not a valid int64',
    );
    expectError(await importPost(u, '?name=q.csv', 'a1,x\na2,"open\n'), 400, 'BAD_INPUT', 'q.csv line 2: unterminated quoted field');
    expectError(await importPost(u, '', 'z1,x\nz1,y\n'), 400, 'DUPLICATE_KEY', 'request body');
    expectError(
      await importPost(u, '?name=bad.gz', 'not gzip', { 'content-encoding': 'gzip' }),
      400,
      'BAD_INPUT',
      'import bad.gz: invalid gzip data',
    );
    expectError(
      await importPost(u, '', 'a,1\n', { 'content-encoding': 'br' }),
      415,
      'NOT_SUPPORTED',
      'Content-Encoding br is not supported',
    );
    expectError(await importPost(u, '?on-conflict=nope', 'a,1\n'), 400, 'USAGE', "argument 'nope' is invalid");
    expectError(
      await importPost(u, '?tmp-dir=/tmp', 'a,1\n'),
      400,
      'USAGE',
      'query parameter tmp-dir names a path on the server and is not taken',
    );
    expectError(await importPost(u, '?frobnicate=1', 'a,1\n'), 400, 'USAGE', 'unknown import option frobnicate');
    expectError(await importPost(u, '?mode=apply', 'a,1\n'), 400, 'USAGE', 'mode must be import, plan or check, got "apply"');
    expectError(await importPost(u, '?header=maybe', 'a,1\n'), 400, 'USAGE', 'query parameter header is a flag');
    // The server's bounds on what one request may ask of it (ServerLimits): each refused before the body is read.
    const threads = DEFAULT_LIMITS.maxImportThreads;
    expectError(await importPost(u, `?threads=${threads + 1}`, 'a,1\n'), 400, 'USAGE', `import option threads=${threads + 1} is over`);
    expectError(await importPost(u, '?merge-threads=1000', 'a,1\n'), 400, 'USAGE', 'import option merge-threads=1000 is over');
    expectError(await importPost(u, '?memory-limit=200GiB', 'a,1\n'), 400, 'USAGE', 'import option memory-limit=200GiB is over');
    expectError(await importPost(u, '?target-file-size=1', 'a,1\n'), 400, 'USAGE', 'import option target-file-size=1 is over');
    expectError(await importPost(u, '?block-size=1', 'a,1\n'), 400, 'USAGE', 'import option block-size=1 is over');
    expectError(await importPost(u, '?max-bad-rows=1000000000', 'a,1\n'), 400, 'USAGE', 'import option max-bad-rows=1000000000 is over');
    expectError(await importPost(u, '?memory-limit=lots', 'a,1\n'), 400, 'USAGE', '--memory-limit must be a size');
    expect(await scanAll(u)).toEqual(afterGood);
    expect(s.engine.lastSequence).toBe(seq2);
    expect(fs.readdirSync(s.engine.dir).filter((f) => f.startsWith('.import-tmp'))).toEqual([]);

    // mode=check and mode=plan change nothing.
    const check = await importPost(u, '?mode=check&name=c.csv', csvOf([['i001', 'changed']]));
    expect(check.status).toBe(409);
    expect((JSON.parse(check.body.toString()) as ImportDoc).conflictReport.conflicts[0].source).toEqual({ file: 'c.csv', line: 1 });
    expect((await importPost(u, '?mode=plan&on-conflict=overwrite', csvOf([['i001', 'changed']]))).status).toBe(200);
    expect(await scanAll(u)).toEqual(afterGood);
  });
});

test('429 when the import queue is full (1 running, 0 queued), with Retry-After; the running import then lands', async () => {
  await withServer('queue', { limits: { maxConcurrentImports: 1, maxQueuedImports: 0 } }, async (s) => {
    const u = new URL(s.url);
    // The first import holds the only slot while its body is still coming.
    const first = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        { host: u.hostname, port: Number(u.port), method: 'POST', path: '/v1/imports?name=slow.csv', agent: false },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.write('q1,one\n');
      // Polls overlap (a stats request may outlast the interval): only the first that sees the
      // import running goes on, so the body is ended once.
      let seenRunning = false;
      const poll = setInterval(() => {
        void send(s.url, { path: '/v1/stats' }).then(async (r) => {
          const running = (JSON.parse(r.body.toString()) as { server: { importsRunning: number } }).server.importsRunning;
          if (running !== 1 || seenRunning) return;
          seenRunning = true;
          clearInterval(poll);
          const busy = await send(s.url, { method: 'POST', path: '/v1/imports?name=second.csv', body: 'q2,two\n' });
          const busySst = await send(s.url, {
            method: 'POST',
            path: '/v1/imports/sst',
            headers: { 'content-type': 'application/octet-stream' },
            body: 'x',
          });
          expectError(busy, 429, 'BUSY', '1 import(s) running and 0 queued, the most this server takes; retry later');
          expect(busy.headers['retry-after']).toBe('1');
          expectError(busySst, 429, 'BUSY', 'retry later');
          req.end('q3,three\n');
        }, reject);
      }, 20);
    });
    const done = await first;
    expect(done.status).toBe(200);
    expect(entriesAsMap(await scanAll(s.url))).toEqual(
      new Map([
        ['q1', 'one'],
        ['q3', 'three'],
      ]),
    );
  });
});

test('SST uploads: our own SST lands (octet-stream and multipart); a corrupt one is a 422 naming file and offset, nothing ingested', async () => {
  await withServer('sst', {}, async (s) => {
    const u = s.url;
    const dir = path.join(root, 'sst-files');
    fs.mkdirSync(dir);
    const entries = Array.from({ length: 200 }, (_, i) => [`u${String(i).padStart(4, '0')}`, `uv${i}`.repeat(4)] as const);
    const sst = writeSst(path.join(dir, 'a.sst'), entries);
    const upload = await send(u, {
      method: 'POST',
      path: '/v1/imports/sst?name=first.sst',
      headers: { 'content-type': 'application/octet-stream' },
      body: sst,
    });
    expect(upload.status).toBe(200);
    const doc = JSON.parse(upload.body.toString()) as ImportDoc;
    expect(doc.uploads).toEqual([
      {
        name: 'first.sst',
        sizeBytes: sst.length,
        entries: 200,
        smallestHex: Buffer.from('u0000').toString('hex'),
        largestHex: Buffer.from('u0199').toString('hex'),
      },
    ]);
    expect(entriesAsMap(await scanAll(u))).toEqual(new Map(entries));

    const more = [
      ['w1', 'x'],
      ['w2', 'y'],
    ] as const;
    const mp = multipartOf([{ name: 'b.sst', data: writeSst(path.join(dir, 'b.sst'), more) }]);
    const multi = await send(u, { method: 'POST', path: '/v1/imports/sst', headers: { 'content-type': mp.contentType }, body: mp.body });
    expect(multi.status).toBe(200);
    expect((await send(u, { path: '/v1/kv/w2' })).body.toString()).toBe('y');

    const state = await scanAll(u);
    const seq = s.engine.lastSequence;
    const files = JSON.stringify(s.engine.levelFiles());
    const other = writeSst(
      path.join(dir, 'c.sst'),
      Array.from({ length: 200 }, (_, i) => [`c${String(i).padStart(4, '0')}`, `cv${i}`] as const),
    );
    const flipAt = Math.floor(other.length / 3);
    const corrupt = Buffer.from(other);
    corrupt[flipAt] ^= 0x10;
    const rejected = await send(u, {
      method: 'POST',
      path: '/v1/imports/sst?name=bad.sst',
      headers: { 'content-type': 'application/octet-stream' },
      body: corrupt,
    });
    const err = expectError(
      rejected,
      422,
      'CORRUPTION',
      /^upload rejected, nothing ingested: corruption in bad\.sst at offset (\d+): .*checksum mismatch/,
    );
    const offset = Number(/at offset (\d+)/.exec(err.message)?.[1]);
    expect(offset).toBeLessThanOrEqual(flipAt);
    expect(err.message).not.toContain(s.engine.dir);
    // A good file beside a corrupt one in one multipart upload: neither lands.
    const both = multipartOf([
      { name: 'good.sst', data: other },
      { name: 'zbad.sst', data: corrupt },
    ]);
    expectError(
      await send(u, { method: 'POST', path: '/v1/imports/sst', headers: { 'content-type': both.contentType }, body: both.body }),
      422,
      'CORRUPTION',
      'corruption in zbad.sst at offset',
    );
    expectError(
      await send(u, {
        method: 'POST',
        path: '/v1/imports/sst?name=short.sst',
        headers: { 'content-type': 'application/octet-stream' },
        body: sst.subarray(0, 40),
      }),
      422,
      'CORRUPTION',
      'corruption in short.sst at offset 0: file of 40 bytes is too short to be an SST',
    );
    expectError(
      await send(u, {
        method: 'POST',
        path: '/v1/imports/sst?name=x.csv',
        headers: { 'content-type': 'application/octet-stream' },
        body: sst,
      }),
      400,
      'USAGE',
      'upload x.csv: expected NAME.sst or NAME.origins',
    );
    expectError(
      await send(u, { method: 'POST', path: '/v1/imports/sst', headers: { 'content-type': 'text/plain' }, body: sst }),
      415,
      'NOT_SUPPORTED',
      'Content-Type must be multipart/form-data or application/octet-stream',
    );
    expect(await scanAll(u)).toEqual(state);
    expect(s.engine.lastSequence).toBe(seq);
    expect(JSON.stringify(s.engine.levelFiles())).toBe(files);
    expect(fs.readdirSync(s.engine.dir).filter((f) => f.startsWith('.import-tmp'))).toEqual([]);
  });
});

test('close() drains: an in-flight PUT finishes with 204, new connections are refused, the LOCK is released', async () => {
  const dbDir = path.join(root, 'drain');
  const server = await IngestServer.start({ dbDir, port: 0, limits: LIMITS, log: quiet });
  const u = new URL(server.url);
  await expect(Engine.open(dbDir)).rejects.toThrow(/database is locked/);
  let ended = false;
  const inFlight = new Promise<{ status: number; seq: string | undefined }>((resolve, reject) => {
    const req = http.request(
      { host: u.hostname, port: Number(u.port), method: 'PUT', path: '/v1/kv/drained', headers: { 'content-length': 6 }, agent: false },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, seq: res.headers['ingest-sequence'] as string | undefined }));
      },
    );
    req.on('error', reject);
    req.write('abc');
    const finish = (): void => {
      ended = true;
      req.end('def');
    };
    // Once the server is handling the PUT (stats counts the requests in flight beside itself): close, then finish the body.
    const poll = (): void => {
      void send(server.url, { path: '/v1/stats' }).then((r) => {
        const stats = JSON.parse(r.body.toString()) as { server: { inFlightRequests: number } };
        if (stats.server.inFlightRequests < 1) {
          setTimeout(poll, 10);
          return;
        }
        const closing = server.close();
        void send(server.url, { path: '/healthz' }).then(
          () => reject(new Error('a new connection was served while draining')),
          (err: NodeJS.ErrnoException) => {
            expect(err.code).toBe('ECONNREFUSED');
            setTimeout(finish, 150);
          },
        );
        void closing.catch(reject);
      }, reject);
    };
    poll();
  });
  const done = await inFlight;
  expect(ended).toBe(true);
  expect(done).toEqual({ status: 204, seq: '1' });
  await server.close();
  expect(fs.existsSync(path.join(dbDir, 'SERVER'))).toBe(false);
  const engine = await Engine.open(dbDir);
  try {
    expect(engine.get(Buffer.from('drained'))?.toString()).toBe('abcdef');
    expect(engine.lastSequence).toBe(1);
  } finally {
    await engine.close();
  }
});
