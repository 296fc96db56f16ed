/**
 * Ingestion bench: external SSTs into a live engine that already holds data.
 *
 * Usage: npm run build && node dist/bench/ingest.js [--base-keys N] [--ingest-keys N] [--files N]
 *          [--value-bytes N] [--runs N] [--busy-seconds S] [--mode all|quiet|busy]
 *          [--no-auto-compactions] [--json] [--dir DIR]
 *
 * Workload: keys are 8-byte big-endian counters, values `valueBytes` pseudo-random bytes (half
 * repeated, so LZ4 halves them). The base database holds the even keys 0, 2, .., 2(baseKeys-1),
 * written with put() and flushed (so it lives in tables), plus 10k recent puts still in the
 * memtable. It is built once, closed, and copied afresh for every run. The ingested data is
 * `ingestKeys` keys in `files` SSTs written beforehand with SstFileWriter:
 *   disjoint:     keys above every base key: nothing overlaps, files go to the bottom level;
 *   overlapping:  odd keys between base keys: every file overlaps table data and gets a sequence
 *                 number (and the recent puts force a memtable flush first). With more ingested
 *                 than base keys, the surplus lies past the base range.
 *
 * Mode 1 (quiet): times engine.ingestExternalFiles alone (validation, linking, any flush, the
 * manifest edit), median of --runs, with and without verifyChecksums. Files are linked (fileMode
 * 'link', as an import's own SSTs go in), as in every earlier round; the library's default copies. MB/s counts the ingested
 * files' bytes.
 *
 * Mode 2 (busy writer): one writer keeps putting 100-byte values with put() (yielding to the event
 * loop every 64 writes, as a server between requests would) for --busy-seconds before, during and
 * after one ingestion. Reported: writes/s before, during and after, the dip during the ingestion,
 * and the longest gap between two completed writes. Two variants: the writer's keys outside the
 * ingested range (no flush needed), and inside it (the ingestion must flush, and stops writes if
 * the first flush is not enough). The engine runs in one thread: synchronous parts of the
 * ingestion (reading and checking the files, the placement decision, the manifest fsync) hold
 * the writer up, and the dip measures exactly that. Files ingested into L0 can make an L0 -> L1
 * compaction due; it runs on the same event loop, so "after" includes its cost (the report
 * counts compactions during the busy run; --no-auto-compactions takes them out).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../src/engine/engine';
import { SstFileWriter } from '../src/sstwriter/sstFileWriter';
import { IngestOptions, IngestionResult } from '../src/engine/ingest/ingestionJob';
import { startBusyWriter } from './busy-writer';
import { ArgReader } from './support/args';

const BYTES_PER_MB = 1e6;
const RECENT_PUTS = 10_000;
const WRITER_YIELD_EVERY = 64;

interface Args {
  baseKeys: number;
  ingestKeys: number;
  files: number;
  valueBytes: number;
  runs: number;
  busySeconds: number;
  mode: 'all' | 'quiet' | 'busy';
  autoCompactions: boolean;
  json: boolean;
  dir: string;
}

function parseArgs(argv: readonly string[]): Args {
  const a: Args = {
    baseKeys: 1_000_000,
    ingestKeys: 1_000_000,
    files: 4,
    valueBytes: 100,
    runs: 3,
    busySeconds: 1,
    mode: 'all',
    autoCompactions: true,
    json: false,
    dir: os.tmpdir(),
  };
  const r = new ArgReader(argv);
  for (let flag = r.nextFlag(); flag !== null; flag = r.nextFlag()) {
    switch (flag) {
      case '--base-keys':
        a.baseKeys = Math.floor(r.positiveNumber());
        break;
      case '--ingest-keys':
        a.ingestKeys = Math.floor(r.positiveNumber());
        break;
      case '--files':
        a.files = Math.floor(r.positiveNumber());
        break;
      case '--value-bytes':
        a.valueBytes = Math.floor(r.positiveNumber());
        break;
      case '--runs':
        a.runs = Math.floor(r.positiveNumber());
        break;
      case '--busy-seconds':
        a.busySeconds = r.positiveNumber();
        break;
      case '--mode': {
        const m = r.value();
        if (m !== 'all' && m !== 'quiet' && m !== 'busy') throw new Error(`--mode must be all, quiet or busy, got "${m}"`);
        a.mode = m;
        break;
      }
      case '--no-auto-compactions':
        a.autoCompactions = false;
        break;
      case '--json':
        a.json = true;
        break;
      case '--dir':
        a.dir = r.value();
        break;
      default:
        throw new Error(`unknown argument ${flag}`);
    }
  }
  return a;
}

// ------------------------------------------------------------------------------------- workload

function key(i: number): Buffer {
  const k = Buffer.allocUnsafe(8);
  k.writeUInt32BE(Math.floor(i / 2 ** 32), 0);
  k.writeUInt32BE(i >>> 0, 4);
  return k;
}

/** A value for key i: the first half pseudo-random (mulberry32 of i), the second half a copy. */
function valueFor(i: number, valueBytes: number, out: Buffer): Buffer {
  let state = (i * 0x9e3779b1) >>> 0;
  const half = valueBytes - Math.floor(valueBytes / 2);
  for (let b = 0; b < half; b += 4) {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    const r = (t ^ (t >>> 14)) >>> 0;
    for (let j = 0; j < 4 && b + j < half; j++) out[b + j] = (r >>> (8 * j)) & 0xff;
  }
  out.copy(out, half, 0, valueBytes - half);
  return out.subarray(0, valueBytes);
}

