/**
 * Database directories both ways, with RocksDB 7.8's own tools as the oracle (issue 17, parts 2-4):
 * - a database db_bench and ldb made (several levels, range and point deletions in SSTs, a range
 *   deletion still in the WAL) opens in our engine with every key and value equal to `ldb scan
 *   --hex`; the CLI's check, plan and import (--db) work on it, and afterwards RocksDB's scan, get,
 *   checkconsistency and manifest_dump see exactly the merged contents and the ingested files;
 * - a database our engine made (puts, deletes, range deletions, an import with global seqnos,
 *   compactions, and a run ended by SIGKILL, so RocksDB must replay our WAL) opens in RocksDB with
 *   the scan we see, passes checkconsistency, takes RocksDB's writes and compaction, and opens in
 *   our engine again with RocksDB's contents;
 * - every feature we cannot honour is refused at open with NOT_SUPPORTED naming it, and the
 *   directory is left byte for byte as it was.
 * db_bench databases are made with LZ4, Snappy (RocksDB's default) and ZSTD; RocksDB writing into our
 * directory does so with its default options (Snappy).
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../src/engine/engine';
import { IngestError } from '../../src/util/errors';
import { LdbDatabase, dbBench, dbBenchPath, describeIfRocksdb, ldbWriteExternSst, testWithDbBench, toHex } from '../support/rocksdbTools';
import { runCli } from '../support/cli';
import { runTsChildAndKill } from '../support/killChild';
import { REPO_ROOT } from '../support/paths';
import { snapshotDir } from '../support/dirSnapshot';

jest.setTimeout(60_000);

const LZ4 = ['--compression_type=lz4'];
let tmp: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rocksdb-interop-'));
});
afterEach(() => {
  fs.rmSync(tmp, { recursive: true, force: true });
});

type Pairs = Array<[string, string]>;

/** Our engine's whole scan as hex pairs, like ldb's. */
async function engineScan(dir: string): Promise<Pairs> {
  const e = await Engine.open(dir);
  try {
    const out: Pairs = [];
    const it = e.newIterator();
    for (it.first(); it.valid(); it.next()) out.push([toHex(it.key()), toHex(it.value())]);
    it.close();
    return out;
  } finally {
    await e.close();
  }
}

function ldbScan(ldb: LdbDatabase): Pairs {
  return ldb.scan().map(([k, v]) => [toHex(k), toHex(v)]);
}

/** ldb's scan of a copy: RocksDB flushes the WAL when it opens, and the original must keep it. */
function ldbScanOfCopy(dir: string): Pairs {
  const copy = fs.mkdtempSync(path.join(tmp, 'copy-'));
  fs.cpSync(dir, copy, { recursive: true });
  const r = ldbScan(new LdbDatabase(copy, LZ4));
  fs.rmSync(copy, { recursive: true, force: true });
  return r;
}

const hex = (s: string): string => Buffer.from(s).toString('hex');
const benchTest = testWithDbBench;

/** db_bench fillrandom with compactions (L1, L2), overwrite without (L0), then ldb deletions; the last stays in the WAL. */
function makeRocksdbDatabase(dir: string, compression: string): LdbDatabase {
  const codec = [`--compression_type=${compression}`];
  const common = [`--db=${dir}`, ...codec, '--key_size=16', '--value_size=48', '--threads=1', '--seed=17'];
  const small = ['--write_buffer_size=32768', '--target_file_size_base=32768', '--max_bytes_for_level_base=65536'];
  dbBench([...common, ...small, '--benchmarks=fillrandom', '--num=4000', '--level0_file_num_compaction_trigger=2']);
  dbBench([...common, ...small, '--benchmarks=overwrite', '--num=600', '--use_existing_db=1', '--disable_auto_compactions=1']);
  const ldb = new LdbDatabase(dir, codec);
  const keys = ldb.scan().map(([k]) => k);
  ldb.delete(keys[5]);
  ldb.deleteRange(keys[100], keys[160]);
  ldb.batchPut(Array.from({ length: 40 }, (_, i) => [Buffer.from(`rk${String(i).padStart(3, '0')}`), Buffer.from(`rocks${i}`)]));
  ldb.delete(Buffer.from('rk007'));
  ldb.deleteRange(Buffer.from('rk010'), Buffer.from('rk015')); // left in the WAL
  return ldb;
}

