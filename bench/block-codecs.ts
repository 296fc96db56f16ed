/**
 * Block codecs: the decode cost of one 4 KiB data block, and the stored size, for every
 * compression the reader decodes, with LZ4 (the writer's default) as the baseline measured in
 * the same run.
 *
 * Usage: npm run bench:codecs [-- --blocks N] [--rounds N] [--json]
 *
 * Workload: the rows of fixtures/trades.csv (key = t_id, value = the other columns, as
 * `ingest import` stores them by default) and a second set of 8-byte counters with 120-byte
 * half-random values (bench:sst's values, about 2:1 under LZ4), each cut into data blocks of
 * 4 KiB by the table writer's BlockBuilder (restart interval 16, internal keys). Every block is
 * stored by each writable codec through compressForBlock() (ZSTD level 3, RocksDB's default),
 * and by zlib through node:zlib's raw deflate (level 6, window 2^14, RocksDB's zlib defaults):
 * RocksDB writes Zlib, we only read it.
 *
 * Measured per codec, on the same blocks: the median over --rounds of the time to decode every
 * block once, divided by the number of blocks (µs per block), through
 *   - the JavaScript path: decompressBlock()/lz4DecompressBlock() (snappy, zstd-napi, node:zlib,
 *     lz4-napi: what runs with SST_INGEST_NATIVE=0);
 *   - the native codec (native/sstableExports.c), where it decodes that codec: LZ4 and Snappy through
 *     lz4DecodeInto/snappyDecodeInto into a preallocated buffer, as the block read path does.
 * Stored ratio = stored bytes / raw bytes over all blocks (a block not saving 1/8 counts raw).
 * Ratios vs LZ4: decode time / LZ4's on the same path, and stored size / LZ4's.
 */
import * as fs from 'fs';
import * as path from 'path';
import { deflateRawSync } from 'zlib';
import { BlockBuilder } from '../src/sstwriter/blockBuilder';
import { makeInternalKey, ValueType } from '../src/base/internalKey';
import { CompressionType, compressForBlock, compressionName, decompressBlock, lz4DecompressBlock } from '../src/sstable/compression';
import { nativeBlockCodec, nativeBlockCodecStatus } from '../src/sstable/nativeBlockCodec';
import { encodeVarint, readVarint32, decoded } from '../src/util/coding';
import { mulberry32 } from '../src/util/random';
import { ArgReader } from './support/args';

const BLOCK_TARGET_BYTES = 4096;
const RESTART_INTERVAL = 16;
const MAX_DECODED_BYTES = 1 << 30;
/** Untimed rounds first: the first calls into each package load and compile it. */
const WARMUP_ROUNDS = 3;
/** Each timed round decodes at least this many blocks (the trades fixture has ~270: reused). */
const MIN_BLOCKS_PER_ROUND = 2000;
/** RocksDB's zlib defaults: level Z_DEFAULT_COMPRESSION (6), window_bits -14, memLevel 8. */
const ZLIB_OPTIONS = { level: 6, windowBits: 14, memLevel: 8 };

interface BenchArgs {
  blocks: number;
  rounds: number;
  json: boolean;
}

function parseArgs(argv: readonly string[]): BenchArgs {
  const args: BenchArgs = { blocks: 2000, rounds: 7, json: false };
  const r = new ArgReader(argv);
  for (let flag = r.nextFlag(); flag !== null; flag = r.nextFlag()) {
    if (flag === '--blocks') args.blocks = r.positiveInteger();
    else if (flag === '--rounds') args.rounds = r.positiveInteger();
    else if (flag === '--json') args.json = true;
    else throw new Error(`unknown flag ${flag}`);
  }
  return args;
}

/** Cuts (key, value) rows into finished 4 KiB data blocks, at most `maxBlocks`. */
function buildBlocks(rows: Iterable<[Buffer, Buffer]>, maxBlocks: number): Buffer[] {
  const blocks: Buffer[] = [];
  const builder = new BlockBuilder({ restartInterval: RESTART_INTERVAL });
  let seq = 1;
  for (const [key, value] of rows) {
    const ikey = makeInternalKey(key, seq++, ValueType.Value);
    if (!builder.empty() && builder.estimatedSizeAfter(ikey, value) > BLOCK_TARGET_BYTES) {
      blocks.push(Buffer.from(builder.finish()));
      builder.reset();
      if (blocks.length >= maxBlocks) return blocks;
    }
    builder.add(ikey, value);
  }
  if (!builder.empty()) blocks.push(Buffer.from(builder.finish()));
  return blocks;
}

