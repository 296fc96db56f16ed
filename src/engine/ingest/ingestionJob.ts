/**
 * The ingestion job: links external SST files into the database atomically (Engine's
 * ingestExternalFiles and planIngestion delegate here).
 *
 * Steps of ingestExternalFiles(paths, options):
 * 1. Inspect every file (externalFile.ts: format, properties, and unless verifyChecksums is false
 *    every checksum and the key order; on a worker thread for large ingestions, see
 *    inspectFiles.ts) and compute its bounds, range tombstones included. Sort
 *    the files by smallest key; two that share a user key are refused (INVALID_ARGUMENT): one
 *    call adds one consistent set of keys, with no order among its files.
 * 2. Stage: copy each file into the database directory under a new file number (or hard-link it
 *    with fileMode link or move; a copy when linking fails, e.g. across file systems), fsync it, and check it is
 *    still the file inspected. With replaceRange, write the tombstone table (replaceRange.ts).
 *    Nothing refers to the staged files yet: a crash leaves unreferenced tables, which the next
 *    open deletes; a failure deletes them at once. The external files are never modified.
 * 3. Memtables: if unflushed writes lie in some file's range, the file must not go below them
 *    (reads consult memtables first), so the memtables are flushed first; with
 *    allowBlockingFlush: false the ingestion fails instead. The first flush lets writes go on;
 *    if writers put keys into the range again meanwhile, writes are stopped (they wait) for the
 *    second flush and the commit.
 * 4. Commit, in one synchronous step (no write, flush or compaction install can come between):
 *    check the memtables again, then for each file (the tombstone table first, then in key
 *    order) choose the level by the walk of levelPlacement.ts and the global sequence number:
 *    lastSequence + 1 (consecutive numbers across the call) if the walk stopped at data, or if
 *    any snapshot is live (a file at sequence 0 would appear in the snapshot's past); else 0.
 *    requireBottommost refuses a file the walk placed above the bottom level (numLevels - 1,
 *    the compaction option). All files then
 *    go into the manifest in one version edit, with each file's global seqno and the raised last
 *    sequence number; writes after it get higher numbers, so they stay ordered after the files.
 *
 * Span latch: steps 2 to 4 run holding the engine's span latch (spanLatches.ts) over the files'
 * envelope (the replace range included), so writes into that span wait until the commit and then
 * land above the files; writes elsewhere go on, during the memtable flush too. With the latch no
 * write can refill the range between the flush and the commit, so the stop-writes fallback of
 * step 3 is only a guard. checkedIngestion.ts adds a check at a snapshot taken under the same
 * latch.
 *
 * planIngestion runs steps 1 and 4 without staging, flushing or installing: memtable data in a
 * file's range is taken as flushed to L0, where step 3 would put it.
 *
 * Keys in reports are user keys; `largestExclusive` marks a file ending at a tombstone's end.
 */
import * as fs from 'fs';
import * as fsp from 'fs/promises';
import { IngestError, assert } from '../../util/errors';
import { compareUserKeys } from '../../base/keyCompare';
import { tableFileName } from '../fileNames';
import { removeIfExists } from '../durableFs';
import { FileMetaData, VersionEdit } from '../versionEdit';
import { FileBounds } from '../rangedel/tombstoneBoundaries';
import { UserKeyRange, describeUserKeyRange, userKeyRangesOverlap } from '../runningCompactions';
import { ExternalFileInfo, ingestedBounds, rangeOfBounds } from './externalFile';
import { inspectExternalFiles } from './inspectFiles';
import { IngestionHost } from './ingestionHost';
import { PendingFile, placeIngestedFile, StopReason } from './levelPlacement';
import { memtableHasDataIn } from './overlap';
import { checkReplaceRange, ReplaceRange, replaceRangeBounds, writeReplaceRangeTable } from './replaceRange';

