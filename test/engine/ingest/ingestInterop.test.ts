/**
 * Ingestion interoperability with RocksDB 7.8 (its `ldb` tool):
 * - an SST written by RocksDB's SstFileWriter (`ldb write_extern_sst`) ingests into the engine,
 *   over existing data too, and reads back;
 * - the SSTs `ingest import` writes ingest into a fresh RocksDB (`ldb ingest_extern_sst`) and
 *   `ldb scan` returns exactly the rows the engine returns after ingesting the same files. The
 *   engine never rewrites an ingested file, so the same files serve both.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../../src/engine/engine';
import { runImport } from '../../../src/ingest/importer';
import { NUM_LEVELS } from '../../../src/engine/versionEdit';
import { SstFileWriter } from '../../../src/sstwriter/sstFileWriter';
import { describeIfRocksdb, LdbDatabase, ldbWriteExternSst, rocksdbTools, runTool } from '../../support/rocksdbTools';
import { mulberry32 } from '../../../src/util/random';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-ingest-interop-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function scanAll(engine: Engine): Array<[Buffer, Buffer]> {
  const out: Array<[Buffer, Buffer]> = [];
  const it = engine.newIterator();
  for (it.first(); it.valid(); it.next()) out.push([Buffer.from(it.key()), Buffer.from(it.value())]);
  it.close();
  return out;
}

const rng = mulberry32;

/** One placed file: level, user-key span, sequence number. */
type PlacedFile = [level: number, smallest: string, largest: string, seqno: number];

