/**
 * `ingest check`: import options reused, exit codes 0 / 3 / 2, the --json object, the report
 * file, nothing ingested, and no temp files left behind.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../src/engine/engine';
import { CliResult, runCli } from '../support/cli';

let root: string;
let db: string;
beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'check-cli-'));
  db = path.join(root, 'db');
  const e = await Engine.open(db);
  for (let i = 1; i <= 10; i++) await e.put(Buffer.from(String(i)), Buffer.from(`v${i}`));
  await e.delete(Buffer.from('4'));
  await e.close();
});
afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

/** Runs `ingest check ...args` through the CLI's entry point. */
function run(args: string[]): Promise<CliResult> {
  return runCli('check', ...args);
}

function csv(name: string, text: string): string {
  const p = path.join(root, name);
  fs.writeFileSync(p, text);
  return p;
}

/** The import's int64 key encoding: 8 bytes big-endian, sign bit flipped. */
function int64Key(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(n));
  b[0] ^= 0x80;
  return b;
}

test('typed keys: the report shows keys through the --key spec; exit 3; temp files removed', async () => {
  const typedDb = path.join(root, 'typed-db');
  const e = await Engine.open(typedDb);
  for (let i = -3; i <= 10; i++) await e.put(int64Key(i), Buffer.from(`v${i}`));
  await e.close();
  // -2 unchanged, 2 and 3 conflict, 11 new.
  const input = csv('rows.csv', 'id|val\n-2|v-2\n2|changed\n3|other\n11|new\n');
  const tmp = path.join(root, 'tmp1');
  const report = path.join(root, 'report.json');
  const r = await run([
    input,
    '--db',
    typedDb,
    '--delimiter',
    '|',
    '--header',
    '--key',
    'id:int64',
    '--report',
    report,
    '--json',
    '--tmp-dir',
    tmp,
    '--quiet',
  ]);
  expect(r.code).toBe(3);
  expect(r.stderr).toMatch(/2 key\(s\) would change a live value .*; first: key 2/);
  const out = JSON.parse(r.stdout);
  expect(out.check).toMatchObject({ sstKeys: 4, new: 1, unchanged: 1, conflicts: 2 });
  const doc = JSON.parse(fs.readFileSync(report, 'utf8'));
  expect(doc.conflicts.map((c: { key: string; keyHex: string }) => [c.key, c.keyHex])).toEqual([
    ['2', int64Key(2).toString('hex')],
    ['3', int64Key(3).toString('hex')],
  ]);
  expect(fs.readdirSync(tmp)).toEqual([]);
});

test('bytes keys: counts, exit codes and the report file', async () => {
  const input = csv('rows2.csv', '1,v1\n2,changed\n3,other\n4,back\n11,new\n');
  const tmp = path.join(root, 'tmp2');
  const report = path.join(root, 'report2.json');
  const r = await run([input, '--db', db, '--report', report, '--json', '--tmp-dir', tmp, '--quiet', '--max-reported', '1']);
  expect(r.code).toBe(3);
  const out = JSON.parse(r.stdout);
  expect(out.check).toMatchObject({ sstKeys: 5, new: 2, unchanged: 1, conflicts: 2, conflictsReported: 1 });
  expect(out.import).toMatchObject({ rowsWritten: 5 });
  expect(out.report).toBe(report);
  const doc = JSON.parse(fs.readFileSync(report, 'utf8'));
  expect(doc.summary.conflicts).toBe(2);
  expect(doc.conflicts).toEqual([
    expect.objectContaining({
      key: '2',
      existingValue: expect.objectContaining({ data: 'v2' }),
      newValue: expect.objectContaining({ data: 'changed' }),
    }),
  ]);
  expect(fs.readdirSync(tmp)).toEqual([]);
  // Nothing was ingested.
  const e = await Engine.open(db, { createIfMissing: false });
  try {
    expect(e.get(Buffer.from('2'))?.toString()).toBe('v2');
    expect(e.get(Buffer.from('11'))).toBeNull();
  } finally {
    await e.close();
  }
});

