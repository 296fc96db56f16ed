/**
 * Our Engine against the stores a Node user would pick instead, lmdb 3.x and classic-level 3.x
 * (LevelDB), on the same workload in the same run: issue 39's "from Node" row, whose targets are
 * our gets at least lmdb's and our puts ahead of both.
 *
 * Usage: npm run bench:peers [-- --num N (1000000)] [--runs N (3)] [--lmdb-sync] [--settle] [--json]
 *
 * Workload, per store, written as a Node user would write it:
 * - `num` puts, each awaited before the next (`await engine.put(k, v)`, `await db.put(k, v)` on
 *   both peers), of keys drawn uniformly from [0, num) (repeats included, so about 63% are
 *   distinct), each the key's 8-byte big-endian encoding, values the next 120 bytes of db_bench's
 *   value buffer (the generator and seeds of bench/engine-vs-db_bench.ts, copied below);
 * - then `num` point reads of keys uniform in [0, num) from a second seeded draw: ours and lmdb's
 *   are synchronous (`engine.get(k)`, `db.get(k)`), classic-level's awaited (`await db.get(k)`,
 *   undefined when missing). lmdb's `get` with the binary encoding is its `getBinary` (a copy);
 *   its fast path `getBinaryFast` (a reused buffer, no copy) runs too, printed beside it.
 * Every store gets the same draws. The gets start right after the last put resolves: whatever a
 * store still has to flush or compact is its own business, as it is for its user. Note what that
 * means for ours: an awaited put that needs no room resolves within microtasks, and our flushes
 * start on a setImmediate turn, so no flush runs during the put loop (nor the synchronous get
 * loop) while the memtables have room (64 MiB and 2 immutable ones: about 1M of these puts); the
 * puts then pay no flush, and the gets search memtables. The output prints our shape at the gets.
 * --settle instead flushes our memtables and waits for our compactions before the gets (timed
 * apart, printed as settle seconds), so the gets read tables; the peers are left as they are
 * (lmdb has nothing pending; LevelDB compacts on its own threads).
 *
 * Options (see storeOptions): ours is `Engine.open(dir)` with every default (the workload needs
 * none changed); classic-level has only its key and value encodings set to raw bytes; lmdb has its
 * encodings set to raw bytes and `noSync: true`. Why noSync: by default our puts and
 * classic-level's write their log without fsync, while lmdb resolves each put only after its
 * commit is flushed to disk, an fsync per awaited put (about 1,300 puts/s on this machine's disk,
 * so 1M puts would take over 12 minutes a run, and "our puts ahead" would measure the disk).
 * noSync is the like-for-like setting: each put still waits for its commit, not for the disk.
 * --lmdb-sync runs lmdb with its durable default instead.
 *
 * Runs: each of --runs runs the three stores one after another on fresh directories under
 * os.tmpdir() (removed after each store), in an order rotated per run, so no store always goes
 * first or last on a shared machine; the figures are medians over runs.
 *
 * Measured: wall-clock ops/s (the headline: an awaited put includes its event-loop turns), the
 * main thread's CPU per op (the native addon's thread clock, as bench/conflict.ts uses; absent
 * without the addon) and the process's CPU per op (which also counts lmdb's write thread and
 * LevelDB's background threads). Load average before and after, since other processes skew it.
 *
 * Checks (untimed): every store finds, get by get, exactly the keys drawn that were written (the
 * expected count comes from the draws), each value 120 bytes; otherwise the bench fails.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../src/engine/engine';
import { nativeUtil } from '../src/util/nativeUtil';
import { ArgReader } from './support/args';
import { randomKeys, ValueGenerator, writeKey } from './support/dbBenchWorkload';

const KEY_BYTES = 8;
const VALUE_BYTES = 120;
/** The seeds of bench/engine-vs-db_bench.ts's fill and readrandom draws. */
const PUT_SEED = 0x9e3779b9;
const GET_SEED = 0x85ebca6b;
/** A bound on --runs: each run at 1M keys takes minutes. */
const MAX_RUNS = 25;
/** Directories up from a package's entry point searched for its package.json. */
const MAX_PACKAGE_DEPTH = 8;
const STORES = ['ours', 'lmdb', 'classic-level'] as const;
type StoreName = (typeof STORES)[number];

