/**
 * Opening an engine: option checks, the LOCK, recovery, and the clean-up that follows it.
 * Engine.open (engine.ts) delegates here and gets back a running engine.
 *
 * Contract, in order:
 * 1. The options are validated before anything on disk is touched (INVALID_ARGUMENT).
 * 2. The directory is created if missing (unless createIfMissing is false), and the LOCK taken
 *    (lockFile.ts): one engine per directory, across processes.
 * 3. Manifest recovery (manifest.ts): the state CURRENT names, or an empty one for a new
 *    database; errorIfExists / createIfMissing are enforced here. A database RocksDB made is
 *    checked here too: the manifest, then its newest OPTIONS file (rocksdbOptions.ts), and WAL
 *    replay (step 5) refuses records it cannot honour; each refusal is NOT_SUPPORTED naming the
 *    feature, and comes before anything is written (the LOCK is put back as it was).
 * 4. No file number in use may be handed out again: the next file number is raised past every
 *    numbered file in the directory, whatever the manifest last recorded.
 * 5. WAL replay (walReplay.ts): every WAL at or after the manifest's log number, oldest first,
 *    into memtables (a torn tail is dropped and reported, corruption in the middle is an error).
 *    If the replayed data outgrew one write buffer it is flushed to L0 right away, so that a WAL
 *    is always retired whole; otherwise it stays in the memtable and its WALs stay live.
 * 6. A fresh WAL, the table cache, and a fresh manifest (VersionSet writes a snapshot of the
 *    state in RocksDB's encoding and points CURRENT at it: this is also the upgrade of a
 *    database in the engine's older manifest encoding), then IDENTITY if missing and a fresh
 *    OPTIONS file recording the options the engine runs with.
 * 7. The engine is built on all of that; then files no state refers to are deleted (obsolete
 *    WALs, tables, manifests, older OPTIONS files, temp files) and importers' abandoned scratch directories removed
 *    (scratchDirs.ts); then compactions the recovered levels call for are scheduled.
 * Until step 7's clean-up has run, any failure closes what was opened, newest first, releases
 * the LOCK and rethrows the first error.
 *
 * Read-only (EngineOptions.readOnly, RocksDB's OpenForReadOnly; openReadOnly below): steps 1, 3
 * and 4 as above, but no directory is created and no LOCK taken; step 5 replays the WALs into
 * memory only (every replayed memtable is kept, the older ones as immutable memtables, since
 * nothing may be flushed); step 6 opens the table cache and adopts the recovered manifest as it
 * is; step 7 deletes nothing and schedules nothing. Nothing in the directory is written.
 */
import * as fs from 'fs';
import * as path from 'path';
import { IngestError, assert } from '../util/errors';
import { BlockCache } from '../sstable/reader/blockCache';
import type { EngineOptions } from './engineOptions';
import { DbLock } from './lockFile';
import { removeAbandonedScratchDirs } from './scratchDirs';
import { FileKind, logFileName, manifestFileName, parseFileName } from './fileNames';
import { removeIfExists } from './durableFs';
import { BYTEWISE_COMPARATOR_NAME, ManifestState, emptyManifestState, recoverManifest } from './manifest';
import { LogWriter } from './wal/logWriter';
import { TableReader } from '../sstable/reader/tableReader';
import { DEFAULT_TABLE_BUILDER_OPTIONS } from '../sstwriter/tableBuilder';
import { OptionsSettings, ensureIdentity, refuseUnsupportedOptions, writeOptionsFile } from './rocksdbOptions';
import { tableFileName } from './fileNames';
import { DroppedTail } from './wal/logReader';
import { replayLogs } from './walReplay';
import { Memtable, MemtableOptions } from './memtable/memtable';
import { MAX_ARENA_BYTES } from './memtable/skiplist';
import { DEFAULT_LATCH_WAIT_TIMEOUT_MS } from './spanLatches';
import { VersionSet } from './versionSet';
import { TableCache } from './tableCache';
import { FlushOptions, flushMemtableSync } from './flush';
import { resolveCompactionOptions } from './compaction/compactionOptions';

