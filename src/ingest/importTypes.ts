/**
 * The import's options and its summary, as types: what a caller of the import gives
 * (ImportOptions: src/ingest/importer.ts's CsvImport and the phase functions of phases.ts take
 * them) and what it gets back (ImportSummary: `--json` and import-summary.json, field names
 * stable). A file of its own so that the driver and the phases read them without importing
 * each other.
 */
import { SstFileWriterOptions } from '../sstwriter/sstFileWriter';
import { CsvDialect } from './csv/csvDialect';
import { KeySpec } from './rows/keySpec';
import { DuplicatePolicy } from './sort/mergeToSsts';
import { Progress, ProgressCallback } from './progress';
import { ValueEncoding, ValueFormat, ValueSyntax } from './rows/valueEncoding';
import type { ImportJob } from './resume/importJob';
import type { ImportResumeSummary } from './resume/jobSteps';

export const DEFAULT_TARGET_FILE_SIZE_BYTES = 64 << 20;
export type ParserChoice = 'auto' | 'fast' | 'csv-parse';

export interface ImportOptions {
  inputs: string[];
  /**
   * The name each input goes by in messages, the summary and the row origins, in the order of
   * `inputs` (default: its path, "stdin" for -). A server that spools a request body to a file
   * names it after the request instead of its private path.
   */
  inputNames?: string[];
  outputDir: string;
  tmpDir?: string;
  dialect?: Partial<CsvDialect>;
  header?: boolean;
  columns?: string[] | null;
  /** The key spec, parsed (KeySpec.parse), or its --key text, parsed once when the run starts; default "1". */
  key?: KeySpec | string;
  value?: string;
  /** Default DEFAULT_VALUE_FORMAT (csv); into a database, DbImport passes the one it settled on. */
  valueFormat?: ValueFormat;
  /** csv: the delimiter and quote values are written with (default: defaultValueSyntax of the dialect). */
  valueSyntax?: ValueSyntax;
  memoryLimitBytes?: number;
  targetFileSizeBytes?: number;
  onDuplicate?: DuplicatePolicy;
  maxBadRows?: number;
  rejectsPath?: string;
  parser?: ParserChoice;
  /**
   * Worker threads for the parse and the merge (0 = all on the main thread). Default: 2 on 2+
   * cores, used for inputs (parse: regular files only) of PARALLEL_MIN_INPUT_BYTES or more; an
   * explicit value is used whatever the size (the merge needs 2+ to run in parallel).
   */
  parseThreads?: number;
  /**
   * Merge worker threads (key ranges merged in parallel); 1 = merge on the main thread. Default:
   * 2 on 2+ cores once the runs reach PARALLEL_MERGE_MIN_RUN_BYTES, else 1 (mergeThreadsFor).
   */
  mergeThreads?: number;
  /**
   * Run a one-thread merge on a worker thread instead of the main thread (default false): for a
   * process that keeps serving while it imports (importIntoDb with a caller's engine sets it), so
   * the merge never holds its event loop. Same output; costs one worker start (~30 ms).
   */
  mergeOffMainThread?: boolean;
  /**
   * Lower the CPU priority of the import's worker threads (parse, merge and their compressors)
   * by this much, 0..19 (default 0). A process that serves requests beside the import sets it so
   * that its main thread wins the CPU whenever both want it (src/util/workerBootstrap.ts).
   */
  workerNiceness?: number;
  sstOptions?: Partial<SstFileWriterOptions>;
  /** Byte-range size for parse workers (default: sized so one range fills about one sort buffer). For tests. */
  parseTaskBytes?: number;
  /**
   * Write a row-origins side file `NNNNNN.origins` beside each `NNNNNN.sst` (input file and line
   * of every entry; src/conflict/rowOrigins.ts), so a conflict check can name each new row's
   * source. Default false: plain output is the SSTs and the summary. `check` and `import --db` set it.
   */
  writeRowOrigins?: boolean;
  /** Write the summary file (import-summary.json) next to the SSTs; default true. */
  writeSummaryFile?: boolean;
  /** Progress on stderr, a bar or NDJSON (the CLI's --progress); not with onProgress. */
  progress?: Progress;
  /**
   * Progress events for a library caller, typed, written nowhere: the same "progress" events as
   * --progress json (at most one a second), plus each phase's last sample as it ends
   * (src/ingest/progress.ts). Not with `progress`.
   */
  onProgress?: ProgressCallback;
  /**
   * Make the import resumable (default false here; the CLI's default is true): checkpoints in a
   * job directory inside outputDir, so that the same import run again after a crash goes on
   * where it stopped (src/ingest/resume/importJob.ts). Inputs must be files (not stdin).
   */
  resume?: boolean;
  /** With resume: discard a pending job for these inputs and start over (--no-resume). */
  restart?: boolean;
  /** A job its caller opened (DbImport: the job directory is outputDir); the caller finishes or keeps it. */
  job?: ImportJob;
  /**
   * A resumable import of at least this many input bytes checkpoints each parse range and each SST
   * (a kill redoes one range or one SST per thread); a smaller one checkpoints only its merged SSTs,
   * and a kill before that redoes it whole (default STEP_CHECKPOINTS_FROM_INPUT_BYTES; 0: always
   * every step). --step-checkpoints-from.
   */
  stepCheckpointsFromInputBytes?: number;
  /**
   * Scratch space the import may use (runs and SSTs, --disk-quota): checked against the estimate
   * and the free space before parsing, and as runs and SSTs are finished (src/ingest/diskSpace.ts).
   */
  diskQuotaBytes?: number;
}

export interface RowLocation {
  file: string;
  line: number;
}

/** The summary `--json` prints and import-summary.json holds. Field names are stable. */
export interface ImportSummary {
  inputs: { path: string; bytes: number | null }[];
  inputBytes: number;
  parser: 'fast' | 'csv-parse';
  parserReason: string;
  parseThreads: number;
  parseRanges: number;
  parseRangesRetried: number;
  mergeThreads: number;
  rowsRead: number;
  rowsWritten: number;
  badRows: number;
  rejectsPath: string | null;
  duplicates: {
    policy: DuplicatePolicy;
    count: number;
    examples: { key: string; first: RowLocation; duplicate: RowLocation }[];
  };
  outputDir: string;
  outputFiles: {
    path: string;
    fileSizeBytes: number;
    entries: number;
    smallestKey: string;
    largestKey: string;
    smallestKeyHex: string;
    largestKeyHex: string;
  }[];
  runs: number;
  runBytes: number;
  phases: { parseSeconds: number; mergeSeconds: number; publishSeconds: number; totalSeconds: number };
  /** The resumable job (null when the import is not resumable): what it took over and redid. */
  resume: ImportResumeSummary | null;
  rowsPerSecond: number;
  inputMiBPerSecond: number;
  memoryLimitBytes: number;
  peakRssBytes: number;
  /**
   * How the values are encoded: format, delimiter and quote (csv's; raw joins by the delimiter),
   * and the value columns' names or positions (valueEncoding.ts). Absent for prebuilt SSTs.
   */
  valueEncoding?: ValueEncoding;
}

/**
 * A distributed import's phases (src/ingest/distributed/coordinator.ts): seconds in each as the
 * coordinator saw them, the tasks run, and the seconds they ran summed over tasks.
 */
export interface DistributedPhases {
  mapSeconds: number;
  reduceSeconds: number;
  publishSeconds: number;
  mapTasks: number;
  reduceTasks: number;
  mapTaskSeconds: number;
  reduceTaskSeconds: number;
}
