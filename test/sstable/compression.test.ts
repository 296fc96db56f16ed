/**
 * Every block compression the reader decodes and the writer writes (src/sstable/compression.ts),
 * without RocksDB's tools (test/sstable/compressionInterop.test.ts has those):
 * - each codec round-trips blocks through compressForBlock/decompressBlock; Zlib (read only)
 *   decodes raw deflate as RocksDB writes it;
 * - damaged payloads (flipped bytes, truncation, an over-stated size header) throw RangeError,
 *   never crash and never allocate by a hostile header;
 * - the native codec's Snappy decoder agrees with the snappy package on valid input and refuses
 *   hostile input;
 * - whole tables written with ZSTD and Snappy (inline and on the compression worker) read back on
 *   both paths (native on and off), and a flipped byte in a compressed data block is a
 *   CorruptionError naming the file and the block's offset on both.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { deflateRawSync } from 'zlib';
import { compressSync as snappyCompressSync } from 'snappy';
import {
  CompressionType,
  compressForBlock,
  decompressBlock,
  isReadableCompression,
  parseCompression,
  WRITABLE_COMPRESSION_NAMES,
} from '../../src/sstable/compression';
import { computeBlockChecksum } from '../../src/sstable/checksum';
import { nativeBlockCodec, isNativeCodecError } from '../../src/sstable/nativeBlockCodec';
import { describeIfNative } from '../support/native';
import { TableReader } from '../../src/sstable/reader/tableReader';
import { SstFileWriter } from '../../src/sstwriter/sstFileWriter';
import { encodeVarint } from '../../src/util/coding';
import { CorruptionError } from '../../src/util/errors';
import { mulberry32 } from '../../src/util/random';

const MAX = 1 << 30;

function randomBytes(length: number, seed: number): Buffer {
  const next = mulberry32(seed);
  const out = Buffer.allocUnsafe(length);
  for (let i = 0; i < length; i++) out[i] = Math.floor(next() * 256);
  return out;
}

/** Text-like block contents that every codec compresses well below 7/8. */
function compressible(length: number, seed: number): Buffer {
  const next = mulberry32(seed);
  const words = ['trade', 'price', '2005-08-10', 'Dana Chen', '|', '0', '500', 'CMPT', 'TMS'];
  let s = '';
  while (s.length < length) s += words[Math.floor(next() * words.length)] + (next() < 0.3 ? String(Math.floor(next() * 1e4)) : '');
  return Buffer.from(s.slice(0, length));
}

/** RocksDB's Zlib block: varint32 size ‖ raw deflate (window_bits -14). */
function zlibBlock(raw: Buffer): Buffer {
  return Buffer.concat([encodeVarint(raw.length), deflateRawSync(raw, { windowBits: 14 })]);
}

const WRITTEN = [CompressionType.LZ4, CompressionType.ZSTD, CompressionType.Snappy] as const;

