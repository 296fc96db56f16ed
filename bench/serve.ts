/**
 * bench:serve: what `ingest serve` costs over HTTP, measured against baselines in the same run.
 *
 *   npm run bench:serve [-- --seconds S] [--keys N] [--connections 1,16,64] [--import-rows N]
 *                          [--import-runs R] [--writer-concurrency C] [--console-runs R]
 *                          [--skip-stacks] [--skip-kv] [--skip-import] [--skip-console]
 *                          [--trace] [--server-node-args "--cpu-prof --cpu-prof-dir D"]
 *
 * 1. Stacks (unless --skip-stacks): an empty route on bare node:http and on fastify 5, each in
 *    its own process, at every connection count: why the server is built on node:http.
 * 2. The server (`ingest serve`, its own process, a database of --keys preloaded keys): GET and
 *    PUT /v1/kv at 1, 16 and 64 connections beside its own empty route (GET /healthz, the same
 *    server, routing and all): throughput and p50/p99 latency, and get / empty (target >= 0.6).
 * 3. A client writer (C PUTs in flight over keep-alive connections, keys outside the import's
 *    span) while a --import-rows CSV import lands through POST /v1/imports, against the same
 *    writer with nothing else going on, alternated --import-runs times (medians): target >= 80%.
 * 4. The console and the metrics (unless --skip-console): GET and PUT /v1/kv at 16 connections
 *    alone (a) and with the console open (b: a poller here asks for what an open /ui page polls,
 *    every view's polls at once, plus a /metrics scrape every second), alternated --console-runs
 *    times (medians): target b/a within noise, i.e. |b/a - 1| below the spread of (a)'s runs.
 * The server runs with a token, as in production; every client here sends it. Its log (pino, a
 * JSON line per request) goes to a file in the bench's directory. The load generator is
 * autocannon (npm), in this process; the server is a separate process, as it is in production,
 * so the two share the machine's cores but not an event loop. The import is uploaded by curl (a
 * third process, as a cron job would run it).
 */
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import { ChildProcess, spawn } from 'child_process';
import { randomBytes } from 'crypto';
import { setTimeout as delay } from 'timers/promises';
import autocannon from 'autocannon';
import { ArgReader } from './support/args';
import { writeTrades, FIRST_TRADE_ID } from './gen-trades';

interface Args {
  seconds: number;
  keys: number;
  connections: number[];
  importRows: number;
  importRuns: number;
  writerConcurrency: number;
  skipStacks: boolean;
  /** Skip part 2 (get/put beside the empty route): for quick runs of part 3 alone. */
  skipKv: boolean;
  /** Skip part 3 (the writer while imports land). */
  skipImport: boolean;
  /** Part 4's runs of each condition (alone, console open). */
  consoleRuns: number;
  skipConsole: boolean;
  /** Extra node flags for the server's process (space-separated), e.g. --cpu-prof to see where its time goes. */
  serverNodeArgs: string[];
  /** Print the writer's rate per 250 ms through each import, and the import's phases. */
  trace: boolean;
}

function parseArgs(argv: readonly string[]): Args {
  const a: Args = {
    seconds: 5,
    keys: 100_000,
    connections: [1, 16, 64],
    importRows: 1_000_000,
    importRuns: 3,
    writerConcurrency: 4,
    skipStacks: false,
    skipKv: false,
    skipImport: false,
    consoleRuns: 3,
    skipConsole: false,
    serverNodeArgs: [],
    trace: false,
  };
  const r = new ArgReader(argv);
  for (let flag = r.nextFlag(); flag !== null; flag = r.nextFlag()) {
    if (flag === '--seconds') a.seconds = r.positiveNumber();
    else if (flag === '--keys') a.keys = r.positiveInteger();
    else if (flag === '--connections') a.connections = r.value().split(',').map(Number);
    else if (flag === '--import-rows') a.importRows = r.positiveInteger();
    else if (flag === '--import-runs') a.importRuns = r.positiveInteger();
    else if (flag === '--writer-concurrency') a.writerConcurrency = r.positiveInteger();
    else if (flag === '--skip-stacks') a.skipStacks = true;
    else if (flag === '--skip-kv') a.skipKv = true;
    else if (flag === '--skip-import') a.skipImport = true;
    else if (flag === '--console-runs') a.consoleRuns = r.positiveInteger();
    else if (flag === '--skip-console') a.skipConsole = true;
    else if (flag === '--server-node-args')
      a.serverNodeArgs = r
        .value()
        .split(' ')
        .filter((x) => x !== '');
    else if (flag === '--trace') a.trace = true;
    else throw new Error(`unknown flag ${flag}`);
  }
  return a;
}

