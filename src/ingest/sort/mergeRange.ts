/**
 * One merge range: every run's part of one key range [low, high), merged into SSTs. The unit of
 * the merge phase, run by a merge worker (mergeWorker.ts), or by a caller of the phase functions
 * (src/ingest/phases.ts) wherever it likes; combineMergeRanges puts the ranges' results together.
 *
 * Contract (asserted at both ends):
 * - in: the key range is ordered (low < high where both are given); the runs are sorted, each
 *   read from its start offset for this range, up to its region's end;
 * - out: the files are in key order and disjoint, each inside [low, high), cut as an
 *   uninterrupted merge cuts them (SstSetWriter, --target-file-size); their entries add up to the
 *   rows written. Under --on-duplicate error a duplicate leaves no file (the import fails).
 * - durability: each file is fsynced when finished, under its temporary name in outputDir; the
 *   caller publishes (renames) them. A failure removes the files this call wrote, except the
 *   ones already reported to `resume` (a resumable job's, kept for its cleanup to decide).
 * - runs: the parts of runs only this range reads may be punched out (freed) as it goes
 *   (`regions`), so a range's runs are not read twice.
 */
import { assert } from '../../util/errors';
import { DuplicatePair, MAX_DUPLICATE_EXAMPLES, MergeResult, MergeResumeHooks, mergeRunsIntoSsts } from './mergeToSsts';
import { RunInfo, RunReadPlan } from './runFile';
import { DuplicatePolicy } from './mergeResult';
import { SstFileWriterOptions } from '../../sstwriter/sstFileWriter';
import { RowOriginSources, SstSetWriter, WrittenFile, removeFiles } from './sstSetWriter';

/** One key range of the merge, as a task. Plain data: it crosses to workers, and serialized (hex keys) to other machines. */
export interface MergeRangeTask {
  runs: RunInfo[];
  /** Per run, where this range's reader starts (a run sample's offset at or below `low`). */
  startOffsets: number[];
  /** Per run, where this range stops reading and what it alone reads (parallelMerge.ts's readRegionsOf). */
  regions: RunReadPlan[];
  /** The range [low, high) in hex; null: unbounded. */
  lowHex: string | null;
  highHex: string | null;
  policy: DuplicatePolicy;
  readBufferBytes: number;
  outputDir: string;
  /** The import's token: temporary file names start with tempPrefix(token). */
  token: string;
  /** The range's position: it names the range's temporary files apart from the others'. */
  partition: number;
  targetFileSizeBytes: number;
  sstOptions: Partial<SstFileWriterOptions>;
  /** Write an origins side file beside each SST (see src/ingest/sort/sstSetWriter.ts); null: none. */
  rowOrigins: RowOriginSources | null;
}

/** A range's outcome: its counts, and its files in key order. */
export interface MergedRange {
  result: MergeResult;
  files: WrittenFile[];
}

/** What a caller running the range may add: progress, and a resumable job's hooks (numbering after `firstFileIndex - 1` earlier files). */
export interface MergeRangeHooks {
  onProgress?: (rowsMerged: number) => void;
  resume?: MergeResumeHooks;
  firstFileIndex?: number;
}

function bufferOfHex(hex: string | null): Buffer | null {
  return hex === null ? null : Buffer.from(hex, 'hex');
}

/** Merges one key range of the runs into SSTs; see the module comment. */
export function mergeRange(task: MergeRangeTask, hooks: MergeRangeHooks = {}): MergedRange {
  const low = bufferOfHex(task.lowHex);
  const high = bufferOfHex(task.highHex);
  assert(low === null || high === null || Buffer.compare(low, high) < 0, `merge range ${task.partition}: low is not below high`);
  assert(task.startOffsets.length === task.runs.length && task.regions.length === task.runs.length, 'one start and region per run');
  const out = new SstSetWriter(task.outputDir, task.token, task.partition, task.targetFileSizeBytes, task.sstOptions, task.rowOrigins);
  if (hooks.firstFileIndex !== undefined) out.firstFileIndex = hooks.firstFileIndex;
  try {
    const range = { low, high, startOffsets: task.startOffsets, regions: task.regions };
    const result = mergeRunsIntoSsts(task.runs, task.policy, out, task.readBufferBytes, hooks.onProgress, range, hooks.resume);
    // Under the error policy a duplicate means the import fails: no need to finish the files.
    if (result.duplicateCount > 0 && task.policy === 'error') {
      out.abort();
      return { result, files: [] };
    }
    const files = out.finish();
    assertFilesWithin(files, low, high, task.partition);
    const entries = files.reduce((a, f) => a + f.entries, 0);
    const earlier = hooks.resume?.initial.rowsWritten ?? 0;
    assert(
      entries === result.rowsWritten - earlier,
      `merge range ${task.partition}: ${entries} entries for ${result.rowsWritten - earlier} rows`,
    );
    return { result, files };
  } catch (e) {
    out.abort(hooks.resume !== undefined);
    throw e;
  }
}

/** The files are in key order, disjoint, and inside [low, high). */
export function assertFilesWithin(files: readonly WrittenFile[], low: Buffer | null, high: Buffer | null, partition: number): void {
  let previousLargest: Uint8Array | null = null;
  for (const f of files) {
    assert(Buffer.compare(f.smallestUserKey, f.largestUserKey) <= 0, `merge range ${partition}: a file's smallest key above its largest`);
    assert(previousLargest === null || Buffer.compare(previousLargest, f.smallestUserKey) < 0, `merge range ${partition}: files overlap`);
    assert(low === null || Buffer.compare(low, f.smallestUserKey) <= 0, `merge range ${partition}: a file starts below the range`);
    assert(high === null || Buffer.compare(f.largestUserKey, high) < 0, `merge range ${partition}: a file ends at or above the range`);
    previousLargest = f.largestUserKey;
  }
}

/**
 * The ranges' outcomes, in range order, as one: counts added up, the first MAX_DUPLICATE_EXAMPLES
 * duplicates in key order, the files concatenated (sorted and disjoint across ranges).
 */
export function combineMergeRanges(ranges: readonly MergedRange[]): MergedRange {
  const duplicates: DuplicatePair[] = ranges.flatMap((d) => d.result.duplicates);
  duplicates.sort((a, b) => Buffer.compare(a.key, b.key));
  const result: MergeResult = {
    rowsMerged: ranges.reduce((a, d) => a + d.result.rowsMerged, 0),
    rowsWritten: ranges.reduce((a, d) => a + d.result.rowsWritten, 0),
    duplicateCount: ranges.reduce((a, d) => a + d.result.duplicateCount, 0),
    duplicates: duplicates.slice(0, MAX_DUPLICATE_EXAMPLES),
  };
  const files = ranges.flatMap((d) => d.files);
  assertFilesWithin(files, null, null, -1);
  return { result, files };
}

/** Removes every file of the ranges (a failed merge whose files no job keeps). */
export function removeMergedFiles(ranges: readonly MergedRange[]): void {
  for (const d of ranges) removeFiles(d.files);
}
