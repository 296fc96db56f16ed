/**
 * The engine against RocksDB 7.8's db_bench, same workload, same run: fillrandom, readrandom,
 * seekrandom (a seek and 10 nexts) and readseq.
 *
 * Usage: npm run bench:engine [-- --num N (1000000)] [--json] [--keep DIR] [--db-bench PATH]
 *
 * Workload, as db_bench defines it for `--key_size=8 --value_size=120 --compression_ratio=0.5`:
 * - key k is its 8-byte big-endian encoding (db_bench's GenerateKeyFromInt for 8-byte keys);
 * - fillrandom writes `num` keys drawn uniformly from [0, num) (repeats included, so about 63%
 *   are distinct), one write per put, WAL on, no sync;
 * - values are consecutive 120-byte slices of db_bench's 1 MiB value buffer, rebuilt here byte
 *   for byte (Random(301), 100-byte pieces whose second half repeats the first), so LZ4 sees the
 *   same compressibility;
 * - readrandom: `num` point reads of keys uniform in [0, num);
 * - seekrandom: `num` times: a new iterator, a seek to a key uniform in [0, num), then up to 10
 *   nexts reading each key and value (db_bench 7.8 also creates an iterator per seek);
 * - readseq: one iterator over the whole database, touching every key and value.
 * db_bench draws its random keys from its own generator (mt19937_64); ours come from a 32-bit
 * xorshift: the same distribution, not the same draws. Ops/s for readseq counts entries read.
 *
 * Options on both sides: 64 MiB write buffer, at most one immutable memtable (RocksDB's
 * max_write_buffer_number=2), 8 MiB block cache (db_bench's default), format_version 5, XXH3
 * checksums, LZ4, 4 KiB blocks, 10 bits/key Bloom filters, no memtable Bloom filter (db_bench's
 * memtable_prefix_bloom_size_ratio is 0; ours is on by default: memtableFilter). Between the fill and the reads both
 * sides flush the memtable (db_bench's `flush`), and both run without automatic compactions
 * (--disable_auto_compactions): both then read the same shape, a few L0 files, whatever either
 * side's compaction would have chosen. Everything runs on one thread on each side, but RocksDB flushes on its
 * background threads while ours flushes on the event loop between writes.
 *
 * Our block reads go through the native block codec when it is built (README, "The native block
 * codec"); the output says whether it was; SST_INGEST_NATIVE=0 measures the JavaScript codecs.
 *
 * Checks (untimed): our readseq sees exactly the distinct keys written, and our readrandom and
 * seekrandom find exactly the keys drawn that were written; db_bench's found counts are printed
 * beside ours (equal in expectation, not exactly).
 *
 * Output: a table of ops/s and the ratio ours/db_bench per benchmark (target >= 1.0, issue 39), or one
 * JSON document with --json. Without db_bench the reason is printed and our figures only.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine, EngineOptions } from '../src/engine/engine';
import { nativeBlockCodecStatus } from '../src/sstable/nativeBlockCodec';
import { ChecksumType } from '../src/sstable/checksum';
import { CompressionType } from '../src/sstable/compression';
import { ArgReader } from './support/args';
import { COMPRESSION_RATIO, randomKeys, ValueGenerator, writeKey } from './support/dbBenchWorkload';

const KEY_BYTES = 8;
const VALUE_BYTES = 120;
const SEEK_NEXTS = 10;
const WRITE_BUFFER_BYTES = 64 * 1024 * 1024;
const BLOCK_CACHE_BYTES = 8 * 1024 * 1024;
const BLOCK_SIZE_BYTES = 4096;
const BLOOM_BITS_PER_KEY = 10;
/** Issue 39: reads at least as fast as db_bench (docs/engine-reads.md has the series and the profile). */
const TARGET_RATIO = 1;
const BENCHMARKS = ['fillrandom', 'readrandom', 'seekrandom', 'readseq'] as const;
type BenchmarkName = (typeof BENCHMARKS)[number];

