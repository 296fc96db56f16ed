/**
 * The compaction scheduler: runs leveled compactions in the background, one at a time, and
 * manual range compactions on request; keeps the compaction counters.
 *
 * Background: after every flush, version edit and compaction the engine calls `maybeSchedule()`;
 * when some level's score is due and no job runs (nor a manual compaction holds the slot, nor are
 * auto compactions disabled), a job starts on the next turn of the event loop, asks the picker
 * (compactionPicker.ts) for the most urgent compaction and runs it in slices (compactionJob.ts),
 * so reads and writes go on meanwhile. A trivial move is a version edit, done in one step.
 *
 * Installing: a job's version edit deletes its inputs and adds its outputs. Other edits may have
 * been installed while it ran (flushes add L0 files; ingestion and tests place files in levels),
 * so first the job checks that its inputs are all still where it found them, that no other file
 * of the output level now overlaps an output, and, if it dropped deletions as bottommost, that
 * nothing arrived below. If not, its outputs are deleted and the compaction counts as a conflict
 * (the picker will try again on the new version). While it runs, its output range is registered
 * in RunningCompactions so ingestion keeps out of it (runningCompactions.ts).
 *
 * Pinning: a job holds a reference on the version it reads, so its input files stay on disk until
 * it is done even if an edit removes them; after the install, the version set deletes the inputs
 * once no version holds them (iterators keep theirs).
 *
 * Write stalls: when auto compactions are on and L0 holds level0StopWritesTrigger files or more,
 * a writer that needs a new memtable waits for compaction progress instead of failing
 * (`waitForProgress`), as RocksDB stops writes. Before that, from level0SlowdownWritesTrigger
 * files, writes are paced to delayedWriteRateBytesPerSecond (`shouldSlowWrites`; the engine's
 * WriteDelay), which matters doubly here: compactions run on the writers' own event loop, so a
 * paced writer is what gives them the CPU to catch up.
 *
 * Manual compaction (`compactRange`): waits for the running job, holds the slot, then compacts
 * each level from L0 down to the deepest level holding keys of the range into the next level
 * (files overlapping the range); the deepest level is then rewritten in place if it is bottommost
 * and a file there holds deletions or range tombstones (RocksDB skips the bottommost level unless
 * asked; rewriting only where there is something to drop costs nothing otherwise).
 */
import { setImmediate as yieldToEventLoop } from 'timers/promises';
import { IngestError } from '../../util/errors';
import { TableBuilderOptions } from '../../sstwriter/tableBuilder';
import { TableCache } from '../tableCache';
import { Version } from '../version';
import { FileMetaData, NUM_LEVELS, VersionEdit } from '../versionEdit';
import { RunningCompactions } from '../runningCompactions';
import { removeIfExists } from '../durableFs';
import { tableFileName } from '../fileNames';
import { filesClaimSameKey } from '../rangedel/tombstoneBoundaries';
import { ABORTED, compactionSlices, runSlices } from './compactionJob';
import {
  Compaction,
  CompactionPicker,
  CompactionReason,
  isBottommost,
  levelBytes,
  levelScores,
  overlappingFiles,
} from './compactionPicker';
import { ResolvedCompactionOptions } from './compactionOptions';

/** What the scheduler needs from the engine (implemented by Engine; see engine.ts). */
export interface CompactionHost {
  readonly dir: string;
  readonly tableCache: TableCache;
  readonly table: Partial<TableBuilderOptions>;
  readonly runningCompactions: RunningCompactions;
  currentVersion(): Version;
  /** Live snapshot sequence numbers (iterators' read points included), ascending and distinct. */
  snapshotSequences(): number[];
  newFileNumber(): number;
  /** True once close() began: jobs stop at their next slice. */
  isClosing(): boolean;
  /** Throws when the engine is closed or has stopped after a background error. */
  checkWritable(): void;
  /** Makes new files' names durable, logs the edit and installs the new version. */
  install(edit: VersionEdit): void;
  /** Records a failed background job: the engine stops accepting writes. */
  onBackgroundError(err: Error): void;
}

/** Counters of the work compactions did (see Engine.stats()). */
export interface CompactionStats {
  /** Compactions that rewrote files (trivial moves not counted). */
  count: number;
  /** Of those, run by compactRange. */
  manualCount: number;
  /** Files moved down a level without being rewritten. */
  trivialMoves: number;
  /** Compactions whose outputs were discarded because the version changed under them. */
  conflicts: number;
  /** Bytes of input files read and output files written by compactions. */
  bytesRead: number;
  bytesWritten: number;
  filesIn: number;
  filesOut: number;
  /** Input entries (point keys) and those dropped (shadowed, covered, obsolete deletions). */
  entriesIn: number;
  entriesDropped: number;
  /** Range tombstones (fragment, sequence) read and dropped. */
  tombstonesIn: number;
  tombstonesDropped: number;
  /** Bytes written into each level by compactions (index = output level). */
  bytesWrittenPerLevel: number[];
  /** Bytes read from each level by compactions (inputs at the start and the output level). */
  bytesReadPerLevel: number[];
  /** True while a compaction job is running. */
  running: boolean;
}

