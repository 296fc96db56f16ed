/**
 * bench/distributed: the single-process `ingest import --db` against the distributed one
 * (`--cluster`, with 1 and 2 `ingest worker` processes) on the same trades CSV, in the same run,
 * alternating, each side in its own processes (issue 38's benchmark).
 *
 * Per side: the median of --runs runs of wall time (spawn of the importing command to its exit;
 * the workers are started before and stay up, as they would in a cluster), rows/s, and the
 * ratio against the single-process import (the target: 2 workers on 2 cores >= 0.75x on 10M
 * rows). For the distributed runs also: the phases as the coordinator saw them (map, reduce,
 * publish; the check and ingestion are the rest), the seconds the tasks ran summed over tasks,
 * the bytes written through the shared directory (sorted runs + SSTs), and the job engine's
 * share: phase wall time minus task time per worker (scheduling, Redis round trips, polling).
 * The load average is printed before and after.
 *
 * Usage: node dist/bench/distributed.js [--rows N (2000000)] [--runs N (3)] [--workers 1,2]
 *          [--task-size SIZE (64MiB)] [--reduce-tasks N (2)] [--data-dir DIR] [--json]
 * Needs redis-server on the PATH (started on 127.0.0.1 with a temporary directory, stopped at the end).
 */
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { ChildProcess, spawn, spawnSync } from 'child_process';
import { ArgReader } from './support/args';
import { writeTrades } from './gen-trades';
import type { DbImportJson } from '../src/ingest/importJson';

interface Options {
  rows: number;
  runs: number;
  workers: number[];
  taskSize: string;
  reduceTasks: number;
  dataDir: string;
  json: boolean;
}

function parseArgs(argv: readonly string[]): Options {
  const o: Options = { rows: 2_000_000, runs: 3, workers: [1, 2], taskSize: '64MiB', reduceTasks: 2, dataDir: os.tmpdir(), json: false };
  const a = new ArgReader(argv);
  for (let flag = a.nextFlag(); flag !== null; flag = a.nextFlag()) {
    if (flag === '--rows') o.rows = a.positiveInteger();
    else if (flag === '--runs') o.runs = a.positiveInteger();
    else if (flag === '--workers') o.workers = a.value().split(',').map(Number);
    else if (flag === '--task-size') o.taskSize = a.value();
    else if (flag === '--reduce-tasks') o.reduceTasks = a.positiveInteger();
    else if (flag === '--data-dir') o.dataDir = a.value();
    else if (flag === '--json') o.json = true;
    else throw new Error(`unknown flag ${flag}`);
  }
  return o;
}

const CLI = path.join(__dirname, '..', 'cli', 'ingest.js');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

async function startRedis(dir: string): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', ''], {
    stdio: 'ignore',
  });
  for (let i = 0; i < 200; i++) {
    if (
      spawnSync('redis-cli', ['-p', String(port), 'ping'])
        .stdout?.toString()
        .trim() === 'PONG'
    )
      break;
    await new Promise((r) => setTimeout(r, 25));
  }
  return { url: `redis://127.0.0.1:${port}`, child };
}

async function startWorkers(n: number, url: string, shared: string): Promise<ChildProcess[]> {
  const workers: ChildProcess[] = [];
  for (let i = 0; i < n; i++) {
    const w = spawn(process.execPath, [CLI, 'worker', '--cluster', url, '--shared-dir', shared], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => w.stdout?.once('data', () => resolve()));
    workers.push(w);
  }
  return workers;
}

async function stopWorkers(workers: ChildProcess[]): Promise<void> {
  await Promise.all(
    workers.map(
      (w) =>
        new Promise<void>((resolve) => {
          w.once('exit', () => resolve());
          w.kill('SIGTERM');
        }),
    ),
  );
}

interface Run {
  seconds: number;
  doc: DbImportJson;
}