interface Args {
  num: number;
  json: boolean;
  keepDir: string | null;
  dbBench: string;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { num: 1_000_000, json: false, keepDir: null, dbBench: 'db_bench' };
  const r = new ArgReader(argv);
  for (let flag = r.nextFlag(); flag !== null; flag = r.nextFlag()) {
    switch (flag) {
      case '--num': {
        const n = r.positiveInteger();
        if (n > 0xffffffff) throw new Error(`--num must be an integer in [1, 2^32)`);
        args.num = n;
        break;
      }
      case '--json':
        args.json = true;
        break;
      case '--keep':
        args.keepDir = r.value();
        break;
      case '--db-bench':
        args.dbBench = r.value();
        break;
      default:
        throw new Error(`unknown argument ${flag} (expected --num N, --json, --keep DIR, --db-bench PATH)`);
    }
  }
  return args;
}

// ---------------------------------------------------------------------------------- workload

// ---------------------------------------------------------------------------------- our side

interface Figure {
  ops: number;
  seconds: number;
  opsPerSecond: number;
  /** Keys found (readrandom, seekrandom). */
  found?: number;
}

function figure(ops: number, seconds: number, found?: number): Figure {
  return { ops, seconds, opsPerSecond: ops / seconds, found };
}

function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

interface OurResult {
  figures: Record<BenchmarkName, Figure>;
  flushSeconds: number;
  filesPerLevel: number[];
  checks: string[];
}

async function runOurs(dir: string, num: number): Promise<OurResult> {
  const fillKeys = randomKeys(num, num, 0x9e3779b9);
  const readKeys = randomKeys(num, num, 0x85ebca6b);
  const seekKeys = randomKeys(num, num, 0xc2b2ae35);
  const written = new Uint8Array(num);
  for (let i = 0; i < num; i++) written[fillKeys[i]] = 1;
  let distinct = 0;
  for (let k = 0; k < num; k++) distinct += written[k];

  // disableAutoCompactions: db_bench runs without them (see the top of this file); the
  // intersection keeps this compiling against an engine that has no such option.
  const options: EngineOptions & { disableAutoCompactions?: boolean } = {
    disableAutoCompactions: true,
    memtableFilter: false,
    writeBufferSizeBytes: WRITE_BUFFER_BYTES,
    maxImmutableMemtables: 1,
    blockCacheSizeBytes: BLOCK_CACHE_BYTES,
    table: {
      formatVersion: 5,
      checksumType: ChecksumType.XXH3,
      compression: CompressionType.LZ4,
      blockSizeBytes: BLOCK_SIZE_BYTES,
      bloomBitsPerKey: BLOOM_BITS_PER_KEY,
    },
  };
  const engine = await Engine.open(dir, options);
  const checks: string[] = [];
  try {
    const key = Buffer.alloc(KEY_BYTES);
    const values = new ValueGenerator();

    let start = process.hrtime.bigint();
    for (let i = 0; i < num; i++) {
      writeKey(key, fillKeys[i]);
      await engine.put(key, values.generate(VALUE_BYTES));
    }
    const fillrandom = figure(num, secondsSince(start));

    start = process.hrtime.bigint();
    await engine.flush();
    const flushSeconds = secondsSince(start);

    start = process.hrtime.bigint();
    let found = 0;
    let bytes = 0;
    for (let i = 0; i < num; i++) {
      writeKey(key, readKeys[i]);
      const v = engine.get(key);
      if (v !== null) {
        found++;
        bytes += v.length;
      }
    }
    const readrandom = figure(num, secondsSince(start), found);
    let expectedFound = 0;
    for (let i = 0; i < num; i++) expectedFound += written[readKeys[i]];
    check(found === expectedFound && bytes === found * VALUE_BYTES, `readrandom found ${found} keys, expected ${expectedFound}`);
    checks.push(`readrandom found exactly the ${expectedFound} keys drawn that were written`);

    start = process.hrtime.bigint();
    found = 0;
    bytes = 0;
    for (let i = 0; i < num; i++) {
      writeKey(key, seekKeys[i]);
      const it = engine.newIterator();
      it.seekGE(key);
      if (it.valid() && it.key().equals(key)) found++;
      for (let j = 0; j < SEEK_NEXTS && it.valid(); j++) {
        bytes += it.key().length + it.value().length;
        it.next();
      }
      it.close();
    }
    const seekrandom = figure(num, secondsSince(start), found);
    expectedFound = 0;
    for (let i = 0; i < num; i++) expectedFound += written[seekKeys[i]];
    check(found === expectedFound, `seekrandom found ${found} keys, expected ${expectedFound}`);
    checks.push(`seekrandom found exactly the ${expectedFound} keys drawn that were written`);

    start = process.hrtime.bigint();
    let entries = 0;
    bytes = 0;
    const it = engine.newIterator();
    for (it.first(); it.valid(); it.next()) {
      entries++;
      bytes += it.key().length + it.value().length;
    }
    it.close();
    const readseq = figure(entries, secondsSince(start));
    check(entries === distinct && bytes === distinct * (KEY_BYTES + VALUE_BYTES), `readseq read ${entries} entries, expected ${distinct}`);
    checks.push(`readseq read exactly the ${distinct} distinct keys written`);

    return { figures: { fillrandom, readrandom, seekrandom, readseq }, flushSeconds, filesPerLevel: engine.stats().filesPerLevel, checks };
  } finally {
    await engine.close();
  }
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(`benchmark self-check failed: ${message}`);
}

