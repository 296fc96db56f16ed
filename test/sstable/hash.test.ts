/**
 * Hash functions of the table format: RocksDB's Hash32 (legacy Bloom, data-block hash index) and
 * XXPH3 (FastLocalBloom).
 *
 * Expected values come from RocksDB 7.8.3 itself (`rocksdb::Hash` and `rocksdb::Hash64` called
 * from a small C++ program linked against librocksdb) or from the format spec's worked examples;
 * the fast XXPH3 is additionally cross-checked against the BigInt reference transcription on
 * pseudo-random inputs of every length class.
 */
import { DATA_BLOCK_HASH_INDEX_SEED, LEGACY_BLOOM_HASH_SEED, hash32, xxph3, xxph3Result } from '../../src/sstable/hash';
import { xxph3Reference } from '../support/xxph3Reference';

const ascii = (s: string): Buffer => Buffer.from(s, 'latin1');
const hex = (s: string): Buffer => Buffer.from(s, 'hex');

/** XXPH3 of data[start, end) as a hex string, through the fast implementation. */
function fastHex(data: Uint8Array, start = 0, end = data.length): string {
  xxph3(data, start, end);
  return ((BigInt(xxph3Result.hi) << 32n) | BigInt(xxph3Result.lo)).toString(16).padStart(16, '0');
}

/** Deterministic pseudo-random bytes (xorshift32), so failures reproduce. */
function pseudoRandomBytes(length: number, seed: number): Buffer {
  const out = Buffer.alloc(length);
  let x = seed | 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** The input pattern of the RocksDB-computed vectors below: byte i = (i * 131 + 7) mod 256. */
function patternBytes(length: number): Buffer {
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i++) out[i] = (i * 131 + 7) & 0xff;
  return out;
}

/** Hash32 transcribed from its definition in BigInt modular arithmetic (no 32-bit tricks). */
function hash32Model(data: Uint8Array, seed: number): number {
  const m = 0xc6a4a793n;
  const mod = 1n << 32n;
  let h = (BigInt(seed) ^ ((BigInt(data.length) * m) % mod)) % mod;
  let i = 0;
  for (; i + 4 <= data.length; i += 4) {
    const w = BigInt(data[i] + data[i + 1] * 256 + data[i + 2] * 65536 + data[i + 3] * 16777216);
    h = ((h + w) * m) % mod;
    h ^= h >> 16n;
  }
  const sx = (b: number): bigint => BigInt(b >= 128 ? 0x100000000 - 256 + b : b);
  const tail = data.length - i;
  if (tail > 0) {
    if (tail === 3) h = (h + (sx(data[i + 2]) << 16n)) % mod;
    if (tail >= 2) h = (h + (sx(data[i + 1]) << 8n)) % mod;
    h = ((h + sx(data[i])) * m) % mod;
    h ^= h >> 24n;
  }
  return Number(h);
}

