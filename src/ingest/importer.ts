/**
 * `ingest import`: CSV inputs → sorted, non-overlapping SSTs, in bounded memory.
 *
 * A driver of the import's phases (src/ingest/phases.ts), which it runs on this machine:
 * 1. parse: records → (key, value) rows in a sort buffer → sorted runs spilled to a private temp
 *    directory under --tmp-dir. In-process for stdin, .gz, csv-parse dialects and small inputs
 *    (parse/wholeInputParse.ts); otherwise regular files are cut into byte ranges parsed by
 *    worker threads (parseRange on each: src/ingest/parse/parallelParse.ts).
 * 2. merge: a k-way merge of all runs (duplicate policy applied) into SSTs of about
 *    --target-file-size, cut only between distinct keys, under temporary names: one key range
 *    per merge worker (mergeRange on each: sort/parallelMerge.ts), or all on this thread.
 * 3. publish: every SST (and, with writeRowOrigins, its origins side file) renamed to its final
 *    name at once, plus the JSON summary file.
 *
 * Resume is a journal around the phases (resume/importJournal.ts): before each phase the driver
 * asks it what an earlier attempt finished, and the journal records each result once durable.
 * This driver holds no job of its own and makes no decision on one.
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
import { isSplittable } from './csv/inputSource';
import { ImportPlan, inputNamer, mergeTaskBase, parseSettingsOf, planImport, rowOriginSourcesOf } from './phases';
import { KeySpec } from './rows/keySpec';
import { MergeResult, mergeRunsIntoRun, mergeRunsIntoSsts } from './sort/mergeToSsts';
import { Progress } from './progress';
import { RunInfo } from './sort/runFile';
import { RowOriginSources, SstSetWriter, WrittenFile, publishFiles, removeFiles, removeTempFiles, tempPrefix } from './sort/sstSetWriter';
import { KeyRangePlan, MergeWorkerPool, mergeInWorkers, planKeyRanges } from './sort/parallelMerge';
import { MergeHandOver, parseInWorkers } from './parse/parallelParse';
import { parseWholeInputs } from './parse/wholeInputParse';
import { nativeUtil } from '../util/nativeUtil';
import { InputNamer, ParseOutcome, TooManyBadRowsError } from './parse/parseTypes';
import { MemoryBudget } from './memoryBudget';
import { ImportJournal, noJournal, openImportJournal } from './resume/importJournal';
import { isDefinitiveFailure } from './resume/failures';
import { PARALLEL_MIN_INPUT_BYTES } from './parse/prestart';
import {
  ScratchQuota,
  bytesIn,
  checkScratchSpace,
  estimableInputs,
  estimateScratchBytes,
  existingAncestor,
  noSpaceErrorOf,
} from './diskSpace';
import { Locator, duplicateKeysError, importSummaryOf, locatorOf, writeRejects } from './importReport';
import { ImportOptions, ImportSummary } from './importTypes';

export { DEFAULT_TARGET_FILE_SIZE_BYTES } from './importTypes';
export type { ImportOptions, ImportSummary, ParserChoice, RowLocation } from './importTypes';

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

/** What setUp settles before any phase runs: the plan, and what runs it here. */
interface ImportSetup {
  plan: ImportPlan;
  /** The name an input path goes by (the plan's inputNames: ImportOptions.inputNames, else its path or "stdin"). */
  nameOf: InputNamer;
  budget: MemoryBudget;
  keySpec: KeySpec;
  progress: Progress;
}

/** The parse phase's result as the driver goes on with it. */
interface Parsed {
  outcome: ParseOutcome;
  threads: number;
  locate: Locator;
}

/** The merge phase's result. */
interface Merged {
  merge: MergeResult;
  written: WrittenFile[];
  mergeThreads: number;
}

export class CsvImport {
  private journal: ImportJournal = noJournal(`${process.pid}-${randomBytes(4).toString('hex')}`, null);
  private workDir: string | null = null;
  private output: SstSetWriter | null = null;
  private finished = false;
  private written: WrittenFile[] = [];
  private runCounter = 0;
  /** Merge workers started ahead (startMergeWorkersAhead); closed by cleanupSync. */
  private mergePool: MergeWorkerPool | null = null;
  /** The parse workers to hand over to mergePool once the parse is done; undefined: none. */
  private mergeHandOver: MergeHandOver | undefined = undefined;
  /** A failure a resume cannot mend (bad input, duplicates, usage): the job goes with the rest. */
  private definitiveFailure = false;
  /** What the import is doing, for a full disk's message. */
  private doing: { what: string; dir: string } = { what: 'starting', dir: '' };
  private quota: ScratchQuota | null = null;

  constructor(private readonly opts: ImportOptions) {}