describe('codecs', () => {
  test('parseCompression takes every writable name; Zlib, BZip2 and Xpress are not writable', () => {
    expect(WRITABLE_COMPRESSION_NAMES).toEqual(['lz4', 'zstd', 'snappy', 'none']);
    expect(parseCompression('ZSTD')).toBe(CompressionType.ZSTD);
    expect(parseCompression('snappy')).toBe(CompressionType.Snappy);
    expect(parseCompression('no')).toBe(CompressionType.None);
    expect(() => parseCompression('zlib')).toThrow(/expected lz4, zstd, snappy, none/);
    expect(isReadableCompression(CompressionType.Zlib)).toBe(true);
    expect(isReadableCompression(CompressionType.BZip2)).toBe(false);
    expect(isReadableCompression(CompressionType.Xpress)).toBe(false);
  });

  test.each(WRITTEN)('compression type %i round-trips blocks of 0..64 KiB and stores incompressible ones raw', (type) => {
    for (const [i, length] of [1, 17, 100, 4096, 4096 + 13, 65536].entries()) {
      const raw = compressible(length, i + 1);
      const stored = compressForBlock(type, raw, 5);
      if (length >= 4096) expect(stored).not.toBeNull();
      if (stored !== null) expect(decompressBlock(type, stored, MAX).equals(raw)).toBe(true);
    }
    expect(compressForBlock(type, randomBytes(4096, 7), 5)).toBeNull(); // does not save 1/8
  });

  test('Zlib blocks as RocksDB writes them decode; ZSTDNotFinal decodes as ZSTD', () => {
    const raw = compressible(5000, 3);
    expect(decompressBlock(CompressionType.Zlib, zlibBlock(raw), MAX).equals(raw)).toBe(true);
    expect(decompressBlock(CompressionType.Zlib, zlibBlock(Buffer.alloc(0)), MAX).length).toBe(0);
    const zstd = compressForBlock(CompressionType.ZSTD, raw, 5)!;
    expect(decompressBlock(CompressionType.ZSTDNotFinal, zstd, MAX).equals(raw)).toBe(true);
  });

  test('damaged payloads throw RangeError: every truncation, flipped bytes, over-stated sizes', () => {
    const raw = compressible(4096, 11);
    const payloads: Array<[CompressionType, Buffer]> = [
      [CompressionType.Snappy, compressForBlock(CompressionType.Snappy, raw, 5)!],
      [CompressionType.ZSTD, compressForBlock(CompressionType.ZSTD, raw, 5)!],
      [CompressionType.Zlib, zlibBlock(raw)],
      [CompressionType.LZ4, compressForBlock(CompressionType.LZ4, raw, 5)!],
    ];
    for (const [type, payload] of payloads) {
      for (let cut = 0; cut < payload.length; cut += 7) {
        expect(() => decompressBlock(type, payload.subarray(0, cut), MAX)).toThrow(RangeError);
      }
      // A size header of 1 GiB - 1 for a 4 KiB payload is refused before anything is allocated
      // (ZSTD has no expansion bound: the caller's limit stops it).
      const huge = Buffer.concat([encodeVarint(MAX - 1), payload.subarray(2)]); // 4096 takes 2 varint bytes
      expect(() => decompressBlock(type, huge, 1 << 20)).toThrow(/implausible|size header/);
      // Flipped bytes: either an error or (rarely, in literals) other contents of the right size.
      for (let i = 0; i < payload.length; i += 3) {
        const bad = Buffer.from(payload);
        bad[i] ^= 0x5a;
        try {
          expect(decompressBlock(type, bad, MAX).length).toBeLessThanOrEqual(MAX);
        } catch (e) {
          expect(e).toBeInstanceOf(RangeError);
        }
      }
    }
  });
});

describeIfNative('native Snappy decoder', () => {
  const codec = nativeBlockCodec!;

  test('agrees with the snappy package on 300 blocks of every kind of content', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const length = seed * 37;
      const raw = seed % 3 === 0 ? randomBytes(length, seed) : seed % 3 === 1 ? compressible(length, seed) : Buffer.alloc(length, seed);
      const payload = snappyCompressSync(raw);
      const out = Buffer.alloc(raw.length);
      codec.snappyDecodeInto(payload, 0, payload.length, out);
      expect(out.equals(raw)).toBe(true);
    }
  });

  test('hostile input is SNAPPY_MALFORMED, never a crash or a write outside dst', () => {
    const raw = compressible(4096, 5);
    const payload = snappyCompressSync(raw);
    const expectMalformed = (src: Buffer, dstBytes: number): void => {
      const dst = Buffer.alloc(dstBytes + 64, 0xee);
      try {
        codec.snappyDecodeInto(src, 0, src.length, dst.subarray(0, dstBytes));
      } catch (e) {
        expect(isNativeCodecError(e) && e.code === 'SNAPPY_MALFORMED').toBe(true);
      }
      expect(dst.subarray(dstBytes).every((b) => b === 0xee)).toBe(true);
    };
    for (let cut = 0; cut < payload.length; cut += 5) expectMalformed(payload.subarray(0, cut), raw.length);
    for (let i = 0; i < payload.length; i += 2) {
      const bad = Buffer.from(payload);
      bad[i] ^= 0xa5;
      expectMalformed(bad, raw.length);
    }
    for (let seed = 1; seed <= 200; seed++) expectMalformed(Buffer.concat([encodeVarint(4096), randomBytes(300, seed)]), 4096);
    expect(() => codec.snappyDecodeInto(payload, 0, payload.length, Buffer.alloc(raw.length - 1))).toThrow(/preamble/);
  });
});

