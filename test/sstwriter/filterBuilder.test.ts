/**
 * Full-filter builders (legacy Bloom for format_version < 5, FastLocalBloom for 5) and the
 * filter reader.
 *
 * Expected bytes come from RocksDB 7.8.3: the three embedded filters are the filter blocks of
 * RocksDB-written SSTs (SstFileWriter and a DB flush) for the key lists rebuilt below; sizes and
 * probe counts at edge settings were checked against SstFileWriter output for 60 000 keys
 * (e.g. 12.345 bits/key: legacy 90 053 bytes, FastLocalBloom 92 613 bytes).
 */
import {
  HASH_CHUNK_ENTRIES,
  HASH_POOL_MAX_CHUNKS,
  createFilterBuilder,
  pooledHashChunks,
  type FilterBuilder,
} from '../../src/sstwriter/filterBuilder';
import {
  BLOOM_FILTER_POLICY_NAME,
  FILTER_METADATA_BYTES,
  fastLocalBloomAddHash,
  fastLocalBloomLengthBytes,
  fastLocalBloomNumProbes,
  fastRange32,
  legacyAddHash,
  legacyNumLines,
  legacyNumProbes,
  legacyWholeBitsPerKey,
  millibitsPerKey,
} from '../../src/sstable/bloomFilter';
import { FilterReader } from '../../src/sstable/reader/filterReader';
import { LEGACY_BLOOM_HASH_SEED, hash32, xxph3, xxph3Result } from '../../src/sstable/hash';
import { IngestError } from '../../src/util/errors';

const ascii = (s: string): Buffer => Buffer.from(s, 'latin1');
const hex = (s: string): Buffer => Buffer.from(s, 'hex');

function builder(formatVersion: number, bitsPerKey: number, maxEntries?: number): FilterBuilder {
  const b = createFilterBuilder(formatVersion, bitsPerKey, maxEntries);
  if (b === null) throw new Error(`no filter builder for ${bitsPerKey} bits/key`);
  return b;
}

function build(formatVersion: number, bitsPerKey: number, keys: Uint8Array[]): Buffer {
  const b = builder(formatVersion, bitsPerKey);
  for (const k of keys) b.addKey(k);
  const out = b.finish();
  if (out === null) throw new Error('no filter for a non-empty key set');
  return out;
}

/** `count` distinct keys "<prefix><i>" with varying lengths. */
function numberedKeys(prefix: string, count: number): Buffer[] {
  const keys: Buffer[] = [];
  for (let i = 0; i < count; i++) keys.push(ascii(`${prefix}${i}${'x'.repeat(i % 23)}`));
  return keys;
}

/** Indexes of the set bits of bits[0, lengthBytes). */
function setBits(bits: Uint8Array, lengthBytes: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < lengthBytes * 8; i++) if (bits[i >> 3] & (1 << (i & 7))) out.push(i);
  return out;
}

/** User keys of the golden SstFileWriter fixtures (file order). */
function fixtureKeys(withLongKey1036: boolean): Buffer[] {
  const keys: Buffer[] = [Buffer.alloc(0)];
  for (let i = 0; i <= 26; i++) {
    keys.push(ascii(`key0${String(i).padStart(2, '0')}`));
    if (i === 20) keys.push(ascii(`key020${'L'.repeat(150)}`));
    if (i === 24 && withLongKey1036) keys.push(ascii(`key024${'M'.repeat(1030)}`));
    if (i === 26) keys.push(ascii(`key026${'N'.repeat(250)}`));
  }
  keys.push(hex('7afffe'), hex('808182'), hex('ffffffff'));
  return keys;
}

