/**
 * `ingest import`: CSV inputs → sorted, non-overlapping SSTs, in bounded memory.
 *
 * Phases:
 * 1. parse: records → (key, value) rows in a sort buffer → sorted runs spilled to a private temp
 *    directory under --tmp-dir. In-process for stdin, .gz, csv-parse dialects and small inputs;
 *    otherwise regular files are cut into byte ranges parsed by worker threads (src/ingest/parse/parallelParse.ts).
 * 2. merge: a k-way merge of all runs (duplicate policy applied) into SSTs of about
 *    --target-file-size, cut only between distinct keys, under temporary names.
 * 3. publish: every SST (and, with writeRowOrigins, its origins side file) renamed to its final
 *    name at once, plus the JSON summary file.
 *
 * Contract: the import lands whole or not at all. Any failure (bad rows past --max-bad-rows,
 * duplicates under the error policy, I/O) removes the runs, the temp directory and every SST
 * written; nothing in --output-dir changes. Errors are IngestErrors naming file and line.
 *
 * Memory (--memory-limit, default 256 MiB) counts what the sort holds: the sort buffers (arena +
 * index + radix scratch) of every parser, their read and spill buffers, and in the merge the run
 * read buffers. Every share comes from one MemoryBudget (src/ingest/memoryBudget.ts).
 *
 * The key spec is parsed once: a caller passes the KeySpec (or its text, parsed when the run
 * starts), and the same object formats keys in the summary and in error messages.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { randomBytes } from 'crypto';
import { IngestError, isNoSpaceError } from '../util/errors';
import { CsvDialect, normalizeDialect } from './csv/csvDialect';
import { readCsvFast, readCsvWithCsvParse } from './csv/csvReader';
import { displayName, isSplittable, openByteSource, statInputSize } from './csv/inputSource';
import { ImportPlan, parseSettingsOf, planImport, rowOriginSourcesOf } from './phases';
import { KeySpec } from './rows/keySpec';
import { DuplicatePolicy, MergeRange, MergeResult, MergeResumeHooks, mergeRunsIntoRun, mergeRunsIntoSsts } from './sort/mergeToSsts';
import { Progress } from './progress';
import { BadRow, LayoutPlan, RowSink } from './parse/rowSink';
import { RunInfo, spillSortBuffer } from './sort/runFile';
import { SortBuffer } from './sort/sortBuffer';
import {
  RowOriginSources,
  SstSetWriter,
  WrittenFile,
  finalSstName,
  publishFiles,
  removeFiles,
  removeTempFiles,
  tempPrefix,
} from './sort/sstSetWriter';
import { KeyRangePlan, MergeWorkerPool, RangeReporting, mergeInWorkers, planKeyRanges } from './sort/parallelMerge';
import { MergeHandOver, parseInWorkers } from './parse/parallelParse';
import { nativeUtil } from '../util/nativeUtil';
import { InputNamer, ParseOutcome, ParseSettings, SourceInfo, TooManyBadRowsError, tooManyBadRowsError } from './parse/parseTypes';
import { MemoryBudget } from './memoryBudget';
import { ImportJob, finishedJobFiles } from './resume/importJob';
import { fingerprintInput, OptionsFingerprint } from './resume/fingerprint';
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
} from './resume/jobSteps';
import { isDefinitiveFailure } from './resume/failures';
import { PARALLEL_MIN_INPUT_BYTES } from './parse/prestart';
import { ScratchQuota, bytesIn, checkScratchSpace, estimateScratchBytes, noSpaceErrorOf } from './diskSpace';

/**
 * Runs at least this large are merged on two worker threads by default (two cores or more).
 * Measured on 1,000 rows (under 1 MB): one thread 0.14 s, two 0.28 s (their start-up); on 1M
 * rows (113 MB of runs): merge 1.02 s on one thread, 0.85-0.92 s on two.
 */
export const PARALLEL_MERGE_MIN_RUN_BYTES = 32 << 20;

/** The merge threads the default gives runs of about `runBytes`: 2 on 2+ cores from PARALLEL_MERGE_MIN_RUN_BYTES on, else 1. */
function defaultMergeThreads(runBytes: number): number {
  return os.availableParallelism() >= 2 && runBytes >= PARALLEL_MERGE_MIN_RUN_BYTES ? 2 : 1;
}

import { DEFAULT_TARGET_FILE_SIZE_BYTES, ImportOptions, ImportSummary, RowLocation } from './importTypes';

