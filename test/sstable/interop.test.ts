/**
 * Interoperability with RocksDB 7.8 itself: the acceptance criteria of the SST writer/reader.
 *
 * 1. Files we write, over a spread of shapes and options, are accepted by RocksDB's tools:
 *    `sst_dump --command=verify` passes, `sst_dump --command=scan` lists exactly our entries (and
 *    `--command=raw` our range tombstones), `ldb ingest_extern_sst` accepts the file into a fresh
 *    database, `ldb scan` shows exactly the visible keys, and `ldb` point lookups (which consult
 *    our Bloom filter and index) find every key we wrote and none we did not.
 * 2. Files RocksDB writes (the committed golden fixtures, and files `ldb write_extern_sst` makes
 *    during the test) read back through our reader with exactly their entries, tombstones and
 *    properties, and our filter accepts every key they hold.
 * 3. Byte identity: every uncompressed SstFileWriter fixture, rebuilt by our writer from its JSON
 *    listing (same options and session id), is identical byte for byte.
 * 4. Corruption: flipping any single byte of a small table makes open/verify and every read fail
 *    with CorruptionError, never return wrong data (see the flip test for the documented
 *    exceptions).
 *
 * Suites that need sst_dump/ldb are registered through describeIfRocksdb and report themselves
 * skipped, with the reason, when rocksdb-tools is not installed. Fixture-based suites always run.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { SstFileWriter, SstFileWriterOptions } from '../../src/sstwriter/sstFileWriter';
import { TableReader } from '../../src/sstable/reader/tableReader';
import { TableProperties } from '../../src/sstable/properties';
import { ChecksumType, parseChecksumType } from '../../src/sstable/checksum';
import { CompressionType } from '../../src/sstable/compression';
import { ValueType, sequenceOf, typeOf, userKeyOf } from '../../src/base/internalKey';
import { FOOTER_BYTES } from '../../src/sstable/format';
import { CorruptionError, IngestError } from '../../src/util/errors';
import {
  describeIfRocksdb,
  LdbDatabase,
  ldbWriteExternSst,
  sstDumpProperties,
  sstDumpRangeTombstones,
  sstDumpScan,
  sstDumpVerify,
  toHex,
} from '../support/rocksdbTools';
import { GOLDEN_DIR } from '../support/paths';

const FIXTURE_DIR = GOLDEN_DIR;

// ------------------------------------------------------------------------------------------------
// Shared helpers

interface PointEntry {
  key: Buffer;
  type: ValueType.Value | ValueType.Deletion | ValueType.Merge;
  value: Buffer;
}

interface Tombstone {
  start: Buffer;
  end: Buffer;
}

interface ReadBack {
  entries: Array<{ key: Buffer; seq: number; type: number; value: Buffer }>;
  tombstones: Array<{ start: Buffer; end: Buffer; seq: number }>;
}

/** Every point entry and tombstone of a table, through our reader (copies). */
function readAll(reader: TableReader): ReadBack {
  const entries: ReadBack['entries'] = [];
  const it = reader.newIterator();
  try {
    for (it.first(); it.valid(); it.next()) {
      const ikey = it.key();
      entries.push({ key: Buffer.from(userKeyOf(ikey)), seq: sequenceOf(ikey), type: typeOf(ikey), value: Buffer.from(it.value()) });
    }
  } finally {
    it.close();
  }
  return { entries, tombstones: reader.rangeTombstones() };
}

function withReader<T>(file: string, body: (r: TableReader) => T): T {
  const r = TableReader.open(file);
  try {
    return body(r);
  } finally {
    r.close();
  }
}

/** Deterministic byte stream (mulberry32), so every run tests the same data. */
class TestRandom {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next32(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }
  below(n: number): number {
    return this.next32() % n;
  }
  bytes(n: number): Buffer {
    const b = Buffer.allocUnsafe(n);
    for (let i = 0; i < n; i++) b[i] = this.next32() & 0xff;
    return b;
  }
}

function u64be(i: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt32BE(Math.floor(i / 2 ** 32), 0);
  b.writeUInt32BE(i >>> 0, 4);
  return b;
}

/** Sorted, de-duplicated copies of `keys`. */
function sortedUnique(keys: Buffer[]): Buffer[] {
  const sorted = [...keys].sort(Buffer.compare);
  return sorted.filter((k, i) => i === 0 || !k.equals(sorted[i - 1]));
}

function hexList(bufs: ReadonlyArray<Uint8Array>): string[] {
  return bufs.map((b) => toHex(b));
}

