/**
 * Level placement for an ingested file: which level it goes into, and whether it needs a sequence
 * number above the existing data.
 *
 * The walk (RocksDB's rule for ingestion under leveled compaction), for the file's span R:
 *
 *   for level = 0, 1, ..., numLevels - 1:
 *     stop if a running compaction will write output overlapping R into this level
 *     stop if some data of this level lies in R (points or range tombstones)
 *     if level == 0 or R intersects no file span of this level: target = level
 *
 *   e.g. R = [m, n]:  L0 -            target 0 (L0 always fits)
 *                     L4 [a....z]     spans R, holds no key in R: passed, does not fit
 *                     L5 -            fits: target 5
 *                     L6 [k, m, q]    holds m: stop.   -> level 5, overlaps data
 *
 * The file goes to the deepest level passed where it fits. Stopping at a level means the file
 * overlaps data already in the database (or about to be, for a compaction's output), so it must
 * be newer than that data: it gets the next sequence number, and every level it could land in
 * lies above the overlapping one, so reads meet it first. A file that overlaps nothing ends in
 * the deepest level it fits (normally the bottom one) and may keep sequence number 0.
 *
 * Files placed earlier in the same ingestion (`pending`, not yet in the version) count as data
 * and as file spans of their level, like installed files.
 *
 * `unflushedOverlaps`, when given, says the file overlaps memtable data: that data would be in L0
 * after the flush ingestion performs first, so the walk stops at L0 (used by planning, which does
 * not flush).
 */
import { Version } from '../version';
import { TableCache } from '../tableCache';
import { RunningCompactions, UserKeyRange, userKeyRangesOverlap } from '../runningCompactions';
import { levelBoundariesOverlap, levelHasDataIn } from './overlap';

/** A file placed by this ingestion but not yet installed. */
export interface PendingFile {
  level: number;
  range: UserKeyRange;
}

export interface PlacementContext {
  version: Version;
  tableCache: TableCache;
  runningCompactions: RunningCompactions;
  /** Levels in use; the walk ends at numLevels - 1, the bottom. */
  numLevels: number;
  pending: readonly PendingFile[];
  unflushedOverlaps?: boolean;
}

/** Why the walk stopped above the bottom. */
export type StopReason = 'memtable' | 'data' | 'compaction' | 'pending' | null;

export interface Placement {
  level: number;
  /** The file overlaps existing (or pending, or soon-compacted) data: it needs a sequence number. */
  overlapsData: boolean;
  /** The level the walk stopped at, or null if it went to the bottom. */
  stoppedAtLevel: number | null;
  stopReason: StopReason;
}

export function placeIngestedFile(range: UserKeyRange, ctx: PlacementContext): Placement {
  if (ctx.unflushedOverlaps === true) return { level: 0, overlapsData: true, stoppedAtLevel: 0, stopReason: 'memtable' };
  let target = 0;
  for (let level = 0; level < ctx.numLevels; level++) {
    let reason: StopReason = null;
    if (ctx.runningCompactions.overlaps(level, range)) reason = 'compaction';
    else if (pendingOverlap(ctx.pending, level, range)) reason = 'pending';
    else if (levelHasDataIn(ctx.tableCache, ctx.version.files[level], level, range)) reason = 'data';
    if (reason !== null) return { level: target, overlapsData: true, stoppedAtLevel: level, stopReason: reason };
    if (level === 0 || !levelBoundariesOverlap(ctx.version.files[level], level, range)) target = level;
  }
  return { level: target, overlapsData: false, stoppedAtLevel: null, stopReason: null };
}

function pendingOverlap(pending: readonly PendingFile[], level: number, range: UserKeyRange): boolean {
  for (const p of pending) if (p.level === level && userKeyRangesOverlap(p.range, range)) return true;
  return false;
}
