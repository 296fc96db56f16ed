/**
 * The merge's data path, measured: every read of a run's bytes and every write of an SST's bytes
 * during one merge range (src/ingest/sort/mergeRange.ts) is caught at the system call
 * (fs.readSync, fs.writeSync) with its call stack, and the stack's source files of src/ are
 * listed from the merge down. The path "visits each file once" when no file comes back after
 * another one has been entered below it (a → b → a is a return into a: two places in one file
 * to keep in mind to follow one row). Both merges are measured: the native one (the default
 * where the codec is built) and the JavaScript one.
 */
import * as os from 'os';
import * as path from 'path';
import type { ImportPlan, MergeRangeTask, ParseTaskResult } from '../../../src/ingest/phases';
import { REPO_ROOT } from '../../support/paths';

/**
 * The process's own fs module (not a test-local copy of its namespace): the code under test
 * takes its functions from it when first loaded, so the tracing wrappers go in before it loads
 * (the phases are required below) and forward every call, catching a stack only while tracing.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const fs = require('fs') as typeof import('fs');
const realReadSync = fs.readSync;
const realWriteSync = fs.writeSync;
let tracing: { reads: string[][]; writes: string[][] } | null = null;
fs.readSync = ((...args: unknown[]) => {
  tracing?.reads.push(srcFilesOf(new Error().stack ?? ''));
  return (realReadSync as (...a: unknown[]) => number)(...args);
}) as typeof fs.readSync;
fs.writeSync = ((...args: unknown[]) => {
  tracing?.writes.push(srcFilesOf(new Error().stack ?? ''));
  return (realWriteSync as (...a: unknown[]) => number)(...args);
}) as typeof fs.writeSync;
afterAll(() => {
  fs.readSync = realReadSync;
  fs.writeSync = realWriteSync;
});
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { finishParse, mergeRange, parseRange, parseRangeTasks, planImport, planMerge, planParse } =
  require('../../../src/ingest/phases') as typeof import('../../../src/ingest/phases');

/** The src/ files of a stack trace, outermost first, repeats of the same file in a row folded. */
function srcFilesOf(stack: string): string[] {
  const files: string[] = [];
  for (const line of stack.split('\n').slice(1)) {
    const m = /\(?([^\s()]+\.ts):\d+:\d+\)?$/.exec(line.trim());
    if (m === null) continue;
    const rel = path.relative(REPO_ROOT, m[1]);
    if (!rel.startsWith('src/')) continue;
    files.push(rel);
  }
  files.reverse();
  return files.filter((f, i) => i === 0 || files[i - 1] !== f);
}

/** Files that appear twice in a folded path: entered, left for a deeper file, and entered again. */
function revisits(files: readonly string[]): string[] {
  return files.filter((f, i) => files.indexOf(f) !== i);
}

async function mergeTasksOf(dir: string): Promise<{ plan: ImportPlan; tasks: MergeRangeTask[] }> {
  const csv = path.join(dir, 'in.csv');
  const rows: string[] = ['id,v'];
  for (let i = 0; i < 20_000; i++) rows.push(`${(i * 7919) % 20_000},value-${i}-${'x'.repeat(i % 40)}`);
  fs.writeFileSync(csv, `${rows.join('\n')}\n`);
  const runDir = path.join(dir, 'runs');
  fs.mkdirSync(runDir);
  const plan = planImport({
    inputs: [csv],
    outputDir: dir,
    header: true,
    key: 'id:int64',
    memoryLimitBytes: 8 << 20,
    targetFileSizeBytes: 64 << 10,
  });
  const parsePlan = planParse(plan, runDir, 1, 256 << 10);
  if (parsePlan === null) throw new Error('the layout did not bind');
  const results: ParseTaskResult[] = parseRangeTasks(parsePlan).map(parseRange);
  const outcome = await finishParse(plan, parsePlan, results, () => Promise.reject(new Error('no rerun expected')));
  expect(outcome.runs.length).toBeGreaterThan(1);
  return { plan, tasks: planMerge(plan, outcome, 1, dir, 'data-path') };
}

/** Runs `body` with every readSync and writeSync of it caught with its stack's src/ files. */
function tracingIo(body: () => void): { reads: string[][]; writes: string[][] } {
  const caught = { reads: [] as string[][], writes: [] as string[][] };
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 200;
  tracing = caught;
  try {
    body();
  } finally {
    tracing = null;
    Error.stackTraceLimit = limit;
  }
  return caught;
}

it('counts a return into a file entered before as a revisit (the check itself)', () => {
  expect(revisits(['a.ts', 'b.ts', 'c.ts'])).toEqual([]);
  expect(revisits(['a.ts', 'b.ts', 'a.ts', 'c.ts'])).toEqual(['a.ts']);
  const stack = [
    'Error',
    `    at f (${REPO_ROOT}/src/x/b.ts:1:1)`,
    `    at g (${REPO_ROOT}/src/x/a.ts:2:2)`,
    `    at h (${REPO_ROOT}/src/x/a.ts:3:3)`,
  ].join('\n');
  expect(srcFilesOf(stack)).toEqual(['src/x/a.ts', 'src/x/b.ts']);
});

describe.each([
  ['the native merge', '1'],
  ['the JavaScript merge', '0'],
])('the data path of %s', (_name, native) => {
  let dir: string;
  let saved: string | undefined;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'merge-path-'));
    saved = process.env.SST_INGEST_NATIVE_MERGE;
    process.env.SST_INGEST_NATIVE_MERGE = native;
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.SST_INGEST_NATIVE_MERGE;
    else process.env.SST_INGEST_NATIVE_MERGE = saved;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('goes from a run to an SST through each source file once', async () => {
    const { tasks } = await mergeTasksOf(dir);
    const { reads, writes } = tracingIo(() => void mergeRange(tasks[0]));
    expect(reads.length).toBeGreaterThan(0);
    expect(writes.length).toBeGreaterThan(0);
    const paths = [...reads, ...writes];
    for (const p of paths) expect({ path: p, revisited: revisits(p) }).toEqual({ path: p, revisited: [] });
    // Every path starts at the merge range and ends at a run reader or an SST sink.
    for (const p of reads) expect([p[0], p[p.length - 1]]).toEqual(['src/ingest/sort/mergeRange.ts', 'src/ingest/sort/runFile.ts']);
    for (const p of writes) expect(p[0]).toBe('src/ingest/sort/mergeRange.ts');
    // For the record: the distinct files on the way (printed, measured on every run).
    const files = new Set(paths.flat());
    console.log(`merge data path (${_name}): ${files.size} files: ${[...files].join(', ')}`);
  });
});
