/**
 * Resumable imports, as a script sees them (issue 15): a pending job after a kill, the refusal
 * when the input or an option changed (naming what), --no-resume and `ingest pending --discard`
 * starting over, a running job left alone, --progress json's events (every line parsed), and
 * --disk-quota failing before anything is written.
 */
import * as fs from 'fs';
import * as path from 'path';
import { spawn } from 'child_process';
import { runCli } from '../../support/cli';
import { runCliChild } from '../../support/cliChild';
import { tempDir } from '../support';

jest.setTimeout(120_000);

const ROWS = 20_000;

/** A whole second: the mtime a same-size rewrite restores exactly. */
const INPUT_MTIME_SECONDS = 1_760_000_000;

function writeInput(file: string, rows = ROWS, seed = 11): void {
  const lines = ['id,name,amount'];
  for (let i = 0; i < rows; i++) {
    const id = (i * 7919 + seed) % 1_000_003;
    lines.push(`${id},name-${id % 977},${(id * 31) % 9973}.${id % 100} with some padding text`);
  }
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  fs.utimesSync(file, INPUT_MTIME_SECONDS, INPUT_MTIME_SECONDS);
}

function importArgs(input: string, db: string, extra: string[] = []): string[] {
  // Inputs far under --step-checkpoints-from's default would be checkpointed at their end only.
  const settings =
    '--header --key id:int64 --threads 2 --memory-limit 8MiB --target-file-size 64KiB --step-checkpoints-from 0 --json --quiet';
  return ['import', input, '--db', db, ...settings.split(' '), ...extra];
}

/** Leaves a pending job in `db`: the import SIGKILLed after its third SST. */
async function pendingJobIn(input: string, db: string): Promise<void> {
  const killed = await runCliChild(importArgs(input, db), { SST_INGEST_CRASH_AT: 'sst.finished:3' });
  expect(killed.signal).toBe('SIGKILL');
}

interface PendingDoc {
  pending: { jobId: string; phase: string; running: boolean; sstsDone: number; inputs: string[]; scratchBytes: number }[];
  discarded: string[];
}

async function pending(db: string, ...extra: string[]): Promise<PendingDoc> {
  const r = await runCli('pending', db, '--json', ...extra);
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as PendingDoc;
}

let root = '';
beforeAll(() => {
  root = tempDir('resume-');
});

test('a killed import is pending, listed with its phase, and the same command resumes it', async () => {
  const input = path.join(root, 'a.csv');
  writeInput(input);
  const db = path.join(root, 'db-a');
  await pendingJobIn(input, db);
  const listed = await pending(db);
  expect(listed.pending).toHaveLength(1);
  expect(listed.pending[0]).toMatchObject({ phase: 'merge', running: false, sstsDone: 2, inputs: [input] });
  expect(listed.pending[0].scratchBytes).toBeGreaterThan(0);
  const human = await runCli('pending', db);
  expect(human.stdout).toContain(`${listed.pending[0].jobId}  interrupted  phase merge`);

  const r = await runCli(...importArgs(input, db, ['--memory-limit', '16MiB']));
  expect(r.code).toBe(0);
  const doc = JSON.parse(r.stdout) as {
    import: { rowsWritten: number; resume: { resumed: boolean; sstsReused: number; attempt: number } };
  };
  // A changed --memory-limit does not change the output, so it does not stop the resume.
  expect(doc.import.resume).toMatchObject({ resumed: true, sstsReused: 2, attempt: 2 });
  expect(doc.import.rowsWritten).toBe(ROWS);
  expect((await pending(db)).pending).toEqual([]);
});

/** The state.json of the one job pending in `db`, to read or to edit as a reboot would leave it. */
function jobStateFile(db: string): string {
  const jobs = fs.readdirSync(db).filter((f) => f.startsWith('.import-job-'));
  expect(jobs).toHaveLength(1);
  return path.join(db, jobs[0], 'state.json');
}

interface ResumeDoc {
  import: { rowsWritten: number; resume: { resumed: boolean; sstsReused: number; attempt: number } };
}

