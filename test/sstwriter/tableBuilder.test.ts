/**
 * SST writer tests: block layout, separator shortening, index encodings, data-block cut rule,
 * properties, metadata bounds, error handling, and (when rocksdb-tools is installed) byte
 * identity with RocksDB's own SstFileWriter plus RocksDB-side verification of our files.
 *
 * Expected bytes below are hand-derived from the format rules (and, for the index examples, from
 * worked examples of RocksDB-written files); the file parser at the bottom is independent of the
 * writer's code so a shared mistake cannot cancel out.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { BlockBuilder } from '../../src/sstwriter/blockBuilder';
import { indexSeparator, IndexBuilder, shortenSeparator } from '../../src/sstwriter/indexBuilder';
import { ValueType, makeInternalKey, MAX_SEQUENCE_NUMBER, userKeyOf, sequenceOf, typeOf } from '../../src/base/internalKey';
import { SstFileWriter } from '../../src/sstwriter/sstFileWriter';
import { TableBuilder } from '../../src/sstwriter/tableBuilder';
import { MemorySink } from '../../src/sstwriter/fileSink';
import { TableFileWriter } from '../../src/sstwriter/tableFileWriter';
import { BlockCompressionPipeline } from '../../src/sstwriter/blockCompressionPipeline';
import { storeBlock, writeBlockTrailer } from '../../src/sstwriter/storedBlock';
import { decodePropertyMap, emptyTableProperties, encodePropertyMap, TableProperties } from '../../src/sstable/properties';
import { buildPropertiesBlock } from '../../src/sstwriter/propertiesBlock';
import { ChecksumType, computeBlockChecksum } from '../../src/sstable/checksum';
import { CompressionType, lz4DecompressBlock } from '../../src/sstable/compression';
import { decodeFooter } from '../../src/sstable/footer';
import { Prop } from '../../src/sstable/format';
import { IngestError } from '../../src/util/errors';
import { decoded, readVarint32, readVarint64, zigzagDecode } from '../../src/util/coding';
import { describeIfRocksdb, ldbWriteExternSst, sstDumpScan, sstDumpVerify, sstDumpRangeTombstones } from '../support/rocksdbTools';

const b = (s: string): Buffer => Buffer.from(s, 'latin1');
const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

let tmpDir: string;
beforeAll(() => {
  tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sstwriter-test-'));
});
afterAll(() => {
  fs.rmSync(tmpDir, { recursive: true, force: true });
});

describe('BlockBuilder', () => {
  test('prefix compression, restart points and footer word', () => {
    const block = new BlockBuilder({ restartInterval: 2, keyOrder: Buffer.compare });
    block.add(b('apple'), b('1'));
    block.add(b('apply'), b('22'));
    block.add(b('banana'), b(''));
    expect(block.currentSizeEstimate()).toBe(36);
    const contents = block.finish();
    expect(contents.toString('hex')).toBe(
      hex(`
        00 05 01 6170706c65 31
        04 01 02 79 3232
        00 06 00 62616e616e61
        00000000 0f000000 02000000`).toString('hex'),
    );
  });

  test('empty block is one restart at 0 and a count of 1', () => {
    const block = new BlockBuilder({ restartInterval: 16 });
    expect(block.currentSizeEstimate()).toBe(8);
    expect(block.finish().toString('hex')).toBe('0000000001000000');
  });

  test('size estimate after an entry follows RocksDB arithmetic', () => {
    const block = new BlockBuilder({ restartInterval: 2 });
    block.add(b('apple'), b('1'));
    block.add(b('apply'), b('22'));
    block.add(b('banana'), b(''));
    // 36 current + key 3 + value 4 + varint(4) + 4 for `shared` + varint(3); no new restart.
    expect(block.estimatedSizeAfter(b('cat'), b('dogs'))).toBe(49);
    block.add(b('cat'), b('dogs'));
    // The next entry would open a restart point: +4 for its offset.
    expect(block.estimatedSizeAfter(b('d'), b(''))).toBe(block.currentSizeEstimate() + 1 + 0 + 1 + 4 + 4 + 1);
  });

  test('value-delta mode omits value lengths and stores the delta when keys share a prefix', () => {
    const block = new BlockBuilder({ restartInterval: 3, valueDeltaEncoding: true });
    block.add(b('k1'), hex('aabb'), hex('01'));
    block.add(b('k2'), hex('ccdd'), hex('02'));
    block.add(b('x'), hex('eeff'), hex('03')); // shares nothing: full value
    expect(block.finish().toString('hex')).toBe(hex('00 02 6b31 aabb  01 01 32 02  00 01 78 eeff  00000000 01000000').toString('hex'));
  });

  test('asserts key order when asked to', () => {
    const block = new BlockBuilder({ restartInterval: 16, keyOrder: Buffer.compare });
    block.add(b('b'), b(''));
    expect(() => block.add(b('a'), b(''))).toThrow(/increasing/);
    expect(() => block.add(b('b'), b(''))).toThrow(/increasing/);
  });
});

describe('separator shortening (RocksDB kShortenSeparators)', () => {
  test('differs only in the last byte of next by one: no shortening, full internal key', () => {
    const last = makeInternalKey(b('key007'), 0, ValueType.Merge);
    expect(shortenSeparator(b('key007'), b('key008'))).toBeNull();
    expect(indexSeparator(last, makeInternalKey(b('key008'), 0, ValueType.Value)).equals(last)).toBe(true);
  });

  test('bumps the first non-0xff byte after the difference', () => {
    const sep = indexSeparator(
      makeInternalKey(b('key020' + 'L'.repeat(150)), 0, ValueType.Value),
      makeInternalKey(b('key021'), 0, ValueType.Value),
    );
    expect(sep.toString('hex')).toBe(Buffer.concat([b('key020M'), hex('16ffffffffffffff')]).toString('hex'));
  });

  test('bumps the differing byte when next has bytes after it', () => {
    expect(shortenSeparator(b('key019'), b('key020'))?.toString('latin1')).toBe('key02');
  });

  test('bumps the differing byte when there is room between the bytes', () => {
    const sep = indexSeparator(
      makeInternalKey(b('key026' + 'N'.repeat(250)), 0, ValueType.Value),
      makeInternalKey(b('z\xff\xfe'), 0, ValueType.Value),
    );
    expect(userKeyOf(sep).toString('latin1')).toBe('l');
    expect(sequenceOf(sep)).toBe(MAX_SEQUENCE_NUMBER);
    expect(typeOf(sep)).toBe(ValueType.Seek);
  });

  test('no shortening for prefixes, equal user keys, or an all-0xff tail', () => {
    expect(shortenSeparator(b('abc'), b('abcd'))).toBeNull();
    expect(shortenSeparator(b('abc'), b('abc'))).toBeNull();
    expect(shortenSeparator(b('a\xff\xff'), b('b'))).toBeNull();
    const last = makeInternalKey(b('a'), 7, ValueType.Value);
    expect(indexSeparator(last, makeInternalKey(b('a'), 6, ValueType.Value)).equals(last)).toBe(true);
  });
});

describe('IndexBuilder encodings', () => {
  const ik = (s: string, type: ValueType = ValueType.Value): Buffer => makeInternalKey(b(s), 0, type);
  const boundaries: Array<[Buffer, Buffer | null, { offset: number; size: number }]> = [
    [ik('key007', ValueType.Merge), ik('key008'), { offset: 0, size: 251 }],
    [ik('key014'), ik('key015'), { offset: 256, size: 244 }],
    [ik('key020' + 'L'.repeat(150)), ik('key021'), { offset: 505, size: 379 }],
    [ik('key026' + 'N'.repeat(250)), ik('z\xff\xfe'), { offset: 889, size: 458 }],
    [ik('\xff\xff\xff\xff'), null, { offset: 1352, size: 77 }],
  ];

  test('format_version 4: user keys and delta-encoded handles (index restart interval 4)', () => {
    const index = new IndexBuilder({ formatVersion: 4, restartInterval: 4 });
    for (const [last, next, handle] of boundaries) index.addIndexEntry(last, next, handle);
    const f = index.finish();
    expect(f.keyIsUserKey).toBe(true);
    expect(f.valueIsDeltaEncoded).toBe(true);
    expect(f.contents.toString('hex')).toBe(
      hex(`
        00 06 6b6579303037 00 fb01
        04 02 3134 0d
        04 03 32304d 8e02
        00 01 6c f906 ca03
        00 04 ffffffff c80a 4d
        00000000 1e000000 02000000`).toString('hex'),
    );
    // The delta of entry 1 is zigzag(244 - 251) = 13.
    expect(zigzagDecode(0x0d)).toBe(-7);
  });

  test('format_version 2: internal keys with value lengths', () => {
    const index = new IndexBuilder({ formatVersion: 2, restartInterval: 1 });
    for (const [last, next, handle] of boundaries) index.addIndexEntry(last, next, handle);
    const f = index.finish();
    expect(f.keyIsUserKey).toBe(false);
    expect(f.valueIsDeltaEncoded).toBe(false);
    expect(f.contents.subarray(0, 20).toString('hex')).toBe(hex('00 0e 03 6b6579303037 0200000000000000 00 fb01').toString('hex'));
    const third = parseBlock(f.contents, false).entries[2];
    expect(third.key.toString('hex')).toBe(Buffer.concat([b('key020M'), hex('16ffffffffffffff')]).toString('hex'));
    expect(third.value.toString('hex')).toBe('f903fb02');
  });

  test('format_version 3: falls back to internal keys when a boundary splits one user key', () => {
    const index = new IndexBuilder({ formatVersion: 3, restartInterval: 1 });
    index.addIndexEntry(makeInternalKey(b('a'), 9, ValueType.Value), makeInternalKey(b('b'), 9, ValueType.Value), { offset: 0, size: 10 });
    index.addIndexEntry(makeInternalKey(b('c'), 5, ValueType.Value), makeInternalKey(b('c'), 4, ValueType.Value), { offset: 15, size: 10 });
    index.addIndexEntry(makeInternalKey(b('c'), 4, ValueType.Value), null, { offset: 30, size: 10 });
    const f = index.finish();
    expect(f.keyIsUserKey).toBe(false);
    const keys = parseBlock(f.contents, false).entries.map((e) => e.key.toString('hex'));
    expect(keys).toEqual([
      makeInternalKey(b('a'), 9, ValueType.Value).toString('hex'), // 'a' vs 'b' differ in the last byte by one
      makeInternalKey(b('c'), 5, ValueType.Value).toString('hex'),
      makeInternalKey(b('c'), 4, ValueType.Value).toString('hex'),
    ]);
  });
});

describe('TableBuilder', () => {
  const entries10 = Array.from({ length: 10 }, (_, i) => [makeInternalKey(b(`k0${i}`), 0, ValueType.Value), b('0123456789')] as const);

  function build(opts: ConstructorParameters<typeof TableBuilder>[1], entries: ReadonlyArray<readonly [Buffer, Buffer]>): ParsedTable {
    const sink = new MemorySink();
    const t = new TableBuilder(sink, opts);
    for (const [k, v] of entries) t.add(k, v);
    t.finish();
    return parseTable(sink.contents());
  }

  test('cuts data blocks by RocksDB size rule (block size and deviation)', () => {
    // Entries are 24 bytes (first in block) then 22 bytes (sharing "k0"); block size 64.
    // After 2 entries the block is 54 bytes and the 3rd would overshoot 64: with deviation 10
    // (limit 58) the block is kept open, with deviation 20 (limit 52) it is cut.
    const d10 = build(
      { compression: CompressionType.None, bloomBitsPerKey: 0, blockSizeBytes: 64, blockSizeDeviationPercent: 10 },
      entries10,
    );
    expect(d10.dataBlocks.map((blk) => blk.entries.length)).toEqual([3, 3, 3, 1]);
    const d20 = build(
      { compression: CompressionType.None, bloomBitsPerKey: 0, blockSizeBytes: 64, blockSizeDeviationPercent: 20 },
      entries10,
    );
    expect(d20.dataBlocks.map((blk) => blk.entries.length)).toEqual([2, 2, 2, 2, 2]);
    expect(d20.properties.numDataBlocks).toBe(5);
  });

  test('every block checksum verifies, for every checksum type and format version', () => {
    for (const fv of [2, 3, 4, 5]) {
      for (const checksumType of [ChecksumType.None, ChecksumType.CRC32c, ChecksumType.xxHash, ChecksumType.xxHash64, ChecksumType.XXH3]) {
        const t = build({ formatVersion: fv, checksumType, compression: CompressionType.LZ4, blockSizeBytes: 64 }, entries10);
        expect(t.footer.formatVersion).toBe(fv);
        expect(t.footer.checksumType).toBe(checksumType);
        expect(t.dataBlocks.flatMap((blk) => blk.entries.map((e) => e.key.toString('hex')))).toEqual(
          entries10.map(([k]) => k.toString('hex')),
        );
        expect(t.properties.indexKeyIsUserKey).toBe(fv >= 3);
        expect(t.properties.indexValueIsDeltaEncoded).toBe(fv >= 4);
      }
    }
  });

  test('LZ4 compresses data blocks that shrink by more than 1/8 and leaves others raw', () => {
    const compressible = Array.from(
      { length: 200 },
      (_, i) => [makeInternalKey(b(`key${String(i).padStart(5, '0')}`), 0, ValueType.Value), b('x'.repeat(100))] as const,
    );
    const t = build({ compression: CompressionType.LZ4, bloomBitsPerKey: 0 }, compressible);
    expect(t.dataBlocks.every((blk) => blk.compressionType === CompressionType.LZ4)).toBe(true);
    expect(t.properties.compressionName).toBe('LZ4');
    const random = Array.from(
      { length: 50 },
      (_, i) => [makeInternalKey(b(`key${String(i).padStart(5, '0')}`), 0, ValueType.Value), pseudoRandomBytes(i, 200)] as const,
    );
    const r = build({ compression: CompressionType.LZ4, bloomBitsPerKey: 0 }, random);
    expect(r.dataBlocks.every((blk) => blk.compressionType === CompressionType.None)).toBe(true);
  });

  test('rejects keys out of internal-key order and unsupported options', () => {
    const t = new TableBuilder(new MemorySink(), { bloomBitsPerKey: 0 });
    t.add(makeInternalKey(b('a'), 5, ValueType.Value), b('x'));
    t.add(makeInternalKey(b('a'), 4, ValueType.Value), b('x')); // same user key, older: fine
    expect(() => t.add(makeInternalKey(b('a'), 4, ValueType.Value), b('x'))).toThrow(expect.objectContaining({ code: 'KEY_ORDER' }));
    expect(() => t.add(makeInternalKey(b('a'), 6, ValueType.Value), b('x'))).toThrow(expect.objectContaining({ code: 'KEY_ORDER' }));
    expect(() => new TableBuilder(new MemorySink(), { formatVersion: 1 })).toThrow(IngestError);
    expect(() => new TableBuilder(new MemorySink(), { formatVersion: 6 })).toThrow(/format_version 6/);
    for (const compression of [CompressionType.Zlib, CompressionType.BZip2, CompressionType.LZ4HC, CompressionType.Xpress]) {
      expect(() => new TableBuilder(new MemorySink(), { compression })).toThrow(expect.objectContaining({ code: 'NOT_SUPPORTED' }));
    }
  });

  test('multi-version keys from a flush: internal-key bounds, sequence range, index falls back to internal keys', () => {
    const entries = [
      [makeInternalKey(b('a'), 12, ValueType.Value), b('v12')],
      [makeInternalKey(b('a'), 11, ValueType.Value), b('v11')],
      [makeInternalKey(b('a'), 3, ValueType.Merge), b('m3')],
      [makeInternalKey(b('b'), 14, ValueType.SingleDeletion), b('')],
      [makeInternalKey(b('b'), 13, ValueType.Value), b('v13')],
    ] as const;
    const sink = new MemorySink();
    const t = new TableBuilder(sink, { bloomBitsPerKey: 0, compression: CompressionType.None, blockSizeBytes: 1 });
    for (const [k, v] of entries) t.add(k, v);
    t.addRangeTombstone(b('a'), b('c'), 19);
    const result = t.finish();
    expect(result.smallestSeq).toBe(3);
    expect(result.largestSeq).toBe(19);
    expect(result.smallestKey.equals(makeInternalKey(b('a'), 19, ValueType.RangeDeletion))).toBe(true);
    expect(result.largestKey.equals(makeInternalKey(b('c'), MAX_SEQUENCE_NUMBER, ValueType.RangeDeletion))).toBe(true);
    expect(result.numDeletions).toBe(2); // SingleDeletion + tombstone
    const parsed = parseTable(sink.contents());
    expect(parsed.dataBlocks.length).toBe(5); // block size 1: every entry cuts
    expect(parsed.properties.indexKeyIsUserKey).toBe(false);
    expect(parsed.properties.numMergeOperands).toBe(1);
  });
});

describe('properties', () => {
  test('encode/decode round trip and RocksDB write rules', () => {
    const p: TableProperties = {
      ...emptyTableProperties(),
      dataSize: 300,
      indexSize: 1 << 20,
      numEntries: 5,
      comparatorName: 'c',
      externalSstFileVersion: 2,
      globalSeqno: 77,
      prefixFiltering: false,
    };
    p.raw.set('my.collector', b('\x01\x02'));
    const map = encodePropertyMap(p);
    expect(map.get(Prop.GlobalSeqno)?.toString('hex')).toBe('4d00000000000000');
    expect(map.get(Prop.ExternalSstVersion)?.toString('hex')).toBe('02000000');
    expect(map.get(Prop.IndexType)?.toString('hex')).toBe('00000000');
    expect(map.get(Prop.IndexSize)?.toString('hex')).toBe('808040');
    expect(map.get(Prop.ColumnFamilyId)?.toString('hex')).toBe('ffffffff07');
    expect(map.has(Prop.ColumnFamilyName)).toBe(false); // empty strings are not written
    expect(map.has(Prop.FileCreationTime)).toBe(false); // zero: not written
    expect(map.has(Prop.IndexPartitions)).toBe(false);
    expect(map.get(Prop.PrefixFiltering)?.toString()).toBe('0');
    expect(map.get('my.collector')?.toString('hex')).toBe('0102');

    const block = buildPropertiesBlock(map);
    const parsed = parseBlock(block.contents, false);
    expect(parsed.restarts).toEqual([0]); // a single restart point
    const names = parsed.entries.map((e) => e.key.toString('latin1'));
    expect(names).toEqual([...names].sort((x, y) => Buffer.compare(b(x), b(y))));
    expect(block.contents.readBigUInt64LE(block.globalSeqnoValueOffset)).toBe(77n);

    const back = decodePropertyMap(new Map(parsed.entries.map((e) => [e.key.toString('latin1'), e.value])));
    const { raw: _r1, ...withoutRaw } = back;
    const { raw: _r2, ...expected } = p;
    expect(withoutRaw).toEqual(expected);
    expect(back.raw.get('my.collector')?.toString('hex')).toBe('0102');
  });

  test('decode rejects malformed values', () => {
    expect(() => decodePropertyMap(new Map([[Prop.NumEntries, hex('ff')]]))).toThrow(/rocksdb.num.entries/);
    expect(() => decodePropertyMap(new Map([[Prop.GlobalSeqno, hex('00')]]))).toThrow(/8-byte/);
  });
});

describe('background compression (worker thread)', () => {
  /** Distinct, ascending internal keys with values of mixed compressibility and length. */
  function mixedEntries(n: number, valueBytes: (i: number) => number): Array<[Buffer, Buffer]> {
    return Array.from({ length: n }, (_, i) => {
      const key = makeInternalKey(
        b(`key${String(i * 3).padStart(9, '0')}${i % 4 === 0 ? '-long-suffix' : ''}`),
        0,
        i % 7 === 3 ? ValueType.Deletion : ValueType.Value,
      );
      const len = valueBytes(i);
      const value = i % 3 === 0 ? pseudoRandomBytes(i, len) : Buffer.alloc(len, i % 251);
      return [key, value];
    });
  }

  function tableBytes(
    opts: ConstructorParameters<typeof TableBuilder>[1],
    entries: ReadonlyArray<readonly [Buffer, Buffer]>,
  ): { bytes: Buffer; estimates: number[] } {
    const sink = new MemorySink();
    const t = new TableBuilder(sink, { dbSessionId: 'ABCDEFGHIJ0123456789', ...opts });
    const estimates: number[] = [];
    entries.forEach(([k, v], i) => {
      t.add(k, v);
      if (i % 500 === 0) estimates.push(t.fileSizeEstimate());
    });
    t.addRangeTombstone(b('key0'), b('key1'), 0);
    const result = t.finish();
    const bytes = sink.contents();
    expect(result.fileSizeBytes).toBe(bytes.length);
    return { bytes, estimates };
  }

  test.each([
    ['LZ4, format_version 5, FastLocalBloom, XXH3', { compression: CompressionType.LZ4, formatVersion: 5, bloomBitsPerKey: 10 }],
    [
      'LZ4, format_version 4, legacy Bloom, CRC32c',
      { compression: CompressionType.LZ4, formatVersion: 4, bloomBitsPerKey: 7, checksumType: ChecksumType.CRC32c },
    ],
    [
      'LZ4, format_version 2, no filter, xxHash64',
      { compression: CompressionType.LZ4, formatVersion: 2, bloomBitsPerKey: 0, checksumType: ChecksumType.xxHash64 },
    ],
    [
      'no compression, small blocks, restart interval 3',
      { compression: CompressionType.None, formatVersion: 5, blockSizeBytes: 300, blockRestartInterval: 3 },
    ],
  ])('writes exactly the bytes of the inline path: %s', (_name, opts) => {
    // ~2.5 MB of entries: a few 1 MiB batches, filled, sent and returned in turn (the pipeline
    // test below covers backpressure with tiny batches).
    const entries = mixedEntries(12_000, (i) => 40 + (i % 300));
    const inline = tableBytes({ ...opts, backgroundCompression: false }, entries);
    const piped = tableBytes({ ...opts, backgroundCompression: true }, entries);
    expect(piped.bytes.length).toBe(inline.bytes.length);
    expect(firstDifference(piped.bytes, inline.bytes)).toBe(-1);
    // The estimate counts blocks still with the worker at full size: never below the inline one.
    piped.estimates.forEach((e, i) => expect(e).toBeGreaterThanOrEqual(inline.estimates[i]));
    const footer = decodeFooter(piped.bytes.subarray(piped.bytes.length - 53), piped.bytes.length, 'piped');
    expect(footer.formatVersion).toBe(opts.formatVersion);
  });

  test('blocks larger than a batch (a 3 MiB value) travel alone and stay in order', () => {
    const entries = mixedEntries(40, (i) => (i === 17 ? 3 << 20 : 100));
    const inline = tableBytes({ backgroundCompression: false }, entries);
    const piped = tableBytes({ backgroundCompression: true }, entries);
    expect(firstDifference(piped.bytes, inline.bytes)).toBe(-1);
  });

  test('pipeline: in-order delivery under backpressure, stored form as storeBlock gives it', () => {
    const settings = { compression: CompressionType.LZ4, formatVersion: 5, checksumType: ChecksumType.XXH3 };
    const blocks: Buffer[] = [];
    for (let i = 0; i < 60; i++) {
      const builder = new BlockBuilder({ restartInterval: 4 });
      for (let j = 0; j < 1 + (i % 9); j++) {
        const userKey = b(`block${String(i).padStart(3, '0')}/key${j}`);
        builder.add(makeInternalKey(userKey, 0, ValueType.Value), i % 2 === 0 ? Buffer.alloc(200, j) : pseudoRandomBytes(i * 100 + j, 150));
      }
      blocks.push(Buffer.from(builder.finish()));
    }
    const delivered: Array<{ tag: number; stored: Buffer }> = [];
    let inFlightPeak = 0;
    const pipeline = new BlockCompressionPipeline<number>(
      settings,
      (batch) => {
        let pos = 0;
        batch.tags.forEach((tag, i) => {
          const end = pos + batch.storedSizes[i] + 5;
          delivered.push({ tag, stored: Buffer.from(batch.bytes.subarray(pos, end)) });
          pos = end;
        });
        expect(pos).toBe(batch.bytes.length);
      },
      // Tiny batches and two in flight: submit() must wait for the worker again and again.
      { batchTargetBytes: 2000, maxBlocksPerBatch: 3, maxBatchesInFlight: 2 },
    );
    blocks.forEach((blk, i) => {
      pipeline.submit(blk, i);
      inFlightPeak = Math.max(inFlightPeak, i + 1 - delivered.length);
    });
    expect(pipeline.pendingStoredBytes()).toBeGreaterThan(0);
    pipeline.flush();
    expect(pipeline.pendingStoredBytes()).toBe(0);
    pipeline.close();
    pipeline.close(); // idempotent
    expect(() => pipeline.submit(blocks[0], 0)).toThrow(/after close/);

    expect(delivered.map((d) => d.tag)).toEqual(blocks.map((_, i) => i));
    // At most 2 batches of at most 3 blocks with the worker, plus the batch being filled.
    expect(inFlightPeak).toBeLessThanOrEqual(3 * 3);
    blocks.forEach((blk, i) => {
      const expected = storeBlock(blk, true, settings);
      const trailer = Buffer.alloc(5);
      writeBlockTrailer(trailer, 0, expected.type, expected.checksum);
      expect(delivered[i].stored.equals(Buffer.concat([expected.bytes, trailer]))).toBe(true);
    });
    expect(delivered.some((d) => d.stored[d.stored.length - 5] === CompressionType.LZ4)).toBe(true);
    expect(delivered.some((d) => d.stored[d.stored.length - 5] === CompressionType.None)).toBe(true);
  });

  test('pipeline: a batch the worker cannot process fails the pipeline with an IO error', () => {
    // Checksum type 9 does not exist: storeBlock throws in the worker, which replies with the error.
    const settings = { compression: CompressionType.LZ4, formatVersion: 5, checksumType: 9 as ChecksumType };
    const pipeline = new BlockCompressionPipeline<number>(settings, () => {
      throw new Error('nothing may be delivered');
    });
    pipeline.submit(Buffer.from('any block'), 0);
    expect(() => pipeline.flush()).toThrow(
      expect.objectContaining({ code: 'IO', message: expect.stringMatching(/block compression failed/) }),
    );
    expect(() => pipeline.flush()).toThrow(/after a failure/);
    pipeline.close();
  });

  test('SstFileWriter: abort with batches in flight leaves no file; finish renames a complete file', () => {
    const dir = fs.mkdtempSync(path.join(tmpDir, 'bg-'));
    const w = new SstFileWriter(path.join(dir, 'x.sst'), { backgroundCompression: true });
    for (let i = 0; i < 15_000; i++) w.put(b(`key${String(i).padStart(8, '0')}`), Buffer.alloc(100, i));
    w.abort();
    expect(fs.readdirSync(dir)).toEqual([]);

    const kvs = Array.from(
      { length: 15_000 },
      (_, i) => [b(`key${String(i).padStart(8, '0')}`), pseudoRandomBytes(i, 20 + (i % 50))] as const,
    );
    const inlineFile = path.join(dir, 'inline.sst');
    const pipedFile = path.join(dir, 'piped.sst');
    for (const [file, backgroundCompression] of [
      [inlineFile, false],
      [pipedFile, true],
    ] as const) {
      const writer = new SstFileWriter(file, { backgroundCompression, dbSessionId: 'ABCDEFGHIJ0123456789' });
      for (const [k, v] of kvs) writer.put(k, v);
      writer.finish();
    }
    expect(fs.readdirSync(dir).sort()).toEqual(['inline.sst', 'piped.sst']);
    expect(fs.readFileSync(pipedFile).equals(fs.readFileSync(inlineFile))).toBe(true);
  });
});