let scratchRoot = '';
beforeAll(() => {
  scratchRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'sst-interop-'));
});
afterAll(() => {
  if (scratchRoot !== '') fs.rmSync(scratchRoot, { recursive: true, force: true });
});

// ------------------------------------------------------------------------------------------------
// 1. Files we write, checked by RocksDB

interface Shape {
  name: string;
  options: Partial<SstFileWriterOptions>;
  points: PointEntry[];
  tombstones: Tombstone[];
}

const put = (key: Buffer, value: Buffer): PointEntry => ({ key, type: ValueType.Value, value });
const del = (key: Buffer): PointEntry => ({ key, type: ValueType.Deletion, value: Buffer.alloc(0) });
const b = (s: string): Buffer => Buffer.from(s, 'latin1');

function makeShapes(): Shape[] {
  const rnd = new TestRandom(0x1d7e);
  const shapes: Shape[] = [];
  const fv5 = { formatVersion: 5, checksumType: ChecksumType.XXH3, bloomBitsPerKey: 10 };
  const none = { compression: CompressionType.None };
  const lz4 = { compression: CompressionType.LZ4 };

  shapes.push({
    name: 'one entry (fv5, none)',
    options: { ...fv5, ...none },
    points: [put(b('the-only-key'), b('the-only-value'))],
    tombstones: [],
  });

  // 100k entries over many 4 KiB blocks; even counters only, so odd ones are known absent.
  const many: PointEntry[] = [];
  for (let i = 0; i < 100_000; i++) many.push(put(u64be(2 * i), b(`value-${i}-${'abcdefghij'.repeat(1 + (i % 3))}`)));
  shapes.push({ name: '100k entries (fv5, lz4)', options: { ...fv5, ...lz4 }, points: many, tombstones: [] });

  const prefix = 'tenant-000042/orders/' + 'x'.repeat(180) + '/';
  const shared: PointEntry[] = [];
  for (let i = 0; i < 2000; i++) shared.push(put(b(`${prefix}${String(i).padStart(6, '0')}`), b(`order ${i}`)));
  shapes.push({
    name: 'long shared prefixes (fv4, none)',
    options: { formatVersion: 4, checksumType: ChecksumType.xxHash64, bloomBitsPerKey: 10, ...none },
    points: shared,
    tombstones: [],
  });

  const empties: PointEntry[] = [];
  for (let i = 0; i < 500; i++) empties.push(put(b(`empty-${String(i).padStart(4, '0')}`), Buffer.alloc(0)));
  shapes.push({
    name: 'empty values (fv2, none)',
    options: { formatVersion: 2, checksumType: ChecksumType.CRC32c, bloomBitsPerKey: 10, ...none },
    points: empties,
    tombstones: [],
  });

  const big: PointEntry[] = [];
  for (let i = 0; i < 6; i++) {
    // Alternate incompressible and compressible 100 KiB values.
    const value = i % 2 === 0 ? rnd.bytes(100 * 1024) : Buffer.alloc(100 * 1024, `pattern-${i}`);
    big.push(put(b(`big-${i}`), value));
  }
  shapes.push({ name: '100 KiB values (fv5, lz4)', options: { ...fv5, ...lz4 }, points: big, tombstones: [] });

  const binaryKeys: Buffer[] = [
    Buffer.alloc(0),
    Buffer.from([0x00]),
    Buffer.from([0x00, 0x00]),
    Buffer.from([0x00, 0xff]),
    Buffer.from([0x7f]),
    Buffer.from([0x80]),
    Buffer.from([0xff]),
    Buffer.from([0xff, 0x00]),
    Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
  ];
  for (let i = 0; i < 400; i++) {
    const k = rnd.bytes(1 + rnd.below(40));
    if (i % 4 === 0) k[0] = 0x00;
    if (i % 4 === 1) k[k.length - 1] = 0xff;
    binaryKeys.push(k);
  }
  const binary = sortedUnique(binaryKeys).map((k, i) => put(k, i % 5 === 0 ? Buffer.from([0x00, 0xff, 0x00]) : rnd.bytes(rnd.below(64))));
  shapes.push({ name: 'binary keys with 0x00 and 0xFF (fv5, lz4)', options: { ...fv5, ...lz4 }, points: binary, tombstones: [] });

  const deletes: PointEntry[] = [];
  for (let i = 0; i < 1000; i++) {
    const k = b(`row-${String(i).padStart(5, '0')}`);
    deletes.push(i % 3 === 0 ? del(k) : put(k, b(`v${i}`)));
  }
  shapes.push({
    name: 'point deletes (fv4, lz4)',
    options: { formatVersion: 4, checksumType: ChecksumType.xxHash64, bloomBitsPerKey: 10, ...lz4 },
    points: deletes,
    tombstones: [],
  });

  const ranged: PointEntry[] = [];
  for (let i = 0; i < 500; i++) ranged.push(put(b(`item-${String(i).padStart(4, '0')}`), b(`payload-${i}`)));
  shapes.push({
    name: 'range deletions (fv5, none)',
    options: { ...fv5, ...none },
    points: ranged,
    tombstones: [
      { start: b('item-0100'), end: b('item-0150') },
      { start: b('old-'), end: b('old-~') },
      { start: Buffer.from([0xff]), end: Buffer.from([0xff, 0xff]) },
    ],
  });

  shapes.push({
    name: 'range deletions only (fv2, lz4)',
    options: { formatVersion: 2, checksumType: ChecksumType.CRC32c, bloomBitsPerKey: 10, ...lz4 },
    points: [],
    tombstones: [
      { start: Buffer.alloc(0), end: Buffer.from([0x00, 0x01]) },
      { start: b('gone-a'), end: b('gone-m') },
      { start: b('x'), end: Buffer.from([0xff, 0xff]) },
    ],
  });
  return shapes;
}

