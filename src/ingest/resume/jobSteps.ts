/**
 * The import's steps as a resumable job sees them: what each phase records in the job's
 * checkpoint (importJob.ts) and how the next attempt takes it up again. The job's journal
 * (importJournal.ts) calls these for the importer; without a job nothing here runs.
 *
 * What is checkpointed, and what a kill costs (the bound the crash-resume test measures):
 * - parse, on workers: each byte range once its runs are written. They are not fsynced where
 *   the kernel has a boot id (ImportJob.runsNeedFsync): a resume in the same boot finds them in
 *   the page cache, and one after a reboot or crash starts the job over. Without a boot id they
 *   are fsynced first. A kill redoes the ranges in flight: at most two ranges (about two sorted
 *   runs' worth of input) per parse thread, the one it parses and one finished and not yet
 *   recorded (parseInWorkers holds a thread back while a whole round of those is outstanding).
 *   In-process (stdin is never resumable; small inputs, .gz, csv-parse dialects): the whole
 *   parse, once it is over, so a kill during it redoes it.
 * - fan-in merges of too many runs: each merged run, before its inputs are deleted.
 * - merge (one thread): each SST once it and its origins file are fsynced, with the counts up
 *   to its last key; the next attempt merges from the key after it. A kill redoes at most the
 *   file being written: one SST's worth.
 * - merge (parallel, one key range per merge thread): the ranges, before any worker starts;
 *   then each SST as its worker reports it, with its range's counts up to its last key. The
 *   next attempt merges the same ranges, each from the key after its last finished file. A
 *   kill redoes at most the file each worker was writing: one SST's worth per merge thread (a
 *   worker starts its next file only once the main thread has recorded the last one).
 * - small imports (under STEP_CHECKPOINTS_FROM_INPUT_BYTES of input, checkpointsSteps): none of
 *   the above; the parse and the merge run as without a job and only "merged" is recorded. A kill
 *   before it redoes the import whole, at most that much input.
 * - merged: every file; the publish renames are idempotent. Then (database imports) ingesting,
 *   whose commit is detected on resume by the ingested files' inodes (importIntoDb.ts).
 */
import * as fs from 'fs';
import * as path from 'path';
import { IngestError } from '../../util/errors';
import { syncDir, syncPath, syncPathAsync } from '../../engine/durableFs';
import { FIRST_ENTRY_OFFSET, RunInfo, WHOLE_RUN, startOffsetBelow } from '../sort/runFile';
import { DuplicatePair, MergeCheckpoint, MergeRange, MergeResult } from '../sort/mergeToSsts';
import { WrittenFile, tempPrefix } from '../sort/sstSetWriter';
import { KeyRangePlan } from '../sort/parallelMerge';
import { ParseResume } from '../parse/parallelParse';
import { ParseOutcome } from '../parse/parseTypes';
import { ImportJob, JobDuplicate, JobFile, JobMergePartition, finishedJobFiles } from './importJob';

/** What a resumed attempt took over and what it had to redo; null in the summary without a job. */
export interface ImportResumeSummary {
  jobId: string;
  /** This attempt continued an earlier one. */
  resumed: boolean;
  attempt: number;
  /** The phase the earlier attempt had reached (null on a first attempt). */
  resumedFromPhase: string | null;
  parseRangesReused: number;
  /** Input bytes of the ranges the earlier attempt had started and not finished (an upper bound of the parse redone). */
  parseBytesRedone: number;
  sstsReused: number;
  /** Bytes of SSTs the earlier attempt had started and not finished, deleted and written again. */
  mergeBytesRedone: number;
  /** (Database imports) the earlier attempt's ingestion had committed; nothing was ingested again. */
  ingestionFoundCommitted: boolean;
}

export function startResumeSummary(job: ImportJob): ImportResumeSummary {
  const s = job.state;
  return {
    jobId: s.jobId,
    resumed: job.resumed,
    attempt: s.attempts,
    resumedFromPhase: job.resumed ? s.phase : null,
    parseRangesReused: s.outcome !== null ? 0 : s.parse.done.length,
    parseBytesRedone: s.parse.inFlight.reduce((a, r) => a + (r.stopAtOffset - r.startOffset), 0),
    sstsReused: finishedJobFiles(s).length,
    mergeBytesRedone: 0,
    ingestionFoundCommitted: false,
  };
}

