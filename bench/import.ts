/**
 * bench/import: `ingest import` on the TPC-E-like trades CSV (key t_id:int64, value raw) against a
 * C++ peer doing parse, std::sort, SstFileWriter and IngestExternalFile with librocksdb
 * (bench/peer/import_peer.cc, built on first use by bench/peer/build.sh), in the same run on the
 * same file (issue 16's Done-when).
 *
 * Default mode: for each of --sizes (1M and 10M rows), --runs runs of each side (3), alternating
 * (ours is the command line a nightly script runs, `ingest import CSV --db DIR --json` with its
 * defaults, a resumable job's checkpoints among them, into a new database as the peer ingests into
 * one: engine open, conflict check, checked ingestion and close included; `--target output-dir`
 * imports with --output-dir instead)
 * and alternating which goes first, each in its own process. Per side it prints the medians of
 * wall time (spawn to exit, as the parent sees it: start-up included for both), CPU time
 * (user + system of the whole process, every thread: ours from process.resourceUsage in the
 * child, the peer's from its getrusage) and peak RSS (the same sources' maxRSS), our phases per
 * run, and ours/peer ratios against the targets: 10M rows wall <= 0.65x and peak RSS <= 400 MiB;
 * 1M rows wall <= 1.3x. The load average before and after each size is printed: other
 * processes on the machine skew the ratios.
 *
 * classic-level (LevelDB from Node) batch puts, 10k rows per batch, are opt-in
 * (`--classic-rows N`: the first N rows of the first size's CSV, compared as rows/s; it takes
 * minutes on 10M rows).
 *
 * Usage: node dist/bench/import.js [--sizes N,N (1000000,10000000) | --rows N] [--runs N (3)] [--target db|output-dir]
 *          [--memory-limit SIZE (256MiB)] [--threads N] [--merge-threads N] [--compression lz4|none]
 *          [--classic-rows N] [--data-dir DIR] [--json]
 * The CSV is generated once (bench/gen-trades, deterministic) into --data-dir (default: the
 * system temp directory) and reused.
 *
 * Checkpoint overhead (issue 15): the same import into an output directory with and without
 * --resume's checkpoints (fsync of every run and SST, the job's state file after each), runs
 * alternating, medians, and the ratio against the target (under 3% at 10M rows):
 *   node dist/bench/import.js --resume-overhead [--rows N (10000000)] [--runs N (3)] [--memory-limit SIZE]
 *
 * Into a live database (bench/import-into-db.ts): the whole `ingest import --db` pipeline into an
 * engine holding a previous load, phase by phase, and with --busy-writer the dip of a writer
 * putting into the same engine meanwhile:
 *   node dist/bench/import.js --into-db [--existing-rows N (1000000)] [--rows N (1000000)]
 *          [--overlap F (0.1)] [--recent-puts N (10000)] [--on-conflict overwrite|abort|skip]
 *          [--busy-writer] [--writer-keys inside|outside] [--busy-seconds S (2)] [--busy-runs N (1)]
 *          [--memory-limit SIZE] [--threads N] [--merge-threads N] [--compression lz4|none]
 *          [--data-dir DIR] [--json]
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { spawnSync } from 'child_process';
import { FIRST_TRADE_ID, writeTrades } from './gen-trades';
import { ImportSummary } from '../src/ingest/importer';
import { ChildUsage, parseSize } from './import-child';
import { parseIntInto } from '../src/ingest/rows/keySpec';
import { OnConflict } from '../src/conflict/policy';
import { formatIntoDb, runIntoDb } from './import-into-db';

interface Args {
  /** Rows of the CSV imported; null = the mode's default (10M; 1M with --into-db). */
  rows: number | null;
  memoryLimit: string;
  threads: number | undefined;
  mergeThreads: number | undefined;
  compression: 'lz4' | 'none';
  /** Rows classic-level puts (default mode, opt-in); null or 0 = it does not run. */
  classicRows: number | null;
  /** Default mode: the CSV sizes compared with the C++ peer, in rows (--rows N: just N). */
  sizes: number[];
  dataDir: string;
  json: boolean;
  intoDb: boolean;
  existingRows: number;
  /** Share of the imported rows that restate existing ones (--into-db). */
  overlap: number;
  recentPuts: number;
  onConflict: OnConflict;
  busyWriter: boolean;
  writerKeys: 'inside' | 'outside';
  /** Default mode: ours imports into a new database (`db`, as the peer does) or an output directory. */
  target: 'db' | 'output';
  /** --resume-overhead: the checkpoint overhead mode, and its runs per side. */
  resumeOverhead: boolean;
  runs: number;
  busySeconds: number;
  /** --into-db --busy-writer: repeat the busy run and its idle twin this many times (medians printed). */
  busyRuns: number;
}

