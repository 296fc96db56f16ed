/**
 * `ingest scan --server` follows GET /v1/scan's continuation: against a server whose pages are 7
 * entries, a scan of 31 keys (one of them not UTF-8, at a page's edge) prints every key in order,
 * forward and back, within bounds and up to its own --limit, in as many requests as pages.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { IngestServer } from '../../src/server/server';
import { runCli } from '../support/cli';
import { send } from '../server/helpers';

const PAGE = 7;
let root: string;
let server: IngestServer;
/** Every key written, in key order (hex). */
let keysHex: string[];

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'remote-scan-'));
  server = await IngestServer.start({ dbDir: path.join(root, 'db'), port: 0, limits: { defaultScanLimit: PAGE }, log: () => undefined });
  const keys = Array.from({ length: 30 }, (_, i) => Buffer.from(`k${String(i).padStart(2, '0')}`));
  // A key that is not UTF-8, the 8th in order: the first page's continuation names it in hex.
  keys.push(Buffer.from([0x6b, 0x30, 0x36, 0xff]));
  keys.sort(Buffer.compare);
  for (const k of keys)
    expect(
      (await send(server.url, { method: 'PUT', path: `/v1/kv/${k.toString('hex')}?hex=1`, body: `v-${k.toString('hex')}` })).status,
    ).toBe(204);
  keysHex = keys.map((k) => k.toString('hex'));
  expect(keysHex[7]).toBe('6b3036ff');
});
afterAll(async () => {
  await server.close();
  fs.rmSync(root, { recursive: true, force: true });
});

/** The GET /v1/scan requests the server has answered so far. */
async function scanRequests(): Promise<number> {
  const samples = await server.metrics.samplesOf('ingest_http_requests_total');
  return (samples ?? []).filter((v) => v.labels.route === '/v1/scan').reduce((n, v) => n + v.value, 0);
}

async function remoteKeys(...args: string[]): Promise<string[]> {
  const r = await runCli('scan', '--hex', '--json', ...args, '--server', server.url);
  expect(r.code).toBe(0);
  return r.stdout
    .trimEnd()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => (JSON.parse(l) as { keyHex: string; valueHex: string }).keyHex);
}

test('a scan without --limit follows every page to the end of the range, in order, forward and back', async () => {
  const before = await scanRequests();
  expect(await remoteKeys()).toEqual(keysHex);
  // 31 keys in pages of 7: five requests, the last one without a continuation.
  expect((await scanRequests()) - before).toBe(5);
  expect(await remoteKeys('--reverse')).toEqual([...keysHex].reverse());
  expect(await remoteKeys('--from', '6b3035', '--to', '6b3232')).toEqual(
    keysHex.slice(keysHex.indexOf('6b3035'), keysHex.indexOf('6b3232')),
  );
});

test('--limit stops the scan at its own count', async () => {
  expect(await remoteKeys('--limit', '12')).toEqual(keysHex.slice(0, 12));
  expect(await remoteKeys('--limit', '3', '--reverse')).toEqual([...keysHex].reverse().slice(0, 3));
  expect(await remoteKeys('--limit', '31')).toEqual(keysHex);
  expect(await remoteKeys('--limit', '0')).toEqual([]);
});
