/**
 * Crash-resume (issue 15): `ingest import` SIGKILLed at 37 points landing in every phase (parse,
 * run spill, merge on one thread and on two, check, ingest, and at random times), then run again
 * with the same command.
 * Every resumed run must end with exactly the entries of an uninterrupted run (the database's
 * scan, or the output files' entries), and the work it redid must stay within the bound
 * src/ingest/resume/jobSteps.ts states: at most one parse range per parse thread, at most one
 * SST's worth of merge per merge thread. The bound is checked two ways: against the checkpoint the kill left
 * (read here from state.json) and against what the resumed run reports.
 */
import * as fs from 'fs';
import * as path from 'path';
import { runCliChild as runCli } from '../../support/cliChild';
import { readOutputSsts, tempDir } from '../support';
import { dbContents } from '../../support/dbContents';

jest.setTimeout(240_000);

const PARSE_THREADS = 2;
const ROWS = 36_000;
const TARGET_FILE_SIZE_BYTES = 128 << 10;
/** A range's records may run past its nominal end by one record; rows here are under 200 bytes. */
const RANGE_SLACK_BYTES = 64 << 10;
/** An SST may pass its target by one data block and its index and filter. */
const SST_SLACK_BYTES = 64 << 10;

/** 36,000 rows in shuffled key order, ~2.3 MB: 3 parse ranges (1 MiB each, the floor), 3 runs and ~20 SSTs at the settings below. */
function writeInput(file: string): void {
  let seed = 7;
  const ids = Array.from({ length: ROWS }, (_, i) => i + 1);
  for (let i = ids.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    const j = seed % (i + 1);
    [ids[i], ids[j]] = [ids[j], ids[i]];
  }
  const lines = ['id,name,amount,note'];
  for (const id of ids)
    lines.push(`${id},name-${(id * 7919) % 100003},${(id * 31) % 9973}.${id % 100},note for row ${id} ${'x'.repeat(id % 40)}`);
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

function importArgs(input: string, target: { db: string } | { outputDir: string }, mergeThreads = 1): string[] {
  const where = 'db' in target ? ['--db', target.db] : ['--output-dir', target.outputDir];
  return [
    'import',
    input,
    '--merge-threads',
    String(mergeThreads),
    '--header',
    '--key',
    'id:int64',
    ...where,
    '--threads',
    String(PARSE_THREADS),
    '--memory-limit',
    '8MiB',
    '--target-file-size',
    `${TARGET_FILE_SIZE_BYTES >> 10}KiB`,
    // Every step checkpointed: the input is far under the size from which that is the default.
    '--step-checkpoints-from',
    '0',
    '--json',
    '--quiet',
  ];
}

function outputContents(dir: string): string[] {
  return readOutputSsts(dir).entries.map((e) => `${e.key.toString('hex')}=${e.value.toString('hex')}`);
}

interface JobStateOnDisk {
  phase: string;
  parse: { taskBytes: number | null; inFlight: { startOffset: number; stopAtOffset: number }[] };
}

function jobStateIn(dir: string): JobStateOnDisk | null {
  const job = fs.existsSync(dir) ? fs.readdirSync(dir).find((n) => n.startsWith('.import-job-')) : undefined;
  if (job === undefined) return null;
  const file = path.join(dir, job, 'state.json');
  return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as JobStateOnDisk) : null;
}

interface Round {
  /** SST_INGEST_CRASH_AT, or when the child is killed: a fraction of the uninterrupted run's time. */
  crashAt?: string;
  killAtFraction?: number;
  target: 'db' | 'output';
  /** The phase the kill is meant to land in (checked against the job's phase where it is exact). */
  lands: 'parse' | 'spill' | 'merge' | 'check' | 'ingest' | 'random';
  /** --merge-threads (1 unless given): 2 runs the parallel merge, one key range per worker. */
  mergeThreads?: number;
}

