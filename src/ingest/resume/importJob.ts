/**
 * A resumable import job: the checkpoints that let an interrupted `ingest import` go on where
 * it stopped instead of starting over (docs/import.md, "Resuming an interrupted import").
 *
 * On disk: a job directory `<target>/.import-job-<id>/` inside the import's target (the
 * database, or the --output-dir), holding
 *   state.json   the checkpoint (JobState below), replaced atomically (temp file, fsync,
 *                rename, directory fsync) after every durable step;
 *   OWNER        "<pid> <start time>\n" of the process running the job, while it runs;
 *   runs/        the sorted runs, unless --tmp-dir put them in <tmp>/ingest-job-<id>/;
 *   *.sst        (database imports) the SSTs and their .origins files, under the import's
 *                temporary names until the merge ends, then 000001.sst...
 * A job being removed is first renamed `<target>/.import-removed-<id>-<random>/` (one atomic
 * step: a kill mid-removal leaves the whole job or none of it); the next open sweeps those.
 * The id is a hash of the target kind and the resolved input paths: rerunning the same command
 * finds the job. What the job must find unchanged to resume (the inputs' fingerprints, the
 * options that shape the output, the target's identity) is in state.json and compared first.
 *
 * Contract:
 * - `ImportJob.open` creates the job, or finds it and checks that it may be resumed: a changed
 *   input, option or target is an IngestError('USAGE') naming what changed; a job another live
 *   process runs is IngestError('BUSY'). `fresh` (--no-resume) discards a found job first, and
 *   so does a job whose unsynced runs were written in an earlier boot (lostItsRuns).
 * - `checkpoint(change)` applies a change to the state and makes it durable before returning.
 *   Every file the state names must be durable before it is named (callers fsync first), with
 *   one exception: the sorted runs, which need it only when `runsNeedFsync` says so; otherwise
 *   the state's boot id stands for them (bootId.ts).
 * - `finish()` removes the job (the import landed, or failed in a way a resume cannot mend);
 *   `release()` keeps it for a resume and gives up ownership.
 * Engine.open leaves job directories alone (their name is not a scratch directory's), so a
 * pending job survives any number of opens until it finishes or `discardJob` removes it.
 */
import * as fs from 'fs';
import * as path from 'path';
import { createHash, randomBytes } from 'crypto';
import { IngestError } from '../../util/errors';
import { crashPoint } from '../../util/crashPoints';
import { replaceFileDurably, syncDir } from '../../engine/durableFs';
import { ownStartTime, processIsAlive } from '../../engine/lockFile';
import { currentBootId } from './bootId';
import { RunInfo } from '../sort/runFile';
import { ParseTaskResult } from '../parse/parseTypes';
import { InputFingerprint, OptionsFingerprint, describeInputChange, describeOptionChange } from './fingerprint';

export const JOB_DIR_PREFIX = '.import-job-';
/** A job directory being removed (renamed so, atomically, before its contents go). */
const REMOVED_DIR_PREFIX = '.import-removed-';
const STATE_FILE = 'state.json';
const OWNER_FILE = 'OWNER';
const STATE_FORMAT = 1;
/** state.json larger than this is not ours (it holds at most a few thousand ranges and files). */
const MAX_STATE_BYTES = 64 << 20;

/** Where the job is: parse (runs being spilled), merge (SSTs being written), merged, ingesting. */
export type JobPhase = 'parse' | 'merge' | 'merged' | 'ingesting';

/** A finished SST of the merge (WrittenFile with its keys in hex: plain JSON). */
export interface JobFile {
  tempPath: string;
  originsTempPath: string | null;
  fileSizeBytes: number;
  entries: number;
  smallestKeyHex: string;
  largestKeyHex: string;
}

/**
 * One key range [low, high) of a parallel merge: its bounds, fixed by the attempt that started
 * the merge (a resume merges the same ranges whatever --merge-threads says now), the files
 * finished in it, and the counts up to the last of them.
 */
export interface JobMergePartition {
  lowHex: string | null;
  highHex: string | null;
  files: JobFile[];
  rowsWritten: number;
  duplicateCount: number;
  duplicates: JobDuplicate[];
}

