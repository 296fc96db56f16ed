/**
 * Bad rows and duplicate keys: every case gives its error with the right file and line numbers,
 * in-process and across parse-worker byte ranges; --max-bad-rows with --rejects goes on past
 * them; and an aborted import leaves the output directory and the temp directory as they were.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { runImport, ImportOptions } from '../../src/ingest/importer';
import { exitCodeFor, IngestError } from '../../src/util/errors';
import { readOutputSsts, tempDir } from './support';
import { FIXTURES_DIR } from '../support/paths';

const FIXTURES = FIXTURES_DIR;
const BAD = path.join(FIXTURES, 'bad_rows.csv');

async function importTo(dir: string, opts: Partial<ImportOptions> & { inputs: string[] }) {
  return runImport({ outputDir: path.join(dir, 'out'), tmpDir: path.join(dir, 'tmp'), writeSummaryFile: false, ...opts });
}

async function failure(p: Promise<unknown>): Promise<IngestError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(IngestError);
    return e as IngestError;
  }
  throw new Error('expected the import to fail');
}

function expectUntouched(dir: string): void {
  expect(fs.readdirSync(path.join(dir, 'out')).filter((f) => f !== 'keep.txt')).toEqual([]);
  expect(fs.existsSync(path.join(dir, 'out', 'keep.txt'))).toBe(true);
  expect(fs.readdirSync(path.join(dir, 'tmp'))).toEqual([]);
}

function withOutput(): string {
  const dir = tempDir('ingest-errors-');
  fs.mkdirSync(path.join(dir, 'out'));
  fs.writeFileSync(path.join(dir, 'out', 'keep.txt'), 'not ours');
  return dir;
}

describe.each([
  ['in-process', { parseThreads: 0 }],
  ['parse workers', { parseThreads: 2, parseTaskBytes: 24 }],
] as const)('bad rows (%s)', (_name, mode) => {
  const base = { inputs: [BAD], header: true, key: 'id:int64', ...mode };

  it('the first bad row fails the import with its line and reason, exit code 2', async () => {
    const dir = withOutput();
    const err = await failure(importTo(dir, base));
    expect(err.code).toBe('BAD_INPUT');
    expect(exitCodeFor(err)).toBe(2);
    expect(err.message).toContain(`${BAD} line 3: expected 3 fields, got 2`);
    expectUntouched(dir);
  });

  it('--max-bad-rows goes on past them and --rejects lists each with line and reason', async () => {
    const dir = withOutput();
    const rejects = path.join(dir, 'rejects.jsonl');
    const s = await importTo(dir, { ...base, maxBadRows: 5, rejectsPath: rejects });
    expect(s.badRows).toBe(5);
    const lines = fs
      .readFileSync(rejects, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { file: string; line: number; reason: string; text: string });
    expect(lines.map((l) => l.line)).toEqual([3, 5, 7, 9, 11]);
    expect(lines.every((l) => l.file === BAD)).toBe(true);
    expect(lines[0]).toMatchObject({ reason: 'expected 3 fields, got 2', text: '2,20' });
    expect(lines[1].reason).toMatch(/key column id is not a valid int64/);
    expect(lines[2].reason).toBe('expected 3 fields, got 4');
    expect(lines[3].reason).toMatch(/quote inside unquoted field 2/);
    expect(lines[4].reason).toMatch(/unterminated quoted field/);
    const ids = readOutputSsts(path.join(dir, 'out')).entries.map((e) => Number(e.key.readBigUInt64BE(0) - (1n << 63n)));
    expect(ids).toEqual([1, 3, 5, 7, 9]);
  });

  it('one bad row past --max-bad-rows fails at that row; --rejects still lists them', async () => {
    const dir = withOutput();
    const rejects = path.join(dir, 'rejects.jsonl');
    const err = await failure(importTo(dir, { ...base, maxBadRows: 3, rejectsPath: rejects }));
    expect(err.message).toContain(`${BAD} line 9: quote inside unquoted field 2`);
    expect(err.message).toContain('more than --max-bad-rows 3');
    expectUntouched(dir);
    const lines = fs.readFileSync(rejects, 'utf8').trim().split('\n');
    expect(lines.map((l) => (JSON.parse(l) as { line: number }).line)).toEqual([3, 5, 7, 9]);
  });
});

describe('duplicate keys', () => {
  /** Two files; keys 0..199 in a.csv, then b.csv repeats keys 50..199 (150 duplicates). */
  function duplicateInputs(dir: string): string[] {
    const a = ['k,v', ...Array.from({ length: 200 }, (_, i) => `${i},a${i}`)];
    const b = ['k,v', ...Array.from({ length: 150 }, (_, i) => `${199 - i},b${199 - i}`)];
    fs.writeFileSync(path.join(dir, 'a.csv'), `${a.join('\n')}\n`);
    fs.writeFileSync(path.join(dir, 'b.csv'), `${b.join('\n')}\n`);
    return [path.join(dir, 'a.csv'), path.join(dir, 'b.csv')];
  }

  it.each([
    ['in-process', { parseThreads: 0 }],
    ['parse and merge workers', { parseThreads: 2, mergeThreads: 2, parseTaskBytes: 64, memoryLimitBytes: 16 << 20 }],
  ] as const)('error policy names both rows of the first 100 and counts them all (%s)', async (_n, mode) => {
    const dir = withOutput();
    const inputs = duplicateInputs(dir);
    const err = await failure(importTo(dir, { inputs, header: true, key: 'k:int64', memoryLimitBytes: 4 << 20, ...mode }));
    expect(err.code).toBe('DUPLICATE_KEY');
    expect(exitCodeFor(err)).toBe(2);
    expect(err.message).toMatch(/^150 duplicate key\(s\)/);
    // Key 50 is on line 52 of a.csv and line 151 of b.csv (b lists 199 down to 50 from line 2).
    expect(err.message).toContain(`key 50: ${inputs[1]} line 151 repeats ${inputs[0]} line 52`);
    expect(err.message).toContain(`key 149: ${inputs[1]} line 52 repeats ${inputs[0]} line 151`);
    expect(err.message).not.toContain('key 150:');
    expect(err.message).toContain('... and 50 more');
    expectUntouched(dir);
  });

  it.each([
    ['first', 'a'],
    ['last', 'b'],
  ] as const)('policy %s keeps the %s row', async (policy, file) => {
    const dir = withOutput();
    const inputs = duplicateInputs(dir);
    const s = await importTo(dir, { inputs, header: true, key: 'k:int64', onDuplicate: policy, memoryLimitBytes: 4 << 20 });
    expect(s.duplicates.count).toBe(150);
    expect(s.duplicates.examples[0]).toEqual({
      key: '50',
      first: { file: inputs[0], line: 52 },
      duplicate: { file: inputs[1], line: 151 },
    });
    const { entries } = readOutputSsts(path.join(dir, 'out'));
    expect(entries.length).toBe(200);
    expect(s.rowsWritten).toBe(200);
    expect(entries[120].value.toString()).toBe(`${file}120`);
    expect(entries[10].value.toString()).toBe('a10');
  });

  it('a repeated key inside one file and one run', async () => {
    const dir = withOutput();
    fs.writeFileSync(path.join(dir, 'in.csv'), 'x,1\ny,2\nx,3\n');
    const err = await failure(importTo(dir, { inputs: [path.join(dir, 'in.csv')] }));
    expect(err.message).toContain(`key x: ${path.join(dir, 'in.csv')} line 3 repeats ${path.join(dir, 'in.csv')} line 1`);
    expectUntouched(dir);
  });
});

describe('usage errors', () => {
  it('refuses an output directory that already holds SSTs, and unknown key columns', async () => {
    const dir = tempDir('ingest-errors-');
    fs.mkdirSync(path.join(dir, 'out'));
    fs.writeFileSync(path.join(dir, 'out', '000001.sst'), 'x');
    fs.writeFileSync(path.join(dir, 'in.csv'), 'a,b\n');
    expect((await failure(importTo(dir, { inputs: [path.join(dir, 'in.csv')] }))).code).toBe('USAGE');
    const err = await failure(importTo(withOutput(), { inputs: [path.join(dir, 'in.csv')], header: true, key: 'nope' }));
    expect(err.code).toBe('USAGE');
    expect(err.message).toContain('"nope" is not among the columns: a, b');
  });
});

test('a file whose only row is bad fails with its line on the parallel path too (it used to import nothing)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'only-bad-'));
  try {
    const input = path.join(dir, 'only.csv');
    fs.writeFileSync(input, '10001,"open\n');
    await expect(runImport({ inputs: [input], outputDir: path.join(dir, 'out'), parseThreads: 2 })).rejects.toThrow(
      `${input} line 1: unterminated quoted field`,
    );
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