function parseArgs(argv: string[]): Args {
  const a: Args = {
    rows: null,
    memoryLimit: '256MiB',
    threads: undefined,
    mergeThreads: undefined,
    compression: 'lz4',
    classicRows: null,
    sizes: [1_000_000, 10_000_000],
    dataDir: os.tmpdir(),
    json: false,
    intoDb: false,
    existingRows: 1_000_000,
    overlap: 0.1,
    recentPuts: 10_000,
    onConflict: 'overwrite',
    busyWriter: false,
    writerKeys: 'inside',
    busySeconds: 2,
    busyRuns: 1,
    resumeOverhead: false,
    runs: 3,
    target: 'db',
  };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = (): string => {
      if (i + 1 >= argv.length) throw new Error(`missing value for ${k}`);
      return argv[++i];
    };
    const count = (): number => {
      const n = Number(v());
      if (!Number.isInteger(n) || n < 0) throw new Error(`${k} needs a non-negative integer`);
      return n;
    };
    if (k === '--rows') a.rows = count();
    else if (k === '--memory-limit') a.memoryLimit = v();
    else if (k === '--threads') a.threads = count();
    else if (k === '--merge-threads') a.mergeThreads = count();
    else if (k === '--compression') a.compression = v() === 'none' ? 'none' : 'lz4';
    else if (k === '--classic-rows') a.classicRows = count();
    else if (k === '--sizes') {
      a.sizes = v()
        .split(',')
        .map((x) => Number(x));
      if (a.sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--sizes needs positive integers, comma separated');
    } else if (k === '--data-dir') a.dataDir = v();
    else if (k === '--json') a.json = true;
    else if (k === '--into-db') a.intoDb = true;
    else if (k === '--target') {
      const t = v();
      if (t !== 'db' && t !== 'output-dir') throw new Error('--target needs db or output-dir');
      a.target = t === 'db' ? 'db' : 'output';
    } else if (k === '--existing-rows') a.existingRows = count();
    else if (k === '--overlap') {
      a.overlap = Number(v());
      if (!(a.overlap >= 0 && a.overlap <= 1)) throw new Error('--overlap needs a fraction in [0, 1]');
    } else if (k === '--recent-puts') a.recentPuts = count();
    else if (k === '--on-conflict') {
      const p = v();
      if (p !== 'overwrite' && p !== 'abort' && p !== 'skip') throw new Error('--on-conflict needs overwrite, abort or skip');
      a.onConflict = p;
    } else if (k === '--busy-writer') a.busyWriter = true;
    else if (k === '--writer-keys') {
      const w = v();
      if (w !== 'inside' && w !== 'outside') throw new Error('--writer-keys needs inside or outside');
      a.writerKeys = w;
    } else if (k === '--busy-seconds') {
      a.busySeconds = Number(v());
      if (!(a.busySeconds > 0)) throw new Error('--busy-seconds needs a positive number');
    } else if (k === '--resume-overhead') a.resumeOverhead = true;
    else if (k === '--runs') {
      a.runs = Number(v());
      if (!(Number.isInteger(a.runs) && a.runs >= 1 && a.runs <= 20)) throw new Error('--runs needs an integer in 1..20');
    } else if (k === '--busy-runs') {
      a.busyRuns = Number(v());
      if (!(Number.isInteger(a.busyRuns) && a.busyRuns >= 1 && a.busyRuns <= 20)) throw new Error('--busy-runs needs an integer in 1..20');
    } else throw new Error(`unknown argument ${k}`);
  }
  return a;
}

function repoRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'bench', 'peer', 'build.sh'))) return dir;
    if (path.dirname(dir) === dir) return process.cwd();
  }
}

/** The trades CSV of `rows` rows (seed 42 from FIRST_TRADE_ID: the default one; else named by seed and first id). */
function ensureCsv(dataDir: string, rows: number, seed = 42, firstTradeId = FIRST_TRADE_ID): string {
  const variant = seed === 42 && firstTradeId === FIRST_TRADE_ID ? '' : `-seed${seed}-from${firstTradeId}`;
  const file = path.join(dataDir, `trades-${rows}${variant}.csv`);
  if (!fs.existsSync(file)) {
    process.stderr.write(`generating ${file} (${rows} rows)...\n`);
    const tmp = `${file}.tmp`;
    const fd = fs.openSync(tmp, 'w');
    writeTrades(fd, rows, seed, true, firstTradeId);
    fs.closeSync(fd);
    fs.renameSync(tmp, file);
  }
  return file;
}

/** Our import's phases in one run (its summary's), and with --target db the database steps after them. */
type OursPhases = ImportSummary['phases'] & { dbSeconds: number | null };

interface PeerResult {
  rows: number;
  parseSeconds: number;
  sortSeconds: number;
  writeSeconds: number;
  ingestSeconds: number;
  totalSeconds: number;
  files: number;
}

/** What import_peer prints: its phases and its getrusage (RocksDB's threads included). */
interface PeerOutput extends PeerResult {
  userCpuSeconds: number;
  systemCpuSeconds: number;
  maxRssKiB: number;
}

/** One run of the C++ peer (built on first use): its phases, and the process as for ours. */
function runPeer(csv: string, work: string, compression: string): { result: PeerResult; sample: ProcessSample } | string {
  const root = repoRoot();
  const binary = path.join(root, 'bench', 'peer', 'build', 'import_peer');
  if (!fs.existsSync(binary)) {
    const b = spawnSync('bash', [path.join(root, 'bench', 'peer', 'build.sh')], { encoding: 'utf8' });
    if (b.status !== 0 || !fs.existsSync(binary))
      return `C++ peer unavailable (needs g++ and librocksdb-dev): ${(b.stderr ?? '').trim().split('\n').slice(-2).join(' | ')}`;
  }
  const sstDir = path.join(work, 'peer-sst');
  fs.mkdirSync(sstDir, { recursive: true });
  const t0 = performance.now();
  const r = spawnSync(
    binary,
    ['--input', csv, '--db', path.join(work, 'peer-db'), '--sst-dir', sstDir, '--delimiter', '|', '--header', '--compression', compression],
    { encoding: 'utf8' },
  );
  const wallSeconds = (performance.now() - t0) / 1000;
  fs.rmSync(sstDir, { recursive: true, force: true });
  fs.rmSync(path.join(work, 'peer-db'), { recursive: true, force: true });
  if (r.status !== 0) return `C++ peer failed: ${r.stderr}`;
  const out = JSON.parse(r.stdout) as PeerOutput;
  if (out.maxRssKiB === undefined) return 'C++ peer is an old build without getrusage figures: rm bench/peer/build/import_peer';
  const { userCpuSeconds, systemCpuSeconds, maxRssKiB, ...result } = out;
  return { result, sample: { wallSeconds, cpuSeconds: userCpuSeconds + systemCpuSeconds, peakRssMiB: maxRssKiB / 1024 } };
}

/** What the bench uses of classic-level (a devDependency: absent from production installs). */
type ClassicLevelModule = typeof import('classic-level');

interface ClassicResult {
  /** Rows put (all rows, or the first --classic-rows). */
  rows: number;
  /** Input bytes those rows span. */
  bytes: number;
  /** Open, batch puts, close: what the comparison times. */
  seconds: number;
  /** Rows counted back through an iterator after the puts (a check, not timed in `seconds`). */
  counted: number;
  countSeconds: number;
  /** True when only a prefix of the file was put (--classic-rows below the file's rows). */
  prefix: boolean;
}