test('no conflicts: exit 0 and a human line; strategies agree', async () => {
  const input = csv('clean.csv', '1,v1\n5,v5\n12,x\n');
  for (const strategy of ['seek', 'get', 'auto']) {
    const r = await run([input, '--db', db, '--conflict-strategy', strategy, '--tmp-dir', path.join(root, 'tmp3')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/checked 3 rows against .*: 1 new, 2 unchanged, 0 conflicting/);
  }
});

test('usage errors: no database, a bad strategy', async () => {
  const input = csv('u.csv', '1,v1\n');
  expect((await run([input, '--db', path.join(root, 'nope')])).code).toBe(2);
  expect((await run([input, '--db', db, '--conflict-strategy', 'scan'])).code).toBe(2);
});

/**
 * Typed keys 0..5999 over a database holding every hundredth key: keys 200, 3000 and 5800 come
 * with changed values. Each input has a header and a record with a quoted field spanning three
 * physical lines before its conflicting row, so a row's line is its physical line, not its record
 * number. The rows are long enough that a two-thread merge cuts the keys into two ranges, each
 * holding a conflict.
 */
function sourcedInputs(): { dbDir: string; inputs: string[]; expected: Map<string, { file: string; line: number }> } {
  const dbDir = path.join(root, 'sourced-db');
  const pad = 'x'.repeat(40);
  const rowOf = (k: number): string =>
    k === 200 || k === 3000 || k === 5800 ? `${k}|changed-${k}` : `${k}|${k % 100 === 0 ? `v${k}` : pad}`;
  // a.csv: 0..2999 except 7 (the multi-line record), 5800 near the top; b.csv: 3000..5999, 3000 at the end.
  const aKeys = [5800, ...Array.from({ length: 3000 }, (_, i) => i).filter((k) => k !== 7)];
  const bKeys = Array.from({ length: 3000 }, (_, i) => 3000 + i).filter((k) => k !== 5800 && k !== 3000);
  const shuffle = (keys: number[]): number[] =>
    keys
      .map((k, i) => [k, (i * 7919) % keys.length])
      .sort((x, y) => x[1] - y[1])
      .map((p) => p[0]);
  const a = csv('sourced-a.csv', ['id|val', '7|"first line', 'second ""line""', 'third line"', ...aKeys.map(rowOf)].join('\n') + '\n');
  const b = csv(
    'sourced-b.csv',
    ['id|val', '3001|"one', 'two', 'three"', ...shuffle(bKeys.filter((k) => k !== 3001)).map(rowOf), rowOf(3000)].join('\n') + '\n',
  );
  const expected = new Map<string, { file: string; line: number }>();
  for (const [file, k] of [
    [a, 200],
    [b, 3000],
    [a, 5800],
  ] as const) {
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    expected.set(String(k), { file, line: lines.indexOf(`${k}|changed-${k}`) + 1 });
  }
  // The multi-line records sit between the header and every conflicting row.
  for (const s of expected.values()) expect(s.line).toBeGreaterThan(4);
  return { dbDir, inputs: [a, b], expected };
}

test.each([
  ['one merge thread', []],
  ['two merge threads', ['--merge-threads', '2']],
  ['parse and merge workers', ['--threads', '2', '--merge-threads', '2']],
])('conflict sources name the input file and physical line of each new row (%s)', async (_name, extra) => {
  const { dbDir, inputs, expected } = sourcedInputs();
  if (!fs.existsSync(dbDir)) {
    const e = await Engine.open(dbDir);
    for (let k = 0; k < 6000; k += 100) await e.put(int64Key(k), Buffer.from(`v${k}`));
    await e.close();
  }
  const tmp = path.join(root, `tmp-sourced-${extra.length}`);
  const report = path.join(root, `report-sourced-${extra.length}.json`);
  const r = await run([
    ...inputs,
    '--db',
    dbDir,
    '--delimiter',
    '|',
    '--header',
    '--key',
    'id:int64',
    '--report',
    report,
    '--json',
    '--tmp-dir',
    tmp,
    '--quiet',
    ...extra,
  ]);
  expect(r.code).toBe(3);
  const out = JSON.parse(r.stdout);
  expect(out.check).toMatchObject({ sstKeys: 6000, conflicts: 3, unchanged: 57 });
  if (extra.includes('--merge-threads')) {
    expect(out.import.mergeThreads).toBe(2);
    expect(out.import.outputFiles.length).toBeGreaterThanOrEqual(2);
  }
  const doc = JSON.parse(fs.readFileSync(report, 'utf8'));
  const sources = new Map(doc.conflicts.map((c: { key: string; source: unknown }) => [c.key, c.source]));
  expect(sources).toEqual(expected);
  expect(fs.readdirSync(tmp)).toEqual([]);
});

test('check --output-dir keeps an origins file beside each SST; a plain import writes none', async () => {
  const input = csv('origins.csv', 'k,v\n1,v1\n2,changed\n');
  const kept = path.join(root, 'kept');
  const r = await run([input, '--db', db, '--header', '--output-dir', kept, '--quiet']);
  expect(r.code).toBe(3);
  expect(fs.readdirSync(kept).sort()).toEqual(['000001.origins', '000001.sst', 'import-summary.json']);

  const { runImport } = await import('../../src/ingest/importer');
  const plain = path.join(root, 'plain');
  await runImport({ inputs: [input], outputDir: plain, header: true });
  expect(fs.readdirSync(plain).sort()).toEqual(['000001.sst', 'import-summary.json']);
});

test.each([[[]], [['--merge-threads', '2']]])('a failed import leaves no SST or origins file behind (%j)', async (extra) => {
  // 4000 rows so two merge threads both write files before the duplicate fails the import.
  const rows = Array.from({ length: 4000 }, (_, i) => `${i},${'y'.repeat(40)}`);
  const input = csv(`dup-${extra.length}.csv`, [...rows, '3999,again'].join('\n') + '\n');
  const out = path.join(root, `dup-out-${extra.length}`);
  const r = await run([input, '--db', db, '--output-dir', out, '--target-file-size', '16384', '--quiet', ...extra]);
  expect(r.code).toBe(2);
  expect(r.stderr).toMatch(/duplicate key/);
  expect(fs.readdirSync(out)).toEqual([]);
});

test('--report-format ndjson: one line per conflict with its CSV source, then the summary; the error still names the first', async () => {
  const input = csv('rows-ndjson.csv', '1,v1\n2,changed\n3,other\n4,back\n11,new\n');
  const report = path.join(root, 'report.ndjson');
  const r = await run([input, '--db', db, '--report', report, '--report-format', 'ndjson', '--max-reported', 'all', '--json', '--quiet']);
  expect(r.code).toBe(3);
  expect(r.stderr).toMatch(/2 key\(s\) would change a live value .*; first: key 2/);
  expect(JSON.parse(r.stdout).check).toMatchObject({ conflicts: 2, conflictsReported: 2, maxReported: Number.MAX_SAFE_INTEGER });
  const lines = fs
    .readFileSync(report, 'utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l));
  expect(lines.slice(0, 2)).toEqual([
    expect.objectContaining({
      type: 'conflict',
      key: '2',
      source: { file: input, line: 2 },
      newValue: expect.objectContaining({ data: 'changed' }),
    }),
    expect.objectContaining({ type: 'conflict', key: '3', source: { file: input, line: 3 } }),
  ]);
  expect(lines[2]).toMatchObject({ type: 'summary', format: 'sst-ingest.conflict-report', summary: { sstKeys: 5, conflicts: 2 } });
  expect(lines).toHaveLength(3);
  expect(fs.readdirSync(root).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  // A JSON report cannot list them all: it is held in memory whole.
  const all = await run([input, '--db', db, '--report', path.join(root, 'r.json'), '--max-reported', 'all', '--quiet']);
  expect(all.code).toBe(2);
  expect(all.stderr).toMatch(/--max-reported all needs --report FILE --report-format ndjson/);
});
