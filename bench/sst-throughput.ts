/**
 * SST throughput: our SstFileWriter and TableReader against RocksDB 7.8's SstFileWriter and
 * SstFileReader, on identical data, in the same run.
 *
 * Usage: npm run bench:sst [-- --entries N] [--value-bytes N] [--runs N] [--json] [--keep DIR]
 *
 * Workload (the C++ peer, bench/peer/sst_peer.cc, generates the same bytes): key i is the 8-byte
 * big-endian counter i; its value is `valueBytes` long, the first half from a mulberry32 stream
 * (seed 0x5eed, 4 little-endian bytes per draw, continuing across entries), the second half a
 * repeat of the first, so LZ4 compresses it roughly 2:1 like db_bench's values. Table options on
 * both sides: format_version 5, XXH3, LZ4, Bloom 10 bits/key, 4 KiB blocks. Data is generated
 * before any clock starts.
 *
 * Measured per run (median over --runs): write = constructor/Open .. finish/Finish (both fsync
 * the file); scan = open + full forward iteration with checksum verification, touching every key
 * and value. Throughput is entries/s and MB/s of raw key+value bytes (1 MB = 10^6 bytes). Ratios
 * are ours / RocksDB (above 1 = we are faster). Target: write ratio >= 0.5.
 *
 * Untimed cross-checks after the runs: the peer scans our file and we scan the peer's, and both
 * must see every entry — a benchmark of files the other side cannot read would be meaningless.
 *
 * The peer is built on demand with bench/peer/build.sh (needs g++ and librocksdb-dev). Without
 * it the bench says why and reports our figures only.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { SstFileWriter } from '../src/sstwriter/sstFileWriter';
import { TableReader } from '../src/sstable/reader/tableReader';
import { ChecksumType } from '../src/sstable/checksum';
import { CompressionType } from '../src/sstable/compression';
import { ArgReader } from './support/args';

const KEY_BYTES = 8;
const WORKLOAD_SEED = 0x5eed;
const BYTES_PER_MB = 1e6;

interface BenchArgs {
  entries: number;
  valueBytes: number;
  runs: number;
  json: boolean;
  keepDir: string | null;
}

function parseArgs(argv: readonly string[]): BenchArgs {
  const args: BenchArgs = { entries: 1_000_000, valueBytes: 120, runs: 3, json: false, keepDir: null };
  const r = new ArgReader(argv);
  for (let flag = r.nextFlag(); flag !== null; flag = r.nextFlag()) {
    switch (flag) {
      case '--entries':
        args.entries = r.positiveInteger();
        break;
      case '--value-bytes':
        args.valueBytes = r.positiveInteger();
        break;
      case '--runs':
        args.runs = r.positiveInteger();
        break;
      case '--json':
        args.json = true;
        break;
      case '--keep':
        args.keepDir = r.value();
        break;
      default:
        throw new Error(`unknown argument ${flag} (expected --entries, --value-bytes, --runs, --json, --keep DIR)`);
    }
  }
  return args;
}

// ---------------------------------------------------------------------------------- workload

interface Workload {
  entries: number;
  valueBytes: number;
  /** All keys back to back. */
  keys: Buffer;
  /** All values back to back. */
  values: Buffer;
}

/** Must produce exactly the bytes of MakeWorkload in bench/peer/sst_peer.cc. */
function makeWorkload(entries: number, valueBytes: number): Workload {
  const keys = Buffer.allocUnsafe(entries * KEY_BYTES);
  const values = Buffer.allocUnsafe(entries * valueBytes);
  let state = WORKLOAD_SEED;
  const randomBytes = valueBytes - Math.floor(valueBytes / 2);
  for (let i = 0; i < entries; i++) {
    const k = i * KEY_BYTES;
    keys.writeUInt32BE(Math.floor(i / 2 ** 32), k);
    keys.writeUInt32BE(i >>> 0, k + 4);
    const v = i * valueBytes;
    for (let b = 0; b < randomBytes; b += 4) {
      // mulberry32
      state = (state + 0x6d2b79f5) >>> 0;
      let t = Math.imul(state ^ (state >>> 15), state | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      const r = (t ^ (t >>> 14)) >>> 0;
      for (let j = 0; j < 4 && b + j < randomBytes; j++) values[v + b + j] = (r >>> (8 * j)) & 0xff;
    }
    values.copy(values, v + randomBytes, v, v + valueBytes - randomBytes);
  }
  return { entries, valueBytes, keys, values };
}

// ---------------------------------------------------------------------------------- our side

interface WriteResult {
  seconds: number;
  fileSizeBytes: number;
}

interface ScanResult {
  seconds: number;
  entries: number;
  keyBytes: number;
  valueBytes: number;
}

function secondsSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9;
}