/**
 * Default input size from which a resumable import checkpoints its steps. Below it, redoing the
 * whole import after a kill (about 3 s of work for 256 MiB on two cores) costs less than every
 * attempt pays for the checkpoints: a state write per range and per SST, and where the runs
 * must be fsynced (no boot id), all of the input's rows written to disk once more (about 110 MB
 * at 1M rows, 0.1-0.3 s there, against runs that are otherwise deleted before the kernel ever
 * writes them back).
 */
export const STEP_CHECKPOINTS_FROM_INPUT_BYTES = 256 << 20;

/**
 * Whether a job checkpoints each parse range and SST: when its input reaches `fromInputBytes`
 * (default STEP_CHECKPOINTS_FROM_INPUT_BYTES), or when an earlier attempt recorded any step
 * (its ranges and files are taken up as they are, whatever this attempt's threshold).
 */
export function checkpointsSteps(job: ImportJob, inputBytes: number, fromInputBytes = STEP_CHECKPOINTS_FROM_INPUT_BYTES): boolean {
  if (!Number.isSafeInteger(fromInputBytes) || fromInputBytes < 0)
    throw new IngestError('INVALID_ARGUMENT', `stepCheckpointsFromInputBytes must be a non-negative integer, got ${fromInputBytes}`);
  const s = job.state;
  const recordedSteps = s.parse.done.length > 0 || s.outcome !== null || s.merge.files.length > 0 || s.merge.partitions !== undefined;
  return recordedSteps || inputBytes >= fromInputBytes;
}

/** The parse's hooks: finished ranges durable and recorded, started ones noted. */
export function parseResumeOf(job: ImportJob, keepsRunsAfter: (e: unknown) => boolean): ParseResume {
  const s = job.state;
  let recorded: Promise<void> = Promise.resolve();
  return {
    taskBytes: s.parse.taskBytes,
    done: new Map(s.parse.done.map((r) => [r.taskId, r])),
    onPlanned: (taskBytes) => {
      if (s.parse.taskBytes !== taskBytes) job.checkpoint((st) => void (st.parse.taskBytes = taskBytes));
    },
    onStarted: (t) =>
      job.checkpoint((st) => {
        st.parse.inFlight = st.parse.inFlight.filter((r) => r.taskId !== t.taskId);
        st.parse.inFlight.push({ taskId: t.taskId, file: t.file, startOffset: t.startOffset, stopAtOffset: t.stopAtOffset });
      }),
    // The range's runs are fsynced (when they must be) on the thread pool and then recorded,
    // behind the worker's back: it takes its next range at once (a synchronous fsync of ~100 MB
    // of runs here held the dispatch, and the worker, for a quarter of a second per range).
    onFinished: (r) => {
      recorded = recorded.then(async () => {
        if (job.runsNeedFsync) {
          await Promise.all(r.runs.map((run) => syncPathAsync(run.path)));
          if (r.runs.length > 0) syncDir(path.dirname(r.runs[0].path));
        }
        job.checkpoint((st) => {
          st.parse.inFlight = st.parse.inFlight.filter((x) => x.taskId !== r.taskId);
          st.parse.done = [...st.parse.done.filter((x) => x.taskId !== r.taskId), r];
          st.progress.parsedBytes = st.parse.done.reduce((a, x) => a + (x.endOffset - x.startOffset), 0);
          st.progress.rowsParsed = st.parse.done.reduce((a, x) => a + x.rows, 0);
        });
      });
      // Kept for settle(): a failure here fails the parse there, not as an unhandled rejection.
      recorded.catch(() => undefined);
      return recorded;
    },
    settle: () => recorded,
    keepsRunsAfter,
  };
}

/** The parse outcome as the job keeps it (the runs are kept apart, since fan-in merges change them). */
interface StoredOutcome extends Omit<ParseOutcome, 'runs'> {
  threads: number;
}

/** Makes `runs` and their directory durable before the state names them, where they must be (ImportJob.runsNeedFsync). */
function syncRunsIfNeeded(job: ImportJob, runs: readonly RunInfo[], dir: string): void {
  if (!job.runsNeedFsync) return;
  for (const run of runs) syncPath(run.path);
  syncDir(dir);
}

/** Records the parse as over: its runs durable, its outcome kept, the phase now merge. */
export function recordParseOutcome(job: ImportJob, outcome: ParseOutcome, threads: number): void {
  syncRunsIfNeeded(job, outcome.runs, job.state.runDir);
  const { runs, ...rest } = outcome;
  const stored: StoredOutcome = { ...rest, threads };
  job.checkpoint((st) => {
    st.phase = 'merge';
    st.outcome = stored;
    st.runs = runs;
    st.parse.inFlight = [];
    st.progress.parsedBytes = outcome.inputBytes;
    st.progress.rowsParsed = outcome.rowsRead;
  });
}