// ---------------------------------------------------------------------------------- db_bench

function dbBenchFlags(dir: string, num: number): string[] {
  return [
    `--db=${dir}`,
    '--benchmarks=fillrandom,flush,readrandom,seekrandom,readseq',
    `--num=${num}`,
    `--key_size=${KEY_BYTES}`,
    `--value_size=${VALUE_BYTES}`,
    `--compression_ratio=${COMPRESSION_RATIO}`,
    '--compression_type=lz4',
    `--bloom_bits=${BLOOM_BITS_PER_KEY}`,
    `--block_size=${BLOCK_SIZE_BYTES}`,
    '--format_version=5',
    '--checksum_type=4', // kXXH3
    `--cache_size=${BLOCK_CACHE_BYTES}`,
    `--write_buffer_size=${WRITE_BUFFER_BYTES}`,
    '--max_write_buffer_number=2',
    `--seek_nexts=${SEEK_NEXTS}`,
    '--disable_auto_compactions=1',
    '--threads=1',
    '--use_existing_db=0',
    '--sync=0',
    '--disable_wal=0',
    '--seed=1',
    '--statistics=0',
    '--histogram=0',
  ];
}

interface DbBenchResult {
  figures: Partial<Record<BenchmarkName, Figure>>;
  version: string | null;
  /** A debug build (assertions on) runs slower than a release build would. */
  assertionsEnabled: boolean;
  flags: string[];
}

/**
 * Runs db_bench and parses its result lines, e.g.
 * `readrandom   :       2.514 micros/op 397737 ops/sec 2.514 seconds 1000000 operations; (632107 of 1000000 found)`.
 */
function runDbBench(binary: string, dir: string, num: number): DbBenchResult | { unavailable: string } {
  const flags = dbBenchFlags(dir, num);
  const r = spawnSync(binary, flags, { encoding: 'utf8', maxBuffer: 16 << 20 });
  if (r.error !== undefined) return { unavailable: `${binary} could not be run (install rocksdb-tools 7.8): ${r.error.message}` };
  if (r.status !== 0) return { unavailable: `${binary} exited with ${r.status}: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}` };
  const figures: Partial<Record<BenchmarkName, Figure>> = {};
  const line = /^(\w+)\s*:\s*([\d.]+) micros\/op (\d+) ops\/sec(?: ([\d.]+) seconds (\d+) operations;)?(.*)$/;
  for (const text of r.stdout.split('\n')) {
    const m = line.exec(text.trim());
    if (m === null || !(BENCHMARKS as readonly string[]).includes(m[1])) continue;
    const microsPerOp = Number(m[2]);
    const ops = m[5] !== undefined ? Number(m[5]) : num;
    const seconds = m[4] !== undefined ? Number(m[4]) : (microsPerOp * ops) / 1e6;
    const foundMatch = /\((\d+) of (\d+) found\)/.exec(m[6]);
    figures[m[1] as BenchmarkName] = {
      ops,
      seconds,
      opsPerSecond: Number(m[3]),
      found: foundMatch === null ? undefined : Number(foundMatch[1]),
    };
  }
  // The banner's version line goes to stderr, its warnings to stdout.
  const banner = `${r.stderr}\n${r.stdout}`;
  const version = /RocksDB:\s+version\s+(\S+)/.exec(banner)?.[1] ?? null;
  const assertionsEnabled = banner.includes('Assertions are enabled');
  return { figures, version, assertionsEnabled, flags };
}

