/**
 * The engine: a persistent LSM key-value store over one directory.
 *
 * Directory layout: see fileNames.ts. Durable state is the MANIFEST (which table files, in which
 * levels; see manifest.ts) plus the write-ahead logs not yet flushed into tables.
 *
 * Writes: every write is a batch (put/delete/deleteRange are one-record batches). A batch gets
 * consecutive sequence numbers, is appended to the WAL as one record (fdatasynced when `sync`),
 * then inserted into the active memtable. A batch is therefore durable and visible as a whole or
 * not at all. When the active memtable reaches writeBufferSizeBytes, it becomes immutable and a
 * new memtable and a new WAL take over; a background flush writes immutable memtables, oldest
 * first, to L0 tables and logs each in the manifest together with the new oldest live WAL number,
 * after which older WALs are deleted. Past maxImmutableMemtables unflushed memtables, writers
 * wait (never fail) for a flush to finish.
 *
 * Reads: a read sees everything up to a sequence number: the latest, or a snapshot's. `get`
 * asks the active memtable, the immutable ones newest first, each L0 file whose key range
 * covers the key (newest first), then at most one file per deeper level found by binary search;
 * a table consults its Bloom filter before reading any data block. The first version found
 * decides (a point deletion means absent). Iterators merge all of these (see dbIterator.ts).
 * Reads are synchronous calls (get, getSnapshot, newIterator and every iterator step): memtables
 * are in memory and table blocks are read with synchronous I/O (sstable/reader: readSync through
 * the table cache), so a read never waits on anything but the disk; writes return promises
 * because a write may have to wait (for room in the memtable, for an ingestion's span latch).
 * Range deletions go through the WAL and the memtable like other writes, are written into the
 * range-deletion block of flushed and compacted tables, and hide every key they cover from reads
 * at or after their sequence number: `get` raises a covering sequence source by source, iterators
 * consult a RangeDelAggregator fed by memtables and by each file as it is opened.
 *
 * Compaction (compaction/): leveled, in the background, one job at a time, in slices like flush
 * (compactionScheduler.ts); `compactRange` compacts a key range down on request. Versions are
 * reference-counted: an iterator holds the version it reads, so files a compaction replaces stay
 * readable until it closes, and a table file is deleted only once no live version holds it.
 *
 * Ingestion (ingest/): ingestExternalFiles links external SSTs into the levels in one manifest
 * edit, each with the global sequence number the manifest records for it (ingestionJob.ts). The
 * engine lends it a narrow view of itself (ingestionHost()), stops writes for it on request, and
 * keeps running compactions' output ranges (runningCompactions) for its level placement.
 *
 * Recovery (Engine.open, carried out by open.ts): take the LOCK, replay the manifest, replay every
 * WAL at or after the manifest's log number into a memtable (a torn tail is dropped, corruption
 * in the middle is an error), then start a fresh WAL and a fresh manifest, delete files no state
 * refers to, and remove the scratch directories of importers that died (scratchDirs.ts). If the
 * replayed data outgrew one write buffer it is flushed to L0 right away, so that a WAL is always
 * retired whole; otherwise it stays in the memtable and its WALs stay live. This file holds the
 * running engine. Opened with readOnly (RocksDB's OpenForReadOnly), it takes no LOCK and writes
 * nothing: the replayed WALs stay in memory (older memtables as immutable ones), and every write,
 * flush, compaction and ingestion fails with NOT_SUPPORTED (checkWritable). close() flushes nothing: it stops a running flush (its partial file is
 * deleted; the data is still in the WALs), syncs the WAL, and releases the LOCK.
 */
import { setImmediate as yieldToEventLoop } from 'timers/promises';
import { IngestError, assert, isNoSpaceError } from '../util/errors';
import { SeekKeyBuilder, ValueType, formatKey } from '../base/internalKey';
import { DbLock } from './lockFile';
import { logFileName, tableFileName } from './fileNames';
import { removeIfExists, syncDir, syncDirAsync } from './durableFs';
import { LogWriter } from './wal/logWriter';
import { WriteBatch, WriteBatchVisitor, iterateRecords } from './writeBatch';
import { MemtableInserter } from './walReplay';
import { RecoveredEngine, RecoveryReport, openEngine } from './open';
import { LookupResult, LookupValue, Memtable, MemtableOptions, RangeTombstone } from './memtable/memtable';
import { KeyHash } from './memtable/memtableFilter';
import { VersionSet } from './versionSet';
import { Version, fileMayContain, findFile, compareUserKeyToFileBound } from './version';
import { TableCache, TableHandle } from './tableCache';
import type { BlockCache } from '../sstable/reader/blockCache';
import { ABORTED, FlushOptions, flushMemtable } from './flush';
import { FileMetaData, NUM_LEVELS, VersionEdit } from './versionEdit';
import { MergingIterator } from './mergingIterator';
import { LevelIterator } from './levelIterator';
import { BoundedInternalIterator, PerKeyBoundsIterator } from './boundedIterator';
import { DbIterator } from './dbIterator';
import { CompactionScheduler, CompactionStats } from './compaction/compactionScheduler';
import { CompactionOptions, resolveCompactionOptions } from './compaction/compactionOptions';
import { WriteDelay } from './writeDelay';
// Ingestion (issue 7): the job lives in ingest/; the engine exposes the hooks it needs.
import { RunningCompactions } from './runningCompactions';
import { IngestionHost } from './ingest/ingestionHost';
import { IngestOptions, IngestionPlan, IngestionResult, ingestExternalFiles, planIngestion } from './ingest/ingestionJob';
import { CheckedIngestion, IngestionCheck, ingestExternalFilesChecked } from './ingest/checkedIngestion';
import { HeldLatch, SpanLatches } from './spanLatches';
import { RangeDelAggregator } from './rangedel/rangeDelAggregator';
import { PinnedSequences, Snapshot } from './snapshot';
import { EngineOptions } from './engineOptions';
import { maxCoveringSeq } from './rangedel/tombstoneIndex';
import { BytesInput, toBytes, toBytesOrUndefined } from './bytesInput';