const DIST = path.resolve(__dirname, '..');

/** The server's token (a fresh one per run) and the header every client here sends with it. */
const TOKEN = randomBytes(24).toString('hex');
const AUTH_HEADERS: Readonly<Record<string, string>> = { authorization: `Bearer ${TOKEN}` };

/**
 * Spawns a node script that prints one JSON line with its url; resolves once it has. `stderrFile`:
 * its stderr goes there (the server's log, a JSON line per request, as a collector would take it)
 * instead of this terminal, where a line per request would be the bench's bottleneck.
 */
function spawnServer(
  script: string,
  args: string[],
  nodeArgs: string[] = [],
  stderrFile?: string,
): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const stderr = stderrFile === undefined ? 'inherit' : fs.openSync(stderrFile, 'w');
    const child = spawn(process.execPath, [...nodeArgs, path.join(DIST, script), ...args], { stdio: ['ignore', 'pipe', stderr] });
    if (typeof stderr === 'number') fs.closeSync(stderr);
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve({ child, url: (JSON.parse(out.slice(0, nl)) as { url: string }).url });
    });
    child.on('exit', (code) => reject(new Error(`${script} exited (${code}) before listening`)));
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

interface LoadFigures {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
  /** Requests sent, answered or not (each answered one is a line in the server's log). */
  requestsSent: number;
}

async function load(url: string, connections: number, seconds: number, request: autocannon.Request): Promise<LoadFigures> {
  const result = await autocannon({ url, connections, duration: seconds, headers: { ...AUTH_HEADERS }, requests: [request] });
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    requestsSent: result.requests.sent,
  };
}

function keyPath(n: number): string {
  return `/v1/kv/k${String(n).padStart(9, '0')}`;
}

