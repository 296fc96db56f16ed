/**
 * Block compressions against RocksDB 7.8 itself (sst_dump, ldb, db_bench from rocksdb-tools):
 * 1. Files RocksDB writes with Snappy (ldb's default), ZSTD and Zlib, through SstFileWriter
 *    (`ldb write_extern_sst`) and through a database's own flushes and compactions (db_bench,
 *    whose index blocks are compressed too), read back through our reader with exactly the
 *    entries RocksDB's `sst_dump --command=scan` lists, on both block-read paths (native codec
 *    on and off).
 * 2. Files we write with ZSTD and Snappy pass `sst_dump --command=check --verify_checksum` and
 *    `--command=verify`, `sst_dump --command=scan` lists exactly our entries, and `ldb
 *    ingest_extern_sst` + `ldb scan` see them.
 * 3. What we do not read is refused at open with NOT_SUPPORTED naming it: BZip2 (a real file
 *    from ldb) and a ZSTD compression dictionary (--compression_max_dict_bytes).
 * Skipped, with the reason, without rocksdb-tools (failed under SST_INGEST_REQUIRE_ROCKSDB_TOOLS=1).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { sequenceOf, userKeyOf } from '../../src/base/internalKey';
import { CompressionType } from '../../src/sstable/compression';
import { TableReader } from '../../src/sstable/reader/tableReader';
import { SstFileWriter } from '../../src/sstwriter/sstFileWriter';
import {
  describeIfRocksdb,
  ExternSstOptions,
  LdbDatabase,
  ldbWriteExternSst,
  rocksdbTools,
  runTool,
  sstDumpScan,
  sstDumpVerify,
  toHex,
} from '../support/rocksdbTools';

let scratch = '';
beforeAll(() => {
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'sst-compression-interop-'));
});
afterAll(() => {
  if (scratch !== '') fs.rmSync(scratch, { recursive: true, force: true });
});

/** 3000 sorted entries whose values compress (repeated words) but not trivially. */
function entries(): Array<[Buffer, Buffer]> {
  const out: Array<[Buffer, Buffer]> = [];
  for (let i = 0; i < 3000; i++) {
    const value = `trade ${i} price ${(i * 7919) % 10007} at 2005-08-${String(1 + (i % 28)).padStart(2, '0')} by Dana ${i % 97}`;
    out.push([Buffer.from(`key-${String(i).padStart(6, '0')}`), Buffer.from(value.repeat(1 + (i % 3)))]);
  }
  return out;
}

/** Every entry of a table through our reader, as hex (key, seq, value), on one read path. */
function readHex(file: string, useNativeCodec: boolean): string[] {
  const r = TableReader.open(file, { useNativeCodec });
  const out: string[] = [];
  try {
    const it = r.newIterator();
    for (it.first(); it.valid(); it.next()) out.push(`${toHex(userKeyOf(it.key()))} ${sequenceOf(it.key())} ${toHex(it.value())}`);
    it.close();
    r.verify();
  } finally {
    r.close();
  }
  return out;
}

function compressionOf(file: string): string {
  const r = TableReader.open(file);
  try {
    return r.properties.compressionName;
  } finally {
    r.close();
  }
}