export interface JobDuplicate {
  keyHex: string;
  first: { source: number; line: number };
  duplicate: { source: number; line: number };
}

export interface JobState {
  format: number;
  jobId: string;
  target: { kind: 'db' | 'output'; dir: string; identity: string };
  inputs: InputFingerprint[];
  options: OptionsFingerprint;
  /** The import's temporary-file token (SST names), the same in every attempt. */
  token: string;
  runDir: string;
  startedAt: string;
  updatedAt: string;
  /** Attempts so far, this one included. */
  attempts: number;
  /**
   * The boot (bootId.ts) in which the runs were written, unsynced; null (and absent, in a job
   * an earlier version wrote): the runs were fsynced before the state named them.
   */
  runsBootId?: string | null;
  phase: JobPhase;
  parse: {
    /** The parse's byte-range size, fixed by the first attempt (null: parsed in-process). */
    taskBytes: number | null;
    /** Finished byte ranges, their runs durable. */
    done: ParseTaskResult[];
    /** Ranges started and not finished when this state was written: [start, stop) offsets. */
    inFlight: { taskId: number; file: string; startOffset: number; stopAtOffset: number }[];
  };
  /** The parse's outcome (once the parse is over), minus the runs (see `runs`). */
  outcome: object | null;
  /** The runs the merge reads (after any fan-in merges); null until the parse is over. */
  runs: RunInfo[] | null;
  /**
   * The one-thread merge's finished files and counts; a parallel merge's are in `partitions`
   * (absent for the one-thread merge) until it is over, when `files` holds every file.
   */
  merge: { files: JobFile[]; rowsWritten: number; duplicateCount: number; duplicates: JobDuplicate[]; partitions?: JobMergePartition[] };
  progress: { inputBytes: number; parsedBytes: number; rowsParsed: number; rowsMerged: number };
}

export interface OpenJobRequest {
  kind: 'db' | 'output';
  /** The database or the output directory (must exist). */
  targetDir: string;
  inputs: InputFingerprint[];
  options: OptionsFingerprint;
  /** --tmp-dir: the runs go under it instead of inside the job directory. */
  tmpDir?: string;
  /** Discard a job found for these inputs and start over (--no-resume). */
  fresh?: boolean;
}

/** A pending job as `ingest pending` lists it. */
export interface PendingJob {
  jobId: string;
  dir: string;
  phase: JobPhase;
  running: boolean;
  inputs: string[];
  startedAt: string;
  updatedAt: string;
  attempts: number;
  progress: JobState['progress'];
  parseRangesDone: number;
  sstsDone: number;
  scratchBytes: number;
}

/** Every SST the merge has finished so far, over all partitions of a parallel merge. */
export function finishedJobFiles(state: JobState): JobFile[] {
  return [...state.merge.files, ...(state.merge.partitions ?? []).flatMap((p) => p.files)];
}

