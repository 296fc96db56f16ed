/**
 * The native block codec (native/sstableExports.c through src/sstable/nativeBlockCodec.ts) against
 * the JavaScript packages it stands in for: XXH3 against @node-rs/xxhash, LZ4 decoding against
 * lz4-napi's own output, hostile LZ4 input, LZ4 encoding decoded back by lz4-napi and by the
 * native decoder (and its output bound), and whole-table reads with the codec on and off,
 * including the error every flipped byte of a file gives. (The addon's page and writeback hints
 * are test/util/nativeUtil.test.ts; its import functions are tested under test/ingest/.)
 *
 * When the addon is not built the suites say why and skip, unless SST_INGEST_REQUIRE_NATIVE=1
 * (set by .ci/run), where they fail (test/support/native.ts).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { spawnSync } from 'child_process';
import { xxh3 } from '@node-rs/xxhash';
import { compressSync, uncompressSync } from 'lz4-napi';
import { nativeBlockCodec, nativeBlockCodecStatus, isNativeCodecError } from '../../src/sstable/nativeBlockCodec';
import { SstFileWriter } from '../../src/sstwriter/sstFileWriter';
import { ChecksumType } from '../../src/sstable/checksum';
import { CompressionType } from '../../src/sstable/compression';
import { TableReader } from '../../src/sstable/reader/tableReader';
import { ARENA_SLAB_BYTES, BlockArena } from '../../src/sstable/reader/blockArena';
import { BlockCache } from '../../src/sstable/reader/blockCache';
import { mulberry32 } from '../../src/util/random';
import { REPO_ROOT } from '../support/paths';
import { describeIfNative, nativeRequired } from '../support/native';

const ROOT = REPO_ROOT;

it('the native codec is loaded when required, and says why not otherwise', () => {
  if (nativeRequired) expect(nativeBlockCodecStatus).toMatch(/^loaded /);
  expect(nativeBlockCodecStatus.startsWith('loaded ')).toBe(nativeBlockCodec !== null);
});

const codec = nativeBlockCodec!;

function randomBuffer(length: number, seed: number): Buffer {
  const next = mulberry32(seed);
  const out = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) out[i] = Math.floor(next() * 256);
  return out;
}

/** Bytes that compress: short random words repeated at random distances, plus runs. */
function compressibleBuffer(length: number, seed: number): Buffer {
  const next = mulberry32(seed);
  const out = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) {
    const r = next();
    if (i > 0 && r < 0.6) out[i] = out[Math.max(0, i - 1 - Math.floor(next() * 64))];
    else if (r < 0.7)
      out[i] = i > 0 ? out[i - 1] : 0; // runs: overlapping matches
    else out[i] = 97 + Math.floor(next() * 8);
  }
  return out;
}

/** A table of keys 0..entries-1 (8-byte big-endian) with XXH3 checksums and the values given. */
function writeTable(
  file: string,
  entries: number,
  compression: CompressionType,
  blockSizeBytes: number,
  valueOf: (i: number) => Buffer,
): string {
  const w = new SstFileWriter(file, { compression, checksumType: ChecksumType.XXH3, blockSizeBytes });
  for (let i = 0; i < entries; i++) {
    const key = Buffer.alloc(8);
    key.writeUInt32BE(i, 4);
    w.put(key, valueOf(i));
  }
  w.finish();
  return file;
}

/** lz4-napi's raw LZ4 block of `raw` (it prefixes a u32le size, dropped here). */
function lz4Raw(raw: Buffer): Buffer {
  return compressSync(raw).subarray(4);
}

describeIfNative('XXH3', () => {
  it('equals @node-rs/xxhash for every length 0..2100 at odd offsets, and for large inputs', () => {
    const bytes = randomBuffer(2100 + 8, 7);
    for (let length = 0; length <= 2100; length++) {
      const start = length % 5;
      const want = Number(BigInt.asUintN(32, xxh3.xxh64(bytes.subarray(start, start + length))));
      expect(codec.xxh3Low32(bytes, start, start + length)).toBe(want);
    }
    for (const length of [4096, 65536, 1_000_003]) {
      const big = randomBuffer(length, length);
      expect(codec.xxh3Low32(big, 0, length)).toBe(Number(BigInt.asUintN(32, xxh3.xxh64(big))));
    }
  });

  it('rejects ranges outside the buffer', () => {
    const b = Buffer.alloc(8);
    expect(() => codec.xxh3Low32(b, 0, 9)).toThrow(/index out of range/);
    expect(() => codec.xxh3Low32(b, 5, 4)).toThrow(/start > end/);
  });
});

