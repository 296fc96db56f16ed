/**
 * Import into a live database: the one pipeline behind `ingest import <csv...> --db DIR`,
 * `ingest plan` and `ingest check`, in three modes that stop at different steps:
 *   - import (default): every step below;
 *   - plan (dryRun):    steps 1-4, then Engine.planIngestion, which links nothing;
 *   - check:            steps 1-3 only, with the SSTs in a temp directory outside DIR (or the
 *                       caller's outputDir, kept); never creates or changes the database.
 * Every mode writes row-origins side files, so each reported conflict names its CSV file and line,
 * and `conflictFailure` gives the error a finished run ends with (the CLI's exit code 3); the
 * convenience importIntoDb rejects with it (ImportConflictError, carrying the result).
 *
 *   1. import   CSV → sorted, non-overlapping external SSTs (ingest/importer.ts), written to a
 *               private directory DIR/.import-tmp-<pid>-<start>-XXXXXX, an engine scratch
 *               directory (engine/scratchDirs.ts): inside the database directory, so the engine
 *               can hard-link the files (same file system) and cleanup stays local;
 *   2. open     the engine at DIR (created when missing, unless createIfMissing is false);
 *   3. check    the conflict scan of the SSTs against the engine at one snapshot
 *               (conflict/checkSstConflicts.ts), report written when asked;
 *   4. policy   abort | overwrite | skip (conflict/policy.ts; skip rewrites the files holding a
 *               conflicting key, beside them in the private directory);
 *   5. ingest   the files the policy chose, with replaceRange when asked; or with dryRun,
 *               Engine.planIngestion, which links nothing.
 * In import mode steps 3-5 are one checked ingestion (conflict/ingestWithConflictCheck.ts): the engine
 * latches the files' span, the scan reads at a snapshot taken under the latch, and the
 * ingestion commits before the latch is released.
 * The private directory (or a check's temp directory) is removed at the end whatever happens
 * (cleanupSync also serves signal handlers); the engine's hard links keep the ingested files
 * alive under their table names. A SIGKILLed run cannot clean up: its name records its owner,
 * and the next Engine.open of DIR removes it once the owner is gone.
 *
 * Contract: an import lands whole or not at all. Failures before step 5 change nothing in the
 * database (if this run created DIR, DIR is removed again); step 5 is one manifest edit. The key
 * spec is parsed once per run (or passed in parsed) and shows keys in the report and the errors.
 *
 * Concurrent writers (a caller's `engine`, for a process that holds DIR open and keeps serving):
 * step 2's open and the final close are the caller's, and its writes go on during the run. The
 * checked ingestion makes that safe under every policy: no write inside the files' span is
 * acknowledged between the check's snapshot and the commit (such writes wait on the span latch,
 * at most for the check plus the ingestion, and land after the commit, above the files), so
 * abort aborts on every conflict there is, overwrite's report lists every live value it
 * overwrites, and skip keeps every conflicting key's live value. Writes outside the span never
 * wait. With its own engine (the CLI) the LOCK keeps every other writer out anyway.
 *
 * Never stalling the caller: with a caller's engine the parse runs on worker threads (regular
 * files; stdin is parsed in-process), the merge on a worker thread (mergeOffMainThread), and the
 * scan and the skip rewrite a slice of at most about 4 ms at a time, so the caller's reads and
 * writes keep being served through every phase. Left on the main thread: a fan-in merge of more
 * runs than the memory budget can merge at once, and the engine's own sliced flushes.
 *
 * Replace range: with `replaceRange`, [start, end) is made to hold exactly the import's keys,
 * atomically (engine/ingest/replaceRange.ts). A missing bound defaults to the import's own span:
 * start = its smallest key, end = the successor of its largest key (largest ‖ 0x00, the
 * smallest key above it), so by default exactly the keys from the import's first to its last
 * are replaced. The conflict check still compares only the import's keys: a conflict is a key of
 * the import whose live value differs. Keys in the range that the import lacks are deleted by
 * the ingestion and are not reported. `skip` cannot go with a replace range (the skipped keys'
 * old values would be deleted by the range, not kept), so that combination is refused.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../engine/engine';
import { currentFileName, tableFileName } from '../engine/fileNames';
import { ownScratchDirPrefix } from '../engine/scratchDirs';
import { IngestOptions, IngestionPlan, PlannedFile } from '../engine/ingest/ingestionJob';
import { ReplaceRange } from '../engine/ingest/replaceRange';
import { compareUserKeys } from '../base/keyCompare';
import { CsvImport, ImportOptions, ImportSummary } from './importer';
import type { DistributedPhases } from './importTypes';
import { outputOptionsFingerprint } from './resume/importJournal';
import { ImportJob, jobIdOf } from './resume/importJob';
import { fingerprintInput } from './resume/fingerprint';
import { checkInputs } from './csv/inputSource';
import { normalizeDialect } from './csv/csvDialect';
import { DEFAULT_PENDING_MAX_AGE_MS, PendingJobsReport, expirePendingJobs } from './resume/pendingExpiry';
import { checkDatabaseDir } from '../engine/open';
import { isDefinitiveFailure } from './resume/failures';
import { crashPoint } from '../util/crashPoints';
import { checkScratchSpace, estimableInputs, existingAncestor, noSpaceErrorOf } from './diskSpace';
import { KeySpec } from './rows/keySpec';
import { CheckSstConflictsOptions, checkSstConflictsSliced } from '../conflict/checkSstConflicts';
import { ingestWithConflictCheck } from '../conflict/ingestWithConflictCheck';
import { defaultSkipPath } from '../conflict/rewrite';
import { SpacePolicyOptions, SpaceSettleResult, settleSpace, spaceSettleFailure } from './spacePolicy';
import { IngestPlan, OnConflict, applyConflictPolicySliced } from '../conflict/policy';
import { ConflictReport, ConflictStrategy } from '../conflict/report';
import { ConflictReportFile, ReportFormat } from '../conflict/reportStream';
import { RowOriginIndex } from '../conflict/rowOrigins';
import { IngestError } from '../util/errors';
import { SettledValueEncoding, recordValueEncodingBeforeIngest, settleValueEncoding } from './valueEncodingFile';
import { roundTo3Decimals } from '../util/rounding';

/** How far a run goes: the check alone, up to a plan of the ingestion, or the ingestion. */
export type DbImportMode = 'check' | 'plan' | 'import';

