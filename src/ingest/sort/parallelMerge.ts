/**
 * Parallel merge: the key space is cut into one range per merge worker, and each worker merges
 * every run's part of its range into its own SSTs (src/ingest/sort/mergeWorker.ts), so SST building — the costly
 * half of an import — uses every core.
 *
 * Split points are quantiles of the runs' samples (one per SAMPLE_EVERY_BYTES of run), so ranges
 * hold about equal bytes. A range is [low, high): all rows of a key fall in one range, so
 * duplicate handling inside a worker is exact, and the ranges' files concatenated in range order
 * are sorted and non-overlapping. Each reader of a range starts at the run's last sample below
 * `low` (or at the start), so no worker reads the parts of the runs before its range.
 *
 * Results: duplicate counts add up; the examples are the first MAX_DUPLICATE_EXAMPLES in key
 * order over all ranges. On any failure every file any worker wrote is removed, except with
 * `reporting` (a resumable job, or a disk quota charged per file), where the files each worker
 * reported stay for the importer's cleanup to keep or remove.
 */
import { Worker } from 'worker_threads';
import { IngestError, assert } from '../../util/errors';
import { DuplicatePair, MergeCheckpoint, MergeResult } from './mergeToSsts';
import { Progress } from '../progress';
import { FIRST_ENTRY_OFFSET, RunInfo, RunReadPlan, endOffsetAtOrAbove, startOffsetBelow } from './runFile';
import { WrittenFile } from './sstSetWriter';
import { MergeRangeTask, MergedRange, combineMergeRanges, removeMergedFiles } from './mergeRange';
import { startModuleWorker } from '../../util/workerBootstrap';

const PROGRESS_INTERVAL_MS = 200;
/** A pool never holds more standby workers than this (one per merge thread; the import uses 2). */
const MAX_POOLED_MERGE_WORKERS = 16;

/** What one merge worker does: a merge range (mergeRange.ts) and the worker's plumbing. Plain data. */
export interface MergeTask extends MergeRangeTask {
  /** Float64 slot per partition: rows merged so far. */
  progress: SharedArrayBuffer;
  /**
   * Report each SST as it is finished (a 'file' message with the counts up to its last key),
   * starting from these counts and numbering files from `firstFileIndex`: a resumable job
   * checkpoints them. Null: report only at the end.
   */
  report: { initial: MergeCheckpoint; firstFileIndex: number } | null;
  /**
   * Int32 slot per partition: files of this attempt the main thread has recorded (checkpointed),
   * notified on each. A reporting worker's onFileFinished returns only once its file is recorded,
   * so it starts its next file, and punches run bytes, only behind recorded files.
   */
  recorded: SharedArrayBuffer;
}

export type MergeReply =
  | { type: 'done'; result: MergeResult; files: WrittenFile[] }
  | { type: 'file'; file: WrittenFile; upTo: MergeCheckpoint }
  | { type: 'error'; message: string; code: string | null; stack: string };

/** A range's resumable state for mergeInWorkers: what its worker starts from, and what to call with each finished SST. */
export interface RangeReporting {
  initial: MergeCheckpoint[];
  /** Files of each range finished by an earlier attempt: they come first in the range's output. */
  finished: WrittenFile[][];
  onFileFinished(partition: number, file: WrittenFile, upTo: MergeCheckpoint): void;
}

export interface KeyRangePlan {
  lowHex: string | null;
  highHex: string | null;
  startOffsets: number[];
}

/** Cuts the key space into up to `parts` ranges of about equal run bytes. */
export function planKeyRanges(runs: readonly RunInfo[], parts: number): KeyRangePlan[] {
  const keys = runs.flatMap((r) => r.samples.map((s) => Buffer.from(s.keyHex, 'hex')));
  keys.sort(Buffer.compare);
  const splits: Buffer[] = [];
  for (let p = 1; p < parts; p++) {
    const k = keys[Math.floor((p * keys.length) / parts)];
    if (k === undefined) break;
    if (splits.length === 0 || Buffer.compare(splits[splits.length - 1], k) < 0) splits.push(k);
  }
  const bounds: (Buffer | null)[] = [null, ...splits, null];
  const plans: KeyRangePlan[] = [];
  for (let p = 0; p + 1 < bounds.length; p++) {
    const low = bounds[p];
    plans.push({
      lowHex: low === null ? null : low.toString('hex'),
      highHex: bounds[p + 1] === null ? null : (bounds[p + 1] as Buffer).toString('hex'),
      startOffsets: runs.map((r) => (low === null ? FIRST_ENTRY_OFFSET : startOffsetBelow(r, low))),
    });
  }
  return plans;
}