/** One request with a body (and the token); resolves with the status. */
function request(agent: http.Agent, url: string, method: string, pathname: string, body: Buffer | null): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${url}${pathname}`,
      { method, agent, headers: body === null ? AUTH_HEADERS : { ...AUTH_HEADERS, 'content-length': body.length } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

async function preload(url: string, keys: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const perBatch = 1000;
  for (let first = 0; first < keys; first += perBatch) {
    const ops = [];
    for (let n = first; n < Math.min(keys, first + perBatch); n++)
      ops.push({ op: 'put', key: keyPath(n).slice(7), value: `value-${n}-${'x'.repeat(80)}` });
    const status = await request(agent, url, 'POST', '/v1/batch', Buffer.from(JSON.stringify(ops)));
    if (status !== 200) throw new Error(`preload batch: status ${status}`);
  }
  agent.destroy();
}

function randomKeyRequest(method: 'GET' | 'PUT', keys: number, value: Buffer): autocannon.Request {
  return {
    method,
    setupRequest: (req) => ({ ...req, path: keyPath(Math.floor(Math.random() * keys)), body: method === 'PUT' ? value : undefined }),
  };
}

function row(label: string, f: LoadFigures, extra = ''): string {
  const rps = Math.round(f.requestsPerSecond).toString().padStart(7);
  return `  ${label.padEnd(26)} ${rps} req/s  p50 ${f.p50Ms.toFixed(2).padStart(6)} ms  p99 ${f.p99Ms.toFixed(2).padStart(6)} ms  errors ${f.errors} non-2xx ${f.non2xx}${extra}`;
}

async function benchStacks(a: Args): Promise<void> {
  console.log('\n1. HTTP stacks, empty route (each in its own process)');
  for (const kind of ['node', 'fastify']) {
    const s = await spawnServer('bench/serve-empty-server.js', [kind]);
    try {
      for (const c of a.connections)
        console.log(row(`${kind} empty, ${c} conn`, await load(s.url, c, a.seconds, { method: 'GET', path: '/' })));
    } finally {
      await stop(s.child);
    }
  }
}

async function benchServer(a: Args, url: string): Promise<number> {
  console.log(`\n2. ingest serve: GET/PUT /v1/kv (${a.keys} keys) beside its own empty route GET /healthz`);
  const value = Buffer.alloc(100, 'v');
  let worstGetRatio = Number.POSITIVE_INFINITY;
  for (const c of a.connections) {
    const empty = await load(url, c, a.seconds, { method: 'GET', path: '/healthz' });
    const get = await load(url, c, a.seconds, randomKeyRequest('GET', a.keys, value));
    const put = await load(url, c, a.seconds, randomKeyRequest('PUT', a.keys, value));
    const ratio = get.requestsPerSecond / empty.requestsPerSecond;
    worstGetRatio = Math.min(worstGetRatio, ratio);
    console.log(row(`empty (healthz), ${c} conn`, empty));
    console.log(row(`get, ${c} conn`, get, `  get/empty ${ratio.toFixed(2)}x`));
    console.log(row(`put, ${c} conn`, put, `  put/empty ${(put.requestsPerSecond / empty.requestsPerSecond).toFixed(2)}x`));
  }
  return worstGetRatio;
}

/** A client writer: `concurrency` PUT loops over keep-alive connections, completion times recorded. */
class ClientWriter {
  private readonly agent: http.Agent;
  private readonly done = new Float64Array(20_000_000);
  private count = 0;
  private running = true;
  private loops: Promise<void>[] = [];
  private readonly t0 = performance.now();
  failures = 0;

  constructor(
    private readonly url: string,
    concurrency: number,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
    const value = Buffer.alloc(100, 'w');
    for (let i = 0; i < concurrency; i++) this.loops.push(this.loop(i, concurrency, value));
  }

  now(): number {
    return (performance.now() - this.t0) / 1000;
  }

  private async loop(first: number, step: number, value: Buffer): Promise<void> {
    // 'w…' keys sort above every trade id: the writer never waits on the import's latch.
    for (let n = first; this.running; n += step) {
      const status = await request(this.agent, this.url, 'PUT', `/v1/kv/w${String(n).padStart(9, '0')}`, value);
      if (status !== 204) this.failures++;
      if (this.count < this.done.length) this.done[this.count++] = this.now();
    }
  }

  rateIn(from: number, to: number): number {
    let n = 0;
    for (let i = 0; i < this.count; i++) if (this.done[i] >= from && this.done[i] < to) n++;
    return n / Math.max(to - from, 1e-9);
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    this.agent.destroy();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * POSTs the CSV file to /v1/imports from a separate process (curl streams it with -T), as a
 * nightly job would: the upload's own CPU is not taken from the writer in this process.
 */
function postImport(url: string, file: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const args = ['-sS', '-X', 'POST', '-T', file, '-H', `authorization: ${AUTH_HEADERS.authorization}`, '-w', '\n%{http_code}'];
    args.push(`${url}/v1/imports?delimiter=%7C&header=1&name=trades.csv`);
    const child = spawn('curl', args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      const nl = out.lastIndexOf('\n');
      if (code !== 0 || nl < 0) reject(new Error(`curl exited ${code}: ${out.slice(0, 300)}`));
      else resolve({ status: Number(out.slice(nl + 1)), body: out.slice(0, nl) });
    });
  });
}

interface WriterRun {
  idleRate: number;
  busyRate: number;
  importSeconds: number;
}

async function writerRun(a: Args, url: string, csv: string): Promise<WriterRun> {
  const warmMs = 1000;
  // Busy: the writer, then the import through the server.
  const busy = new ClientWriter(url, a.writerConcurrency);
  await sleep(warmMs);
  const start = busy.now();
  const reply = await postImport(url, csv);
  const end = busy.now();
  await busy.stop();
  if (reply.status !== 200) throw new Error(`import: status ${reply.status}: ${reply.body.slice(0, 500)}`);
  if (busy.failures > 0) throw new Error(`busy writer: ${busy.failures} failed writes`);
  // Idle twin: the same writer for as long, nothing else running.
  const idle = new ClientWriter(url, a.writerConcurrency);
  await sleep(warmMs);
  const idleStart = idle.now();
  await sleep((end - start) * 1000);
  const idleEnd = idle.now();
  await idle.stop();
  if (a.trace) {
    const buckets: string[] = [];
    for (let t = start; t < end; t += 0.25) buckets.push(String(Math.round(busy.rateIn(t, Math.min(end, t + 0.25)))));
    console.log(`    writer per 250 ms during the import: ${buckets.join(' ')}`);
    const phases = JSON.parse(reply.body) as { import: { phases: object }; check: { scanSeconds: number }; ingest: { seconds: number } };
    console.log(
      `    import phases ${JSON.stringify(phases.import.phases)}, scan ${phases.check.scanSeconds} s, ingest ${phases.ingest.seconds} s`,
    );
  }
  return { idleRate: idle.rateIn(idleStart, idleEnd), busyRate: busy.rateIn(start, end), importSeconds: end - start };
}

function median(xs: number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

async function benchWriter(a: Args, url: string, tmp: string): Promise<number> {
  console.log(
    `\n3. a client writer (${a.writerConcurrency} PUTs in flight) while ${a.importRows} rows land through POST /v1/imports, against its idle twin`,
  );
  const ratios: number[] = [];
  for (let run = 0; run < a.importRuns; run++) {
    const csv = path.join(tmp, `trades-${run}.csv`);
    const fd = fs.openSync(csv, 'w');
    writeTrades(fd, a.importRows, 42 + run, true, FIRST_TRADE_ID + run * 10_000_000);
    fs.closeSync(fd);
    const r = await writerRun(a, url, csv);
    fs.rmSync(csv);
    const ratio = r.busyRate / r.idleRate;
    ratios.push(ratio);
    console.log(
      `  run ${run + 1}: import ${r.importSeconds.toFixed(2)} s; writer ${Math.round(r.busyRate)}/s during it, ${Math.round(r.idleRate)}/s idle: ${(ratio * 100).toFixed(1)}%`,
    );
  }
  return median(ratios);
}

/**
 * What an open console page asks the server for, and how often (ui/src/*View.tsx, usePoll.ts:
 * the next request `intervalMs` after the previous answer), plus a Prometheus scrape. A tab polls
 * only the view on screen; the poller polls every view's routes at once, more than one tab does.
 */
const CONSOLE_POLLS: ReadonlyArray<{ path: string; intervalMs: number }> = [
  { path: '/v1/stats', intervalMs: 1000 }, // lsmView.tsx LSM_POLL_MS (the default view; also the login check)
  { path: '/v1/console/imports', intervalMs: 1000 }, // importsView.tsx IMPORTS_POLL_MS (conflictsView: every 3 s)
  { path: '/v1/console/history', intervalMs: 2000 }, // chartsView.tsx HISTORY_POLL_MS
  { path: '/metrics', intervalMs: 1000 }, // a scraper every second
];

/** Part 4's connection count: the server's throughput plateau in part 2. */
const CONSOLE_CONNECTIONS = 16;

/** The open console: one poll loop per route of CONSOLE_POLLS over keep-alive connections, until stop(). */
class ConsolePoller {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: CONSOLE_POLLS.length });
  private readonly stopper = new AbortController();
  private readonly loops: Promise<void>[];
  /** Answers by "path status" (status 0: no answer): at most a few statuses per route. */
  readonly answers = new Map<string, number>();

  constructor(private readonly url: string) {
    this.loops = CONSOLE_POLLS.map((p) => this.loop(p.path, p.intervalMs));
  }

  private async loop(pathname: string, intervalMs: number): Promise<void> {
    while (!this.stopper.signal.aborted) {
      const status = await request(this.agent, this.url, 'GET', pathname, null).catch(() => 0);
      const key = `${pathname} ${status}`;
      this.answers.set(key, (this.answers.get(key) ?? 0) + 1);
      await delay(intervalMs, undefined, { signal: this.stopper.signal }).catch(() => undefined);
    }
  }

  async stop(): Promise<void> {
    this.stopper.abort();
    await Promise.all(this.loops);
    this.agent.destroy();
  }

  /** The requests it made; throws unless every one was answered 200 and every route was asked. */
  checkedRequests(): number {
    const bad = [...this.answers].filter(([key]) => !key.endsWith(' 200'));
    const unasked = CONSOLE_POLLS.filter((p) => !this.answers.has(`${p.path} 200`));
    if (bad.length > 0 || unasked.length > 0)
      throw new Error(`console poller: answers ${JSON.stringify([...this.answers])}, never 200: ${unasked.map((p) => p.path).join(', ')}`);
    let n = 0;
    for (const count of this.answers.values()) n += count;
    return n;
  }
}

interface KvRun {
  getPerSecond: number;
  putPerSecond: number;
  /** Requests made: autocannon's, and the poller's (0 alone). */
  kvRequests: number;
  pollerRequests: number;
}

/** GET then PUT at CONSOLE_CONNECTIONS for --seconds each; with the console open, the poller runs through both. */
async function kvRun(a: Args, url: string, consoleOpen: boolean): Promise<KvRun> {
  const value = Buffer.alloc(100, 'v');
  const poller = consoleOpen ? new ConsolePoller(url) : null;
  let get: LoadFigures;
  let put: LoadFigures;
  try {
    get = await load(url, CONSOLE_CONNECTIONS, a.seconds, randomKeyRequest('GET', a.keys, value));
    put = await load(url, CONSOLE_CONNECTIONS, a.seconds, randomKeyRequest('PUT', a.keys, value));
  } finally {
    await poller?.stop();
  }
  for (const [name, f] of [
    ['get', get],
    ['put', put],
  ] as const)
    if (f.errors + f.non2xx > 0) throw new Error(`${name}: ${f.errors} errors, ${f.non2xx} non-2xx`);
  return {
    getPerSecond: get.requestsPerSecond,
    putPerSecond: put.requestsPerSecond,
    kvRequests: get.requestsSent + put.requestsSent,
    pollerRequests: poller === null ? 0 : poller.checkedRequests(),
  };
}

/** Lines in a file, counted as it streams (the log may be hundreds of MB). */
async function countLines(file: string): Promise<number> {
  let n = 0;
  for await (const chunk of fs.createReadStream(file) as AsyncIterable<Buffer>)
    for (let i = chunk.indexOf(10); i >= 0; i = chunk.indexOf(10, i + 1)) n++;
  return n;
}

function loadAverage(): string {
  return os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(', ');
}

/** How long the server's log is given to reach its file before its lines are counted (pino writes asynchronously). */
const LOG_FLUSH_MS = 1000;

function rate(perSecond: number): string {
  return Math.round(perSecond).toLocaleString('en-US');
}

interface ConsoleVerdict {
  getRatio: number;
  putRatio: number;
  getWithin: boolean;
  putWithin: boolean;
}

async function benchConsole(a: Args, url: string, logFile: string): Promise<ConsoleVerdict> {
  const polls = CONSOLE_POLLS.map((p) => `${p.path} every ${p.intervalMs / 1000} s`).join(', ');
  console.log(
    `\n4. GET/PUT /v1/kv at ${CONSOLE_CONNECTIONS} conn alone (a) and with the console open (b: ${polls}), ABAB x${a.consoleRuns}`,
  );
  console.log(`  load average before: ${loadAverage()}`);
  await kvRun({ ...a, seconds: 1 }, url, false); // warm-up, not counted: the first (a) does not pay for the JIT
  await sleep(LOG_FLUSH_MS);
  const logLinesBefore = await countLines(logFile);
  const alone: KvRun[] = [];
  const open: KvRun[] = [];
  for (let run = 1; run <= a.consoleRuns; run++) {
    for (const consoleOpen of [false, true]) {
      const r = await kvRun(a, url, consoleOpen);
      (consoleOpen ? open : alone).push(r);
      const poller = consoleOpen ? `  poller ${r.pollerRequests} requests, all 200` : '';
      console.log(
        `  run ${run} ${consoleOpen ? '(b) console open' : '(a) alone       '}: get ${rate(r.getPerSecond)}/s, put ${rate(r.putPerSecond)}/s${poller}`,
      );
    }
  }
  const verdict = printConsoleFigures(alone, open);
  await sleep(LOG_FLUSH_MS);
  const logLines = (await countLines(logFile)) - logLinesBefore;
  const made = [...alone, ...open].reduce((n, r) => n + r.kvRequests + r.pollerRequests, 0);
  console.log(`  load average after: ${loadAverage()}`);
  console.log(`  server log: ${logLines} lines in this part (${made} requests sent: autocannon's and the poller's)`);
  return verdict;
}

/** The spread of runs: (max - min) / median. */
function spread(xs: number[]): number {
  return (Math.max(...xs) - Math.min(...xs)) / median(xs);
}

function printConsoleFigures(alone: KvRun[], open: KvRun[]): ConsoleVerdict {
  const figures = (runs: KvRun[], of: (r: KvRun) => number): string =>
    `median ${rate(median(runs.map(of)))}/s (${runs.map((r) => rate(of(r))).join(', ')})`;
  for (const [label, runs] of [
    ['(a) alone       ', alone],
    ['(b) console open', open],
  ] as const)
    console.log(`  ${label}: get ${figures(runs, (r) => r.getPerSecond)}, put ${figures(runs, (r) => r.putPerSecond)}`);
  const judge = (name: string, of: (r: KvRun) => number): [number, boolean] => {
    const ratio = median(open.map(of)) / median(alone.map(of));
    const noise = spread(alone.map(of));
    const within = Math.abs(ratio - 1) < noise;
    console.log(
      `  ${name} b/a ${ratio.toFixed(3)}, noise band (spread of (a)'s runs) ${(noise * 100).toFixed(1)}%: ${within ? 'within noise' : 'NOT within noise'}`,
    );
    return [ratio, within];
  };
  const [getRatio, getWithin] = judge('get', (r) => r.getPerSecond);
  const [putRatio, putWithin] = judge('put', (r) => r.putPerSecond);
  return { getRatio, putRatio, getWithin, putWithin };
}