export { DEFAULT_TARGET_FILE_SIZE_BYTES } from './importTypes';
export type { ImportOptions, ImportSummary, ParserChoice, RowLocation } from './importTypes';

/** Where a row came from, by parse source and source-relative line. */
type Locator = (source: number, line: number) => RowLocation;

/** What setUp settles before any phase runs: the plan, and what runs it here. */
interface ImportSetup {
  importPlan: ImportPlan;
  dialect: CsvDialect;
  budget: MemoryBudget;
  targetFileSizeBytes: number;
  policy: DuplicatePolicy;
  maxBadRows: number;
  keySpec: KeySpec;
  plan: LayoutPlan;
  fast: boolean;
  parserReason: string;
  progress: Progress;
  inputSizes: (number | null)[];
  totalInput: number;
}

export class CsvImport {
  private token = `${process.pid}-${randomBytes(4).toString('hex')}`;
  private workDir: string | null = null;
  private output: SstSetWriter | null = null;
  private finished = false;
  private written: WrittenFile[] = [];
  private runCounter = 0;
  /** Merge workers started ahead (startMergeWorkersAhead); closed by cleanupSync. */
  private mergePool: MergeWorkerPool | null = null;
  /** The parse workers to hand over to mergePool once the parse is done; undefined: none. */
  private mergeHandOver: MergeHandOver | undefined = undefined;
  /** Prefix of the run files this attempt names on the main thread (attempts of a job must not reuse names). */
  private runPrefix = 'run-';
  /** The resumable job, when there is one; `ownJob`: opened here (output-dir imports), so finished or kept here. */
  private job: ImportJob | null = null;
  /**
   * The job when its parse ranges and SSTs are checkpointed one by one (checkpointsSteps), else
   * null: the parse and the merge then run as without a job, and only their end is recorded.
   */
  private stepJob: ImportJob | null = null;
  private ownJob = false;
  /** A failure a resume cannot mend (bad input, duplicates, usage): the job goes with the rest. */
  private definitiveFailure = false;
  private resumeSummary: ImportResumeSummary | null = null;
  /** What the import is doing, for a full disk's message. */
  private doing: { what: string; dir: string } = { what: 'starting', dir: '' };
  private quota: ScratchQuota | null = null;

  constructor(private readonly opts: ImportOptions) {}

  /** The name an input path goes by (ImportOptions.inputNames, else its path or "stdin"). */
  private readonly nameOf: InputNamer = (file) => {
    const i = this.opts.inputNames === undefined ? -1 : this.opts.inputs.indexOf(file);
    return i >= 0 ? (this.opts.inputNames as string[])[i] : displayName(file);
  };

  /** Removes everything the import made so far; safe from a signal handler (synchronous). */
  cleanupSync(): void {
    this.mergePool?.close();
    this.mergePool = null;
    if (this.job !== null && !this.finished && !this.definitiveFailure) {
      // Interrupted (a signal, I/O, a full disk): everything stays for the resume.
      if (this.ownJob) this.job.release();
      this.workDir = null;
      return;
    }
    if (!this.finished) {
      if (this.output !== null) this.output.abort();
      removeFiles(this.written);
      removeTempFiles(this.opts.outputDir, this.token);
    }
    if (this.job !== null) {
      if (this.ownJob) this.job.finish();
      this.workDir = null;
      return;
    }
    if (this.workDir !== null) fs.rmSync(this.workDir, { recursive: true, force: true });
    this.workDir = null;
  }

