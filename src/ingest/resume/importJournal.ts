/**
 * The import's journal: resume as a record around the phases (src/ingest/phases.ts), not inside
 * them. The driver (src/ingest/importer.ts) asks the journal what an earlier attempt already did
 * and skips it, and hands it each task's result once that result is durable. The phases
 * themselves never see a job.
 *
 * Two journals:
 * - `noJournal`: nothing is recorded and nothing found (an import that is not resumable); the
 *   merge's per-file hook only charges the scratch quota, when there is one.
 * - `jobJournal(job, steps)`: a resumable job's checkpoint (importJob.ts), through the recording
 *   functions of jobSteps.ts. With `steps` (checkpointsSteps) every parse range, fan-in merge and
 *   SST is recorded as it is done; without, only the end of the merge ("merged"), and a kill
 *   before that redoes the import whole (jobSteps.ts states the bounds).
 *
 * Contract: a `recorded*` query answers from the checkpoint alone; a `record*` call returns once
 * the record is durable; the hooks a journal gives a phase (ParseResume, MergeResumeHooks,
 * RangeReporting) record as the phase goes. A journal never deletes what its checkpoint names.
 */
import { ScratchQuota } from '../diskSpace';
import { normalizeDialect } from '../csv/csvDialect';
import { DEFAULT_TARGET_FILE_SIZE_BYTES, ImportOptions } from '../importTypes';
import { DEFAULT_VALUE_FORMAT } from '../rows/valueEncoding';
import { InputNamer } from '../parse/parseTypes';
import { OptionsFingerprint, fingerprintInput } from './fingerprint';
import { ParseResume } from '../parse/parallelParse';
import { ParseOutcome } from '../parse/parseTypes';
import { MergeRange, MergeResult, MergeResumeHooks } from '../sort/mergeToSsts';
import { KeyRangePlan, RangeReporting } from '../sort/parallelMerge';
import { RunInfo } from '../sort/runFile';
import { WrittenFile, finalSstName, tempPrefix } from '../sort/sstSetWriter';
import { ImportJob, finishedJobFiles } from './importJob';
import {
  ImportResumeSummary,
  checkpointsSteps,
  mergeCheckpointOf,
  parallelMergeOf,
  parseResumeOf,
  recordFanInMerge,
  recordMerged,
  recordParseOutcome,
  recordPartitionSstFinished,
  recordSstFinished,
  removeUnfinishedTempFiles,
  removeUnrecordedRuns,
  resumedMergeRange,
  startResumeSummary,
  storedOutcome,
  writtenFileOf,
} from './jobSteps';

/** How a one-thread merge starts: after the files an earlier attempt finished, with their counts. */
export interface MainThreadMergeStart {
  earlier: WrittenFile[];
  firstFileIndex: number;
  /** Where the merge resumes (undefined: the whole key space, each run deleted once read). */
  range: MergeRange | undefined;
  hooks: MergeResumeHooks | undefined;
}

/** How a merge on workers starts: its key ranges (as recorded, or as planned), and the per-file reporting. */
export interface WorkerMergeStart {
  plans: KeyRangePlan[];
  reporting: RangeReporting | null;
}

export interface ImportJournal {
  /** The journal outlives a failed attempt: its files stay for the next (cleanup keeps them). */
  readonly keepsFilesForResume: boolean;
  /** The attempt's name in temporary files: the job's, or the caller's fresh one. */
  readonly token: string;
  /** Prefix of the run files this attempt names (attempts of a job must not reuse names). */
  readonly runPrefix: string;
  /** What this attempt took over and redid; null without a job. */
  readonly summary: ImportResumeSummary | null;
  /** The run directory the journal names (stale unnamed runs removed), or null: the caller makes a private one. */
  runDir(): string | null;
  /** Whether `name` in the output directory is this import's own (an interrupted earlier attempt's). */
  ownsOutputName(name: string): boolean;
  /** The parse an earlier attempt finished, or null. */
  recordedParse(): { outcome: ParseOutcome; threads: number } | null;
  /** The parse's per-range hooks, or undefined when ranges are not recorded. */
  parseHooks(keepsRunsAfter: (e: unknown) => boolean): ParseResume | undefined;
  recordParse(outcome: ParseOutcome, threads: number): void;
  /** Whether fan-in merges keep their input runs until the merged run is recorded. */
  readonly recordsFanIn: boolean;
  recordFanIn(group: readonly RunInfo[], merged: RunInfo, remaining: readonly RunInfo[]): void;
  /** The merge an earlier attempt finished (files and counts), or null. */
  recordedMerge(): { merge: MergeResult; written: WrittenFile[] } | null;
  /** How an earlier attempt's merge started (on workers over recorded ranges, or on one thread), or null: not yet. */
  recordedMergeShape(): { onWorkers: boolean; threads: number } | null;
  /** Whether an earlier attempt got past the merge's start (then workers started ahead would be wasted). */
  pastMergeStart(): boolean;
  /** Before the merge: what an attempt killed mid-merge left unfinished and unrecorded goes. */
  beforeMerge(outputDir: string): void;
  mainThreadMerge(runs: readonly RunInfo[], outputDir: string): MainThreadMergeStart;
  workerMerge(runs: readonly RunInfo[], ranges: KeyRangePlan[], outputDir: string): WorkerMergeStart;
  recordMerge(outputDir: string, written: readonly WrittenFile[], merge: MergeResult): void;
  /** The import landed or failed for good: the job goes. */
  finish(): void;
  /** The import was interrupted: the job stays for a resume. */
  release(): void;
}

