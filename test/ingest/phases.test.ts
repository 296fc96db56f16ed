/**
 * The import's phase functions (src/ingest/phases.ts), called one by one from outside any driver,
 * each given its task as JSON (as another machine would get it), make the same SSTs, byte for
 * byte but for each file's random session identity, as `ingest import` with the same options; and the phases' boundary checks refuse what
 * breaks their invariants.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { runCli } from '../support/cli';
import { TableReader } from '../../src/sstable/reader/tableReader';
import { ParseTask } from '../../src/ingest/parse/parseTypes';
import { ImportOptionValues, IMPORT_OPTIONS } from '../../src/ingest/options/optionTable';
import { OptionSetting, parseOptionValues } from '../../src/ingest/options/optionParser';
import { importSettingsOf } from '../../src/ingest/options/importSettings';
import {
  ImportPlan,
  MergedRange,
  ParseTaskResult,
  assertRangesCoverKeys,
  finishMerge,
  finishParse,
  mergeRange,
  parseRange,
  parseRangeTasks,
  planImport,
  planMerge,
  planParse,
  publishSsts,
} from '../../src/ingest/phases';

/**
 * A table's bytes with its session identity blanked: every SstFileWriter draws a fresh one, as
 * RocksDB's does (rocksdb.creating.session.identity, 20 characters in the properties block), so
 * two writers of the same entries differ there and in the properties block's checksum, which
 * covers it (the 4 bytes before the metaindex block, which follows the properties block).
 */
function withoutSessionIdentity(file: string): Buffer {
  const bytes = fs.readFileSync(file);
  const reader = TableReader.open(file);
  try {
    const session = Buffer.from(reader.properties.dbSessionId, 'latin1');
    expect(session.length).toBe(20);
    const metaindex = reader.footer.metaindexHandle.offset;
    const at = bytes.lastIndexOf(session, metaindex);
    expect(at).toBeGreaterThan(0);
    bytes.fill(0, at, at + session.length);
    bytes.fill(0, metaindex - 4, metaindex);
    return bytes;
  } finally {
    reader.close();
  }
}

/** Plain data survives JSON: what a task sent to another machine arrives as. */
function overTheWire<T>(task: T): T {
  return JSON.parse(JSON.stringify(task)) as T;
}