/** A replace range as asked for: a missing bound takes the import's own (see the module comment). */
export interface ReplaceRangeRequest {
  start?: Buffer;
  end?: Buffer;
}

export interface DbImportOptions {
  dbDir: string;
  /** The import; its outputDir is the private directory. Its key spec is parsed once, here, when given as text. */
  import: Omit<ImportOptions, 'outputDir' | 'writeSummaryFile' | 'writeRowOrigins'>;
  /** Default 'import', or 'plan' with dryRun. */
  mode?: DbImportMode;
  /**
   * Check mode only: write the SSTs (with import-summary.json) here and keep them, instead of in
   * a temporary directory (under import.tmpDir, else the system's) removed at the end.
   */
  outputDir?: string;
  /** Create the database when DIR holds none (default true). Never in a plan or a check. */
  createIfMissing?: boolean;
  /** The policy (plan and import modes; a check applies none). */
  onConflict?: OnConflict;
  conflictStrategy?: ConflictStrategy;
  maxReported?: number;
  /** Write the conflict report here (also under abort, before failing). */
  reportPath?: string;
  /** json (default: one document, written after the check) or ndjson (streamed as the check finds conflicts). */
  reportFormat?: ReportFormat;
  /** Plan and import modes. */
  replaceRange?: ReplaceRangeRequest;
  /** The same as mode 'plan' (run import, check and policy, then plan the ingestion instead of doing it). */
  dryRun?: boolean;
  /**
   * Re-read and check every block of the SSTs before ingesting them. Default false for the SSTs
   * this run wrote itself: each block's checksum was computed from the bytes as they were
   * written, the files were fsynced before they were renamed into place, and the conflict scan
   * has just read them through checksum-verifying reads; what a re-read would still catch is a
   * disk that corrupts data at rest within seconds, which RocksDB's own default
   * (verify_checksums_before_ingest = false) does not guard against either. Default true for
   * `prebuilt` files, which come from outside. docs/import.md says what each choice guards.
   */
  verifyChecksums?: boolean;
  allowBlockingFlush?: boolean;
  /**
   * An engine the caller already has open at dbDir: used instead of opening one, and left open.
   * The caller may keep reading and writing meanwhile (module comment: what is guaranteed).
   */
  engine?: Engine;
  /**
   * SSTs already written, with the summary their import made (a server's upload of SSTs a client
   * sorted, with their row-origins files beside them): the CSV step is skipped, `import` only
   * gives the key spec that shows keys, and the files stay where they are (the caller owns them
   * and their directory; the skip policy writes its rewritten files beside them).
   */
  prebuilt?: ImportSummary;
  /**
   * Import mode: make the run resumable (default false here; the CLI's default is true). The
   * job's checkpoints live in DIR/.import-job-<id>/, which Engine.open keeps; running the same
   * import again after a crash goes on where it stopped, with the conflict check done again
   * against the database as it is then (src/ingest/resume/importJob.ts). Files only, not stdin.
   */
  resume?: boolean;
  /** With resume: discard a pending job for these inputs and start over (--no-resume). */
  restart?: boolean;
  /**
   * Import mode: other pending jobs in the database idle for longer than this are discarded
   * before the import starts (default DEFAULT_PENDING_MAX_AGE_MS; null: never). They are listed
   * in the result either way (resume/pendingExpiry.ts).
   */
  pendingMaxAgeMs?: number | null;
  /**
   * Import mode, with no `engine` given (nothing keeps compacting once this run closes the
   * database): the space policy run after the import (spacePolicy.ts). Default: off, for a
   * library caller; the CLI passes its --max-space-amp and --compact-budget (default 1.3, 10m).
   */
  space?: SpacePolicyOptions;
  /**
   * Called once the import's SSTs are written (at once for `prebuilt` ones), as the conflict check
   * (and the ingestion or plan after it) starts: the server shows its running imports' phase with it.
   */
  onCheckStart?: () => void;
}