describeIfRocksdb('RocksDB database directories, both ways', () => {
  for (const compression of ['lz4', 'snappy', 'zstd']) {
    benchTest(`a ${compression} database db_bench and ldb made opens here; check, plan and import land; RocksDB agrees`, async () => {
      const dir = path.join(tmp, 'rocks');
      const ldb = makeRocksdbDatabase(dir, compression);
      const levels = new Set(ldb.manifestFiles().map((f) => f.level));
      expect(levels.size).toBeGreaterThanOrEqual(2);
      const wals = fs.readdirSync(dir).filter((n) => n.endsWith('.log'));
      expect(wals.some((n) => fs.statSync(path.join(dir, n)).size > 0)).toBe(true);

      const expected = ldbScanOfCopy(dir);
      expect(expected.length).toBeGreaterThan(2000); // fillrandom repeats keys: ~63% distinct
      expect(await engineScan(dir)).toEqual(expected);

      // The CLI on it: check finds the conflicting rows, plan links nothing, import overwrites.
      const csv = path.join(tmp, 'rows.csv');
      const rows = [...Array.from({ length: 20 }, (_, i) => [`rk${String(i * 2).padStart(3, '0')}`, `imported${i}`]), ['zz-new', 'fresh']];
      fs.writeFileSync(csv, rows.map(([k, v]) => `${k},${v}\n`).join(''));
      const check = await runCli('check', csv, '--db', dir, '--key', '1', '--json');
      expect(check.code).toBe(3);
      expect(JSON.parse(check.stdout).check.conflicts).toBeGreaterThan(0);
      expect((await runCli('plan', csv, '--db', dir, '--key', '1', '--on-conflict', 'overwrite', '--json')).code).toBe(0);
      // The space policy off: the ingested tables themselves must be what ldb sees (not a compaction of them).
      const imp = await runCli('import', csv, '--db', dir, '--key', '1', '--on-conflict', 'overwrite', '--max-space-amp', 'off', '--json');
      expect(imp.code).toBe(0);
      const files = (JSON.parse(imp.stdout) as { ingest: { files: Array<{ fileNumber: number; globalSeqno: number }> } }).ingest.files;
      expect(files.length).toBeGreaterThan(0);

      const merged = new Map(expected);
      for (const [k, v] of rows) merged.set(hex(k), hex(v));
      const want = [...merged.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      expect(ldbScan(ldb)).toEqual(want);
      expect(ldb.get(Buffer.from('rk004'))?.toString()).toBe('imported2');
      expect(ldb.get(Buffer.from('rk011'))).toBeNull(); // under the WAL's range deletion, not imported
      ldb.checkConsistency();
      const live = new Set(ldb.manifestFiles().map((f) => f.fileNumber));
      for (const f of files) expect(live.has(f.fileNumber)).toBe(true);
      expect(await engineScan(dir)).toEqual(want);

      // The engine commands on it.
      expect((await runCli('put', '--db', dir, 'cli-key', 'cli-value')).code).toBe(0);
      expect((await runCli('compact', '--db', dir)).code).toBe(0);
      const got = await runCli('get', '--db', dir, 'cli-key');
      expect(got.stdout.trim()).toBe('cli-value');
      expect((await runCli('stats', '--db', dir, '--json')).code).toBe(0);
      expect(ldb.get(Buffer.from('cli-key'))?.toString()).toBe('cli-value');
      ldb.checkConsistency();
    });
  }

  test('a database our engine made, ended by SIGKILL, opens in RocksDB, which writes and compacts it', async () => {
    const dir = path.join(tmp, 'ours');
    let e = await Engine.open(dir, { writeBufferSizeBytes: 16 * 1024 });
    for (let i = 0; i < 800; i++) await e.put(Buffer.from(`k${String(i).padStart(4, '0')}`), Buffer.from(`v${i}-${'x'.repeat(i % 40)}`));
    await e.delete(Buffer.from('k0003'));
    await e.deleteRange(Buffer.from('k0100'), Buffer.from('k0150'));
    await e.compactRange();
    await e.deleteRange(Buffer.from('k0200'), Buffer.from('k0210')); // in an L0 file, over L1 data
    await e.flush();
    await e.close();
    // An import over live keys: its file gets a global seqno above them.
    const csv = path.join(tmp, 'rows.csv');
    fs.writeFileSync(csv, Array.from({ length: 30 }, (_, i) => `k${String(300 + i).padStart(4, '0')},imported${i}\n`).join(''));
    const imp = await runCli('import', csv, '--db', dir, '--key', '1', '--on-conflict', 'overwrite', '--json');
    expect(imp.code).toBe(0);
    const ingested = (JSON.parse(imp.stdout) as { ingest: { files: Array<{ globalSeqno: number }> } }).ingest.files;
    expect(ingested.some((f) => f.globalSeqno > 0)).toBe(true);
    e = await Engine.open(dir);
    await e.put(Buffer.from('k0001'), Buffer.from('unflushed'));
    await e.close();
    // A writer SIGKILLed mid-run: RocksDB has to replay our WAL.
    const acked = await runTsChildAndKill(REPO_ROOT, 'test/support/crashWriter.ts', [dir, '0'], 300, true);
    expect(acked.length).toBeGreaterThan(0);

    const ldb = new LdbDatabase(dir); // RocksDB's defaults: its flushes and compaction write Snappy
    const ours = await engineScanOfCopy(dir);
    expect(ldbScan(ldb)).toEqual(ours);
    // Every acknowledged batch is there; the one in flight at the kill may be too.
    const last = Number(ldb.get(Buffer.from('last'))?.toString());
    expect(last - acked[acked.length - 1]).toBeGreaterThanOrEqual(0);
    expect(last - acked[acked.length - 1]).toBeLessThanOrEqual(1);
    ldb.checkConsistency();
    ldb.put(Buffer.from('from-rocksdb'), Buffer.from('hello'));
    ldb.deleteRange(Buffer.from('k0400'), Buffer.from('k0500'));
    ldb.compact();
    ldb.checkConsistency();
    const afterRocks = ldbScanOfCopy(dir);
    expect(await engineScan(dir)).toEqual(afterRocks);
    expect(afterRocks.some(([k]) => k === hex('from-rocksdb'))).toBe(true);
  });

  test('a file RocksDB ingested with its global seqno written into the properties reads at that seqno', async () => {
    const dir = path.join(tmp, 'rocks-ingested');
    const ldb = LdbDatabase.create(dir, Buffer.from('a'), Buffer.from('old'));
    ldb.command(['--create_if_missing', 'put', 'c', 'kept']);
    const ext = path.join(tmp, 'ext.sst');
    ldbWriteExternSst(
      ext,
      [
        [Buffer.from('a'), Buffer.from('new')],
        [Buffer.from('b'), Buffer.from('2')],
      ],
      { compression: 'lz4', bloomBits: 10 },
      tmp,
    );
    ldb.command(['ingest_extern_sst', ext, '--allow_global_seqno', '--write_global_seqno']);
    const want: Pairs = [
      ['a', 'new'],
      ['b', '2'],
      ['c', 'kept'],
    ].map(([k, v]) => [hex(k), hex(v)]);
    expect(ldbScanOfCopy(dir)).toEqual(want);
    expect(await engineScan(dir)).toEqual(want);
    const e = await Engine.open(dir);
    await e.compactRange();
    await e.close();
    expect(ldbScan(ldb)).toEqual(want);
    ldb.checkConsistency();
  });

  for (const staleLockOfOurs of [false, true]) {
    benchTest(
      `a directory RocksDB has open (its fcntl lock on ${staleLockOfOurs ? "a dead opener's LOCK of ours" : 'its LOCK'}) is refused as locked, naming the pid`,
      async () => {
        const dir = path.join(tmp, 'busy');
        if (staleLockOfOurs) {
          const e = await Engine.open(dir);
          await e.close();
          fs.writeFileSync(path.join(dir, 'LOCK'), '999999999 1\n'); // as a SIGKILLed opener leaves it
        }
        const workload = staleLockOfOurs ? ['--benchmarks=overwrite', '--use_existing_db=1'] : ['--benchmarks=fillrandom'];
        const bench = spawn(dbBenchPath as string, [`--db=${dir}`, ...LZ4, ...workload, '--num=100000000', '--threads=1'], {
          stdio: 'ignore',
        });
        try {
          // Until db_bench holds its lock on this LOCK (its pid and the file's inode in /proc/locks):
          // under a loaded machine its start-up can take seconds, and opening before it would win the lock.
          const lockedByBench = (): boolean => {
            let inode: number;
            try {
              inode = fs.statSync(path.join(dir, 'LOCK')).ino;
            } catch {
              return false;
            }
            return fs
              .readFileSync('/proc/locks', 'latin1')
              .split('\n')
              .some((line) => line.includes(` ${bench.pid} `) && line.includes(`:${inode} `));
          };
          const deadline = Date.now() + 30_000;
          while (!lockedByBench()) {
            if (Date.now() > deadline) throw new Error(`db_bench (pid ${bench.pid}) did not lock ${dir}/LOCK within 30 s`);
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
          // db_bench keeps a LOCK's content; the dead opener's record is what our open finds.
          if (staleLockOfOurs) expect(fs.readFileSync(path.join(dir, 'LOCK'), 'latin1')).toBe('999999999 1\n');
          await expect(Engine.open(dir)).rejects.toMatchObject({ code: 'DB_LOCKED', pid: bench.pid });
        } finally {
          if (bench.exitCode === null && bench.signalCode === null) {
            const exited = new Promise((resolve) => bench.once('exit', resolve));
            bench.kill('SIGKILL');
            await exited;
          }
        }
      },
    );
  }

  async function engineScanOfCopy(dir: string): Promise<Pairs> {
    const copy = fs.mkdtempSync(path.join(tmp, 'copy-'));
    fs.cpSync(dir, copy, { recursive: true });
    fs.rmSync(path.join(copy, 'LOCK'), { force: true }); // the killed writer's
    const r = await engineScan(copy);
    fs.rmSync(copy, { recursive: true, force: true });
    return r;
  }

  /** Opening `dir` fails with NOT_SUPPORTED matching `message`, and changes no byte in it. */
  async function expectRefused(dir: string, message: RegExp): Promise<void> {
    const before = snapshotDir(dir);
    const err = await Engine.open(dir).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(IngestError);
    expect((err as IngestError).code).toBe('NOT_SUPPORTED');
    expect((err as IngestError).message).toMatch(message);
    expect(snapshotDir(dir)).toEqual(before);
  }

  test('another column family is refused, the directory unchanged', async () => {
    const dir = path.join(tmp, 'cf');
    const ldb = LdbDatabase.create(dir, Buffer.from('a'), Buffer.from('1'));
    ldb.command(['create_column_family', 'orders']);
    await expectRefused(dir, /column famil.*"orders"/);
  });

  const benchRefusals: Array<[string, string[], RegExp]> = [
    ['a merge operator with merge operands', ['--benchmarks=mergerandom', '--merge_operator=uint64add'], /merge operand/],
    [
      'merge operands in SSTs',
      ['--benchmarks=mergerandom', '--merge_operator=uint64add', '--num=3000'],
      /merge operator UInt64AddOperator with merge operands in the data/,
    ],
    [
      'files beyond level 6 (num_levels 10)',
      ['--benchmarks=fillrandom,compact', '--num=3000', '--num_levels=10', '--level_compaction_dynamic_level_bytes=true'],
      /num_levels above 7 \(a file in level 9\)/,
    ],
    ['blob files', ['--benchmarks=fillrandom', '--enable_blob_files=true', '--min_blob_size=0'], /blob files/],
    ['user-defined timestamps', ['--benchmarks=fillrandom', '--user_timestamp_size=8'], /user-defined timestamps/],
    ['universal compaction', ['--benchmarks=fillrandom', '--compaction_style=1'], /compaction_style kCompactionStyleUniversal/],
    ['FIFO compaction', ['--benchmarks=fillrandom', '--compaction_style=2'], /compaction_style kCompactionStyleFIFO/],
  ];
  for (const [what, args, message] of benchRefusals) {
    benchTest(`${what} is refused, the directory unchanged`, async () => {
      const dir = path.join(tmp, 'bench');
      dbBench([`--db=${dir}`, ...LZ4, '--num=300', '--threads=1', '--write_buffer_size=16384', ...args]);
      await expectRefused(dir, message);
    });
  }
});