function ourWrite(file: string, w: Workload): WriteResult {
  const start = process.hrtime.bigint();
  const writer = new SstFileWriter(file, {
    formatVersion: 5,
    checksumType: ChecksumType.XXH3,
    compression: CompressionType.LZ4,
    bloomBitsPerKey: 10,
    blockSizeBytes: 4096,
  });
  // Views into the pre-generated data, as a caller streaming from its own buffers would pass.
  const { keys, values, valueBytes } = w;
  for (let i = 0; i < w.entries; i++) {
    writer.put(keys.subarray(i * KEY_BYTES, (i + 1) * KEY_BYTES), values.subarray(i * valueBytes, (i + 1) * valueBytes));
  }
  const meta = writer.finish();
  return { seconds: secondsSince(start), fileSizeBytes: meta.fileSizeBytes };
}

function ourScan(file: string): ScanResult {
  const start = process.hrtime.bigint();
  const reader = TableReader.open(file, { verifyChecksums: true });
  const it = reader.newIterator();
  let entries = 0;
  let keyBytes = 0;
  let valueBytes = 0;
  for (it.first(); it.valid(); it.next()) {
    entries++;
    keyBytes += it.key().length - 8; // user key, as RocksDB's iterator reports it
    valueBytes += it.value().length;
  }
  it.close();
  reader.close();
  return { seconds: secondsSince(start), entries, keyBytes, valueBytes };
}

// ---------------------------------------------------------------------------------- the peer

/** The repository root: the nearest ancestor holding bench/peer (from dist/bench or bench). */
function repoRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'bench', 'peer', 'build.sh'))) return dir;
    if (path.dirname(dir) === dir) return process.cwd();
  }
}

const PEER_DIR = path.join(repoRoot(), 'bench', 'peer');
const PEER_BINARY = path.join(PEER_DIR, 'build', 'sst_peer');

/** The peer binary, building it if needed; or the reason it cannot be had. */
function findPeer(): { binary: string } | { unavailable: string } {
  if (fs.existsSync(PEER_BINARY)) return { binary: PEER_BINARY };
  const build = spawnSync('bash', [path.join(PEER_DIR, 'build.sh')], { encoding: 'utf8' });
  if (build.error === undefined && build.status === 0 && fs.existsSync(PEER_BINARY)) return { binary: PEER_BINARY };
  const why = (build.error?.message ?? build.stderr ?? '').trim().split('\n').slice(-3).join(' | ');
  return { unavailable: `RocksDB peer could not be built (needs g++ and librocksdb-dev 7.8: apt-get install g++ librocksdb-dev): ${why}` };
}