export type { EngineOptions, EngineTableOptions } from './engineOptions';
export { Snapshot } from './snapshot';
export { DEFAULT_LATCH_WAIT_TIMEOUT_MS } from './spanLatches';
export type { BytesInput } from './bytesInput';

export interface WriteOptions {
  /** fdatasync the WAL before the write returns. */
  sync?: boolean;
}

export interface ReadOptions {
  snapshot?: Snapshot;
}

export interface IteratorOptions extends ReadOptions {
  /** Inclusive lower bound (user key). Held by reference: do not modify it while iterating. */
  lowerBound?: BytesInput;
  /** Exclusive upper bound (user key). Held by reference: do not modify it while iterating. */
  upperBound?: BytesInput;
}

// Defined with the recovery that fills it in (open.ts); exported here with Engine.recovery's type.
export type { RecoveryReport } from './open';

export interface EngineStats {
  lastSequence: number;
  activeMemtableBytes: number;
  immutableMemtables: number;
  filesPerLevel: number[];
  flushes: number;
  /** Writes that had to wait for a flush. */
  writeStalls: number;
  liveSnapshots: number;
  openTables: number;
  walNumber: number;
  manifestNumber: number;
  /** Bytes of table files per level. */
  bytesPerLevel: number[];
  /** Compaction scores per level (>= 1: due; see compaction/compactionPicker.ts). */
  levelScores: number[];
  /** Bytes of L0 files written by flushes (write amplification = (flush + compaction bytes) / this). */
  flushBytesWritten: number;
  /** Writes that waited because L0 reached level0StopWritesTrigger (also counted in writeStalls). */
  level0WriteStalls: number;
  /** Writes paced because L0 reached level0SlowdownWritesTrigger, and the time they were told to wait. */
  delayedWrites: number;
  writeDelayMs: number;
  compaction: CompactionStats;
  /** Span latches (spanLatches.ts): held now, waits of writes on one, waits that timed out. */
  latches: { held: number; writesDelayed: number; timeouts: number };
}

interface ImmutableMemtable {
  mem: Memtable;
  /** The WAL the next memtable writes to: once this one is flushed, older WALs are obsolete. */
  logNumberAfterFlush: number;
}

/** Visits a batch's records for the first one a held span latch covers. */
class BatchLatchProbe implements WriteBatchVisitor {
  private found: HeldLatch | null = null;
  constructor(private readonly latches: SpanLatches) {}

  find(batch: WriteBatch): HeldLatch | null {
    this.found = null;
    iterateRecords(batch.encoded(), 0, this, { file: '<write batch>', offset: 0 });
    return this.found;
  }

  put(key: Buffer): void {
    if (this.found === null) this.found = this.latches.blockerOfKey(key);
  }

  delete(key: Buffer): void {
    if (this.found === null) this.found = this.latches.blockerOfKey(key);
  }