// ---------------------------------------------------------------------------------- report

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const root = args.keepDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'engine-bench-'));
  fs.mkdirSync(root, { recursive: true });
  const oursDir = path.join(root, 'ours');
  const rocksDir = path.join(root, 'rocksdb');
  fs.rmSync(oursDir, { recursive: true, force: true });

  const loadBefore = os.loadavg()[0];
  const ours = await runOurs(oursDir, args.num);
  const rocks = runDbBench(args.dbBench, rocksDir, args.num);
  const loadAfter = os.loadavg()[0];

  const rows = BENCHMARKS.map((name) => {
    const o = ours.figures[name];
    const r = 'figures' in rocks ? rocks.figures[name] : undefined;
    const ratio = r === undefined ? null : o.opsPerSecond / r.opsPerSecond;
    return { benchmark: name, ours: o, dbBench: r ?? null, ratio, targetMet: ratio === null ? null : ratio >= TARGET_RATIO };
  });
  const report = {
    workload: {
      num: args.num,
      keyBytes: KEY_BYTES,
      valueBytes: VALUE_BYTES,
      compressionRatio: COMPRESSION_RATIO,
      seekNexts: SEEK_NEXTS,
      options:
        'write buffer 64 MiB, 1 immutable memtable, 8 MiB block cache, format_version 5, XXH3, LZ4, 4 KiB blocks, Bloom 10 bits/key; flush after fill; no compaction',
    },
    node: process.version,
    dbBenchVersion: 'figures' in rocks ? rocks.version : null,
    dbBenchAssertionsEnabled: 'figures' in rocks ? rocks.assertionsEnabled : null,
    dbBenchFlags: 'figures' in rocks ? rocks.flags : null,
    dbBenchUnavailable: 'unavailable' in rocks ? rocks.unavailable : null,
    results: rows,
    ours: { flushSeconds: ours.flushSeconds, filesPerLevelAfterFlush: ours.filesPerLevel, blockCodec: nativeBlockCodecStatus },
    targetRatio: TARGET_RATIO,
    checks: ours.checks,
    loadAverage: { before: loadBefore, after: loadAfter, cpus: os.cpus().length },
  };

  if (args.json) {
    console.log(JSON.stringify(report, null, 2));
  } else {
    const n = (x: number): string => Math.round(x).toLocaleString('en-US');
    console.log(
      `engine vs db_bench ${report.dbBenchVersion ?? '(unavailable)'}: ${args.num} ops, ${KEY_BYTES}-byte keys, ${VALUE_BYTES}-byte values; ${report.workload.options}; node ${process.version}`,
    );
    console.log(
      `${'benchmark'.padEnd(12)}${'ours ops/s'.padStart(14)}${'db_bench ops/s'.padStart(16)}${'ratio'.padStart(8)}  target >= ${TARGET_RATIO}x   found (ours / db_bench)`,
    );
    for (const r of rows) {
      const found = r.ours.found === undefined ? '' : `${r.ours.found} / ${r.dbBench?.found ?? '-'}`;
      console.log(
        `${r.benchmark.padEnd(12)}${n(r.ours.opsPerSecond).padStart(14)}${(r.dbBench === null ? '-' : n(r.dbBench.opsPerSecond)).padStart(16)}${(r.ratio === null ? '-' : `${r.ratio.toFixed(2)}x`).padStart(8)}  ${(r.targetMet === null ? '-' : r.targetMet ? 'met' : 'NOT met').padEnd(16)}${found}`,
      );
    }
    console.log(`ours: flush after fill ${ours.flushSeconds.toFixed(2)} s; files per level ${JSON.stringify(ours.filesPerLevel)}`);
    console.log(`ours: native block codec ${nativeBlockCodecStatus} (SST_INGEST_NATIVE=0 runs the JavaScript codecs instead)`);
    for (const c of ours.checks) console.log(`check: ${c}`);
    if (report.dbBenchUnavailable !== null) console.log(report.dbBenchUnavailable);
    if (report.dbBenchAssertionsEnabled === true)
      console.log('note: this db_bench is built with assertions enabled (its banner says so); a release build would be faster');
    console.log(
      `load average ${loadBefore.toFixed(2)} -> ${loadAfter.toFixed(2)} on ${os.cpus().length} CPUs (other processes skew ratios)`,
    );
  }
  if (args.keepDir === null) fs.rmSync(root, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