/** One file of the ingestion (done or planned), as the JSON summary shows it. */
export interface DbImportFile {
  /** The import's SST (base name; a `.skip.sst` is a skip rewrite), or null for the replace-range tombstone table. */
  file: string | null;
  level: number;
  globalSeqno: number;
  sizeBytes: number;
  smallestHex: string;
  largestHex: string;
  /** The file ends at a tombstone's exclusive end (the replace-range table). */
  largestExclusive: boolean;
  /** The database table number it became (null in a plan). */
  fileNumber: number | null;
}

/** What every mode returns: the import and its check against the database. */
export interface DbCheckedImport {
  db: string;
  import: ImportSummary;
  /** The full report (the CLI prints its summary, and names the first conflict in errors). */
  report: ConflictReport;
  reportPath: string | null;
}

export interface DbCheckResult extends DbCheckedImport {
  mode: 'check';
}

export interface DbImportResult extends DbCheckedImport {
  mode: 'plan' | 'import';
  /** True when this run created the database. */
  createdDb: boolean;
  dryRun: boolean;
  policy: {
    onConflict: OnConflict;
    /** False when nothing is (or, in a dry run, would be) ingested: abort with conflicts. */
    ingest: boolean;
    rowsHeldBack: number;
    rewrittenFiles: number;
    emptiedFiles: number;
    /** Rows left out because they hold the live value already (none with a replace range). */
    rowsUnchangedLeftOut: number;
    /** Files left out whole because every row in them was unchanged. */
    unchangedFilesLeftOut: number;
  };
  replaceRange: { startHex: string; endHex: string } | null;
  /** The ingestion done; null in a dry run, when aborted, or when there was nothing to ingest. */
  ingest: {
    files: DbImportFile[];
    memtableFlushes: number;
    writesStopped: boolean;
    lastSequence: number;
    /** The ingestion step alone (staging, flush, commit), after the check. */
    seconds: number;
    /** How long the files' span was latched (check + ingestion): writes inside it waited at most this. */
    latchHeldSeconds: number;
  } | null;
  /** The ingestion planned (dry run only; null when there is nothing to plan). */
  plan: { files: DbImportFile[]; memtableFlushNeeded: boolean; lastSequence: number } | null;
  /** Import mode: the database's other pending jobs, those discarded as too old and those left. */
  pendingJobs?: PendingJobsReport;
  /**
   * Import mode with a space policy: what it did after the import (null when it did not run:
   * no policy, a caller's engine, or nothing ingested and nothing due).
   */
  space?: SpaceSettleResult | null;
  /** A distributed import (`--cluster`): its id, phase seconds and task counts; absent otherwise. */
  distributed?: ({ importId: string } & DistributedPhases) | null;
}

/** The result of a run in mode M (a mode known only at run time gives the union, told apart by `mode`). */
export type DbRunResult<M extends DbImportMode> = M extends 'check' ? DbCheckResult : DbImportResult;

export class DbImport<M extends DbImportMode = 'plan' | 'import'> {
  readonly mode: DbImportMode;
  /** A directory of this run's own (scratch or temp), removed at the end. */
  private ownedDir: string | null = null;
  private csvJob: CsvImport | null = null;
  /** DIR did not exist before this run: a failed run removes it again. */
  private createdDir = false;
  private succeeded = false;
  /** This run creates the database (none at DIR, no engine given): set by run(). */
  private createsDb = false;
  /** The resumable job (import mode with resume): its directory is the private directory. */
  private job: ImportJob | null = null;
  /** Import mode: the other pending jobs this run found (and discarded when too old). */
  private pendingJobs: PendingJobsReport | null = null;
  /** The run failed in a way a resume cannot mend: the job goes. */
  private definitiveFailure = false;
  /** The import is committed and its job gone; the space policy runs (an interrupt abandons only that). */
  settlingSpace = false;
  /** The value encoding settled against the database's record (valueEncodingFile.ts); null for prebuilt SSTs. */
  private valueEncoding: SettledValueEncoding | null = null;
  /** The report file of the run's check (reportPath): an unfinished NDJSON one is removed by cleanupSync. */
  private reportFile: ConflictReportFile | null = null;

  constructor(private readonly opts: DbImportOptions & { mode?: M }) {
    if (opts.dryRun === true && opts.mode !== undefined && opts.mode !== 'plan') {
      throw new IngestError('INVALID_ARGUMENT', `dryRun is mode 'plan'; it does not go with mode '${opts.mode}'`);
    }
    this.mode = opts.mode ?? (opts.dryRun === true ? 'plan' : 'import');
    if (opts.outputDir !== undefined && this.mode !== 'check') {
      throw new IngestError(
        'INVALID_ARGUMENT',
        'outputDir is for check mode: a plan or an import writes its SSTs to a private directory inside the database',
      );
    }
  }