export interface IngestOptions {
  /** Flush memtables holding data in a file's range (default true); false: fail instead. */
  allowBlockingFlush?: boolean;
  /** Read every block and check checksums and key order before ingesting (default true). */
  verifyChecksums?: boolean;
  /** Verify on a worker thread: true, false, or by total size when undefined (inspectFiles.ts). */
  verifyInWorker?: boolean;
  /** CPU priority drop of that worker thread, 0..19 (default 0; src/util/workerBootstrap.ts). */
  verifyWorkerNiceness?: number;
  /** Fail unless every file goes to the bottom level (default false). */
  requireBottommost?: boolean;
  /**
   * How an external file enters the database (default 'copy', as RocksDB's move_files=false):
   * - copy: the database holds a copy; the caller's file stays the caller's, to change or delete;
   * - link: a hard link (a copy where linking fails, e.g. across file systems); the file is then
   *   shared, and rewriting it changes the database: only for files nothing else will touch
   *   (the import's own SSTs);
   * - move: linked as `link`, and the caller's path removed once the ingestion is committed.
   */
  fileMode?: IngestFileMode;
  /** Delete every existing key in [start, end) in the same atomic step (see replaceRange.ts). */
  replaceRange?: ReplaceRange;
}

export type IngestFileMode = 'copy' | 'link' | 'move';

/** Where one file goes. */
export interface PlannedFile {
  /** The external file, or null for the replace-range tombstone table. */
  path: string | null;
  smallest: Buffer;
  largest: Buffer;
  largestExclusive: boolean;
  fileSizeBytes: number;
  targetLevel: number;
  globalSeqno: number;
  /** The level whose data (or running compaction, or memtable) stopped the walk; null: none. */
  stoppedAtLevel: number | null;
  stopReason: StopReason;
}

export interface IngestionPlan {
  /** The tombstone table first (when it would be used), then the files in key order. */
  files: PlannedFile[];
  /** Memtable data lies in some file's range: ingesting would flush first. */
  memtableFlushNeeded: boolean;
  /** The last sequence number once the ingestion is applied. */
  lastSequence: number;
}

export interface IngestedFile extends PlannedFile {
  fileNumber: number;
  /** Hard-linked (true) or copied (false); the tombstone table is written (false). */
  linked: boolean;
}

export interface IngestionResult {
  files: IngestedFile[];
  /** Memtable flushes the ingestion waited for. */
  memtableFlushes: number;
  /** Writes were stopped for part of the ingestion. */
  writesStopped: boolean;
  lastSequence: number;
}

/** Flushes tried before giving up on a range that writers keep refilling (the last with writes stopped). */
const MAX_FLUSH_ATTEMPTS = 3;

/** A file to place: an inspected external file or the replace-range tombstone table. */
interface Candidate {
  path: string | null;
  bounds: FileBounds;
  range: UserKeyRange;
  fileSizeBytes: number;
}

interface Decision {
  candidate: Candidate;
  /** False for a tombstone table with nothing to delete: left out of the edit. */
  used: boolean;
  level: number;
  globalSeqno: number;
  stoppedAtLevel: number | null;
  stopReason: StopReason;
}

function invalid(message: string): IngestError {
  return new IngestError('INVALID_ARGUMENT', message);
}

/** Step 1: inspects the files and returns them sorted by smallest key, refusing overlaps. */
export async function inspectAll(paths: readonly string[], opts: IngestOptions): Promise<ExternalFileInfo[]> {
  if (!Array.isArray(paths) || paths.some((p) => typeof p !== 'string')) throw invalid('paths must be an array of file paths');
  if (paths.length === 0 && opts.replaceRange === undefined) throw invalid('no files to ingest');
  if (opts.replaceRange !== undefined) checkReplaceRange(opts.replaceRange);
  const infos = await inspectExternalFiles(paths, {
    verifyChecksums: opts.verifyChecksums,
    verifyInWorker: opts.verifyInWorker,
    workerNiceness: opts.verifyWorkerNiceness,
  });
  infos.sort((a, b) => compareUserKeys(a.range.smallest, b.range.smallest));
  // Sorted by start, any two overlapping files imply an overlapping adjacent pair.
  for (let i = 1; i < infos.length; i++) {
    if (userKeyRangesOverlap(infos[i - 1].range, infos[i].range)) {
      throw invalid(
        `files of one ingestion must not overlap: ${infos[i - 1].path} ${describeUserKeyRange(infos[i - 1].range)} and ${infos[i].path} ${describeUserKeyRange(infos[i].range)}`,
      );
    }
  }
  return infos;
}

