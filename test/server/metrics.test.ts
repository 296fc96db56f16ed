/**
 * GET /metrics: scraped before and after a known sequence of requests, a flush and one import,
 * the output parsed with an independent Prometheus text-format parser (parse-prometheus-text-format,
 * a port of the Prometheus Python client's parser: not prom-client reading its own output); every
 * request counter moves by exactly the requests sent, the import's counters by its rows, bytes,
 * outcome and conflicts, the engine's by the flush. The token guards it unless metricsPublic.
 */
import * as fs from 'fs';
import * as path from 'path';
import { IngestServer } from '../../src/server/server';
import { csvOf, expectError, send, tmpDir } from './helpers';

interface ParsedSample {
  value?: string;
  labels?: Record<string, string>;
  buckets?: Record<string, string>;
  count?: string;
  sum?: string;
}
interface ParsedFamily {
  name: string;
  help: string;
  type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
  metrics: ParsedSample[];
}
// The package ships no types: its one function, as its README documents it.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const parsePrometheusTextFormat = require('parse-prometheus-text-format') as (text: string) => ParsedFamily[];

const TOKEN = 'metrics-test-token-0123456789';
let root: string;
beforeAll(() => {
  root = tmpDir('server-metrics-');
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** Every series of a scrape as `name{label="v",...}` → value (a histogram: its _count and _sum). */
async function scrape(url: string, token: string | undefined = TOKEN): Promise<{ families: ParsedFamily[]; series: Map<string, number> }> {
  const r = await send(url, { path: '/metrics', token });
  expect(r.status).toBe(200);
  expect(r.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
  const families = parsePrometheusTextFormat(r.body.toString('utf8'));
  const series = new Map<string, number>();
  for (const f of families) {
    for (const m of f.metrics) {
      const labels = Object.entries(m.labels ?? {})
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k}="${v}"`)
        .join(',');
      if (f.type === 'HISTOGRAM') {
        series.set(`${f.name}_count{${labels}}`, Number(m.count));
        series.set(`${f.name}_sum{${labels}}`, Number(m.sum));
      } else series.set(`${f.name}{${labels}}`, Number(m.value));
    }
  }
  return { families, series };
}

/** The series whose value changed between two scrapes (new series count from 0), by how much. */
function movedBetween(before: Map<string, number>, after: Map<string, number>, prefix: string): Map<string, number> {
  const moved = new Map<string, number>();
  for (const [k, v] of after) {
    if (!k.startsWith(prefix)) continue;
    const d = v - (before.get(k) ?? 0);
    if (d !== 0) moved.set(k, d);
  }
  return moved;
}

/** A histogram's observation count per route, from the server's own registry (prom-client's JSON). */
async function histogramCounts(server: IngestServer, name: string): Promise<Map<string, number>> {
  const samples = await server.metrics.samplesOf(name);
  const counts = new Map<string, number>();
  for (const v of samples ?? []) {
    if (v.name === `${name}_count`) counts.set(String(v.labels.route), v.value);
  }
  return counts;
}

const req = (route: string, method: string, status: number): string =>
  `ingest_http_requests_total{method="${method}",route="${route}",status="${status}"}`;

test('request, import and engine counters move by exactly the requests, the flush and the import; the output parses', async () => {
  const server = await IngestServer.start({ dbDir: path.join(root, 'db'), port: 0, token: TOKEN, log: () => undefined });
  const u = server.url;
  try {
    expect((await send(u, { method: 'PUT', path: '/v1/kv/old-1', token: TOKEN, body: 'v' })).status).toBe(204);
    const before = await scrape(u);
    for (const k of ['k1', 'k2', 'k3'])
      expect((await send(u, { method: 'PUT', path: `/v1/kv/${k}`, token: TOKEN, body: `value-${k}` })).status).toBe(204);
    await server.engine.flush();
    expect((await send(u, { path: '/v1/kv/k1', token: TOKEN })).status).toBe(200);
    expect((await send(u, { path: '/v1/kv/k2', token: TOKEN })).status).toBe(200);
    expect((await send(u, { path: '/v1/kv/missing', token: TOKEN })).status).toBe(404);
    expectError(await send(u, { path: '/v1/stats' }), 401, 'UNAUTHORIZED', '');
    expect((await send(u, { path: '/no/such/route', token: TOKEN })).status).toBe(404);
    const body = csvOf([
      ['k1', 'changed'],
      ['k2', 'value-k2'],
      ['k9', 'new'],
    ]);
    const imported = await send(u, { method: 'POST', path: '/v1/imports?name=m.csv&on-conflict=overwrite', token: TOKEN, body });
    expect(imported.status).toBe(200);
    const after = await scrape(u);

    expect(movedBetween(before.series, after.series, 'ingest_http_requests_total')).toEqual(
      new Map([
        [req('/v1/kv/{key}', 'PUT', 204), 3],
        [req('/v1/kv/{key}', 'GET', 200), 2],
        [req('/v1/kv/{key}', 'GET', 404), 1],
        [req('/v1/stats', 'GET', 401), 1],
        [req('unmatched', 'GET', 404), 1],
        [req('/v1/imports', 'POST', 200), 1],
        // The first scrape is answered (and counted) before the second is handled.
        [req('/metrics', 'GET', 200), 1],
      ]),
    );
    // The parser keeps a labeled histogram's buckets only (it folds the series of one family
    // together, dropping _count, _sum and the labels): its counts are read from the registry.
    expect(after.families.find((f) => f.name === 'ingest_http_request_duration_seconds')?.type).toBe('HISTOGRAM');
    const latency = await histogramCounts(server, 'ingest_http_request_duration_seconds');
    // Every request since the start: the PUT before the first scrape, the six after it, both scrapes.
    expect(Object.fromEntries(latency)).toEqual({ '/v1/kv/{key}': 7, '/v1/imports': 1, '/metrics': 2, '/v1/stats': 1, unmatched: 1 });
    expect(movedBetween(before.series, after.series, 'ingest_import')).toEqual(
      new Map([
        ['ingest_imports_finished_total{outcome="landed"}', 1],
        ['ingest_import_conflicts_total{}', 1],
        ['ingest_import_rows_total{phase="ingesting"}', 3],
        ['ingest_import_bytes_total{phase="receiving"}', body.length],
        // Its check's bytes: the SST it made.
        ['ingest_import_bytes_total{phase="ingesting"}', after.series.get('ingest_import_bytes_total{phase="ingesting"}') ?? NaN],
        ['ingest_import_rows_total{phase="parse"}', 3],
        ['ingest_import_bytes_total{phase="parse"}', body.length],
        ['ingest_import_rows_total{phase="merge"}', 3],
        // The merge wrote the SST the check then read.
        ['ingest_import_bytes_total{phase="merge"}', after.series.get('ingest_import_bytes_total{phase="ingesting"}') ?? NaN],
        ['ingest_import_reports_held_bytes{}', after.series.get('ingest_import_reports_held_bytes{}') ?? NaN],
      ]),
    );
    expect(after.series.get('ingest_imports_running{}')).toBe(0);
    expect(after.series.get('ingest_imports_queued{}')).toBe(0);
    expect(movedBetween(before.series, after.series, 'ingest_engine_flushes_total')).toEqual(
      new Map([['ingest_engine_flushes_total{}', 1]]),
    );
    // The engine's files as /v1/stats lists them.
    const stats = JSON.parse((await send(u, { path: '/v1/stats', token: TOKEN })).body.toString()) as {
      levels: { level: number; files: { sizeBytes: number }[] }[];
    };
    for (const l of stats.levels) {
      expect(after.series.get(`ingest_engine_level_files{level="${l.level}"}`)).toBe(l.files.length);
      expect(after.series.get(`ingest_engine_level_bytes{level="${l.level}"}`)).toBe(l.files.reduce((n, f) => n + f.sizeBytes, 0));
    }
    const lookups = (s: Map<string, number>): number =>
      (s.get('ingest_engine_block_cache_hits_total{}') ?? 0) + (s.get('ingest_engine_block_cache_misses_total{}') ?? 0);
    expect(lookups(after.series)).toBeGreaterThan(lookups(before.series));
    for (const name of [
      'nodejs_heap_size_used_bytes{}',
      'nodejs_eventloop_lag_seconds{}',
      'process_cpu_user_seconds_total{}',
      'ingest_engine_space_amplification{}',
      'ingest_engine_memtable_bytes{}',
    ]) {
      expect(after.series.has(name)).toBe(true);
    }
    // Names by the conventions, every family typed and described; no key in any label.
    for (const f of after.families) {
      expect(f.name).toMatch(/^(ingest|nodejs|process)_[a-z0-9_]+$/);
      expect(f.type).not.toBe('UNTYPED');
      expect(f.help.length).toBeGreaterThan(0);
      if (f.type === 'COUNTER') expect(f.name).toMatch(/_total$/);
    }
    for (const k of after.series.keys()) expect(k).not.toMatch(/k1|k2|missing|no\/such/);
  } finally {
    await server.close();
  }
});

test('GET /metrics needs the token unless metricsPublic', async () => {
  const guarded = await IngestServer.start({ dbDir: path.join(root, 'guarded'), port: 0, token: TOKEN, log: () => undefined });
  try {
    expectError(await send(guarded.url, { path: '/metrics' }), 401, 'UNAUTHORIZED', '');
    await scrape(guarded.url);
  } finally {
    await guarded.close();
  }
  const open = await IngestServer.start({
    dbDir: path.join(root, 'open'),
    port: 0,
    token: TOKEN,
    metricsPublic: true,
    log: () => undefined,
  });
  try {
    const { series } = await scrape(open.url, undefined);
    expect(series.get('ingest_imports_running{}')).toBe(0);
    expectError(await send(open.url, { path: '/v1/stats' }), 401, 'UNAUTHORIZED', '');
  } finally {
    await open.close();
  }
});
