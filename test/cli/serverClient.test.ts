/**
 * The CLI as a client of `ingest serve` (`--server URL`, cli/commands/serverTarget.ts,
 * importRemote.ts): every database command and the import pipeline print what they print with
 * `--db` and exit with the same codes, against a server started in this process on 127.0.0.1.
 * Each comparison runs the same commands against a --db twin of the server's database.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as http from 'http';
import { AddressInfo } from 'net';
import { ServerClient } from '../../cli/serverClient';
import { runCli } from '../support/cli';
import { IngestServer } from '../../src/server/server';
import { FIXTURES_DIR } from '../support/paths';
import { writeSst } from '../server/helpers';

const FIXTURE = path.join(FIXTURES_DIR, 'trades.csv');
const DIALECT = ['--delimiter', '|', '--header', '--key', 't_id:int64', '--quiet'];
const TOKEN = 'a-token-of-sufficient-length-0123';

let root: string;
let server: IngestServer;
let secured: IngestServer;
let twin: string;

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'server-client-'));
  server = await IngestServer.start({ dbDir: path.join(root, 'served'), port: 0, log: () => undefined });
  secured = await IngestServer.start({ dbDir: path.join(root, 'secured'), port: 0, token: TOKEN, log: () => undefined });
  twin = path.join(root, 'twin');
});
afterAll(async () => {
  await server.close();
  await secured.close();
  fs.rmSync(root, { recursive: true, force: true });
});

/** Runs the same command against the server and the twin; returns both results. */
async function both(...args: string[]): Promise<{ remote: Awaited<ReturnType<typeof runCli>>; local: Awaited<ReturnType<typeof runCli>> }> {
  const remote = await runCli(...args, '--server', server.url);
  const local = await runCli(...args, '--db', twin);
  return { remote, local };
}

/** Drops what differs between two runs of the same import by nature: timings, paths, memory. */
function comparable(stdout: string): unknown {
  const d = JSON.parse(stdout) as Record<string, Record<string, unknown> | unknown>;
  const strip = (o: unknown, keys: string[]): void => {
    if (typeof o === 'object' && o !== null) for (const k of keys) delete (o as Record<string, unknown>)[k];
  };
  delete d.db;
  // The space policy after an import: the server's live engine leaves the level targets to its
  // background compactions, the CLI runs them itself; the shapes, and so the steps, differ.
  delete d.space;
  strip(d.import, [
    'phases',
    'outputDir',
    'outputFiles',
    'peakRssBytes',
    'rowsPerSecond',
    'inputMiBPerSecond',
    'parseThreads',
    'parseRanges',
    // The resumable job of a --db import; an upload to a server is not resumable (the request is the unit).
    'resume',
  ]);
  strip(d.check, [
    'scanSeconds',
    'scanCpuSeconds',
    'scanThreadCpuSeconds',
    'keyComparisons',
    'engineBytesInSpan',
    'strategyReason',
    'engineKeysVisited',
  ]);
  strip(d.ingest, ['seconds', 'latchHeldSeconds', 'files', 'lastSequence', 'memtableFlushes']);
  // Nested measurements of the scan (an adaptive strategy's per-key costs) vary run to run.
  const check = d.check as Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(check ?? {})) if (typeof v === 'object' && v !== null && check !== undefined) delete check[k];
  return d;
}

test('put, get, delete, delete-range, scan and stats print the same and exit the same', async () => {
  for (const [k, v] of [
    ['a', '1'],
    ['b', '2'],
    ['c', '3'],
    ['d\u00e9', '4'],
  ]) {
    const { remote, local } = await both('put', k, v, '--json');
    expect(remote).toEqual(local);
  }
  expect((await both('delete', 'b', '--json')).remote.code).toBe(0);
  const range = await both('delete-range', 'c', 'd', '--json');
  expect(range.remote).toEqual(range.local);
  for (const args of [
    ['get', 'a'],
    ['get', 'a', '--json'],
    ['get', 'b'],
    ['get', 'zz', '--json'],
    ['scan', '--json'],
    ['scan', '--reverse', '--limit', '2'],
    ['scan', '--hex', '--json'],
  ]) {
    const { remote, local } = await both(...args);
    expect(remote).toEqual(local);
  }
  expect((await both('get', 'b')).remote.code).toBe(1);
  const stats = await both('stats', '--json');
  expect(JSON.parse(stats.remote.stdout).lastSequence).toBe(JSON.parse(stats.local.stdout).lastSequence);
  expect(Object.keys(JSON.parse(stats.remote.stdout))).toEqual(Object.keys(JSON.parse(stats.local.stdout)));
});