/** What recovery found, for logs and tests. */
export interface RecoveryReport {
  /** WALs replayed, oldest first. */
  logsReplayed: number[];
  batchesReplayed: number;
  /** WALs whose torn tail was dropped. */
  droppedTails: Array<{ logNumber: number } & DroppedTail>;
  /** Tables written because the replayed data outgrew one write buffer. */
  tablesFlushedAtOpen: number;
}

/** Everything open recovered and created, handed to the engine it builds. */
export interface RecoveredEngine {
  dir: string;
  writeBufferSizeBytes: number;
  maxImmutableMemtables: number;
  /** Default for WriteOptions.sync. */
  sync: boolean;
  /** How a new memtable is made: where its arena starts (see initialArenaSize), its filter. */
  memtableOptions: MemtableOptions;
  /** Options for flushed tables; shouldAbort never aborts (the engine sets its own). */
  flushOptions: Omit<FlushOptions, 'fileNumber'>;
  /** null when read-only. */
  lock: DbLock | null;
  versions: VersionSet;
  tableCache: TableCache;
  /** EngineOptions.latchWaitTimeoutMs, validated. */
  latchWaitTimeoutMs: number;
  /** The active memtable: the replayed data, or empty. */
  mem: Memtable;
  /** Replayed memtables older than `mem`, oldest first: kept only when read-only (else flushed at open). */
  immutableMems: Memtable[];
  /** null when read-only. */
  wal: LogWriter | null;
  readOnly: boolean;
  /** WAL numbers on disk that may still hold unflushed data, ascending (the new WAL last). */
  liveLogNumbers: number[];
  report: RecoveryReport;
}

/**
 * What openEngine needs back from the engine it builds: the version set reports obsolete tables
 * from the moment it exists, and the engine alone may delete them (it evicts its table cache).
 */
export interface EngineBinding<E> {
  engine: E;
  /** Deletes the table file no live version holds any more. */
  deleteObsoleteTable(fileNumber: number): void;
  /** Schedules whatever compactions the recovered levels call for. */
  scheduleCompactions(): void;
}

/** The block cache an engine opens with when its options name none (EngineOptions.blockCacheSizeBytes). */
const DEFAULT_BLOCK_CACHE_BYTES = 32 * 1024 * 1024;

const DEFAULTS = {
  writeBufferSizeBytes: 64 * 1024 * 1024,
  maxImmutableMemtables: 2,
  blockCacheSizeBytes: DEFAULT_BLOCK_CACHE_BYTES,
  maxOpenFiles: 1000,
  flushSliceEntries: 4096,
};
/** Writes smaller than this would make every few writes a flush; refuse them as misconfiguration. */
const MIN_WRITE_BUFFER_BYTES = 4 * 1024;
/** Room past the write buffer for the write that fills it (a larger batch makes the arena grow once). */
const ARENA_SLACK_BYTES = 1024 * 1024;

/** The open options with their defaults, validated. */
interface OpenLimits {
  writeBufferSizeBytes: number;
  maxImmutableMemtables: number;
  maxOpenFiles: number;
  flushSliceEntries: number;
  latchWaitTimeoutMs: number;
  createIfMissing: boolean;
  /** EngineOptions.memtableFilter. */
  memtableFilter: boolean;
}

function invalid(message: string): IngestError {
  return new IngestError('INVALID_ARGUMENT', message);
}

/** A database path that is a file, not a directory: INVALID_ARGUMENT naming it (exit 2), not a stack trace from the LOCK's open. */
export function checkDatabaseDir(dir: string): void {
  let isDir: boolean;
  try {
    isDir = fs.statSync(dir).isDirectory();
  } catch {
    return;
  }
  if (!isDir) throw invalid(`database path ${dir} is not a directory`);
}

/**
 * Opens (or creates) the database in `dir` (see the module comment). `build` makes the engine
 * from the recovered state; it runs once, after recovery and before the clean-up.
 */