export class CompactionScheduler {
  readonly options: ResolvedCompactionOptions;
  private readonly host: CompactionHost;
  private readonly picker: CompactionPicker;
  /** The running job (resolves after its bookkeeping), or null. */
  private runningJob: Promise<void> | null = null;
  private manualActive = 0;
  private waiters: Array<() => void> = [];
  private readonly counters: Omit<CompactionStats, 'running'> = {
    count: 0,
    manualCount: 0,
    trivialMoves: 0,
    conflicts: 0,
    bytesRead: 0,
    bytesWritten: 0,
    filesIn: 0,
    filesOut: 0,
    entriesIn: 0,
    entriesDropped: 0,
    tombstonesIn: 0,
    tombstonesDropped: 0,
    bytesWrittenPerLevel: new Array<number>(NUM_LEVELS).fill(0),
    bytesReadPerLevel: new Array<number>(NUM_LEVELS).fill(0),
  };

  constructor(host: CompactionHost, options: ResolvedCompactionOptions) {
    this.host = host;
    this.options = options;
    this.picker = new CompactionPicker(options);
  }

  /**
   * Starts the most urgent compaction, if any is due and nothing is running. The job begins on a
   * later turn of the event loop and picks its inputs then: a caller's synchronous step (a flush
   * install, a version edit) never sees the version change under it, not even by a trivial move.
   */
  maybeSchedule(): void {
    if (this.runningJob !== null || this.manualActive > 0 || this.options.disableAutoCompactions || this.host.isClosing()) return;
    try {
      this.host.checkWritable();
      if (!levelScores(this.host.currentVersion(), this.options).some((score) => score >= 1)) return;
    } catch {
      return; // closed or stopped: nothing to schedule
    }
    this.runningJob = this.runAuto();
    void this.runningJob.finally(() => {
      this.runningJob = null;
      this.wake();
      this.maybeSchedule();
    });
  }

  /** The background job: yields first, then picks and runs one compaction. Never rejects. */
  private async runAuto(): Promise<void> {
    await yieldToEventLoop();
    if (this.manualActive > 0 || this.host.isClosing()) return;
    let c: Compaction | null;
    try {
      this.host.checkWritable();
      c = this.picker.pickAuto(this.host.currentVersion());
    } catch {
      return;
    }
    if (c === null) return;
    try {
      await this.run(c);
    } catch {
      // run() recorded it as the engine's background error.
    }
  }

  /** True when writes are paced (L0 at or past level0SlowdownWritesTrigger, below the stop). */
  shouldSlowWrites(): boolean {
    if (this.options.disableAutoCompactions) return false;
    const l0 = this.host.currentVersion().files[0].length;
    return l0 >= this.options.level0SlowdownWritesTrigger && l0 < this.options.level0StopWritesTrigger;
  }

  /** True when writers needing a new memtable must wait for L0 to shrink. */
  shouldStallWrites(): boolean {
    return !this.options.disableAutoCompactions && this.host.currentVersion().files[0].length >= this.options.level0StopWritesTrigger;
  }