type LmdbModule = typeof import('lmdb');
type ClassicLevelModule = typeof import('classic-level');

interface Args {
  num: number;
  runs: number;
  /** lmdb with its default durable commits (fsync per put) instead of noSync. */
  lmdbSync: boolean;
  /** Flush ours and wait for its compactions before the gets (see the module comment). */
  settle: boolean;
  json: boolean;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { num: 1_000_000, runs: 3, lmdbSync: false, settle: false, json: false };
  const r = new ArgReader(argv);
  for (let flag = r.nextFlag(); flag !== null; flag = r.nextFlag()) {
    switch (flag) {
      case '--num': {
        const n = r.positiveInteger();
        if (n > 0xffffffff) throw new Error('--num must be an integer in [1, 2^32)');
        args.num = n;
        break;
      }
      case '--runs': {
        const n = r.positiveInteger();
        if (n > MAX_RUNS) throw new Error(`--runs must be at most ${MAX_RUNS}`);
        args.runs = n;
        break;
      }
      case '--lmdb-sync':
        args.lmdbSync = true;
        break;
      case '--settle':
        args.settle = true;
        break;
      case '--json':
        args.json = true;
        break;
      default:
        throw new Error(`unknown argument ${flag} (expected --num N, --runs N, --lmdb-sync, --settle, --json)`);
    }
  }
  return args;
}

function storeOptions(args: Args): Record<StoreName, string> {
  return {
    ours: 'Engine.open(dir), all defaults: 64 MiB write buffer, 2 immutable memtables, 32 MiB block cache, format 5, LZ4, Bloom 10 bits/key, automatic compactions, WAL without fsync',
    lmdb: args.lmdbSync
      ? "open(dir, { keyEncoding: 'binary', encoding: 'binary' }) (--lmdb-sync), defaults otherwise: each put resolves after its commit is flushed to disk"
      : "open(dir, { keyEncoding: 'binary', encoding: 'binary', noSync: true }), defaults otherwise: each put resolves at its commit, not flushed to disk (like the others' logs)",
    'classic-level': "new ClassicLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' }), defaults otherwise: log without fsync",
  };
}

// ---------------------------------------------------------------------------------- workload
/** The draws every store gets, and what the gets must find. */
interface Workload {
  num: number;
  putKeys: Uint32Array;
  getKeys: Uint32Array;
  /** written[k] = 1 when key k was put. */
  written: Uint8Array;
  /** Gets whose key was put: what every store must find. */
  expectedFound: number;
}

function makeWorkload(num: number): Workload {
  const putKeys = randomKeys(num, num, PUT_SEED);
  const getKeys = randomKeys(num, num, GET_SEED);
  const written = new Uint8Array(num);
  for (let i = 0; i < num; i++) written[putKeys[i]] = 1;
  let expectedFound = 0;
  for (let i = 0; i < num; i++) expectedFound += written[getKeys[i]];
  return { num, putKeys, getKeys, written, expectedFound };
}

// ---------------------------------------------------------------------------------- measuring

interface Phase {
  ops: number;
  wallSeconds: number;
  opsPerSecond: number;
  /** The main thread's CPU per op (null without the native addon's thread clock). */
  mainThreadCpuMicrosPerOp: number | null;
  /** The whole process's CPU per op: the peers' own threads included. */
  processCpuMicrosPerOp: number;
}

interface MeterStart {
  wallNs: bigint;
  threadCpuSeconds: number;
  processCpu: NodeJS.CpuUsage;
}

function startMeter(): MeterStart {
  return { wallNs: process.hrtime.bigint(), threadCpuSeconds: nativeUtil?.threadCpuSeconds() ?? -1, processCpu: process.cpuUsage() };
}