export function openEngine<E>(dir: string, options: EngineOptions, build: (recovered: RecoveredEngine) => EngineBinding<E>): E {
  const limits = resolveOpenLimits(options);
  if (options.readOnly === true) return openReadOnly(dir, options, limits, build);
  if (!fs.existsSync(dir)) {
    if (!limits.createIfMissing) throw invalid(`database directory ${dir} does not exist (createIfMissing is false)`);
    try {
      fs.mkdirSync(dir, { recursive: true });
    } catch (err) {
      throw new IngestError('IO', `cannot create the database directory ${dir}: ${(err as Error).message}`, { cause: err });
    }
  }
  checkDatabaseDir(dir);
  const lock = DbLock.acquire(dir);
  // Emptied once open succeeds; until then every failure runs these, newest first.
  let closeOnFailure: Array<() => void> = [];
  try {
    const recovered = recoverManifest(dir);
    if (recovered === null && !limits.createIfMissing) throw invalid(`${dir} holds no database (createIfMissing is false)`);
    if (recovered !== null && options.errorIfExists === true) throw invalid(`database ${dir} already exists (errorIfExists is true)`);
    const state: ManifestState = recovered?.state ?? emptyManifestState();
    state.comparator = BYTEWISE_COMPARATOR_NAME;
    const names = fs.readdirSync(dir);
    checkLiveTableSizes(dir, state);
    refuseUnsupportedOptions(dir, names, () => anyMergeOperands(dir, state));
    const logsToReplay = reserveFileNumbers(state, names);

    const table = { ...options.table, columnFamilyId: 0, columnFamilyName: 'default' };
    const flushOptions: Omit<FlushOptions, 'fileNumber'> = {
      dir,
      table,
      entriesPerSlice: limits.flushSliceEntries,
      shouldAbort: () => false,
    };
    const memtableOptions = memtableOptionsOf(limits);
    const replayed = replayWals(state, logsToReplay, flushOptions, limits.writeBufferSizeBytes, memtableOptions);

    const walNumber = state.nextFileNumber++;
    const wal = LogWriter.create(logFileName(dir, walNumber));
    closeOnFailure.push(() => wal.close());
    replayed.liveLogNumbers.push(walNumber);
    state.logNumber = replayed.liveLogNumbers[0];

    const tableCache = new TableCache(dir, {
      maxOpenFiles: limits.maxOpenFiles,
      blockCache: options.blockCache ?? new BlockCache(options.blockCacheSizeBytes ?? DEFAULTS.blockCacheSizeBytes),
    });
    closeOnFailure.push(() => tableCache.close());
    // The version set writes the new manifest (a snapshot of `state`) and points CURRENT at it.
    // Its obsolete-table reports go to the engine once it is built; until then they are dropped
    // (deleteUnreferencedFiles below removes every table file no live version holds).
    let obsoleteHandler: (n: number) => void = () => undefined;
    const optionsNumber = state.nextFileNumber++; // before the snapshot, so the manifest covers it
    const versions = new VersionSet(dir, state, recovered?.manifestNumber ?? null, {
      maxManifestFileSizeBytes: options.maxManifestFileSizeBytes,
      onObsoleteFile: (n) => obsoleteHandler(n),
    });
    closeOnFailure.push(() => versions.close());
    ensureIdentity(dir);
    writeOptionsFile(dir, optionsNumber, optionsSettings(limits, options));

    const binding = build({
      ...writeSettings(dir, limits, options, memtableOptions),
      flushOptions,
      lock,
      versions,
      tableCache,
      wal,
      immutableMems: [],
      readOnly: false,
      ...replayed,
    });
    obsoleteHandler = (n) => binding.deleteObsoleteTable(n);
    deleteUnreferencedFiles(dir, versions, names, optionsNumber);
    removeAbandonedScratchDirs(dir, names);
    closeOnFailure = [];
    binding.scheduleCompactions();
    return binding.engine;
  } catch (err) {
    closeAll(closeOnFailure.reverse());
    lock.release();
    throw err;
  }
}

/**
 * The read-only open (see the module comment): recovery into memory, nothing written. The
 * directory must hold a database.
 */