function candidatesOf(infos: readonly ExternalFileInfo[], replaceRange: ReplaceRange | undefined): Candidate[] {
  const out: Candidate[] = [];
  if (replaceRange !== undefined) {
    const bounds = replaceRangeBounds(replaceRange);
    out.push({ path: null, bounds, range: rangeOfBounds(bounds), fileSizeBytes: 0 });
  }
  for (const f of infos) out.push({ path: f.path, bounds: f.bounds, range: f.range, fileSizeBytes: f.fileSizeBytes });
  return out;
}

function unflushedDataIn(host: IngestionHost, range: UserKeyRange): boolean {
  for (const mem of host.memtables()) if (memtableHasDataIn(mem, range)) return true;
  return false;
}

/**
 * Step 4's decisions (synchronous): level and sequence number per candidate, in order. With
 * `planning`, memtable data counts as flushed to L0.
 */
function decide(
  host: IngestionHost,
  candidates: readonly Candidate[],
  opts: IngestOptions,
  planning: boolean,
): { decisions: Decision[]; lastSequence: number } {
  const version = host.currentVersion();
  let lastSequence = host.lastSequence();
  const snapshotsLive = host.hasLiveSnapshots();
  const pending: PendingFile[] = [];
  const decisions: Decision[] = [];
  for (const candidate of candidates) {
    const placement = placeIngestedFile(candidate.range, {
      version,
      tableCache: host.tableCache,
      runningCompactions: host.runningCompactions,
      numLevels: host.numLevels,
      pending,
      unflushedOverlaps: planning && unflushedDataIn(host, candidate.range),
    });
    const isTombstoneTable = candidate.path === null;
    if (isTombstoneTable && !placement.overlapsData) {
      // Nothing in the range to delete.
      decisions.push({ candidate, used: false, level: -1, globalSeqno: 0, stoppedAtLevel: null, stopReason: null });
      continue;
    }
    if (opts.requireBottommost === true && !isTombstoneTable && placement.level !== host.numLevels - 1) {
      throw invalid(
        `${candidate.path} ${describeUserKeyRange(candidate.range)} cannot go to the bottom level L${host.numLevels - 1}: ` +
          `${placement.stopReason ?? 'file boundaries'} overlap${placement.stoppedAtLevel === null ? '' : ` at L${placement.stoppedAtLevel}`}, it would go to L${placement.level} (requireBottommost)`,
      );
    }
    const globalSeqno = placement.overlapsData || snapshotsLive ? ++lastSequence : 0;
    pending.push({ level: placement.level, range: candidate.range });
    decisions.push({
      candidate,
      used: true,
      level: placement.level,
      globalSeqno,
      stoppedAtLevel: placement.stoppedAtLevel,
      stopReason: placement.stopReason,
    });
  }
  return { decisions, lastSequence };
}

function plannedFile(d: Decision): PlannedFile {
  const c = d.candidate;
  return {
    path: c.path,
    smallest: Buffer.from(c.range.smallest),
    largest: Buffer.from(c.range.largest),
    largestExclusive: c.range.largestExclusive,
    fileSizeBytes: c.fileSizeBytes,
    targetLevel: d.level,
    globalSeqno: d.globalSeqno,
    stoppedAtLevel: d.stoppedAtLevel,
    stopReason: d.stopReason,
  };
}