describeIfRocksdb('block compressions RocksDB writes, read by us', () => {
  test.each([
    ['default', 'Snappy'],
    ['snappy', 'Snappy'],
    ['zstd', 'ZSTD'],
    ['zlib', 'Zlib'],
  ] as const)('ldb write_extern_sst --compression_type=%s: every entry, both paths', (compression, name) => {
    const file = path.join(scratch, `ldb-${compression}.sst`);
    const data = entries();
    ldbWriteExternSst(file, data, { compression, bloomBits: 10 }, scratch);
    expect(compressionOf(file)).toBe(name);
    const expected = data.map(([k, v]) => `${toHex(k)} 0 ${toHex(v)}`);
    for (const useNativeCodec of [true, false]) expect(readHex(file, useNativeCodec)).toEqual(expected);
  });

  test.each(['snappy', 'zstd', 'zlib'])(
    'db_bench --compression_type=%s: every SST of the database, both paths, as sst_dump scans it',
    (compression) => {
      const db = path.join(scratch, `db_bench-${compression}`);
      const dbBench = path.join(path.dirname(rocksdbTools!.ldb), 'db_bench');
      const run = runTool(dbBench, [
        '--benchmarks=fillrandom,compact',
        `--db=${db}`,
        `--compression_type=${compression}`,
        '--num=20000',
        '--value_size=100',
        '--compression_ratio=0.5',
        '--write_buffer_size=262144',
        '--target_file_size_base=262144',
        '--threads=1',
        '--seed=17',
      ]);
      expect(run.status).toBe(0);
      const ssts = fs.readdirSync(db).filter((f) => f.endsWith('.sst'));
      expect(ssts.length).toBeGreaterThan(0);
      for (const sst of ssts) {
        const file = path.join(db, sst);
        expect(compressionOf(file).toLowerCase()).toBe(compression);
        const expected = sstDumpScan(file).map((e) => `${toHex(e.userKey)} ${e.seq} ${toHex(e.value)}`);
        for (const useNativeCodec of [true, false]) expect(readHex(file, useNativeCodec)).toEqual(expected);
      }
    },
  );

  test.each([
    [{ compression: 'bzip2' } as const, /bzip2\.sst: compression BZip2 is not supported/],
    [
      { compression: 'zstd', maxDictBytes: 16384 } as const,
      /dict\.sst: ZSTD compression dictionaries \(meta block rocksdb\.compression_dict, \d+ bytes\) are not supported/,
    ],
  ])('refused at open with NOT_SUPPORTED naming it: %o', (opts: Partial<ExternSstOptions>, message) => {
    const file = path.join(scratch, opts.maxDictBytes === undefined ? 'bzip2.sst' : 'dict.sst');
    ldbWriteExternSst(file, entries(), { compression: opts.compression ?? 'no', bloomBits: 10, maxDictBytes: opts.maxDictBytes }, scratch);
    for (const useNativeCodec of [true, false]) {
      expect(() => TableReader.open(file, { useNativeCodec })).toThrow(
        expect.objectContaining({ code: 'NOT_SUPPORTED', message: expect.stringMatching(message) }),
      );
    }
  });
});

describeIfRocksdb('block compressions we write, read by RocksDB', () => {
  test.each([
    ['zstd', CompressionType.ZSTD, 'ZSTD'],
    ['snappy', CompressionType.Snappy, 'Snappy'],
  ] as const)('%s: sst_dump check/verify/scan and ldb ingest + scan accept our file', (name, compression, rocksName) => {
    const file = path.join(scratch, `ours-${name}.sst`);
    const data = entries();
    const w = new SstFileWriter(file, { compression });
    for (const [k, v] of data) w.put(k, v);
    w.finish();

    const check = runTool(rocksdbTools!.sstDump, [`--file=${file}`, '--command=check', '--verify_checksum']);
    expect(check.status).toBe(0);
    expect(check.stdout + check.stderr).not.toMatch(/corrupt|error/i);
    const verify = sstDumpVerify(file);
    expect(verify.output).toMatch(/The file is ok/);
    expect(verify.ok).toBe(true);
    const props = runTool(rocksdbTools!.sstDump, [`--file=${file}`, '--show_properties', '--command=none']).stdout;
    expect(props).toContain(`SST file compression algo: ${rocksName}`);

    const scanned = sstDumpScan(file);
    expect(scanned.map((e) => `${toHex(e.userKey)} ${toHex(e.value)}`)).toEqual(data.map(([k, v]) => `${toHex(k)} ${toHex(v)}`));

    const db = new LdbDatabase(path.join(scratch, `ingest-${name}`));
    db.ingest(file, { createIfMissing: true });
    expect(db.scan().map(([k, v]) => `${toHex(k)} ${toHex(v)}`)).toEqual(data.map(([k, v]) => `${toHex(k)} ${toHex(v)}`));
  });
});