  async run(): Promise<ImportSummary> {
    const t0 = performance.now();
    const o = this.opts;
    const setup = this.setUp();
    this.checkQuota(setup);
    this.openJob();
    if (this.job !== null && checkpointsSteps(this.job, setup.totalInput, o.stepCheckpointsFromInputBytes)) this.stepJob = this.job;
    this.startMergeWorkersAhead(setup);
    this.prepareOutputDir(o.outputDir);
    this.prepareWorkDir();
    try {
      this.doing = { what: 'parsing and spilling sorted runs', dir: this.workDir as string };
      const { outcome, threads } = await this.parse(setup);
      this.quota?.charge(
        outcome.runs.reduce((a, r) => a + r.bytes, 0),
        this.workDir as string,
      );
      this.doing = { what: 'merging the runs into SSTs', dir: o.outputDir };
      const tParsed = performance.now();
      const locate = locatorOf(outcome.sources, this.nameOf);
      if (o.rejectsPath !== undefined) writeRejects(o.rejectsPath, outcome.badRows, locate);
      const { merge, written, mergeThreads } = await this.merge(setup, outcome, locate);
      const tMerged = performance.now();

      // Phase 3: publish.
      this.doing = { what: 'publishing the SSTs', dir: o.outputDir };
      const finalPaths = publishFiles(o.outputDir, written, this.job !== null);
      this.finished = true;
      const tPublished = performance.now();
      const summary = this.summarize({
        o,
        inputSizes: setup.inputSizes,
        totalInput: setup.totalInput,
        fast: setup.fast,
        parserReason: setup.parserReason,
        threads,
        outcome,
        merge,
        policy: setup.policy,
        written,
        finalPaths,
        mergeThreads,
        keySpec: setup.keySpec,
        locate,
        memoryLimitBytes: setup.budget.memoryLimitBytes,
        runs: outcome.runs,
        seconds: { parse: (tParsed - t0) / 1000, merge: (tMerged - tParsed) / 1000, publish: (tPublished - tMerged) / 1000 },
      });
      if (o.writeSummaryFile ?? true)
        writeFileAtomic(path.join(o.outputDir, 'import-summary.json'), `${JSON.stringify(summary, null, 2)}\n`);
      return summary;
    } catch (e) {
      this.definitiveFailure = isDefinitiveFailure(e);
      throw this.noSpaceError(e, setup);
    } finally {
      this.cleanupSync();
    }
  }

  /**
   * --disk-quota: the estimate against the quota and the free space, before anything is written
   * (no job is opened, no directory made, for an import that cannot fit).
   */
  private checkQuota(s: ImportSetup): void {
    const o = this.opts;
    const quotaBytes = o.diskQuotaBytes;
    if (quotaBytes === undefined) return;
    this.quota = new ScratchQuota(quotaBytes);
    // A caller's job (DbImport) was opened only after this same estimate passed there.
    if (o.job !== undefined) return;
    const outputDir = existingAncestor(o.outputDir);
    const runDir = existingAncestor(o.tmpDir ?? (o.resume === true ? o.outputDir : os.tmpdir()));
    checkScratchSpace({ inputBytes: s.totalInput, estimable: estimableInputs(o.inputs), quotaBytes, runDir, outputDir });
  }

  /** A full disk as NO_SPACE naming where and about how much more is needed; other errors as they are. */
  private noSpaceError(e: unknown, s: ImportSetup): unknown {
    if (!isNoSpaceError(e)) return e;
    const used = bytesIn(this.workDir ?? this.doing.dir) + bytesIn(this.opts.outputDir, tempPrefix(this.token));
    const needed = s.inputSizes.every((x) => x !== null) ? estimateScratchBytes(s.totalInput) - used : null;
    const unchanged = this.job !== null ? 'nothing was published' : 'nothing was published, and the partial files were removed';
    return noSpaceErrorOf(e, this.doing.dir, this.doing.what, needed, this.job !== null, unchanged);
  }

  /**
   * The resumable job: the caller's (DbImport), or, with `resume`, one opened here in the output
   * directory. Stdin cannot be fingerprinted, so an import reading it is never resumable.
   */
  private openJob(): void {
    const o = this.opts;
    if (o.job !== undefined) this.job = o.job;
    else if (o.resume === true && !o.inputs.includes('-')) {
      this.prepareOutputDir(o.outputDir, true);
      this.job = ImportJob.open({
        kind: 'output',
        targetDir: o.outputDir,
        inputs: o.inputs.map((p) => fingerprintInput(p, this.nameOf(p))),
        options: outputOptionsFingerprint(o),
        tmpDir: o.tmpDir,
        fresh: o.restart,
      });
      this.ownJob = true;
    }
    if (this.job === null) return;
    this.token = this.job.state.token;
    this.runPrefix = `run-a${this.job.state.attempts}-`;
    this.resumeSummary = startResumeSummary(this.job);
  }

  /** The sorted runs' directory: the job's, or a new temp directory under --tmp-dir. */
  private prepareWorkDir(): void {
    if (this.job !== null) {
      this.workDir = this.job.state.runDir;
      removeUnrecordedRuns(this.job);
      return;
    }
    const tmpRoot = this.opts.tmpDir ?? os.tmpdir();
    try {
      fs.mkdirSync(tmpRoot, { recursive: true });
      this.workDir = fs.mkdtempSync(path.join(tmpRoot, 'ingest-import-'));
    } catch (e) {
      throw new IngestError('IO', `cannot create a temp directory under ${tmpRoot}: ${(e as Error).message}`, { cause: e });
    }
  }

