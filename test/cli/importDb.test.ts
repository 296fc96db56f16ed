/**
 * `ingest import <csv> --db DIR` and `ingest plan` end to end through the CLI entry point
 * (in-process): rows readable after the import, the conflict policies, replace-range, dry runs
 * linking nothing, bad input leaving the database untouched, and the JSON fields.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { runCli } from '../support/cli';
import { Engine } from '../../src/engine/engine';
import { KeySpec, parseKeySpecText } from '../../src/ingest/rows/keySpec';
import { importIntoDb } from '../../src/ingest/importIntoDb';
import { FIXTURES_DIR } from '../support/paths';

const run = runCli;

const FIXTURE = path.join(FIXTURES_DIR, 'trades.csv');
const DIALECT = ['--delimiter', '|', '--header', '--key', 't_id:int64', '--quiet'];
const spec = KeySpec.forKeyFields(parseKeySpecText('t_id:int64'));
const key = (id: string | number): Buffer => spec.encodeText(String(id));

/** The fixture as the import stores it: t_id → the other columns joined by '|'. */
const fixtureLines = fs
  .readFileSync(FIXTURE, 'utf8')
  .split('\n')
  .filter((l) => l.length > 0);
const HEADER = fixtureLines[0];
const fixtureRows = new Map<string, string>();
for (const line of fixtureLines.slice(1)) {
  const cut = line.indexOf('|');
  fixtureRows.set(line.slice(0, cut), line.slice(cut + 1));
}

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'import-db-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

function csv(name: string, rows: string[]): string {
  const p = path.join(root, name);
  fs.writeFileSync(p, `${[HEADER, ...rows].join('\n')}\n`);
  return p;
}

function leftovers(db: string): string[] {
  return fs.existsSync(db) ? fs.readdirSync(db).filter((n) => n.startsWith('.import-tmp-')) : [];
}

async function withEngine<T>(db: string, body: (e: Engine) => T): Promise<T> {
  const e = await Engine.open(db, { createIfMissing: false });
  try {
    return body(e);
  } finally {
    await e.close();
  }
}

function getText(e: Engine, id: string | number): string | null {
  const v = e.get(key(id));
  return v === null ? null : v.toString('utf8');
}

/** Keys in [from, to) as t_id text, forward and backward (both must agree). */
function scanIds(e: Engine, from: number, to: number): string[] {
  const it = e.newIterator({ lowerBound: key(from), upperBound: key(to) });
  const forward: string[] = [];
  const backward: string[] = [];
  try {
    for (it.first(); it.valid(); it.next()) forward.push(spec.format(it.key()));
    for (it.last(); it.valid(); it.prev()) backward.push(spec.format(it.key()));
  } finally {
    it.close();
  }
  expect(backward.reverse()).toEqual(forward);
  return forward;
}

/** A database holding the whole fixture. */
async function baseDb(): Promise<string> {
  const db = path.join(root, 'db');
  const r = await run('import', FIXTURE, ...DIALECT, '--db', db);
  expect(r).toMatchObject({ code: 0 });
  return db;
}

/** Three rows of the fixture with a changed value, one unchanged, two new ids. */
function changedInput(): { file: string; changed: string[]; unchanged: string; added: string[] } {
  const ids = [...fixtureRows.keys()];
  const changed = ids.slice(0, 3);
  const unchanged = ids[3];
  const added = ['300000000000001', '300000000000002'];
  const rows = [
    ...changed.map((id) => `${id}|${(fixtureRows.get(id) as string).replace(/^[^|]*/, '1999-01-01 00:00:00.000')}`),
    `${unchanged}|${fixtureRows.get(unchanged) as string}`,
    ...added.map((id) => `${id}|2006-01-01 00:00:00.000|CMPT|TMS|0|NEW|1|1.00|43000000001|New Row|1.00|0|0|0|1`),
  ];
  return { file: csv('changed.csv', rows), changed, unchanged, added };
}