describe('SstFileWriter', () => {
  function filesIn(dir: string): string[] {
    return fs.readdirSync(dir).sort();
  }

  test.each([CompressionType.None, CompressionType.LZ4])('fileSizeEstimate tracks the data written (compression %s)', (compression) => {
    const dir = fs.mkdtempSync(path.join(tmpDir, 'estimate-'));
    const file = path.join(dir, 'e.sst');
    const w = new SstFileWriter(file, { compression, bloomBitsPerKey: 0 });
    let halfway = 0;
    for (let i = 0; i < 20000; i++) {
      w.put(b(`key${String(i).padStart(8, '0')}`), b(`value-${i}-${'x'.repeat(i % 50)}`));
      if (i === 9999) halfway = w.fileSizeEstimate();
    }
    // Not monotonic in general (a block in flight shrinks when its compressed form comes back),
    // but the second half of the data must show.
    const previous = w.fileSizeEstimate();
    expect(previous).toBeGreaterThan(halfway);
    const meta = w.finish();
    // The estimate leaves out the index, properties and footer, and counts blocks still at the
    // compression worker at their raw size; both bounds are small next to ~1 MB of data.
    expect(previous).toBeLessThanOrEqual(meta.fileSizeBytes + 4 * 1024 * 1024);
    expect(previous).toBeGreaterThanOrEqual(meta.properties.dataSize * 0.9);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('writes a file whose properties and metadata describe its contents', () => {
    const dir = fs.mkdtempSync(path.join(tmpDir, 'props-'));
    const file = path.join(dir, 'a.sst');
    const w = new SstFileWriter(file, { compression: CompressionType.None, blockSizeBytes: 256, dbSessionId: 'ABCDEFGHIJ0123456789' });
    w.deleteRange(b('key010'), b('key015'));
    let rawKey = 14;
    let rawValue = 6;
    for (let i = 0; i < 40; i++) {
      const key = b(`key${String(i).padStart(3, '0')}`);
      if (i % 10 === 5) w.delete(key);
      else if (i % 10 === 7) w.merge(key, b(`m${i}`));
      else w.put(key, b(`value-${i}`));
      rawKey += key.length + 8;
      rawValue += i % 10 === 5 ? 0 : i % 10 === 7 ? `m${i}`.length : `value-${i}`.length;
    }
    const meta = w.finish();
    expect(filesIn(dir)).toEqual(['a.sst']);
    const bytes = fs.readFileSync(file);
    expect(meta.fileSizeBytes).toBe(bytes.length);
    const t = parseTable(bytes);
    const p = t.properties;
    expect(p.numEntries).toBe(41);
    expect(p.numRangeDeletions).toBe(1);
    expect(p.numDeletions).toBe(5); // 4 point deletions + 1 tombstone
    expect(p.numMergeOperands).toBe(4);
    expect(p.rawKeySize).toBe(rawKey);
    expect(p.rawValueSize).toBe(rawValue);
    expect(p.numDataBlocks).toBe(t.dataBlocks.length);
    expect(p.dataSize).toBe(t.dataBlocks[t.dataBlocks.length - 1].end);
    expect(p.indexSize).toBe(t.index.size + 5);
    expect(p.externalSstFileVersion).toBe(2);
    expect(p.globalSeqno).toBe(0);
    expect(p.raw.get(Prop.GlobalSeqno)?.length).toBe(8);
    expect(p.dbSessionId).toBe('ABCDEFGHIJ0123456789');
    expect(p.dbId).toBe('SST Writer');
    expect(p.raw.has(Prop.DbHostId)).toBe(false);
    expect(p.columnFamilyId).toBe(0x7fffffff);
    expect(p.mergeOperatorName).toBe('nullptr');
    expect(p.compressionName).toBe('NoCompression');
    expect(p.originalFileNumber).toBe(1);
    expect(p.formatVersion).toBe(0);
    expect(t.footer.formatVersion).toBe(5);
    expect(t.footer.checksumType).toBe(ChecksumType.XXH3);
    if (p.filterPolicyName !== '') {
      expect(p.numFilterEntries).toBe(40);
      expect(p.filterSize).toBe(t.meta.get('fullfilter.rocksdb.BuiltinBloomFilter')?.size);
    }
    expect(meta.properties.numEntries).toBe(41);
    expect(meta.numPointEntries).toBe(40);
    expect(meta.smallestKey.equals(makeInternalKey(b('key000'), 0, ValueType.Value))).toBe(true);
    expect(meta.largestKey.equals(makeInternalKey(b('key039'), 0, ValueType.Value))).toBe(true);
    expect(t.rangeDel.map((e) => [userKeyOf(e.key).toString(), e.value.toString()])).toEqual([['key010', 'key015']]);
    // Every point entry carries sequence 0 and its type.
    const types = t.dataBlocks.flatMap((blk) => blk.entries.map((e) => typeOf(e.key)));
    expect(types.filter((x) => x === ValueType.Deletion).length).toBe(4);
    expect(t.dataBlocks.every((blk) => blk.entries.every((e) => sequenceOf(e.key) === 0))).toBe(true);
  });

  test('metadata bounds are widened by tombstones', () => {
    const file = path.join(tmpDir, 'bounds.sst');
    const w = new SstFileWriter(file);
    w.put(b('m'), b('1'));
    w.deleteRange(b('x'), b('zz'));
    w.put(b('n'), b('2'));
    w.deleteRange(b('c'), b('d'));
    const meta = w.finish();
    expect(meta.smallestKey.equals(makeInternalKey(b('c'), 0, ValueType.RangeDeletion))).toBe(true);
    expect(meta.largestKey.equals(makeInternalKey(b('zz'), MAX_SEQUENCE_NUMBER, ValueType.RangeDeletion))).toBe(true);
    expect([meta.smallestSeq, meta.largestSeq]).toEqual([0, 0]);
    // Tombstones are stored in call order.
    expect(parseTable(fs.readFileSync(file)).rangeDel.map((e) => userKeyOf(e.key).toString())).toEqual(['x', 'c']);
  });

  test('a file of tombstones only', () => {
    const file = path.join(tmpDir, 'tombstones.sst');
    const w = new SstFileWriter(file);
    w.deleteRange(b('b'), b('c'));
    w.deleteRange(b('a'), b('b'));
    const meta = w.finish();
    expect(meta.numEntries).toBe(2);
    expect(meta.numPointEntries).toBe(0);
    expect(meta.numDataBlocks).toBe(0);
    expect(meta.smallestKey.equals(makeInternalKey(b('a'), 0, ValueType.RangeDeletion))).toBe(true);
    expect(meta.largestKey.equals(makeInternalKey(b('c'), MAX_SEQUENCE_NUMBER, ValueType.RangeDeletion))).toBe(true);
    const t = parseTable(fs.readFileSync(file));
    expect(t.properties.dataSize).toBe(0);
    expect(t.index.contents.toString('hex')).toBe('0000000001000000'); // empty index block
    expect(t.meta.has('fullfilter.rocksdb.BuiltinBloomFilter')).toBe(false);
  });

  test('key order errors name both keys and leave the writer usable', () => {
    const file = path.join(tmpDir, 'order.sst');
    const w = new SstFileWriter(file);
    w.put(b('b'), b('1'));
    expect(() => w.put(b('a'), b('2'))).toThrow(
      expect.objectContaining({ code: 'KEY_ORDER', message: expect.stringMatching(/"a" after "b"/) }),
    );
    expect(() => w.delete(b('b'))).toThrow(expect.objectContaining({ code: 'KEY_ORDER' }));
    expect(() => w.merge(hex('00ff'), b(''))).toThrow(/0x00ff after "b"/);
    w.put(b('c'), b('3'));
    expect(w.finish().numEntries).toBe(2);
  });

  test('deleteRange needs start < end', () => {
    const w = new SstFileWriter(path.join(tmpDir, 'range.sst'));
    expect(() => w.deleteRange(b('b'), b('a'))).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => w.deleteRange(b('b'), b('b'))).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    w.abort();
  });

  test('abort and empty finish leave no file behind', () => {
    const dir = fs.mkdtempSync(path.join(tmpDir, 'abort-'));
    const w = new SstFileWriter(path.join(dir, 'x.sst'));
    for (let i = 0; i < 1000; i++) w.put(b(`key${String(i).padStart(6, '0')}`), Buffer.alloc(2000, i));
    expect(filesIn(dir).length).toBe(1); // the temporary file
    w.abort();
    w.abort(); // idempotent
    expect(filesIn(dir)).toEqual([]);
    expect(() => w.put(b('zzz'), b(''))).toThrow(/aborted|finished/);

    const empty = new SstFileWriter(path.join(dir, 'empty.sst'));
    expect(() => empty.finish()).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/no entries/) }),
    );
    expect(filesIn(dir)).toEqual([]);
  });

  test('invalid options fail before any file is created', () => {
    const dir = fs.mkdtempSync(path.join(tmpDir, 'opts-'));
    expect(() => new SstFileWriter(path.join(dir, 'x.sst'), { blockSizeBytes: 0 })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    expect(filesIn(dir)).toEqual([]);
  });

  test('TableFileWriter refuses to overwrite and removes its file on abort', () => {
    const file = path.join(tmpDir, 'engine-out.sst');
    const w = new TableFileWriter(file, { bloomBitsPerKey: 0 });
    w.add(makeInternalKey(b('k'), 42, ValueType.Value), b('v'));
    const meta = w.finish();
    expect(meta.largestSeq).toBe(42);
    expect(parseTable(fs.readFileSync(file)).properties.raw.has(Prop.ExternalSstVersion)).toBe(false);
    expect(() => new TableFileWriter(file)).toThrow(expect.objectContaining({ code: 'IO' }));
    const other = new TableFileWriter(path.join(tmpDir, 'engine-out2.sst'));
    other.abort();
    expect(fs.existsSync(path.join(tmpDir, 'engine-out2.sst'))).toBe(false);
  });
});