const CLASSIC_BATCH_ROWS = 10_000;
const CLASSIC_READ_CHUNK_BYTES = 8 << 20;
const CLASSIC_COUNT_BATCH = 1000;

/**
 * classic-level (LevelDB from Node) batch puts of the same rows: key = t_id with the same 8-byte
 * order-preserving encoding as `--key t_id:int64` (parsed with the importer's own integer parser,
 * so the Node side costs as little as it can), value = the rest of the line (raw), in
 * CLASSIC_BATCH_ROWS-row batches; then every key is counted back. Reads the CSV in chunks.
 */
async function runClassicLevel(csv: string, work: string, maxRows: number): Promise<ClassicResult | string> {
  let mod: ClassicLevelModule;
  try {
    mod = require('classic-level') as ClassicLevelModule;
  } catch {
    return 'classic-level is not installed (npm install classic-level to compare)';
  }
  const location = path.join(work, 'classic-level');
  const t0 = performance.now();
  const db = new mod.ClassicLevel<Buffer, Buffer>(location, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  const fd = fs.openSync(csv, 'r');
  let rows = 0;
  let bytes = 0;
  let headerSkipped = false;
  let fileOffset = 0;
  let carry = Buffer.alloc(0);
  let batch: { type: 'put'; key: Buffer; value: Buffer }[] = [];
  try {
    reading: for (;;) {
      // A fresh chunk each time: values are views of it, and a batch may still hold them.
      const chunk = Buffer.allocUnsafe(carry.length + CLASSIC_READ_CHUNK_BYTES);
      carry.copy(chunk, 0);
      const n = fs.readSync(fd, chunk, carry.length, CLASSIC_READ_CHUNK_BYTES, fileOffset);
      fileOffset += n;
      const end = carry.length + n;
      const eof = n === 0;
      let p = 0;
      for (;;) {
        let nl = chunk.indexOf(0x0a, p);
        if (nl < 0 || nl >= end) {
          if (!eof || p >= end) break;
          nl = end;
        }
        if (!headerSkipped) {
          headerSkipped = true;
        } else if (nl > p) {
          if (rows >= maxRows) break reading;
          const bar = chunk.indexOf(0x7c, p);
          const key = Buffer.allocUnsafe(8);
          if (bar < 0 || bar > nl || !parseIntInto(chunk, p, bar, true, key, 0))
            throw new Error(`classic-level side: bad t_id at byte ${fileOffset - end + p}`);
          batch.push({ type: 'put', key, value: chunk.subarray(bar + 1, nl) });
          rows++;
          bytes += nl + 1 - p;
          if (batch.length === CLASSIC_BATCH_ROWS) {
            await db.batch(batch);
            batch = [];
          }
        }
        p = nl + 1;
      }
      if (eof) break;
      carry = chunk.subarray(p, end);
    }
    if (batch.length > 0) await db.batch(batch);
  } finally {
    fs.closeSync(fd);
  }
  await db.close();
  const seconds = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  await db.open();
  let counted = 0;
  const it = db.keys();
  for (let keys = await it.nextv(CLASSIC_COUNT_BATCH); keys.length > 0; keys = await it.nextv(CLASSIC_COUNT_BATCH)) counted += keys.length;
  await it.close();
  await db.close();
  const countSeconds = (performance.now() - t1) / 1000;
  return { rows, bytes, seconds, counted, countSeconds, prefix: false };
}

function loadAverage(): string {
  return os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
}

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  if (a.intoDb) {
    await intoDb(a);
    return;
  }
  if (a.resumeOverhead) {
    resumeOverhead(a);
    return;
  }
  await comparePeer(a);
}

/** One process's measurement: wall time seen by the parent (start-up included), CPU and peak RSS. */
interface ProcessSample {
  wallSeconds: number;
  /** User + system CPU seconds of the whole process (all its threads). */
  cpuSeconds: number;
  peakRssMiB: number;
}

/** The targets of issue 16, by input size; other sizes get their ratios printed, no target. */
const PEER_TARGETS: Readonly<Record<number, { wallRatioAtMost: number; peakRssMiBAtMost: number | null }>> = {
  1_000_000: { wallRatioAtMost: 1.3, peakRssMiBAtMost: null },
  10_000_000: { wallRatioAtMost: 0.65, peakRssMiBAtMost: 400 },
};