function writeShape(file: string, shape: Shape): void {
  const w = new SstFileWriter(file, shape.options);
  try {
    for (const t of shape.tombstones) w.deleteRange(t.start, t.end);
    for (const p of shape.points) {
      if (p.type === ValueType.Value) w.put(p.key, p.value);
      else if (p.type === ValueType.Deletion) w.delete(p.key);
      else w.merge(p.key, p.value);
    }
    w.finish();
  } catch (e) {
    w.abort();
    throw e;
  }
}

function covered(key: Buffer, tombstones: readonly Tombstone[]): boolean {
  return tombstones.some((t) => Buffer.compare(t.start, key) <= 0 && Buffer.compare(key, t.end) < 0);
}

/** Keys RocksDB must not find after ingesting `shape` (no entry, or a point delete). */
function absentKeys(shape: Shape): Buffer[] {
  const present = new Set(shape.points.filter((p) => p.type === ValueType.Value).map((p) => toHex(p.key)));
  const candidates = [b('absent-key'), b('zzzz-beyond-everything'), u64be(1), u64be(199_999), Buffer.from([0x01, 0x02])];
  const deleted = shape.points
    .filter((p) => p.type === ValueType.Deletion)
    .slice(0, 3)
    .map((p) => p.key);
  return [...candidates.filter((k) => !present.has(toHex(k))), ...deleted];
}

/** At most `n` entries spread evenly over `all`, always including the first and last. */
function sample<T>(all: readonly T[], n: number): T[] {
  if (all.length <= n) return [...all];
  const out: T[] = [];
  for (let i = 0; i < n; i++) out.push(all[Math.round((i * (all.length - 1)) / (n - 1))]);
  return out;
}

