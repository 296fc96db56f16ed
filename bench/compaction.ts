/**
 * Compaction: write amplification and space amplification of our engine after a random fill and
 * a full compaction, beside RocksDB 7.8's db_bench doing the same fill with the same settings, in
 * the same run.
 *
 * Usage: npm run build && node dist/bench/compaction.js [--num N] [--profile default|small|both]
 *        [--compaction-pri min-overlapping-ratio|round-robin] [--json] [--keep DIR]
 *
 * --compaction-pri picks how our levels >= 1 choose the file to compact (default
 * min-overlapping-ratio, which is also db_bench's default compaction_pri, kMinOverlappingRatio);
 * db_bench runs with its default either way.
 *
 * Workload (both sides): `num` puts of keys drawn uniformly with replacement from [0, num) (so
 * about 63% of them distinct and the rest overwrites), each key the 8-byte big-endian index,
 * each value the next 120-byte window of a 1 MiB buffer made of 100-byte pieces, each 50 random
 * printable bytes written twice (db_bench's RandomGenerator with --compression_ratio=0.5, so
 * values compress alike on both sides). Then: flush the memtable, wait for background
 * compactions ("after fill"), compact the whole key range ("after full compaction").
 * db_bench runs `fillrandom,flush,waitforcompaction` then, reopened, `compact`, with --statistics;
 * the figures come from its rocksdb.flush.write.bytes / rocksdb.compact.{read,write}.bytes
 * tickers and from the .sst bytes in its directory. Random keys differ between the two sides
 * (its generator, our mulberry32); their distribution does not.
 *
 * Settings (both sides): LZ4, 4 KiB blocks, Bloom 10 bits/key, 7 levels, L0 trigger 4, x10 level
 * multiplier, 2 write buffers; profile `default`: 64 MiB write buffer, L1 target 64 MiB, 64 MiB
 * files (db_bench's defaults but for max_bytes_for_level_base, 256 MiB there, set to ours);
 * profile `small`: 4 MiB write buffer, L1 target 16 MiB, 4 MiB files, so the fill itself runs
 * leveled compactions down several levels.
 *
 * Reported, per side:
 * - write amplification = (bytes flushed + bytes written by compactions) / bytes flushed, after
 *   the fill and after the full compaction (RocksDB's "Sum" W-Amp convention), and the same
 *   total over the user's key+value bytes;
 * - space amplification after the fill = .sst bytes after the fill / .sst bytes after the full
 *   compaction (which leaves one version of each live key: the data's own size);
 * - seconds for the fill and for the full compaction (db_bench is built with assertions on).
 * Our compactions run in the background in slices on the same thread as the writes (see
 * src/engine/compaction/compactionJob.ts); RocksDB's on background threads.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine, EngineOptions } from '../src/engine/engine';
import { COMPACTION_PRIS, CompactionPri } from '../src/engine/compaction/compactionPicker';
import { CompressionType } from '../src/sstable/compression';
import { mulberry32 } from '../src/util/random';
import { ArgReader } from './support/args';

const KEY_BYTES = 8;
const VALUE_BYTES = 120;
const WORKLOAD_SEED = 0xc0a1;

interface Profile {
  name: string;
  writeBufferSizeBytes: number;
  maxBytesForLevelBase: number;
  targetFileSizeBytes: number;
}

const MiB = 1024 * 1024;
const PROFILES: Record<string, Profile> = {
  default: { name: 'default', writeBufferSizeBytes: 64 * MiB, maxBytesForLevelBase: 64 * MiB, targetFileSizeBytes: 64 * MiB },
  small: { name: 'small', writeBufferSizeBytes: 4 * MiB, maxBytesForLevelBase: 16 * MiB, targetFileSizeBytes: 4 * MiB },
};

interface Args {
  num: number;
  profiles: Profile[];
  compactionPri: CompactionPri;
  json: boolean;
  keepDir: string | null;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = {
    num: 1_000_000,
    profiles: [PROFILES.default, PROFILES.small],
    compactionPri: 'min-overlapping-ratio',
    json: false,
    keepDir: null,
  };
  const r = new ArgReader(argv);
  for (let flag = r.nextFlag(); flag !== null; flag = r.nextFlag()) {
    switch (flag) {
      case '--num':
        args.num = r.positiveInteger();
        break;
      case '--profile': {
        const p = r.value();
        if (p === 'both') args.profiles = [PROFILES.default, PROFILES.small];
        else if (PROFILES[p] !== undefined) args.profiles = [PROFILES[p]];
        else throw new Error(`--profile must be default, small or both, got "${p}"`);
        break;
      }
      case '--compaction-pri': {
        const p = r.value();
        const known = COMPACTION_PRIS.find((c) => c === p);
        if (known === undefined) throw new Error(`--compaction-pri must be one of ${COMPACTION_PRIS.join(', ')}, got "${p}"`);
        args.compactionPri = known;
        break;
      }
      case '--json':
        args.json = true;
        break;
      case '--keep':
        args.keepDir = r.value();
        break;
      default:
        throw new Error(`unknown argument ${flag} (expected --num, --profile, --compaction-pri, --json, --keep DIR)`);
    }
  }
  return args;
}

/** What one side reports. */
interface SideResult {
  userBytes: number;
  flushBytes: number;
  fillCompactionReadBytes: number;
  fillCompactionWriteBytes: number;
  fullCompactionReadBytes: number;
  fullCompactionWriteBytes: number;
  sstBytesAfterFill: number;
  sstBytesAfterFullCompaction: number;
  fillSeconds: number;
  fullCompactionSeconds: number;
  /** Live keys after the full compaction (ours: counted; db_bench: not reported). */
  liveKeys: number | null;
  /** Ours only: writes paced by the L0 slowdown and stopped at the L0 stop trigger during the fill. */
  writeControl: { delayedWrites: number; writeDelayMs: number; level0WriteStalls: number } | null;
}