/**
 * What partition `p` of `plans` reads of each run, and what only it reads: it stops at the first
 * sample at or above its high bound; its left neighbour reads up to the first sample at or above
 * p's low bound (the neighbour's high) and its right neighbour from the neighbour's start offset,
 * so the bytes between those two are p's alone (see RunReadRegion).
 */
export function readRegionsOf(runs: readonly RunInfo[], plans: readonly KeyRangePlan[], p: number): RunReadPlan[] {
  const highOf = (q: number): Buffer | null => (plans[q].highHex === null ? null : Buffer.from(plans[q].highHex as string, 'hex'));
  const high = highOf(p);
  const leftHigh = p === 0 ? null : highOf(p - 1);
  return runs.map((run, r) => ({
    endOffset: high === null ? run.bytes : endOffsetAtOrAbove(run, high),
    punchFrom: leftHigh === null ? 0 : endOffsetAtOrAbove(run, leftHigh),
    punchTo: p + 1 < plans.length ? plans[p + 1].startOffsets[r] : run.bytes,
  }));
}

/**
 * Merge workers started ahead, while the import is still parsing: a worker's start-up (a new
 * isolate, then loading the table writer's modules: about 0.1 s of CPU) then overlaps the
 * parse's start, when one core is mostly idle, instead of delaying the merge. A standby worker
 * waits for its task as its first message; it is unref'd until taken, so it never keeps the
 * process alive, and `close` terminates the ones not taken. One that failed to start is
 * skipped (mergeInWorkers then starts a fresh one).
 */
export class MergeWorkerPool {
  private readonly idle: Worker[] = [];

  constructor(count: number, niceness = 0) {
    assert(Number.isInteger(count) && count >= 0 && count <= MAX_POOLED_MERGE_WORKERS, `merge worker pool of ${count}`);
    for (let i = 0; i < count; i++) this.adopt(startModuleWorker(__filename, 'mergeWorker', { standby: true }, { niceness }));
  }

  /**
   * Takes a worker already waiting for a merge task as its next message: a standby merge worker,
   * or a parse worker handed over (src/ingest/parse/parallelParse.ts). The caller has removed its
   * own listeners.
   */
  adopt(w: Worker): void {
    assert(this.idle.length < MAX_POOLED_MERGE_WORKERS, `merge worker pool above ${MAX_POOLED_MERGE_WORKERS}`);
    const dead = (): void => {
      const at = this.idle.indexOf(w);
      if (at >= 0) this.idle.splice(at, 1);
    };
    w.once('error', dead);
    w.once('exit', dead);
    w.unref();
    this.idle.push(w);
  }

  /** A standby worker, referenced again (the caller owns it), or null when none is left. */
  take(): Worker | null {
    const w = this.idle.shift();
    if (w === undefined) return null;
    w.removeAllListeners('error');
    w.removeAllListeners('exit');
    w.ref();
    return w;
  }

  close(): void {
    for (const w of this.idle.splice(0)) void w.terminate();
  }
}

export interface ParallelMergeOutcome {
  merge: MergeResult;
  /** All files, in key order. */
  files: WrittenFile[];
}

/** A MergeTask less what mergeInWorkers fills in per range. */
export type MergeTaskBase = Omit<
  MergeTask,
  'runs' | 'startOffsets' | 'regions' | 'lowHex' | 'highHex' | 'partition' | 'progress' | 'report' | 'recorded'
>;

/**
 * One task per key range: `base` with each range's bounds, start offsets and read regions (what
 * it alone reads of each run, readRegionsOf). The merge's workers and a caller of the phase
 * functions (src/ingest/phases.ts) build their tasks here.
 */
export function mergeRangeTasks(runs: RunInfo[], ranges: readonly KeyRangePlan[], base: MergeTaskBase): MergeRangeTask[] {
  return ranges.map((range, partition) => ({ ...base, runs, ...range, regions: readRegionsOf(runs, ranges, partition), partition }));
}