  /** Checks the options and settles everything the phases need (planImport); touches no file but the inputs' sizes. */
  private setUp(): ImportSetup {
    const plan = planImport(this.opts);
    return {
      importPlan: plan,
      dialect: plan.dialect,
      budget: new MemoryBudget(plan.memoryLimitBytes),
      targetFileSizeBytes: plan.targetFileSizeBytes,
      policy: plan.policy,
      maxBadRows: plan.maxBadRows,
      keySpec: KeySpec.of(this.opts.key ?? '1'),
      plan: plan.layout,
      fast: plan.parser === 'fast',
      parserReason: plan.parserReason,
      progress: this.opts.progress ?? new Progress(false),
      inputSizes: plan.inputSizes,
      totalInput: plan.totalInputBytes,
    };
  }

  /** Phase 1: parse into sorted runs, in worker threads for large regular files, else in-process. */
  private async parse(s: ImportSetup): Promise<{ outcome: ParseOutcome; threads: number }> {
    const o = this.opts;
    const settings: ParseSettings = parseSettingsOf(s.importPlan, this.workDir as string);
    const explicitThreads = o.parseThreads !== undefined;
    const requestedThreads = o.parseThreads ?? (os.availableParallelism() >= 2 ? 2 : 0);
    const parallel =
      s.fast && requestedThreads >= 1 && (explicitThreads || s.totalInput >= PARALLEL_MIN_INPUT_BYTES) && o.inputs.every(isSplittable);
    const threads = parallel ? requestedThreads : 0;
    const job = this.stepJob;
    const stored = job !== null ? storedOutcome(job) : null;
    if (stored !== null) return stored;
    const resume = job !== null ? parseResumeOf(job, (e) => !isDefinitiveFailure(e)) : undefined;
    try {
      const inWorkers = parallel
        ? await parseInWorkers(o.inputs, settings, threads, s.budget, s.progress, this.nameOf, o.parseTaskBytes, resume, this.mergeHandOver)
        : null;
      // null: the workers had no record to bind the columns from, though there is data (only bad
      // rows where the probe looked); the in-process parse reports each bad row as it should.
      const parsed =
        inWorkers !== null
          ? { outcome: inWorkers, threads }
          : { outcome: await this.parseInProcess(o.inputs, settings, s.fast, s.budget, s.progress), threads: 0 };
      if (job !== null) recordParseOutcome(job, parsed.outcome, parsed.threads);
      return parsed;
    } catch (e) {
      // The import fails, but the rows that made it fail are still worth a rejects file.
      if (e instanceof TooManyBadRowsError && o.rejectsPath !== undefined)
        writeRejects(o.rejectsPath, e.badRows, locatorOf(e.sources, this.nameOf));
      throw e;
    } finally {
      s.progress.done();
    }
  }

  /** Phase 2: merge the runs into SSTs (in key ranges on merge workers when asked); the duplicate policy applies here. */
  private async merge(
    s: ImportSetup,
    outcome: ParseOutcome,
    locate: Locator,
  ): Promise<{ merge: MergeResult; written: WrittenFile[]; mergeThreads: number }> {
    const o = this.opts;
    let runs = outcome.runs;
    const runBytes = runs.reduce((a, r) => a + r.bytes, 0);
    const mergeThreads = runs.length > 0 && runBytes > 0 ? this.mergeThreadsFor(runBytes) : 1;
    const maxFanIn = s.budget.mergeFanIn(mergeThreads);
    const job = this.job;
    if (job !== null && (job.state.phase === 'merged' || job.state.phase === 'ingesting')) return this.mergedEarlier(job, mergeThreads);
    const steps = this.stepJob;
    // Checkpointed at its end only: the SSTs a killed earlier attempt left unfinished go first.
    if (job !== null && steps === null) removeUnfinishedTempFiles(o.outputDir, job);
    while (runs.length > maxFanIn) {
      const group = runs.slice(0, maxFanIn);
      // A job keeps the group until the merged run is recorded: a kill meanwhile must find them.
      const merged = mergeRunsIntoRun(group, this.nextRunPath(), s.budget.mergeReadBufferBytes(group.length), steps === null);
      runs = [merged, ...runs.slice(maxFanIn)];
      if (steps !== null) recordFanInMerge(steps, group, merged, runs.slice(1));
    }
    const inWorkers = mergeThreads > 1 || o.mergeOffMainThread === true;
    const ranges = inWorkers && runs.length > 0 ? planKeyRanges(runs, mergeThreads) : [];
    const rowOrigins = o.writeRowOrigins === true ? rowOriginSourcesOf(outcome.sources, this.nameOf) : null;
    let merge: MergeResult;
    let written: WrittenFile[];
    try {
      if (this.mergesOnWorkers(ranges.length)) {
        ({ merge, files: written } = await this.mergeOnWorkers(s, runs, ranges, rowOrigins, outcome.rowsRead));
      } else {
        ({ merge, written } = this.mergeOnMainThread(s, runs, rowOrigins, outcome.rowsRead));
      }
    } finally {
      s.progress.done();
    }
    this.written = written;
    if (job !== null && !(merge.duplicateCount > 0 && s.policy === 'error')) recordMerged(job, o.outputDir, written, merge);
    if (merge.duplicateCount > 0 && s.policy === 'error') throw duplicateKeysError(merge, s.keySpec, locate);
    return { merge, written, mergeThreads: ranges.length > 1 ? ranges.length : 1 };
  }

