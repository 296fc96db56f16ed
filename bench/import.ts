/**
 * bench/import: `ingest import` on the TPC-E-like trades CSV (key t_id:int64, value raw) against,
 * in the same run on the same file, a C++ peer doing parse, sort, SstFileWriter and
 * IngestExternalFile with librocksdb (bench/peer/import_peer.cc), and classic-level batch puts
 * from Node (when the classic-level package is installed). Prints each side's seconds, rows/s
 * and MB/s, our seconds per phase and peak RSS, and the ratios against the targets
 * (<= 2x the C++ peer's time, >= 5x faster than classic-level, peak RSS <= 600 MiB).
 *
 * Usage: node dist/bench/import.js [--rows N (10000000)] [--memory-limit SIZE (256MiB)]
 *          [--threads N] [--compression lz4|none] [--data-dir DIR] [--json]
 * The CSV is generated once (bench/gen-trades, deterministic) into --data-dir (default: the
 * system temp directory) and reused. Our import runs in a child process so its peak RSS is its own.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { spawnSync } from 'child_process';
import { writeTrades } from './gen-trades';
import { ImportSummary, runImport } from '../src/ingest/importer';

interface Args {
  rows: number;
  memoryLimit: string;
  threads: number | undefined;
  compression: 'lz4' | 'none';
  dataDir: string;
  json: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { rows: 10_000_000, memoryLimit: '256MiB', threads: undefined, compression: 'lz4', dataDir: os.tmpdir(), json: false };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = (): string => {
      if (i + 1 >= argv.length) throw new Error(`missing value for ${k}`);
      return argv[++i];
    };
    if (k === '--rows') a.rows = Number(v());
    else if (k === '--memory-limit') a.memoryLimit = v();
    else if (k === '--threads') a.threads = Number(v());
    else if (k === '--compression') a.compression = v() === 'none' ? 'none' : 'lz4';
    else if (k === '--data-dir') a.dataDir = v();
    else if (k === '--json') a.json = true;
    else throw new Error(`unknown argument ${k}`);
  }
  return a;
}

function repoRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'bench', 'peer', 'build.sh'))) return dir;
    if (path.dirname(dir) === dir) return process.cwd();
  }
}

function parseSize(s: string): number {
  const m = /^([0-9.]+)\s*(k|m|g|kib|mib|gib)?$/i.exec(s.trim());
  if (m === null) throw new Error(`bad size ${s}`);
  const unit = (m[2] ?? '').toLowerCase();
  const mul = unit.startsWith('k') ? 1 << 10 : unit.startsWith('m') ? 1 << 20 : unit.startsWith('g') ? 1 << 30 : 1;
  return Math.floor(Number(m[1]) * mul);
}

function ensureCsv(a: Args): string {
  const file = path.join(a.dataDir, `trades-${a.rows}.csv`);
  if (!fs.existsSync(file)) {
    process.stderr.write(`generating ${file} (${a.rows} rows)...\n`);
    const tmp = `${file}.tmp`;
    const fd = fs.openSync(tmp, 'w');
    writeTrades(fd, a.rows, 42, true);
    fs.closeSync(fd);
    fs.renameSync(tmp, file);
  }
  return file;
}

/** Child mode: run one import and print its summary (so the parent sees this process's peak RSS). */
async function child(argv: string[]): Promise<void> {
  const [input, outputDir, tmpDir, memoryLimit, threads, compression] = argv;
  const summary = await runImport({
    inputs: [input],
    outputDir,
    tmpDir,
    dialect: { delimiter: '|' },
    header: true,
    key: 't_id:int64',
    valueFormat: 'raw',
    memoryLimitBytes: parseSize(memoryLimit),
    parseThreads: threads === '' ? undefined : Number(threads),
    sstOptions: { compression: compression === 'none' ? 0 : 4 },
    writeSummaryFile: false,
  });
  summary.outputFiles = summary.outputFiles.slice(0, 3);
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}

interface PeerResult {
  rows: number;
  parseSeconds: number;
  sortSeconds: number;
  writeSeconds: number;
  ingestSeconds: number;
  totalSeconds: number;
}

function runPeer(csv: string, work: string, compression: string): PeerResult | string {
  const root = repoRoot();
  const binary = path.join(root, 'bench', 'peer', 'build', 'import_peer');
  if (!fs.existsSync(binary)) {
    const b = spawnSync('bash', [path.join(root, 'bench', 'peer', 'build.sh')], { encoding: 'utf8' });
    if (b.status !== 0 || !fs.existsSync(binary)) return `C++ peer unavailable (needs g++ and librocksdb-dev): ${(b.stderr ?? '').trim().split('\n').slice(-2).join(' | ')}`;
  }
  const sstDir = path.join(work, 'peer-sst');
  fs.mkdirSync(sstDir, { recursive: true });
  const r = spawnSync(binary, ['--input', csv, '--db', path.join(work, 'peer-db'), '--sst-dir', sstDir, '--delimiter', '|', '--header', '--compression', compression], { encoding: 'utf8' });
  if (r.status !== 0) return `C++ peer failed: ${r.stderr}`;
  return JSON.parse(r.stdout) as PeerResult;
}

interface ClassicLevelDb {
  open(): Promise<void>;
  batch(ops: { type: 'put'; key: Buffer; value: Buffer }[]): Promise<void>;
  close(): Promise<void>;
}