interface SizeReport {
  rows: number;
  inputBytes: number;
  runs: number;
  loadAverage: { before: string; after: string };
  ours: ProcessSample[];
  peer: ProcessSample[] | string;
  /** Our import's own phases (its summary), per run. */
  oursPhases: OursPhases[];
  /** Ours imported into a new database (`db`) or an output directory. */
  into: 'db' | 'output';
  oursThreads: { parse: number; merge: number; runs: number; files: number };
  peerPhases: Omit<PeerResult, 'rows' | 'files'>[];
  medians: { ours: ProcessSample; peer: ProcessSample | null };
  ratios: { wall: number | null; cpu: number | null; peakRss: number | null };
  target: { wallRatioAtMost: number; peakRssMiBAtMost: number | null } | null;
  met: { wall: boolean | null; peakRss: boolean | null };
}

function medianSample(xs: readonly ProcessSample[]): ProcessSample {
  return {
    wallSeconds: median(xs.map((x) => x.wallSeconds)),
    cpuSeconds: median(xs.map((x) => x.cpuSeconds)),
    peakRssMiB: median(xs.map((x) => x.peakRssMiB)),
  };
}

/**
 * One size: ours and the peer alternating (which goes first alternates too, so a drift in the
 * machine's load or the page cache falls on both), `a.runs` runs each; medians and ratios.
 */