export async function mergeInWorkers(
  runs: RunInfo[],
  ranges: KeyRangePlan[],
  base: MergeTaskBase,
  totalRows: number,
  progress: Progress,
  niceness = 0,
  reporting: RangeReporting | null = null,
  pool: MergeWorkerPool | null = null,
): Promise<ParallelMergeOutcome> {
  const cells = new SharedArrayBuffer(ranges.length * Float64Array.BYTES_PER_ELEMENT);
  const recorded = new SharedArrayBuffer(ranges.length * Int32Array.BYTES_PER_ELEMENT);
  const timer = reportMergeProgress(new Float64Array(cells), ranges.length, totalRows, progress);
  const replies = await Promise.allSettled(
    mergeRangeTasks(runs, ranges, base).map((rangeTask) => {
      const partition = rangeTask.partition;
      const report =
        reporting === null ? null : { initial: reporting.initial[partition], firstFileIndex: reporting.finished[partition].length + 1 };
      const task: MergeTask = { ...rangeTask, progress: cells, report, recorded };
      return mergeRangeInWorker(task, pool, niceness, reporting);
    }),
  );
  clearInterval(timer);
  const done = replies.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = replies.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed !== undefined) {
    // Reported files may be a resumable job's: the importer's cleanup decides about them.
    if (reporting === null) removeMergedFiles(done);
    throw failed.reason;
  }
  const { result, files } = combineMergeRanges(done);
  return { merge: result, files };
}

/** Shows the rows the merge workers count in `merged` (one slot per range) every PROGRESS_INTERVAL_MS until cleared. */
function reportMergeProgress(merged: Float64Array, threads: number, totalRows: number, progress: Progress): NodeJS.Timeout {
  return setInterval(() => {
    progress.update({
      phase: `merge (${threads} threads)`,
      doneBytes: 0,
      totalBytes: null,
      rows: merged.reduce((a, b) => a + b, 0),
      totalRows,
    });
  }, PROGRESS_INTERVAL_MS);
}

/**
 * Runs one merge task in a worker (a standby one from `pool`, else a new one) and settles with
 * its outcome, or with its error. Each SST it reports as finished goes to `reporting`, and is
 * then counted as recorded for the worker to see (MergeTask.recorded).
 */
function mergeRangeInWorker(
  task: MergeTask,
  pool: MergeWorkerPool | null,
  niceness: number,
  reporting: RangeReporting | null,
): Promise<MergedRange> {
  const partition = task.partition;
  const recordedFiles = new Int32Array(task.recorded);
  return new Promise<MergedRange>((resolve, reject) => {
    const standby = pool?.take() ?? null;
    const w = standby ?? startModuleWorker(__filename, 'mergeWorker', task, { niceness });
    if (standby !== null) standby.postMessage(task);
    const onMessage = (reply: MergeReply): void => {
      if (reply.type === 'file') {
        try {
          reporting?.onFileFinished(partition, bufferedFile(reply.file), withBufferKeys(reply.upTo));
          Atomics.add(recordedFiles, partition, 1);
          Atomics.notify(recordedFiles, partition);
        } catch (e) {
          w.off('message', onMessage);
          reject(e);
          void w.terminate();
        }
        return;
      }
      w.off('message', onMessage);
      if (reply.type === 'done') {
        const earlier = reporting === null ? [] : reporting.finished[partition];
        resolve({ result: withBufferKeys(reply.result), files: [...earlier, ...reply.files.map(bufferedFile)] });
      } else reject(mergeWorkerError(reply));
      void w.terminate();
    };
    w.on('message', onMessage);
    w.once('error', reject);
    w.once('exit', (code) => reject(new Error(`merge worker exited with code ${code} before replying`)));
  });
}

/** The error a merge worker replied with: an IngestError where it had a code, else an Error with the worker's stack. */
function mergeWorkerError(reply: Extract<MergeReply, { type: 'error' }>): Error {
  return reply.code !== null
    ? new IngestError(reply.code as IngestError['code'], reply.message)
    : new Error(`merge worker failed: ${reply.message}\n${reply.stack}`);
}

/** A WrittenFile as a worker's message carries it (Buffers arrive as Uint8Arrays), with Buffers again. */
function bufferedFile(f: WrittenFile): WrittenFile {
  return { ...f, smallestUserKey: Buffer.from(f.smallestUserKey), largestUserKey: Buffer.from(f.largestUserKey) };
}

/** Counts with duplicate examples (a MergeCheckpoint or MergeResult) as a message carries them, with Buffer keys again. */
export function withBufferKeys<T extends { duplicates: DuplicatePair[] }>(counts: T): T {
  return { ...counts, duplicates: counts.duplicates.map((p) => ({ ...p, key: Buffer.from(p.key) })) };
}