async function buildBase(dir: string, a: Args): Promise<void> {
  const e = await Engine.open(dir);
  const v = Buffer.allocUnsafe(a.valueBytes);
  for (let i = 0; i < a.baseKeys; i++) {
    await e.put(key(2 * i), valueFor(2 * i, a.valueBytes, v));
    if (i % 4096 === 0) await new Promise((r) => setImmediate(r));
  }
  await e.flush();
  await e.close();
}

/** Writes the external SSTs for keys first, first+step, ... (ingestKeys of them) into `dir`. */
function writeFiles(dir: string, a: Args, first: number, step: number): { paths: string[]; bytes: number } {
  fs.mkdirSync(dir, { recursive: true });
  const perFile = Math.ceil(a.ingestKeys / a.files);
  const paths: string[] = [];
  let bytes = 0;
  const v = Buffer.allocUnsafe(a.valueBytes);
  for (let f = 0; f < a.files; f++) {
    const file = path.join(dir, `ingest-${f}.sst`);
    const w = new SstFileWriter(file);
    for (let j = f * perFile; j < Math.min(a.ingestKeys, (f + 1) * perFile); j++) {
      const k = first + j * step;
      w.put(key(k), valueFor(k, a.valueBytes, v));
    }
    bytes += w.finish().fileSizeBytes;
    paths.push(file);
  }
  return { paths, bytes };
}

/** A fresh copy of the base database, opened, with RECENT_PUTS puts in the memtable (even keys). */
async function openRunCopy(baseDir: string, runDir: string, a: Args): Promise<Engine> {
  fs.rmSync(runDir, { recursive: true, force: true });
  fs.cpSync(baseDir, runDir, { recursive: true });
  const e = await Engine.open(runDir, { disableAutoCompactions: !a.autoCompactions });
  const v = Buffer.allocUnsafe(a.valueBytes);
  const stride = Math.max(1, Math.floor(a.baseKeys / RECENT_PUTS));
  for (let i = 0; i < a.baseKeys; i += stride) await e.put(key(2 * i), valueFor(2 * i + 1, a.valueBytes, v));
  return e;
}

function median(xs: number[]): number {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)];
}

function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

// ------------------------------------------------------------------------------------- mode 1

interface QuietResult {
  scenario: string;
  verifyChecksums: boolean;
  seconds: number;
  mbPerSecond: number;
  keysPerSecond: number;
  levels: number[];
  globalSeqnos: number[];
  memtableFlushes: number;
}

async function quiet(
  baseDir: string,
  workDir: string,
  a: Args,
  scenario: string,
  files: { paths: string[]; bytes: number },
  opts: IngestOptions,
): Promise<QuietResult> {
  const times: number[] = [];
  let last: IngestionResult | null = null;
  for (let run = 0; run < a.runs; run++) {
    const e = await openRunCopy(baseDir, path.join(workDir, 'run'), a);
    const start = process.hrtime.bigint();
    last = await e.ingestExternalFiles(files.paths, opts);
    times.push(secondsSince(start));
    await e.close();
  }
  const seconds = median(times);
  const r = last as IngestionResult;
  return {
    scenario,
    verifyChecksums: opts.verifyChecksums !== false,
    seconds,
    mbPerSecond: files.bytes / BYTES_PER_MB / seconds,
    keysPerSecond: a.ingestKeys / seconds,
    levels: r.files.map((f) => f.targetLevel),
    globalSeqnos: r.files.map((f) => f.globalSeqno),
    memtableFlushes: r.memtableFlushes,
  };
}

// ------------------------------------------------------------------------------------- mode 2

interface BusyResult {
  scenario: string;
  ingestSeconds: number;
  writesPerSecondBefore: number;
  writesPerSecondDuring: number;
  writesPerSecondAfter: number;
  dipPercent: number;
  longestWriteGapMs: number;
  memtableFlushes: number;
  writesStopped: boolean;
  /** Compactions completed during the busy run (one still running at the end is not counted). */
  compactions: number;
}