  /** Removes the private directory (and DIR when this run made it and failed); synchronous, for signal handlers. */
  cleanupSync(): void {
    this.reportFile?.abandon();
    this.csvJob?.cleanupSync();
    if (this.job !== null) {
      if (this.succeeded || this.definitiveFailure) this.job.finish();
      else {
        // Interrupted: the job, and the directory it lives in, stay for the resume.
        this.job.release();
        this.createdDir = false;
      }
      this.job = null;
    }
    if (this.ownedDir !== null) fs.rmSync(this.ownedDir, { recursive: true, force: true });
    this.ownedDir = null;
    if (this.createdDir && !this.succeeded) fs.rmSync(this.opts.dbDir, { recursive: true, force: true });
    this.createdDir = false;
  }

  async run(): Promise<DbRunResult<M>> {
    const creating = this.checkPreconditions();
    this.createsDb = creating && this.opts.engine === undefined;
    const prebuilt = this.opts.prebuilt;
    // Refused (a --value-format the database does not record) before anything changes; and
    // before the job is opened, since its fingerprint holds the encoding settled on.
    if (prebuilt === undefined) this.valueEncoding = this.settleValueEncoding();
    // The directory may hold jobs before it holds a database: a first night killed before its ingestion.
    if (this.mode === 'import' && fs.existsSync(this.opts.dbDir)) this.pendingJobs = this.expirePendingJobs();
    const outputDir = prebuilt === undefined ? this.prepareOutputDir() : null;
    try {
      const keySpec = KeySpec.of(this.opts.import.key ?? '1');
      const summary = outputDir === null ? (prebuilt as ImportSummary) : await this.runCsvImport(keySpec, outputDir);
      this.opts.onCheckStart?.();
      const result = await this.withEngine<DbCheckResult | DbImportResult>(creating, (engine) =>
        this.mode === 'check' ? this.checkOnly(engine, summary, keySpec) : this.intoEngine(engine, summary, keySpec, creating),
      );
      if (result.mode === 'import' && this.pendingJobs !== null) result.pendingJobs = this.pendingJobs;
      this.succeeded = true;
      if (result.mode === 'import') result.space = await this.settleSpace(result);
      // The mode was fixed by the options that fixed M, so the result is the one M names.
      return result as DbRunResult<M>;
    } catch (e) {
      this.definitiveFailure = isDefinitiveFailure(e);
      throw noSpaceErrorOf(e, this.opts.dbDir, 'ingesting', null, this.job !== null, 'the database is unchanged');
    } finally {
      this.cleanupSync();
    }
  }

  /**
   * The space policy, after the import committed: the job's scratch files go first (they are
   * hard links to the ingested tables, and would keep a compaction's inputs on disk). A failure
   * here leaves the committed import as it is: it is reported, not thrown.
   */
  private async settleSpace(result: DbImportResult): Promise<SpaceSettleResult | null> {
    const o = this.opts;
    if (o.space === undefined || o.space.maxSpaceAmplification === null || o.engine !== undefined || result.dryRun) return null;
    // Nothing went in (abort, an unchanged night): nothing was made due.
    if (result.ingest === null && result.replaceRange === null) return null;
    this.cleanupSync();
    this.settlingSpace = true;
    const replaced =
      result.replaceRange === null
        ? null
        : { start: Buffer.from(result.replaceRange.startHex, 'hex'), end: Buffer.from(result.replaceRange.endHex, 'hex') };
    try {
      const engine = await Engine.open(o.dbDir, { createIfMissing: false });
      try {
        return await settleSpace(engine, { ...o.space, replaced });
      } finally {
        await engine.close();
      }
    } catch (e) {
      return spaceSettleFailure(e);
    }
  }

  private async runCsvImport(keySpec: KeySpec, outputDir: string): Promise<ImportSummary> {
    this.csvJob = new CsvImport(this.importOptions(keySpec, outputDir));
    const summary = await this.csvJob.run();
    this.csvJob = null;
    return summary;
  }

  /** Refuses what cannot run before anything is written; returns whether this run creates the database. */
  /** Import mode, into an existing directory: the other pending jobs, those idle too long discarded (resume/pendingExpiry.ts). */
  private expirePendingJobs(): PendingJobsReport {
    const o = this.opts;
    const keep = this.resumable() ? jobIdOf('db', o.import.inputs) : null;
    return expirePendingJobs(o.dbDir, o.pendingMaxAgeMs === undefined ? DEFAULT_PENDING_MAX_AGE_MS : o.pendingMaxAgeMs, keep);
  }

  private checkPreconditions(): boolean {
    const o = this.opts;
    const dir = o.dbDir;
    if (o.prebuilt === undefined) checkInputs(o.import.inputs);
    checkDatabaseDir(dir);
    if (this.mode !== 'check' && o.onConflict === 'skip' && o.replaceRange !== undefined) {
      throw new IngestError(
        'USAGE',
        '--on-conflict skip cannot be combined with --replace-range: the range would delete the live values skip keeps',
      );
    }
    if (o.engine !== undefined && path.resolve(o.engine.dir) !== path.resolve(dir)) {
      throw new IngestError('INVALID_ARGUMENT', `the engine given is open at ${o.engine.dir}, not at ${dir}`);
    }
    const hadDb = o.engine !== undefined || fs.existsSync(currentFileName(dir));
    const createIfMissing = (o.createIfMissing ?? true) && this.mode === 'import';
    if (!hadDb && !createIfMissing) {
      const why = { check: '', plan: ' (a dry run creates none)', import: ' (and --no-create-if-missing)' }[this.mode];
      throw new IngestError('USAGE', `no database at ${dir}${why}`);
    }
    return !hadDb;
  }