/** A CSV with a header, int64 keys in shuffled order, quoted values holding commas and line feeds (so some range guesses start inside a quoted field). */
function writeCsv(file: string, firstId: number, rows: number, seed: number): void {
  let x = seed;
  const next = (): number => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
  const ids = Array.from({ length: rows }, (_, i) => firstId + i);
  for (let i = ids.length - 1; i > 0; i--) {
    const j = next() % (i + 1);
    [ids[i], ids[j]] = [ids[j], ids[i]];
  }
  const lines = ['id,name,note'];
  for (const id of ids) {
    const note = next() % 7 === 0 ? `"line one, with a comma\nline two ${'x'.repeat(next() % 200)}"` : `plain ${next()}`;
    lines.push(`${id},name-${id},${note}`);
  }
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

const FLAGS: readonly string[] = [
  '--header',
  '--key',
  'id:int64',
  '--memory-limit',
  '8MiB',
  '--target-file-size',
  '256KiB',
  '--on-duplicate',
  'last',
];

/** The flags above as the option values the CLI gets from them (the same table and parser rules). */
function optionValuesOf(flags: readonly string[]): ImportOptionValues {
  const settings: OptionSetting[] = [];
  for (let i = 0; i < flags.length; i++) {
    const name = flags[i].slice(2);
    const next = flags[i + 1];
    if (next !== undefined && !next.startsWith('--')) settings.push({ name, value: flags[++i] });
    else settings.push({ name, value: true });
  }
  return parseOptionValues<ImportOptionValues>(IMPORT_OPTIONS, settings, 'test options');
}

function sstFiles(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.sst'))
    .sort();
}

/** The whole import through the phases, each task as JSON, ranges parsed in any order. */
async function importByPhases(plan: ImportPlan, runDir: string, outputDir: string): Promise<{ ranges: number }> {
  const parsePlan = planParse(plan, runDir, 2);
  if (parsePlan === null) throw new Error('the layout did not bind');
  const tasks = parseRangeTasks(parsePlan, 2);
  const results: (ParseTaskResult | null)[] = tasks.map(() => null);
  // Last range first: nothing in a range depends on another's having run.
  for (const t of [...tasks].reverse()) results[t.range.taskId] = parseRange(overTheWire(t));
  const rerun = async (range: ParseTask): Promise<ParseTaskResult> =>
    parseRange(overTheWire({ ...tasks[range.taskId], range: { ...tasks[range.taskId].range, ...range } }));
  const outcome = await finishParse(plan, parsePlan, results, rerun);
  const mergeTasks = planMerge(plan, outcome, 2, outputDir, 'phase-test');
  const merged: MergedRange[] = mergeTasks.map((t) => mergeRange(overTheWire(t)));
  const all = finishMerge(merged);
  publishSsts(outputDir, all.files);
  return { ranges: outcome.ranges };
}

describe('the import as phase functions', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'phases-'));
  });
  afterEach(() => (process.env.KEEP_PHASES === undefined ? fs.rmSync(dir, { recursive: true, force: true }) : console.log(dir)));

  it('makes the same SSTs, byte for byte (session identity aside), as `ingest import` with the same options', async () => {
    const a = path.join(dir, 'a.csv');
    const b = path.join(dir, 'b.csv');
    writeCsv(a, 1_000_000, 40_000, 7);
    // Overlapping ids: duplicates across files, kept last by input order.
    writeCsv(b, 1_030_000, 30_000, 11);
    const viaCli = path.join(dir, 'cli');
    const cli = await runCli('import', a, b, '--output-dir', viaCli, '--threads', '2', '--merge-threads', '2', '--json', ...FLAGS);
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    const summary = JSON.parse(cli.stdout) as { parseThreads: number; mergeThreads: number; parseRanges: number; outputFiles: unknown[] };
    expect(summary.parseThreads).toBe(2);
    expect(summary.mergeThreads).toBe(2);

    const viaPhases = path.join(dir, 'phases');
    const runDir = path.join(dir, 'runs');
    fs.mkdirSync(viaPhases);
    fs.mkdirSync(runDir);
    const plan = planImport({ ...importSettingsOf([a, b], optionValuesOf(FLAGS)), outputDir: viaPhases });
    const { ranges } = await importByPhases(plan, runDir, viaPhases);
    expect(ranges).toBe(summary.parseRanges);
    expect(ranges).toBeGreaterThan(2);

    const names = sstFiles(viaCli);
    expect(names.length).toBe(summary.outputFiles.length);
    expect(names.length).toBeGreaterThan(4);
    expect(sstFiles(viaPhases)).toEqual(names);
    for (const name of names) {
      const ours = withoutSessionIdentity(path.join(viaPhases, name));
      const theirs = withoutSessionIdentity(path.join(viaCli, name));
      expect({ name, equal: ours.equals(theirs) }).toEqual({ name, equal: true });
    }
    // The runs were consumed by the merge: nothing is left behind but empty space.
    expect(fs.readdirSync(viaPhases).filter((f) => !f.endsWith('.sst'))).toEqual([]);
  });

  it('refuses key ranges that do not chain, and a plan of more runs than one merge reads', () => {
    expect(() =>
      assertRangesCoverKeys([
        { lowHex: null, highHex: '10' },
        { lowHex: '11', highHex: null },
      ]),
    ).toThrow(/does not start where/);
    expect(() => assertRangesCoverKeys([{ lowHex: '00', highHex: null }])).toThrow(/unbounded below/);
    expect(() =>
      assertRangesCoverKeys([
        { lowHex: null, highHex: '20' },
        { lowHex: '20', highHex: '20' },
        { lowHex: '20', highHex: null },
      ]),
    ).toThrow(/empty/);
    expect(() => assertRangesCoverKeys([{ lowHex: null, highHex: null }])).not.toThrow();
    const file = path.join(dir, 'x.csv');
    fs.writeFileSync(file, 'k,v\na,1\n');
    const plan = planImport({ inputs: [file], outputDir: dir, header: true, memoryLimitBytes: 4 << 20 });
    const run = { path: file, entries: 1, bytes: 10, samples: [] };
    const outcome = {
      runs: Array.from({ length: 1000 }, () => run),
      sources: [],
      rowsRead: 1000,
      badRowCount: 0,
      badRows: [],
      bound: null,
      inputBytes: 8,
      ranges: 0,
      rangesRetried: 0,
    };
    expect(() => planMerge(plan, outcome, 2, dir, 't')).toThrow(/more than one merge may read at once/);
  });

  it('checks the options as the import does', () => {
    expect(() => planImport({ inputs: [], outputDir: dir })).toThrow(/at least one input/);
    expect(() => planImport({ inputs: [path.join(dir, 'missing.csv')], outputDir: dir })).toThrow(/cannot read input/);
    expect(() => planImport({ inputs: ['-', '-'], outputDir: dir })).toThrow(/only once/);
  });
});