/** Where the files would go now; changes nothing. See the module comment. */
export async function planIngestion(host: IngestionHost, paths: readonly string[], opts: IngestOptions = {}): Promise<IngestionPlan> {
  host.checkWritable();
  const infos = await inspectAll(paths, opts);
  host.checkWritable();
  // From here to the return, nothing awaits: the plan describes one state of the database.
  const candidates = candidatesOf(infos, opts.replaceRange);
  const memtableFlushNeeded = candidates.some((c) => unflushedDataIn(host, c.range));
  const { decisions, lastSequence } = decide(host, candidates, opts, true);
  return { files: decisions.filter((d) => d.used).map(plannedFile), memtableFlushNeeded, lastSequence };
}

interface StagedFile {
  candidate: Candidate;
  fileNumber: number;
  linked: boolean;
}

/** Step 2 for one external file: link (or copy) it in as table `fileNumber`, durably. */
async function stageExternalFile(dir: string, fileNumber: number, info: ExternalFileInfo, copy: boolean): Promise<boolean> {
  const dest = tableFileName(dir, fileNumber);
  let linked = false;
  if (!copy) {
    try {
      await fsp.link(info.path, dest);
      linked = true;
    } catch {
      // Another file system, or one without hard links: copy instead.
    }
  }
  if (!linked) {
    try {
      await fsp.copyFile(info.path, dest, fs.constants.COPYFILE_EXCL);
    } catch (err) {
      throw new IngestError('IO', `cannot copy ${info.path} into the database as ${dest}: ${(err as Error).message}`, { cause: err });
    }
  }
  // The writer of the file may never have synced it; the manifest must not name a file whose
  // contents a crash could still lose.
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(dest, 'r');
  } catch (err) {
    throw new IngestError('IO', `cannot open ${dest}: ${(err as Error).message}`, { cause: err });
  }
  try {
    const size = (await handle.stat()).size;
    if (size !== info.fileSizeBytes)
      throw invalid(`${info.path} changed while being ingested (${info.fileSizeBytes} bytes when checked, ${size} now)`);
    await handle.sync();
  } catch (err) {
    if (err instanceof IngestError) throw err;
    throw new IngestError('IO', `cannot sync ${dest}: ${(err as Error).message}`, { cause: err });
  } finally {
    await handle.close();
  }
  return linked;
}

/**
 * fileMode 'move', after the commit: the caller's paths go (the database holds the files under
 * its own names). A source that cannot be removed stays, with no effect on the database.
 */
function removeMovedSources(infos: readonly ExternalFileInfo[]): void {
  for (const info of infos) {
    try {
      removeIfExists(info.path);
    } catch {
      // The ingestion is committed; a leftover source is the caller's to remove.
    }
  }
}

/** Ingests the files atomically; see the module comment. */
export async function ingestExternalFiles(
  host: IngestionHost,
  paths: readonly string[],
  opts: IngestOptions = {},
): Promise<IngestionResult> {
  host.checkWritable();
  const infos = await inspectAll(paths, opts);
  const span = spanOfIngestion(infos, opts.replaceRange);
  return host.latches.withLatch(span, host.latchTimeoutMs, `ingestion of ${infos.length} file(s)`, () =>
    ingestInspected(host, infos, opts),
  );
}

/**
 * The user-key span an ingestion writes: from the smallest file start (or replace-range start) to
 * the largest end, inclusive unless the largest end is a tombstone's exclusive end.
 */
export function spanOfIngestion(infos: readonly ExternalFileInfo[], replaceRange: ReplaceRange | undefined): UserKeyRange {
  const ranges = candidatesOf(infos, replaceRange).map((c) => c.range);
  assert(ranges.length > 0, 'an ingestion writes some range');
  let smallest = ranges[0].smallest;
  let end = ranges[0];
  for (const r of ranges) {
    if (compareUserKeys(r.smallest, smallest) < 0) smallest = r.smallest;
    const c = compareUserKeys(r.largest, end.largest);
    if (c > 0 || (c === 0 && !r.largestExclusive)) end = r;
  }
  return { smallest, largest: end.largest, largestExclusive: end.largestExclusive };
}

/**
 * Steps 2 to 4 for inspected files; the caller holds the span latch over spanOfIngestion(infos).
 * Memtable data in the range is flushed first (the latch keeps writers from refilling it).
 */