describeIfRocksdb('SstFileWriter against RocksDB', () => {
  const entries = (n: number): Array<[Buffer, Buffer]> =>
    Array.from({ length: n }, (_, i) => [b(`user:${String(i * 7).padStart(8, '0')}`), b(`value ${i} `.repeat(1 + (i % 5)))]);

  function writeOurs(
    file: string,
    kvs: Array<[Buffer, Buffer]>,
    like: TableProperties | null,
    bloomBitsPerKey: number,
    compression: CompressionType,
  ): void {
    const w = new SstFileWriter(file, {
      compression,
      bloomBitsPerKey,
      ...(like === null
        ? {}
        : {
            dbSessionId: like.dbSessionId,
            dbHostId: like.dbHostId,
            dbId: like.dbId,
            columnFamilyId: like.columnFamilyId,
            columnFamilyName: like.columnFamilyName,
            mergeOperatorName: like.mergeOperatorName,
          }),
    });
    for (const [k, v] of kvs) w.put(k, v);
    w.finish();
  }

  // (ldb refuses --bloom_bits=0, so both runs have a filter; legacy vs. fast Bloom is covered by
  // the unit tests of the filter builder.)
  test.each([10, 20])('byte-identical to ldb write_extern_sst (uncompressed, bloom bits %i)', (bloomBits) => {
    const kvs = entries(600);
    const theirs = path.join(tmpDir, `ldb-${bloomBits}.sst`);
    ldbWriteExternSst(theirs, kvs, { compression: 'no', bloomBits }, tmpDir);
    const theirBytes = fs.readFileSync(theirs);
    const ours = path.join(tmpDir, `ours-${bloomBits}.sst`);
    writeOurs(ours, kvs, parseTable(theirBytes).properties, bloomBits, CompressionType.None);
    const ourBytes = fs.readFileSync(ours);
    expect(ourBytes.length).toBe(theirBytes.length);
    expect(firstDifference(ourBytes, theirBytes)).toBe(-1);
  });

  test('RocksDB verifies and scans our LZ4 file with tombstones', () => {
    const file = path.join(tmpDir, 'lz4.sst');
    const kvs = entries(3000);
    const w = new SstFileWriter(file, {});
    w.deleteRange(b('user:0000'), b('user:0001'));
    for (const [k, v] of kvs) w.put(k, v);
    w.deleteRange(b('zz'), b('zzz'));
    w.finish();
    const verify = sstDumpVerify(file);
    expect(verify.output).not.toMatch(/corrupt/i);
    expect(verify.ok).toBe(true);
    const scanned = sstDumpScan(file);
    expect(scanned.length).toBe(kvs.length);
    expect(scanned.every((e, i) => e.userKey.equals(kvs[i][0]) && e.value.equals(kvs[i][1]) && e.seq === 0 && e.type === 1)).toBe(true);
    expect(sstDumpRangeTombstones(file).map((t) => [t.start.toString(), t.end.toString()])).toEqual([
      ['user:0000', 'user:0001'],
      ['zz', 'zzz'],
    ]);
  });
});