  /**
   * Merge threads: --merge-threads when given. A resumed job keeps the way its merge started: the
   * ranges it recorded (a parallel merge), or one thread when files of a one-thread merge exist.
   * Otherwise two on a machine with two cores or more once the runs reach
   * PARALLEL_MERGE_MIN_RUN_BYTES (below it a worker's start-up, about 0.1 s, costs more than
   * the second core gives back), else one.
   */
  private mergeThreadsFor(runBytes: number): number {
    const started = this.mergeStartedEarlier();
    if (started !== null) return started.threads;
    if (this.opts.mergeThreads !== undefined) return Math.max(1, this.opts.mergeThreads);
    return defaultMergeThreads(runBytes);
  }

  /** How a resumed job's merge started: on workers over its recorded ranges, on one thread (it has files), or null: not yet. */
  private mergeStartedEarlier(): { onWorkers: boolean; threads: number } | null {
    const merge = this.job?.state.merge;
    if (merge?.partitions !== undefined) return { onWorkers: true, threads: merge.partitions.length };
    if (merge !== undefined && merge.files.length > 0) return { onWorkers: false, threads: 1 };
    return null;
  }

  /**
   * Readies the merge workers the default would use (mergeThreadsFor) before the merge, when the
   * input is large enough that its runs will reach PARALLEL_MERGE_MIN_RUN_BYTES (runs hold about
   * the input's bytes) and no earlier attempt fixed the merge's shape. With the native codec the
   * parse workers are handed over once the parse is done (BecomeMergeWorker): at 1M rows that
   * spared two isolates' start-up and their page faults, which had competed with the parse.
   * Without it (no way to release a sort buffer's memory at once) standby workers are started
   * now, so their start-up overlaps the parse (MergeWorkerPool). A guess either way: workers the
   * merge does not take are terminated.
   */
  private startMergeWorkersAhead(s: ImportSetup): void {
    const o = this.opts;
    const job = this.job;
    if (this.mergeStartedEarlier() !== null) return;
    if (job !== null && job.state.phase !== 'parse' && job.state.phase !== 'merge') return;
    const threads = o.mergeThreads ?? defaultMergeThreads(s.totalInput);
    if (threads < 2) return;
    if (nativeUtil === null) {
      this.mergePool = new MergeWorkerPool(threads, o.workerNiceness ?? 0);
      return;
    }
    // The parse workers are handed over instead (BecomeMergeWorker); the merge starts fresh
    // workers for what they do not cover (fewer parse threads, an in-process parse).
    this.mergePool = new MergeWorkerPool(0, o.workerNiceness ?? 0);
    this.mergeHandOver = { pool: this.mergePool, count: threads };
  }

  /**
   * Whether the merge runs on workers: as a resumed job's merge started (recorded ranges: yes;
   * files of a one-thread merge: no), else for two ranges or more, or one with mergeOffMainThread.
   */
  private mergesOnWorkers(rangeCount: number): boolean {
    const started = this.mergeStartedEarlier();
    if (started !== null) return started.onWorkers;
    return rangeCount > 1 || (rangeCount === 1 && this.opts.mergeOffMainThread === true);
  }