test('runs are kept for a resume in the same boot without fsync; a job left by an earlier boot starts over, one from before boot ids resumes', async () => {
  const bootId = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  const input = path.join(root, 'boot.csv');
  writeInput(input, ROWS, 29);
  const resumeWith = async (db: string, edit: (state: Record<string, unknown>) => void): Promise<ResumeDoc> => {
    await pendingJobIn(input, db);
    const file = jobStateFile(db);
    const state = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    // The first attempt wrote its runs unsynced, in this boot.
    expect(state.runsBootId).toBe(bootId);
    edit(state);
    fs.writeFileSync(file, JSON.stringify(state));
    const r = await runCli(...importArgs(input, db));
    expect(r.code).toBe(0);
    const scan = await runCli('scan', '--db', db, '--json');
    expect(scan.stdout.trim().split('\n')).toHaveLength(ROWS);
    expect((await pending(db)).pending).toEqual([]);
    return JSON.parse(r.stdout) as ResumeDoc;
  };
  // Another boot's unsynced runs may be torn: the job is discarded and the import runs anew.
  const rebooted = await resumeWith(path.join(root, 'db-rebooted'), (st) => void (st.runsBootId = '00000000-0000-4000-8000-000000000000'));
  expect(rebooted.import.resume).toMatchObject({ resumed: false, sstsReused: 0, attempt: 1 });
  expect(rebooted.import.rowsWritten).toBe(ROWS);
  // A job an earlier version wrote has no boot id: its runs were fsynced, so it resumes.
  const older = await resumeWith(path.join(root, 'db-older'), (st) => void delete st.runsBootId);
  expect(older.import.resume).toMatchObject({ resumed: true, sstsReused: 2, attempt: 2 });
  expect(older.import.rowsWritten).toBe(ROWS);
});

test('an import under --step-checkpoints-from records no step: a kill leaves it pending at parse, and the resume redoes it whole', async () => {
  const input = path.join(root, 'small.csv');
  writeInput(input);
  const db = path.join(root, 'db-small');
  const withDefault = (args: string[]): string[] => {
    const i = args.indexOf('--step-checkpoints-from');
    return [...args.slice(0, i), ...args.slice(i + 2)];
  };
  const killed = await runCliChild(withDefault(importArgs(input, db)), { SST_INGEST_CRASH_AT: 'sst.finished:3' });
  expect(killed.signal).toBe('SIGKILL');
  // Killed after three SSTs were written: none of them, and no parse range, was recorded.
  const listed = await pending(db);
  expect(listed.pending).toHaveLength(1);
  expect(listed.pending[0]).toMatchObject({ phase: 'parse', running: false, sstsDone: 0, inputs: [input] });

  const r = await runCli(...withDefault(importArgs(input, db)));
  expect(r.code).toBe(0);
  const doc = JSON.parse(r.stdout) as {
    import: { rowsWritten: number; resume: { resumed: boolean; sstsReused: number; parseRangesReused: number; attempt: number } };
  };
  expect(doc.import.resume).toMatchObject({ resumed: true, sstsReused: 0, parseRangesReused: 0, attempt: 2 });
  expect(doc.import.rowsWritten).toBe(ROWS);
  // The first attempt's unrecorded SSTs went: the database holds each row once.
  const scan = await runCli('scan', '--db', db, '--json');
  expect(scan.code).toBe(0);
  expect(scan.stdout.trim().split('\n')).toHaveLength(ROWS);
  expect((await pending(db)).pending).toEqual([]);
  expect(fs.readdirSync(db).filter((f) => f.startsWith('.import-'))).toEqual([]);
});