  /**
   * Where the import writes its SSTs. Plan and import: a scratch directory inside DIR (the engine
   * hard-links from it: same file system), DIR made first when missing. Check: the caller's
   * outputDir, else a temp directory outside DIR, since a check writes nothing into the database.
   */
  private prepareOutputDir(): string {
    const o = this.opts;
    if (this.mode === 'check') {
      if (o.outputDir !== undefined) return o.outputDir;
      const tmpRoot = o.import.tmpDir ?? os.tmpdir();
      try {
        fs.mkdirSync(tmpRoot, { recursive: true });
        this.ownedDir = fs.mkdtempSync(path.join(tmpRoot, 'ingest-check-'));
      } catch (e) {
        throw new IngestError('IO', `cannot create a temp directory under ${tmpRoot}: ${(e as Error).message}`, { cause: e });
      }
      return this.ownedDir;
    }
    try {
      if (!fs.existsSync(o.dbDir)) {
        fs.mkdirSync(o.dbDir, { recursive: true });
        this.createdDir = true;
      }
      if (this.resumable()) {
        this.checkQuotaBeforeJob();
        this.job = this.openJob();
        return this.job.dir;
      }
      this.ownedDir = fs.mkdtempSync(ownScratchDirPrefix(o.dbDir));
      return this.ownedDir;
    } catch (e) {
      this.cleanupSync();
      if (e instanceof IngestError) throw e;
      throw new IngestError('IO', `cannot create a private directory in ${o.dbDir}: ${(e as Error).message}`, { cause: e });
    }
  }

  /** Resumable: import mode, asked for, and every input a file (stdin cannot be fingerprinted). */
  private resumable(): boolean {
    return this.mode === 'import' && this.opts.resume === true && !this.opts.import.inputs.includes('-');
  }

  /** --disk-quota fails before the job is opened, so an import that cannot fit leaves nothing behind. */
  private checkQuotaBeforeJob(): void {
    const o = this.opts;
    const quotaBytes = o.import.diskQuotaBytes;
    if (quotaBytes === undefined) return;
    // A missing input is the import's to report (BAD_INPUT naming it): count it as empty here.
    const inputBytes = o.import.inputs.reduce((a, p) => a + (p === '-' || !fs.existsSync(p) ? 0 : fs.statSync(p).size), 0);
    const runDir = existingAncestor(o.import.tmpDir ?? o.dbDir);
    checkScratchSpace({ inputBytes, estimable: estimableInputs(o.import.inputs), quotaBytes, runDir, outputDir: o.dbDir });
  }

  private openJob(): ImportJob {
    const o = this.opts;
    const names = o.import.inputNames;
    const inputs = o.import.inputs.map((p, i) => fingerprintInput(p, names?.[i] ?? p));
    const options = outputOptionsFingerprint({ ...this.settledImport(), outputDir: '', writeRowOrigins: true });
    const job = ImportJob.open({ kind: 'db', targetDir: o.dbDir, inputs, options, tmpDir: o.import.tmpDir, fresh: o.restart });
    // A job found with no database beside it was started by a run that was creating it.
    if (job.resumed && !fs.existsSync(currentFileName(o.dbDir))) this.createdDir = true;
    return job;
  }

  /** The value encoding the database's record (or its lack of one) settles for this import. */
  private settleValueEncoding(): SettledValueEncoding {
    const o = this.opts;
    return settleValueEncoding(o.dbDir, o.import.valueFormat, normalizeDialect(o.import.dialect ?? {}), o.engine);
  }

  /** The import's options with the settled value format and csv syntax. */
  private settledImport(): DbImportOptions['import'] {
    const settled = this.valueEncoding;
    if (settled === null) return this.opts.import;
    return { ...this.opts.import, valueFormat: settled.format, valueSyntax: settled.syntax };
  }

  /**
   * The import's options. Row-origins files are written so that reported conflicts name their
   * CSV line, except into a database this run creates: nothing is there to conflict with (they
   * cost the 1M-row import's merge about 60 ms, and the check one more open of every SST). Should
   * another process create the database meanwhile, a conflict is still found and reported, by
   * key, without its line.
   */
  private importOptions(keySpec: KeySpec, outputDir: string): ImportOptions {
    const live = this.opts.engine !== undefined ? liveEngineImportOptions(this.opts) : {};
    const base = { ...this.settledImport(), ...live, key: keySpec, outputDir, writeRowOrigins: !this.createsDb };
    if (this.mode === 'check') return base;
    // A job keeps its runs itself (inside its directory, or under --tmp-dir).
    if (this.job !== null) return { ...base, job: this.job, writeSummaryFile: false };
    // Sorted runs default to the scratch directory too (not the system temp dir): after a kill,
    // the next Engine.open removes the whole scratch directory, runs included.
    return { ...base, tmpDir: base.tmpDir ?? outputDir, writeSummaryFile: false };
  }