function timedImport(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`import exited ${code}`));
      else resolve({ seconds: (performance.now() - t0) / 1000, doc: JSON.parse(out) as DbImportJson });
    });
  });
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const work = fs.mkdtempSync(path.join(o.dataDir, 'bench-distributed-'));
  const csv = path.join(o.dataDir, `trades-${o.rows}.csv`);
  if (!fs.existsSync(csv)) {
    const fd = fs.openSync(csv, 'w');
    writeTrades(fd, o.rows);
    fs.closeSync(fd);
  }
  const shared = path.join(work, 'shared');
  fs.mkdirSync(shared);
  const redis = await startRedis(work);
  const base = [csv, '--delimiter', '|', '--header', '--key', 't_id:int64', '--json', '--quiet', '--max-space-amp', 'off'];
  const sides = ['single', ...o.workers.map((n) => `workers-${n}`)];
  const runs: Record<string, Run[]> = Object.fromEntries(sides.map((s) => [s, []]));
  const load: number[][] = [os.loadavg()];
  try {
    for (let r = 0; r < o.runs; r++) {
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) {
        const db = path.join(work, `db-${side}-${r}`);
        if (side === 'single') runs[side].push(await timedImport(['import', ...base, '--db', db]));
        else {
          const workers = await startWorkers(Number(side.split('-')[1]), redis.url, shared);
          const cluster = [
            '--cluster',
            redis.url,
            '--shared-dir',
            shared,
            '--task-size',
            o.taskSize,
            '--reduce-tasks',
            String(o.reduceTasks),
          ];
          runs[side].push(await timedImport(['import', ...base, '--db', db, ...cluster]));
          await stopWorkers(workers);
        }
        fs.rmSync(db, { recursive: true, force: true });
      }
    }
  } finally {
    redis.child.kill('SIGTERM');
    load.push(os.loadavg());
  }
  report(o, runs, load);
  fs.rmSync(work, { recursive: true, force: true });
}

function report(o: Options, runs: Record<string, Run[]>, load: number[][]): void {
  const single = median(runs.single.map((r) => r.seconds));
  const rows = Object.entries(runs).map(([side, rs]) => {
    const wall = median(rs.map((r) => r.seconds));
    const d = rs.map((r) => r.doc.distributed as Record<string, number> | null);
    const workers = side === 'single' ? 0 : Number(side.split('-')[1]);
    const med = (f: (x: Record<string, number>) => number): number | null =>
      d[0] === null ? null : median(d.map((x) => f(x as Record<string, number>)));
    const sharedBytes = median(
      rs.map(
        (r) =>
          (r.doc.import.runBytes as number) +
          (r.doc.import.outputFiles as Array<{ fileSizeBytes: number }>).reduce((n, f) => n + f.fileSizeBytes, 0),
      ),
    );
    const ms = (x: number | null): number | null => (x === null ? null : Math.round(x * 1000) / 1000);
    return {
      side,
      wallSeconds: Math.round(wall * 1000) / 1000,
      rowsPerSecond: Math.round(o.rows / wall),
      ratioToSingle: Math.round((single / wall) * 1000) / 1000,
      mapSeconds: med((x) => x.mapSeconds),
      reduceSeconds: med((x) => x.reduceSeconds),
      mapTaskSeconds: med((x) => x.mapTaskSeconds),
      reduceTaskSeconds: med((x) => x.reduceTaskSeconds),
      jobEngineSeconds:
        workers === 0
          ? null
          : ms(
              med(
                (x) =>
                  x.mapSeconds - x.mapTaskSeconds / workers + (x.reduceSeconds - x.reduceTaskSeconds / Math.min(workers, x.reduceTasks)),
              ),
            ),
      sharedDirBytes: workers === 0 ? null : sharedBytes,
    };
  });
  if (o.json) {
    process.stdout.write(`${JSON.stringify({ rows: o.rows, runs: o.runs, load, sides: rows })}\n`);
    return;
  }
  process.stdout.write(`rows ${o.rows}, ${o.runs} alternating runs per side, load ${load.map((l) => l[0].toFixed(2)).join(' -> ')}\n`);
  for (const r of rows) process.stdout.write(`${JSON.stringify(r)}\n`);
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
