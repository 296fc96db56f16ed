/**
 * The block read path's fast codecs against their reference implementations: XXH3 checksums on
 * hash-wasm against @node-rs/xxhash, and LZ4 decoding in place against the copying decoder.
 */
import { xxh3 } from '@node-rs/xxhash';
import { checksumsReady, ChecksumType, computeBlockChecksum } from '../../src/sstable/checksum';
import {
  CompressionType,
  LZ4_NAPI_SIZE_BYTES,
  lz4CompressForBlock,
  lz4DecompressBlock,
  lz4DecompressBlockInPlace,
} from '../../src/sstable/compression';

/** Deterministic pseudo-random bytes (xorshift32). */
function randomBytes(length: number, seed: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/** RocksDB's XXH3 block checksum computed with @node-rs/xxhash (the slow reference). */
function referenceXxh3(data: Buffer, typeByte: number): number {
  const h = Number(BigInt.asUintN(32, xxh3.xxh64(data)));
  return (h ^ Math.imul(typeByte, 0x6b9083d9)) >>> 0;
}

describe('XXH3 block checksums', () => {
  it('match @node-rs/xxhash for every length 0..5000 at unaligned offsets', async () => {
    await checksumsReady;
    const bytes = randomBytes(5000 + 16, 0x1234567);
    for (let length = 0; length <= 5000; length++) {
      const start = length % 7;
      const type = length % 3 === 0 ? CompressionType.LZ4 : CompressionType.None;
      const data = bytes.subarray(start, start + length);
      expect(computeBlockChecksum(ChecksumType.XXH3, bytes, start, start + length, type)).toBe(referenceXxh3(data, type));
    }
  });
});

describe('lz4DecompressBlockInPlace', () => {
  /** Compressible block-like contents: random runs, each repeated. */
  function compressible(length: number, seed: number): Buffer {
    const out = Buffer.allocUnsafe(length);
    const piece = randomBytes(16, seed);
    for (let i = 0; i < length; i++) out[i] = piece[i % 16] ^ (i >> 10);
    return out;
  }

  it('decodes what lz4DecompressBlock decodes, for short and long size headers', () => {
    for (const length of [60, 127, 128, 4096, 20000, 300000]) {
      const raw = compressible(length, length);
      const payload = lz4CompressForBlock(raw, 5);
      expect(payload).not.toBeNull();
      const p = payload as Buffer;
      const frame = Buffer.alloc(LZ4_NAPI_SIZE_BYTES + p.length + 3);
      p.copy(frame, LZ4_NAPI_SIZE_BYTES);
      expect(lz4DecompressBlock(p, 5).equals(raw)).toBe(true);
      const out = lz4DecompressBlockInPlace(frame, LZ4_NAPI_SIZE_BYTES, LZ4_NAPI_SIZE_BYTES + p.length, 5);
      expect(out.equals(raw)).toBe(true);
    }
  });

  it('rejects a payload without room for the size prefix, and a corrupt body', () => {
    const raw = compressible(4096, 7);
    const p = lz4CompressForBlock(raw, 5) as Buffer;
    expect(() => lz4DecompressBlockInPlace(p, 0, p.length, 5)).toThrow(RangeError);
    const frame = Buffer.alloc(LZ4_NAPI_SIZE_BYTES + p.length);
    p.copy(frame, LZ4_NAPI_SIZE_BYTES);
    frame.fill(0xff, frame.length - 40); // garbage tokens at the end of the body
    expect(() => lz4DecompressBlockInPlace(frame, LZ4_NAPI_SIZE_BYTES, frame.length, 5)).toThrow(RangeError);
  });
});