function openReadOnly<E>(
  dir: string,
  options: EngineOptions,
  limits: OpenLimits,
  build: (recovered: RecoveredEngine) => EngineBinding<E>,
): E {
  if (!fs.existsSync(dir)) throw invalid(`database directory ${dir} does not exist (a read-only open creates nothing)`);
  checkDatabaseDir(dir);
  const recovered = recoverManifest(dir);
  if (recovered === null) throw invalid(`${dir} holds no database (a read-only open creates nothing)`);
  const state = recovered.state;
  state.comparator = BYTEWISE_COMPARATOR_NAME;
  const names = fs.readdirSync(dir);
  checkLiveTableSizes(dir, state);
  refuseUnsupportedOptions(dir, names, () => anyMergeOperands(dir, state));
  const logsToReplay = reserveFileNumbers(state, names);
  const memtableOptions = memtableOptionsOf(limits);
  const replay = replayLogs(dir, logsToReplay, {
    writeBufferSizeBytes: limits.writeBufferSizeBytes,
    memtable: memtableOptions,
    lastSequence: state.lastSequence,
  });
  state.lastSequence = replay.lastSequence;
  const tableCache = new TableCache(dir, {
    maxOpenFiles: limits.maxOpenFiles,
    blockCache: options.blockCache ?? new BlockCache(options.blockCacheSizeBytes ?? DEFAULTS.blockCacheSizeBytes),
  });
  const versions = new VersionSet(dir, state, recovered.manifestNumber, {
    onObsoleteFile: () => undefined,
    readOnlyManifestNumber: recovered.manifestNumber,
  });
  const table = { ...options.table, columnFamilyId: 0, columnFamilyName: 'default' };
  return build({
    ...writeSettings(dir, limits, options, memtableOptions),
    flushOptions: { dir, table, entriesPerSlice: limits.flushSliceEntries, shouldAbort: () => false },
    lock: null,
    versions,
    tableCache,
    wal: null,
    mem: replay.memtables[replay.memtables.length - 1],
    immutableMems: replay.memtables.slice(0, -1),
    readOnly: true,
    liveLogNumbers: logsToReplay.length > 0 ? logsToReplay : [state.logNumber],
    report: { logsReplayed: logsToReplay, batchesReplayed: replay.batches, droppedTails: replay.droppedTails, tablesFlushedAtOpen: 0 },
  }).engine;
}

/** Runs every close; errors are swallowed (already failing: the first error is the one to report). */
/** The settings of an engine's write path, the same for a read-write and a read-only open. */
function writeSettings(dir: string, limits: OpenLimits, options: EngineOptions, memtableOptions: MemtableOptions) {
  return {
    dir,
    writeBufferSizeBytes: limits.writeBufferSizeBytes,
    maxImmutableMemtables: limits.maxImmutableMemtables,
    sync: options.sync ?? false,
    latchWaitTimeoutMs: limits.latchWaitTimeoutMs,
    memtableOptions,
  };
}

function closeAll(closes: ReadonlyArray<() => void>): void {
  for (const f of closes) {
    try {
      f();
    } catch {
      // See above.
    }
  }
}

function resolveOpenLimits(options: EngineOptions): OpenLimits {
  const writeBufferSizeBytes = options.writeBufferSizeBytes ?? DEFAULTS.writeBufferSizeBytes;
  if (!Number.isSafeInteger(writeBufferSizeBytes) || writeBufferSizeBytes < MIN_WRITE_BUFFER_BYTES) {
    throw invalid(`writeBufferSizeBytes must be an integer >= ${MIN_WRITE_BUFFER_BYTES}, got ${writeBufferSizeBytes}`);
  }
  const maxImmutableMemtables = options.maxImmutableMemtables ?? DEFAULTS.maxImmutableMemtables;
  if (!Number.isInteger(maxImmutableMemtables) || maxImmutableMemtables < 1) {
    throw invalid(`maxImmutableMemtables must be an integer >= 1, got ${maxImmutableMemtables}`);
  }
  const maxOpenFiles = options.maxOpenFiles ?? DEFAULTS.maxOpenFiles;
  if (!Number.isInteger(maxOpenFiles) || maxOpenFiles < 1) throw invalid(`maxOpenFiles must be an integer >= 1, got ${maxOpenFiles}`);
  resolveCompactionOptions(options); // validates before anything is touched
  const flushSliceEntries = options.flushSliceEntries ?? DEFAULTS.flushSliceEntries;
  if (!Number.isInteger(flushSliceEntries) || flushSliceEntries < 1) throw invalid(`flushSliceEntries must be an integer >= 1`);
  const latchWaitTimeoutMs = options.latchWaitTimeoutMs ?? DEFAULT_LATCH_WAIT_TIMEOUT_MS;
  if (!(typeof latchWaitTimeoutMs === 'number' && latchWaitTimeoutMs > 0)) {
    throw invalid(`latchWaitTimeoutMs must be a positive number of milliseconds, got ${String(latchWaitTimeoutMs)}`);
  }
  const memtableFilter: unknown = options.memtableFilter ?? true;
  if (typeof memtableFilter !== 'boolean') throw invalid(`memtableFilter must be true or false, got ${String(memtableFilter)}`);
  return {
    writeBufferSizeBytes,
    maxImmutableMemtables,
    maxOpenFiles,
    flushSliceEntries,
    latchWaitTimeoutMs,
    createIfMissing: options.createIfMissing ?? true,
    memtableFilter,
  };
}