/** Charges each finished file to the quota, when there is one. */
function charging(quota: ScratchQuota | null, outputDir: string): (f: WrittenFile) => void {
  return (f) => quota?.charge(f.fileSizeBytes, outputDir);
}

const ZERO_COUNTS = { rowsWritten: 0, duplicateCount: 0, duplicates: [] };

/** The journal of an import that is not resumable. */
export function noJournal(token: string, quota: ScratchQuota | null): ImportJournal {
  return {
    keepsFilesForResume: false,
    token,
    runPrefix: 'run-',
    summary: null,
    runDir: () => null,
    ownsOutputName: () => false,
    recordedParse: () => null,
    parseHooks: () => undefined,
    recordParse: () => undefined,
    recordsFanIn: false,
    recordFanIn: () => undefined,
    recordedMerge: () => null,
    recordedMergeShape: () => null,
    pastMergeStart: () => false,
    beforeMerge: () => undefined,
    mainThreadMerge: (_runs, outputDir) => ({
      earlier: [],
      firstFileIndex: 1,
      range: undefined,
      hooks: quota === null ? undefined : { initial: ZERO_COUNTS, onFileFinished: charging(quota, outputDir) },
    }),
    workerMerge: (_runs, ranges, outputDir) => ({
      plans: ranges,
      reporting:
        quota === null
          ? null
          : {
              initial: ranges.map(() => ZERO_COUNTS),
              finished: ranges.map(() => []),
              onFileFinished: (_partition, f) => charging(quota, outputDir)(f),
            },
    }),
    recordMerge: () => undefined,
    finish: () => undefined,
    release: () => undefined,
  };
}

/** The journal of a resumable job; `steps`: each range, fan-in merge and SST is recorded (checkpointsSteps). */
export function jobJournal(job: ImportJob, steps: boolean, quota: ScratchQuota | null, ownJob: boolean): ImportJournal {
  const summary = startResumeSummary(job);
  const token = job.state.token;
  const ownFinals = new Set(finishedJobFiles(job.state).map((_, i) => finalSstName(i + 1)));
  const untracked = noJournal(token, quota);
  return {
    keepsFilesForResume: true,
    token,
    runPrefix: `run-a${job.state.attempts}-`,
    summary,
    runDir: () => {
      removeUnrecordedRuns(job);
      return job.state.runDir;
    },
    ownsOutputName: (name) => ownFinals.has(name) || name.startsWith(tempPrefix(token)),
    recordedParse: () => (steps ? storedOutcome(job) : null),
    parseHooks: (keepsRunsAfter) => (steps ? parseResumeOf(job, keepsRunsAfter) : undefined),
    recordParse: (outcome, threads) => {
      if (steps) recordParseOutcome(job, outcome, threads);
    },
    recordsFanIn: steps,
    recordFanIn: (group, merged, remaining) => {
      if (steps) recordFanInMerge(job, group, merged, remaining);
    },
    recordedMerge: () => {
      if (job.state.phase !== 'merged' && job.state.phase !== 'ingesting') return null;
      const written = job.state.merge.files.map(writtenFileOf);
      return { merge: { ...mergeCheckpointOf(job), rowsMerged: job.state.progress.rowsMerged }, written };
    },
    recordedMergeShape: () => {
      const merge = job.state.merge;
      if (merge.partitions !== undefined) return { onWorkers: true, threads: merge.partitions.length };
      if (merge.files.length > 0) return { onWorkers: false, threads: 1 };
      return null;
    },
    pastMergeStart: () => job.state.phase !== 'parse' && job.state.phase !== 'merge',
    // Checkpointed at its end only: the SSTs a killed earlier attempt left unfinished go first.
    beforeMerge: (outputDir) => {
      if (!steps) removeUnfinishedTempFiles(outputDir, job);
    },
    mainThreadMerge: (runs, outputDir) =>
      steps ? resumedMainThreadMerge(job, summary, runs, outputDir, quota) : untracked.mainThreadMerge(runs, outputDir),
    workerMerge: (runs, ranges, outputDir) =>
      steps ? resumedWorkerMerge(job, summary, runs, ranges, outputDir, quota) : untracked.workerMerge(runs, ranges, outputDir),
    recordMerge: (outputDir, written, merge) => recordMerged(job, outputDir, written, merge),
    finish: () => {
      if (ownJob) job.finish();
    },
    release: () => {
      if (ownJob) job.release();
    },
  };
}