function runPeer(binary: string, args: readonly string[]): Record<string, number | string> {
  const r = spawnSync(binary, args, { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (r.error !== undefined) throw r.error;
  if (r.status !== 0) throw new Error(`${binary} ${args.join(' ')} exited with ${r.status}: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, number | string>;
}

function peerWrite(binary: string, file: string, w: Workload): WriteResult {
  const out = runPeer(binary, ['write', file, String(w.entries), String(w.valueBytes)]);
  return { seconds: Number(out.seconds), fileSizeBytes: Number(out.fileSizeBytes) };
}

function peerScan(binary: string, file: string): ScanResult {
  const out = runPeer(binary, ['scan', file]);
  return { seconds: Number(out.seconds), entries: Number(out.entries), keyBytes: Number(out.keyBytes), valueBytes: Number(out.valueBytes) };
}

// ---------------------------------------------------------------------------------- report

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

interface Figure {
  seconds: number;
  entriesPerSecond: number;
  megabytesPerSecond: number;
  fileSizeBytes?: number;
}

function figure(seconds: number, w: Workload, fileSizeBytes?: number): Figure {
  const rawBytes = w.entries * (KEY_BYTES + w.valueBytes);
  return { seconds, entriesPerSecond: w.entries / seconds, megabytesPerSecond: rawBytes / BYTES_PER_MB / seconds, fileSizeBytes };
}

function checkScan(who: string, s: ScanResult, w: Workload): void {
  if (s.entries !== w.entries || s.keyBytes !== w.entries * KEY_BYTES || s.valueBytes !== w.entries * w.valueBytes) {
    throw new Error(`${who} saw ${s.entries} entries (${s.keyBytes} key bytes, ${s.valueBytes} value bytes), expected ${w.entries}`);
  }
}

function main(): void {
  const args = parseArgs(process.argv.slice(2));
  const dir = args.keepDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'sst-bench-'));
  fs.mkdirSync(dir, { recursive: true });
  const oursFile = path.join(dir, 'ours.sst');
  const peerFile = path.join(dir, 'rocksdb.sst');
  const peer = findPeer();
  const w = makeWorkload(args.entries, args.valueBytes);

  const ourWrites: WriteResult[] = [];
  const ourScans: ScanResult[] = [];
  const peerWrites: WriteResult[] = [];
  const peerScans: ScanResult[] = [];
  for (let run = 0; run < args.runs; run++) {
    ourWrites.push(ourWrite(oursFile, w));
    ourScans.push(ourScan(oursFile));
    checkScan('our reader on our file', ourScans[run], w);
    if ('binary' in peer) {
      peerWrites.push(peerWrite(peer.binary, peerFile, w));
      peerScans.push(peerScan(peer.binary, peerFile));
      checkScan('RocksDB on its file', peerScans[run], w);
    }
  }
  const crossChecks: string[] = [];
  if ('binary' in peer) {
    checkScan('RocksDB on our file', peerScan(peer.binary, oursFile), w);
    checkScan('our reader on the RocksDB file', ourScan(peerFile), w);
    crossChecks.push('RocksDB SstFileReader read every entry of our file', 'our TableReader read every entry of the RocksDB file');
  }

  const ours = {
    write: figure(median(ourWrites.map((r) => r.seconds)), w, ourWrites[0].fileSizeBytes),
    scan: figure(median(ourScans.map((r) => r.seconds)), w),
  };
  const rocksdb =
    'binary' in peer
      ? {
          write: figure(median(peerWrites.map((r) => r.seconds)), w, peerWrites[0].fileSizeBytes),
          scan: figure(median(peerScans.map((r) => r.seconds)), w),
        }
      : null;
  const ratios =
    rocksdb === null
      ? null
      : {
          write: ours.write.entriesPerSecond / rocksdb.write.entriesPerSecond,
          scan: ours.scan.entriesPerSecond / rocksdb.scan.entriesPerSecond,
        };
  const report = {
    workload: {
      entries: w.entries,
      keyBytes: KEY_BYTES,
      valueBytes: w.valueBytes,
      runs: args.runs,
      options: 'format_version 5, XXH3, LZ4, Bloom 10 bits/key, 4 KiB blocks',
    },
    node: process.version,
    ours,
    rocksdb,
    rocksdbUnavailable: 'unavailable' in peer ? peer.unavailable : null,
    ratiosOursOverRocksdb: ratios,
    writeTarget: { minRatio: 0.5, met: ratios === null ? null : ratios.write >= 0.5 },
    crossChecks,
  };

  if (args.json) {
    console.log(JSON.stringify(report, null, 2));
  } else {
    const row = (name: string, f: Figure): string =>
      `${name.padEnd(22)}${f.seconds.toFixed(3).padStart(9)} s${(f.entriesPerSecond / 1e6).toFixed(3).padStart(10)} M entries/s${f.megabytesPerSecond.toFixed(1).padStart(9)} MB/s` +
      (f.fileSizeBytes === undefined ? '' : `${(f.fileSizeBytes / BYTES_PER_MB).toFixed(1).padStart(8)} MB file`);
    console.log(
      `SST throughput: ${w.entries} entries, ${KEY_BYTES}-byte keys, ${w.valueBytes}-byte values; ${report.workload.options}; median of ${args.runs} runs; node ${process.version}`,
    );
    console.log(row('ours write', ours.write));
    if (rocksdb !== null) console.log(row('rocksdb write', rocksdb.write));
    console.log(row('ours scan', ours.scan));
    if (rocksdb !== null) console.log(row('rocksdb scan', rocksdb.scan));
    if (ratios !== null) {
      console.log(
        `ratio ours/rocksdb: write ${ratios.write.toFixed(2)}x (target >= 0.5x: ${ratios.write >= 0.5 ? 'met' : 'NOT met'}), scan ${ratios.scan.toFixed(2)}x`,
      );
      for (const c of crossChecks) console.log(`cross-check: ${c}`);
    } else {
      console.log(report.rocksdbUnavailable);
    }
  }
  if (args.keepDir === null) fs.rmSync(dir, { recursive: true, force: true });
}

main();