describeIfNative('LZ4 decoding', () => {
  it("decodes lz4-napi's blocks of every shape exactly", () => {
    let cases = 0;
    for (let length = 0; length < 5000; length += length < 300 ? 1 : 53) {
      for (const raw of [randomBuffer(length, length + 1), compressibleBuffer(length, length + 2), Buffer.alloc(length, 0x61)]) {
        const compressed = lz4Raw(raw);
        const framed = Buffer.concat([Buffer.from([1, 2, 3]), compressed, Buffer.from([9])]);
        const out = Buffer.alloc(raw.length, 0xee);
        codec.lz4DecodeInto(framed, 3, 3 + compressed.length, out);
        expect(out.equals(raw)).toBe(true);
        cases++;
      }
    }
    expect(cases).toBeGreaterThan(900);
  });

  it('rejects a wrong decoded size, truncation and every corrupted byte without reading or writing out of bounds', () => {
    const raw = compressibleBuffer(4096, 99);
    const compressed = lz4Raw(raw);
    expect(compressed.length).toBeLessThan(raw.length);
    for (const size of [raw.length - 1, raw.length + 1, 0]) {
      expect(() => codec.lz4DecodeInto(compressed, 0, compressed.length, Buffer.alloc(size))).toThrow(/LZ4/);
    }
    for (let cut = 0; cut < compressed.length; cut++) {
      expect(() => codec.lz4DecodeInto(compressed, 0, cut, Buffer.alloc(raw.length))).toThrow(/LZ4/);
    }
    // Every byte replaced by a few values: the decode either fails with LZ4_MALFORMED or fills
    // exactly the output (a literal byte changed). The output sits between guard bytes that must
    // survive, so a write out of bounds would show.
    let failed = 0;
    let decoded = 0;
    const arena = Buffer.alloc(raw.length + 64, 0x5a);
    const out = arena.subarray(32, 32 + raw.length);
    for (let i = 0; i < compressed.length; i++) {
      for (const v of [0x00, 0xff, compressed[i] ^ 0x10]) {
        const bad = Buffer.from(compressed);
        bad[i] = v;
        try {
          codec.lz4DecodeInto(bad, 0, bad.length, out);
          decoded++;
        } catch (e) {
          expect(isNativeCodecError(e) && e.code).toBe('LZ4_MALFORMED');
          failed++;
        }
        expect(arena.subarray(0, 32).every((b) => b === 0x5a)).toBe(true);
        expect(arena.subarray(32 + raw.length).every((b) => b === 0x5a)).toBe(true);
      }
    }
    expect(failed).toBeGreaterThan(0);
    expect(failed + decoded).toBe(3 * compressed.length);
  });
});

/** LZ4-encodes src with the native encoder into room for `capacity` bytes: the block, or null. */
function nativeEncode(src: Buffer, capacity: number): Buffer | null {
  const dst = Buffer.alloc(capacity + 16, 0xee);
  const n = codec.lz4EncodeInto(src, 0, src.length, dst, 8, 8 + capacity);
  // Nothing is written outside dst[8, 8 + capacity).
  expect(dst.subarray(0, 8).every((b) => b === 0xee)).toBe(true);
  expect(dst.subarray(8 + capacity).every((b) => b === 0xee)).toBe(true);
  return n === 0 ? null : dst.subarray(8, 8 + n);
}

/** lz4-napi's decoder takes its u32le size prefix before the raw block. */
function lz4NapiDecode(block: Buffer, size: number): Buffer {
  const framed = Buffer.allocUnsafe(4 + block.length);
  framed.writeUInt32LE(size, 0);
  block.copy(framed, 4);
  return uncompressSync(framed);
}