function endPhase(ops: number, start: MeterStart): Phase {
  const wallSeconds = Number(process.hrtime.bigint() - start.wallNs) / 1e9;
  const processCpu = process.cpuUsage(start.processCpu);
  const threadNow = nativeUtil?.threadCpuSeconds() ?? -1;
  const threadSeconds = start.threadCpuSeconds < 0 || threadNow < 0 ? null : threadNow - start.threadCpuSeconds;
  return {
    ops,
    wallSeconds,
    opsPerSecond: ops / wallSeconds,
    mainThreadCpuMicrosPerOp: threadSeconds === null ? null : (threadSeconds * 1e6) / ops,
    processCpuMicrosPerOp: (processCpu.user + processCpu.system) / ops,
  };
}

/** What a get loop saw, for the untimed check: found[i] = 1 when get i found its key. */
interface GetOutcome {
  found: Uint8Array;
  valueBytes: number;
}

/** Checks, get by get, that exactly the keys drawn that were written were found; returns the count. */
function checkGets(label: string, w: Workload, outcome: GetOutcome): number {
  let found = 0;
  for (let i = 0; i < w.num; i++) {
    if (outcome.found[i] !== w.written[w.getKeys[i]]) {
      const what = outcome.found[i] === 1 ? 'found a key never written' : 'missed a written key';
      throw new Error(`benchmark self-check failed: ${label} ${what}: get ${i}, key ${w.getKeys[i]}`);
    }
    found += outcome.found[i];
  }
  if (found !== w.expectedFound || outcome.valueBytes !== found * VALUE_BYTES)
    throw new Error(
      `benchmark self-check failed: ${label} found ${found} keys (${outcome.valueBytes} value bytes), expected ${w.expectedFound}`,
    );
  return found;
}

function isPromise<T>(x: T | Promise<T>): x is Promise<T> {
  return typeof (x as { then?: unknown } | null | undefined)?.then === 'function';
}

/** The workload's puts through `put`, each awaited, timed. */
async function timePuts(w: Workload, put: (key: Buffer, value: Buffer) => Promise<unknown>): Promise<Phase> {
  const key = Buffer.alloc(KEY_BYTES);
  const values = new ValueGenerator();
  const meter = startMeter();
  for (let i = 0; i < w.num; i++) {
    writeKey(key, w.putKeys[i]);
    await put(key, values.generate(VALUE_BYTES));
  }
  return endPhase(w.num, meter);
}

/**
 * The workload's gets through `get` (a value, or null/undefined when missing; awaited only when
 * it returns a promise, so a synchronous get is timed without a microtask per call), timed, then
 * checked key by key (checkGets): the phase and the keys found.
 */
async function timeGets(
  label: string,
  w: Workload,
  get: (key: Buffer) => Uint8Array | null | undefined | Promise<Uint8Array | null | undefined>,
): Promise<{ phase: Phase; found: number }> {
  const key = Buffer.alloc(KEY_BYTES);
  const outcome: GetOutcome = { found: new Uint8Array(w.num), valueBytes: 0 };
  const meter = startMeter();
  for (let i = 0; i < w.num; i++) {
    writeKey(key, w.getKeys[i]);
    const answer = get(key);
    const v = isPromise(answer) ? await answer : answer;
    if (v !== null && v !== undefined) {
      outcome.found[i] = 1;
      outcome.valueBytes += v.length;
    }
  }
  const phase = endPhase(w.num, meter);
  return { phase, found: checkGets(label, w, outcome) };
}

// ---------------------------------------------------------------------------------- the stores

interface StoreRun {
  store: StoreName;
  puts: Phase;
  gets: Phase;
  /** lmdb only: the same gets through getBinaryFast. */
  getsFast: Phase | null;
  found: number;
  /** What the store looked like when the gets began (ours: files per level, memtables). */
  note: string | null;
  /** ours with --settle: the seconds its flush and compactions took before the gets. */
  settleSeconds: number | null;
}