  /**
   * A promise settled when the running compaction finishes (one is started if due), or null when
   * none runs and none can start: the caller must not wait for nothing.
   */
  waitForProgress(): Promise<void> | null {
    this.maybeSchedule();
    if (this.runningJob === null) return null;
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Resolves once no compaction is running (close() waits on it after asking jobs to stop). */
  async idle(): Promise<void> {
    while (this.runningJob !== null) await this.runningJob;
  }

  /**
   * Compacts every level's files overlapping user keys [from, to] (null: unbounded) down to the
   * deepest level holding any of them (see the module comment). The caller flushes memtables
   * first. Throws when the engine closes meanwhile or a compaction fails.
   */
  async compactRange(from: Buffer | null, to: Buffer | null): Promise<void> {
    this.manualActive++;
    try {
      await this.idle();
      const deepest = this.deepestLevelOverlapping(from, to);
      if (deepest < 0) return;
      const lastLevel = Math.min(Math.max(deepest, 1), this.options.numLevels - 1);
      for (let level = 0; level < lastLevel; level++) await this.runManual(level, level + 1, from, to);
      if (lastLevel === deepest) await this.runManual(lastLevel, lastLevel, from, to);
    } finally {
      this.manualActive--;
      this.maybeSchedule();
    }
  }

  stats(): CompactionStats {
    const c = this.counters;
    return {
      ...c,
      bytesWrittenPerLevel: [...c.bytesWrittenPerLevel],
      bytesReadPerLevel: [...c.bytesReadPerLevel],
      running: this.runningJob !== null,
    };
  }

  /** Level scores of the current version (>= 1: due for compaction). */
  levelScores(): number[] {
    return levelScores(this.host.currentVersion(), this.options);
  }

  // --- internals -------------------------------------------------------------------------------

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  private deepestLevelOverlapping(from: Buffer | null, to: Buffer | null): number {
    const v = this.host.currentVersion();
    for (let level = NUM_LEVELS - 1; level >= 0; level--) if (overlappingFiles(v.files[level], from, to).length > 0) return level;
    return -1;
  }

  /** One manual step; retried when the version changed under it (bounded). */
  private async runManual(level: number, outputLevel: number, from: Buffer | null, to: Buffer | null): Promise<void> {
    const MAX_ATTEMPTS = 5;
    for (let attempt = 1; ; attempt++) {
      this.host.checkWritable();
      const c = this.picker.pickManual(this.host.currentVersion(), level, outputLevel, from, to);
      if (c === null) return;
      if (level === outputLevel && !(c.bottommost && this.holdsDeletions(c.inputs[0]))) return;
      const job = this.run(c);
      this.runningJob = job.then(
        () => undefined,
        () => undefined,
      );
      void this.runningJob.finally(() => {
        this.runningJob = null;
        this.wake();
      });
      const installed = await job;
      await this.idle();
      if (installed) return;
      this.host.checkWritable();
      if (attempt === MAX_ATTEMPTS) {
        throw new IngestError(
          'IO',
          `manual compaction of L${level} -> L${outputLevel} kept conflicting with other changes to the database`,
        );
      }
    }
  }

  private holdsDeletions(files: readonly FileMetaData[]): boolean {
    for (const f of files) {
      const h = this.host.tableCache.acquire(f);
      try {
        if (h.reader.properties.numDeletions > 0) return true;
      } finally {
        h.release();
      }
    }
    return false;
  }

  /** Runs one compaction and installs it; true if installed. Errors become the background error. */
  private async run(c: Compaction): Promise<boolean> {
    const host = this.host;
    if (c.trivialMove) {
      const f = c.inputs[0][0];
      host.install(new VersionEdit().deleteFile(c.level, f.fileNumber).addFile(c.outputLevel, f));
      this.counters.trivialMoves++;
      return true;
    }
    const version = host.currentVersion();
    version.ref();
    const registration = host.runningCompactions.register(c.outputLevel, c.smallestUserKey, c.largestUserKey);
    try {
      const result = await runSlices(
        compactionSlices(c, {
          dir: host.dir,
          table: host.table,
          targetFileSizeBytes: this.options.targetFileSizeBytes,
          newFileNumber: () => host.newFileNumber(),
          snapshots: host.snapshotSequences(),
          entriesPerSlice: this.options.compactionSliceEntries,
          tableCache: host.tableCache,
        }),
        () => host.isClosing(),
      );
      if (result === ABORTED) return false;
      if (host.isClosing() || !this.canInstall(c, result.files)) {
        for (const f of result.files) removeIfExists(tableFileName(host.dir, f.fileNumber));
        if (!host.isClosing()) this.counters.conflicts++;
        return false;
      }
      const edit = new VersionEdit();
      for (const f of c.inputs[0]) edit.deleteFile(c.level, f.fileNumber);
      for (const f of c.inputs[1]) edit.deleteFile(c.outputLevel, f.fileNumber);
      for (const f of result.files) edit.addFile(c.outputLevel, f);
      host.install(edit);

      const k = this.counters;
      k.count++;
      if (c.reason === CompactionReason.Manual) k.manualCount++;
      const readLevel = levelBytes(c.inputs[0]);
      const readOutputLevel = levelBytes(c.inputs[1]);
      k.bytesRead += readLevel + readOutputLevel;
      k.bytesReadPerLevel[c.level] += readLevel;
      k.bytesReadPerLevel[c.outputLevel] += readOutputLevel;
      k.bytesWritten += result.bytesWritten;
      k.bytesWrittenPerLevel[c.outputLevel] += result.bytesWritten;
      k.filesIn += c.inputs[0].length + c.inputs[1].length;
      k.filesOut += result.files.length;
      k.entriesIn += result.entries.entriesIn;
      k.entriesDropped += result.entries.entriesIn - result.entries.entriesOut;
      k.tombstonesIn += result.tombstonesIn;
      k.tombstonesDropped += result.tombstonesIn - result.tombstonesOut;
      return true;
    } catch (err) {
      host.onBackgroundError(err as Error);
      throw err;
    } finally {
      registration.release();
      version.unref();
    }
  }

  /** The job's inputs are still in place and its outputs fit the current version (module comment). */
  private canInstall(c: Compaction, outputs: readonly FileMetaData[]): boolean {
    const v = this.host.currentVersion();
    const inputNumbers = new Set<number>();
    const levels = [c.level, c.outputLevel];
    for (let i = 0; i < 2; i++) {
      const present = new Set(v.files[levels[i]].map((f) => f.fileNumber));
      for (const f of c.inputs[i]) {
        if (!present.has(f.fileNumber)) return false;
        inputNumbers.add(f.fileNumber);
      }
    }
    for (const f of v.files[c.outputLevel]) {
      if (inputNumbers.has(f.fileNumber)) continue;
      for (const o of outputs) {
        if (filesClaimSameKey(f.largest, o.smallest) && filesClaimSameKey(o.largest, f.smallest)) return false;
      }
    }
    return !c.bottommost || isBottommost(v, c.outputLevel, c.smallestUserKey, c.largestUserKey);
  }
}