  /**
   * The merge on worker threads, one key range each. With a job it is resumable: the ranges are
   * recorded before the workers start (a resume merges the same ranges), each SST is recorded
   * as its worker reports it, and each range resumes after its last recorded file.
   */
  private async mergeOnWorkers(
    s: ImportSetup,
    runs: RunInfo[],
    ranges: KeyRangePlan[],
    rowOrigins: RowOriginSources | null,
    rowsRead: number,
  ): Promise<{ merge: MergeResult; files: WrittenFile[] }> {
    const o = this.opts;
    const job = this.stepJob;
    const quota = this.quota;
    let plans = ranges;
    let reporting: RangeReporting | null = null;
    if (job !== null) {
      const resumed = parallelMergeOf(job, runs, ranges);
      plans = resumed.plans;
      (this.resumeSummary as ImportResumeSummary).mergeBytesRedone = removeUnfinishedTempFiles(o.outputDir, job);
      reporting = {
        initial: resumed.initial,
        finished: resumed.finished.map((files) => files.map(writtenFileOf)),
        onFileFinished: (partition, f, upTo) => {
          quota?.charge(f.fileSizeBytes, o.outputDir);
          recordPartitionSstFinished(job, o.outputDir, partition, f, upTo);
        },
      };
    } else if (quota !== null) {
      reporting = {
        initial: ranges.map(() => ({ rowsWritten: 0, duplicateCount: 0, duplicates: [] })),
        finished: ranges.map(() => []),
        onFileFinished: (_partition, f) => quota.charge(f.fileSizeBytes, o.outputDir),
      };
    }
    const base = {
      policy: s.policy,
      readBufferBytes: s.budget.mergeReadBufferBytes(runs.length * plans.length),
      outputDir: o.outputDir,
      token: this.token,
      targetFileSizeBytes: s.targetFileSizeBytes,
      // Each merge worker compresses its own blocks: a compression thread per worker would put
      // twice as many busy threads as cores on a two-core machine (docs/import.md).
      sstOptions: { ...(o.sstOptions ?? {}), backgroundCompression: false },
      rowOrigins,
    };
    return mergeInWorkers(runs, plans, base, rowsRead, s.progress, o.workerNiceness ?? 0, reporting, this.mergePool);
  }

  /**
   * The one-thread merge. With a job it is resumable: it starts after the files an earlier
   * attempt finished (their counts carried on), and checkpoints each file it finishes.
   */
  private mergeOnMainThread(
    s: ImportSetup,
    runs: RunInfo[],
    rowOrigins: RowOriginSources | null,
    rowsRead: number,
  ): { merge: MergeResult; written: WrittenFile[] } {
    const o = this.opts;
    const job = this.stepJob;
    this.output = new SstSetWriter(o.outputDir, this.token, 0, s.targetFileSizeBytes, o.sstOptions ?? {}, rowOrigins);
    const earlier = job !== null ? job.state.merge.files.map(writtenFileOf) : [];
    let range: MergeRange | undefined;
    let hooks: MergeResumeHooks | undefined;
    const quota = this.quota;
    if (job !== null) {
      (this.resumeSummary as ImportResumeSummary).mergeBytesRedone = removeUnfinishedTempFiles(o.outputDir, job);
      this.output.firstFileIndex = earlier.length + 1;
      range = resumedMergeRange(runs, job.state.merge.files);
      hooks = {
        initial: mergeCheckpointOf(job),
        onFileFinished: (f, upTo) => {
          quota?.charge(f.fileSizeBytes, o.outputDir);
          recordSstFinished(job, o.outputDir, f, upTo);
        },
      };
    } else if (quota !== null) {
      hooks = {
        initial: { rowsWritten: 0, duplicateCount: 0, duplicates: [] },
        onFileFinished: (f) => quota.charge(f.fileSizeBytes, o.outputDir),
      };
    }
    const onProgress = (n: number): void =>
      s.progress.update({ phase: 'merge', doneBytes: 0, totalBytes: null, rows: n, totalRows: rowsRead });
    const merge = mergeRunsIntoSsts(runs, s.policy, this.output, s.budget.mergeReadBufferBytes(runs.length), onProgress, range, hooks);
    const written = merge.duplicateCount > 0 && s.policy === 'error' ? [] : [...earlier, ...this.output.finish()];
    return { merge, written };
  }

  /** An earlier attempt finished the merge: its files and counts, as the merge would return them. */
  private mergedEarlier(job: ImportJob, mergeThreads: number): { merge: MergeResult; written: WrittenFile[]; mergeThreads: number } {
    const m = mergeCheckpointOf(job);
    const written = job.state.merge.files.map(writtenFileOf);
    this.written = written;
    const merge: MergeResult = { ...m, rowsMerged: job.state.progress.rowsMerged };
    return { merge, written, mergeThreads };
  }