  /** Removes everything the import made so far, but what its journal keeps for a resume; safe from a signal handler (synchronous). */
  cleanupSync(): void {
    this.mergePool?.close();
    this.mergePool = null;
    const journal = this.journal;
    if (journal.keepsFilesForResume && !this.finished && !this.definitiveFailure) {
      // Interrupted (a signal, I/O, a full disk): everything stays for the resume.
      journal.release();
      this.workDir = null;
      return;
    }
    if (!this.finished) {
      if (this.output !== null) this.output.abort();
      removeFiles(this.written);
      removeTempFiles(this.opts.outputDir, journal.token);
    }
    if (journal.keepsFilesForResume) {
      journal.finish();
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
    this.journal = openImportJournal(o, setup.plan.totalInputBytes, this.journal.token, this.quota, setup.nameOf, () =>
      this.prepareOutputDir(o.outputDir, true),
    );
    this.startMergeWorkersAhead(setup);
    this.prepareOutputDir(o.outputDir);
    this.prepareWorkDir();
    try {
      const parsed = await this.parsePhase(setup);
      const tParsed = performance.now();
      const merged = await this.merge(setup, parsed.outcome, parsed.locate);
      const tMerged = performance.now();
      this.doing = { what: 'publishing the SSTs', dir: o.outputDir };
      const finalPaths = publishFiles(o.outputDir, merged.written, this.journal.keepsFilesForResume);
      this.finished = true;
      const seconds = { parse: (tParsed - t0) / 1000, merge: (tMerged - tParsed) / 1000, publish: (performance.now() - tMerged) / 1000 };
      const summary = this.summarize(setup, parsed, merged, finalPaths, seconds);
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

  private summarize(
    s: ImportSetup,
    parsed: Parsed,
    merged: Merged,
    finalPaths: string[],
    seconds: { parse: number; merge: number; publish: number },
  ): ImportSummary {
    return importSummaryOf({
      o: this.opts,
      inputSizes: s.plan.inputSizes,
      totalInput: s.plan.totalInputBytes,
      fast: s.plan.parser === 'fast',
      parserReason: s.plan.parserReason,
      threads: parsed.threads,
      outcome: parsed.outcome,
      merge: merged.merge,
      policy: s.plan.policy,
      written: merged.written,
      finalPaths,
      mergeThreads: merged.mergeThreads,
      keySpec: s.keySpec,
      locate: parsed.locate,
      memoryLimitBytes: s.budget.memoryLimitBytes,
      runs: parsed.outcome.runs,
      seconds,
      resume: this.journal.summary,
      layout: s.plan.layout,
    });
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
    checkScratchSpace({ inputBytes: s.plan.totalInputBytes, estimable: estimableInputs(o.inputs), quotaBytes, runDir, outputDir });
  }

  /** A full disk as NO_SPACE naming where and about how much more is needed; other errors as they are. */
  private noSpaceError(e: unknown, s: ImportSetup): unknown {
    if (!isNoSpaceError(e)) return e;
    const keeps = this.journal.keepsFilesForResume;
    const used = bytesIn(this.workDir ?? this.doing.dir) + bytesIn(this.opts.outputDir, tempPrefix(this.journal.token));
    const needed = s.plan.inputSizes.every((x) => x !== null) ? estimateScratchBytes(s.plan.totalInputBytes) - used : null;
    const unchanged = keeps ? 'nothing was published' : 'nothing was published, and the partial files were removed';
    return noSpaceErrorOf(e, this.doing.dir, this.doing.what, needed, keeps, unchanged);
  }

  /** The sorted runs' directory: the journal's, or a new temp directory under --tmp-dir. */
  private prepareWorkDir(): void {
    const journaled = this.journal.runDir();
    if (journaled !== null) {
      this.workDir = journaled;
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
      plan,
      nameOf: inputNamer(plan),
      budget: new MemoryBudget(plan.memoryLimitBytes),
      keySpec: KeySpec.of(this.opts.key ?? '1'),
      progress: progressOf(this.opts),
    };
  }

  /** Phase 1 and what follows it: the runs charged to the quota, the rejects file written. */
  private async parsePhase(s: ImportSetup): Promise<Parsed> {
    const o = this.opts;
    const workDir = this.workDir as string;
    this.doing = { what: 'parsing and spilling sorted runs', dir: workDir };
    const { outcome, threads } = await this.parse(s);
    this.quota?.charge(
      outcome.runs.reduce((a, r) => a + r.bytes, 0),
      workDir,
    );
    this.doing = { what: 'merging the runs into SSTs', dir: o.outputDir };
    const locate = locatorOf(outcome.sources, s.nameOf);
    if (o.rejectsPath !== undefined) writeRejects(o.rejectsPath, outcome.badRows, locate);
    return { outcome, threads, locate };
  }

  /** The parse threads: --threads, else two on 2+ cores for large regular files in the fast parser's dialects; 0: in-process. */
  private parseThreadsFor(s: ImportSetup): number {
    const o = this.opts;
    const explicitThreads = o.parseThreads !== undefined;
    const requestedThreads = o.parseThreads ?? (os.availableParallelism() >= 2 ? 2 : 0);
    const parallel =
      s.plan.parser === 'fast' &&
      requestedThreads >= 1 &&
      (explicitThreads || s.plan.totalInputBytes >= PARALLEL_MIN_INPUT_BYTES) &&
      o.inputs.every(isSplittable);
    return parallel ? requestedThreads : 0;
  }

  /** Phase 1: parse into sorted runs, in worker threads for large regular files, else in-process. */
  private async parse(s: ImportSetup): Promise<{ outcome: ParseOutcome; threads: number }> {
    const o = this.opts;
    const settings = parseSettingsOf(s.plan, this.workDir as string);
    const threads = this.parseThreadsFor(s);
    const recorded = this.journal.recordedParse();
    if (recorded !== null) return recorded;
    const resume = this.journal.parseHooks((e) => !isDefinitiveFailure(e));
    try {
      const inWorkers =
        threads > 0
          ? await parseInWorkers(o.inputs, settings, threads, s.budget, s.progress, s.nameOf, o.parseTaskBytes, resume, this.mergeHandOver)
          : null;
      // null: the workers had no record to bind the columns from, though there is data (only bad
      // rows where the probe looked); the in-process parse reports each bad row as it should.
      const parsed =
        inWorkers !== null
          ? { outcome: inWorkers, threads }
          : {
              outcome: await parseWholeInputs(o.inputs, settings, s.plan.parser === 'fast', s.budget, s.progress, s.nameOf, () =>
                this.nextRunPath(),
              ),
              threads: 0,
            };
      this.journal.recordParse(parsed.outcome, parsed.threads);
      return parsed;
    } catch (e) {
      // The import fails, but the rows that made it fail are still worth a rejects file.
      if (e instanceof TooManyBadRowsError && o.rejectsPath !== undefined)
        writeRejects(o.rejectsPath, e.badRows, locatorOf(e.sources, s.nameOf));
      throw e;
    } finally {
      s.progress.done();
    }
  }

  /** Phase 2: merge the runs into SSTs (in key ranges on merge workers when asked); the duplicate policy applies here. */
  private async merge(s: ImportSetup, outcome: ParseOutcome, locate: Locator): Promise<Merged> {
    const o = this.opts;
    const runBytes = outcome.runs.reduce((a, r) => a + r.bytes, 0);
    const mergeThreads = outcome.runs.length > 0 && runBytes > 0 ? this.mergeThreadsFor(runBytes) : 1;
    const recorded = this.journal.recordedMerge();
    if (recorded !== null) {
      this.written = recorded.written;
      return { ...recorded, mergeThreads };
    }
    this.journal.beforeMerge(o.outputDir);
    const runs = this.fanIn(s, outcome.runs, s.budget.mergeFanIn(mergeThreads));
    const inWorkers = mergeThreads > 1 || o.mergeOffMainThread === true;
    const ranges = inWorkers && runs.length > 0 ? planKeyRanges(runs, mergeThreads) : [];
    const rowOrigins = o.writeRowOrigins === true ? rowOriginSourcesOf(outcome.sources, s.nameOf) : null;
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
    const failsOnDuplicates = merge.duplicateCount > 0 && s.plan.policy === 'error';
    if (failsOnDuplicates) throw duplicateKeysError(merge, s.keySpec, locate);
    this.journal.recordMerge(o.outputDir, written, merge);
    return { merge, written, mergeThreads: ranges.length > 1 ? ranges.length : 1 };
  }

  /** More runs than one merge may read at once are merged in groups first; the journal keeps each group until its run is recorded. */
  private fanIn(s: ImportSetup, runs: RunInfo[], maxFanIn: number): RunInfo[] {
    let left = runs;
    while (left.length > maxFanIn) {
      const group = left.slice(0, maxFanIn);
      const merged = mergeRunsIntoRun(group, this.nextRunPath(), s.budget.mergeReadBufferBytes(group.length), !this.journal.recordsFanIn);
      left = [merged, ...left.slice(maxFanIn)];
      this.journal.recordFanIn(group, merged, left.slice(1));
    }
    return left;
  }

  /**
   * Merge threads: --merge-threads when given. A resumed job keeps the way its merge started: the
   * ranges it recorded (a parallel merge), or one thread when files of a one-thread merge exist.
   * Otherwise two on a machine with two cores or more once the runs reach
   * PARALLEL_MERGE_MIN_RUN_BYTES (below it a worker's start-up, about 0.1 s, costs more than
   * the second core gives back), else one.
   */
  private mergeThreadsFor(runBytes: number): number {
    const started = this.journal.recordedMergeShape();
    if (started !== null) return started.threads;
    if (this.opts.mergeThreads !== undefined) return Math.max(1, this.opts.mergeThreads);
    return defaultMergeThreads(runBytes);
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
    if (this.journal.recordedMergeShape() !== null || this.journal.pastMergeStart()) return;
    const threads = o.mergeThreads ?? defaultMergeThreads(s.plan.totalInputBytes);
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
    const started = this.journal.recordedMergeShape();
    if (started !== null) return started.onWorkers;
    return rangeCount > 1 || (rangeCount === 1 && this.opts.mergeOffMainThread === true);
  }

  /**
   * The merge on worker threads, one key range each. The journal gives the ranges (as an earlier
   * attempt recorded them) and records each SST as its worker reports it; each range resumes
   * after its last recorded file.
   */
  private async mergeOnWorkers(
    s: ImportSetup,
    runs: RunInfo[],
    ranges: KeyRangePlan[],
    rowOrigins: RowOriginSources | null,
    rowsRead: number,
  ): Promise<{ merge: MergeResult; files: WrittenFile[] }> {
    const o = this.opts;
    const { plans, reporting } = this.journal.workerMerge(runs, ranges, o.outputDir);
    const readBufferBytes = s.budget.mergeReadBufferBytes(runs.length * plans.length);
    const base = mergeTaskBase(s.plan, readBufferBytes, o.outputDir, this.journal.token, rowOrigins);
    return mergeInWorkers(runs, plans, base, rowsRead, s.progress, o.workerNiceness ?? 0, reporting, this.mergePool);
  }

  /** The one-thread merge: it starts where the journal says (after an earlier attempt's files), which records each file it finishes. */
  private mergeOnMainThread(
    s: ImportSetup,
    runs: RunInfo[],
    rowOrigins: RowOriginSources | null,
    rowsRead: number,
  ): { merge: MergeResult; written: WrittenFile[] } {
    const o = this.opts;
    const output = new SstSetWriter(o.outputDir, this.journal.token, 0, s.plan.targetFileSizeBytes, s.plan.sstOptions, rowOrigins);
    this.output = output;
    const start = this.journal.mainThreadMerge(runs, o.outputDir);
    output.firstFileIndex = start.firstFileIndex;
    const onProgress = (n: number): void =>
      s.progress.update({ phase: 'merge', doneBytes: 0, totalBytes: null, rows: n, totalRows: rowsRead });
    const readBufferBytes = s.budget.mergeReadBufferBytes(runs.length);
    const merge = mergeRunsIntoSsts(runs, s.plan.policy, output, readBufferBytes, onProgress, start.range, start.hooks);
    const written = merge.duplicateCount > 0 && s.plan.policy === 'error' ? [] : [...start.earlier, ...output.finish()];
    return { merge, written };
  }

  private prepareOutputDir(dir: string, creatingOnly = false): void {
    try {
      fs.mkdirSync(dir, { recursive: true });
    } catch (e) {
      throw new IngestError('IO', `cannot create --output-dir ${dir}: ${(e as Error).message}`, { cause: e });
    }
    if (creatingOnly) return;
    // A resumed job may find files of its own there: those its interrupted publish renamed.
    const existing = fs.readdirSync(dir).filter((f) => f.endsWith('.sst') && !this.journal.ownsOutputName(f));
    if (existing.length > 0)
      throw new IngestError(
        'USAGE',
        `--output-dir ${dir} already holds SST files (${existing.slice(0, 3).join(', ')}...); import into an empty directory`,
      );
  }

  private nextRunPath(): string {
    return path.join(this.workDir as string, `${this.journal.runPrefix}${String(++this.runCounter).padStart(6, '0')}.run`);
  }
}

/** The run's progress: the caller's Progress, its onProgress callback, or none. */
function progressOf(o: ImportOptions): Progress {
  if (o.progress !== undefined && o.onProgress !== undefined) {
    throw new IngestError('INVALID_ARGUMENT', 'give progress (a stderr display) or onProgress (a callback), not both');
  }
  if (o.onProgress !== undefined) return Progress.toCallback(o.onProgress);
  return o.progress ?? new Progress(false);
}

function writeFileAtomic(file: string, text: string): void {
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

/** Convenience: run one import. */
export async function runImport(opts: ImportOptions): Promise<ImportSummary> {
  return new CsvImport(opts).run();
}
