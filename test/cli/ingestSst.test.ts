/**
 * `ingest sst ingest | plan` (cli/commands/ingestSst.ts) end to end, in-process: exit codes, the
 * JSON shapes, and that the database holds the files' rows afterwards; the conflict check and its
 * policies (cli/commands/ingestSstCheck.ts), and its report in both formats.
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
    check: { sstKeys: 2, new: 1, conflicts: 1 },
    policy: { onConflict: 'abort', ingest: false, rowsHeldBack: 1 },
    memtableFlushNeeded: false,
    lastSequence: 1,
    files: [{ path: c, level: 5, globalSeqno: 1, stoppedAtLevel: 6, stopReason: 'data' }],
  });

  // Human output, with a replace range deleting b1 and b2; c's a2 changes a live value, which the
  // default check (--on-conflict abort) refuses: overwrite says so.
  const second = await run('sst', 'ingest', c, '--db', db, '--replace-start', 'a3', '--replace-end', 'c', '--on-conflict', 'overwrite');
  expect(second.code).toBe(0);
  expect(second.stdout).toMatch(/\(replace-range tombstones\): L5 seqno 1 \[a3 \.\. c\) \(data overlap at L6\)/);
  expect(second.stdout).toMatch(/c\.sst: L4 seqno 2 \[a2 \.\. a3\] \(pending overlap at L5\)/);

  expect(await rowsOf(db)).toEqual(['a1=A', 'a2=C', 'a3=C']);
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

/** Every row of the database, `key=value`. */
async function rowsOf(db: string): Promise<string[]> {
  const e = await Engine.open(db);
  const rows: string[] = [];
  const it = e.newIterator();
  for (it.first(); it.valid(); it.next()) rows.push(`${it.key()}=${it.value()}`);
  it.close();
  await e.close();
  return rows;
}