/** The outcome an earlier attempt's parse left, or null when its parse did not finish. */
export function storedOutcome(job: ImportJob): { outcome: ParseOutcome; threads: number } | null {
  const s = job.state;
  if (s.outcome === null || s.runs === null) return null;
  const { threads, ...rest } = s.outcome as StoredOutcome;
  return { outcome: { ...rest, runs: s.runs }, threads };
}

/** A fan-in merge replaced `merged` runs by `into`: durable first, then recorded, then the inputs go. */
export function recordFanInMerge(job: ImportJob, merged: readonly RunInfo[], into: RunInfo, remaining: readonly RunInfo[]): void {
  syncRunsIfNeeded(job, [into], path.dirname(into.path));
  job.checkpoint((st) => void (st.runs = [into, ...remaining]));
  for (const r of merged) fs.rmSync(r.path, { force: true });
}

export function jobFileOf(f: WrittenFile): JobFile {
  return {
    tempPath: f.tempPath,
    originsTempPath: f.originsTempPath,
    fileSizeBytes: f.fileSizeBytes,
    entries: f.entries,
    smallestKeyHex: Buffer.from(f.smallestUserKey).toString('hex'),
    largestKeyHex: Buffer.from(f.largestUserKey).toString('hex'),
  };
}

export function writtenFileOf(f: JobFile): WrittenFile {
  return {
    tempPath: f.tempPath,
    originsTempPath: f.originsTempPath,
    fileSizeBytes: f.fileSizeBytes,
    entries: f.entries,
    smallestUserKey: Buffer.from(f.smallestKeyHex, 'hex'),
    largestUserKey: Buffer.from(f.largestKeyHex, 'hex'),
  };
}

function jobDuplicateOf(d: DuplicatePair): JobDuplicate {
  return { keyHex: d.key.toString('hex'), first: d.first, duplicate: d.duplicate };
}

export function mergeCheckpointOf(job: ImportJob): MergeCheckpoint {
  return checkpointOfCounts(job.state.merge);
}

function checkpointOfCounts(m: { rowsWritten: number; duplicateCount: number; duplicates: JobDuplicate[] }): MergeCheckpoint {
  return {
    rowsWritten: m.rowsWritten,
    duplicateCount: m.duplicateCount,
    duplicates: m.duplicates.map((d) => ({ key: Buffer.from(d.keyHex, 'hex'), first: d.first, duplicate: d.duplicate })),
  };
}

/** Records one SST the merge finished (fsynced by its writer), with the counts up to its last key. */
export function recordSstFinished(job: ImportJob, outputDir: string, file: WrittenFile, upToHere: MergeCheckpoint): void {
  syncDir(outputDir);
  job.checkpoint((st) => {
    st.merge.files.push(jobFileOf(file));
    st.merge.rowsWritten = upToHere.rowsWritten;
    st.merge.duplicateCount = upToHere.duplicateCount;
    st.merge.duplicates = upToHere.duplicates.map(jobDuplicateOf);
    st.progress.rowsMerged = upToHere.rowsWritten + upToHere.duplicateCount;
  });
}

/**
 * A parallel merge's ranges, as the job holds them: those an earlier attempt recorded, or, on a
 * first attempt, `plans`, recorded before any worker starts. Each comes with where it resumes:
 * after its last finished file, with the counts up to it.
 */
export function parallelMergeOf(
  job: ImportJob,
  runs: readonly RunInfo[],
  plans: readonly KeyRangePlan[],
): { plans: KeyRangePlan[]; initial: MergeCheckpoint[]; finished: JobFile[][] } {
  let parts = job.state.merge.partitions;
  if (parts === undefined) {
    const fresh: JobMergePartition[] = plans.map((p) => ({
      lowHex: p.lowHex,
      highHex: p.highHex,
      files: [],
      rowsWritten: 0,
      duplicateCount: 0,
      duplicates: [],
    }));
    job.checkpoint((st) => {
      st.merge.partitions = fresh;
    });
    parts = fresh;
  }
  const resumed = parts.map((p) => {
    const low = keyAfter(p.files) ?? (p.lowHex === null ? null : Buffer.from(p.lowHex, 'hex'));
    return { lowHex: low === null ? null : low.toString('hex'), highHex: p.highHex, startOffsets: startOffsetsFrom(runs, low) };
  });
  return { plans: resumed, initial: parts.map(checkpointOfCounts), finished: parts.map((p) => [...p.files]) };
}