// ------------------------------------------------------------------ independent table parser

interface ParsedBlock {
  entries: Array<{ key: Buffer; value: Buffer; shared: number }>;
  restarts: number[];
}

/** Parses a generic block; in delta mode values are varint handles / deltas, decoded here. */
function parseBlock(contents: Buffer, valueDelta: boolean): ParsedBlock {
  const n = contents.readUInt32LE(contents.length - 4);
  const restartsStart = contents.length - 4 - 4 * n;
  const restarts = Array.from({ length: n }, (_, i) => contents.readUInt32LE(restartsStart + 4 * i));
  const entries: ParsedBlock['entries'] = [];
  let pos = 0;
  let key = Buffer.alloc(0);
  while (pos < restartsStart) {
    const shared = readVarint32(contents, pos);
    const nonShared = readVarint32(contents, decoded.offset);
    pos = decoded.offset;
    let valueLength = -1;
    if (!valueDelta) {
      valueLength = readVarint32(contents, pos);
      pos = decoded.offset;
    }
    key = Buffer.concat([key.subarray(0, shared), contents.subarray(pos, pos + nonShared)]);
    pos += nonShared;
    if (valueDelta) {
      const start = pos;
      readVarint64(contents, pos);
      if (shared === 0) readVarint64(contents, decoded.offset);
      valueLength = decoded.offset - start;
    }
    entries.push({ key, value: contents.subarray(pos, pos + valueLength), shared });
    pos += valueLength;
  }
  expect(pos).toBe(restartsStart);
  return { entries, restarts };
}