describeIfRocksdb('RocksDB reads the files we write', () => {
  test('the oracle is not blind: sst_dump verify reports a corrupted copy', () => {
    const good = path.join(scratchRoot, 'oracle-good.sst');
    writeShape(good, {
      name: 'oracle',
      options: { compression: CompressionType.None },
      points: [put(b('key'), b('value'))],
      tombstones: [],
    });
    expect(sstDumpVerify(good).ok).toBe(true);
    const bytes = fs.readFileSync(good);
    bytes[2] ^= 0x01; // inside the first data block
    const bad = path.join(scratchRoot, 'oracle-bad.sst');
    fs.writeFileSync(bad, bytes);
    const r = sstDumpVerify(bad);
    expect(r.ok).toBe(false);
    expect(r.output).toMatch(/corrupt/i);
  });

  for (const shape of makeShapes()) {
    describe(shape.name, () => {
      let file = '';
      beforeAll(() => {
        file = path.join(scratchRoot, `ours-${shape.name.replace(/[^a-z0-9]+/gi, '_')}.sst`);
        writeShape(file, shape);
      });

      test('sst_dump --command=verify passes', () => {
        const r = sstDumpVerify(file);
        expect(r.output).not.toMatch(/corrupt/i);
        expect(r.ok).toBe(true);
      });

      test('sst_dump lists exactly our entries, range tombstones and counts', () => {
        const scanned = sstDumpScan(file);
        expect(scanned.length).toBe(shape.points.length);
        for (let i = 0; i < shape.points.length; i++) {
          const want = shape.points[i];
          const got = scanned[i];
          if (!got.userKey.equals(want.key) || got.seq !== 0 || got.type !== want.type || !got.value.equals(want.value)) {
            throw new Error(
              `entry ${i}: sst_dump read ${toHex(got.userKey)}@${got.seq}/${got.type}, we wrote ${toHex(want.key)}@0/${want.type}`,
            );
          }
        }
        // raw dumps every block, so it is only worth its time where there are tombstones to see.
        if (shape.tombstones.length > 0) {
          const tombstones = sstDumpRangeTombstones(file);
          expect(tombstones.map((t) => [toHex(t.start), toHex(t.end)])).toEqual(
            shape.tombstones.map((t) => [toHex(t.start), toHex(t.end)]),
          );
        }
        const props = sstDumpProperties(file);
        const deletes = shape.points.filter((p) => p.type === ValueType.Deletion).length;
        expect({
          entries: props.get('# entries'),
          deletions: props.get('# deletions'),
          rangeDeletions: props.get('# range deletions'),
          filterPolicy: props.get('filter policy name'),
          compression: props.get('SST file compression algo'),
        }).toEqual({
          entries: String(shape.points.length + shape.tombstones.length),
          deletions: String(deletes + shape.tombstones.length),
          rangeDeletions: String(shape.tombstones.length),
          filterPolicy: 'bloomfilter',
          compression: shape.options.compression === CompressionType.LZ4 ? 'LZ4' : 'NoCompression',
        });
      });

      test('ldb ingests it into a fresh database and finds every key', () => {
        const dbDir = fs.mkdtempSync(path.join(scratchRoot, 'db-'));
        // Keys written before the ingestion, some inside our tombstones: the ingested file gets a
        // higher global seqno, so RocksDB must hide exactly the covered ones.
        const older = shape.tombstones.flatMap((t) => [Buffer.concat([t.start, b('-older')]), Buffer.concat([t.end, b('-older')])]);
        let db: LdbDatabase;
        if (older.length > 0) {
          db = LdbDatabase.create(dbDir, older[0], b('older-value'));
          for (const k of older.slice(1)) db.put(k, b('older-value'));
        } else {
          db = new LdbDatabase(dbDir);
        }
        db.ingest(file, { createIfMissing: older.length === 0 });

        const visible = new Map<string, Buffer>();
        for (const k of older) if (!covered(k, shape.tombstones)) visible.set(toHex(k), b('older-value'));
        for (const p of shape.points) {
          if (p.type === ValueType.Value) visible.set(toHex(p.key), p.value);
          else visible.delete(toHex(p.key));
        }
        const expected = [...visible.entries()].sort(([x], [y]) => Buffer.compare(Buffer.from(x, 'hex'), Buffer.from(y, 'hex')));
        const scanned = db.scan();
        expect(scanned.length).toBe(expected.length);
        expect(hexList(scanned.map(([k]) => k))).toEqual(expected.map(([k]) => k));
        for (let i = 0; i < expected.length; i++) {
          if (!scanned[i][1].equals(expected[i][1])) throw new Error(`value of ${expected[i][0]} differs after ingestion`);
        }

        // Point lookups go through RocksDB's filter and index reader.
        const puts = shape.points.filter((p) => p.type === ValueType.Value);
        const picked = sample(puts, 2000);
        if (picked.length > 0) {
          const values = db.getAll(picked.map((p) => p.key));
          for (let i = 0; i < picked.length; i++) expect(toHex(values[i])).toBe(toHex(picked[i].value));
        }
        for (const k of absentKeys(shape)) expect(db.get(k)).toBeNull();

        if (shape.tombstones.length > 0) {
          const listed = db.rangeDeletes();
          expect(listed.map((t) => [toHex(t.start), toHex(t.end)])).toEqual(shape.tombstones.map((t) => [toHex(t.start), toHex(t.end)]));
          expect(listed.every((t) => t.seq > 0)).toBe(true); // assigned at ingestion, above the older writes
        }
      });
    });
  }
});

// ------------------------------------------------------------------------------------------------
// 2. Files RocksDB writes, read by us

interface GoldenFixture {
  file: string;
  generator: string;
  fileSizeBytes: number;
  byteIdentityCandidate: boolean;
  options: {
    formatVersion: number;
    checksum: string;
    compression: 'none' | 'lz4';
    bloomBitsPerKey: number;
    blockSizeBytes: number;
    blockRestartInterval: number;
    indexBlockRestartInterval: number;
  };
  globalSeqno: number;
  entries: Array<[string, number, number, string]>;
  rangeTombstones: Array<{ startHex: string; endHex: string; seq: number }>;
  properties: { numeric: Record<string, number>; string: Record<string, string> };
}

