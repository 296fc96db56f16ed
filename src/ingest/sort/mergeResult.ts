/**
 * What a merge of sorted runs into SSTs reports, and what it is given, shared by its two
 * implementations (mergeToSsts.ts in JavaScript, nativeMerge.ts through native/mergeBlocks.c):
 * the duplicate-key policy, the counts and duplicate examples, the key range of a partition,
 * and a resumable job's checkpoints.
 */
import type { WrittenFile } from './sstSetWriter';
import { RunInfo, RunReadPlan, RunReadRegion, RunReader, WHOLE_RUN, startOffsetBelow } from './runFile';

export type DuplicatePolicy = 'error' | 'first' | 'last';
export const MAX_DUPLICATE_EXAMPLES = 100;
/** Entries between progress callbacks. */
export const PROGRESS_EVERY_ENTRIES = 1 << 16;

export interface RowPosition {
  source: number;
  line: number;
}

export interface DuplicatePair {
  key: Buffer;
  first: RowPosition;
  duplicate: RowPosition;
}

export interface MergeResult {
  /** Rows read from the runs. */
  rowsMerged: number;
  /** Rows written to SSTs. */
  rowsWritten: number;
  duplicateCount: number;
  duplicates: DuplicatePair[];
}

/** A key range [low, high) of the merge (null: unbounded), and where each run's reader starts for it. */
export interface MergeRange {
  low: Buffer | null;
  high: Buffer | null;
  startOffsets: number[];
  /** Per run, where to stop and what this merge alone reads (see RunReadRegion); absent: to the end, no punching. */
  regions?: readonly RunReadPlan[];
}

/**
 * Each run reader's region: a merge without a range is its runs' only reader and punches all it
 * reads; one with a range, only what its plan says it alone reads. Under resume hooks nothing is
 * punched until a file is recorded (punchingBehindCheckpoints), since a resume re-reads from there.
 */
export function readRegionsFor(
  runs: readonly RunInfo[],
  range: MergeRange | undefined,
  resume: MergeResumeHooks | undefined,
): (RunReadRegion | null)[] {
  const plans = range === undefined ? runs.map(() => WHOLE_RUN) : range.regions;
  if (plans === undefined) return runs.map(() => null);
  return plans.map((plan) => ({ ...plan, punchLimit: resume === undefined ? Infinity : 0 }));
}

/**
 * Wraps `resume`'s onFileFinished so that, once a file is recorded (the call has returned), the
 * readers may punch below where a resume would start: each run's last sample below the file's last key.
 */
export function punchingBehindCheckpoints(
  runs: readonly RunInfo[],
  readers: () => readonly RunReader[],
  resume: MergeResumeHooks,
): MergeResumeHooks {
  return {
    ...resume,
    onFileFinished(file, upToHere) {
      resume.onFileFinished(file, upToHere);
      const rs = readers();
      runs.forEach((run, i) => rs[i].allowPunchUpTo(startOffsetBelow(run, file.largestUserKey)));
    },
  };
}

/** What a merge has done up to the end of a finished file: the rows at or below its last key. */
export interface MergeCheckpoint {
  rowsWritten: number;
  duplicateCount: number;
  duplicates: DuplicatePair[];
}

/**
 * A resumable merge (src/ingest/resume/): it starts with the counts of the files an earlier
 * attempt finished (its range starts after their last key), and reports each file it finishes
 * with the counts up to that file's last key, so a later resume starts there.
 */
export interface MergeResumeHooks {
  initial: MergeCheckpoint;
  /**
   * Records `file` for a resume; when it returns, a resume would start after the file, so the
   * merge may punch the run bytes before that (punchingBehindCheckpoints).
   */
  onFileFinished(file: WrittenFile, upToHere: MergeCheckpoint): void;
}

/** A merge's result before its first row: zero, or where a resumed merge's earlier files left off. */
export function startingResult(resume: MergeResumeHooks | undefined): MergeResult {
  const base = resume?.initial ?? { rowsWritten: 0, duplicateCount: 0, duplicates: [] };
  return {
    rowsMerged: base.rowsWritten + base.duplicateCount,
    rowsWritten: base.rowsWritten,
    duplicateCount: base.duplicateCount,
    duplicates: [...base.duplicates],
  };
}

/**
 * The counts up to the last key of `file`, just finished: every duplicate so far but those of a
 * key after it (under "last", the held key whose add cut the file: its duplicates are counted
 * already, its row is not written yet; under "first" and "error" a cut comes at a new key's
 * first row, before any duplicate of it, and dupsOfPrevKey is 0).
 */
export function checkpointAt(file: WrittenFile, result: MergeResult, dupsOfPrevKey: number): MergeCheckpoint {
  const last = Buffer.from(file.largestUserKey);
  return {
    rowsWritten: result.rowsWritten,
    duplicateCount: result.duplicateCount - dupsOfPrevKey,
    duplicates: result.duplicates.filter((d) => Buffer.compare(d.key, last) <= 0),
  };
}