/** fixtures/trades.csv, from bench/ (run through swc) or dist/bench/ (built). */
function tradesCsvPath(): string {
  for (const up of ['..', path.join('..', '..')]) {
    const candidate = path.join(__dirname, up, 'fixtures', 'trades.csv');
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error('fixtures/trades.csv not found');
}

/** fixtures/trades.csv rows in key order (the fixture is 10,000 rows: about 300 blocks). */
function* tradesRows(): Generator<[Buffer, Buffer]> {
  const rows = fs
    .readFileSync(tradesCsvPath(), 'utf8')
    .split('\n')
    .slice(1)
    .filter((l) => l !== '')
    .map((l): [Buffer, Buffer] => {
      const bar = l.indexOf('|');
      return [Buffer.from(l.slice(0, bar)), Buffer.from(l.slice(bar + 1))];
    });
  rows.sort((a, b) => Buffer.compare(a[0], b[0]));
  yield* rows;
}

/** bench:sst's workload: 8-byte counters, 120-byte values whose second half repeats the first. */
function* counterRows(): Generator<[Buffer, Buffer]> {
  const next = mulberry32(0x5eed);
  for (let i = 0; ; i++) {
    const key = Buffer.alloc(8);
    key.writeBigUInt64BE(BigInt(i));
    const value = Buffer.allocUnsafe(120);
    for (let j = 0; j < 60; j += 4) value.writeUInt32LE(Math.floor(next() * 2 ** 32), j);
    value.copy(value, 60, 0, 60);
    yield [key, value];
  }
}

interface Stored {
  /** The trailer type: the codec's, or None where it did not save 1/8. */
  type: CompressionType;
  payload: Buffer;
  raw: Buffer;
}

/** `varint32 size ‖ raw deflate`, RocksDB's Zlib block, or null under the 1/8 rule. */
function zlibCompressForBlock(raw: Buffer): Buffer | null {
  const out = Buffer.concat([encodeVarint(raw.length), deflateRawSync(raw, ZLIB_OPTIONS)]);
  return out.length < raw.length - Math.floor(raw.length / 8) ? out : null;
}

function storeAll(blocks: readonly Buffer[], type: CompressionType): Stored[] {
  return blocks.map((raw) => {
    const payload = type === CompressionType.Zlib ? zlibCompressForBlock(raw) : compressForBlock(type, raw, 5);
    return payload === null ? { type: CompressionType.None, payload: raw, raw } : { type, payload, raw };
  });
}

type Decoder = (s: Stored, scratch: Buffer) => void;

/** The JavaScript path's decode of one stored block (a raw one is copied, as the reader does). */
const jsDecode: Decoder = (s) => {
  if (s.type === CompressionType.None) Buffer.from(s.payload);
  else if (s.type === CompressionType.LZ4) lz4DecompressBlock(s.payload, 5);
  else decompressBlock(s.type, s.payload, MAX_DECODED_BYTES);
};

/** The native codec's decode into a preallocated buffer, or null where it has none for `type`. */
function nativeDecoder(type: CompressionType): Decoder | null {
  const codec = nativeBlockCodec;
  if (codec === null) return null;
  if (type === CompressionType.LZ4) {
    return (s, scratch) => {
      if (s.type === CompressionType.None) return void scratch.set(s.payload);
      const size = readVarint32(s.payload, 0);
      codec.lz4DecodeInto(s.payload, decoded.offset, s.payload.length, scratch.subarray(0, size));
    };
  }
  if (type === CompressionType.Snappy) {
    return (s, scratch) => {
      if (s.type === CompressionType.None) return void scratch.set(s.payload);
      codec.snappyDecodeInto(s.payload, 0, s.payload.length, scratch.subarray(0, s.raw.length));
    };
  }
  return null;
}

/** Median over `rounds` of the µs per block to decode the blocks (after warm-up rounds). */
function timeDecode(blocks: readonly Stored[], decode: Decoder, rounds: number): number {
  const scratch = Buffer.allocUnsafe(1 << 20);
  const stored: Stored[] = [];
  while (stored.length < MIN_BLOCKS_PER_ROUND) stored.push(...blocks);
  const samples: number[] = [];
  for (let round = -WARMUP_ROUNDS; round < rounds; round++) {
    const start = process.hrtime.bigint();
    for (const s of stored) decode(s, scratch);
    const perBlockMicros = Number(process.hrtime.bigint() - start) / 1000 / stored.length;
    if (round >= 0) samples.push(perBlockMicros);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

/** Checks every stored block decodes back to its raw contents on both paths (untimed). */
function checkRoundTrip(stored: readonly Stored[], native: Decoder | null): void {
  const scratch = Buffer.allocUnsafe(1 << 20);
  for (const s of stored) {
    const js = s.type === CompressionType.None ? s.payload : decompressBlock(s.type, s.payload, MAX_DECODED_BYTES);
    if (!js.equals(s.raw)) throw new Error(`${compressionName(s.type)}: JavaScript decode differs`);
    if (native === null) continue;
    native(s, scratch);
    if (!scratch.subarray(0, s.raw.length).equals(s.raw)) throw new Error(`${compressionName(s.type)}: native decode differs`);
  }
}

interface Row {
  workload: string;
  codec: string;
  blocks: number;
  storedRatio: number;
  storedVsLz4: number;
  jsMicrosPerBlock: number;
  jsVsLz4: number;
  nativeMicrosPerBlock: number | null;
  nativeVsLz4: number | null;
}

const CODECS = [CompressionType.LZ4, CompressionType.Snappy, CompressionType.ZSTD, CompressionType.Zlib];

function measureWorkload(workload: string, blocks: readonly Buffer[], rounds: number): Row[] {
  const rawBytes = blocks.reduce((n, b) => n + b.length, 0);
  const rows: Row[] = [];
  let lz4: Row | null = null;
  for (const type of CODECS) {
    const stored = storeAll(blocks, type);
    const native = nativeDecoder(type);
    checkRoundTrip(stored, native);
    const storedRatio = stored.reduce((n, s) => n + s.payload.length, 0) / rawBytes;
    const jsMicrosPerBlock = timeDecode(stored, jsDecode, rounds);
    const nativeMicrosPerBlock = native === null ? null : timeDecode(stored, native, rounds);
    const base: Row = lz4 ?? ({ storedRatio, jsMicrosPerBlock, nativeMicrosPerBlock } as Row);
    const row: Row = {
      workload,
      codec: compressionName(type),
      blocks: blocks.length,
      storedRatio,
      storedVsLz4: storedRatio / base.storedRatio,
      jsMicrosPerBlock,
      jsVsLz4: jsMicrosPerBlock / base.jsMicrosPerBlock,
      nativeMicrosPerBlock,
      nativeVsLz4:
        nativeMicrosPerBlock === null || base.nativeMicrosPerBlock === null ? null : nativeMicrosPerBlock / base.nativeMicrosPerBlock,
    };
    if (lz4 === null) lz4 = row;
    rows.push(row);
  }
  return rows;
}

function fmt(v: number | null, digits: number): string {
  return v === null ? '-' : v.toFixed(digits);
}

function main(): void {
  const args = parseArgs(process.argv.slice(2));
  const workloads: Array<[string, Buffer[]]> = [
    ['trades.csv rows', buildBlocks(tradesRows(), args.blocks)],
    ['counters + 120 B half-random values', buildBlocks(counterRows(), args.blocks)],
  ];
  const rows = workloads.flatMap(([name, blocks]) => measureWorkload(name, blocks, args.rounds));
  if (args.json) {
    console.log(JSON.stringify({ nativeBlockCodec: nativeBlockCodecStatus, rows }, null, 2));
    return;
  }
  console.log(`native block codec: ${nativeBlockCodecStatus}`);
  console.log('workload | codec | blocks | stored/raw | vs LZ4 | JS µs/block | vs LZ4 | native µs/block | vs LZ4');
  for (const r of rows) {
    console.log(
      [
        r.workload,
        r.codec,
        r.blocks,
        fmt(r.storedRatio, 3),
        fmt(r.storedVsLz4, 2),
        fmt(r.jsMicrosPerBlock, 2),
        fmt(r.jsVsLz4, 2),
        fmt(r.nativeMicrosPerBlock, 2),
        fmt(r.nativeVsLz4, 2),
      ].join(' | '),
    );
  }
}

main();