async function busy(
  baseDir: string,
  workDir: string,
  a: Args,
  scenario: string,
  files: { paths: string[] },
  writerKey: (n: number) => number,
): Promise<BusyResult> {
  const e = await openRunCopy(baseDir, path.join(workDir, 'run'), a);
  const compactionsBefore = e.stats().compaction.count;
  const writer = startBusyWriter(e, { keyOf: (n) => key(writerKey(n)), value: Buffer.alloc(100, 7), yieldEveryWrites: WRITER_YIELD_EVERY });
  await new Promise((r) => setTimeout(r, a.busySeconds * 1000));
  const ingestStart = writer.now();
  const result = await e.ingestExternalFiles(files.paths, { fileMode: 'link' });
  const ingestEnd = writer.now();
  await new Promise((r) => setTimeout(r, a.busySeconds * 1000));
  await writer.stop();
  const end = writer.now();
  const compactions = e.stats().compaction.count - compactionsBefore;
  await e.close();

  const before = writer.rateIn(0, ingestStart);
  const during = writer.rateIn(ingestStart, ingestEnd);
  const after = writer.rateIn(ingestEnd, end);
  return {
    scenario,
    ingestSeconds: ingestEnd - ingestStart,
    writesPerSecondBefore: before,
    writesPerSecondDuring: during,
    writesPerSecondAfter: after,
    dipPercent: 100 * (1 - during / before),
    longestWriteGapMs: writer.longestGapMsIn(0, end),
    memtableFlushes: result.memtableFlushes,
    writesStopped: result.writesStopped,
    compactions,
  };
}

// ------------------------------------------------------------------------------------- main

async function main(): Promise<void> {
  const a = parseArgs(process.argv.slice(2));
  const workDir = fs.mkdtempSync(path.join(a.dir, 'bench-ingest-'));
  try {
    const baseDir = path.join(workDir, 'base');
    const t = process.hrtime.bigint();
    await buildBase(baseDir, a);
    const baseSeconds = secondsSince(t);
    const disjoint = writeFiles(path.join(workDir, 'disjoint'), a, 2 * a.baseKeys + 1, 1);
    // Odd keys spread over the base range (past its end once ingestKeys exceeds baseKeys).
    const overlapping = writeFiles(path.join(workDir, 'overlapping'), a, 1, 2 * Math.max(1, Math.floor(a.baseKeys / a.ingestKeys)));

    const quietResults: QuietResult[] = [];
    if (a.mode !== 'busy') {
      for (const [name, files] of [
        ['disjoint', disjoint],
        ['overlapping', overlapping],
      ] as const) {
        for (const verifyChecksums of [true, false])
          quietResults.push(await quiet(baseDir, workDir, a, name, files, { verifyChecksums, fileMode: 'link' }));
      }
    }
    const busyResults: BusyResult[] = [];
    if (a.mode !== 'quiet') {
      // Writer far above everything: no overlap with the files.
      busyResults.push(
        await busy(baseDir, workDir, a, 'writer outside the ingested range', disjoint, (n) => 4 * (a.baseKeys + a.ingestKeys) + n),
      );
      // Writer on the odd keys the overlapping files hold: the ingestion must flush.
      busyResults.push(await busy(baseDir, workDir, a, 'writer inside the ingested range', overlapping, (n) => 2 * (n % a.baseKeys) + 1));
    }

    const report = {
      baseKeys: a.baseKeys,
      baseBuildSeconds: baseSeconds,
      ingestKeys: a.ingestKeys,
      files: a.files,
      valueBytes: a.valueBytes,
      ingestMB: { disjoint: disjoint.bytes / BYTES_PER_MB, overlapping: overlapping.bytes / BYTES_PER_MB },
      runs: a.runs,
      quiet: quietResults,
      busy: busyResults,
    };
    if (a.json) {
      process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return;
    }
    const f1 = (x: number): string => x.toFixed(1);
    console.log(`base: ${a.baseKeys} keys by put() + flush (${f1(baseSeconds)} s), ${RECENT_PUTS} recent puts in the memtable`);
    console.log(`ingest: ${a.ingestKeys} keys in ${a.files} SSTs (${f1(disjoint.bytes / BYTES_PER_MB)} MB), median of ${a.runs} runs`);
    for (const q of quietResults) {
      console.log(
        `  ${q.scenario.padEnd(12)} verify=${String(q.verifyChecksums).padEnd(5)} ${(q.seconds * 1000).toFixed(1).padStart(8)} ms` +
          `  ${f1(q.mbPerSecond).padStart(7)} MB/s  ${f1(q.keysPerSecond / 1e6).padStart(5)} M keys/s` +
          `  levels ${q.levels.join(',')} seqnos ${q.globalSeqnos.join(',')}${q.memtableFlushes > 0 ? ` (${q.memtableFlushes} memtable flush)` : ''}`,
      );
    }
    for (const b of busyResults) {
      console.log(
        `  busy, ${b.scenario}: ingest ${(b.ingestSeconds * 1000).toFixed(0)} ms; writes/s before ${f1(b.writesPerSecondBefore / 1000)}k,` +
          ` during ${f1(b.writesPerSecondDuring / 1000)}k (dip ${b.dipPercent.toFixed(0)}%), after ${f1(b.writesPerSecondAfter / 1000)}k;` +
          ` longest write gap ${b.longestWriteGapMs.toFixed(0)} ms; flushes ${b.memtableFlushes}${b.writesStopped ? ', writes stopped' : ''}; compactions completed ${b.compactions}`,
      );
    }
  } finally {
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