interface ParsedTable {
  footer: ReturnType<typeof decodeFooter>;
  meta: Map<string, { offset: number; size: number }>;
  properties: TableProperties;
  index: { size: number; contents: Buffer };
  dataBlocks: Array<ParsedBlock & { end: number; compressionType: number }>;
  rangeDel: ParsedBlock['entries'];
}

/** Reads a whole table, verifying every block checksum and that blocks tile the file. */
function parseTable(file: Buffer): ParsedTable {
  const footer = decodeFooter(file.subarray(Math.max(0, file.length - 53)), file.length, 'test');
  const readBlock = (h: { offset: number; size: number }): { contents: Buffer; type: number } => {
    const stored = file.subarray(h.offset, h.offset + h.size);
    const type = file[h.offset + h.size];
    const checksum = file.readUInt32LE(h.offset + h.size + 1);
    expect(computeBlockChecksum(footer.checksumType, file, h.offset, h.offset + h.size, type)).toBe(checksum);
    return { contents: type === CompressionType.LZ4 ? lz4DecompressBlock(stored, footer.formatVersion) : Buffer.from(stored), type };
  };
  const handleOf = (v: Buffer): { offset: number; size: number } => {
    const offset = readVarint64(v, 0);
    return { offset, size: readVarint64(v, decoded.offset) };
  };
  const meta = new Map(
    parseBlock(readBlock(footer.metaindexHandle).contents, false).entries.map((e) => [e.key.toString('latin1'), handleOf(e.value)]),
  );
  const propsHandle = meta.get('rocksdb.properties');
  expect(propsHandle).toBeDefined();
  const properties = decodePropertyMap(
    new Map(parseBlock(readBlock(propsHandle!).contents, false).entries.map((e) => [e.key.toString('latin1'), e.value])),
  );
  const index = readBlock(footer.indexHandle).contents;
  const indexEntries = parseBlock(index, properties.indexValueIsDeltaEncoded).entries;
  const dataBlocks: ParsedTable['dataBlocks'] = [];
  let previous: { offset: number; size: number } | null = null;
  for (const e of indexEntries) {
    let h: { offset: number; size: number };
    if (previous !== null && properties.indexValueIsDeltaEncoded && e.shared > 0) {
      h = { offset: previous.offset + previous.size + 5, size: previous.size + zigzagDecode(readVarint64(e.value, 0)) };
    } else {
      h = handleOf(e.value);
    }
    expect(h.offset).toBe(previous === null ? 0 : previous.offset + previous.size + 5);
    const blk = readBlock(h);
    dataBlocks.push({ ...parseBlock(blk.contents, false), end: h.offset + h.size + 5, compressionType: blk.type });
    previous = h;
  }
  const rdHandle = meta.get('rocksdb.range_del');
  const rangeDel = rdHandle === undefined ? [] : parseBlock(readBlock(rdHandle).contents, false).entries;
  return { footer, meta, properties, index: { size: index.length, contents: index }, dataBlocks, rangeDel };
}

function firstDifference(x: Buffer, y: Buffer): number {
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return i;
  return x.length === y.length ? -1 : n;
}

function pseudoRandomBytes(seed: number, n: number): Buffer {
  const out = Buffer.alloc(n);
  let s = (seed + 1) * 2654435761;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}