describeIfNative('LZ4 encoding', () => {
  it('every shape decodes back exactly through lz4-napi and the native decoder', () => {
    const inputs: Buffer[] = [];
    for (let len = 0; len < 300; len++) {
      inputs.push(randomBuffer(len, len), compressibleBuffer(len, len + 7), Buffer.alloc(len, 0x41));
    }
    for (const len of [4095, 4096, 4097, 65535, 65536, 70000, 300_000]) {
      inputs.push(randomBuffer(len, len), compressibleBuffer(len, len + 1), Buffer.alloc(len, 0));
    }
    for (const src of inputs) {
      const block = nativeEncode(src, src.length + Math.ceil(src.length / 255) + 16);
      expect(block).not.toBeNull();
      const b = block as Buffer;
      expect(lz4NapiDecode(b, src.length).equals(src)).toBe(true);
      const back = Buffer.alloc(src.length);
      codec.lz4DecodeInto(b, 0, b.length, back);
      expect(back.equals(src)).toBe(true);
    }
  });

  it('compresses about as well as lz4-napi (liblz4-compatible) on compressible data', () => {
    // Text like a data block of CSV rows: repeated field values, random digits.
    const next = mulberry32(5);
    const rows: string[] = [];
    for (let i = 0; i < 2000; i++) {
      rows.push(
        `${200000000000000 + Math.floor(next() * 1e6)}|2024-01-0${1 + (i % 9)}|CMPT|${['SBUY', 'SSEL', 'TLB'][i % 3]}|${Math.floor(next() * 1e5)}.${i % 100}|`,
      );
    }
    const text = Buffer.from(rows.join('\n'));
    for (let start = 0; start + 4096 <= text.length; start += 4096) {
      const src = text.subarray(start, start + 4096);
      const ours = nativeEncode(src, 8192) as Buffer;
      const theirs = compressSync(src).length - 4;
      expect(theirs).toBeLessThan(src.length * 0.8);
      expect(ours.length).toBeLessThanOrEqual(Math.ceil(theirs * 1.05));
    }
  });

  it('returns 0 instead of writing past a capacity that is too small', () => {
    const src = compressibleBuffer(4096, 9);
    const fits = nativeEncode(src, 8192) as Buffer;
    expect(nativeEncode(src, fits.length)?.equals(fits)).toBe(true);
    for (const capacity of [0, 1, 10, fits.length - 1]) expect(nativeEncode(src, capacity)).toBeNull();
    // Incompressible input does not fit in less than its own size.
    const noise = randomBuffer(4096, 10);
    expect(nativeEncode(noise, 4096 - 512)).toBeNull();
  });

  it('rejects ranges outside the buffers', () => {
    const src = Buffer.alloc(100);
    const dst = Buffer.alloc(200);
    expect(() => codec.lz4EncodeInto(src, 0, 101, dst, 0, 200)).toThrow(/out of range/);
    expect(() => codec.lz4EncodeInto(src, 50, 10, dst, 0, 200)).toThrow(/start > end/);
    expect(() => codec.lz4EncodeInto(src, 0, 100, dst, 0, 201)).toThrow(/out of range/);
  });
});

describeIfNative('tables read with and without the codec', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'native-codec-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  function writeRandomTable(name: string, entries: number, compression: CompressionType): string {
    const next = mulberry32(entries);
    return writeTable(path.join(dir, name), entries, compression, 512, (i) =>
      Buffer.from(`value-${i}-${'x'.repeat(Math.floor(next() * 40))}`),
    );
  }

  /** Every entry of a table as "keyHex=valueHex" lines, or the error reading it threw. */
  function readAll(file: string, useNativeCodec: boolean): string {
    try {
      const r = TableReader.open(file, { useNativeCodec });
      try {
        const it = r.newIterator();
        const lines: string[] = [];
        for (it.first(); it.valid(); it.next())
          lines.push(`${Buffer.from(it.key()).toString('hex')}=${Buffer.from(it.value()).toString('hex')}`);
        it.close();
        return lines.join('\n');
      } finally {
        r.close();
      }
    } catch (e) {
      const err = e as { name?: string; code?: string; message?: string };
      return `${err.name}/${err.code}: ${err.message}`;
    }
  }

  it.each([['lz4'], ['none']] as const)('%s: both paths read the same entries', (compression) => {
    const file = writeRandomTable(`same-${compression}.sst`, 3000, compression === 'lz4' ? CompressionType.LZ4 : CompressionType.None);
    const viaNative = readAll(file, true);
    expect(viaNative.split('\n')).toHaveLength(3000);
    expect(viaNative).toBe(readAll(file, false));
  });

  it('every flipped byte gives the same entries or the same error on both paths', () => {
    const file = writeRandomTable('flip.sst', 60, CompressionType.LZ4);
    const original = fs.readFileSync(file);
    const flipped = path.join(dir, 'flipped.sst');
    let errors = 0;
    for (let i = 0; i < original.length; i++) {
      const bad = Buffer.from(original);
      bad[i] ^= 0x41;
      fs.writeFileSync(flipped, bad);
      const viaNative = readAll(flipped, true);
      expect({ byte: i, result: viaNative }).toEqual({ byte: i, result: readAll(flipped, false) });
      if (/Corruption|CORRUPTION/.test(viaNative)) errors++;
    }
    expect(errors).toBeGreaterThan(original.length / 2);
  });
});