function loadFixtures(): Array<{ name: string; sst: string; json: GoldenFixture }> {
  return fs
    .readdirSync(FIXTURE_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => {
      const json = JSON.parse(fs.readFileSync(path.join(FIXTURE_DIR, f), 'utf8')) as GoldenFixture;
      return { name: json.file, sst: path.join(FIXTURE_DIR, json.file), json };
    });
}

/** JSON property name → our TableProperties field, for the properties both sides report. */
const NUMERIC_PROPERTIES: ReadonlyArray<[string, keyof TableProperties]> = [
  ['rocksdb.data.size', 'dataSize'],
  ['rocksdb.index.size', 'indexSize'],
  ['rocksdb.filter.size', 'filterSize'],
  ['rocksdb.raw.key.size', 'rawKeySize'],
  ['rocksdb.raw.value.size', 'rawValueSize'],
  ['rocksdb.num.data.blocks', 'numDataBlocks'],
  ['rocksdb.num.entries', 'numEntries'],
  ['rocksdb.num.filter_entries', 'numFilterEntries'],
  ['rocksdb.deleted.keys', 'numDeletions'],
  ['rocksdb.merge.operands', 'numMergeOperands'],
  ['rocksdb.num.range-deletions', 'numRangeDeletions'],
  ['rocksdb.column.family.id', 'columnFamilyId'],
  ['rocksdb.creation.time', 'creationTime'],
  ['rocksdb.oldest.key.time', 'oldestKeyTime'],
  ['rocksdb.file.creation.time', 'fileCreationTime'],
];
const STRING_PROPERTIES: ReadonlyArray<[string, keyof TableProperties]> = [
  ['rocksdb.column.family.name', 'columnFamilyName'],
  ['rocksdb.comparator', 'comparatorName'],
  ['rocksdb.compression', 'compressionName'],
  ['rocksdb.creating.db.identity', 'dbId'],
  ['rocksdb.creating.host.identity', 'dbHostId'],
  ['rocksdb.creating.session.identity', 'dbSessionId'],
  ['rocksdb.filter.policy', 'filterPolicyName'],
  ['rocksdb.merge.operator', 'mergeOperatorName'],
];

/** Keys that share nothing with the fixtures' key sets, for the filter's false-positive rate. */
function probeKeys(count: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < count; i++) out.push(b(`absent-probe-${i}`));
  return out;
}

/** Our filter must accept every key; and reject most absent ones, or it is not really checking. */
function expectFilterAgrees(reader: TableReader, keys: readonly Buffer[], hasFilter: boolean): void {
  const rejected = keys.filter((k) => !reader.keyMayMatch(k));
  expect(hexList(rejected)).toEqual([]);
  const present = new Set(hexList(keys));
  const probes = probeKeys(2000).filter((k) => !present.has(toHex(k)));
  const falsePositives = probes.filter((k) => reader.keyMayMatch(k)).length;
  if (hasFilter)
    expect(falsePositives).toBeLessThan(probes.length * 0.05); // ~1% expected at 10 bits/key
  else expect(falsePositives).toBe(probes.length);
}

describe('our reader reads the RocksDB-written golden fixtures', () => {
  const fixtures = loadFixtures();

  test('the fixture set is present', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(10);
  });

  for (const fx of fixtures) {
    test(`${fx.name}: entries, tombstones, properties, filter and verify`, () => {
      expect(fs.statSync(fx.sst).size).toBe(fx.json.fileSizeBytes);
      withReader(fx.sst, (r) => {
        const got = readAll(r);
        expect(got.entries.map((e) => [toHex(e.key), e.seq, e.type, toHex(e.value)])).toEqual(fx.json.entries);
        expect(got.tombstones.map((t) => ({ startHex: toHex(t.start), endHex: toHex(t.end), seq: t.seq }))).toEqual(
          fx.json.rangeTombstones,
        );
        for (const [name, field] of NUMERIC_PROPERTIES)
          expect([name, r.properties[field]]).toEqual([name, fx.json.properties.numeric[name]]);
        for (const [name, field] of STRING_PROPERTIES) expect([name, r.properties[field]]).toEqual([name, fx.json.properties.string[name]]);
        expect(r.footer.formatVersion).toBe(fx.json.options.formatVersion);
        expect(r.footer.checksumType).toBe(parseChecksumType(fx.json.options.checksum));
        const userKeys = sortedUnique(got.entries.map((e) => e.key));
        if (userKeys.length > 0) expectFilterAgrees(r, userKeys, fx.json.options.bloomBitsPerKey > 0);
        // Point lookups return the newest version of each key.
        for (const e of got.entries.filter((x, i, all) => i === 0 || !all[i - 1].key.equals(x.key))) {
          const hit = r.get(e.key);
          expect(hit === null ? null : [hit.seq, hit.type, toHex(hit.value)]).toEqual([e.seq, e.type, toHex(e.value)]);
        }
        r.verify();
      });
    });
  }
});