function compareSize(a: Args, rows: number): SizeReport {
  const csv = ensureCsv(a.dataDir, rows);
  const inputBytes = fs.statSync(csv).size;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-import-'));
  const loadBefore = loadAverage();
  const ours: ProcessSample[] = [];
  const oursPhases: OursPhases[] = [];
  const peerSamples: ProcessSample[] = [];
  const peerPhases: SizeReport['peerPhases'] = [];
  let peerError: string | null = null;
  let threads = { parse: 0, merge: 0, runs: 0, files: 0 };
  try {
    for (let i = 0; i < a.runs; i++) {
      const order: ('ours' | 'peer')[] = i % 2 === 0 ? ['ours', 'peer'] : ['peer', 'ours'];
      for (const side of order) {
        if (side === 'ours') {
          const r = spawnOurs(csv, work, a, 'cli', a.target);
          ours.push(r.sample);
          oursPhases.push({ ...r.summary.phases, dbSeconds: r.summary.dbSeconds ?? null });
          threads = { parse: r.summary.parseThreads, merge: r.summary.mergeThreads, runs: r.summary.runs, files: r.files };
        } else if (peerError === null) {
          const p = runPeer(csv, work, a.compression);
          if (typeof p === 'string') peerError = p;
          else {
            peerSamples.push(p.sample);
            const { rows: _rows, files: _files, ...phases } = p.result;
            peerPhases.push(phases);
          }
        }
      }
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  const mOurs = medianSample(ours);
  const mPeer = peerError === null ? medianSample(peerSamples) : null;
  const ratio = (x: number, y: number | undefined): number | null => (y === undefined ? null : +(x / y).toFixed(3));
  const target = PEER_TARGETS[rows] ?? null;
  const ratios = {
    wall: ratio(mOurs.wallSeconds, mPeer?.wallSeconds),
    cpu: ratio(mOurs.cpuSeconds, mPeer?.cpuSeconds),
    peakRss: ratio(mOurs.peakRssMiB, mPeer?.peakRssMiB),
  };
  return {
    rows,
    inputBytes,
    runs: a.runs,
    loadAverage: { before: loadBefore, after: loadAverage() },
    ours,
    peer: peerError ?? peerSamples,
    oursPhases,
    into: a.target,
    oursThreads: threads,
    peerPhases,
    medians: { ours: mOurs, peer: mPeer },
    ratios,
    target,
    met: {
      wall: target === null || ratios.wall === null ? null : ratios.wall <= target.wallRatioAtMost,
      peakRss: target === null || target.peakRssMiBAtMost === null ? null : mOurs.peakRssMiB <= target.peakRssMiBAtMost,
    },
  };
}

/** The human lines of one size's report. */
function formatSize(r: SizeReport): string[] {
  const s = (x: ProcessSample): string =>
    `wall ${x.wallSeconds.toFixed(2).padStart(6)} s  cpu ${x.cpuSeconds.toFixed(2).padStart(6)} s  peak RSS ${x.peakRssMiB.toFixed(0).padStart(5)} MiB`;
  const runs = (xs: readonly ProcessSample[]): string => xs.map((x) => x.wallSeconds.toFixed(2)).join(', ');
  const out = [
    `${r.rows.toLocaleString('en-US')} trade rows (${(r.inputBytes / 1e6).toFixed(0)} MB), ${r.runs} runs each, alternating; load average ${r.loadAverage.before} before, ${r.loadAverage.after} after`,
    `  ingest import${r.into === 'db' ? ' --db (a new database)' : ' --output-dir'}, the command line with its defaults (resumable)`,
    `                 median ${s(r.medians.ours)}   (wall per run ${runs(r.ours)}; ${r.oursThreads.parse} parse / ${r.oursThreads.merge} merge threads, ${r.oursThreads.runs} runs, ${r.oursThreads.files} files)`,
  ];
  const ph = r.oursPhases.map(
    (p) =>
      `parse ${p.parseSeconds}s merge+write ${p.mergeSeconds}s publish ${p.publishSeconds}s` +
      (p.dbSeconds === null ? '' : ` outside the phases (start-up, db open+check+ingest+close) ${p.dbSeconds}s`),
  );
  out.push(`                 phases per run: ${ph.join(' | ')}`);
  if (typeof r.peer === 'string') out.push(`  C++ peer       ${r.peer}`);
  else {
    out.push(`  C++ peer       median ${s(r.medians.peer as ProcessSample)}   (wall per run ${runs(r.peer)})`);
    const pp = r.peerPhases.map(
      (p) => `parse ${p.parseSeconds}s sort ${p.sortSeconds}s write ${p.writeSeconds}s ingest ${p.ingestSeconds}s`,
    );
    out.push(`                 phases per run: ${pp.join(' | ')}`);
  }
  const t = r.target;
  const verdict = (met: boolean | null): string => (met === null ? '' : met ? ' met' : ' NOT met');
  out.push(
    `  ratios ours/peer: wall ${r.ratios.wall ?? 'n/a'}${t === null ? '' : ` (target <= ${t.wallRatioAtMost}:${verdict(r.met.wall)})`}; ` +
      `cpu ${r.ratios.cpu ?? 'n/a'}; peak RSS ${r.ratios.peakRss ?? 'n/a'}` +
      (t !== null && t.peakRssMiBAtMost !== null
        ? `; our peak RSS ${r.medians.ours.peakRssMiB.toFixed(0)} MiB (target <= ${t.peakRssMiBAtMost} MiB:${verdict(r.met.peakRss)})`
        : ''),
  );
  return out;
}

/** The default mode: every --sizes size against the C++ peer, then classic-level if asked. */
async function comparePeer(a: Args): Promise<void> {
  const sizes = a.rows !== null ? [a.rows] : a.sizes;
  const reports: SizeReport[] = [];
  if (!a.json)
    process.stdout.write(
      `import bench: --memory-limit ${a.memoryLimit}, ${a.compression}; node ${process.version}, ${os.cpus().length} cpus\n`,
    );
  for (const rows of sizes) {
    const r = compareSize(a, rows);
    reports.push(r);
    if (!a.json) process.stdout.write(`${formatSize(r).join('\n')}\n`);
  }
  const classic = a.classicRows === null || a.classicRows === 0 ? null : await classicComparison(a, sizes[0], reports[0]);
  if (a.json) process.stdout.write(`${JSON.stringify({ sizes: reports, classicLevel: classic })}\n`);
}

/**
 * classic-level batch puts of the first --classic-rows rows of the first size's CSV, against our
 * median rate there (a ratio of rows/s; target: classic-level at least 5x slower). Opt-in: on
 * 10M rows it takes minutes.
 */
async function classicComparison(a: Args, rows: number, ours: SizeReport): Promise<ClassicResult | string> {
  const csv = ensureCsv(a.dataDir, rows);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-classic-'));
  try {
    const classic = await runClassicLevel(csv, work, Math.min(rows, a.classicRows ?? rows));
    if (typeof classic === 'string') {
      if (!a.json) process.stdout.write(`classic-level  ${classic}\n`);
      return classic;
    }
    classic.prefix = classic.rows < rows;
    const oursRate = rows / ours.medians.ours.wallSeconds;
    const classicRate = classic.rows / classic.seconds;
    if (!a.json)
      process.stdout.write(
        `classic-level  ${classic.rows.toLocaleString('en-US')} rows in ${classic.seconds.toFixed(2)} s (${Math.round(classicRate).toLocaleString('en-US')} rows/s, ${CLASSIC_BATCH_ROWS}-row batches; ` +
          `counted ${classic.counted.toLocaleString('en-US')} back, not timed); ours/classic-level rows/s ${(oursRate / classicRate).toFixed(2)} (target >= 5)\n`,
      );
    return classic;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/**
 * How the child imports (bench/import-child.ts): the library with or without the resumable job's
 * checkpoints, or the command line as a user runs it (its defaults: resumable).
 */
type ChildMode = 'resume' | 'plain' | 'cli';

/**
 * One import in a child process (its own peak RSS), in `mode`: its summary, and the process as the parent saw it (wall from spawn to exit,
 * start-up included, as for the peer; CPU and peak RSS from the child's process.resourceUsage).
 */
function spawnOurs(
  csv: string,
  work: string,
  a: Args,
  mode: ChildMode,
  target: 'db' | 'output' = 'output',
): { summary: ImportSummary & { dbSeconds?: number }; files: number; sample: ProcessSample } {
  const out = path.join(work, 'ours');
  const opt = (n: number | undefined): string => (n === undefined ? '' : String(n));
  const t0 = performance.now();
  const c = spawnSync(
    process.execPath,
    [
      path.join(__dirname, 'import-child.js'),
      csv,
      out,
      work,
      a.memoryLimit,
      opt(a.threads),
      opt(a.mergeThreads),
      a.compression,
      mode,
      target,
    ],
    { encoding: 'utf8', maxBuffer: 16 << 20, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const wallSeconds = (performance.now() - t0) / 1000;
  fs.rmSync(out, { recursive: true, force: true });
  if (c.status !== 0) throw new Error(`our import failed (exit ${c.status})`);
  const r = JSON.parse(c.stdout) as ImportSummary & { outputFileCount: number; usage: ChildUsage };
  const sample = { wallSeconds, cpuSeconds: r.usage.cpuSeconds, peakRssMiB: r.usage.maxRssKiB / 1024 };
  return { summary: r, files: r.outputFileCount, sample };
}

/** One import in a child process, with or without checkpoints (--resume-overhead). */
function runOursOnce(csv: string, work: string, a: Args, resume: boolean): ImportSummary {
  return spawnOurs(csv, work, a, resume ? 'resume' : 'plain').summary;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** --resume-overhead: the import with and without checkpoints, alternating, medians and their ratio. */
function resumeOverhead(a: Args): void {
  const rows = a.rows ?? 10_000_000;
  const csv = ensureCsv(a.dataDir, rows);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-resume-'));
  const loadBefore = loadAverage();
  const seconds = { plain: [] as number[], resume: [] as number[] };
  try {
    for (let i = 0; i < a.runs; i++) {
      // Alternate which goes first, so a drift in the machine's load falls on both sides.
      const order: ('plain' | 'resume')[] = i % 2 === 0 ? ['plain', 'resume'] : ['resume', 'plain'];
      for (const side of order) seconds[side].push(runOursOnce(csv, work, a, side === 'resume').phases.totalSeconds);
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  const plain = median(seconds.plain);
  const resume = median(seconds.resume);
  const overhead = resume / plain - 1;
  const report = {
    rows,
    runs: a.runs,
    loadAverage: { before: loadBefore, after: loadAverage() },
    secondsPlain: seconds.plain,
    secondsResume: seconds.resume,
    medianPlain: plain,
    medianResume: resume,
    overheadPercent: +(overhead * 100).toFixed(2),
    targetPercentBelow: 3,
  };
  if (a.json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
    return;
  }
  process.stdout.write(
    `checkpoint overhead: ${rows.toLocaleString('en-US')} rows, ${a.runs} runs each, alternating; load ${report.loadAverage.before} before, ${report.loadAverage.after} after\n` +
      `  without checkpoints: median ${plain.toFixed(2)} s  (${seconds.plain.map((s) => s.toFixed(2)).join(', ')})\n` +
      `  with checkpoints:    median ${resume.toFixed(2)} s  (${seconds.resume.map((s) => s.toFixed(2)).join(', ')})\n` +
      `  overhead ${report.overheadPercent}% (target < 3%)\n`,
  );
}

/** Medians over repeated busy runs: the writer's share of its idle twin's rate, and its longest stalls. */
function busyRunsSummary(reports: ReadonlyArray<Awaited<ReturnType<typeof runIntoDb>>>): string[] {
  const busy = reports.flatMap((r) => (r.busy === null ? [] : [r.busy]));
  if (busy.length === 0) return [];
  const median = (xs: number[]): number => {
    const s = [...xs].sort((x, y) => x - y);
    return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const kept = busy.map((b) => (100 * b.writesPerSecondDuringImport) / b.idleTwin.writesPerSecondInWindow);
  const stalls = busy.map((b) => b.longestGapMsDuringImport);
  const twinStalls = busy.map((b) => b.idleTwin.longestGapMsInWindow);
  return [
    `over ${busy.length} runs (writer ${busy[0].writerKeys} the span): kept of the idle twin's rate ${kept.map((k) => k.toFixed(1)).join(' ')}% (median ${median(kept).toFixed(1)}%);` +
      ` longest stall ${stalls.join(' ')} ms (median ${median(stalls)} ms, worst ${Math.max(...stalls)} ms); idle twin's ${twinStalls.join(' ')} ms`,
  ];
}

/** --into-db: bench/import-into-db.ts on the default CSV (last night) and a shifted one (tonight). */
async function intoDb(a: Args): Promise<void> {
  const importRows = a.rows ?? 1_000_000;
  const overlapRows = Math.min(a.existingRows, Math.round(a.overlap * importRows));
  const importFirstId = FIRST_TRADE_ID + a.existingRows - overlapRows;
  const existingCsv = ensureCsv(a.dataDir, a.existingRows);
  const importCsv = ensureCsv(a.dataDir, importRows, 43, importFirstId);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-import-into-db-'));
  const loadBefore = loadAverage();
  try {
    const reports = [];
    for (let run = 0; run < a.busyRuns; run++) {
      const report = await runIntoDb({
        existingCsv,
        existingRows: a.existingRows,
        importCsv,
        importRows,
        importFirstId,
        recentPuts: a.recentPuts,
        onConflict: a.onConflict,
        busyWriter: a.busyWriter,
        writerKeys: a.writerKeys,
        busySeconds: a.busySeconds,
        importOptions: {
          inputs: [],
          dialect: { delimiter: '|' },
          header: true,
          key: 't_id:int64',
          valueFormat: 'raw',
          memoryLimitBytes: parseSize(a.memoryLimit),
          parseThreads: a.threads,
          mergeThreads: a.mergeThreads,
          sstOptions: { compression: a.compression === 'none' ? 0 : 4 },
        },
        workDir: work,
      });
      reports.push(report);
    }
    const report = reports[0];
    const loadAfter = loadAverage();
    if (a.json) {
      process.stdout.write(`${JSON.stringify({ ...report, loadAverage: { before: loadBefore, after: loadAfter } })}\n`);
      return;
    }
    const lines = reports.flatMap((r, i) => [...(reports.length > 1 ? [`--- run ${i + 1} of ${reports.length}`] : []), ...formatIntoDb(r)]);
    if (reports.length > 1) lines.push(...busyRunsSummary(reports));
    lines.push(`load average ${loadBefore} before, ${loadAfter} after (other processes skew the figures)`);
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`bench/import: ${(e as Error).stack ?? String(e)}\n`);
  process.exitCode = 1;
});