async function runOurs(dir: string, w: Workload, settle: boolean): Promise<StoreRun> {
  const engine = await Engine.open(dir);
  try {
    const puts = await timePuts(w, (key, value) => engine.put(key, value));
    let settleSeconds: number | null = null;
    if (settle) {
      const start = process.hrtime.bigint();
      await engine.flush();
      await engine.waitForCompactions();
      settleSeconds = Number(process.hrtime.bigint() - start) / 1e9;
    }
    const s = engine.stats();
    const note = `at the gets: files per level ${JSON.stringify(s.filesPerLevel)}, ${s.immutableMemtables} immutable memtables, ${s.flushes} flushes, ${s.writeStalls} write stalls`;
    const gets = await timeGets('ours engine.get', w, (key) => engine.get(key));
    return { store: 'ours', puts, gets: gets.phase, getsFast: null, found: gets.found, note, settleSeconds };
  } finally {
    await engine.close();
  }
}

async function runLmdb(dir: string, w: Workload, lmdb: LmdbModule, sync: boolean): Promise<StoreRun> {
  const db = lmdb.open<Buffer, Buffer>(dir, { keyEncoding: 'binary', encoding: 'binary', ...(sync ? {} : { noSync: true }) });
  try {
    const puts = await timePuts(w, (key, value) => db.put(key, value));
    const gets = await timeGets('lmdb db.get', w, (key) => db.get(key));
    const fast = await timeGets('lmdb db.getBinaryFast', w, (key) => db.getBinaryFast(key));
    return { store: 'lmdb', puts, gets: gets.phase, getsFast: fast.phase, found: gets.found, note: null, settleSeconds: null };
  } finally {
    await db.close();
  }
}

async function runClassicLevel(dir: string, w: Workload, mod: ClassicLevelModule): Promise<StoreRun> {
  const db = new mod.ClassicLevel<Buffer, Buffer>(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  try {
    const puts = await timePuts(w, (key, value) => db.put(key, value));
    // classic-level 3 answers undefined for a missing key.
    const gets = await timeGets('classic-level db.get', w, (key) => db.get(key));
    return { store: 'classic-level', puts, gets: gets.phase, getsFast: null, found: gets.found, note: null, settleSeconds: null };
  } finally {
    await db.close();
  }
}

interface Peers {
  lmdb: LmdbModule;
  classicLevel: ClassicLevelModule;
}

/** The peers are dev dependencies; without them (or lmdb's platform binary) the bench cannot compare. */
function loadPeers(): Peers {
  const load = <T>(name: string): T => {
    try {
      return require(name) as T;
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new Error(
        `${name} did not load (a dev dependency: npm ci installs it, lmdb with its registry binary @lmdb/lmdb-<platform>): ${why}`,
      );
    }
  };
  return { lmdb: load<LmdbModule>('lmdb'), classicLevel: load<ClassicLevelModule>('classic-level') };
}

/** A package's version from its package.json (lmdb's `exports` hides ./package.json from require). */
function packageVersion(name: string): string {
  let dir = path.dirname(require.resolve(name));
  for (let depth = 0; depth < MAX_PACKAGE_DEPTH; depth++) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === name) return pkg.version ?? 'unknown';
    }
    dir = path.dirname(dir);
  }
  return 'unknown';
}

/** The LMDB C library's version string, which lmdb exports but does not declare in its types. */
function lmdbLibraryVersion(lmdb: LmdbModule): string {
  return (lmdb as unknown as { version?: { versionString?: string } }).version?.versionString ?? 'unknown';
}

// ---------------------------------------------------------------------------------- runs