test('import, check and plan: same documents and exit codes, the report written here naming the CSV line', async () => {
  // The same live value on both sides, so the import conflicts on one key.
  await both('put', '200000000000042', 'live', '--key', 't_id:int64');
  const remoteReport = path.join(root, 'remote-report.json');
  const remote = await runCli('import', FIXTURE, ...DIALECT, '--json', '--server', server.url, '--report', remoteReport);
  const local = await runCli('import', FIXTURE, ...DIALECT, '--json', '--db', twin, '--report', path.join(root, 'local-report.json'));
  expect(remote.code).toBe(3);
  expect(local.code).toBe(3);
  const remoteDoc = comparable(remote.stdout) as Record<string, unknown>;
  const localDoc = comparable(local.stdout) as Record<string, unknown>;
  expect({ ...remoteDoc, report: null }).toEqual({ ...localDoc, report: null });
  const report = JSON.parse(fs.readFileSync(remoteReport, 'utf8')) as {
    conflicts: { key: string; source: { file: string; line: number } }[];
  };
  expect(report.conflicts.map((c) => c.key)).toEqual(['200000000000042']);
  expect(report.conflicts[0].source.file).toBe(FIXTURE);
  expect(remote.stderr).toContain('line');

  const check = await both('check', FIXTURE, ...DIALECT, '--json');
  expect(check.remote.code).toBe(3);
  expect(comparable(check.remote.stdout)).toEqual(comparable(check.local.stdout));
  const plan = await both('plan', FIXTURE, ...DIALECT, '--json');
  expect(plan.remote.code).toBe(0);
  expect(plan.local.code).toBe(0);
  expect(comparable(plan.remote.stdout)).toEqual(comparable(plan.local.stdout));

  const overwrite = await both('import', FIXTURE, ...DIALECT, '--on-conflict', 'overwrite', '--json');
  expect(overwrite.remote.code).toBe(0);
  expect(comparable(overwrite.remote.stdout)).toEqual(comparable(overwrite.local.stdout));
  const after = await both('get', '200000000000042', '--key', 't_id:int64');
  expect(after.remote.stdout).toEqual(after.local.stdout);
  expect(after.remote.stdout).not.toContain('live');
});

test('an import through --server stages each file (SST and row origins) and commits once; pending --server lists and discards', async () => {
  const before = { ...server.staging.counters };
  const r = await runCli('import', FIXTURE, ...DIALECT, '--on-conflict', 'overwrite', '--json', '--server', server.url);
  expect(r.code).toBe(0);
  const ssts = (JSON.parse(r.stdout) as { import: { outputFiles: unknown[] } }).import.outputFiles;
  expect(ssts.length).toBeGreaterThan(0);
  // Each SST went up with its .origins file, one PUT each, then one commit; nothing is left staged.
  expect(server.staging.counters.filesStaged - before.filesStaged).toBe(2 * ssts.length);
  expect(server.staging.counters.commits - before.commits).toBe(1);
  expect(server.staging.list()).toEqual([]);

  const empty = await runCli('pending', '--server', server.url, '--json');
  expect(empty.code).toBe(0);
  expect(JSON.parse(empty.stdout)).toEqual({ server: server.url, imports: [], discarded: [], totalBytes: 0 });
  // A run killed before its commit leaves its staged files: listed, then discarded.
  const sst = path.join(root, 'left.sst');
  writeSst(sst, [['k', 'v']]);
  const put = await fetch(`${server.url}/v1/imports/left-over/files/1.sst`, { method: 'PUT', body: fs.readFileSync(sst) });
  expect(put.status).toBe(201);
  const listed = await runCli('pending', '--server', server.url, '--json');
  const doc = JSON.parse(listed.stdout) as { imports: Array<{ id: string; files: unknown[] }>; totalBytes: number };
  expect(doc.imports.map((i) => [i.id, i.files.length])).toEqual([['left-over', 1]]);
  expect(doc.totalBytes).toBe(fs.statSync(sst).size);
  const human = await runCli('pending', '--server', server.url);
  expect(human.stdout).toContain('left-over  staged  1 file(s)');
  const discarded = await runCli('pending', '--server', server.url, '--discard', 'left-over', '--json');
  expect(JSON.parse(discarded.stdout)).toMatchObject({ imports: [], discarded: ['left-over'] });
  expect((await runCli('pending', '--server', server.url, '--discard', 'left-over')).code).toBe(2);
  expect((await runCli('pending', path.join(root, 'served'), '--server', server.url)).code).toBe(2);
});

test('a staged PUT whose connection fails is sent once more', async () => {
  let attempts = 0;
  const flaky = http.createServer((req, res) => {
    attempts++;
    if (attempts === 1) {
      req.socket.destroy();
      return;
    }
    req.resume();
    req.on('end', () => res.writeHead(201, { 'content-type': 'application/json' }).end('{"staged":true}'));
  });
  await new Promise<void>((resolve) => flaky.listen(0, '127.0.0.1', resolve));
  const file = path.join(root, 'flaky.sst');
  fs.writeFileSync(file, 'bytes');
  const client = new ServerClient(`http://127.0.0.1:${(flaky.address() as AddressInfo).port}`, undefined);
  try {
    await client.putStagedFile('id1', { name: '1.sst', path: file });
    expect(attempts).toBe(2);
  } finally {
    client.close();
    await new Promise((resolve) => flaky.close(resolve));
  }
});