test('SIGTERM (what a nightly scheduler sends on timeout) keeps the import: exit 130, pending, and resumed by the same command', async () => {
  const input = path.join(root, 'term.csv');
  writeInput(input, 200_000);
  const db = path.join(root, 'db-term');
  // Sent at the third SST, not after a delay: a fast machine finished 200k rows inside 1.5 s.
  const stopped = await runCliChild(importArgs(input, db), { SST_INGEST_CRASH_AT: 'sst.finished:3:SIGTERM' });
  expect(stopped.code).toBe(130);
  expect(stopped.stderr).toContain(
    `interrupted: the import is kept: run the same command again to resume it (ingest pending ${db} lists it)`,
  );
  expect((await pending(db)).pending).toHaveLength(1);
  const resumed = await runCli(...importArgs(input, db));
  expect(resumed.code).toBe(0);
  expect(JSON.parse(resumed.stdout).import.resume.resumed).toBe(true);
  expect((await pending(db)).pending).toEqual([]);
});

test.each([
  [
    'appended input',
    (input: string) => fs.appendFileSync(input, '9999999,late,1.0 row\n'),
    /input .*a?\.csv changed size: \d+ → \d+ bytes/,
  ],
  [
    'same-size rewrite with the mtime put back',
    (input: string) => {
      const bytes = fs.readFileSync(input);
      bytes[bytes.length - 5] = bytes[bytes.length - 5] === 0x61 ? 0x62 : 0x61;
      fs.writeFileSync(input, bytes);
      fs.utimesSync(input, INPUT_MTIME_SECONDS, INPUT_MTIME_SECONDS);
    },
    /input .*\.csv changed content \(its sampled bytes differ\)/,
  ],
])('a resume is refused after an %s, naming the change; --no-resume starts over', async (_what, change, message) => {
  const input = path.join(root, `b-${Math.random().toString(16).slice(2)}.csv`);
  writeInput(input);
  const db = path.join(root, `db-${path.basename(input, '.csv')}`);
  await pendingJobIn(input, db);
  change(input);
  const refused = await runCli(...importArgs(input, db));
  expect(refused.code).toBe(2);
  expect(refused.stderr).toMatch(message);
  expect(refused.stderr).toContain('--no-resume');
  expect((await pending(db)).pending).toHaveLength(1);

  const fresh = await runCli(...importArgs(input, db, ['--no-resume']));
  expect(fresh.code).toBe(0);
  const doc = JSON.parse(fresh.stdout) as { import: { rowsRead: number; resume: { resumed: boolean } } };
  expect(doc.import.resume.resumed).toBe(false);
  expect(doc.import.rowsRead).toBe(fs.readFileSync(input, 'utf8').trim().split('\n').length - 1);
  expect((await pending(db)).pending).toEqual([]);
});

test('a changed option is refused naming it; pending --discard removes the job and its scratch space', async () => {
  const input = path.join(root, 'c.csv');
  writeInput(input);
  const db = path.join(root, 'db-c');
  await pendingJobIn(input, db);
  const refused = await runCli(...importArgs(input, db, ['--on-duplicate', 'last']));
  expect(refused.code).toBe(2);
  expect(refused.stderr).toContain('option onDuplicate changed: "error" → "last"');
  const { jobId } = (await pending(db)).pending[0];
  const unknown = await runCli('pending', db, '--discard', 'nosuchjob');
  expect(unknown.code).toBe(2);
  expect(unknown.stderr).toContain('no pending import nosuchjob');
  const discarded = await pending(db, '--discard', jobId);
  expect(discarded).toEqual({ dir: db, pending: [], discarded: [jobId], totalScratchBytes: 0 });
  expect(fs.readdirSync(db).filter((n) => n.startsWith('.import-job-'))).toEqual([]);
  const again = await runCli(...importArgs(input, db, ['--on-duplicate', 'last']));
  expect(again.code).toBe(0);
});