/**
 * Raises state.nextFileNumber past every numbered file in `names` (no number in use may be
 * handed out again, whatever the manifest last recorded); returns the WALs at or after the
 * manifest's log number, ascending: the ones to replay.
 */
function reserveFileNumbers(state: ManifestState, names: readonly string[]): number[] {
  const logsToReplay: number[] = [];
  for (const name of names) {
    const parsed = parseFileName(name);
    if (parsed === null || parsed.number < 0) continue;
    if (parsed.number >= state.nextFileNumber) state.nextFileNumber = parsed.number + 1;
    if (parsed.kind === FileKind.Log && parsed.number >= state.logNumber) logsToReplay.push(parsed.number);
  }
  logsToReplay.sort((a, b) => a - b);
  return logsToReplay;
}

/**
 * Replays `logsToReplay` into memtables, advancing state.lastSequence. More than one write
 * buffer's worth is flushed to L0 at once (added to state's level 0) so that the WALs retire
 * whole; then the active memtable starts empty and no replayed WAL stays live.
 */
function replayWals(
  state: ManifestState,
  logsToReplay: number[],
  flushOptions: Omit<FlushOptions, 'fileNumber'>,
  writeBufferSizeBytes: number,
  memtableOptions: MemtableOptions,
): { mem: Memtable; liveLogNumbers: number[]; report: RecoveryReport } {
  const replay = replayLogs(flushOptions.dir, logsToReplay, {
    writeBufferSizeBytes,
    memtable: memtableOptions,
    lastSequence: state.lastSequence,
  });
  state.lastSequence = replay.lastSequence;
  const report: RecoveryReport = {
    logsReplayed: logsToReplay,
    batchesReplayed: replay.batches,
    droppedTails: replay.droppedTails,
    tablesFlushedAtOpen: 0,
  };
  let mem = replay.memtables[replay.memtables.length - 1];
  let liveLogNumbers = logsToReplay.slice();
  if (replay.memtables.length > 1) {
    for (const m of replay.memtables) {
      const fileNumber = state.nextFileNumber++;
      const meta = flushMemtableSync(m, { ...flushOptions, fileNumber });
      if (meta !== null) {
        state.levels[0].set(meta.fileNumber, meta);
        report.tablesFlushedAtOpen++;
      }
    }
    mem = new Memtable(memtableOptions);
    liveLogNumbers = [];
  } else if (mem.isEmpty) {
    liveLogNumbers = [];
  }
  return { mem, liveLogNumbers, report };
}

/** After recovery: removes files no state refers to (left by crashes or retired before one). */
function deleteUnreferencedFiles(dir: string, versions: VersionSet, names: readonly string[], optionsNumber: number): void {
  const manifestNumber = versions.manifestFileNumber;
  for (const name of names) {
    const parsed = parseFileName(name);
    if (parsed === null) continue;
    let obsolete = false;
    switch (parsed.kind) {
      case FileKind.Log:
        obsolete = parsed.number < versions.logNumber;
        break;
      case FileKind.Table:
        obsolete = !versions.isLive(parsed.number);
        break;
      case FileKind.Manifest:
        obsolete = parsed.number !== manifestNumber;
        break;
      case FileKind.Options:
        obsolete = parsed.number !== optionsNumber;
        break;
      case FileKind.Temp:
        obsolete = true;
        break;
      default:
        obsolete = false;
    }
    if (obsolete) removeIfExists(path.join(dir, name));
  }
  assert(fs.existsSync(manifestFileName(dir, manifestNumber)), 'the live manifest exists');
}