/** A one-thread merge that goes on after the files an earlier attempt finished, recording each file it finishes. */
function resumedMainThreadMerge(
  job: ImportJob,
  summary: ImportResumeSummary,
  runs: readonly RunInfo[],
  outputDir: string,
  quota: ScratchQuota | null,
): MainThreadMergeStart {
  summary.mergeBytesRedone = removeUnfinishedTempFiles(outputDir, job);
  const earlier = job.state.merge.files.map(writtenFileOf);
  const charge = charging(quota, outputDir);
  return {
    earlier,
    firstFileIndex: earlier.length + 1,
    range: resumedMergeRange(runs, job.state.merge.files),
    hooks: {
      initial: mergeCheckpointOf(job),
      onFileFinished: (f, upTo) => {
        charge(f);
        recordSstFinished(job, outputDir, f, upTo);
      },
    },
  };
}

/** A merge on workers over the job's ranges (recorded before any worker starts), each going on after its last finished file. */
function resumedWorkerMerge(
  job: ImportJob,
  summary: ImportResumeSummary,
  runs: readonly RunInfo[],
  ranges: KeyRangePlan[],
  outputDir: string,
  quota: ScratchQuota | null,
): WorkerMergeStart {
  const resumed = parallelMergeOf(job, runs, ranges);
  summary.mergeBytesRedone = removeUnfinishedTempFiles(outputDir, job);
  const charge = charging(quota, outputDir);
  return {
    plans: resumed.plans,
    reporting: {
      initial: resumed.initial,
      finished: resumed.finished.map((files) => files.map(writtenFileOf)),
      onFileFinished: (partition, f, upTo) => {
        charge(f);
        recordPartitionSstFinished(job, outputDir, partition, f, upTo);
      },
    },
  };
}

/**
 * The options that shape an import's output, for its resume fingerprint: a resume with any of
 * them changed is refused (src/ingest/resume/fingerprint.ts). Memory and threads are left out.
 */
export function outputOptionsFingerprint(o: ImportOptions): OptionsFingerprint {
  const key = o.key === undefined ? '1' : typeof o.key === 'string' ? o.key : JSON.stringify(o.key.refs);
  const values: Record<string, unknown> = {
    key,
    value: o.value,
    valueFormat: o.valueFormat ?? DEFAULT_VALUE_FORMAT,
    // Set only into a database whose recorded csv syntax is not the input's (DbImport).
    valueSyntax: o.valueSyntax,
    dialect: normalizeDialect(o.dialect ?? {}),
    header: o.header ?? false,
    columns: o.columns ?? null,
    onDuplicate: o.onDuplicate ?? 'error',
    maxBadRows: o.maxBadRows ?? 0,
    targetFileSize: o.targetFileSizeBytes ?? DEFAULT_TARGET_FILE_SIZE_BYTES,
    sstOptions: o.sstOptions ?? {},
    parser: o.parser ?? 'auto',
    writeRowOrigins: o.writeRowOrigins ?? false,
    inputNames: o.inputNames ?? null,
  };
  const out: OptionsFingerprint = {};
  for (const [name, v] of Object.entries(values)) if (v !== undefined) out[name] = JSON.stringify(v);
  return out;
}

/**
 * The journal of an import: the caller's job (DbImport's), or with `resume` one opened here in
 * the output directory (`ownJob`: finished or kept by this import), or none. Stdin cannot be
 * fingerprinted, so an import reading it is never resumable. `makeTargetDir` creates the output
 * directory before a job is opened in it.
 */
export function openImportJournal(
  o: ImportOptions,
  totalInputBytes: number,
  token: string,
  quota: ScratchQuota | null,
  nameOf: InputNamer,
  makeTargetDir: () => void,
): ImportJournal {
  let job = o.job ?? null;
  let ownJob = false;
  if (job === null && o.resume === true && !o.inputs.includes('-')) {
    makeTargetDir();
    job = ImportJob.open({
      kind: 'output',
      targetDir: o.outputDir,
      inputs: o.inputs.map((p) => fingerprintInput(p, nameOf(p))),
      options: outputOptionsFingerprint(o),
      tmpDir: o.tmpDir,
      fresh: o.restart,
    });
    ownJob = true;
  }
  if (job === null) return noJournal(token, quota);
  return jobJournal(job, checkpointsSteps(job, totalInputBytes, o.stepCheckpointsFromInputBytes), quota, ownJob);
}