const ROUNDS: Round[] = [
  // Parse: checkpoints 1..8 are the range plan and each range's start and finish.
  ...[1, 2, 3, 4, 5, 6].map((n): Round => ({ crashAt: `job.checkpoint:${n}`, target: 'db', lands: 'parse' })),
  ...[2, 4].map((n): Round => ({ crashAt: `job.checkpoint:${n}`, target: 'output', lands: 'parse' })),
  // A run file written and closed, its range not yet recorded (in a worker thread).
  ...[1, 1].map((n): Round => ({ crashAt: `run.spilled:${n}`, target: 'db', lands: 'spill' })),
  { crashAt: 'run.spilled:1', target: 'output', lands: 'spill' },
  // Merge: an SST finished, not yet recorded; and just after SSTs were recorded.
  ...[1, 4, 9, 15, 20].map((n): Round => ({ crashAt: `sst.finished:${n}`, target: 'db', lands: 'merge' })),
  ...[3, 12].map((n): Round => ({ crashAt: `sst.finished:${n}`, target: 'output', lands: 'merge' })),
  ...[12, 18, 24].map((n): Round => ({ crashAt: `job.checkpoint:${n}`, target: 'db', lands: 'merge' })),
  // The parallel merge: an SST finished in a worker, not yet recorded by the main thread; and
  // just after the ranges or some SSTs were recorded.
  ...[1, 2, 3].map((n): Round => ({ crashAt: `sst.finished:${n}`, target: 'db', lands: 'merge', mergeThreads: 2 })),
  { crashAt: 'sst.finished:2', target: 'output', lands: 'merge', mergeThreads: 2 },
  ...[11, 13].map((n): Round => ({ crashAt: `job.checkpoint:${n}`, target: 'db', lands: 'merge', mergeThreads: 2 })),
  // Check: the scan and the policy done, nothing ingested; ingest: committed, job not yet removed.
  { crashAt: 'check.decided:1', target: 'db', lands: 'check' },
  { crashAt: 'check.decided:1', target: 'db', lands: 'check' },
  { crashAt: 'import.afterIngest:1', target: 'db', lands: 'ingest' },
  { crashAt: 'import.afterIngest:1', target: 'db', lands: 'ingest' },
  // Anywhere: SIGKILL from outside, at a fraction of the time the uninterrupted run took here (so
  // that the kills land inside the run however fast or loaded the machine is).
  ...[0.2, 0.35, 0.5, 0.65, 0.8].map((f): Round => ({ killAtFraction: f, target: 'db', lands: 'random' })),
  { killAtFraction: 0.6, target: 'output', lands: 'random' },
];

/** Whether `dir` already holds everything the uninterrupted run left there. */
async function holdsWholeResult(dir: string, target: 'db' | 'output'): Promise<boolean> {
  if (target === 'db' && !fs.existsSync(path.join(dir, 'CURRENT'))) return false;
  if (target === 'output' && !fs.existsSync(path.join(dir, 'import-summary.json'))) return false;
  const contents = target === 'db' ? await dbContents(dir) : outputContents(dir);
  return contents.length === baseline[target].length && contents.every((e, k) => e === baseline[target][k]);
}

interface ResumeSummary {
  resumed: boolean;
  parseBytesRedone: number;
  mergeBytesRedone: number;
  ingestionFoundCommitted: boolean;
}

let input = '';
let root = '';
const baseline: Record<'db' | 'output', string[]> = { db: [], output: [] };
const baselineMs: Record<'db' | 'output', number> = { db: 0, output: 0 };

beforeAll(async () => {
  root = tempDir('resume-crash-');
  input = path.join(root, 'input.csv');
  writeInput(input);
  const db = path.join(root, 'baseline-db');
  const out = path.join(root, 'baseline-out');
  // The first run of each also warms the compile cache (test/support/swc-register.js); the
  // second, timed, is what the random kills are placed against.
  for (const [target, label] of [
    [(n: string) => ({ db: `${db}${n}` }), 'db'],
    [(n: string) => ({ outputDir: `${out}${n}` }), 'output'],
  ] as const) {
    for (const name of ['-warm', '']) {
      const t0 = Date.now();
      const r = await runCli(importArgs(input, target(name)), {});
      baselineMs[label] = Date.now() - t0;
      expect({ label, code: r.code, stderr: r.stderr }).toEqual({ label, code: 0, stderr: '' });
    }
  }
  baseline.db = await dbContents(db);
  baseline.output = outputContents(out);
  expect(baseline.db.length).toBe(ROWS);
  expect(baseline.output).toEqual(baseline.db);
});