  private prepareOutputDir(dir: string, creatingOnly = false): void {
    try {
      fs.mkdirSync(dir, { recursive: true });
    } catch (e) {
      throw new IngestError('IO', `cannot create --output-dir ${dir}: ${(e as Error).message}`, { cause: e });
    }
    if (creatingOnly) return;
    // A resumed job may find files of its own there: those its interrupted publish renamed.
    const ownFinals = new Set(this.job !== null ? finishedJobFiles(this.job.state).map((_, i) => finalSstName(i + 1)) : []);
    const own = (f: string): boolean => this.job !== null && (ownFinals.has(f) || f.startsWith(tempPrefix(this.token)));
    const existing = fs.readdirSync(dir).filter((f) => f.endsWith('.sst') && !own(f));
    if (existing.length > 0)
      throw new IngestError(
        'USAGE',
        `--output-dir ${dir} already holds SST files (${existing.slice(0, 3).join(', ')}...); import into an empty directory`,
      );
  }

  private nextRunPath(): string {
    return path.join(this.workDir as string, `${this.runPrefix}${String(++this.runCounter).padStart(6, '0')}.run`);
  }

  private async parseInProcess(
    inputs: string[],
    settings: ParseSettings,
    fast: boolean,
    budget: MemoryBudget,
    progress: Progress,
  ): Promise<ParseOutcome> {
    const buffer = new SortBuffer(budget.parserShare(1).sortBufferBytes);
    const runs: RunInfo[] = [];
    const sources: SourceInfo[] = inputs.map((file) => ({ file, lineOffset: 0 }));
    const spill = (): void => {
      if (buffer.count === 0) return;
      runs.push(spillSortBuffer(buffer, this.nextRunPath()));
      buffer.clear();
    };
    const describe = (source: number): string => this.nameOf(sources[source].file);
    const sink = new RowSink(
      settings.plan,
      null,
      buffer,
      settings.quoteByte,
      spill,
      settings.maxBadRows,
      settings.maxBadRows + 1,
      (row) => {
        throw tooManyBadRowsError(row, describe(row.source), settings.maxBadRows, sink.badRows, sources);
      },
      describe,
    );
    let inputBytes = 0;
    let doneBefore = 0;
    const total = inputs.reduce<number | null>((a, p) => (a === null || p === '-' ? null : a + statInputSize(p)), 0);
    for (let i = 0; i < inputs.length; i++) {
      sink.source = i;
      sink.expectHeader = settings.plan.header;
      const src = await openByteSource(inputs[i]);
      const onProgress = (consumed: number): void =>
        progress.update({ phase: 'parse', doneBytes: doneBefore + consumed, totalBytes: total, rows: sink.rows, totalRows: null });
      try {
        if (fast) await readCsvFast(src, settings.dialect, sink, { onProgress, window: buffer.windowRegion() });
        else await readCsvWithCsvParse(src, settings.dialect, sink, { onProgress });
        inputBytes += src.consumedBytes();
        doneBefore += src.consumedBytes();
      } finally {
        await src.close();
      }
    }
    spill();
    return {
      runs,
      sources,
      rowsRead: sink.rows,
      badRowCount: sink.badRowCount,
      badRows: sink.badRows,
      bound: sink.bound,
      inputBytes,
      ranges: 0,
      rangesRetried: 0,
    };
  }