describeIfRocksdb('our reader reads files made by ldb write_extern_sst', () => {
  const rnd = new TestRandom(0xe7);
  const keys = sortedUnique([
    Buffer.from([0x00]),
    Buffer.from([0x00, 0xff]),
    Buffer.from([0xff]),
    Buffer.from([0xff, 0xff, 0xff]),
    ...Array.from({ length: 3000 }, (_, i) => (i % 2 === 0 ? b(`user:${String(i).padStart(6, '0')}`) : rnd.bytes(1 + rnd.below(24)))),
  ]);
  const entries: Array<[Buffer, Buffer]> = keys.map((k, i) => [k, i % 7 === 0 ? Buffer.alloc(0) : b(`value ${i} `.repeat(1 + (i % 5)))]);

  for (const compression of ['lz4', 'no'] as const) {
    test(`--compression_type=${compression} --bloom_bits=10`, () => {
      const file = path.join(scratchRoot, `ldb-${compression}.sst`);
      ldbWriteExternSst(file, entries, { compression, bloomBits: 10 }, scratchRoot);
      withReader(file, (r) => {
        expect(r.properties.compressionName).toBe(compression === 'lz4' ? 'LZ4' : 'NoCompression');
        expect(r.properties.filterPolicyName).toBe('bloomfilter');
        expect(r.properties.numEntries).toBe(entries.length);
        expect(r.properties.numDataBlocks).toBeGreaterThan(5);
        const got = readAll(r);
        expect(got.entries.length).toBe(entries.length);
        for (let i = 0; i < entries.length; i++) {
          const e = got.entries[i];
          if (!e.key.equals(entries[i][0]) || e.seq !== 0 || e.type !== ValueType.Value || !e.value.equals(entries[i][1])) {
            throw new Error(`entry ${i}: read ${toHex(e.key)}@${e.seq}/${e.type}, ldb wrote ${toHex(entries[i][0])}`);
          }
        }
        expect(got.tombstones).toEqual([]);
        expectFilterAgrees(r, keys, true);
        for (const [k, v] of sample(entries, 200)) expect(r.get(k)?.value.toString('hex')).toBe(v.toString('hex'));
        r.verify();
      });
    });
  }
});

// ------------------------------------------------------------------------------------------------
// 3. Byte identity with RocksDB's SstFileWriter

function writerOptionsFor(fx: GoldenFixture): Partial<SstFileWriterOptions> {
  const p = fx.properties;
  return {
    formatVersion: fx.options.formatVersion,
    checksumType: parseChecksumType(fx.options.checksum),
    compression: fx.options.compression === 'lz4' ? CompressionType.LZ4 : CompressionType.None,
    bloomBitsPerKey: fx.options.bloomBitsPerKey,
    blockSizeBytes: fx.options.blockSizeBytes,
    blockRestartInterval: fx.options.blockRestartInterval,
    indexBlockRestartInterval: fx.options.indexBlockRestartInterval,
    dbSessionId: p.string['rocksdb.creating.session.identity'],
    dbId: p.string['rocksdb.creating.db.identity'],
    dbHostId: p.string['rocksdb.creating.host.identity'],
    columnFamilyId: p.numeric['rocksdb.column.family.id'],
    columnFamilyName: p.string['rocksdb.column.family.name'],
    mergeOperatorName: p.string['rocksdb.merge.operator'],
    creationTime: p.numeric['rocksdb.creation.time'],
    oldestKeyTime: p.numeric['rocksdb.oldest.key.time'],
    fileCreationTime: p.numeric['rocksdb.file.creation.time'],
    originalFileNumber: p.numeric['rocksdb.original.file.number'],
  };
}