export async function ingestInspected(
  host: IngestionHost,
  infos: readonly ExternalFileInfo[],
  opts: IngestOptions,
): Promise<IngestionResult> {
  host.checkWritable();
  const staged: StagedFile[] = [];
  let installAttempted = false;
  let resumeWrites: (() => void) | null = null;
  try {
    // Step 2. Numbers are taken in the synchronous part before each await, so they are unique.
    if (opts.replaceRange !== undefined) {
      const fileNumber = host.newFileNumber();
      const candidate = candidatesOf([], opts.replaceRange)[0];
      staged.push({ candidate, fileNumber, linked: false });
      candidate.fileSizeBytes = writeReplaceRangeTable(host.dir, fileNumber, opts.replaceRange);
    }
    for (const info of infos) {
      const s: StagedFile = { candidate: candidatesOf([info], undefined)[0], fileNumber: host.newFileNumber(), linked: false };
      staged.push(s);
      s.linked = await stageExternalFile(host.dir, s.fileNumber, info, (opts.fileMode ?? 'copy') === 'copy');
    }

    // Step 3.
    let memtableFlushes = 0;
    for (;;) {
      host.checkWritable();
      const overlapping = staged.find((s) => unflushedDataIn(host, s.candidate.range));
      if (overlapping === undefined) break;
      if (opts.allowBlockingFlush === false) {
        const what = overlapping.candidate.path ?? 'the replace range';
        throw invalid(
          `${what} ${describeUserKeyRange(overlapping.candidate.range)} overlaps unflushed writes and allowBlockingFlush is false`,
        );
      }
      if (memtableFlushes === MAX_FLUSH_ATTEMPTS) {
        throw new IngestError(
          'IO',
          `memtables still hold data in the ingested ranges after ${MAX_FLUSH_ATTEMPTS} flushes (the last with writes stopped)`,
        );
      }
      if (memtableFlushes > 0 && resumeWrites === null) resumeWrites = host.stopWrites();
      await host.flushMemtables();
      memtableFlushes++;
    }

    // Step 4: from the check above to the install, nothing awaits.
    const { decisions, lastSequence } = decide(
      host,
      staged.map((s) => s.candidate),
      opts,
      false,
    );
    const edit = new VersionEdit();
    const files: IngestedFile[] = [];
    decisions.forEach((d, i) => {
      if (!d.used) return;
      const s = staged[i];
      assert(s.candidate === d.candidate, 'decisions follow the staged files');
      const bounds = ingestedBounds(d.candidate.bounds, d.globalSeqno);
      const meta: FileMetaData = {
        fileNumber: s.fileNumber,
        fileSizeBytes: d.candidate.fileSizeBytes,
        smallest: bounds.smallest,
        largest: bounds.largest,
        smallestSeq: d.globalSeqno,
        largestSeq: d.globalSeqno,
        globalSeqno: d.globalSeqno,
      };
      edit.addFile(d.level, meta);
      files.push({ ...plannedFile(d), fileNumber: s.fileNumber, linked: s.linked });
    });
    installAttempted = true;
    // Only a replace range with nothing to delete and no files leaves the edit empty.
    if (edit.newFiles.length > 0) host.installIngestedFiles(edit, lastSequence);
    decisions.forEach((d, i) => {
      if (!d.used) removeIfExists(tableFileName(host.dir, staged[i].fileNumber));
    });
    if (opts.fileMode === 'move') removeMovedSources(infos);
    return { files, memtableFlushes, writesStopped: resumeWrites !== null, lastSequence: host.lastSequence() };
  } catch (err) {
    // Before the install nothing names the staged files. After a failed install the manifest
    // might, so they are left for the next open, which deletes them if unreferenced.
    if (!installAttempted) {
      for (const s of staged) {
        try {
          removeIfExists(tableFileName(host.dir, s.fileNumber));
        } catch {
          // The next open deletes what is left; the first error is the one to report.
        }
      }
    }
    throw err;
  } finally {
    if (resumeWrites !== null) resumeWrites();
  }
}