describeIfNative('the data-block arena', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'block-arena-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** A table of `entries` keys with compressible values of `valueBytes`, in blocks of `blockSizeBytes`. */
  function writeCompressibleTable(name: string, entries: number, valueBytes: number, blockSizeBytes: number): string {
    return writeTable(path.join(dir, name), entries, CompressionType.LZ4, blockSizeBytes, (i) => compressibleBuffer(valueBytes, i + 1));
  }

  /** The file's data block handles, from the index. */
  function dataBlockHandles(file: string): Array<{ offset: number; size: number }> {
    const r = TableReader.open(file, { useNativeCodec: false });
    try {
      const index = r.newIndexIterator();
      const handles: Array<{ offset: number; size: number }> = [];
      for (index.first(); index.valid(); index.next()) handles.push({ offset: index.handleOffset, size: index.handleSize });
      return handles;
    } finally {
      r.close();
    }
  }

  it('carves consecutive blocks out of shared slabs without overlap, and gives big blocks their own memory', () => {
    const file = writeCompressibleTable('arena.sst', 400, 100, 1024);
    const handles = dataBlockHandles(file);
    expect(handles.length).toBeGreaterThan(40);
    const arena = new BlockArena(ARENA_SLAB_BYTES);
    const fd = fs.openSync(file, 'r');
    try {
      const views = handles.map((h) => arena.readBlock(codec, fd, h.offset, h.size, ChecksumType.XXH3, true, 1 << 30));
      // Same contents as a block read into memory of its own.
      handles.forEach((h, i) =>
        expect(views[i].equals(codec.readBlock(fd, h.offset, h.size, ChecksumType.XXH3, true, 1 << 30))).toBe(true),
      );
      // Views of one slab never overlap, and slabs are shared by many blocks.
      const bySlab = new Map<ArrayBufferLike, Buffer[]>();
      for (const v of views) bySlab.set(v.buffer, [...(bySlab.get(v.buffer) ?? []), v]);
      expect(bySlab.size).toBeLessThan(views.length / 8);
      for (const [slab, vs] of bySlab) {
        expect(slab.byteLength).toBe(ARENA_SLAB_BYTES);
        const sorted = [...vs].sort((a, b) => a.byteOffset - b.byteOffset);
        for (let i = 1; i < sorted.length; i++)
          expect(sorted[i].byteOffset).toBeGreaterThanOrEqual(sorted[i - 1].byteOffset + sorted[i - 1].length);
      }
      // A tiny arena: every block is over a quarter of a slab, so each gets its own memory.
      const tiny = new BlockArena(1024);
      const own = handles.slice(0, 5).map((h) => tiny.readBlock(codec, fd, h.offset, h.size, ChecksumType.XXH3, true, 1 << 30));
      expect(new Set(own.map((v) => v.buffer)).size).toBe(own.length);
    } finally {
      fs.closeSync(fd);
    }
  });

  it('slabs do not outlive the cache: after many random reads, live block memory stays near the cache size', () => {
    // 600 blocks of about 1 KiB, read at random 20,000 times through a 64 KiB cache: the arena
    // allocates hundreds of slabs; once garbage is collected only those holding cached blocks
    // (and the cache's own copies of blocks it hit) may survive.
    const file = writeCompressibleTable('memory.sst', 6000, 100, 1024);
    const cacheBytes = 64 * 1024;
    const child = spawnSync(
      process.execPath,
      [
        '--expose-gc',
        '--require',
        path.join(ROOT, 'test/support/swc-register.js'),
        path.join(ROOT, 'test/support/arenaMemoryChild.ts'),
        file,
        String(cacheBytes),
        '20000',
      ],
      {
        encoding: 'utf8',
      },
    );
    expect(child.stderr).toBe('');
    const got = JSON.parse(child.stdout) as {
      blocks: number;
      buffersSeen: number;
      aliveBuffers: number;
      aliveBytes: number;
      cacheUsageBytes: number;
    };
    console.log(
      `arena memory: ${got.buffersSeen} buffers used for ${got.blocks} blocks; alive after GC: ${got.aliveBuffers} (${got.aliveBytes} bytes) for a ${cacheBytes}-byte cache using ${got.cacheUsageBytes}`,
    );
    expect(got.blocks).toBeGreaterThan(500);
    expect(got.buffersSeen).toBeGreaterThan(100);
    expect(got.aliveBytes).toBeLessThanOrEqual(2 * cacheBytes + 2 * ARENA_SLAB_BYTES);
  });

  it('a block hit in the cache leaves its slab, with the same contents', () => {
    const file = writeCompressibleTable('hot.sst', 400, 100, 1024);
    const handles = dataBlockHandles(file);
    const cache = new BlockCache(1 << 20);
    const r = TableReader.open(file, { blockCache: cache });
    try {
      const first = r.loadDataBlock(handles[3].offset, handles[3].size);
      const neighbour = r.loadDataBlock(handles[4].offset, handles[4].size);
      const before = first.block.data;
      expect(before.buffer).toBe(neighbour.block.data.buffer); // both in one slab
      first.release();
      const hit = r.loadDataBlock(handles[3].offset, handles[3].size);
      expect(hit.block).toBe(first.block);
      expect(hit.block.data.buffer).not.toBe(neighbour.block.data.buffer);
      expect(hit.block.data.equals(before)).toBe(true);
      hit.release();
      neighbour.release();
    } finally {
      r.close();
    }
  });
});