/** mulberry32's 32-bit outputs as integers (its floats are exactly these / 2^32). */
function randomUint32(seed: number): () => number {
  const next = mulberry32(seed);
  return () => next() * 4294967296;
}

/**
 * db_bench's value generator: a 1 MiB buffer of 100-byte pieces, each 50 random printable bytes
 * twice, handed out as consecutive VALUE_BYTES windows (wrapping to the start).
 */
function valueSource(rand: () => number): () => Buffer {
  const PIECE_BYTES = 100;
  const buffer = Buffer.alloc(1 << 20);
  for (let at = 0; at + PIECE_BYTES <= buffer.length; at += PIECE_BYTES) {
    for (let j = 0; j < PIECE_BYTES / 2; j++) buffer[at + j] = 32 + (rand() % 95);
    buffer.copy(buffer, at + PIECE_BYTES / 2, at, at + PIECE_BYTES / 2);
  }
  const usable = buffer.length - (buffer.length % PIECE_BYTES);
  let pos = 0;
  return () => {
    if (pos + VALUE_BYTES > usable) pos = 0;
    pos += VALUE_BYTES;
    return buffer.subarray(pos - VALUE_BYTES, pos);
  };
}

function sstBytes(dir: string): number {
  let n = 0;
  for (const f of fs.readdirSync(dir)) if (f.endsWith('.sst')) n += fs.statSync(path.join(dir, f)).size;
  return n;
}

function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

async function runOurs(profile: Profile, num: number, compactionPri: CompactionPri, dir: string): Promise<SideResult> {
  const options: EngineOptions = {
    compactionPri,
    writeBufferSizeBytes: profile.writeBufferSizeBytes,
    maxImmutableMemtables: 1, // RocksDB's max_write_buffer_number = 2 counts the active one too
    maxBytesForLevelBase: profile.maxBytesForLevelBase,
    maxBytesForLevelMultiplier: 10,
    targetFileSizeBytes: profile.targetFileSizeBytes,
    level0FileNumCompactionTrigger: 4,
    numLevels: 7,
    blockCacheSizeBytes: 8 * MiB, // db_bench's default cache_size
    table: { compression: CompressionType.LZ4, blockSizeBytes: 4096, bloomBitsPerKey: 10 },
  };
  const engine = await Engine.open(dir, options);
  const rand = randomUint32(WORKLOAD_SEED);
  const values = valueSource(rand);
  const keyBuf = Buffer.alloc(KEY_BYTES);
  const distinct = new Uint8Array(num);
  const fillStart = process.hrtime.bigint();
  for (let i = 0; i < num; i++) {
    const k = rand() % num;
    distinct[k] = 1;
    keyBuf.writeUInt32BE(Math.floor(k / 2 ** 32), 0);
    keyBuf.writeUInt32BE(k >>> 0, 4);
    await engine.put(keyBuf, values());
  }
  await engine.flush();
  await engine.waitForCompactions();
  const fillSeconds = secondsSince(fillStart);
  const afterFill = engine.stats();
  const sstBytesAfterFill = sstBytes(dir);

  const compactStart = process.hrtime.bigint();
  await engine.compactRange();
  const fullCompactionSeconds = secondsSince(compactStart);
  const afterFull = engine.stats();
  const sstBytesAfterFullCompaction = sstBytes(dir);

  let liveKeys = 0;
  const it = engine.newIterator();
  for (it.first(); it.valid(); it.next()) liveKeys++;
  it.close();
  const expected = distinct.reduce((n, d) => n + d, 0);
  if (liveKeys !== expected) throw new Error(`after the full compaction the database holds ${liveKeys} keys, expected ${expected}`);
  await engine.close();
  return {
    userBytes: num * (KEY_BYTES + VALUE_BYTES),
    flushBytes: afterFull.flushBytesWritten,
    fillCompactionReadBytes: afterFill.compaction.bytesRead,
    fillCompactionWriteBytes: afterFill.compaction.bytesWritten,
    fullCompactionReadBytes: afterFull.compaction.bytesRead - afterFill.compaction.bytesRead,
    fullCompactionWriteBytes: afterFull.compaction.bytesWritten - afterFill.compaction.bytesWritten,
    sstBytesAfterFill,
    sstBytesAfterFullCompaction,
    fillSeconds,
    fullCompactionSeconds,
    liveKeys,
    writeControl: {
      delayedWrites: afterFill.delayedWrites,
      writeDelayMs: afterFill.writeDelayMs,
      level0WriteStalls: afterFill.level0WriteStalls,
    },
  };
}