test('a job a live process owns is neither resumed nor discarded', async () => {
  const input = path.join(root, 'd.csv');
  writeInput(input);
  const db = path.join(root, 'db-d');
  await pendingJobIn(input, db);
  const { jobId } = (await pending(db)).pending[0];
  const owner = spawn('sleep', ['60']);
  try {
    fs.writeFileSync(path.join(db, `.import-job-${jobId}`, 'OWNER'), `${owner.pid} -\n`);
    expect((await pending(db)).pending[0].running).toBe(true);
    const busy = await runCli(...importArgs(input, db));
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain(`is running (pid ${owner.pid})`);
    const notDiscarded = await runCli('pending', db, '--discard', jobId);
    expect(notDiscarded.code).toBe(1);
    expect((await pending(db)).pending).toHaveLength(1);
  } finally {
    const exited = new Promise((resolve) => owner.once('exit', resolve));
    owner.kill('SIGKILL');
    await exited;
  }
  const resumed = await runCli(...importArgs(input, db));
  expect(resumed.code).toBe(0);
});

interface ProgressLine {
  event: string;
  [field: string]: unknown;
}

/** The events on stderr: with --progress json every line is one, a failed run's included (its message is its error event). */
function progressLines(stderr: string): ProgressLine[] {
  const lines = stderr.split('\n').filter((l) => l !== '');
  expect(lines.filter((l) => l.startsWith('error: '))).toEqual([]);
  return lines.map((l) => JSON.parse(l) as ProgressLine);
}

test('--progress json: every stderr line an event with its fields, at most one a second, then done or error', async () => {
  const input = path.join(root, 'e.csv');
  writeInput(input, 400_000);
  const db = path.join(root, 'db-e');
  const r = await runCli(...importArgs(input, db, ['--progress', 'json', '--target-file-size', '4MiB']));
  expect(r.code).toBe(0);
  const events = progressLines(r.stderr);
  const progress = events.filter((e) => e.event === 'progress');
  expect(progress.length).toBeGreaterThanOrEqual(2);
  for (const e of progress) {
    expect(Object.keys(e).sort()).toEqual(
      [
        'bytesDone',
        'bytesPerSecond',
        'bytesTotal',
        'elapsedSeconds',
        'etaSeconds',
        'event',
        'phase',
        'phaseSeconds',
        'rowsDone',
        'rowsPerSecond',
        'rowsTotal',
      ].sort(),
    );
    expect(['parse', 'merge', 'check', 'ingest']).toContain(e.phase);
    for (const f of ['elapsedSeconds', 'phaseSeconds', 'rowsDone', 'bytesDone']) expect(typeof e[f]).toBe('number');
    // Rates are over the last second or more: null in a phase's first second (test/ingest/progress.test.ts).
    for (const f of ['rowsPerSecond', 'bytesPerSecond']) expect(e[f] === null || typeof e[f] === 'number').toBe(true);
  }
  for (let i = 1; i < progress.length; i++)
    expect((progress[i].elapsedSeconds as number) - (progress[i - 1].elapsedSeconds as number)).toBeGreaterThanOrEqual(0.99);
  const last = events[events.length - 1];
  expect(last).toMatchObject({ event: 'done', exitCode: 0 });
  expect(last.summary).toEqual(JSON.parse(r.stdout));
  expect(events.filter((e) => e.event !== 'progress')).toHaveLength(1);

  // The same rows again with other values: conflicts, exit 3, and the done event says so.
  const other = path.join(root, 'e2.csv');
  writeInput(other, 1000, 11);
  fs.writeFileSync(other, fs.readFileSync(other, 'utf8').replace(/with some/g, 'changed'));
  const conflicted = await runCli(...importArgs(other, db, ['--progress', 'json']));
  expect(conflicted.code).toBe(3);
  expect(progressLines(conflicted.stderr).pop()).toMatchObject({ event: 'done', exitCode: 3 });

  const bad = path.join(root, 'bad.csv');
  fs.writeFileSync(bad, 'id,name,amount\n1,a,1\nnot-a-number,b,2\n');
  const failed = await runCli(...importArgs(bad, path.join(root, 'db-bad'), ['--progress', 'json']));
  expect(failed.code).toBe(2);
  expect(progressLines(failed.stderr).pop()).toMatchObject({ event: 'error', exitCode: 2, code: 'BAD_INPUT' });
});

