/**
 * The conflict report's value display and file, the skip rewrite, the row-origins side files,
 * and the on-conflict policies.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../src/engine/engine';
import { TableReader } from '../../src/sstable/reader/tableReader';
import { userKeyOf } from '../../src/base/internalKey';
import { checkSstConflicts } from '../../src/conflict/checkSstConflicts';
import { CONFLICT_REPORT_VERSION, showKey, showValue, VALUE_SHOWN_MAX_BYTES, writeConflictReport } from '../../src/conflict/report';
import { defaultSkipPath, rewriteWithoutKeys } from '../../src/conflict/rewrite';
import { RowOriginIndex } from '../../src/conflict/rowOrigins';
import { originsPathFor, RowOriginsWriter } from '../../src/conflict/rowOriginsFile';
import { parseOnConflict, applyConflictPolicy } from '../../src/conflict/policy';
import { rng, writeSstSet } from './support';
import { SstFileWriter } from '../../src/sstwriter/sstFileWriter';
import { CompressionType, compressionName } from '../../src/sstable/compression';

let root: string;
beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'conflict-report-'));
});
afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

function entriesOf(p: string): Array<[string, string]> {
  const reader = TableReader.open(p);
  const it = reader.newIterator();
  const out: Array<[string, string]> = [];
  for (it.first(); it.valid(); it.next()) out.push([userKeyOf(it.key()).toString(), it.value().toString()]);
  it.close();
  reader.close();
  return out;
}

describe('value display', () => {
  test('printable UTF-8 is shown as text, anything else as hex', () => {
    expect(showValue(Buffer.from('hello, wörld\ttab'))).toEqual({
      encoding: 'utf8',
      data: 'hello, wörld\ttab',
      sizeBytes: 17,
      truncated: false,
    });
    expect(showValue(Buffer.from([0x61, 0x00, 0x62]))).toEqual({ encoding: 'hex', data: '610062', sizeBytes: 3, truncated: false });
    expect(showValue(Buffer.from([0xc3, 0x28]))).toMatchObject({ encoding: 'hex', data: 'c328' }); // invalid UTF-8
    expect(showValue(Buffer.from('\u0085x'))).toMatchObject({ encoding: 'hex' }); // a C1 control
    expect(showValue(Buffer.alloc(0))).toEqual({ encoding: 'utf8', data: '', sizeBytes: 0, truncated: false });
    expect(showKey(Buffer.from('k1'))).toBe('k1');
    expect(showKey(Buffer.from([0, 1, 255]))).toBe('0x0001ff');
  });

  test('long values are cut at VALUE_SHOWN_MAX_BYTES, never inside a UTF-8 character, with the full size', () => {
    const ascii = Buffer.from('a'.repeat(1000));
    expect(showValue(ascii)).toEqual({ encoding: 'utf8', data: 'a'.repeat(VALUE_SHOWN_MAX_BYTES), sizeBytes: 1000, truncated: true });
    // 255 ASCII bytes then a 3-byte character straddling the cut: the cut moves before it.
    const straddle = Buffer.concat([Buffer.from('b'.repeat(255)), Buffer.from('€€€')]);
    const shown = showValue(straddle);
    expect(shown).toEqual({ encoding: 'utf8', data: 'b'.repeat(255), sizeBytes: 264, truncated: true });
    // A character ending exactly at the cut is kept.
    const exact = Buffer.concat([Buffer.from('c'.repeat(253)), Buffer.from('€'), Buffer.from('tail')]);
    expect(showValue(exact).data).toBe(`${'c'.repeat(253)}€`);
    // Binary: the first 256 bytes in hex.
    const bin = Buffer.alloc(300, 0x01);
    expect(showValue(bin)).toEqual({ encoding: 'hex', data: '01'.repeat(VALUE_SHOWN_MAX_BYTES), sizeBytes: 300, truncated: true });
    // A prefix copy with the full size given separately (what the collector keeps).
    expect(showValue(ascii.subarray(0, VALUE_SHOWN_MAX_BYTES), 1000)).toMatchObject({ sizeBytes: 1000, truncated: true });
  });
});

describe('report file, rewrite, policies', () => {
  let engine: Engine;
  let dbDir: string;
  beforeAll(async () => {
    dbDir = path.join(root, 'db');
    engine = await Engine.open(dbDir);
    for (let i = 0; i < 100; i++) await engine.put(Buffer.from(`k${String(i).padStart(3, '0')}`), Buffer.from(`v${i}`));
    await engine.put(Buffer.from('k050'), Buffer.concat([Buffer.from([0xff, 0]), Buffer.alloc(400, 7)]));
  });
  afterAll(async () => {
    await engine.close();
  });

  /** Rows: every 3rd key of k000..k119; k000-k039 keep their value, the rest change (k100+ are new). */
  function rows(): Array<[string, string]> {
    const out: Array<[string, string]> = [];
    for (let i = 0; i < 120; i += 3) out.push([`k${String(i).padStart(3, '0')}`, i < 40 ? `v${i}` : `w${i}`]);
    return out;
  }

  test('writeConflictReport writes the versioned JSON document atomically, without the collected keys', () => {
    const paths = writeSstSet(path.join(root, 'rep'), rows(), 3, rng(1));
    const report = checkSstConflicts(engine, paths, { maxReported: 4, collectConflictingKeys: true });
    const file = path.join(root, 'report.json');
    writeConflictReport(file, report);
    const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(doc.format).toBe('sst-ingest.conflict-report');
    expect(doc.version).toBe(CONFLICT_REPORT_VERSION);
    expect(doc.conflictingKeys).toBeUndefined();
    expect(doc.db).toBe(dbDir);
    expect(doc.summary).toMatchObject({ sstKeys: 40, unchanged: 14, conflicts: 20, new: 6, conflictsReported: 4, maxReported: 4 });
    expect(typeof doc.summary.scanSeconds).toBe('number');
    expect(doc.conflicts.map((c: { key: string }) => c.key)).toEqual(['k042', 'k045', 'k048', 'k051']);
    expect(doc.conflicts[0]).toMatchObject({
      keyHex: Buffer.from('k042').toString('hex'),
      existingValue: { encoding: 'utf8', data: 'v42' },
      newValue: { data: 'w42' },
      source: null,
    });
    expect(fs.readdirSync(root).filter((f) => f.includes('.tmp'))).toEqual([]);
    // The binary, long value of k050 is not listed (k050 is not a row), but k051's is plain.
    const all = checkSstConflicts(engine, writeSstSet(path.join(root, 'rep2'), [['k050', 'x']], 1, rng(2)));
    expect(all.conflicts[0].existingValue).toMatchObject({ encoding: 'hex', sizeBytes: 402, truncated: true });
    expect(all.conflicts[0].existingValue.data).toHaveLength(2 * VALUE_SHOWN_MAX_BYTES);
  });

  test('rewriteWithoutKeys drops exactly the given keys, rewrites only files holding one, and never touches originals', () => {
    const paths = writeSstSet(path.join(root, 'rw'), rows(), 4, rng(3));
    const before = paths.map((p) => fs.readFileSync(p));
    const drop = ['k003', 'k006', 'k117'].map((k) => Buffer.from(k));
    const r = rewriteWithoutKeys(paths, drop);
    const survivors = r.paths.flatMap(entriesOf).map(([k]) => k);
    const expected = rows()
      .map(([k]) => k)
      .filter((k) => !['k003', 'k006', 'k117'].includes(k));
    expect(survivors).toEqual(expected);
    expect(r.rewritten.reduce((n, f) => n + f.droppedEntries, 0)).toBe(3);
    for (const f of r.rewritten) expect(f.to).toBe(defaultSkipPath(f.from));
    const untouched = paths.filter((p) => !r.rewritten.some((f) => f.from === p));
    for (const p of untouched) expect(r.paths).toContain(p);
    paths.forEach((p, i) => expect(fs.readFileSync(p).equals(before[i])).toBe(true));
    // A file all of whose keys go is left out.
    const single = writeSstSet(path.join(root, 'rw-one'), [['only', 'x']], 1, rng(4));
    expect(rewriteWithoutKeys(single, [Buffer.from('only')])).toEqual({
      paths: [],
      rewritten: [],
      emptied: single,
      unchangedLeftOut: [],
      unchangedDropped: 0,
    });
    expect(fs.existsSync(defaultSkipPath(single[0]))).toBe(false);
  });

  test.each([CompressionType.LZ4, CompressionType.ZSTD, CompressionType.Snappy, CompressionType.None])(
    'a skip rewrite keeps the compression its source shows (%s)',
    (compression) => {
      const src = path.join(root, `rw-comp-${compression}.sst`);
      const w = new SstFileWriter(src, { compression });
      for (let i = 0; i < 2000; i++) w.put(Buffer.from(`key${String(i).padStart(5, '0')}`), Buffer.from(`value ${i} `.repeat(8)));
      w.finish();
      const r = rewriteWithoutKeys([src], [Buffer.from('key00010')]);
      expect(r.rewritten).toHaveLength(1);
      const reader = TableReader.open(r.rewritten[0].to);
      try {
        expect(reader.properties.compressionName).toBe(compressionName(compression));
      } finally {
        reader.close();
      }
      expect(entriesOf(r.rewritten[0].to)).toHaveLength(1999);
    },
  );

  test('policies: abort holds everything back, overwrite takes all, skip rewrites without the conflicting rows', () => {
    const paths = writeSstSet(path.join(root, 'pol'), rows(), 2, rng(5));
    const report = checkSstConflicts(engine, paths, { collectConflictingKeys: true, maxReported: 0 });
    expect(applyConflictPolicy('abort', report, paths)).toMatchObject({ ingest: false, files: [], rowsHeldBack: 20 });
    expect(applyConflictPolicy('overwrite', report, paths)).toMatchObject({ ingest: true, files: paths, rowsHeldBack: 0 });
    const skip = applyConflictPolicy('skip', report, paths);
    expect(skip.ingest).toBe(true);
    // What skip would ingest: nothing that conflicts, everything else.
    const recheck = checkSstConflicts(engine, skip.files);
    expect(recheck.summary).toMatchObject({ conflicts: 0, unchanged: 14, new: 6 });
    const noKeys = checkSstConflicts(engine, paths);
    expect(() => applyConflictPolicy('skip', noKeys, paths)).toThrow(/collectConflictingKeys/);
    expect(parseOnConflict('skip')).toBe('skip');
    expect(() => parseOnConflict('merge')).toThrow(/abort, overwrite, skip/);
    // Without conflicts, abort ingests everything.
    const clean = writeSstSet(path.join(root, 'pol-clean'), [['k001', 'v1']], 1, rng(6));
    expect(applyConflictPolicy('abort', checkSstConflicts(engine, clean), clean)).toMatchObject({ ingest: true, files: clean });
  });

  test("row origins: the side file names each conflicting row's input file and line", () => {
    const dir = path.join(root, 'orig');
    const r = rows();
    const paths = writeSstSet(dir, r, 3, rng(7));
    // Origins as an importer would write them: entry for entry, in each SST's key order.
    for (const p of paths) {
      const w = new RowOriginsWriter(originsPathFor(p), ['a.csv', 'b.csv']);
      for (const [k] of entriesOf(p)) {
        const i = Number(k.slice(1));
        w.add(i % 2, 1000 + i);
      }
      w.finish();
    }
    const index = RowOriginIndex.open(paths);
    try {
      const report = checkSstConflicts(engine, paths, { maxReported: 100, sourceOf: (k) => index.sourceOf(k) });
      expect(report.conflicts).toHaveLength(20);
      for (const c of report.conflicts) {
        const i = Number(c.key.slice(1));
        expect(c.source).toEqual({ file: i % 2 === 0 ? 'a.csv' : 'b.csv', line: 1000 + i });
      }
      // Out-of-order lookups restart the walk and still answer.
      expect(index.sourceOf(Buffer.from('k003'))).toEqual({ file: 'b.csv', line: 1003 });
      expect(index.sourceOf(Buffer.from('k004'))).toBeUndefined(); // not a row
    } finally {
      index.close();
    }
    // A corrupted side file is detected.
    const o = originsPathFor(paths[0]);
    const bytes = fs.readFileSync(o);
    bytes[bytes.length - 6] ^= 1;
    fs.writeFileSync(o, bytes);
    const broken = RowOriginIndex.open(paths);
    try {
      expect(() => broken.sourceOf(Buffer.from(entriesOf(paths[0])[0][0]))).toThrow(/checksum/);
    } finally {
      broken.close();
    }
  });
});