/** Runs db_bench; returns its --statistics tickers and benchmark lines. */
function dbBench(args: readonly string[]): { tickers: Map<string, number>; micros: Map<string, number> } {
  const r = spawnSync('db_bench', args, { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error !== undefined) throw r.error;
  if (r.status !== 0) throw new Error(`db_bench exited with ${r.status}: ${r.stderr}`);
  const tickers = new Map<string, number>();
  const micros = new Map<string, number>();
  for (const line of r.stdout.split('\n')) {
    // "rocksdb.compact.write.bytes COUNT : 11442229"
    const t = /^(rocksdb\.[a-z0-9._-]+) COUNT : (\d+)$/.exec(line.trim());
    if (t !== null) tickers.set(t[1], Number(t[2]));
    // "fillrandom   :      15.108 micros/op 65886 ops/sec 1.518 seconds 100000 operations; ..."
    const m = /^(\w+)\s*:\s*[\d.]+ micros\/op .*? ([\d.]+) seconds/.exec(line.trim());
    if (m !== null) micros.set(m[1], Number(m[2]));
  }
  return { tickers, micros };
}

function runDbBench(profile: Profile, num: number, dir: string): SideResult {
  const common = [
    `--db=${dir}`,
    `--num=${num}`,
    `--key_size=${KEY_BYTES}`,
    `--value_size=${VALUE_BYTES}`,
    '--compression_type=lz4',
    '--compression_ratio=0.5',
    '--block_size=4096',
    '--bloom_bits=10',
    '--num_levels=7',
    '--level0_file_num_compaction_trigger=4',
    '--max_bytes_for_level_multiplier=10',
    '--max_write_buffer_number=2',
    `--write_buffer_size=${profile.writeBufferSizeBytes}`,
    `--max_bytes_for_level_base=${profile.maxBytesForLevelBase}`,
    `--target_file_size_base=${profile.targetFileSizeBytes}`,
    '--statistics',
  ];
  const fill = dbBench([...common, '--benchmarks=fillrandom,flush,waitforcompaction']);
  const sstBytesAfterFill = sstBytes(dir);
  const compact = dbBench([...common, '--use_existing_db=1', '--benchmarks=compact']);
  const sstBytesAfterFullCompaction = sstBytes(dir);
  const tick = (m: Map<string, number>, name: string): number => {
    const v = m.get(name);
    if (v === undefined) throw new Error(`db_bench printed no ${name} ticker`);
    return v;
  };
  return {
    userBytes: num * (KEY_BYTES + VALUE_BYTES),
    flushBytes: tick(fill.tickers, 'rocksdb.flush.write.bytes'),
    fillCompactionReadBytes: tick(fill.tickers, 'rocksdb.compact.read.bytes'),
    fillCompactionWriteBytes: tick(fill.tickers, 'rocksdb.compact.write.bytes'),
    fullCompactionReadBytes: tick(compact.tickers, 'rocksdb.compact.read.bytes'),
    fullCompactionWriteBytes: tick(compact.tickers, 'rocksdb.compact.write.bytes'),
    sstBytesAfterFill,
    sstBytesAfterFullCompaction,
    fillSeconds: (fill.micros.get('fillrandom') ?? NaN) + (fill.micros.get('flush') ?? 0) + (fill.micros.get('waitforcompaction') ?? 0),
    fullCompactionSeconds: compact.micros.get('compact') ?? NaN,
    liveKeys: null,
    writeControl: null,
  };
}

interface Figures {
  writeAmpAfterFill: number;
  writeAmpTotal: number;
  writtenPerUserByte: number;
  spaceAmpAfterFill: number;
}

function figures(r: SideResult): Figures {
  return {
    writeAmpAfterFill: (r.flushBytes + r.fillCompactionWriteBytes) / r.flushBytes,
    writeAmpTotal: (r.flushBytes + r.fillCompactionWriteBytes + r.fullCompactionWriteBytes) / r.flushBytes,
    writtenPerUserByte: (r.flushBytes + r.fillCompactionWriteBytes + r.fullCompactionWriteBytes) / r.userBytes,
    spaceAmpAfterFill: r.sstBytesAfterFill / r.sstBytesAfterFullCompaction,
  };
}

function haveDbBench(): boolean {
  const r = spawnSync('db_bench', ['--help'], { encoding: 'utf8', maxBuffer: 16 << 20 });
  return r.error === undefined;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const root = args.keepDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'bench-compaction-'));
  const peer = haveDbBench();
  const report: Array<{ profile: string; ours: SideResult & Figures; dbBench: (SideResult & Figures) | null }> = [];
  try {
    for (const profile of args.profiles) {
      const ourDir = path.join(root, `ours-${profile.name}`);
      const peerDir = path.join(root, `db_bench-${profile.name}`);
      for (const d of [ourDir, peerDir]) fs.rmSync(d, { recursive: true, force: true });
      const ours = await runOurs(profile, args.num, args.compactionPri, ourDir);
      const theirs = peer ? runDbBench(profile, args.num, peerDir) : null;
      report.push({
        profile: profile.name,
        ours: { ...ours, ...figures(ours) },
        dbBench: theirs === null ? null : { ...theirs, ...figures(theirs) },
      });
    }
  } finally {
    if (args.keepDir === null) fs.rmSync(root, { recursive: true, force: true });
  }
  if (args.json) {
    console.log(JSON.stringify({ num: args.num, compactionPri: args.compactionPri, results: report }, null, 2));
    return;
  }
  const mb = (n: number): string => (n / 1e6).toFixed(1);
  for (const { profile, ours, dbBench: theirs } of report) {
    const p = PROFILES[profile];
    console.log(
      `\n${args.num} random puts, profile ${profile} (write buffer ${p.writeBufferSizeBytes / MiB} MiB, L1 ${p.maxBytesForLevelBase / MiB} MiB, files ${p.targetFileSizeBytes / MiB} MiB; ours picking by ${args.compactionPri})`,
    );
    const rows: Array<[string, (r: SideResult & Figures) => string]> = [
      ['user key+value MB', (r) => mb(r.userBytes)],
      ['flushed MB', (r) => mb(r.flushBytes)],
      ['compaction read / written MB during fill', (r) => `${mb(r.fillCompactionReadBytes)} / ${mb(r.fillCompactionWriteBytes)}`],
      ['compaction read / written MB, full compaction', (r) => `${mb(r.fullCompactionReadBytes)} / ${mb(r.fullCompactionWriteBytes)}`],
      ['write amp after fill (flush+compaction)/flush', (r) => r.writeAmpAfterFill.toFixed(2)],
      ['write amp incl. full compaction', (r) => r.writeAmpTotal.toFixed(2)],
      ['bytes written per user byte', (r) => r.writtenPerUserByte.toFixed(2)],
      ['.sst MB after fill', (r) => mb(r.sstBytesAfterFill)],
      ['.sst MB after full compaction', (r) => mb(r.sstBytesAfterFullCompaction)],
      ['space amp after fill', (r) => r.spaceAmpAfterFill.toFixed(2)],
      ['fill seconds', (r) => r.fillSeconds.toFixed(1)],
      ['full compaction seconds', (r) => r.fullCompactionSeconds.toFixed(1)],
    ];
    const width = Math.max(...rows.map(([name]) => name.length));
    console.log(`${''.padEnd(width)}  ${'ours'.padStart(14)}  ${'db_bench'.padStart(14)}`);
    for (const [name, f] of rows)
      console.log(`${name.padEnd(width)}  ${f(ours).padStart(14)}  ${(theirs === null ? 'n/a' : f(theirs)).padStart(14)}`);
    if (ours.liveKeys !== null) console.log(`(ours: ${ours.liveKeys} live keys after the full compaction, checked against the workload)`);
    const wc = ours.writeControl;
    if (wc !== null)
      console.log(
        `(ours during the fill: ${wc.delayedWrites} writes paced by the L0 slowdown for ${wc.writeDelayMs.toFixed(0)} ms, ${wc.level0WriteStalls} stopped at the L0 stop trigger)`,
      );
  }
  if (!peer) console.log('\ndb_bench is not on PATH (package rocksdb-tools): RocksDB figures not measured.');
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exitCode = 1;
});