/** classic-level batch puts of the same rows (key t_id as the same 8-byte encoding), 10k per batch. */
async function runClassicLevel(csv: string, work: string): Promise<{ seconds: number; rows: number } | string> {
  let ClassicLevel: new (location: string, options: { keyEncoding: string; valueEncoding: string }) => ClassicLevelDb;
  try {
    // Optional dependency, not installed by default: loaded by name at run time.
    ({ ClassicLevel } = require('classic-level') as { ClassicLevel: typeof ClassicLevel });
  } catch {
    return 'classic-level is not installed (npm install classic-level to compare)';
  }
  const t0 = performance.now();
  const db = new ClassicLevel(path.join(work, 'classic-level'), { keyEncoding: 'buffer', valueEncoding: 'buffer' });
  await db.open();
  const data = fs.readFileSync(csv);
  let p = data.indexOf(0x0a) + 1; // header
  let rows = 0;
  let batch: { type: 'put'; key: Buffer; value: Buffer }[] = [];
  while (p < data.length) {
    let nl = data.indexOf(0x0a, p);
    if (nl < 0) nl = data.length;
    const bar = data.indexOf(0x7c, p);
    const key = Buffer.allocUnsafe(8);
    key.writeBigUInt64BE(BigInt(data.toString('latin1', p, bar)) ^ (1n << 63n));
    batch.push({ type: 'put', key, value: data.subarray(bar + 1, nl) });
    rows++;
    if (batch.length === 10000) {
      await db.batch(batch);
      batch = [];
    }
    p = nl + 1;
  }
  if (batch.length > 0) await db.batch(batch);
  await db.close();
  return { seconds: (performance.now() - t0) / 1000, rows };
}

async function main(): Promise<void> {
  if (process.argv[2] === '--child') {
    await child(process.argv.slice(3));
    return;
  }
  const a = parseArgs(process.argv.slice(2));
  const csv = ensureCsv(a);
  const inputBytes = fs.statSync(csv).size;
  const mb = inputBytes / 1e6;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-import-'));
  try {
    const c = spawnSync(process.execPath, [__filename, '--child', csv, path.join(work, 'ours'), work, a.memoryLimit, a.threads === undefined ? '' : String(a.threads), a.compression], {
      encoding: 'utf8',
      maxBuffer: 16 << 20,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    if (c.status !== 0) throw new Error(`our import failed (exit ${c.status})`);
    const ours = JSON.parse(c.stdout) as ImportSummary;
    const peer = runPeer(csv, work, a.compression);
    const classic = await runClassicLevel(csv, work);
    const oursSeconds = ours.phases.totalSeconds;
    const report = {
      rows: a.rows,
      inputBytes,
      memoryLimit: a.memoryLimit,
      compression: a.compression,
      ours: {
        seconds: oursSeconds,
        rowsPerSecond: Math.round(ours.rowsRead / oursSeconds),
        mbPerSecond: +(mb / oursSeconds).toFixed(1),
        phases: ours.phases,
        parseThreads: ours.parseThreads,
        runs: ours.runs,
        files: ours.outputFiles.length,
        peakRssMiB: +(ours.peakRssBytes / (1 << 20)).toFixed(1),
      },
      peer: typeof peer === 'string' ? peer : { ...peer, rowsPerSecond: Math.round(peer.rows / peer.totalSeconds), mbPerSecond: +(mb / peer.totalSeconds).toFixed(1) },
      classicLevel: typeof classic === 'string' ? classic : { ...classic, rowsPerSecond: Math.round(classic.rows / classic.seconds), mbPerSecond: +(mb / classic.seconds).toFixed(1) },
      ratios: {
        oursOverPeer: typeof peer === 'string' ? null : +(oursSeconds / peer.totalSeconds).toFixed(2),
        classicLevelOverOurs: typeof classic === 'string' ? null : +(classic.seconds / oursSeconds).toFixed(2),
      },
      targets: { oursOverPeerAtMost: 2, classicLevelOverOursAtLeast: 5, peakRssMiBAtMost: 600 },
    };
    if (a.json) {
      process.stdout.write(`${JSON.stringify(report)}\n`);
      return;
    }
    const line = (name: string, s: number, rows: number): string => `${name.padEnd(14)} ${s.toFixed(2).padStart(8)} s ${Math.round(rows / s).toLocaleString('en-US').padStart(12)} rows/s ${(mb / s).toFixed(1).padStart(8)} MB/s`;
    process.stdout.write(`import bench: ${a.rows.toLocaleString('en-US')} trade rows, ${(inputBytes / 1e6).toFixed(0)} MB, --memory-limit ${a.memoryLimit}, ${a.compression}\n`);
    process.stdout.write(`${line('ingest import', oursSeconds, ours.rowsRead)}  (parse ${ours.phases.parseSeconds}s, merge+write ${ours.phases.mergeSeconds}s; ${ours.parseThreads} parse threads, ${ours.runs} runs; peak RSS ${report.ours.peakRssMiB} MiB)\n`);
    if (typeof peer === 'string') process.stdout.write(`C++ peer       ${peer}\n`);
    else process.stdout.write(`${line('C++ peer', peer.totalSeconds, peer.rows)}  (parse ${peer.parseSeconds}s, sort ${peer.sortSeconds}s, write ${peer.writeSeconds}s, ingest ${peer.ingestSeconds}s)\n`);
    if (typeof classic === 'string') process.stdout.write(`classic-level  ${classic}\n`);
    else process.stdout.write(`${line('classic-level', classic.seconds, classic.rows)}\n`);
    process.stdout.write(
      `ratios: ours/peer ${report.ratios.oursOverPeer ?? 'n/a'} (target <= 2), classic-level/ours ${report.ratios.classicLevelOverOurs ?? 'n/a'} (target >= 5), peak RSS ${report.ours.peakRssMiB} MiB (target <= 600)\n`,
    );
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`bench/import: ${(e as Error).stack ?? String(e)}\n`);
  process.exitCode = 1;
});