test(`${ROUNDS.length} SIGKILLs in every phase, each resumed to the uninterrupted result within the redo bound`, async () => {
  expect(ROUNDS.length).toBeGreaterThanOrEqual(30);
  const landed: Record<string, number> = {};
  let landedBeforeKill = 0;
  let maxParseRedone = 0;
  let maxMergeRedone = 0;
  for (const [i, round] of ROUNDS.entries()) {
    const dir = path.join(root, `round-${i}`);
    const target = round.target === 'db' ? { db: dir } : { outputDir: dir };
    const mergeThreads = round.mergeThreads ?? 1;
    const args = importArgs(input, target, mergeThreads);
    const env: Record<string, string> = round.crashAt !== undefined ? { SST_INGEST_CRASH_AT: round.crashAt } : {};
    const killAfterMs = round.killAtFraction !== undefined ? Math.round(round.killAtFraction * baselineMs[round.target]) : undefined;
    const killed = await runCli(args, env, killAfterMs);
    const label = `round ${i} (${round.crashAt ?? `${killAfterMs} ms`}, ${round.target}, ${mergeThreads} merge threads)`;
    if (round.crashAt !== undefined) expect({ label, signal: killed.signal }).toEqual({ label, signal: 'SIGKILL' });
    const state = jobStateIn(dir);
    if (round.killAtFraction !== undefined && state === null && (await holdsWholeResult(dir, round.target))) {
      // The kill came after the import landed (its job already removed, only the exit left), or
      // the run ended first: nothing to resume, and a rerun would be a second import.
      landedBeforeKill++;
      fs.rmSync(dir, { recursive: true, force: true });
      continue;
    }
    if (killed.signal === 'SIGKILL') landed[round.lands] = (landed[round.lands] ?? 0) + 1;

    // What the checkpoint says a resume must redo: the ranges in flight, within the bound (per
    // parse thread, the range it parses and one whose runs are still being fsynced; with three
    // ranges on two threads a kill can find three in flight: the first finished, not yet recorded).
    const inFlight = state?.parse.inFlight ?? [];
    expect({ label, inFlight: inFlight.length <= 2 * PARSE_THREADS }).toEqual({ label, inFlight: true });
    for (const r of inFlight) expect(r.stopAtOffset - r.startOffset).toBeLessThanOrEqual((state?.parse.taskBytes ?? 0) + RANGE_SLACK_BYTES);

    const resumed = await runCli(args, {});
    expect({ label, code: resumed.code, stderr: resumed.stderr }).toEqual({ label, code: 0, stderr: '' });
    const doc = JSON.parse(resumed.stdout) as { import?: { resume: ResumeSummary }; resume?: ResumeSummary };
    const resume = (doc.import?.resume ?? doc.resume) as ResumeSummary;
    if (state !== null) {
      expect({ label, resumed: resume.resumed }).toEqual({ label, resumed: true });
      expect(resume.parseBytesRedone).toBe(inFlight.reduce((a, r) => a + r.stopAtOffset - r.startOffset, 0));
    }
    // At most the file each merge thread was writing.
    expect({ label, redone: resume.mergeBytesRedone <= mergeThreads * (TARGET_FILE_SIZE_BYTES + SST_SLACK_BYTES) }).toEqual({
      label,
      redone: true,
    });
    if (round.lands === 'ingest') expect({ label, committed: resume.ingestionFoundCommitted }).toEqual({ label, committed: true });
    if (round.lands === 'check') expect({ label, committed: resume.ingestionFoundCommitted }).toEqual({ label, committed: false });
    maxParseRedone = Math.max(maxParseRedone, resume.parseBytesRedone);
    maxMergeRedone = Math.max(maxMergeRedone, resume.mergeBytesRedone);

    const contents = round.target === 'db' ? await dbContents(dir) : outputContents(dir);
    expect({
      label,
      same: contents.length === baseline[round.target].length && contents.every((e, k) => e === baseline[round.target][k]),
    }).toEqual({
      label,
      same: true,
    });
    expect(jobStateIn(dir)).toBeNull();
    // A job whose removal a kill interrupted is swept by the next run.
    expect({ label, removing: fs.readdirSync(dir).filter((n) => n.startsWith('.import-removed-')) }).toEqual({ label, removing: [] });
    fs.rmSync(dir, { recursive: true, force: true });
  }
  for (const phase of ['parse', 'spill', 'merge', 'check', 'ingest'])
    expect({ phase, landed: (landed[phase] ?? 0) > 0 }).toEqual({ phase, landed: true });
  // Most kills from outside must land inside the run, or the random rounds test little.
  expect({ randomKillsInside: (landed.random ?? 0) >= 4 }).toEqual({ randomKillsInside: true });
  console.log(
    `resume crash rounds: ${JSON.stringify({ rounds: ROUNDS.length, killed: landed, landedBeforeKill, maxParseRedone, maxMergeRedone, baselineMs })}`,
  );
});