test('into an empty database: every row readable through the key spec; JSON fields; no private directory left', async () => {
  const db = path.join(root, 'new', 'db');
  const r = await run('import', FIXTURE, ...DIALECT, '--db', db, '--json');
  expect(r.code).toBe(0);
  const doc = JSON.parse(r.stdout) as Record<string, unknown>;
  expect(Object.keys(doc).sort()).toEqual(
    [
      'check',
      'createdDb',
      'db',
      'dryRun',
      'import',
      'ingest',
      'pendingJobs',
      'plan',
      'policy',
      'replaceRange',
      'report',
      'space',
      'distributed',
    ].sort(),
  );
  expect(doc).toMatchObject({ db, createdDb: true, dryRun: false, report: null, replaceRange: null, plan: null });
  expect(doc.import).toMatchObject({ rowsRead: fixtureRows.size, rowsWritten: fixtureRows.size });
  expect(doc.check).toMatchObject({ sstKeys: fixtureRows.size, new: fixtureRows.size, conflicts: 0 });
  expect(doc.policy).toEqual({
    onConflict: 'abort',
    ingest: true,
    rowsHeldBack: 0,
    rewrittenFiles: 0,
    emptiedFiles: 0,
    rowsUnchangedLeftOut: 0,
    unchangedFilesLeftOut: 0,
  });
  const ingest = doc.ingest as { files: Record<string, unknown>[]; memtableFlushes: number; seconds: number };
  expect(ingest.files.length).toBeGreaterThan(0);
  for (const f of ingest.files) {
    for (const field of ['file', 'level', 'globalSeqno', 'sizeBytes', 'smallestHex', 'largestHex', 'largestExclusive', 'fileNumber'])
      expect(f).toHaveProperty(field);
  }
  // An empty database: nothing overlaps, so the files go to the bottom level at sequence 0.
  expect(ingest.files[0]).toMatchObject({ level: 6, globalSeqno: 0 });
  expect(typeof ingest.memtableFlushes).toBe('number');
  expect(typeof ingest.seconds).toBe('number');
  expect(leftovers(db)).toEqual([]);
  await withEngine(db, (e) => {
    for (const [id, value] of fixtureRows) expect(getText(e, id)).toBe(value);
    expect(getText(e, '1')).toBeNull();
  });
});

