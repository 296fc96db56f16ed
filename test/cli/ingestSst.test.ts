/**
 * `ingest sst ingest | plan` (cli/commands/ingestSst.ts) end to end, in-process: exit codes, the
 * JSON shapes, and that the database holds the files' rows afterwards.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { runCli } from '../support/cli';
import { Engine } from '../../src/engine/engine';
import { SstFileWriter } from '../../src/sstwriter/sstFileWriter';
import { describeIfRocksdb, ldbWriteExternSst } from '../support/rocksdbTools';

const run = runCli;

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-ingest-sst-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function sst(name: string, keys: string[], value: string): string {
  const file = path.join(dir, name);
  const w = new SstFileWriter(file, { backgroundCompression: false });
  for (const k of keys) w.put(Buffer.from(k), Buffer.from(value));
  w.finish();
  return file;
}

test('plan, then ingest, prebuilt SSTs; JSON describes where each file went', async () => {
  const db = path.join(dir, 'db');
  const a = sst('a.sst', ['a1', 'a2'], 'A');
  const b = sst('b.sst', ['b1', 'b2'], 'B');
  expect((await run('sst', 'plan', a, '--db', db)).code).toBe(2); // no database yet

  const first = await run('sst', 'ingest', a, b, '--db', db, '--create-if-missing', '--json');
  expect(first.code).toBe(0);
  const r1 = JSON.parse(first.stdout);
  expect(
    r1.files.map((f: { path: string; level: number; globalSeqno: number; linked: boolean }) => [f.path, f.level, f.globalSeqno, f.linked]),
  ).toEqual([
    [a, 6, 0, false],
    [b, 6, 0, false],
  ]);
  expect(r1.files[0]).toMatchObject({
    smallestHex: Buffer.from('a1').toString('hex'),
    largestHex: Buffer.from('a2').toString('hex'),
    largestExclusive: false,
  });
  expect(r1).toMatchObject({ db, memtableFlushes: 0, writesStopped: false, lastSequence: 0 });

  const c = sst('c.sst', ['a2', 'a3'], 'C');
  const plan = await run('sst', 'plan', c, '--db', db, '--json');
  expect(plan.code).toBe(0);
  expect(JSON.parse(plan.stdout)).toMatchObject({
    memtableFlushNeeded: false,
    lastSequence: 1,
    files: [{ path: c, level: 5, globalSeqno: 1, stoppedAtLevel: 6, stopReason: 'data' }],
  });

  // Human output, with a replace range deleting b1 and b2.
  const second = await run('sst', 'ingest', c, '--db', db, '--replace-start', 'a3', '--replace-end', 'c');
  expect(second.code).toBe(0);
  expect(second.stdout).toMatch(/\(replace-range tombstones\): L5 seqno 1 \[a3 \.\. c\) \(data overlap at L6\)/);
  expect(second.stdout).toMatch(/c\.sst: L4 seqno 2 \[a2 \.\. a3\] \(pending overlap at L5\)/);

  const e = await Engine.open(db);
  const rows: string[] = [];
  const it = e.newIterator();
  for (it.first(); it.valid(); it.next()) rows.push(`${it.key()}=${it.value()}`);
  it.close();
  await e.close();
  expect(rows).toEqual(['a1=A', 'a2=C', 'a3=C']);
});

test('refused ingestions exit 2 and name the problem', async () => {
  const db = path.join(dir, 'db');
  const a = sst('a.sst', ['k1', 'k3'], 'A');
  const b = sst('b.sst', ['k2'], 'B');
  const overlap = await run('sst', 'ingest', a, b, '--db', db, '--create-if-missing');
  expect(overlap.code).toBe(2);
  expect(overlap.stderr).toMatch(/must not overlap/);
  expect((await run('sst', 'ingest', a, '--db', db, '--replace-start', 'k')).code).toBe(2);
  expect((await run('sst', 'ingest', a, '--db', db, '--json')).code).toBe(0);
  const bottom = await run('sst', 'ingest', b, '--db', db, '--require-bottommost');
  expect(bottom.code).toBe(2);
  expect(bottom.stderr).toMatch(/cannot go to the bottom level/);
});

describeIfRocksdb('SSTs RocksDB wrote with its default options', () => {
  test('ldb write_extern_sst (Snappy by default) ingests, and sst write --compression zstd|snappy files ingest beside it', async () => {
    const db = path.join(dir, 'db');
    const rocks = path.join(dir, 'rocks-default.sst');
    const rows: Array<[Buffer, Buffer]> = [];
    for (let i = 0; i < 500; i++) rows.push([Buffer.from(`r${String(i).padStart(4, '0')}`), Buffer.from(`rocks value ${i} `.repeat(4))]);
    ldbWriteExternSst(rocks, rows, { compression: 'default', bloomBits: 10 }, dir);

    const ingested = await run('sst', 'ingest', rocks, '--db', db, '--create-if-missing', '--json');
    expect(ingested.stderr).toBe('');
    expect(ingested.code).toBe(0);
    expect(JSON.parse(ingested.stdout).files[0]).toMatchObject({ path: rocks, linked: false });

    const csv = path.join(dir, 'ours.csv');
    fs.writeFileSync(csv, 's1,zstd row\ns2,another zstd row\n');
    for (const compression of ['zstd', 'snappy']) {
      const out = path.join(dir, `ours-${compression}.sst`);
      expect((await run('sst', 'write', csv, '-o', out, '--compression', compression)).code).toBe(0);
      const dump = await run('sst', 'dump', out, '--json');
      expect(JSON.parse(dump.stdout).properties.compressionName).toBe(compression === 'zstd' ? 'ZSTD' : 'Snappy');
    }
    expect((await run('sst', 'ingest', path.join(dir, 'ours-zstd.sst'), '--db', db)).code).toBe(0);

    const e = await Engine.open(db);
    const seen: string[] = [];
    const it = e.newIterator();
    for (it.first(); it.valid(); it.next()) seen.push(`${it.key()}=${it.value()}`);
    it.close();
    await e.close();
    expect(seen).toEqual([...rows.map(([k, v]) => `${k}=${v}`), 's1=zstd row', 's2=another zstd row']);
  });
});