/** Parts 2 to 4 on one server, then the summary of their targets. */
async function benchParts(a: Args, url: string, tmp: string, logFile: string): Promise<void> {
  const worstGetRatio = a.skipKv ? Number.NaN : await benchServer(a, url);
  const writerRatio = a.skipImport ? Number.NaN : await benchWriter(a, url, tmp);
  const consoleVerdict = a.skipConsole ? null : await benchConsole(a, url, logFile);
  console.log('\nsummary');
  if (!a.skipKv)
    console.log(
      `  get / empty route, worst over connection counts: ${worstGetRatio.toFixed(2)}x (target >= 0.60): ${worstGetRatio >= 0.6 ? 'met' : 'NOT met'}`,
    );
  if (!a.skipImport)
    console.log(
      `  writer during import / idle, median of ${a.importRuns}: ${(writerRatio * 100).toFixed(1)}% (target >= 80%): ${writerRatio >= 0.8 ? 'met' : 'NOT met'}`,
    );
  if (consoleVerdict !== null) {
    const v = consoleVerdict;
    const verdict = (within: boolean): string => (within ? 'within noise' : 'NOT within noise');
    console.log(
      `  console open / alone, medians of ${a.consoleRuns}: get ${v.getRatio.toFixed(3)} (${verdict(v.getWithin)}), put ${v.putRatio.toFixed(3)} (${verdict(v.putWithin)}) (target: within noise)`,
    );
  }
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-serve-'));
  console.log(`bench:serve on ${os.cpus().length} cores, node ${process.version}; ${a.seconds} s per load; autocannon in this process`);
  try {
    if (!a.skipStacks) await benchStacks(a);
    const tokenFile = path.join(tmp, 'token');
    fs.writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    const logFile = path.join(tmp, 'serve.log');
    const server = await spawnServer(
      'cli/ingest.js',
      ['serve', '--db', path.join(tmp, 'db'), '--port', '0', '--token-file', tokenFile],
      a.serverNodeArgs,
      logFile,
    );
    try {
      await preload(server.url, a.keys);
      await benchParts(a, server.url, tmp, logFile);
    } finally {
      await stop(server.child);
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