describe('byte identity with RocksDB SstFileWriter', () => {
  const candidates = loadFixtures().filter((f) => f.json.byteIdentityCandidate);

  test('there are uncompressed SstFileWriter fixtures to rebuild', () => {
    expect(candidates.length).toBeGreaterThanOrEqual(5);
  });

  for (const fx of candidates) {
    test(`${fx.name} rebuilt by our writer is identical`, () => {
      const out = path.join(scratchRoot, `rebuilt-${fx.name}`);
      const w = new SstFileWriter(out, writerOptionsFor(fx.json));
      // Same call order as the generator: tombstones first, then the point entries.
      for (const t of fx.json.rangeTombstones) w.deleteRange(Buffer.from(t.startHex, 'hex'), Buffer.from(t.endHex, 'hex'));
      for (const [keyHex, , type, valueHex] of fx.json.entries) {
        const key = Buffer.from(keyHex, 'hex');
        if (type === ValueType.Value) w.put(key, Buffer.from(valueHex, 'hex'));
        else if (type === ValueType.Deletion) w.delete(key);
        else if (type === ValueType.Merge) w.merge(key, Buffer.from(valueHex, 'hex'));
        else throw new Error(`fixture ${fx.name} holds entry type ${type}, which SstFileWriter cannot write`);
      }
      w.finish();
      const ours = fs.readFileSync(out);
      const theirs = fs.readFileSync(fx.sst);
      let firstDifference = -1;
      for (let i = 0; i < Math.min(ours.length, theirs.length); i++) {
        if (ours[i] !== theirs[i]) {
          firstDifference = i;
          break;
        }
      }
      expect({ length: ours.length, firstDifference }).toEqual({ length: theirs.length, firstDifference: -1 });
    });
  }
});

// ------------------------------------------------------------------------------------------------
// 4. Single-byte corruption

/** File offset of the 8 value bytes of rocksdb.external_sst_file.global_seqno. */
function globalSeqnoValueOffset(bytes: Buffer): number {
  // In the properties block the key is prefix-compressed, but its suffix after "rocksdb." is
  // stored whole (the previous property, rocksdb.deleted.keys or similar, shares only that).
  const suffix = b('external_sst_file.global_seqno');
  const at = bytes.indexOf(suffix);
  expect(at).toBeGreaterThan(0);
  expect(bytes.indexOf(suffix, at + 1)).toBe(-1);
  const value = at + suffix.length;
  expect(bytes.subarray(value, value + 8).equals(Buffer.alloc(8))).toBe(true);
  return value;
}

type FlipOutcome = 'detected' | 'seqno-changed' | 'version-changed' | 'slipped-through';