  /** The engine at DIR for `body`: the caller's (left open), else opened here and closed after. */
  private async withEngine<T>(creating: boolean, body: (engine: Engine) => Promise<T>): Promise<T> {
    const o = this.opts;
    const engine = o.engine ?? (await Engine.open(o.dbDir, { createIfMissing: creating }));
    try {
      return await body(engine);
    } finally {
      if (o.engine === undefined) await engine.close();
    }
  }

  private async checkOnly(engine: Engine, summary: ImportSummary, keySpec: KeySpec): Promise<DbCheckResult> {
    const report = await this.withCheckOptions(summary, keySpec, (check) =>
      checkSstConflictsSliced(
        engine,
        summary.outputFiles.map((f) => f.path),
        check,
      ),
    );
    this.writeReport(report);
    return { mode: 'check', db: this.opts.dbDir, import: summary, report, reportPath: this.opts.reportPath ?? null };
  }

  private async intoEngine(engine: Engine, summary: ImportSummary, keySpec: KeySpec, creating: boolean): Promise<DbImportResult> {
    const o = this.opts;
    const onConflict = o.onConflict ?? 'abort';
    const paths = summary.outputFiles.map((f) => f.path);
    const replaceRange = resolveReplaceRange(o.replaceRange, summary);
    const ingestOptions: IngestOptions = {
      // The import's own SSTs, in its private directory, which goes once they are in: nothing
      // else holds them, so they are linked, not copied.
      fileMode: 'link',
      verifyChecksums: o.verifyChecksums ?? o.prebuilt !== undefined,
      allowBlockingFlush: o.allowBlockingFlush,
      replaceRange,
      verifyWorkerNiceness: o.engine !== undefined ? liveWorkerNiceness(o) : 0,
    };
    if (this.mode === 'plan') {
      const report = await this.withCheckOptions(summary, keySpec, (check) =>
        checkSstConflictsSliced(engine, paths, {
          ...check,
          collectConflictingKeys: onConflict === 'skip',
          collectUnchangedRuns: replaceRange === undefined,
        }),
      );
      this.writeReport(report);
      const decision = await applyConflictPolicySliced(onConflict, report, paths);
      const result = this.resultOf(creating, summary, report, decision, replaceRange);
      // Under abort with conflicts the real run ingests nothing; the plan still shows where the
      // import's files would go once the conflicts are resolved.
      const files = decision.ingest ? decision.files : paths;
      if (files.length > 0 || replaceRange !== undefined) result.plan = planOf(await engine.planIngestion(files, ingestOptions));
      return result;
    }
    if (paths.length === 0 && replaceRange === undefined) {
      // Nothing to check or ingest: the empty report of an empty import.
      const report = await this.withCheckOptions(summary, keySpec, (check) => checkSstConflictsSliced(engine, paths, check));
      this.writeReport(report);
      return this.resultOf(creating, summary, report, await applyConflictPolicySliced(onConflict, report, paths), replaceRange);
    }
    const job = this.job;
    // A caller's engine that a full disk stopped (a flush of this ingestion's, say): take writes
    // again now that this run is retried; without such an error this does nothing.
    if (o.engine !== undefined) await engine.resume();
    if (job !== null) {
      if (job.state.phase === 'ingesting' && ingestionCommitted(engine, job.dir))
        return this.committedEarlier(engine, summary, keySpec, creating);
      job.checkpoint((st) => void (st.phase = 'ingesting'));
    }
    // Recorded before any data goes in: a database never holds values without their encoding's record.
    // Prebuilt SSTs (a client's upload) carry the encoding their client settled, checked against the record here.
    if ((this.valueEncoding === null || this.valueEncoding.recorded === null) && summary.valueEncoding !== undefined) {
      recordValueEncodingBeforeIngest(o.dbDir, summary.valueEncoding);
      crashPoint('import.valueEncodingRecorded');
    }
    const checked = await this.withCheckOptions(summary, keySpec, (check) =>
      ingestWithConflictCheck(engine, paths, {
        onConflict,
        check,
        ingest: ingestOptions,
        onReport: (r) => this.writeReport(r),
        rewrite: { outputPathFor: rewritePathFor },
      }),
    );
    crashPoint('import.afterIngest');
    const result = this.resultOf(creating, summary, checked.report, checked.plan, replaceRange);
    const ingested = checked.ingestion;
    if (ingested !== null) {
      result.ingest = {
        files: ingested.files.map((f) => fileOf(f, f.fileNumber)),
        memtableFlushes: ingested.memtableFlushes,
        writesStopped: ingested.writesStopped,
        lastSequence: ingested.lastSequence,
        seconds: roundTo3Decimals(checked.ingestSeconds),
        latchHeldSeconds: roundTo3Decimals(checked.latch.heldMs / 1000),
      };
    }
    return result;
  }

