/**
 * sst-ingest's public library API: everything an application needs to keep a RocksDB-compatible
 * database open, serve reads and writes from it, and land bulk imports into it while it serves.
 * Anything not exported here is internal and may change between versions.
 *
 * - The engine: Engine.open(dir, options) with get / put / delete / deleteRange / write(batch),
 *   bounded iterators (newIterator({ lowerBound, upperBound, snapshot })), snapshots, flush,
 *   compactRange, stats and close. Keys and values are strings (UTF-8) or bytes (BytesInput);
 *   reads return Buffers. Reads are synchronous; writes resolve to their sequence number.
 *   docs/library.md is the guide.
 * - Imports into a database: importIntoDb (CSV files, every option of `ingest import --db`, the
 *   same summary, report and policy objects the CLI prints), safe beside concurrent writers of
 *   the same engine (pass it as `engine`); conflicts under abort reject with ImportConflictError;
 *   DbImport for the check-only and plan modes (and a result instead of that error).
 * - Imports to SST files only: runImport (`ingest import --output-dir`).
 * - Values as columns: readValueEncoding(dir) (the encoding a database records) and
 *   splitValue(value, encoding) (`ingest get --as-columns`).
 * - The import as phase tasks, to run on threads or machines of the caller's: importPhases
 *   (planImport, planParse, parseRange, finishParse, planMerge, mergeRange, finishMerge,
 *   publishSsts; src/ingest/phases.ts documents each task's input, output and durability).
 * - Resumable imports: `resume: true` on either; listPendingJobs / discardJob (`ingest pending`);
 *   Engine.resume() after a full disk stopped a flush; `onProgress` (typed ProgressEvents) on the
 *   import options, or Progress('json') for NDJSON progress events on stderr.
 * - The conflict check: checkSstConflicts / checkSstConflictsSliced, and ingestWithConflictCheck
 *   (check, policy and ingestion as one latched step on an open engine).
 * - The table format: SstFileWriter and TableReader (RocksDB 7.8 BlockBasedTable, both ways).
 * - The server: IngestServer.start({ dbDir, port, token, limits }) (`ingest serve`, docs/serve.md),
 *   or IngestServer.start({ engine }) to serve an engine the application has open (left open
 *   when the server stops), for the HTTP API inside its own process; close() drains.
 * One word, one meaning: `engine` is always an open Engine; options for opening one are
 * `engineOptions` (EngineOptions).
 * - Errors: IngestError with a stable `code`, CorruptionError, and exitCodeFor (the CLI's mapping).
 *
 * Layering: this file is an entry point, like cli/: it only re-exports from the layers below.
 */
export { Engine, Snapshot, DEFAULT_LATCH_WAIT_TIMEOUT_MS } from './engine/engine';
export type {
  EngineOptions,
  EngineStats,
  EngineTableOptions,
  IteratorOptions,
  ReadOptions,
  WriteOptions,
  RecoveryReport,
  BytesInput,
} from './engine/engine';
export { DbIterator } from './engine/dbIterator';
export type { DbSeekOptions } from './engine/dbIterator';
export { WriteBatch } from './engine/writeBatch';
export type { IngestOptions, IngestionPlan, IngestionResult, IngestedFile, PlannedFile } from './engine/ingest/ingestionJob';
export type { CheckedIngestion, IngestionCheck, IngestionCheckContext, IngestionCheckDecision } from './engine/ingest/checkedIngestion';
export type { ReplaceRange } from './engine/ingest/replaceRange';
export type { UserKeyRange } from './engine/runningCompactions';

export { importIntoDb, DbImport, conflictFailure, ImportConflictError } from './ingest/importIntoDb';
export type {
  DbImportOptions,
  ImportIntoDbOptions,
  DbImportResult,
  DbCheckResult,
  DbImportMode,
  DbImportFile,
  DbRunResult,
  ReplaceRangeRequest,
} from './ingest/importIntoDb';
export { runImport, CsvImport } from './ingest/importer';
export * as importPhases from './ingest/phases';
export type { ImportOptions, ImportSummary, ParserChoice } from './ingest/importer';
export { KeySpec } from './ingest/rows/keySpec';
export { readValueEncoding } from './ingest/valueEncodingFile';
export { splitValue } from './ingest/rows/valueColumns';
export type { ValueColumn, ValueColumns } from './ingest/rows/valueColumns';
export type { ValueEncoding, ValueFormat, ValueSyntax } from './ingest/rows/valueEncoding';
export type { KeyColumnType } from './ingest/rows/keySpec';
export { DEFAULT_MEMORY_LIMIT_BYTES } from './ingest/memoryBudget';
export { listPendingJobs, discardJob } from './ingest/resume/importJob';
export type { PendingJob, JobPhase } from './ingest/resume/importJob';
export type { ImportResumeSummary } from './ingest/resume/jobSteps';
export { Progress } from './ingest/progress';
export type { ProgressEvent, ProgressMode, ProgressCallback } from './ingest/progress';

export { checkSstConflicts, checkSstConflictsSliced } from './conflict/checkSstConflicts';
export type { CheckSstConflictsOptions } from './conflict/checkSstConflicts';
export { ingestWithConflictCheck } from './conflict/ingestWithConflictCheck';
export type { ConflictCheckedIngestOptions, ConflictCheckedIngestResult } from './conflict/ingestWithConflictCheck';
export { applyConflictPolicy, ON_CONFLICT_CHOICES } from './conflict/policy';
export type { IngestPlan, OnConflict } from './conflict/policy';
export { conflictReportJson, writeConflictReport, CONFLICT_REPORT_FORMAT, CONFLICT_REPORT_VERSION } from './conflict/report';
export type { ConflictReport, ConflictStrategy, ConflictSummary, ReportedConflict, RowSource, ShownValue } from './conflict/report';

export { SstFileWriter } from './sstwriter/sstFileWriter';
export type { SstFileWriterOptions, SstFileMetadata } from './sstwriter/sstFileWriter';
export { TableReader } from './sstable/reader/tableReader';
export type { TableReaderOptions, TableEntry, RangeTombstone } from './sstable/reader/tableReader';
export { CompressionType } from './sstable/compression';
export { ChecksumType } from './sstable/checksum';

export { IngestServer } from './server/server';
export { DEFAULT_HOST, DEFAULT_PORT } from './server/limits';
export type { ServeOptions } from './server/server';
export { DEFAULT_LIMITS } from './server/limits';
export type { ServerLimits } from './server/limits';

export { IngestError, CorruptionError, DbLockedError, exitCodeFor } from './util/errors';
export type { ErrorCode } from './util/errors';