  private summarize(a: {
    o: ImportOptions;
    inputSizes: (number | null)[];
    totalInput: number;
    fast: boolean;
    parserReason: string;
    threads: number;
    outcome: ParseOutcome;
    merge: MergeResult;
    policy: DuplicatePolicy;
    written: WrittenFile[];
    finalPaths: string[];
    mergeThreads: number;
    keySpec: KeySpec;
    locate: Locator;
    memoryLimitBytes: number;
    runs: RunInfo[];
    seconds: { parse: number; merge: number; publish: number };
  }): ImportSummary {
    const fmt = (k: Buffer): string => a.keySpec.format(k);
    const total = a.seconds.parse + a.seconds.merge + a.seconds.publish;
    const round = (x: number): number => Math.round(x * 1000) / 1000;
    return {
      inputs: a.o.inputs.map((p, i) => ({ path: a.o.inputNames?.[i] ?? displayName(p), bytes: a.inputSizes[i] })),
      inputBytes: a.outcome.inputBytes,
      parser: a.fast ? 'fast' : 'csv-parse',
      parserReason: a.parserReason,
      parseThreads: a.threads,
      parseRanges: a.outcome.ranges,
      parseRangesRetried: a.outcome.rangesRetried,
      mergeThreads: a.mergeThreads,
      rowsRead: a.outcome.rowsRead,
      rowsWritten: a.merge.rowsWritten,
      badRows: a.outcome.badRowCount,
      rejectsPath: a.o.rejectsPath ?? null,
      duplicates: {
        policy: a.policy,
        count: a.merge.duplicateCount,
        examples: a.merge.duplicates.map((d) => ({
          key: fmt(d.key),
          first: a.locate(d.first.source, d.first.line),
          duplicate: a.locate(d.duplicate.source, d.duplicate.line),
        })),
      },
      outputDir: a.o.outputDir,
      outputFiles: a.written.map((f, i) => {
        const smallest = Buffer.from(f.smallestUserKey);
        const largest = Buffer.from(f.largestUserKey);
        return {
          path: a.finalPaths[i],
          fileSizeBytes: f.fileSizeBytes,
          entries: f.entries,
          smallestKey: fmt(smallest),
          largestKey: fmt(largest),
          smallestKeyHex: smallest.toString('hex'),
          largestKeyHex: largest.toString('hex'),
        };
      }),
      runs: a.runs.length,
      runBytes: a.runs.reduce((s, r) => s + r.bytes, 0),
      phases: {
        parseSeconds: round(a.seconds.parse),
        mergeSeconds: round(a.seconds.merge),
        publishSeconds: round(a.seconds.publish),
        totalSeconds: round(total),
      },
      resume: this.resumeSummary,
      rowsPerSecond: Math.round(a.outcome.rowsRead / Math.max(total, 1e-9)),
      inputMiBPerSecond: round(a.outcome.inputBytes / (1 << 20) / Math.max(total, 1e-9)),
      memoryLimitBytes: a.memoryLimitBytes,
      peakRssBytes: process.resourceUsage().maxRSS * 1024,
    };
  }
}

/** Absolute file and line of a row, from its parse source and the line the parser gave. */
function locatorOf(sources: readonly SourceInfo[], nameOf: InputNamer): Locator {
  return (source, line) => {
    const s = sources[source];
    return { file: nameOf(s.file), line: s.lineOffset + line };
  };
}

/** The failure under --on-duplicate error: the first duplicates (file and line of both rows) and the total. */
function duplicateKeysError(merge: MergeResult, keySpec: KeySpec, locate: Locator): IngestError {
  const lines = merge.duplicates.map((d) => {
    const a = locate(d.first.source, d.first.line);
    const b = locate(d.duplicate.source, d.duplicate.line);
    return `  key ${keySpec.format(d.key)}: ${b.file} line ${b.line} repeats ${a.file} line ${a.line}`;
  });
  const more = merge.duplicateCount > merge.duplicates.length ? `\n  ... and ${merge.duplicateCount - merge.duplicates.length} more` : '';
  return new IngestError(
    'DUPLICATE_KEY',
    `${merge.duplicateCount} duplicate key(s) in the input (use --on-duplicate first|last to keep one):\n${lines.join('\n')}${more}`,
  );
}

/** Rejects: JSON lines {"file","line","reason","text"}, in input order. */
function writeRejects(file: string, rows: BadRow[], locate: Locator): void {
  const sorted = [...rows].sort((x, y) => x.source - y.source || x.line - y.line);
  const text = sorted.map((r) => JSON.stringify({ ...locate(r.source, r.line), reason: r.reason, text: r.text })).join('\n');
  try {
    fs.writeFileSync(file, text.length > 0 ? `${text}\n` : '');
  } catch (e) {
    throw new IngestError('IO', `cannot write --rejects ${file}: ${(e as Error).message}`, { cause: e });
  }
}

function writeFileAtomic(file: string, text: string): void {
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
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
    valueFormat: o.valueFormat ?? 'raw',
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

/** Whether the scratch space of these inputs can be estimated from their sizes (not stdin, not compressed). */
export function estimableInputs(inputs: readonly string[]): boolean {
  return inputs.every((p) => p !== '-' && !p.endsWith('.gz'));
}

/** `dir`, or its nearest ancestor that exists (where it would be made): its file system is the one to ask. */
export function existingAncestor(dir: string): string {
  let d = path.resolve(dir);
  while (!fs.existsSync(d) && path.dirname(d) !== d) d = path.dirname(d);
  return d;
}

/** Convenience: run one import. */
export async function runImport(opts: ImportOptions): Promise<ImportSummary> {
  return new CsvImport(opts).run();
}