test('conflicts under abort: exit 3, report with the conflicting keys and values, database unchanged; check agrees', async () => {
  const db = await baseDb();
  const input = changedInput();
  const check = await run('check', input.file, ...DIALECT, '--db', db);
  expect(check.code).toBe(3);
  const before = await withEngine(db, (e) => e.lastSequence);
  const report = path.join(root, 'report.json');
  const r = await run('import', input.file, ...DIALECT, '--db', db, '--report', report);
  expect(r.code).toBe(3);
  expect(r.stderr).toMatch(/3 key\(s\) would change a live value.*nothing ingested/);
  const doc = JSON.parse(fs.readFileSync(report, 'utf8')) as {
    summary: { conflicts: number; new: number; unchanged: number };
    conflicts: {
      key: string;
      existingValue: { data: string };
      newValue: { data: string };
      source: { file: string; line: number } | null;
    }[];
  };
  expect(doc.summary).toMatchObject({ conflicts: 3, new: 2, unchanged: 1 });
  expect(doc.conflicts.map((c) => c.key).sort()).toEqual([...input.changed].sort());
  const lines = fs.readFileSync(input.file, 'utf8').split('\n');
  for (const c of doc.conflicts) {
    expect(c.existingValue.data).toBe(fixtureRows.get(c.key));
    expect(c.newValue.data.startsWith('1999-01-01')).toBe(true);
    // The row-origin side files give each conflict the input file and line of its new row.
    expect(c.source).toEqual({ file: input.file, line: lines.indexOf(`${c.key}|${c.newValue.data}`) + 1 });
  }
  // The same report streamed as NDJSON (written under the ingestion's latch, before the abort).
  const ndjson = path.join(root, 'report.ndjson');
  const streamed = await run('import', input.file, ...DIALECT, '--db', db, '--report', ndjson, '--report-format', 'ndjson');
  expect(streamed.code).toBe(3);
  const reportLines = fs
    .readFileSync(ndjson, 'utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(reportLines.slice(0, -1)).toEqual(doc.conflicts.map((c) => ({ type: 'conflict', ...c })));
  expect(reportLines[reportLines.length - 1]).toMatchObject({ type: 'summary', summary: { conflicts: 3, new: 2, unchanged: 1 } });
  expect(leftovers(db)).toEqual([]);
  await withEngine(db, (e) => {
    expect(e.lastSequence).toBe(before);
    for (const id of input.changed) expect(getText(e, id)).toBe(fixtureRows.get(id));
    for (const id of input.added) expect(getText(e, id)).toBeNull();
  });
});

test('conflict sources through parse ranges and merge workers: the physical line of each changed row', async () => {
  const db = await baseDb();
  // Every 997th row changed, after a header and a record whose quoted field spans three lines:
  // parse workers cut the file into ranges, so each range's line offset must carry through.
  const rows = fixtureLines.slice(1).map((l, i) => (i % 997 === 5 ? l.replace(/\|[^|]*/, '|1999-01-01 00:00:00.000') : l));
  const multiLine = '300000000000009|"2006-01-01\n00:00:00\n.000"|CMPT|TMS|0|NEW|1|1.00|43000000001|New Row|1.00|0|0|0|1';
  const file = path.join(root, 'ranges.csv');
  fs.writeFileSync(file, `${[HEADER, multiLine, ...rows].join('\n')}\n`);
  const changed = rows.filter((l) => l.includes('|1999-01-01 00:00:00.000|'));
  const result = await importIntoDb({
    dbDir: db,
    import: {
      inputs: [file],
      dialect: { delimiter: '|' },
      header: true,
      key: 't_id:int64',
      parseThreads: 2,
      parseTaskBytes: 64 << 10,
      mergeThreads: 2,
    },
    onConflict: 'abort',
    maxReported: 100,
    dryRun: true,
  });
  expect(result.import).toMatchObject({ parseRanges: expect.any(Number), mergeThreads: 2 });
  expect(result.import.parseRanges).toBeGreaterThan(4);
  expect(result.report.summary.conflicts).toBe(changed.length);
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  for (const c of result.report.conflicts) {
    const line = lines.findIndex((l) => l.startsWith(`${c.key}|1999-01-01`)) + 1;
    expect(line).toBeGreaterThan(4);
    expect(c.source).toEqual({ file, line });
  }
  expect(leftovers(db)).toEqual([]);
});

test('overwrite: new values win; skip: conflicting keys keep their values, the rest go in', async () => {
  const db = await baseDb();
  const copy = path.join(root, 'db-skip');
  fs.cpSync(db, copy, { recursive: true });
  const input = changedInput();

  const over = await run('import', input.file, ...DIALECT, '--db', db, '--on-conflict', 'overwrite', '--json');
  expect(over.code).toBe(0);
  const overDoc = JSON.parse(over.stdout) as {
    policy: { rowsHeldBack: number };
    ingest: { files: { level: number; globalSeqno: number }[] };
  };
  expect(overDoc.policy.rowsHeldBack).toBe(0);
  // Overlapping existing data: the file lands above it with a fresh sequence number.
  expect(overDoc.ingest.files[0].globalSeqno).toBeGreaterThan(0);
  expect(overDoc.ingest.files[0].level).toBeLessThan(6);
  const newValues = new Map(
    fs
      .readFileSync(input.file, 'utf8')
      .split('\n')
      .slice(1)
      .filter((l) => l.length > 0)
      .map((l) => [l.slice(0, l.indexOf('|')), l.slice(l.indexOf('|') + 1)]),
  );
  await withEngine(db, (e) => {
    for (const [id, value] of newValues) expect(getText(e, id)).toBe(value);
  });

  const skip = await run('import', input.file, ...DIALECT, '--db', copy, '--on-conflict', 'skip', '--json');
  expect(skip.code).toBe(0);
  const skipDoc = JSON.parse(skip.stdout) as { policy: { rowsHeldBack: number; rewrittenFiles: number } };
  expect(skipDoc.policy).toMatchObject({ rowsHeldBack: 3, rewrittenFiles: 1 });
  expect(leftovers(copy)).toEqual([]);
  await withEngine(copy, (e) => {
    for (const id of input.changed) expect(getText(e, id)).toBe(fixtureRows.get(id));
    for (const id of input.added) expect(getText(e, id)).toBe(newValues.get(id));
    expect(getText(e, input.unchanged)).toBe(fixtureRows.get(input.unchanged));
  });
});

test('--replace-range: keys in the span that the import lacks are deleted (default span and explicit FROM..TO)', async () => {
  const db = await baseDb();
  const ids = ['200000000005000', '200000000005003', '200000000005010'];
  const input = csv(
    'span.csv',
    ids.map((id) => `${id}|${fixtureRows.get(id) as string}`),
  );
  // Default span: [5000, 5010 ‖ 0x00): 5001..5009 minus 5003 go; 4999 and 5011 stay.
  const r = await run('import', input, ...DIALECT, '--db', db, '--replace-range', '--json');
  expect(r.code).toBe(0);
  const doc = JSON.parse(r.stdout) as {
    replaceRange: { startHex: string; endHex: string };
    ingest: { files: { file: string | null; largestExclusive: boolean }[] };
  };
  expect(doc.replaceRange).toEqual({ startHex: key(ids[0]).toString('hex'), endHex: `${key(ids[2]).toString('hex')}00` });
  expect(doc.ingest.files.some((f) => f.file === null && f.largestExclusive)).toBe(true);
  await withEngine(db, (e) => {
    expect(scanIds(e, 200000000004995, 200000000005015)).toEqual([
      '200000000004995',
      '200000000004996',
      '200000000004997',
      '200000000004998',
      '200000000004999',
      ...ids,
      '200000000005011',
      '200000000005012',
      '200000000005013',
      '200000000005014',
    ]);
    expect(getText(e, '200000000005001')).toBeNull();
    expect(getText(e, ids[1])).toBe(fixtureRows.get(ids[1]));
  });

  // Explicit bounds, typed through --key: [4990, 5020) now holds the three ids alone.
  const again = await run('import', input, ...DIALECT, '--db', db, '--replace-range', '200000000004990..200000000005020');
  expect(again.code).toBe(0);
  await withEngine(db, (e) => {
    expect(scanIds(e, 200000000004980, 200000000005030)).toEqual([
      ...Array.from({ length: 10 }, (_, i) => String(200000000004980 + i)),
      ...ids,
      ...Array.from({ length: 10 }, (_, i) => String(200000000005020 + i)),
    ]);
  });
});

test('--dry-run and plan link nothing and show levels and sequence numbers; plan exits 0 with conflicts', async () => {
  const db = await baseDb();
  const input = changedInput();
  const filesBefore = await withEngine(db, (e) => e.levelFiles().map((l) => l.length));
  const seqBefore = await withEngine(db, (e) => e.lastSequence);

  const dry = await run('import', input.file, ...DIALECT, '--db', db, '--dry-run', '--on-conflict', 'overwrite', '--json');
  expect(dry.code).toBe(0);
  const doc = JSON.parse(dry.stdout) as {
    dryRun: boolean;
    ingest: unknown;
    plan: { files: { level: number; globalSeqno: number; fileNumber: number | null }[] };
  };
  expect(doc.dryRun).toBe(true);
  expect(doc.ingest).toBeNull();
  expect(doc.plan.files).toHaveLength(1);
  expect(doc.plan.files[0].fileNumber).toBeNull();
  expect(doc.plan.files[0].level).toBeLessThan(6);
  expect(doc.plan.files[0].globalSeqno).toBe(seqBefore + 1);

  const plan = await run('plan', input.file, '--delimiter', '|', '--header', '--key', 't_id:int64', '--db', db);
  expect(plan.code).toBe(0);
  expect(plan.stdout).toMatch(/3 conflicting/);
  expect(plan.stdout).toMatch(/000001\.sst: L\d seqno \d+ \[/);
  expect(plan.stdout).toMatch(/abort would ingest nothing/);

  expect(leftovers(db)).toEqual([]);
  await withEngine(db, (e) => {
    expect(e.levelFiles().map((l) => l.length)).toEqual(filesBefore);
    expect(e.lastSequence).toBe(seqBefore);
    for (const id of input.added) expect(getText(e, id)).toBeNull();
    for (const id of input.changed) expect(getText(e, id)).toBe(fixtureRows.get(id));
  });
  // A dry run creates no database.
  expect((await run('plan', input.file, ...DIALECT, '--db', path.join(root, 'none'))).code).toBe(2);
  expect(fs.existsSync(path.join(root, 'none'))).toBe(false);
});

test('bad input: exit 2, database untouched, no private directory; a new database is not created', async () => {
  const db = await baseDb();
  const listing = fs.readdirSync(db).sort();
  const bad = csv('bad.csv', ['200000000000001|x|CMPT', 'not-a-number|2005-01-01|CMPT|TMS|0|X|1|1|1|n|1|1|1|1|1']);
  const r = await run('import', bad, ...DIALECT, '--db', db);
  expect(r.code).toBe(2);
  expect(fs.readdirSync(db).sort()).toEqual(listing);
  const fresh = path.join(root, 'fresh');
  expect((await run('import', bad, ...DIALECT, '--db', fresh)).code).toBe(2);
  expect(fs.existsSync(fresh)).toBe(false);
});

test('usage: database options need --db; skip does not go with --replace-range; --output-dir alone still works', async () => {
  const input = changedInput();
  expect((await run('import', input.file, ...DIALECT, '--output-dir', path.join(root, 'out'), '--on-conflict', 'skip')).code).toBe(2);
  expect((await run('import', input.file, ...DIALECT)).code).toBe(2);
  expect((await run('import', input.file, ...DIALECT, '--db', path.join(root, 'd'), '--on-conflict', 'skip', '--replace-range')).code).toBe(
    2,
  );
  expect((await run('import', input.file, ...DIALECT, '--output-dir', path.join(root, 'out'))).code).toBe(0);
  expect(fs.existsSync(path.join(root, 'out', '000001.sst'))).toBe(true);
});

test('--verify-checksums re-reads the new SSTs (and needs --db); --no-verify-checksums, the default, is still taken', async () => {
  const input = changedInput();
  const refused = await run('import', input.file, ...DIALECT, '--output-dir', path.join(root, 'o'), '--verify-checksums');
  expect(refused.code).toBe(2);
  expect(refused.stderr).toContain('--verify-checksums need --db');
  for (const flag of ['--verify-checksums', '--no-verify-checksums']) {
    const dir = path.join(root, `db${flag}`);
    const r = await run('import', input.file, ...DIALECT, '--db', dir, flag, '--json');
    expect(r.code).toBe(0);
    expect((JSON.parse(r.stdout) as { ingest: { files: unknown[] } }).ingest.files.length).toBeGreaterThan(0);
  }
});