  deleteRange(start: Buffer, end: Buffer): void {
    if (this.found === null) this.found = this.latches.blockerOfRange(start, end);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function invalid(message: string): IngestError {
  return new IngestError('INVALID_ARGUMENT', message);
}

export class Engine {
  readonly dir: string;
  readonly recovery: RecoveryReport;
  private readonly writeBufferSizeBytes: number;
  private readonly maxImmutableMemtables: number;
  private readonly syncByDefault: boolean;
  private readonly memtableOptions: MemtableOptions;
  private readonly flushOptions: Omit<FlushOptions, 'fileNumber'>;
  /** null when read-only. */
  private readonly lock: DbLock | null;
  /** Opened with EngineOptions.readOnly: nothing is written (see the module comment). */
  readonly readOnly: boolean;
  private readonly versions: VersionSet;
  private readonly tableCache: TableCache;
  private readonly snapshots = new PinnedSequences();

  private mem: Memtable;
  /** The WAL, through `wal`; null when read-only (no write gets as far as the WAL then). */
  private walOrNull: LogWriter | null;
  private readonly imms: ImmutableMemtable[] = [];
  /** WAL numbers on disk that may still hold unflushed data, ascending. */
  private liveLogNumbers: number[];

  private flushRunning: Promise<void> | null = null;
  /** Background and manual compactions (compaction/compactionScheduler.ts). */
  private readonly compactions: CompactionScheduler;
  private flushBytesWritten = 0;
  private level0StallCount = 0;
  /** Paces writes while L0 is past the slowdown trigger (writeDelay.ts). */
  private readonly writeDelay: WriteDelay;
  private delayedWriteCount = 0;
  private writeDelayMs = 0;
  private flushWaiters: Array<() => void> = [];
  private backgroundError: Error | null = null;
  /** The background error is a flush that found the disk full while writing its table: resume() may retry it. */
  private backgroundErrorResumable = false;
  /** The background error is the WAL's: resume() must switch to a new log before anything else. */
  private walFailed = false;
  private closing = false;
  private closed = false;
  private closePromise: Promise<void> | null = null;
  private flushCount = 0;
  private stallCount = 0;
  /**
   * Output ranges of running compactions, by output level: a compaction registers its range
   * before it first yields and releases it when its edit is installed or it fails (see
   * runningCompactions.ts). Ingestion's level placement reads it.
   */
  readonly runningCompactions = new RunningCompactions();
  /** Set while an ingestion has writes stopped (stopWrites): writers wait on it. */
  private writesResumed: Promise<void> | null = null;
  private resumeWriters: (() => void) | null = null;
  private writeStops = 0;

  /** Spans held by ingestions; writes into them wait (spanLatches.ts). */
  private readonly latches = new SpanLatches();
  private readonly latchWaitTimeoutMs: number;
  /** Finds the first latch a batch's records run into (reused: no allocation per write). */
  private readonly batchLatchProbe = new BatchLatchProbe(this.latches);

  /**
   * The newest WAL's directory entry may not be durable yet: a memtable switch syncs the directory
   * on the thread pool, and a synced write that comes first syncs it itself before it is
   * acknowledged (commit). The generation tells a finished sync whether a newer WAL came since.
   */
  private walDirPending = false;
  private walDirGeneration = 0;
  private walDirSyncing: Promise<void> = Promise.resolve();

  private readonly inserter = new MemtableInserter();
  private readonly scratchBatch = new WriteBatch();
  private readonly lookup: LookupValue = { value: null, seq: 0 };
  /** get()'s key hash for the memtable filters. */
  private readonly lookupKeyHash = new KeyHash();
  /** getFromFile's second result when it finds nothing (see there). */
  private coveringSeqAfterFile = 0;
  private readonly seekKeys = new SeekKeyBuilder();

  /** Engine.open builds the engine on what recovery left (open.ts). */
  private constructor(recovered: RecoveredEngine, compactionOptions: CompactionOptions) {
    const dir = recovered.dir;
    const tableCache = recovered.tableCache;
    this.dir = dir;
    this.writeBufferSizeBytes = recovered.writeBufferSizeBytes;
    this.maxImmutableMemtables = recovered.maxImmutableMemtables;
    this.syncByDefault = recovered.sync;
    this.memtableOptions = recovered.memtableOptions;
    // A background flush stops at its next slice once close() begins.
    this.flushOptions = { ...recovered.flushOptions, shouldAbort: () => this.closing };
    this.lock = recovered.lock;
    this.readOnly = recovered.readOnly;
    this.versions = recovered.versions;
    this.tableCache = tableCache;
    this.mem = recovered.mem;
    for (const mem of recovered.immutableMems) this.imms.push({ mem, logNumberAfterFlush: recovered.versions.logNumber });
    this.walOrNull = recovered.wal;
    this.liveLogNumbers = recovered.liveLogNumbers;
    this.recovery = recovered.report;
    this.latchWaitTimeoutMs = recovered.latchWaitTimeoutMs;
    const resolvedCompaction = resolveCompactionOptions(compactionOptions);
    this.compactions = new CompactionScheduler(
      {
        dir,
        tableCache,
        table: this.flushOptions.table,
        runningCompactions: this.runningCompactions,
        currentVersion: () => this.versions.current,
        snapshotSequences: () => this.snapshotSequences(),
        newFileNumber: () => this.versions.newFileNumber(),
        isClosing: () => this.closing || this.closed,
        checkWritable: () => this.checkWritable(),
        install: (edit) => {
          syncDir(this.dir); // output tables' names, before the manifest refers to them
          this.versions.logAndApply(edit);
        },
        onBackgroundError: (err) => {
          if (this.backgroundError === null) this.backgroundError = err;
        },
      },
      resolvedCompaction,
    );
    this.writeDelay = new WriteDelay(resolvedCompaction.delayedWriteRateBytesPerSecond);
  }

  // --- open / close ------------------------------------------------------------------------------

  /**
   * Opens (or creates) the database in `dir`: validates the options, takes the LOCK, recovers the
   * manifest and replays the WALs, and cleans up what no state refers to (see open.ts).
   */
  static async open(dir: string, options: EngineOptions = {}): Promise<Engine> {
    return openEngine(dir, options, (recovered) => {
      const engine = new Engine(recovered, options);
      return {
        engine,
        deleteObsoleteTable: (fileNumber) => engine.deleteObsoleteTable(fileNumber),
        scheduleCompactions: () => engine.compactions.maybeSchedule(),
      };
    });
  }

  /**
   * Closes the database. Nothing is flushed: a running flush is abandoned (its data is still in
   * the WALs, which recovery replays), the WAL is synced, and the LOCK is released.
   */
  close(): Promise<void> {
    if (this.closePromise === null) this.closePromise = this.closeOnce();
    return this.closePromise;
  }

  private async closeOnce(): Promise<void> {
    this.closing = true;
    // Stalled writers wake up and fail with "closed"; a running flush stops at its next slice.
    this.wakeFlushWaiters();
    if (this.flushRunning !== null) await this.flushRunning;
    // A running compaction stops at its next slice and deletes its partial outputs.
    await this.compactions.idle();
    await this.walDirSyncing; // the newest WAL's name, synced on the thread pool
    try {
      this.walOrNull?.sync();
    } finally {
      this.walOrNull?.close();
      this.versions.close();
      this.tableCache.close();
      this.closed = true;
      this.lock?.release();
    }
  }

  // --- writes --------------------------------------------------------------------------------------

  /*
   * Every write resolves to the sequence number of its first record once it is in the WAL (and
   * fdatasynced with sync). A write waits, before committing, while the memtable has no room and
   * while its keys fall inside a span an ingestion has latched; both are re-checked in the same
   * synchronous step as the commit. That waiting is why writes return promises: the commit
   * itself (the WAL append, the fdatasync with sync, the memtable insert) is synchronous.
   * Keys and values are strings (UTF-8) or bytes (bytesInput.ts), converted once here.
   */

  async put(keyInput: BytesInput, valueInput: BytesInput, opts?: WriteOptions): Promise<number> {
    const key = toBytes(keyInput);
    const value = toBytes(valueInput);
    for (;;) {
      while (this.mustMakeRoom()) await this.makeRoomForWrite();
      const latch = this.latches.blockerOfKey(key);
      if (latch === null) break;
      await this.waitForLatch(latch, `a put of ${formatKey(key)}`);
    }
    const b = this.scratchBatch;
    b.clear();
    b.put(key, value);
    return this.commit(b, opts);
  }

  async delete(keyInput: BytesInput, opts?: WriteOptions): Promise<number> {
    const key = toBytes(keyInput);
    for (;;) {
      while (this.mustMakeRoom()) await this.makeRoomForWrite();
      const latch = this.latches.blockerOfKey(key);
      if (latch === null) break;
      await this.waitForLatch(latch, `a delete of ${formatKey(key)}`);
    }
    const b = this.scratchBatch;
    b.clear();
    b.delete(key);
    return this.commit(b, opts);
  }

  /**
   * Deletes every key in [start, end) written before it: one range tombstone, logged and
   * applied like any write; reads at or after its sequence number no longer see those keys.
   */
  async deleteRange(startInput: BytesInput, endInput: BytesInput, opts?: WriteOptions): Promise<number> {
    const start = toBytes(startInput);
    const end = toBytes(endInput);
    for (;;) {
      while (this.mustMakeRoom()) await this.makeRoomForWrite();
      const latch = this.latches.blockerOfRange(start, end);
      if (latch === null) break;
      await this.waitForLatch(latch, `a range deletion [${formatKey(start)}, ${formatKey(end)})`);
    }
    const b = this.scratchBatch;
    b.clear();
    b.deleteRange(start, end);
    return this.commit(b, opts);
  }

  /** Applies a batch atomically. The batch is stamped with its sequence numbers. */
  async write(batch: WriteBatch, opts?: WriteOptions): Promise<number> {
    for (;;) {
      while (this.mustMakeRoom()) await this.makeRoomForWrite();
      const latch = this.latches.heldCount === 0 ? null : this.batchLatchProbe.find(batch);
      if (latch === null) break;
      await this.waitForLatch(latch, `a batch of ${batch.count} records`);
    }
    return this.commit(batch, opts);
  }

  /**
   * Resolves once every write that has returned so far is written to the OS (not fdatasynced):
   * after it, a process crash (SIGKILL) loses none of them, though a machine crash still can,
   * as without `sync`. Unsynced writes reach the OS at the end of the event-loop turn that
   * logged them (wal/logWriter.ts), so this waits for that write rather than issuing its own:
   * everyone who asks in one turn shares one write() (group commit). A server acknowledges a
   * write only after it (src/server/routes/kv.ts), so SIGKILL loses nothing acknowledged.
   */
  flushWal(): Promise<void> {
    return new Promise((resolve, reject) => {
      // Queued after the log writer's own end-of-turn write (immediates run in order).
      setImmediate(() => {
        try {
          if (!this.closed) this.walOrNull?.flush();
          resolve();
        } catch (err) {
          reject(err);
        }
      });
    });
  }

  private waitForLatch(latch: HeldLatch, what: string): Promise<void> {
    this.latches.writesDelayed++;
    return this.latches.waitForRelease(latch, this.latchWaitTimeoutMs, what);
  }

  // --- reads ---------------------------------------------------------------------------------------

  /**
   * The newest value of `key` visible at the read point, or null (absent, deleted, or covered by
   * a newer range tombstone). Sources are asked newest first; before each source's point lookup,
   * its tombstones covering the key raise `coveringSeq`, and the first version found is deleted
   * if its sequence is below it. A source without tombstones adds no comparison.
   * Synchronous (see the module comment).
   */
  get(keyInput: BytesInput, opts?: ReadOptions): Buffer | null {
    this.checkOpen();
    const key = toBytes(keyInput);
    const readSeq = opts?.snapshot?.sequence ?? this.versions.lastSequence;
    const out = this.lookup;
    const keyHash = this.lookupKeyHash.of(key); // once for every memtable's filter
    let coveringSeq = 0;
    for (let i = this.imms.length; i >= 0; i--) {
      const mem = i === this.imms.length ? this.mem : this.imms[i].mem;
      const tombstones = mem.fragmentedRangeTombstones();
      if (tombstones.count > 0) coveringSeq = Math.max(coveringSeq, maxCoveringSeq(tombstones, key, readSeq));
      const r = mem.get(key, readSeq, out, keyHash);
      if (r !== LookupResult.NotFound) return r === LookupResult.Found && out.seq >= coveringSeq ? Buffer.from(out.value as Buffer) : null;
    }
    const version = this.versions.current;
    for (const file of version.files[0]) {
      if (!fileMayContain(file, key)) continue;
      const found = this.getFromFile(file, key, readSeq, coveringSeq);
      if (found !== undefined) return found;
      coveringSeq = this.coveringSeqAfterFile;
    }
    let seekKey: Buffer | null = null;
    for (let level = 1; level < NUM_LEVELS; level++) {
      const files = version.files[level];
      if (files.length === 0) continue;
      if (seekKey === null) seekKey = this.seekKey(key, readSeq);
      // The first file whose largest key is >= (key, readSeq) holds the newest visible version.
      const i = findFile(files, seekKey);
      if (i === files.length || compareUserKeyToFileBound(key, files[i].smallest) < 0) continue;
      const found = this.getFromFile(files[i], key, readSeq, coveringSeq);
      if (found !== undefined) return found;
      coveringSeq = this.coveringSeqAfterFile;
    }
    return null;
  }

  /** Pins the current sequence number; release() it when done. */
  getSnapshot(): Snapshot {
    this.checkOpen();
    return new Snapshot(this.versions.lastSequence, this.snapshots);
  }

  /**
   * An iterator over the keys visible at the read point (the snapshot's, else the latest),
   * within [lowerBound, upperBound): position it (first, seekGE, ...) before reading, and close()
   * it when done, since it pins its read point and the files it reads until then.
   */
  newIterator(opts: IteratorOptions = {}): DbIterator {
    this.checkOpen();
    const readSeq = opts.snapshot?.sequence ?? this.versions.lastSequence;
    // The iterator pins its read point and its version until closed.
    const pin = new Snapshot(readSeq, this.snapshots);
    const version = this.versions.current;
    version.ref();
    const lowerBound = toBytesOrUndefined(opts.lowerBound);
    const upperBound = toBytesOrUndefined(opts.upperBound);
    // Memtables give their tombstones now; level iterators give each file's as they open it.
    const rangeDel = new RangeDelAggregator();
    const children: BoundedInternalIterator[] = [];
    for (let i = this.imms.length; i >= 0; i--) {
      const mem = i === this.imms.length ? this.mem : this.imms[i].mem;
      rangeDel.addSource(mem.fragmentedRangeTombstones());
      children.push(new PerKeyBoundsIterator(mem.newIterator(), lowerBound, upperBound));
    }
    // Each L0 file is its own sorted run; deeper levels are one run each.
    for (const file of version.files[0]) children.push(new LevelIterator([file], this.tableCache, lowerBound, upperBound, { rangeDel }));
    for (let level = 1; level < NUM_LEVELS; level++) {
      if (version.files[level].length > 0)
        children.push(new LevelIterator(version.files[level], this.tableCache, lowerBound, upperBound, { rangeDel }));
    }
    return new DbIterator(
      new MergingIterator(children),
      children,
      readSeq,
      () => {
        version.unref();
        pin.release();
      },
      rangeDel,
    );
  }

  /**
   * Every range tombstone visible at the read point, as stored in memtables and table files
   * (unclipped; fragmented as written by flushes and compactions). For tests and diagnostics.
   */
  rangeTombstones(opts?: ReadOptions): RangeTombstone[] {
    this.checkOpen();
    const readSeq = opts?.snapshot?.sequence ?? this.versions.lastSequence;
    const out: RangeTombstone[] = [];
    const mems = [this.mem, ...this.imms.map((i) => i.mem)];
    for (const m of mems) out.push(...m.rangeTombstones());
    for (const files of this.versions.current.files) {
      for (const file of files) {
        const h = this.tableCache.acquire(file);
        try {
          out.push(...h.reader.rangeTombstones());
        } finally {
          h.release();
        }
      }
    }
    return out.filter((t) => t.seq <= readSeq);
  }

  /** The block cache this engine's table readers share (its lookups and hits are the server's metrics), or null. */
  get blockCache(): BlockCache | null {
    return this.tableCache.blockCache ?? null;
  }

  /**
   * Each live table's range-tombstone count (its properties' rocksdb.num.range-deletions), by
   * file number: the stats document's picture of the LSM (statsReport.ts). Read through the table
   * cache, as reads open tables, so an open table costs a lookup and no file is opened twice. A
   * table that cannot be opened now is left out: a diagnostic picture does not fail on it (the
   * reads that need the table report its error).
   */
  rangeDeletionsPerFile(): Map<number, number> {
    this.checkOpen();
    const counts = new Map<number, number>();
    for (const files of this.versions.current.files) {
      for (const file of files) {
        let h: TableHandle;
        try {
          h = this.tableCache.acquire(file);
        } catch {
          continue;
        }
        try {
          counts.set(file.fileNumber, h.reader.properties.numRangeDeletions);
        } finally {
          h.release();
        }
      }
    }
    return counts;
  }

  /**
   * Approximate bytes of table data holding user keys in [start, end), for choosing between read
   * strategies (the conflict check). A file wholly inside counts its size; a file straddling a
   * bound counts the data blocks between the bounds' index positions. Memtables are not counted
   * (like RocksDB's and Pebble's disk-size estimates). Reads index blocks only.
   */
  approximateTableBytesInRange(start: Buffer, end: Buffer): number {
    this.checkOpen();
    let total = 0;
    for (const files of this.versions.current.files) {
      for (const file of files) {
        if (compareUserKeyToFileBound(start, file.largest) > 0 || compareUserKeyToFileBound(end, file.smallest) <= 0) continue;
        if (compareUserKeyToFileBound(start, file.smallest) <= 0 && compareUserKeyToFileBound(end, file.largest) > 0) {
          total += file.fileSizeBytes;
          continue;
        }
        const h = this.tableCache.acquire(file);
        try {
          total += Math.max(0, h.reader.approximateOffsetOf(end) - h.reader.approximateOffsetOf(start));
        } finally {
          h.release();
        }
      }
    }
    return total;
  }

  // --- flushes and maintenance ---------------------------------------------------------------------

  /** Makes the active memtable immutable (if it holds anything) and waits for all flushes. */
  async flush(): Promise<void> {
    this.checkWritable();
    if (!this.mem.isEmpty) {
      while (this.imms.length >= this.maxImmutableMemtables) await this.waitForFlushProgress();
      this.checkWritable();
      if (!this.mem.isEmpty) this.switchMemtable();
    }
    await this.waitForFlushes();
  }

  /** Waits until no immutable memtable is left (or a flush failed: then throws its error). */
  async waitForFlushes(): Promise<void> {
    while (this.imms.length > 0) {
      this.checkWritable();
      await this.waitForFlushProgress();
    }
    this.checkWritable();
  }

  /**
   * Installs a version edit: for ingestion (placing prepared files into levels) and for tests.
   * Files it adds must already be complete and durable in the directory.
   */
  applyVersionEdit(edit: VersionEdit): void {
    this.checkWritable();
    syncDir(this.dir);
    this.versions.logAndApply(edit);
    // Files added to L0 or a level may push it past its compaction trigger.
    this.compactions.maybeSchedule();
  }

  /** A fresh file number (for a table about to be placed with applyVersionEdit). */
  newFileNumber(): number {
    this.checkOpen();
    return this.versions.newFileNumber();
  }

  /**
   * Links external SST files into the database atomically: all of them appear in one manifest
   * edit, each in the deepest level it may go to, with a global sequence number when it overlaps
   * existing data. Writes go on meanwhile (they wait only if a memtable in the files' ranges must
   * be flushed twice). See ingest/ingestionJob.ts.
   */
  async ingestExternalFiles(paths: readonly string[], options?: IngestOptions): Promise<IngestionResult> {
    if (this.readOnly) throw this.readOnlyError();
    return ingestExternalFiles(this.ingestionHost(), paths, options);
  }

  /** Where ingestExternalFiles would put the files now; links, flushes and changes nothing. */
  async planIngestion(paths: readonly string[], options?: IngestOptions): Promise<IngestionPlan> {
    return planIngestion(this.ingestionHost(), paths, options);
  }

  /**
   * Check-then-ingest as one atomic step against concurrent writers: the files' span is latched,
   * `check` runs at a snapshot taken under the latch and chooses what to ingest, the choice is
   * ingested, the latch released. Writes inside the span wait meanwhile; writes outside go on.
   * See ingest/checkedIngestion.ts for the steps and the guarantee.
   */
  async ingestExternalFilesChecked<R>(
    paths: readonly string[],
    check: IngestionCheck<R>,
    options?: IngestOptions,
  ): Promise<CheckedIngestion<R>> {
    if (this.readOnly) throw this.readOnlyError();
    return ingestExternalFilesChecked(this.ingestionHost(), paths, check, options);
  }

  /**
   * Why the engine refuses writes, or null while it takes them: `resumable` when a full disk
   * caused it (resume() takes writes again once space is freed), else a reopen is needed.
   */
  get writeError(): { code: 'NO_SPACE' | 'IO'; message: string; resumable: boolean } | null {
    const err = this.backgroundError;
    if (err === null) return null;
    return { code: this.backgroundErrorResumable ? 'NO_SPACE' : 'IO', message: err.message, resumable: this.backgroundErrorResumable };
  }

  get lastSequence(): number {
    return this.versions.lastSequence;
  }

  /** Whether a write that does not say `sync` is fdatasynced (EngineOptions.sync). */
  get syncsWritesByDefault(): boolean {
    return this.syncByDefault;
  }

  /** The current version's files per level (L0 newest first). */
  levelFiles(): ReadonlyArray<ReadonlyArray<FileMetaData>> {
    return this.versions.current.files;
  }

  stats(): EngineStats {
    const v: Version = this.versions.current;
    return {
      lastSequence: this.versions.lastSequence,
      activeMemtableBytes: this.mem.approximateMemoryUsageBytes,
      immutableMemtables: this.imms.length,
      filesPerLevel: v.files.map((f) => f.length),
      flushes: this.flushCount,
      writeStalls: this.stallCount,
      liveSnapshots: this.snapshots.size,
      openTables: this.tableCache.openCount,
      walNumber: this.liveLogNumbers[this.liveLogNumbers.length - 1],
      manifestNumber: this.versions.manifestFileNumber,
      bytesPerLevel: v.files.map((f) => f.reduce((n, file) => n + file.fileSizeBytes, 0)),
      levelScores: this.compactions.levelScores(),
      flushBytesWritten: this.flushBytesWritten,
      level0WriteStalls: this.level0StallCount,
      delayedWrites: this.delayedWriteCount,
      writeDelayMs: this.writeDelayMs,
      compaction: this.compactions.stats(),
      latches: { held: this.latches.heldCount, writesDelayed: this.latches.writesDelayed, timeouts: this.latches.timeouts },
    };
  }

  /**
   * Compacts user keys [from, to] (both inclusive; omitted: unbounded) down the levels: flushes
   * the memtables, then compacts each level's overlapping files into the next, down to the
   * deepest level holding any of them, which is rewritten in place if it holds deletions (see
   * compaction/compactionScheduler.ts). Background compactions wait meanwhile.
   */
  async compactRange(from?: BytesInput, to?: BytesInput): Promise<void> {
    this.checkWritable();
    await this.flush();
    await this.compactions.compactRange(toBytesOrUndefined(from) ?? null, toBytesOrUndefined(to) ?? null);
  }

  /** Resolves once no compaction is running or due (for tests and benchmarks). */
  async waitForCompactions(): Promise<void> {
    for (;;) {
      this.checkWritable();
      const progress = this.compactions.waitForProgress();
      if (progress === null) return;
      await progress;
    }
  }

  // --- internals -----------------------------------------------------------------------------------

  /** The engine as the ingestion job sees it (ingest/ingestionHost.ts). */
  private ingestionHost(): IngestionHost {
    return {
      dir: this.dir,
      tableCache: this.tableCache,
      runningCompactions: this.runningCompactions,
      latches: this.latches,
      latchTimeoutMs: this.latchWaitTimeoutMs,
      getSnapshot: () => this.getSnapshot(),
      numLevels: this.compactions.options.numLevels,
      checkWritable: () => this.checkWritable(),
      currentVersion: () => this.versions.current,
      memtables: () => [this.mem, ...this.imms.map((i) => i.mem)],
      lastSequence: () => this.versions.lastSequence,
      // Iterators pin a read point here too: conservative, it only costs a sequence number.
      hasLiveSnapshots: () => this.snapshots.size > 0,
      newFileNumber: () => this.versions.newFileNumber(),
      flushMemtables: () => this.flush(),
      stopWrites: () => this.stopWrites(),
      installIngestedFiles: (edit, lastSequence) => {
        this.checkWritable();
        syncDir(this.dir); // the staged tables' names, before the manifest refers to them
        this.versions.lastSequence = lastSequence;
        this.versions.logAndApply(edit);
        this.compactions.maybeSchedule(); // the new files may make a level due
      },
    };
  }

  /** Writers wait (in makeRoomForWrite) until the returned function is called; stops nest. */
  private stopWrites(): () => void {
    if (this.writeStops++ === 0) {
      this.writesResumed = new Promise<void>((resolve) => {
        this.resumeWriters = resolve;
      });
    }
    let resumed = false;
    return () => {
      assert(!resumed, 'writes resumed twice by one stop');
      resumed = true;
      if (--this.writeStops > 0) return;
      const resume = this.resumeWriters;
      this.writesResumed = null;
      this.resumeWriters = null;
      if (resume !== null) resume();
    };
  }

  private checkOpen(): void {
    if (this.closed || this.closing) throw invalid(`database ${this.dir} is closed`);
  }

  /** The WAL; only writes reach it, and checkWritable refuses them first when read-only. */
  private get wal(): LogWriter {
    if (this.walOrNull === null) throw this.readOnlyError();
    return this.walOrNull;
  }

  private set wal(wal: LogWriter) {
    this.walOrNull = wal;
  }

  private readOnlyError(): IngestError {
    return new IngestError(
      'NOT_SUPPORTED',
      `database ${this.dir} is open read-only: writes, flushes, compactions and ingestions are refused`,
    );
  }

  private checkWritable(): void {
    this.checkOpen();
    if (this.readOnly) throw this.readOnlyError();
    const err = this.backgroundError;
    if (err === null) return;
    if (this.backgroundErrorResumable) {
      throw new IngestError(
        'NO_SPACE',
        `database ${this.dir} is out of disk space and takes no writes until space is freed and it resumes: ${err.message}`,
        {
          cause: err,
        },
      );
    }
    throw new IngestError(
      'IO',
      `database ${this.dir} stopped accepting writes after a failed ${this.walFailed ? 'log write' : 'flush'}: ${err.message}`,
      {
        cause: err,
      },
    );
  }

  /**
   * A write to the WAL failed: its tail is unknown, so no record may follow it there. Every
   * acknowledged write is in the memtables, and stays readable; writes are refused until
   * resume() has switched to a new log and flushed those memtables (resumable on a full disk).
   */
  private failWal(err: unknown): never {
    if (this.backgroundError === null) {
      this.backgroundError = err as Error;
      this.backgroundErrorResumable = isNoSpaceError(err);
    }
    this.walFailed = true;
    this.checkWritable();
    throw err;
  }

  /**
   * True when a writer must wait in makeRoomForWrite before committing. Writers re-check it after
   * every wait and then commit without awaiting: other writers may have filled the memtable
   * while this one waited, and only a check in the same synchronous step as the commit is sound.
   */
  private mustMakeRoom(): boolean {
    return (
      this.mem.approximateMemoryUsageBytes >= this.writeBufferSizeBytes ||
      this.closing ||
      this.backgroundError !== null ||
      this.writesResumed !== null ||
      (this.writeDelay.owing && this.writeDelay.waitMs(performance.now()) > 0)
    );
  }

  /** Makes the active memtable immutable once full, waiting while too many await flushing. */
  private async makeRoomForWrite(): Promise<void> {
    let stalled = false;
    for (;;) {
      this.checkWritable();
      if (this.writesResumed !== null) {
        // An ingestion stopped writes around a flush it needs (stopWrites).
        await this.writesResumed;
        continue;
      }
      if (this.writeDelay.owing) {
        // Slowed down (L0 at the slowdown trigger): pay the writes booked so far at the delayed
        // rate, unless compactions have brought L0 back under the trigger meanwhile.
        if (!this.compactions.shouldSlowWrites()) {
          this.writeDelay.reset();
        } else {
          const waitMs = this.writeDelay.waitMs(performance.now());
          if (waitMs > 0) {
            this.delayedWriteCount++;
            this.writeDelayMs += waitMs;
            await sleep(waitMs);
            continue;
          }
        }
      }
      if (this.mem.approximateMemoryUsageBytes < this.writeBufferSizeBytes) return;
      if (this.compactions.shouldStallWrites()) {
        // L0 is too deep: another flush would make reads slower still. Wait for a compaction.
        const progress = this.compactions.waitForProgress();
        if (progress !== null) {
          if (!stalled) {
            stalled = true;
            this.stallCount++;
            this.level0StallCount++;
          }
          await progress;
          continue;
        }
      }
      if (this.imms.length < this.maxImmutableMemtables) {
        this.switchMemtable();
        return;
      }
      if (!stalled) {
        stalled = true;
        this.stallCount++;
      }
      await this.waitForFlushProgress();
    }
  }

  /** Stamps, logs and applies a batch; no await inside, so batches never interleave. */
  /** Returns the batch's first sequence number (an empty batch: the last one, nothing written). */
  private commit(batch: WriteBatch, opts: WriteOptions | undefined): number {
    this.checkWritable();
    if (batch.count === 0) return this.versions.lastSequence;
    const sync = opts?.sync ?? this.syncByDefault;
    if (sync && this.walDirPending) {
      // The WAL's name must be durable before a synced write in it is acknowledged.
      syncDir(this.dir);
      this.walDirPending = false;
    }
    const seq = this.versions.lastSequence + 1;
    batch.setSequence(seq);
    try {
      this.wal.addRecord(batch.encoded());
      if (sync) this.wal.sync();
    } catch (err) {
      this.failWal(err);
    }
    this.inserter.mem = this.mem;
    iterateRecords(batch.encoded(), seq, this.inserter, { file: this.wal.path, offset: 0 });
    this.versions.lastSequence = seq + batch.count - 1;
    if (this.compactions.shouldSlowWrites()) this.writeDelay.charge(batch.byteSize, performance.now());
    return seq;
  }

  private switchMemtable(): void {
    const walNumber = this.versions.newFileNumber();
    const wal = LogWriter.create(logFileName(this.dir, walNumber));
    this.syncWalDirInBackground();
    this.wal.close();
    this.wal = wal;
    this.liveLogNumbers.push(walNumber);
    this.imms.push({ mem: this.mem, logNumberAfterFlush: walNumber });
    this.mem = new Memtable(this.memtableOptions);
    this.scheduleFlush();
  }

  /** See walDirPending: the new WAL's name is made durable on the thread pool. */
  private syncWalDirInBackground(): void {
    this.walDirPending = true;
    const generation = ++this.walDirGeneration;
    this.walDirSyncing = this.walDirSyncing
      .then(() => syncDirAsync(this.dir))
      .then(
        () => {
          if (this.walDirGeneration === generation) this.walDirPending = false;
        },
        (err: unknown) => {
          if (this.backgroundError === null) this.backgroundError = err as Error;
        },
      );
  }

  private scheduleFlush(): void {
    if (this.flushRunning !== null || this.imms.length === 0 || this.closing) return;
    this.flushRunning = this.runFlushes().finally(() => {
      this.flushRunning = null;
      this.wakeFlushWaiters();
      // A switch may have queued more while the last flush was finishing.
      if (this.backgroundError === null) this.scheduleFlush();
    });
  }

  /** Flushes immutable memtables oldest first until none is left (or the engine closes). */
  private async runFlushes(): Promise<void> {
    // Start on the next turn: the switch that scheduled this flush runs inside a writer's call,
    // and the flush's first slice (opening the table, its first entries) would hold that writer.
    await yieldToEventLoop();
    try {
      while (this.imms.length > 0 && !this.closing) {
        const imm = this.imms[0];
        const fileNumber = this.versions.newFileNumber();
        let meta: Awaited<ReturnType<typeof flushMemtable>>;
        try {
          meta = await flushMemtable(imm.mem, { ...this.flushOptions, fileNumber, snapshots: this.snapshotSequences() });
        } catch (err) {
          // The table write failed: its partial file is deleted, the memtable and its WAL are
          // intact and the manifest was not touched, so a full disk is worth a retry (resume()).
          this.backgroundError = err as Error;
          this.backgroundErrorResumable = isNoSpaceError(err);
          return;
        }
        if (meta === ABORTED) return;
        const edit = new VersionEdit();
        if (meta !== null) {
          edit.addFile(0, meta);
          syncDir(this.dir); // the table's name, before the manifest refers to it
        }
        edit.logNumber = imm.logNumberAfterFlush;
        this.versions.logAndApply(edit);
        this.imms.shift();
        this.flushCount++;
        if (meta !== null) this.flushBytesWritten += meta.fileSizeBytes;
        this.deleteObsoleteLogs();
        this.wakeFlushWaiters();
        this.compactions.maybeSchedule();
      }
    } catch (err) {
      this.backgroundError = err as Error;
      this.backgroundErrorResumable = false;
    }
  }

  /**
   * Takes writes again after a flush or a WAL write found the disk full (RocksDB's DB::Resume,
   * for the cases that are safe here): once space is freed, switches to a new WAL if the old one
   * failed (its torn tail is dropped by replay: nothing after it was acknowledged from that log),
   * flushes every memtable, and only then clears the error, so that every write acknowledged
   * before the failure is in a table before a new one is taken. Resolves when the engine accepts
   * writes; rejects, still refusing them, when the error is not a full disk (a reopen is needed)
   * or space is still short (a later call may succeed).
   */
  async resume(): Promise<void> {
    this.checkOpen();
    const err = this.backgroundError;
    if (err === null) return;
    if (!this.backgroundErrorResumable) {
      throw new IngestError('IO', `database ${this.dir} cannot resume after this failure (reopen it): ${err.message}`, { cause: err });
    }
    await this.flushRunning;
    if (this.walFailed) this.switchAfterWalFailure();
    this.scheduleFlush();
    await this.flushRunning;
    if (this.backgroundError !== err || this.imms.length > 0) this.checkWritable();
    this.backgroundError = null;
    this.backgroundErrorResumable = false;
    this.wakeFlushWaiters();
    this.compactions.maybeSchedule();
  }

  /** resume()'s first step after a WAL failure: a new log, and the memtable it failed under made immutable. */
  private switchAfterWalFailure(): void {
    const walNumber = this.versions.newFileNumber();
    const wal = LogWriter.create(logFileName(this.dir, walNumber));
    try {
      this.wal.close();
    } catch {
      // The failed log's buffered tail cannot be written: replay drops a torn tail, and what it
      // held is in the memtable being flushed.
    }
    this.wal = wal;
    this.walFailed = false;
    this.syncWalDirInBackground();
    this.liveLogNumbers.push(walNumber);
    this.imms.push({ mem: this.mem, logNumberAfterFlush: walNumber });
    this.mem = new Memtable(this.memtableOptions);
  }

  /** Sequence numbers of live snapshots and iterator read points, ascending and distinct. */
  private snapshotSequences(): number[] {
    return this.snapshots.sequences();
  }

  private waitForFlushProgress(): Promise<void> {
    if (this.flushRunning === null) this.scheduleFlush();
    if (this.flushRunning === null) return Promise.resolve();
    return new Promise((resolve) => this.flushWaiters.push(resolve));
  }

  private wakeFlushWaiters(): void {
    const waiters = this.flushWaiters;
    this.flushWaiters = [];
    for (const w of waiters) w();
  }

  private deleteObsoleteLogs(): void {
    const keepFrom = this.versions.logNumber;
    while (this.liveLogNumbers.length > 0 && this.liveLogNumbers[0] < keepFrom) {
      removeIfExists(logFileName(this.dir, this.liveLogNumbers.shift() as number));
    }
  }

  private deleteObsoleteTable(fileNumber: number): void {
    this.tableCache.evict(fileNumber);
    removeIfExists(tableFileName(this.dir, fileNumber));
  }

  /**
   * Looks `key` up in one table whose range holds it: its value, null if deleted there (or
   * covered by a tombstone of sequence >= coveringSeq, this file's own included), undefined if not
   * there; then `coveringSeqAfterFile` holds coveringSeq raised by this file's tombstones.
   */
  private getFromFile(file: FileMetaData, key: Buffer, readSeq: number, coveringSeq: number): Buffer | null | undefined {
    const h = this.tableCache.acquire(file);
    try {
      const tombstones = h.fileTombstones(file);
      if (tombstones.count > 0) coveringSeq = Math.max(coveringSeq, maxCoveringSeq(tombstones, key, readSeq));
      const entry = h.reader.get(key, readSeq);
      if (entry === null) {
        this.coveringSeqAfterFile = coveringSeq;
        return undefined;
      }
      return entry.type === ValueType.Value && entry.seq >= coveringSeq ? entry.value : null;
    } finally {
      h.release();
    }
  }

  private seekKey(userKey: Buffer, seq: number): Buffer {
    return this.seekKeys.build(userKey, seq);
  }
}