  /**
   * A resumed job whose earlier attempt was killed after its ingestion committed and before the
   * job was removed: nothing is ingested again. The report is a fresh check of the files against
   * the database, which now holds them (a key shows as a conflict only if it changed since).
   */
  private async committedEarlier(engine: Engine, summary: ImportSummary, keySpec: KeySpec, creating: boolean): Promise<DbImportResult> {
    const paths = summary.outputFiles.map((f) => f.path);
    const report = await this.withCheckOptions(summary, keySpec, (check) => checkSstConflictsSliced(engine, paths, check));
    this.writeReport(report);
    if (summary.resume !== null) summary.resume.ingestionFoundCommitted = true;
    const decision: IngestPlan = {
      policy: this.opts.onConflict ?? 'abort',
      ingest: true,
      files: paths,
      rewritten: [],
      emptied: [],
      rowsHeldBack: 0,
      unchangedLeftOut: [],
      rowsUnchangedDropped: 0,
    };
    return this.resultOf(creating, summary, report, decision, resolveReplaceRange(this.opts.replaceRange, summary));
  }

  private resultOf(
    creating: boolean,
    summary: ImportSummary,
    report: ConflictReport,
    decision: IngestPlan,
    replaceRange: ReplaceRange | undefined,
  ): DbImportResult {
    const o = this.opts;
    return {
      mode: this.mode === 'plan' ? 'plan' : 'import',
      db: o.dbDir,
      createdDb: creating,
      dryRun: this.mode === 'plan',
      import: summary,
      report,
      reportPath: o.reportPath ?? null,
      policy: {
        onConflict: decision.policy,
        ingest: decision.ingest,
        rowsHeldBack: decision.rowsHeldBack,
        rewrittenFiles: decision.rewritten.length,
        emptiedFiles: decision.emptied.length,
        rowsUnchangedLeftOut: decision.rowsUnchangedDropped,
        unchangedFilesLeftOut: decision.unchangedLeftOut.length,
      },
      replaceRange:
        replaceRange === undefined ? null : { startHex: replaceRange.start.toString('hex'), endHex: replaceRange.end.toString('hex') },
      ingest: null,
      plan: null,
    };
  }

  /**
   * Runs `body` with the conflict scan's options, the same in every mode: keys shown through the
   * key spec, row sources from the origins files (open for the call).
   */
  private async withCheckOptions<T>(
    summary: ImportSummary,
    keySpec: KeySpec,
    body: (check: Omit<CheckSstConflictsOptions, 'snapshot' | 'collectConflictingKeys'>) => Promise<T>,
  ): Promise<T> {
    const o = this.opts;
    const origins = RowOriginIndex.openIfPresent(summary.outputFiles.map((f) => f.path));
    this.reportFile?.abandon();
    this.reportFile = o.reportPath === undefined ? null : new ConflictReportFile(o.reportPath, o.reportFormat);
    try {
      return await body({
        strategy: o.conflictStrategy,
        maxReported: o.maxReported,
        reportSink: this.reportFile?.sink(),
        formatKey: (k) => keySpec.format(k),
        sourceOf: origins === null ? undefined : (k) => origins.sourceOf(k),
      });
    } finally {
      origins?.close();
    }
  }

  /** Writes (NDJSON: completes) the report when asked (under abort too, before the run fails). */
  private writeReport(report: ConflictReport): void {
    this.reportFile?.complete(report);
  }
}

/**
 * Import options for a run beside a caller's live engine: parse workers whatever the input's
 * size (unless the caller chose the thread count) and the merge off the main thread.
 */
function liveEngineImportOptions(o: DbImportOptions): Partial<ImportOptions> {
  return {
    parseThreads: o.import.parseThreads ?? 2,
    mergeOffMainThread: o.import.mergeOffMainThread ?? true,
    workerNiceness: liveWorkerNiceness(o),
  };
}

/** The niceness of every worker a live import starts (parse, merge, verification). */
function liveWorkerNiceness(o: DbImportOptions): number {
  return o.import.workerNiceness ?? LIVE_WORKER_NICENESS;
}

/** How far a live import's worker threads step back from the caller's main thread (the lowest priority). */
export const LIVE_WORKER_NICENESS = 19;

/**
 * The CONFLICT error a finished run ends with, or null: a check that found conflicts, or an
 * import the abort policy stopped. A plan never fails (it shows the counts). Callers print the
 * result first and then throw this (the CLI's exit code 3).
 */
export function conflictFailure(result: DbCheckResult | DbImportResult): IngestError | null {
  if (result.mode === 'check') return result.report.summary.conflicts > 0 ? conflictError(result, '') : null;
  if (result.mode === 'plan' || result.policy.ingest) return null;
  return conflictError(result, '; nothing ingested (--on-conflict overwrite|skip to go on)');
}

function conflictError(result: DbCheckedImport, consequence: string): IngestError {
  const first = result.report.conflicts[0];
  const source = first?.source ?? null;
  const example = first !== undefined ? `; first: key ${first.key}${source !== null ? ` (${source.file} line ${source.line})` : ''}` : '';
  return new IngestError(
    'CONFLICT',
    `${result.report.summary.conflicts} key(s) would change a live value in ${result.db}${consequence}${example}`,
  );
}