test('--disk-quota below the estimate fails before anything is written (exit 1, NO_SPACE)', async () => {
  const input = path.join(root, 'f.csv');
  writeInput(input);
  const db = path.join(root, 'db-f');
  const r = await runCli(...importArgs(input, db, ['--disk-quota', '1MiB']));
  expect(r.code).toBe(1);
  expect(r.stderr).toMatch(/the import needs about [0-9.]+ MiB of scratch space .* and --disk-quota is 1\.0 MiB; nothing was written/);
  expect(fs.existsSync(db)).toBe(false);
  const out = path.join(root, 'out-f');
  const r2 = await runCli('import', input, '--header', '--key', 'id:int64', '--output-dir', out, '--disk-quota', '1MiB', '--quiet');
  expect(r2.code).toBe(1);
  expect(fs.existsSync(out) ? fs.readdirSync(out) : []).toEqual([]);
  const fits = await runCli(...importArgs(input, db, ['--disk-quota', '64MiB']));
  expect(fits.code).toBe(0);
});

/** Makes the pending jobs in `db` (those of `input` when given) look idle since `days` days ago (their last checkpoint). */
function ageJobs(db: string, days: number, input?: string): void {
  for (const name of fs.readdirSync(db).filter((n) => n.startsWith('.import-job-'))) {
    const file = path.join(db, name, 'state.json');
    const state = JSON.parse(fs.readFileSync(file, 'utf8')) as { updatedAt: string; inputs: { path: string }[] };
    if (input !== undefined && !state.inputs.some((i) => i.path === path.resolve(input))) continue;
    state.updatedAt = new Date(Date.now() - days * 86400_000).toISOString();
    fs.writeFileSync(file, JSON.stringify(state));
  }
}

test("a night's import lists the other pending jobs and discards those idle past --pending-max-age", async () => {
  const db = path.join(root, 'db-expiry');
  const monday = path.join(root, 'orders-monday.csv');
  writeInput(monday, 20_000, 3);
  await pendingJobIn(monday, db);
  const tuesday = path.join(root, 'orders-tuesday.csv');
  writeInput(tuesday, 20_000, 5);
  await pendingJobIn(tuesday, db);
  expect((await pending(db)).pending).toHaveLength(2);
  ageJobs(db, 5, monday);
  // Wednesday's import: Monday's job (5 days idle) goes, Tuesday's (minutes) stays and is listed.
  const wednesday = path.join(root, 'orders-wednesday.csv');
  writeInput(wednesday, 1_000, 7);
  const r = await runCli(...importArgs(wednesday, db));
  expect(r.code).toBe(0);
  const report = (JSON.parse(r.stdout) as { pendingJobs: { discarded: { inputs: string[] }[]; pending: { inputs: string[] }[] } })
    .pendingJobs;
  expect(report.discarded.map((j) => j.inputs)).toEqual([[monday]]);
  expect(report.pending.map((j) => j.inputs)).toEqual([[tuesday]]);
  const left = await pending(db);
  expect(left.pending.map((j) => j.inputs)).toEqual([[tuesday]]);
  // never keeps even an old one; the human form says what it discarded.
  ageJobs(db, 30);
  const kept = await runCli(...importArgs(wednesday, db, ['--pending-max-age', 'never']));
  expect(JSON.parse(kept.stdout).pendingJobs.discarded).toEqual([]);
  const human = await runCli(...importArgs(wednesday, db).filter((a) => a !== '--json' && a !== '--quiet'), '--pending-max-age', '7d');
  expect(human.code).toBe(0);
  expect(human.stdout).toMatch(
    /discarded pending import [0-9a-f]+ \(inputs .*orders-tuesday\.csv, idle 30\.0 d, [0-9.]+ MiB\): idle longer than --pending-max-age/,
  );
  expect((await pending(db)).pending).toEqual([]);
  expect((await runCli(...importArgs(wednesday, db, ['--pending-max-age', '3 days']))).stderr).toContain(
    '--pending-max-age must be a duration',
  );
});