async function runStore(store: StoreName, dir: string, w: Workload, args: Args, peers: Peers): Promise<StoreRun> {
  try {
    if (store === 'ours') return await runOurs(dir, w, args.settle);
    if (store === 'lmdb') return await runLmdb(dir, w, peers.lmdb, args.lmdbSync);
    return await runClassicLevel(dir, w, peers.classicLevel);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** One run: the stores in an order rotated by the run's index, each on a fresh directory. */
async function runOnce(runIndex: number, w: Workload, args: Args, peers: Peers): Promise<StoreRun[]> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'node-peers-'));
  try {
    const order = STORES.map((_, i) => STORES[(i + runIndex) % STORES.length]);
    const out: StoreRun[] = [];
    for (const store of order) {
      if (!args.json) process.stderr.write(`run ${runIndex + 1}/${args.runs}: ${store}...\n`);
      out.push(await runStore(store, path.join(root, store), w, args, peers));
    }
    return out;
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

function medianOrNull(xs: readonly (number | null)[]): number | null {
  const present = xs.filter((x): x is number => x !== null);
  return present.length === 0 ? null : median(present);
}

interface StoreSummary {
  store: StoreName;
  putsPerSecond: number;
  getsPerSecond: number;
  /** lmdb's getBinaryFast; null for the others. */
  getBinaryFastPerSecond: number | null;
  mainThreadCpuMicrosPerOp: { put: number | null; get: number | null };
  processCpuMicrosPerOp: { put: number; get: number };
  found: number;
}

function summarize(store: StoreName, runs: readonly StoreRun[][]): StoreSummary {
  const mine = runs.map((run) => run.find((r) => r.store === store) as StoreRun);
  const fast = mine.map((r) => r.getsFast?.opsPerSecond ?? null);
  return {
    store,
    putsPerSecond: median(mine.map((r) => r.puts.opsPerSecond)),
    getsPerSecond: median(mine.map((r) => r.gets.opsPerSecond)),
    getBinaryFastPerSecond: medianOrNull(fast),
    mainThreadCpuMicrosPerOp: {
      put: medianOrNull(mine.map((r) => r.puts.mainThreadCpuMicrosPerOp)),
      get: medianOrNull(mine.map((r) => r.gets.mainThreadCpuMicrosPerOp)),
    },
    processCpuMicrosPerOp: {
      put: median(mine.map((r) => r.puts.processCpuMicrosPerOp)),
      get: median(mine.map((r) => r.gets.processCpuMicrosPerOp)),
    },
    found: mine[0].found,
  };
}

// ---------------------------------------------------------------------------------- report

function buildReport(args: Args, w: Workload, runs: StoreRun[][], peers: Peers, load: { before: number[]; after: number[] }) {
  const by = Object.fromEntries(STORES.map((s) => [s, summarize(s, runs)])) as Record<StoreName, StoreSummary>;
  const ours = by.ours;
  const ratios = {
    putsVsLmdb: ours.putsPerSecond / by.lmdb.putsPerSecond,
    getsVsLmdb: ours.getsPerSecond / by.lmdb.getsPerSecond,
    getsVsLmdbGetBinaryFast: by.lmdb.getBinaryFastPerSecond === null ? null : ours.getsPerSecond / by.lmdb.getBinaryFastPerSecond,
    putsVsClassicLevel: ours.putsPerSecond / by['classic-level'].putsPerSecond,
    getsVsClassicLevel: ours.getsPerSecond / by['classic-level'].getsPerSecond,
  };
  return {
    workload: {
      num: w.num,
      keyBytes: KEY_BYTES,
      valueBytes: VALUE_BYTES,
      expectedFound: w.expectedFound,
      runs: args.runs,
      settle: args.settle,
    },
    options: storeOptions(args),
    node: process.version,
    versions: {
      lmdb: packageVersion('lmdb'),
      lmdbLibrary: lmdbLibraryVersion(peers.lmdb),
      classicLevel: packageVersion('classic-level'),
    },
    stores: by,
    ratios,
    targets: {
      oursGetsAtLeastLmdb: ratios.getsVsLmdb >= 1,
      oursPutsAheadOfBoth: ratios.putsVsLmdb > 1 && ratios.putsVsClassicLevel > 1,
    },
    runs: runs.map((run) => run.map((r) => ({ ...r }))),
    threadClock: nativeUtil !== null,
    loadAverage: { before: load.before, after: load.after, cpus: os.cpus().length },
  };
}

type Report = ReturnType<typeof buildReport>;

function printReport(r: Report): void {
  const n = (x: number): string => Math.round(x).toLocaleString('en-US');
  const us = (x: number | null): string => (x === null ? '-' : x.toFixed(2));
  const ratio = (x: number): string => `${x.toFixed(2)}x`;
  const met = (ok: boolean): string => (ok ? 'met' : 'NOT met');
  console.log(
    `node peers: ${r.workload.num} awaited puts (${KEY_BYTES}-byte keys uniform in [0, ${r.workload.num}), ${VALUE_BYTES}-byte values), then ${r.workload.num} random gets; median of ${r.workload.runs} run(s)`,
  );
  console.log(`node ${r.node}; lmdb ${r.versions.lmdb} (${r.versions.lmdbLibrary}); classic-level ${r.versions.classicLevel}`);
  console.log(
    `${'store'.padEnd(15)}${'puts/s'.padStart(11)}${'gets/s'.padStart(11)}   main-thread CPU µs/op put / get   process CPU µs/op put / get`,
  );
  for (const s of STORES.map((name) => r.stores[name])) {
    const main = `${us(s.mainThreadCpuMicrosPerOp.put)} / ${us(s.mainThreadCpuMicrosPerOp.get)}`;
    const proc = `${us(s.processCpuMicrosPerOp.put)} / ${us(s.processCpuMicrosPerOp.get)}`;
    console.log(`${s.store.padEnd(15)}${n(s.putsPerSecond).padStart(11)}${n(s.getsPerSecond).padStart(11)}   ${main.padEnd(33)}${proc}`);
  }
  const fast = r.stores.lmdb.getBinaryFastPerSecond;
  if (fast !== null)
    console.log(`lmdb getBinaryFast (reused buffer, no copy; db.get with the binary encoding is getBinary, a copy): ${n(fast)} gets/s`);
  const q = r.ratios;
  console.log(
    `ours/lmdb: puts ${ratio(q.putsVsLmdb)}, gets ${ratio(q.getsVsLmdb)}${q.getsVsLmdbGetBinaryFast === null ? '' : ` (${ratio(q.getsVsLmdbGetBinaryFast)} of getBinaryFast)`}`,
  );
  console.log(`ours/classic-level: puts ${ratio(q.putsVsClassicLevel)}, gets ${ratio(q.getsVsClassicLevel)}`);
  console.log(`target: our gets at least lmdb's (db.get): ${ratio(q.getsVsLmdb)} ${met(r.targets.oursGetsAtLeastLmdb)}`);
  console.log(
    `target: our puts ahead of both: ${ratio(q.putsVsLmdb)} lmdb, ${ratio(q.putsVsClassicLevel)} classic-level ${met(r.targets.oursPutsAheadOfBoth)}`,
  );
  for (const [i, run] of r.runs.entries()) {
    const parts = run.map((s) => `${s.store} ${n(s.puts.opsPerSecond)} / ${n(s.gets.opsPerSecond)}`);
    console.log(`run ${i + 1} (puts/s / gets/s, in run order): ${parts.join('; ')}`);
    for (const s of run) {
      const settled = s.settleSeconds === null ? '' : ` (after --settle: ${s.settleSeconds.toFixed(2)} s of flush and compactions)`;
      if (s.note !== null) console.log(`  ${s.store} ${s.note}${settled}`);
    }
  }
  for (const name of STORES) console.log(`options ${name}: ${r.options[name]}`);
  if (!r.threadClock) console.log('main-thread CPU: the native addon is not built, so only process CPU is shown');
  console.log(`check: every store found, get by get, exactly the ${r.workload.expectedFound} keys drawn that were written`);
  const la = (xs: number[]): string => xs.map((x) => x.toFixed(2)).join(' ');
  console.log(
    `load average (1/5/15 min) ${la(r.loadAverage.before)} -> ${la(r.loadAverage.after)} on ${r.loadAverage.cpus} CPUs (other processes skew ratios)`,
  );
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const peers = loadPeers();
  const w = makeWorkload(args.num);
  const before = os.loadavg();
  const runs: StoreRun[][] = [];
  for (let i = 0; i < args.runs; i++) runs.push(await runOnce(i, w, args, peers));
  const report = buildReport(args, w, runs, peers, { before, after: os.loadavg() });
  if (args.json) console.log(JSON.stringify(report, null, 2));
  else printReport(report);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