describe('XXPH3', () => {
  test('spec vectors: "abc", empty input, "key000"', () => {
    expect(fastHex(ascii('abc'))).toBe('d39eeb71bb5342e8');
    expect(fastHex(Buffer.alloc(0))).toBe('5342c3010fe1dd04');
    expect(fastHex(ascii('key000'))).toBe('31689d16643f1223');
    expect(xxph3Reference(ascii('abc'))).toBe(0xd39eeb71bb5342e8n);
    expect(xxph3Reference(Buffer.alloc(0))).toBe(0x5342c3010fe1dd04n);
    expect(xxph3Reference(ascii('key000'))).toBe(0x31689d16643f1223n);
  });

  test('is not the released XXH3 (which gives 0x78af5f94892f3950 for "abc")', () => {
    expect(fastHex(ascii('abc'))).not.toBe('78af5f94892f3950');
  });

  // rocksdb::Hash64 (= XXPH3) of patternBytes(length), one per branch and boundary.
  const rocksdbVectors: Array<[number, string]> = [
    [1, 'b71d295c7865c7e9'],
    [2, '777096a9131e825d'],
    [3, '8b93d65306b47960'],
    [4, '640dfa78d9602caa'],
    [5, '407604ac2e18c141'],
    [7, '238a82301009f53f'],
    [8, 'e02bb0260ca2f426'],
    [9, '82e27d91ecbde0e3'],
    [15, '42742cff0156771e'],
    [16, '808dc7f6a08e1828'],
    [17, '6216c07c87bfe5d1'],
    [31, 'bd66bc2da03a2366'],
    [32, 'f1baab985ecf232e'],
    [33, '48c3ee9be5231873'],
    [64, 'ec9764f4fa2586fd'],
    [65, '070482c3b1bc6389'],
    [96, '8bf55ea9f6da04e5'],
    [97, '682d0b1bfce2169d'],
    [127, '95709ca17c3e6735'],
    [128, 'b885f0d2689835e1'],
    [129, 'fe146eb2e99b1a68'],
    [160, '090f530ba8a18786'],
    [239, 'c3cece2158c77b46'],
    [240, 'ddce7abbd046abf1'],
    [241, 'b1e53475de84b071'],
    [255, 'dd49cac5ccf4b3d0'],
    [256, 'd4e21b1ad9fad6c0'],
    [1023, '836424161aeef716'],
    [1024, '144aa676708da11c'],
    [1025, '621058c4914d5089'],
    [1088, '28c9bdc58de042c5'],
    [2049, '5400141362550599'],
    [4097, 'f35baeaf45fc02a5'],
  ];

  test.each(rocksdbVectors)('matches RocksDB for %i bytes', (length, expected) => {
    const data = patternBytes(length);
    expect(fastHex(data)).toBe(expected);
    expect(xxph3Reference(data).toString(16).padStart(16, '0')).toBe(expected);
  });

  test('fast path equals the BigInt reference on random data of every length 0..300', () => {
    for (let length = 0; length <= 300; length++) {
      for (let round = 0; round < 3; round++) {
        const data = pseudoRandomBytes(length, length * 7919 + round + 1);
        const expected = xxph3Reference(data).toString(16).padStart(16, '0');
        if (fastHex(data) !== expected) throw new Error(`length ${length} round ${round}: ${fastHex(data)} != ${expected}`);
      }
    }
  });

  test('fast path equals the BigInt reference on sampled lengths up to 5000 and block boundaries', () => {
    const lengths: number[] = [];
    for (let length = 301; length <= 5000; length += 53) lengths.push(length);
    lengths.push(1023, 1024, 1025, 1087, 1088, 1089, 2047, 2048, 2049, 4095, 4096, 4097, 5000);
    for (const length of lengths) {
      const data = pseudoRandomBytes(length, length);
      expect(`${length}:${fastHex(data)}`).toBe(`${length}:${xxph3Reference(data).toString(16).padStart(16, '0')}`);
    }
  });

  test('all-0xFF and all-zero inputs (carries in every 32-bit word) match the reference', () => {
    for (let length = 0; length <= 260; length++) {
      for (const fill of [0x00, 0xff]) {
        const data = Buffer.alloc(length, fill);
        expect(`${length}/${fill}:${fastHex(data)}`).toBe(`${length}/${fill}:${xxph3Reference(data).toString(16).padStart(16, '0')}`);
      }
    }
  });

  test('hashes exactly data[start, end), not the bytes around it', () => {
    const key = ascii('key000');
    const framed = Buffer.concat([ascii('\xff\xffxx'), key, ascii('yyy\x80')]);
    expect(fastHex(framed, 4, 4 + key.length)).toBe('31689d16643f1223');
    for (const length of [0, 3, 8, 16, 100, 200, 1500]) {
      const data = pseudoRandomBytes(length + 10, length + 99);
      expect(fastHex(data, 5, 5 + length)).toBe(fastHex(Buffer.from(data.subarray(5, 5 + length))));
    }
  });

  test('plain Uint8Array and Buffer inputs hash the same', () => {
    const bytes = pseudoRandomBytes(40, 3);
    expect(fastHex(new Uint8Array(bytes))).toBe(fastHex(bytes));
  });
});