/** Human lines with what differs by nature (the database named, seconds, target file numbers) masked. */
function humanLines(stdout: string, db: string): string {
  return stdout
    .split(db)
    .join('DB')
    .replace(/[0-9.]+s\b/g, 'Ns')
    .replace(/-> \d+\.sst/g, '-> N.sst');
}

test('human output: import, plan and check print the --db lines', async () => {
  const served = path.join(root, 'served');
  await both('put', '200000000000077', 'live', '--key', 't_id:int64');
  const human = DIALECT.filter((a) => a !== '--quiet');
  for (const args of [
    ['plan', FIXTURE, ...human],
    ['import', FIXTURE, ...human],
    ['import', FIXTURE, ...human, '--on-conflict', 'skip'],
  ]) {
    const { remote, local } = await both(...args);
    expect(remote.code).toBe(local.code);
    expect(humanLines(remote.stdout, served)).toEqual(humanLines(local.stdout, twin));
    expect(humanLines(remote.stderr, served)).toEqual(humanLines(local.stderr, twin));
  }
  // The server names its database in a check's answer too, so the check's line is the --db line.
  const check = await both('check', FIXTURE, ...human);
  expect(check.remote.code).toBe(check.local.code);
  expect(humanLines(check.remote.stdout, served)).toEqual(humanLines(check.local.stdout, twin));
});

test('the private temp directory is gone after an import, a failed upload and bad input', async () => {
  const tmp = path.join(root, 'client-tmp');
  const tokenFile = path.join(root, 'wrong-token');
  fs.writeFileSync(tokenFile, 'not-the-token-but-long-enough\n');
  const ok = await runCli('plan', FIXTURE, ...DIALECT, '--tmp-dir', tmp, '--server', server.url);
  expect(ok.code).toBe(0);
  expect(fs.readdirSync(tmp)).toEqual([]);
  const refused = await runCli('import', FIXTURE, ...DIALECT, '--tmp-dir', tmp, '--server', secured.url, '--token-file', tokenFile);
  expect(refused.code).toBe(2);
  expect(refused.stderr).toContain('token');
  expect(fs.readdirSync(tmp)).toEqual([]);
  const bad = path.join(root, 'bad-for-tmp.csv');
  fs.writeFileSync(bad, 'id,v\n1,a\n2,b,c\n');
  expect((await runCli('import', bad, '--header', '--quiet', '--tmp-dir', tmp, '--server', server.url)).code).toBe(2);
  expect(fs.readdirSync(tmp)).toEqual([]);
});

test('compact, --stats and --output-dir do not go with --server (usage, exit 2)', async () => {
  const compact = await runCli('compact', '--server', server.url);
  expect(compact.code).toBe(2);
  expect(compact.stderr).toContain('compact');
  expect((await runCli('get', 'a', '--stats', '--server', server.url)).code).toBe(2);
  expect((await runCli('check', FIXTURE, ...DIALECT, '--output-dir', path.join(root, 'o'), '--server', server.url)).code).toBe(2);
  expect((await runCli('put', 'a', 'b', '--token-file', path.join(root, 'nothing'), '--db', twin)).code).toBe(2);
  expect((await runCli('import', FIXTURE, ...DIALECT, '--token-file', path.join(root, 'nothing'), '--db', twin)).code).toBe(2);
});

test('bad input through the server exits 2 naming the file and line; nothing lands', async () => {
  const bad = path.join(root, 'bad.csv');
  fs.writeFileSync(bad, 'id,v\n1,a\n2,b,c\n');
  const r = await runCli('import', bad, '--header', '--quiet', '--server', server.url);
  expect(r.code).toBe(2);
  expect(r.stderr).toContain(`${bad} line 3`);
  expect((await runCli('get', '1', '--server', server.url)).code).toBe(1);
});

test('a token: missing or wrong exits 2, the right one works; an unreachable server exits 1 naming its URL', async () => {
  const tokenFile = path.join(root, 'token');
  const wrongFile = path.join(root, 'wrong');
  fs.writeFileSync(tokenFile, `${TOKEN}\n`);
  fs.writeFileSync(wrongFile, 'not-the-token-but-long-enough\n');
  expect((await runCli('put', 'k', 'v', '--server', secured.url)).code).toBe(2);
  const wrong = await runCli('put', 'k', 'v', '--server', secured.url, '--token-file', wrongFile);
  expect(wrong.code).toBe(2);
  expect(wrong.stderr).toContain('invalid token');
  expect((await runCli('put', 'k', 'v', '--server', secured.url, '--token-file', tokenFile)).code).toBe(0);
  const gone = await runCli('get', 'k', '--server', 'http://127.0.0.1:9');
  expect(gone.code).toBe(1);
  expect(gone.stderr).toContain('http://127.0.0.1:9');
});

test('--db on the directory a server holds names the server and suggests --server; --db with --server is usage', async () => {
  const held = await runCli('get', 'a', '--db', path.join(root, 'served'));
  expect(held.code).toBe(1);
  expect(held.stderr).toContain(`use --server ${server.url}`);
  expect((await runCli('get', 'a', '--db', twin, '--server', server.url)).code).toBe(2);
  expect((await runCli('get', 'a')).code).toBe(2);
});