/** The range to replace, bounds defaulted from the import's span; undefined when not asked for. */
export function resolveReplaceRange(request: ReplaceRangeRequest | undefined, summary: ImportSummary): ReplaceRange | undefined {
  if (request === undefined) return undefined;
  const files = summary.outputFiles;
  if ((request.start === undefined || request.end === undefined) && files.length === 0) {
    throw new IngestError('USAGE', '--replace-range needs both bounds (FROM..TO) when the import holds no rows');
  }
  const start = request.start ?? Buffer.from(files[0].smallestKeyHex, 'hex');
  // The successor of the largest key: nothing sorts between k and k ‖ 0x00.
  const end = request.end ?? Buffer.concat([Buffer.from(files[files.length - 1].largestKeyHex, 'hex'), Buffer.of(0)]);
  if (compareUserKeys(start, end) >= 0) {
    throw new IngestError('USAGE', `--replace-range start 0x${start.toString('hex')} must sort below its end 0x${end.toString('hex')}`);
  }
  return { start, end };
}

function fileOf(f: PlannedFile, fileNumber: number | null): DbImportFile {
  return {
    file: f.path === null ? null : path.basename(f.path),
    level: f.targetLevel,
    globalSeqno: f.globalSeqno,
    sizeBytes: f.fileSizeBytes,
    smallestHex: f.smallest.toString('hex'),
    largestHex: f.largest.toString('hex'),
    largestExclusive: f.largestExclusive,
    fileNumber,
  };
}

function planOf(plan: IngestionPlan): NonNullable<DbImportResult['plan']> {
  return { files: plan.files.map((f) => fileOf(f, null)), memtableFlushNeeded: plan.memtableFlushNeeded, lastSequence: plan.lastSequence };
}

/**
 * Whether the database holds a table that is one of the job's SSTs: the ingestion hard-links
 * each file under a table name, so a committed ingestion shows as a live table with the inode of
 * a file in the job directory. (A copy instead of a link, across file systems, cannot happen
 * here: the job directory is inside the database directory.)
 */
/**
 * Where the policies' rewrites of the import's SST `p` go: a `rewrites` directory beside it, so a
 * resumed job's SST directory holds only the import's own files (a kill between a rewrite and the
 * ingestion leaves one behind; the next rewrite of the same file renames over it).
 */
function rewritePathFor(p: string): string {
  const dir = path.join(path.dirname(p), REWRITES_DIR);
  fs.mkdirSync(dir, { recursive: true });
  return defaultSkipPath(path.join(dir, path.basename(p)));
}

const REWRITES_DIR = 'rewrites';

function ingestionCommitted(engine: Engine, jobDir: string): boolean {
  const inodes = new Set<number>();
  for (const dir of [jobDir, path.join(jobDir, REWRITES_DIR)]) {
    if (!fs.existsSync(dir)) continue;
    for (const name of fs.readdirSync(dir)) if (name.endsWith('.sst')) inodes.add(fs.statSync(path.join(dir, name)).ino);
  }
  for (const level of engine.levelFiles()) {
    for (const f of level) {
      try {
        if (inodes.has(fs.statSync(tableFileName(engine.dir, f.fileNumber)).ino)) return true;
      } catch {
        // A table compacted away meanwhile: not one of ours to find.
      }
    }
  }
  return false;
}

/**
 * An import the abort policy stopped (code CONFLICT, the CLI's exit code 3): nothing was
 * ingested. `result` is the run's result as DbImport.run() returns it (the report, the policy
 * with ingest false, `ingest` null), so a caller can show the conflicts without a second run.
 */
export class ImportConflictError extends IngestError {
  readonly result: DbImportResult;
  constructor(message: string, result: DbImportResult) {
    super('CONFLICT', message);
    this.name = 'ImportConflictError';
    this.result = result;
  }
}

/** importIntoDb's options: DbImport's, and what to do when the abort policy stops the import. */
export interface ImportIntoDbOptions extends DbImportOptions {
  /**
   * Reject with an ImportConflictError when conflicts under `onConflict: 'abort'` stop the import
   * (default true). False: resolve with the result (`policy.ingest` false, `ingest` null), as
   * DbImport.run() does.
   */
  throwOnConflicts?: boolean;
}

/**
 * Convenience: run one import (or, with dryRun or mode 'plan', one plan) into a database. An
 * import the abort policy stopped rejects with ImportConflictError (unless throwOnConflicts is
 * false); a plan resolves whatever it finds.
 */
export async function importIntoDb(opts: ImportIntoDbOptions): Promise<DbImportResult> {
  const { mode, throwOnConflicts, ...dbImportOptions } = opts;
  if (mode === 'check')
    throw new IngestError('INVALID_ARGUMENT', "importIntoDb imports or plans; a check is new DbImport({ mode: 'check', ... }).run()");
  const result = await new DbImport({ ...dbImportOptions, mode }).run();
  const failure = throwOnConflicts === false ? null : conflictFailure(result);
  if (failure !== null) throw new ImportConflictError(failure.message, result);
  return result;
}