/** Records one SST a parallel merge's worker finished (fsynced by it) in range `partition`. */
export function recordPartitionSstFinished(
  job: ImportJob,
  outputDir: string,
  partition: number,
  file: WrittenFile,
  upToHere: MergeCheckpoint,
): void {
  syncDir(outputDir);
  job.checkpoint((st) => {
    const parts = st.merge.partitions as JobMergePartition[];
    const p = parts[partition];
    p.files.push(jobFileOf(file));
    p.rowsWritten = upToHere.rowsWritten;
    p.duplicateCount = upToHere.duplicateCount;
    p.duplicates = upToHere.duplicates.map(jobDuplicateOf);
    st.progress.rowsMerged = parts.reduce((a, x) => a + x.rowsWritten + x.duplicateCount, 0);
  });
}

/** Records the merge as over, with every file; the runs are not needed any more and go. */
export function recordMerged(job: ImportJob, outputDir: string, files: readonly WrittenFile[], merge: MergeResult): void {
  syncDir(outputDir);
  job.checkpoint((st) => {
    st.phase = 'merged';
    st.merge = {
      files: files.map(jobFileOf),
      rowsWritten: merge.rowsWritten,
      duplicateCount: merge.duplicateCount,
      duplicates: merge.duplicates.map(jobDuplicateOf),
    };
    st.progress.rowsMerged = merge.rowsMerged;
  });
  for (const r of job.state.runs ?? []) fs.rmSync(r.path, { force: true });
}

/**
 * Where the merge of a resumed job starts: after the last key of the files already finished
 * (null low bound when none are), each run's reader at its last sample below that key. Never
 * deletes runs as it reads them (a range is given), since a later resume may need them again.
 */
export function resumedMergeRange(runs: readonly RunInfo[], finished: readonly JobFile[]): MergeRange {
  const low = keyAfter(finished);
  // The only merge of these runs: it may punch what it reads, behind its checkpoints.
  return { low, high: null, startOffsets: startOffsetsFrom(runs, low), regions: runs.map(() => WHOLE_RUN) };
}

/** The successor of the last key the finished files hold (nothing sorts between k and k ‖ 0x00); null when there are none. */
function keyAfter(finished: readonly JobFile[]): Buffer | null {
  if (finished.length === 0) return null;
  return Buffer.concat([Buffer.from(finished[finished.length - 1].largestKeyHex, 'hex'), Buffer.of(0)]);
}

/** Where each run's reader starts for keys from `low` on (null: the start). */
function startOffsetsFrom(runs: readonly RunInfo[], low: Buffer | null): number[] {
  return runs.map((r) => (low === null ? FIRST_ENTRY_OFFSET : startOffsetBelow(r, low)));
}

/**
 * Deletes the temporary files an earlier attempt left in `dir` that the job does not list (the
 * SST it was writing when it was killed, and that file's origins); returns their bytes: the
 * merge work this attempt redoes.
 */
export function removeUnfinishedTempFiles(dir: string, job: ImportJob): number {
  const keep = new Set<string>();
  for (const f of finishedJobFiles(job.state)) {
    keep.add(path.basename(f.tempPath));
    if (f.originsTempPath !== null) keep.add(path.basename(f.originsTempPath));
  }
  const prefix = tempPrefix(job.state.token);
  let bytes = 0;
  for (const name of fs.readdirSync(dir)) {
    if (!name.startsWith(prefix) || keep.has(name)) continue;
    const p = path.join(dir, name);
    if (name.endsWith('.sst')) bytes += fs.statSync(p).size;
    fs.rmSync(p, { force: true });
  }
  return bytes;
}

/** Run files in the job's run directory that no checkpoint names (a killed range's or fan-in merge's): deleted. */
export function removeUnrecordedRuns(job: ImportJob): void {
  const s = job.state;
  const named = new Set<string>();
  for (const r of s.runs ?? s.parse.done.flatMap((d) => d.runs)) named.add(path.resolve(r.path));
  let names: string[];
  try {
    names = fs.readdirSync(s.runDir);
  } catch {
    fs.mkdirSync(s.runDir, { recursive: true });
    return;
  }
  for (const n of names) {
    const p = path.resolve(s.runDir, n);
    if (!named.has(p)) fs.rmSync(p, { recursive: true, force: true });
  }
}