const MANIFEST_FILE_LINE = /^ *\d+:\d+\[(\d+) \.\. (\d+)\]\['([^']*)' seq:\d+, type:\d+ \.\. '([^']*)' seq:\d+, type:\d+\]/;

/** The files of a RocksDB database per `ldb manifest_dump` (levels below NUM_LEVELS). */
function rocksdbPlacement(dbDir: string): PlacedFile[] {
  const current = fs.readFileSync(path.join(dbDir, 'CURRENT'), 'utf8').trim();
  const r = runTool((rocksdbTools as { ldb: string }).ldb, ['manifest_dump', `--path=${path.join(dbDir, current)}`]);
  if (r.status !== 0) throw new Error(`ldb manifest_dump failed: ${r.stderr}`);
  const out: PlacedFile[] = [];
  let level = -1;
  for (const line of r.stdout.split('\n')) {
    const header = /^--- level (\d+) ---/.exec(line);
    if (header !== null) {
      level = Number(header[1]);
      continue;
    }
    const m = MANIFEST_FILE_LINE.exec(line);
    if (m !== null && level >= 0 && level < NUM_LEVELS) {
      expect(m[1]).toBe(m[2]); // an ingested file has one sequence number
      out.push([level, m[3], m[4], Number(m[1])]);
    }
  }
  return out.sort();
}

function enginePlacement(e: Engine): PlacedFile[] {
  const out: PlacedFile[] = [];
  e.levelFiles().forEach((files, level) => {
    for (const f of files)
      out.push([
        level,
        f.smallest.subarray(0, f.smallest.length - 8).toString(),
        f.largest.subarray(0, f.largest.length - 8).toString(),
        f.largestSeq,
      ]);
  });
  return out.sort();
}

describeIfRocksdb('ingestion interop with RocksDB', () => {
  test('the engine places files in the levels, with the sequence numbers, that RocksDB does', async () => {
    // Point keys are odd-numbered and tombstone ends even-numbered, so no file's exclusive end
    // touches another file's start: there RocksDB compares inclusively (it would see an overlap
    // and place the file higher) where the engine sees none.
    const key = (i: number): string => `k${String(i).padStart(2, '0')}`;
    const r = rng(7);
    const rocks = new LdbDatabase(path.join(dir, 'rocksdb'));
    const e = await Engine.open(path.join(dir, 'db'));
    for (let step = 0; step < 14; step++) {
      const file = path.join(dir, `step${step}.sst`);
      const w = new SstFileWriter(file, { backgroundCompression: false });
      const first = 1 + 2 * Math.floor(r() * 16);
      const points = Math.floor(r() * 4); // 0..3 keys
      for (let j = 0; j < points; j++) w.put(Buffer.from(key(first + 2 * j)), Buffer.from(`v${step}`));
      if (points === 0 || r() < 0.4) {
        const start = 1 + 2 * Math.floor(r() * 16);
        w.deleteRange(Buffer.from(key(start)), Buffer.from(key(start + 1 + 2 * Math.floor(r() * 4))));
      }
      w.finish();
      rocks.ingest(file, { createIfMissing: step === 0 });
      await e.ingestExternalFiles([file]);
    }
    const placed = enginePlacement(e);
    expect(new Set(placed.map((p) => p[0])).size).toBeGreaterThan(2);
    expect(placed.some((p) => p[3] > 0)).toBe(true);
    expect(placed).toEqual(rocksdbPlacement(rocks.dir));
    await e.close();
  });

  test('an SST from ldb write_extern_sst ingests into the engine and reads back', async () => {
    const entries: Array<[Buffer, Buffer]> = [];
    for (let i = 0; i < 3000; i++)
      entries.push([Buffer.from(`user:${String(i).padStart(6, '0')}`), Buffer.from(`rocks-${i}-${'x'.repeat(i % 50)}`)]);
    // Binary keys sort after "user:" and survive the hex round trip.
    entries.push([Buffer.from([0xfe, 0x00, 0x01]), Buffer.from([0x00, 0xff])]);
    const file = path.join(dir, 'rocks.sst');
    ldbWriteExternSst(file, entries, { compression: 'lz4', bloomBits: 10 }, dir);

    const e = await Engine.open(path.join(dir, 'db'));
    // Existing data inside the file's range: the file needs a global sequence number.
    await e.put(Buffer.from('user:000100'), Buffer.from('older'));
    await e.put(Buffer.from('user:000100x'), Buffer.from('kept'));
    const r = await e.ingestExternalFiles([file]);
    expect(r.memtableFlushes).toBe(1);
    expect(r.files[0]).toMatchObject({ targetLevel: 0, globalSeqno: 3 });
    expect(e.get(Buffer.from('user:000100'))?.toString()).toBe('rocks-100-');
    expect(e.get(Buffer.from([0xfe, 0x00, 0x01]))).toEqual(Buffer.from([0x00, 0xff]));
    const expected = [...entries, [Buffer.from('user:000100x'), Buffer.from('kept')] as [Buffer, Buffer]].sort((a, b) =>
      Buffer.compare(a[0], b[0]),
    );
    expect(scanAll(e)).toEqual(expected);
    await e.close();

    // Reopen: the file is read with the global seqno the manifest recorded.
    const again = await Engine.open(path.join(dir, 'db'));
    expect(again.get(Buffer.from('user:000100'))?.toString()).toBe('rocks-100-');
    expect(scanAll(again)).toHaveLength(expected.length);
    await again.close();
  });

  test("import's SSTs ingest into a fresh RocksDB and into the engine with the same rows", async () => {
    const rows: string[] = [];
    for (let i = 0; i < 5000; i++) rows.push(`acct-${String((i * 7919) % 5000).padStart(5, '0')},${i},name-${i}`);
    const csv = path.join(dir, 'in.csv');
    fs.writeFileSync(csv, rows.join('\n') + '\n');
    const summary = await runImport({
      inputs: [csv],
      outputDir: path.join(dir, 'out'),
      tmpDir: path.join(dir, 'tmp'),
      writeSummaryFile: false,
      parseThreads: 0,
      targetFileSizeBytes: 32 << 10,
    });
    const files = summary.outputFiles.map((f) => f.path);
    expect(files.length).toBeGreaterThan(1);
    expect(summary.rowsWritten).toBe(5000);

    const rocks = new LdbDatabase(path.join(dir, 'rocksdb'));
    for (const [i, f] of files.entries()) rocks.ingest(f, { createIfMissing: i === 0 });
    const rocksRows = rocks.scan();
    expect(rocksRows).toHaveLength(5000);

    const e = await Engine.open(path.join(dir, 'db'));
    const r = await e.ingestExternalFiles(files);
    // One call, disjoint files, empty database: all at the bottom with sequence number 0.
    expect(r.files.every((f) => f.targetLevel === NUM_LEVELS - 1 && f.globalSeqno === 0)).toBe(true);
    expect(scanAll(e)).toEqual(rocksRows);
    await e.close();
  });
});