describe('Hash32', () => {
  test('empty input is the seed XOR 0', () => {
    expect(hash32(Buffer.alloc(0), 0, 0, LEGACY_BLOOM_HASH_SEED)).toBe(0xbc9f1d34);
    expect(hash32(Buffer.alloc(0), 0, 0, DATA_BLOCK_HASH_INDEX_SEED)).toBe(397);
  });

  // rocksdb::Hash(data, n, seed) for both seeds the format uses.
  const rocksdbVectors: Array<[string, number, number]> = [
    ['616263', 0x855d012f, 0x1d9aa392], // "abc"
    ['6b6579303030', 0x83f95c11, 0x8caee369], // "key000"
    ['80', 0x91b755f4, 0xc5cd2b7f], // sign-extended tail bytes from here on
    ['ff', 0x1d66774f, 0x517c4df6],
    ['7f80', 0x25088066, 0xd2db5bcc],
    ['80ff7f', 0x95ebe0e2, 0x2e298272],
    ['ffffffff', 0x6cc17294, 0xbf674427], // full word only: no sign extension
    ['ffffffff80', 0x4f2c9478, 0xb8a67b0e],
    ['6b657930303080', 0xdc611b83, 0x1b75be5c],
    ['e29883', 0x6cd3e1d1, 0x051183a7], // UTF-8 "☃"
  ];

  test.each(rocksdbVectors)('matches RocksDB for %s', (dataHex, legacySeedHash, hashIndexSeedHash) => {
    const data = hex(dataHex);
    expect(hash32(data, 0, data.length, LEGACY_BLOOM_HASH_SEED)).toBe(legacySeedHash);
    expect(hash32(data, 0, data.length, DATA_BLOCK_HASH_INDEX_SEED)).toBe(hashIndexSeedHash);
  });

  test('matches RocksDB on the pattern inputs (1 to 4097 bytes)', () => {
    const vectors: Array<[number, number, number]> = [
      [1, 0x528bb3b8, 0x86a18ab9],
      [2, 0x7665b12d, 0x24388c12],
      [3, 0x76b40f8a, 0x0ef1b1ef],
      [4, 0x96b20e5f, 0xe9599c81],
      [5, 0xaa04b758, 0x84f4a720],
      [7, 0x797702c3, 0x69a85ea3],
      [17, 0x656af32f, 0x36a561b8],
      [255, 0xbe168056, 0xcb4f7835],
      [4097, 0x5e36810e, 0x474525b5],
    ];
    for (const [length, legacySeedHash, hashIndexSeedHash] of vectors) {
      const data = patternBytes(length);
      expect(hash32(data, 0, length, LEGACY_BLOOM_HASH_SEED)).toBe(legacySeedHash);
      expect(hash32(data, 0, length, DATA_BLOCK_HASH_INDEX_SEED)).toBe(hashIndexSeedHash);
    }
  });

  test('equals an arbitrary-precision model on random data, including sub-ranges', () => {
    for (let length = 0; length <= 70; length++) {
      const data = pseudoRandomBytes(length + 6, length + 1);
      const key = data.subarray(3, 3 + length);
      for (const seed of [LEGACY_BLOOM_HASH_SEED, DATA_BLOCK_HASH_INDEX_SEED, 0, 0xffffffff]) {
        expect(hash32(data, 3, 3 + length, seed)).toBe(hash32Model(key, seed));
      }
    }
  });

  test('sign extension: a trailing 0x80 differs from the unsigned reading', () => {
    // Unsigned arithmetic would add 0x80 instead of 0xFFFFFF80 for the tail byte.
    const seed = LEGACY_BLOOM_HASH_SEED;
    const m = 0xc6a4a793;
    let unsigned = (seed ^ Math.imul(1, m)) >>> 0;
    unsigned = Math.imul((unsigned + 0x80) | 0, m);
    unsigned = (unsigned ^ (unsigned >>> 24)) >>> 0;
    expect(hash32(hex('80'), 0, 1, seed)).not.toBe(unsigned);
    expect(hash32(hex('80'), 0, 1, seed)).toBe(hash32Model(hex('80'), seed));
  });
});