export function jobIdOf(kind: 'db' | 'output', inputPaths: readonly string[]): string {
  const text = JSON.stringify([kind, ...inputPaths.map((p) => path.resolve(p))]);
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/**
 * The identity a resume must find again: the directory's inode, and a database's IDENTITY when
 * it has one ("inode:<dev>:<ino>[ identity:<id>]"). A database this import is creating has no
 * IDENTITY yet when the job starts, so a missing one on the job's side matches any.
 */
export function targetIdentity(dir: string): string {
  const st = fs.statSync(dir);
  let id = '';
  try {
    id = ` identity:${fs.readFileSync(path.join(dir, 'IDENTITY'), 'utf8').trim()}`;
  } catch {
    // No database yet, or one without an IDENTITY file.
  }
  return `inode:${st.dev}:${st.ino}${id}`;
}

function sameTarget(recorded: string, now: string): boolean {
  const [recordedInode, recordedId] = recorded.split(' ');
  const [nowInode, nowId] = now.split(' ');
  return recordedInode === nowInode && (recordedId === undefined || recordedId === nowId);
}

export class ImportJob {
  /** True when this attempt continues an earlier one. */
  readonly resumed: boolean;
  private owned = true;
  /** The side files already written (by object identity: each is written once, never changed). */
  private readonly writtenSides = new WeakSet<object>();

  private constructor(
    readonly dir: string,
    private stateValue: JobState,
    resumed: boolean,
  ) {
    this.resumed = resumed;
  }

  get state(): Readonly<JobState> {
    return this.stateValue;
  }

  static open(req: OpenJobRequest): ImportJob {
    const jobId = jobIdOf(
      req.kind,
      req.inputs.map((i) => i.path),
    );
    const dir = path.join(req.targetDir, `${JOB_DIR_PREFIX}${jobId}`);
    sweepRemovedJobs(req.targetDir);
    if (fs.existsSync(dir)) {
      const found = readState(dir);
      if (req.fresh === true || found === null || lostItsRuns(found)) removeJobDir(dir, found);
      else {
        refuseChanged(dir, found, req);
        claimOwner(dir);
        const state: JobState = { ...found, attempts: found.attempts + 1, updatedAt: new Date().toISOString() };
        const job = new ImportJob(dir, state, true);
        job.writeState();
        return job;
      }
    }
    return ImportJob.create(dir, jobId, req);
  }

  private static create(dir: string, jobId: string, req: OpenJobRequest): ImportJob {
    fs.mkdirSync(dir);
    claimOwner(dir);
    const runDir = req.tmpDir !== undefined ? path.join(path.resolve(req.tmpDir), `ingest-job-${jobId}`) : path.resolve(dir, 'runs');
    fs.rmSync(runDir, { recursive: true, force: true });
    fs.mkdirSync(runDir, { recursive: true });
    const now = new Date().toISOString();
    const state: JobState = {
      format: STATE_FORMAT,
      jobId,
      target: { kind: req.kind, dir: path.resolve(req.targetDir), identity: targetIdentity(req.targetDir) },
      inputs: req.inputs,
      options: req.options,
      token: `job-${jobId}-${randomBytes(3).toString('hex')}`,
      runDir,
      startedAt: now,
      updatedAt: now,
      attempts: 1,
      // SST_INGEST_FSYNC_RUNS=1: the runs fsynced as where there is no boot id (a comparison switch).
      runsBootId: process.env.SST_INGEST_FSYNC_RUNS === '1' ? null : currentBootId(),
      phase: 'parse',
      parse: { taskBytes: null, done: [], inFlight: [] },
      outcome: null,
      runs: null,
      merge: { files: [], rowsWritten: 0, duplicateCount: 0, duplicates: [] },
      progress: { inputBytes: req.inputs.reduce((a, i) => a + i.sizeBytes, 0), parsedBytes: 0, rowsParsed: 0, rowsMerged: 0 },
    };
    const job = new ImportJob(dir, state, false);
    job.writeState();
    syncDir(req.targetDir);
    return job;
  }

  /**
   * Whether a run must be fsynced before the state names it: only where there is no boot id.
   * With one, a resume in the same boot finds the runs in the page cache whatever killed the
   * process, and one in another boot starts over (lostItsRuns), so the runs never need to
   * reach the disk: at 10M rows that is 1.1 GB of writes a merge deletes within seconds.
   */
  get runsNeedFsync(): boolean {
    return (this.stateValue.runsBootId ?? null) === null;
  }

  /** Applies `change` to the state and writes it durably before returning. */
  checkpoint(change: (state: JobState) => void): void {
    if (!this.owned) throw new Error('checkpoint of a job this process no longer owns');
    change(this.stateValue);
    this.stateValue.updatedAt = new Date().toISOString();
    this.writeState();
    crashPoint('job.checkpoint');
  }

  /** The job is over: removes its directory and its runs. */
  finish(): void {
    removeJobDir(this.dir, this.stateValue);
    this.owned = false;
  }

  /** Keeps the job for a resume and gives up ownership (the OWNER file goes). */
  release(): void {
    if (!this.owned) return;
    fs.rmSync(path.join(this.dir, OWNER_FILE), { force: true });
    this.owned = false;
  }

  /**
   * Writes the state: its bulky parts that never change once made (each finished range, the
   * parse's outcome, the runs: a run's samples make them hundreds of KB at 10M rows) into side
   * files of their own, once each, durably, before state.json names them; state.json itself
   * stays a few KB, so a checkpoint per SST costs two small fsyncs, not a rewrite of everything.
   */
  private writeState(): void {
    const s = this.stateValue;
    for (const r of s.parse.done) if (!this.writtenSides.has(r)) this.writeSide(path.join(RANGES_DIR, `${r.taskId}.json`), r);
    if (s.outcome !== null && !this.writtenSides.has(s.outcome)) this.writeSide(OUTCOME_FILE, s.outcome);
    if (s.runs !== null && !this.writtenSides.has(s.runs)) this.writeSide(RUNS_FILE, s.runs);
    const slim: StoredState = {
      ...s,
      parse: { ...s.parse, done: [], doneIds: s.parse.done.map((r) => r.taskId) },
      outcome: s.outcome === null ? null : SIDE,
      runs: s.runs === null ? null : SIDE,
    };
    const text = Buffer.from(`${JSON.stringify(slim)}\n`);
    replaceFileDurably(path.join(this.dir, STATE_FILE), path.join(this.dir, `${STATE_FILE}.tmp`), text, this.dir);
  }

  private writeSide(name: string, value: object): void {
    const file = path.join(this.dir, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    replaceFileDurably(file, `${file}.tmp`, Buffer.from(JSON.stringify(value)), path.dirname(file));
    this.writtenSides.add(value);
  }
}

/** Names of the side files (see writeState), and the marker state.json has in their place. */
const RANGES_DIR = 'ranges';
const OUTCOME_FILE = 'outcome.json';
const RUNS_FILE = 'runs.json';
const SIDE = 'side-file';

/** state.json as written: the bulky parts replaced by SIDE or by the ids of their side files. */
type StoredState = Omit<JobState, 'outcome' | 'runs' | 'parse'> & {
  outcome: object | typeof SIDE | null;
  runs: RunInfo[] | typeof SIDE | null;
  parse: JobState['parse'] & { doneIds: number[] };
};

function readState(dir: string): JobState | null {
  try {
    const file = path.join(dir, STATE_FILE);
    if (fs.statSync(file).size > MAX_STATE_BYTES) return null;
    const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as StoredState;
    if (stored.format !== STATE_FORMAT) return null;
    const side = <T>(name: string): T => JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8')) as T;
    const { doneIds, ...parse } = stored.parse;
    return {
      ...stored,
      parse: { ...parse, done: doneIds.map((id) => side<ParseTaskResult>(path.join(RANGES_DIR, `${id}.json`))) },
      outcome: stored.outcome === SIDE ? side<object>(OUTCOME_FILE) : null,
      runs: stored.runs === SIDE ? side<RunInfo[]>(RUNS_FILE) : null,
    };
  } catch {
    // No state yet (killed while creating the job), or not ours: nothing to resume.
    return null;
  }
}

/**
 * A job that still needs its runs (parse or merge), written unsynced in a boot that has ended:
 * the kernel that held them in its page cache is gone, so they may be missing or torn. Such a
 * job is discarded and the import starts over, as with --no-resume.
 */
function lostItsRuns(found: JobState): boolean {
  const bootId = found.runsBootId ?? null;
  const needsRuns = found.phase === 'parse' || found.phase === 'merge';
  return needsRuns && bootId !== null && bootId !== currentBootId();
}

function refuseChanged(dir: string, found: JobState, req: OpenJobRequest): void {
  const change =
    describeInputChange(found.inputs, req.inputs) ??
    describeOptionChange(found.options, req.options) ??
    (!sameTarget(found.target.identity, targetIdentity(req.targetDir))
      ? `the ${req.kind === 'db' ? 'database' : 'directory'} at ${req.targetDir} is not the one the import started on`
      : null);
  if (change === null) return;
  throw new IngestError(
    'USAGE',
    `cannot resume the interrupted import in ${dir}: ${change}. ` +
      `Rerun with --no-resume to start over, or discard it with: ingest pending ${found.target.dir} --discard ${found.jobId}`,
  );
}

/** Makes this process the job's owner; a job a live process runs is refused. */
function claimOwner(dir: string): void {
  const owner = path.join(dir, OWNER_FILE);
  const holder = readOwner(owner);
  if (holder !== null && holder.pid !== process.pid && processIsAlive(holder.pid, holder.startTime)) {
    throw new IngestError('BUSY', `the import in ${dir} is running (pid ${holder.pid}); wait for it, or stop it first`);
  }
  fs.writeFileSync(owner, `${process.pid} ${ownStartTime}\n`);
}

function readOwner(file: string): { pid: number; startTime: string } | null {
  try {
    const m = /^(\d+) (\S+)\n$/.exec(fs.readFileSync(file, 'latin1'));
    return m === null ? null : { pid: Number(m[1]), startTime: m[2] };
  } catch {
    return null;
  }
}

/** Whether the job's runs are inside its directory (else under --tmp-dir), whatever form the paths were given in. */
function runsInside(state: JobState, dir: string): boolean {
  return !path.relative(path.resolve(dir), path.resolve(state.runDir)).startsWith('..');
}

/**
 * Removes a job in one atomic step: the directory is renamed out of the job namespace first, so
 * a kill during the (long, many-file) removal leaves either the whole job or no job, never a
 * job directory whose state.json or side files are half gone (which a rerun would take for "no
 * job" while the import's files are already published). The renamed directory is swept by the
 * next `ImportJob.open` in the same target.
 */
function removeJobDir(dir: string, state: JobState | null): void {
  const removed = path.join(
    path.dirname(dir),
    `${REMOVED_DIR_PREFIX}${path.basename(dir).slice(JOB_DIR_PREFIX.length)}-${randomBytes(3).toString('hex')}`,
  );
  fs.renameSync(dir, removed);
  syncDir(path.dirname(dir));
  if (state !== null && !runsInside(state, dir)) fs.rmSync(state.runDir, { recursive: true, force: true });
  fs.rmSync(removed, { recursive: true, force: true });
}

/** Removes what removals killed midway left in `targetDir` (see removeJobDir). */
function sweepRemovedJobs(targetDir: string): void {
  for (const name of fs.readdirSync(targetDir).filter((n) => n.startsWith(REMOVED_DIR_PREFIX))) {
    try {
      fs.rmSync(path.join(targetDir, name), { recursive: true, force: true });
    } catch {
      // Another process is sweeping the same directory: whichever finishes, it goes.
    }
  }
}

/** The pending jobs in `targetDir` (a database or an output directory), oldest first. */
export function listPendingJobs(targetDir: string): PendingJob[] {
  let names: string[];
  try {
    names = fs.readdirSync(targetDir).filter((n) => n.startsWith(JOB_DIR_PREFIX));
  } catch (e) {
    throw new IngestError('USAGE', `cannot read ${targetDir}: ${(e as Error).message}`, { cause: e });
  }
  const jobs: PendingJob[] = [];
  for (const name of names) {
    const dir = path.join(targetDir, name);
    const state = readState(dir);
    if (state === null) continue;
    const owner = readOwner(path.join(dir, OWNER_FILE));
    jobs.push({
      jobId: state.jobId,
      dir,
      phase: state.phase,
      running: owner !== null && processIsAlive(owner.pid, owner.startTime),
      inputs: state.inputs.map((i) => i.name),
      startedAt: state.startedAt,
      updatedAt: state.updatedAt,
      attempts: state.attempts,
      progress: state.progress,
      parseRangesDone: state.parse.done.length,
      sstsDone: finishedJobFiles(state).length,
      scratchBytes: treeBytes(dir) + (runsInside(state, dir) ? 0 : treeBytes(state.runDir)),
    });
  }
  return jobs.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
}

/** Removes a pending job (`ingest pending DIR --discard ID`); a running one is refused. */
export function discardJob(targetDir: string, jobId: string): PendingJob {
  const job = listPendingJobs(targetDir).find((j) => j.jobId === jobId);
  if (job === undefined)
    throw new IngestError('USAGE', `no pending import ${jobId} in ${targetDir} (ingest pending ${targetDir} lists them)`);
  if (job.running) throw new IngestError('BUSY', `the import ${jobId} in ${targetDir} is running; stop it first`);
  removeJobDir(job.dir, readState(job.dir));
  return job;
}

function treeBytes(dir: string): number {
  let total = 0;
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) total += treeBytes(p);
    else if (e.isFile()) total += fs.statSync(p).size;
  }
  return total;
}