describe('tables written with ZSTD and Snappy', () => {
  let dir = '';
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sst-compression-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const entries: Array<[Buffer, Buffer]> = [];
  for (let i = 0; i < 5000; i++) entries.push([Buffer.from(`key-${String(i).padStart(6, '0')}`), compressible(20 + (i % 200), i)]);

  function write(name: string, compression: CompressionType, backgroundCompression: boolean): string {
    const file = path.join(dir, name);
    const w = new SstFileWriter(file, { compression, backgroundCompression });
    for (const [k, v] of entries) w.put(k, v);
    w.finish();
    return file;
  }

  function readAll(file: string, useNativeCodec: boolean): Array<[Buffer, Buffer]> {
    const r = TableReader.open(file, { useNativeCodec });
    const out: Array<[Buffer, Buffer]> = [];
    try {
      const it = r.newIterator();
      for (it.first(); it.valid(); it.next()) out.push([Buffer.from(it.key().subarray(0, it.key().length - 8)), Buffer.from(it.value())]);
      it.close();
      expect(r.properties.compressionName).toMatch(/^(ZSTD|Snappy)$/);
      r.verify();
    } finally {
      r.close();
    }
    return out;
  }

  test.each([
    ['zstd', CompressionType.ZSTD],
    ['snappy', CompressionType.Snappy],
  ] as const)('%s: inline and worker-compressed files are identical and read back on both paths', (name, type) => {
    const inline = write(`${name}-inline.sst`, type, false);
    const worker = write(`${name}-worker.sst`, type, true);
    // The data blocks are the same bytes (the properties differ: session ids, times).
    const dataBytes = (file: string): Buffer => {
      const r = TableReader.open(file);
      const size = r.properties.dataSize;
      r.close();
      return fs.readFileSync(file).subarray(0, size);
    };
    expect(dataBytes(inline).equals(dataBytes(worker))).toBe(true);
    expect(fs.statSync(inline).size).toBeLessThan(fs.statSync(write(`${name}-none.sst`, CompressionType.None, false)).size * 0.8);
    for (const useNativeCodec of [true, false]) {
      const got = readAll(inline, useNativeCodec);
      expect(got.length).toBe(entries.length);
      expect(got.every(([k, v], i) => k.equals(entries[i][0]) && v.equals(entries[i][1]))).toBe(true);
    }
  });

  test.each([
    ['zstd', CompressionType.ZSTD],
    ['snappy', CompressionType.Snappy],
  ] as const)('%s: a damaged compressed data block is a CorruptionError naming the file and offset, on both paths', (name, type) => {
    const file = write(`${name}-damaged-src.sst`, type, false);
    const probe = TableReader.open(file);
    const index = probe.newIndexIterator();
    index.first();
    index.next(); // the second data block, so the offset is not 0
    const { handleOffset, handleSize } = index;
    const checksumType = probe.footer.checksumType;
    probe.close();
    const bytes = fs.readFileSync(file);
    expect(bytes[handleOffset + handleSize]).toBe(type);
    // Off-by-one the payload's size header (both codecs start with a varint32 of the decoded
    // size; the low bit keeps it a valid varint) and fix the checksum, so only the decoder can
    // notice. (A flipped literal byte would go unnoticed: neither format checks its contents.)
    bytes[handleOffset] ^= 0x01;
    bytes.writeUInt32LE(
      computeBlockChecksum(checksumType, bytes, handleOffset, handleOffset + handleSize, type),
      handleOffset + handleSize + 1,
    );
    const damaged = path.join(dir, `${name}-damaged.sst`);
    fs.writeFileSync(damaged, bytes);
    for (const useNativeCodec of [true, false]) {
      let error: unknown = null;
      try {
        readAll(damaged, useNativeCodec);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CorruptionError);
      expect((error as Error).message).toMatch(
        new RegExp(`${name}-damaged\\.sst at offset ${handleOffset}: data block does not decompress`),
      );
    }
  });
});