describe('bits per key', () => {
  test('is sanitised and rounded to millibits like RocksDB', () => {
    expect(millibitsPerKey(10)).toBe(10000);
    expect(millibitsPerKey(9.999)).toBe(9999);
    expect(millibitsPerKey(12.345)).toBe(12345);
    expect(millibitsPerKey(0.4999)).toBe(0); // below 0.5: no filter
    expect(millibitsPerKey(0.5)).toBe(1000); // [0.5, 1) becomes 1
    expect(millibitsPerKey(0.9)).toBe(1000);
    expect(millibitsPerKey(100)).toBe(100000);
    expect(millibitsPerKey(1000)).toBe(100000);
    expect(millibitsPerKey(Infinity)).toBe(100000);
    expect(() => millibitsPerKey(NaN)).toThrow(IngestError);
  });

  test('no builder below 0.5 bits/key; legacy below format_version 5, FastLocalBloom at 5', () => {
    expect(createFilterBuilder(5, 0)).toBeNull();
    expect(createFilterBuilder(2, 0.49)).toBeNull();
    const legacy = build(4, 0.5, [ascii('k')]);
    const fast = build(5, 0.5, [ascii('k')]);
    expect(legacy[legacy.length - 5]).toBe(1); // 1 probe, legacy layout
    expect(fast[fast.length - 5]).toBe(0xff);
  });

  test('rejects format versions RocksDB 7.8 does not have', () => {
    for (const fv of [-1, 6, 2.5]) {
      expect(() => createFilterBuilder(fv, 10)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
  });

  test('the policy name stored in rocksdb.filter.policy', () => {
    expect(BLOOM_FILTER_POLICY_NAME).toBe('bloomfilter');
  });
});

describe('probe counts', () => {
  const legacyProbes = (bits: number): number => legacyNumProbes(legacyWholeBitsPerKey(millibitsPerKey(bits)));

  test('legacy: floor(whole bits * 0.69) in [1, 30]', () => {
    expect(legacyProbes(10)).toBe(6);
    expect(legacyProbes(16)).toBe(11);
    expect(legacyProbes(1)).toBe(1);
    expect(legacyProbes(13.4)).toBe(8); // whole bits round half up: 13.4 -> 13 -> 8
    expect(legacyProbes(13.5)).toBe(9); // 13.5 -> 14 -> 9
    expect(legacyProbes(50)).toBe(30);
    expect(legacyProbes(100)).toBe(30);
  });

  test('FastLocalBloom: RocksDB table, including its dip just above 25.501 bits/key', () => {
    const cases: Array<[number, number]> = [
      [1000, 1],
      [2080, 1],
      [2081, 2],
      [3580, 2],
      [3581, 3],
      [5100, 3],
      [6640, 4],
      [8300, 5],
      [10000, 6],
      [10070, 6],
      [10071, 7],
      [11720, 7],
      [14001, 8],
      [14002, 9],
      [16050, 9],
      [18300, 10],
      [22001, 11],
      [25501, 12],
      [25502, 11],
      [27999, 12],
      [28001, 13],
      [50000, 23],
      [50001, 24],
      [100000, 24],
    ];
    for (const [millibits, probes] of cases) expect(`${millibits}:${fastLocalBloomNumProbes(millibits)}`).toBe(`${millibits}:${probes}`);
  });

  test('probe counts land in the trailers', () => {
    const keys = numberedKeys('p', 10);
    const legacy10 = build(3, 10, keys);
    const legacy16 = build(3, 16, keys);
    const fast16 = build(5, 16, keys);
    expect(legacy10[legacy10.length - 5]).toBe(6);
    expect(legacy16[legacy16.length - 5]).toBe(11);
    expect(fast16[fast16.length - 3]).toBe(9);
  });
});

describe('filter sizes', () => {
  test('legacy: odd number of 64-byte lines covering n * whole bits', () => {
    expect(legacyNumLines(33, 10)).toBe(1); // 330 bits
    expect(legacyNumLines(52, 10)).toBe(3); // 520 bits -> 2 lines -> odd
    expect(legacyNumLines(60000, 10)).toBe(1173);
    expect(legacyNumLines(60000, 12)).toBe(1407);
    expect(legacyNumLines(1e9, 100)).toBe(0xffff0000 / 512 + 1); // total bits capped at 0xFFFF0000
    expect(build(2, 10, numberedKeys('a', 33)).length).toBe(64 + FILTER_METADATA_BYTES);
    expect(build(2, 10, numberedKeys('a', 52)).length).toBe(3 * 64 + FILTER_METADATA_BYTES);
    expect(build(4, 12.345, numberedKeys('a', 60000)).length).toBe(90053);
  });

  test('FastLocalBloom: ceil(n * millibits / 8000) rounded up to 64 bytes', () => {
    expect(fastLocalBloomLengthBytes(34, 10000)).toBe(64); // 42.5 -> 43 -> 64
    expect(fastLocalBloomLengthBytes(100, 10000)).toBe(128); // 125 -> 128
    expect(fastLocalBloomLengthBytes(60000, 12345)).toBe(92608);
    expect(fastLocalBloomLengthBytes(1e12, 100000)).toBe(0xffffffc0); // capped
    expect(build(5, 10, numberedKeys('a', 100)).length).toBe(128 + FILTER_METADATA_BYTES);
    expect(build(5, 12.345, numberedKeys('a', 60000)).length).toBe(92613);
  });

  test('trailers: legacy u8 probes + u32le lines; FastLocalBloom ff 00 probes 00 00', () => {
    const legacy = build(2, 10, numberedKeys('a', 52));
    expect(legacy.subarray(legacy.length - 5).toString('hex')).toBe('0603000000');
    const fast = build(5, 10, numberedKeys('a', 100));
    expect(fast.subarray(fast.length - 5).toString('hex')).toBe('ff00060000');
  });

  test('fastRange32 is exact where a double product would round', () => {
    expect(fastRange32(0xffffffff, 0xffffffff)).toBe(0xfffffffe);
    expect(fastRange32(0x80000000, 3)).toBe(1);
    expect(fastRange32(0, 1000)).toBe(0);
    // h * range within 16 of a multiple of 2^32: (2^32 - 1) * 2^26 + ... rounds up in doubles.
    const h = 0xffffffff;
    const range = (1 << 26) - 1;
    expect(fastRange32(h, range)).toBe(Number((BigInt(h) * BigInt(range)) >> 32n));
    for (let i = 0; i < 1000; i++) {
      const hash = (Math.imul(i, 0x9e3779b9) ^ (i << 7)) >>> 0;
      const r = (Math.imul(i + 17, 0x85ebca77) >>> 6) + 1;
      expect(fastRange32(hash, r)).toBe(Number((BigInt(hash) * BigInt(r)) >> 32n));
    }
  });
});

describe('byte identity with RocksDB-written filters', () => {
  test('legacy Bloom (fv2_crc32c_none_bloom.sst): 33 keys, 6 probes, 1 line', () => {
    const expected = hex(
      '6b6612001220b048b02c0c96a088d50232f030074c16cd8a016964080098510f0c68802c010612201005b0008091' +
        '0581c810c800b00a3b5c0c852ca00e7e90680601000000',
    );
    const keys = fixtureKeys(false);
    expect(keys.length).toBe(33);
    expect(build(2, 10, keys).equals(expected)).toBe(true);
    expect(build(4, 10, keys).equals(expected)).toBe(true); // fv 3 and 4 write the same filter
  });

  test('FastLocalBloom (fv5_xxh3_none_bloom.sst): 34 keys of 0..1036 bytes', () => {
    const expected = hex(
      '004082340031685ca22368135c84d017309b6d8c68d12c2200881423c74020890181ad028058a04059c0282b3c01' +
        '10ca614501a00199260110d46dd005007120ff00060000',
    );
    const keys = fixtureKeys(true);
    const b = builder(5, 10);
    for (const k of keys) b.addKey(k);
    expect(b.numEntries()).toBe(34);
    expect(b.finish()?.equals(expected)).toBe(true);
  });

  test('multi-version DB flush: repeated user keys count once (6 filter entries from 19 keys)', () => {
    const expected = hex(
      '0a0000000001040000000000104000010000004100000042000024080000200220008200020000210000000020' +
        '010100000000000200200000001c00000c0000ff00060000',
    );
    const keys = [...Array(12).fill('a'), 'b', 'b', 'c', 'c', 'd', 'e1', 'g'].map(ascii);
    const b = builder(5, 10);
    for (const k of keys) b.addKey(k);
    expect(b.numEntries()).toBe(6);
    expect(b.finish()?.equals(expected)).toBe(true);
  });

  test('spec worked example: "key000" alone sets bits 98, 245, 225, 29, 51, 264 of line 0', () => {
    const filter = build(5, 10, [ascii('key000')]);
    expect(filter.length).toBe(64 + 5);
    expect(setBits(filter, 64)).toEqual([29, 51, 98, 225, 245, 264]);
  });
});

describe('builder behaviour', () => {
  test('drops adjacent duplicate hashes only', () => {
    for (const fv of [2, 5]) {
      const b = builder(fv, 10);
      for (const k of ['a', 'a', 'b', 'a', 'b', 'b']) b.addKey(ascii(k));
      expect(b.numEntries()).toBe(4); // a, b, a, b
    }
  });

  test('finish returns null without keys, does not clear; reset clears', () => {
    for (const fv of [3, 5]) {
      const b = builder(fv, 10);
      expect(b.finish()).toBeNull();
      for (const k of numberedKeys('r', 2000)) b.addKey(k);
      const first = b.finish();
      expect(b.numEntries()).toBe(2000);
      expect(b.finish()?.equals(first as Buffer)).toBe(true);
      b.reset();
      expect(b.numEntries()).toBe(0);
      expect(b.finish()).toBeNull();
      b.addKey(ascii('only'));
      expect(b.finish()?.equals(build(fv, 10, [ascii('only')]))).toBe(true);
    }
  });

  test('the bits do not depend on key order (hash storage growth included)', () => {
    const keys = numberedKeys('g', 5000);
    const forward = build(5, 10, keys);
    const backward = build(5, 10, [...keys].reverse());
    expect(forward.equals(backward)).toBe(true); // every hash sets the same bits whatever the order
  });

  test('enforces its entry bound with a typed error', () => {
    for (const fv of [2, 5]) {
      const b = builder(fv, 10, 3);
      b.addKey(ascii('1'));
      b.addKey(ascii('2'));
      b.addKey(ascii('3'));
      b.addKey(ascii('3')); // a duplicate costs nothing
      expect(() => b.addKey(ascii('4'))).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
    expect(() => createFilterBuilder(5, 10, 0)).toThrow(IngestError);
  });
});

/** The filter `keys` give, computed straight from the hash and bit-setting primitives (no builder storage). */
function referenceFilter(formatVersion: number, bitsPerKey: number, keys: Uint8Array[]): Buffer {
  const millibits = millibitsPerKey(bitsPerKey);
  if (formatVersion >= 5) {
    const lengthBytes = fastLocalBloomLengthBytes(keys.length, millibits);
    const probes = fastLocalBloomNumProbes(millibits);
    const out = Buffer.alloc(lengthBytes + FILTER_METADATA_BYTES);
    for (const k of keys) {
      xxph3(k, 0, k.length);
      fastLocalBloomAddHash(xxph3Result.lo, xxph3Result.hi, lengthBytes, probes, out);
    }
    Buffer.from([0xff, 0, probes, 0, 0]).copy(out, lengthBytes);
    return out;
  }
  const whole = legacyWholeBitsPerKey(millibits);
  const lines = legacyNumLines(keys.length, whole);
  const probes = legacyNumProbes(whole);
  const out = Buffer.alloc(lines * 64 + FILTER_METADATA_BYTES);
  for (const k of keys) legacyAddHash(hash32(k, 0, k.length, LEGACY_BLOOM_HASH_SEED), lines, probes, out, 6);
  out[lines * 64] = probes;
  out.writeUInt32LE(lines, lines * 64 + 1);
  return out;
}

describe('hash storage in chunks', () => {
  const keys = numberedKeys('c', 2 * HASH_CHUNK_ENTRIES + 7);

  test.each([2, 5])('format_version %i: keys across chunk boundaries give the reference filter', (fv) => {
    for (const n of [HASH_CHUNK_ENTRIES - 1, HASH_CHUNK_ENTRIES, HASH_CHUNK_ENTRIES + 1, keys.length]) {
      const subset = keys.slice(0, n);
      expect(build(fv, 10, subset).equals(referenceFilter(fv, 10, subset))).toBe(true);
    }
  });

  test.each([2, 5])('format_version %i: a duplicate of the last key of a chunk is dropped in the next', (fv) => {
    const b = builder(fv, 10);
    const first = keys.slice(0, HASH_CHUNK_ENTRIES);
    for (const k of first) b.addKey(k);
    b.addKey(first[first.length - 1]);
    expect(b.numEntries()).toBe(HASH_CHUNK_ENTRIES);
    b.addKey(keys[HASH_CHUNK_ENTRIES]);
    expect(b.numEntries()).toBe(HASH_CHUNK_ENTRIES + 1);
  });

  test('reset gives the chunks to the pool, the next builder takes them, and stale hashes do not leak in', () => {
    const a = builder(5, 10);
    for (const k of keys) a.addKey(k); // 3 chunks a column
    const before = pooledHashChunks();
    a.reset();
    expect(pooledHashChunks()).toBe(Math.min(HASH_POOL_MAX_CHUNKS, before + 6));
    const b = builder(5, 10);
    const few = numberedKeys('other', 100);
    for (const k of few) b.addKey(k);
    expect(pooledHashChunks()).toBe(Math.min(HASH_POOL_MAX_CHUNKS, before + 6) - 2);
    expect(b.finish()?.equals(referenceFilter(5, 10, few))).toBe(true);
    b.reset();
  });

  test('the pool keeps at most HASH_POOL_MAX_CHUNKS', () => {
    const perColumn = Math.ceil((HASH_POOL_MAX_CHUNKS / 2 + 3) * HASH_CHUNK_ENTRIES);
    const builders = [builder(5, 10), builder(2, 10)];
    const n = perColumn + 1;
    for (const b of builders) for (let i = 0; i < n; i++) b.addKey(ascii(`p${i}`));
    for (const b of builders) b.reset();
    expect(pooledHashChunks()).toBe(HASH_POOL_MAX_CHUNKS);
  });
});

describe('round trip through FilterReader', () => {
  const present = numberedKeys('present-', 10000);
  const absent = numberedKeys('absent-', 100000);

  function falsePositiveRate(reader: FilterReader): number {
    let hits = 0;
    for (const k of absent) if (reader.keyMayMatch(k)) hits++;
    return hits / absent.length;
  }

  test.each([
    [2, 'legacy'],
    [5, 'fastLocalBloom'],
  ])('format_version %i: every key matches, ~1%% false positives at 10 bits/key', (fv, kind) => {
    const reader = FilterReader.fromBlock(build(fv as number, 10, present));
    expect(reader.kind).toBe(kind);
    for (const k of present) if (!reader.keyMayMatch(k)) throw new Error(`filter rejects added key ${k.toString()}`);
    const rate = falsePositiveRate(reader);
    expect(rate).toBeGreaterThan(0.004);
    expect(rate).toBeLessThan(0.02);
  });

  test('more bits per key means fewer false positives', () => {
    const at5 = falsePositiveRate(FilterReader.fromBlock(build(5, 5, present)));
    const at20 = falsePositiveRate(FilterReader.fromBlock(build(5, 20, present)));
    expect(at5).toBeGreaterThan(0.05);
    expect(at20).toBeLessThan(0.002);
  });
});

describe('FilterReader recognition', () => {
  const keys = numberedKeys('k', 300);

  test('five bytes or fewer: no keys, nothing matches', () => {
    for (const contents of [Buffer.alloc(0), hex('ff00060000'), hex('0601')]) {
      const r = FilterReader.fromBlock(contents);
      expect(r.kind).toBe('alwaysFalse');
      expect(r.keyMayMatch(ascii('k1'))).toBe(false);
    }
  });

  function withTrailer(bitsBytes: number, trailer: string): Buffer {
    return Buffer.concat([Buffer.alloc(bitsBytes), hex(trailer)]);
  }

  test.each([
    ['Ribbon marker 0xFE', withTrailer(64, 'fe00010000')],
    ['reserved marker 0x00', withTrailer(64, '0001000000')],
    ['reserved negative marker 0x80', withTrailer(64, '8000000000')],
    ['new-Bloom variant 1', withTrailer(64, 'ff01060000')],
    ['FastLocalBloom, non-zero reserved bytes', withTrailer(64, 'ff00060001')],
    ['FastLocalBloom, zero probes', withTrailer(64, 'ff00000000')],
    ['FastLocalBloom, 128-byte lines', withTrailer(128, 'ff00260000')],
    ['FastLocalBloom, less than a line of bits', withTrailer(32, 'ff00060000')],
    ['legacy, zero lines', withTrailer(64, '0600000000')],
    ['legacy, length not a multiple of lines', withTrailer(64, '0603000000')],
    ['legacy, line size not a power of two', withTrailer(96, '0601000000')],
  ])('%s: every key may match', (_name, contents) => {
    const r = FilterReader.fromBlock(contents);
    expect(r.kind).toBe('alwaysTrue');
    expect(r.reason).not.toBe('');
    // All-zero bits would reject every key if they were probed.
    expect(keys.every((k) => r.keyMayMatch(k))).toBe(true);
  });

  test('legacy filters with 128-byte lines (other CPUs) are read with the derived line size', () => {
    const numLines = 7;
    const numProbes = 6;
    const bits = Buffer.alloc(numLines * 128 + 5);
    for (const k of keys) legacyAddHash(hash32(k, 0, k.length, LEGACY_BLOOM_HASH_SEED), numLines, numProbes, bits, 7);
    bits[numLines * 128] = numProbes;
    bits.writeUInt32LE(numLines, numLines * 128 + 1);
    const r = FilterReader.fromBlock(bits);
    expect(r.kind).toBe('legacy');
    expect(keys.every((k) => r.keyMayMatch(k))).toBe(true);
    // Read as 64-byte lines, the same bits would reject most keys: the derivation matters.
    const misread = Buffer.concat([bits.subarray(0, numLines * 128), hex('06'), Buffer.from([14, 0, 0, 0])]);
    const wrong = FilterReader.fromBlock(misread);
    expect(keys.filter((k) => wrong.keyMayMatch(k)).length).toBeLessThan(keys.length / 2);
  });

  test('legacy probe counts above 30 (never written by 7.8) are still honoured', () => {
    const bits = Buffer.alloc(64 + 5);
    const k = ascii('one-key');
    legacyAddHash(hash32(k, 0, k.length, LEGACY_BLOOM_HASH_SEED), 1, 40, bits, 6);
    bits[64] = 40;
    bits.writeUInt32LE(1, 65);
    const r = FilterReader.fromBlock(bits);
    expect(r.kind).toBe('legacy');
    expect(r.numProbes).toBe(40);
    expect(r.keyMayMatch(k)).toBe(true);
  });

  test('FastLocalBloom whose length is not a multiple of 64 uses floor(len / 64) lines', () => {
    const lengthBytes = 64 * 3 + 10;
    const bits = Buffer.alloc(lengthBytes + 5);
    for (const k of keys) {
      xxph3(k, 0, k.length);
      fastLocalBloomAddHash(xxph3Result.lo, xxph3Result.hi, lengthBytes, 6, bits);
    }
    bits.set(hex('ff00060000'), lengthBytes);
    expect(setBits(bits, lengthBytes).every((bit) => bit < 64 * 3 * 8)).toBe(true);
    const r = FilterReader.fromBlock(bits);
    expect(r.kind).toBe('fastLocalBloom');
    expect(keys.every((k) => r.keyMayMatch(k))).toBe(true);
  });
});