/**
 * Every table the MANIFEST names is there at the size it records: a table changed or truncated
 * behind the database's back (a file an ingestion linked and its owner then rewrote) would
 * otherwise read as other data or fail deep in a read. CORRUPTION naming the file, as RocksDB's
 * "file is too short" or size-mismatch check does at open. One stat per table.
 */
function checkLiveTableSizes(dir: string, state: ManifestState): void {
  for (const level of state.levels) {
    for (const file of level.values()) {
      const name = tableFileName(dir, file.fileNumber);
      let size: number;
      try {
        size = fs.statSync(name).size;
      } catch (err) {
        throw new IngestError('CORRUPTION', `table ${name}, named by the MANIFEST, cannot be read: ${(err as Error).message}`, {
          cause: err,
        });
      }
      if (size !== file.fileSizeBytes)
        throw new IngestError(
          'CORRUPTION',
          `table ${name} is ${size} bytes but the MANIFEST records ${file.fileSizeBytes}: it was changed or truncated outside the database`,
        );
    }
  }
}

/**
 * Whether a live table holds merge operands (its rocksdb.merge.operands property). Reads each
 * file's footer and properties; asked only of databases whose OPTIONS name a merge operator.
 */
function anyMergeOperands(dir: string, state: ManifestState): boolean {
  for (const level of state.levels) {
    for (const file of level.values()) {
      const reader = TableReader.open(tableFileName(dir, file.fileNumber), { fileNumber: file.fileNumber });
      try {
        if (reader.properties.numMergeOperands > 0) return true;
      } finally {
        reader.close();
      }
    }
  }
  return false;
}

/** What the engine's OPTIONS file records (rocksdbOptions.ts): the options it was opened with. */
function optionsSettings(limits: OpenLimits, options: EngineOptions): OptionsSettings {
  const c = resolveCompactionOptions(options);
  const t = { ...DEFAULT_TABLE_BUILDER_OPTIONS, ...options.table };
  return {
    writeBufferSizeBytes: limits.writeBufferSizeBytes,
    maxImmutableMemtables: limits.maxImmutableMemtables,
    maxOpenFiles: limits.maxOpenFiles,
    numLevels: c.numLevels,
    level0FileNumCompactionTrigger: c.level0FileNumCompactionTrigger,
    level0SlowdownWritesTrigger: c.level0SlowdownWritesTrigger,
    level0StopWritesTrigger: c.level0StopWritesTrigger,
    maxBytesForLevelBase: c.maxBytesForLevelBase,
    maxBytesForLevelMultiplier: c.maxBytesForLevelMultiplier,
    targetFileSizeBytes: c.targetFileSizeBytes,
    disableAutoCompactions: c.disableAutoCompactions,
    compactionPri: c.compactionPri,
    compression: t.compression,
    checksumType: t.checksumType,
    formatVersion: t.formatVersion,
    blockSizeBytes: t.blockSizeBytes,
    blockRestartInterval: t.blockRestartInterval,
    bloomBitsPerKey: t.bloomBitsPerKey,
    memtableFilter: limits.memtableFilter,
  };
}

/**
 * A new memtable's arena is reserved at the write buffer's size (plus slack) up front, so it never
 * has to grow by copying: with a 64 MiB buffer, doubling from 16 KiB..4 MiB copied the arena on the
 * writers' thread at 32, 64 and 128 MiB, holding every writer up for 48, 95 and 187 ms (measured
 * with a busy writer). The reservation costs address space, not memory: the kernel hands out the
 * zeroed pages of a large allocation as they are first written, so RSS grows with the data as
 * before.
 */
function initialArenaSize(writeBufferSizeBytes: number): number {
  return Math.min(MAX_ARENA_BYTES, writeBufferSizeBytes + ARENA_SLACK_BYTES);
}

/** How the engine makes its memtables: the arena above, and the filter unless turned off. */
function memtableOptionsOf(limits: OpenLimits): MemtableOptions {
  return { initialArenaBytes: initialArenaSize(limits.writeBufferSizeBytes), filter: limits.memtableFilter };
}