describe('the conflict check (default --on-conflict abort, as the SST upload)', () => {
  /** A database holding k1..k4 = old; and new.sst: k2 unchanged, k3 and k4 changed, k5 new. */
  async function setUp(): Promise<{ db: string; fresh: string }> {
    const db = path.join(dir, 'db');
    const base = sst('base.sst', ['k1', 'k2', 'k3', 'k4'], 'old');
    expect((await run('sst', 'ingest', base, '--db', db, '--create-if-missing')).code).toBe(0);
    const file = path.join(dir, 'new.sst');
    const w = new SstFileWriter(file, { backgroundCompression: false });
    for (const [k, v] of [
      ['k2', 'old'],
      ['k3', 'new'],
      ['k4', 'new'],
      ['k5', 'new'],
    ])
      w.put(Buffer.from(k), Buffer.from(v));
    w.finish();
    return { db, fresh: file };
  }

  const before = ['k1=old', 'k2=old', 'k3=old', 'k4=old'];

  test('abort: exit 3, nothing ingested, the JSON report written and the --json document printed', async () => {
    const { db, fresh } = await setUp();
    const report = path.join(dir, 'report.json');
    const r = await run('sst', 'ingest', fresh, '--db', db, '--json', '--report', report);
    expect(r.code).toBe(3);
    const doc = JSON.parse(r.stdout);
    expect(doc).toMatchObject({
      files: [],
      check: { sstKeys: 4, new: 1, unchanged: 1, conflicts: 2, conflictsReported: 2 },
      report,
      policy: { onConflict: 'abort', ingest: false, rowsHeldBack: 2, rewrittenFiles: 0, emptiedFiles: 0 },
    });
    expect(r.stderr).toMatch(/2 key\(s\) would change a live value .*nothing ingested.*first: key k3/);
    expect(await rowsOf(db)).toEqual(before);
    const written = JSON.parse(fs.readFileSync(report, 'utf8'));
    expect(
      written.conflicts.map((c: { key: string; existingValue: { data: string }; newValue: { data: string } }) => [
        c.key,
        c.existingValue.data,
        c.newValue.data,
      ]),
    ).toEqual([
      ['k3', 'old', 'new'],
      ['k4', 'old', 'new'],
    ]);
    // Human output, the same exit code.
    const human = await run('sst', 'ingest', fresh, '--db', db);
    expect(human.code).toBe(3);
    expect(human.stdout).toMatch(/checked 4 keys against .*: 1 new, 1 unchanged, 2 conflicting/);
    expect(human.stdout).toMatch(/nothing ingested: the conflicts stopped it/);
  });

  test('overwrite ingests every row; --no-conflict-check is the unchecked ingestion of before', async () => {
    const { db, fresh } = await setUp();
    const r = await run('sst', 'ingest', fresh, '--db', db, '--json', '--on-conflict', 'overwrite');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      check: { conflicts: 2 },
      report: null,
      policy: { onConflict: 'overwrite', ingest: true, rowsHeldBack: 0 },
    });
    expect(await rowsOf(db)).toEqual(['k1=old', 'k2=old', 'k3=new', 'k4=new', 'k5=new']);

    const again = sst('again.sst', ['k1'], 'unchecked');
    const unchecked = await run('sst', 'ingest', again, '--db', db, '--json', '--no-conflict-check');
    expect(unchecked.code).toBe(0);
    expect(JSON.parse(unchecked.stdout)).toMatchObject({ check: null, report: null, policy: null, files: [{ path: again }] });
    expect((await rowsOf(db))[0]).toBe('k1=unchecked');
  });

  test('skip ingests all but the conflicting rows; its rewrites never land beside the files or stay in the database', async () => {
    const { db, fresh } = await setUp();
    const listing = (d: string): string[] => fs.readdirSync(d).sort();
    const filesBefore = listing(dir);
    const r = await run('sst', 'ingest', fresh, '--db', db, '--json', '--on-conflict', 'skip');
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc).toMatchObject({
      check: { conflicts: 2 },
      policy: { onConflict: 'skip', ingest: true, rowsHeldBack: 2, rewrittenFiles: 1 },
    });
    expect(await rowsOf(db)).toEqual(['k1=old', 'k2=old', 'k3=old', 'k4=old', 'k5=new']);
    expect(listing(dir)).toEqual(filesBefore);
    expect(listing(db).filter((n) => n.startsWith('.'))).toEqual([]);
    expect(fs.readFileSync(fresh).length).toBeGreaterThan(0); // the caller's file stays as it was
    // skip and a replace range do not go together.
    const both = await run('sst', 'ingest', fresh, '--db', db, '--on-conflict', 'skip', '--replace-start', 'k', '--replace-end', 'l');
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/skip cannot be combined with --replace-start/);
  });

  test('plan counts the conflicts it would meet, writes its report, exits 0 and changes nothing', async () => {
    const { db, fresh } = await setUp();
    const report = path.join(dir, 'plan.ndjson');
    const r = await run('sst', 'plan', fresh, '--db', db, '--json', '--report', report, '--report-format', 'ndjson');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      check: { conflicts: 2, new: 1, unchanged: 1 },
      policy: { onConflict: 'abort', ingest: false, rowsHeldBack: 2, rewrittenFiles: null },
      files: [{ path: fresh }],
    });
    for (const policy of ['overwrite', 'skip']) {
      const p = await run('sst', 'plan', fresh, '--db', db, '--json', '--on-conflict', policy);
      expect(p.code).toBe(0);
      expect(JSON.parse(p.stdout).policy).toMatchObject({ onConflict: policy, ingest: true, rowsHeldBack: policy === 'skip' ? 2 : 0 });
    }
    expect(await rowsOf(db)).toEqual(before);
    const lines = fs
      .readFileSync(report, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.type, l.key])).toEqual([
      ['conflict', 'k3'],
      ['conflict', 'k4'],
      ['summary', undefined],
    ]);
    expect(lines[2]).toMatchObject({ format: 'sst-ingest.conflict-report', version: 1, sstFiles: [fresh], summary: { conflicts: 2 } });
  });

  test('report format: ndjson lines carry the JSON report entries; bad combinations are usage errors', async () => {
    const { db, fresh } = await setUp();
    const asJson = path.join(dir, 'r.json');
    const asNdjson = path.join(dir, 'r.ndjson');
    expect((await run('sst', 'ingest', fresh, '--db', db, '--report', asJson)).code).toBe(3);
    expect(
      (await run('sst', 'ingest', fresh, '--db', db, '--report', asNdjson, '--report-format', 'ndjson', '--max-reported', 'all')).code,
    ).toBe(3);
    const doc = JSON.parse(fs.readFileSync(asJson, 'utf8'));
    const lines = fs
      .readFileSync(asNdjson, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.slice(0, -1)).toEqual(doc.conflicts.map((c: object) => ({ type: 'conflict', ...c })));
    const { type, ...header } = lines[lines.length - 1];
    expect(type).toBe('summary');
    const { conflicts: _conflicts, summary, ...docHeader } = doc;
    void _conflicts;
    expect(header).toMatchObject(docHeader);
    // The same summary fields; the counts the same (timings differ from run to run).
    expect(Object.keys(header.summary).sort()).toEqual(Object.keys(summary).sort());
    const counts = ['sstKeys', 'new', 'unchanged', 'conflicts', 'conflictsReported'];
    for (const field of counts) expect(header.summary[field]).toBe(summary[field]);
    expect(header.summary.maxReported).toBe(Number.MAX_SAFE_INTEGER);
    expect(fs.readdirSync(dir).filter((n) => n.endsWith('.tmp'))).toEqual([]);

    for (const args of [
      ['--report-format', 'ndjson'],
      ['--max-reported', 'all', '--report', asJson],
      ['--max-reported', 'some'],
    ]) {
      const bad = await run('sst', 'ingest', fresh, '--db', db, ...args);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(
        /--report-format ndjson goes with --report|--max-reported all needs|--max-reported must be a non-negative integer or all/,
      );
    }
  });

  test('a file the check cannot read (a deletion) is refused with the way around it', async () => {
    const { db } = await setUp();
    const file = path.join(dir, 'del.sst');
    const w = new SstFileWriter(file, { backgroundCompression: false });
    w.delete(Buffer.from('k1'));
    w.finish();
    const refused = await run('sst', 'ingest', file, '--db', db);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/put-only.*--no-conflict-check ingests it unchecked/);
    expect(await rowsOf(db)).toEqual(before);
    expect((await run('sst', 'ingest', file, '--db', db, '--no-conflict-check')).code).toBe(0);
    expect(await rowsOf(db)).toEqual(before.slice(1));
  });
});