function describeError(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

function sameData(got: ReadBack, want: ReadBack): boolean {
  const flat = (r: ReadBack): string[] => [
    ...r.entries.map((e) => `${toHex(e.key)}@${e.seq}/${e.type}=${toHex(e.value)}`),
    ...r.tombstones.map((t) => `[${toHex(t.start)},${toHex(t.end)})@${t.seq}`),
  ];
  const g = flat(got);
  const w = flat(want);
  return g.length === w.length && g.every((x, i) => x === w[i]);
}

interface FlipLayout {
  /** File offset of the 8 global-seqno value bytes in the properties block. */
  seqnoOffset: number;
  /** File offset of the footer's u32le format_version. */
  versionOffset: number;
}

/**
 * Opens, verifies and fully reads (scan, tombstones, a get per key) the corrupt table at `file`.
 * 'detected': open threw a CorruptionError (or refused an out-of-range format_version), or both
 * verify and the reads threw CorruptionError. The two tolerated exceptions are checked here:
 * a flip of the global seqno value bytes must show as that seqno on every key, and a flip of
 * the format_version to another supported version must read back identical data. Anything
 * else comes back as 'slipped-through' with a description.
 */
function checkFlip(file: string, offset: number, original: ReadBack, layout: FlipLayout): { outcome: FlipOutcome; detail: string } {
  const inSeqno = offset >= layout.seqnoOffset && offset < layout.seqnoOffset + 8;
  const inVersion = offset >= layout.versionOffset && offset < layout.versionOffset + 4;
  let reader: TableReader;
  try {
    reader = TableReader.open(file);
  } catch (e) {
    if (e instanceof CorruptionError) return { outcome: 'detected', detail: '' };
    if (inVersion && e instanceof IngestError && e.code === 'NOT_SUPPORTED') return { outcome: 'detected', detail: '' };
    return { outcome: 'slipped-through', detail: `open threw ${describeError(e)}` };
  }
  try {
    let verifyError: unknown = null;
    try {
      reader.verify();
    } catch (e) {
      verifyError = e;
    }
    let readError: unknown = null;
    let read: ReadBack | null = null;
    try {
      read = readAll(reader);
      for (const e of read.entries) reader.get(e.key);
    } catch (e) {
      readError = e;
    }
    for (const e of [verifyError, readError]) {
      if (e !== null && !(e instanceof CorruptionError)) return { outcome: 'slipped-through', detail: `threw ${describeError(e)}` };
    }
    if (verifyError !== null && readError !== null) return { outcome: 'detected', detail: '' };
    const dataNote =
      read === null ? 'reads failed' : sameData(read, original) ? 'reads returned the original data' : 'reads returned WRONG data';
    if (verifyError === null && readError === null && read !== null) {
      const seqno = reader.globalSeqno;
      if (inSeqno && seqno > 0 && read.entries.every((e) => e.seq === seqno) && read.tombstones.every((t) => t.seq === seqno)) {
        return { outcome: 'seqno-changed', detail: '' };
      }
      if (inVersion && sameData(read, original)) return { outcome: 'version-changed', detail: '' };
    }
    return { outcome: 'slipped-through', detail: `verify ${verifyError === null ? 'passed' : 'failed'}, ${dataNote}` };
  } finally {
    reader.close();
  }
}

/**
 * Flips every byte of `source` and checks each corrupt copy with checkFlip. Each byte is
 * inverted once and gets one single-bit flip (the bit rotating with the offset, so every bit
 * position is exercised); footer bytes, which no checksum covers, get all eight single-bit flips.
 */
function flipEveryByte(source: string, label: string): void {
  const bytes = fs.readFileSync(source);
  const original = withReader(source, readAll);
  // Footer: checksum type, handles + zero padding (40 bytes), u32 format_version, u64 magic.
  const layout: FlipLayout = { seqnoOffset: globalSeqnoValueOffset(bytes), versionOffset: bytes.length - 12 };
  const file = path.join(scratchRoot, `flipped-${label}.sst`);
  const counts = new Map<FlipOutcome, number>();
  const slipped: string[] = [];
  const versionChanged: number[] = [];
  const flips: Array<[number, number]> = [];
  for (let offset = 0; offset < bytes.length; offset++) flips.push([offset, 1 << (offset % 8)], [offset, 0xff]);
  for (let offset = bytes.length - FOOTER_BYTES; offset < bytes.length; offset++) {
    for (let bit = 0; bit < 8; bit++) if (bit !== offset % 8) flips.push([offset, 1 << bit]);
  }
  const flipped = Buffer.from(bytes);
  for (const [offset, mask] of flips) {
    flipped[offset] = bytes[offset] ^ mask;
    fs.writeFileSync(file, flipped);
    flipped[offset] = bytes[offset];
    const { outcome, detail } = checkFlip(file, offset, original, layout);
    counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
    if (outcome === 'slipped-through') slipped.push(`offset ${offset} of ${bytes.length} ^0x${mask.toString(16)}: ${detail}`);
    if (outcome === 'version-changed') versionChanged.push(offset);
  }
  expect(slipped).toEqual([]);
  // format_version 5 -> 4 (or 2 -> 3) names another version that reads identically; the 7.8
  // footer has no checksum, so only that low-bit flip of the version's low byte is tolerated.
  expect(versionChanged.every((o) => o === layout.versionOffset)).toBe(true);
  expect(counts.get('seqno-changed') ?? 0).toBeLessThanOrEqual(16);
  expect(counts.get('detected')).toBeGreaterThanOrEqual(flips.length - 17);
}

describe('single-byte corruption is always detected', () => {
  test('every byte of a ~2.5 KB table we wrote (fv5, XXH3, Bloom, range deletion)', () => {
    const file = path.join(scratchRoot, 'flip-source-ours.sst');
    const w = new SstFileWriter(file, {
      formatVersion: 5,
      checksumType: ChecksumType.XXH3,
      compression: CompressionType.None,
      bloomBitsPerKey: 10,
      blockSizeBytes: 512,
    });
    w.deleteRange(b('k010'), b('k015'));
    for (let i = 0; i < 40; i++) {
      const k = b(`k${String(i).padStart(3, '0')}`);
      if (i % 9 === 4) w.delete(k);
      else w.put(k, b(`value-${i}-${'x'.repeat(i % 13)}`));
    }
    w.finish();
    const size = fs.statSync(file).size;
    expect(size).toBeGreaterThan(1500);
    expect(size).toBeLessThan(3500);
    flipEveryByte(file, 'ours');
  });

  test('every byte of a RocksDB-written LZ4 table (fv2, CRC32C)', () => {
    flipEveryByte(path.join(FIXTURE_DIR, 'fv2_crc32c_lz4.sst'), 'fv2_crc32c_lz4');
  });
});
