/**
 * Running compactions' output ranges: the key ranges that compactions now in progress will write
 * into which levels, so that ingestion never places a file where a compaction is about to install
 * overlapping output (the two edits would break the level's disjointness, or the compaction's
 * output, written from older data, would land below a newer ingested file in the wrong order).
 *
 * Contract (for the compaction, which fills this in):
 * - When a compaction has chosen its inputs, and before it yields to the event loop, it calls
 *   `register(outputLevel, smallestUserKey, largestUserKey, largestExclusive)` with the user-key
 *   range its outputs can cover (the union of its inputs' bounds; `largestExclusive` when that
 *   range ends at a range-tombstone sentinel) and keeps the returned handle.
 * - It calls `handle.release()` exactly once, after its version edit is installed or after it
 *   failed or was abandoned. Releasing twice is a bug (asserted).
 * Ingestion (ingest/levelPlacement.ts) calls `overlaps(level, range)` in the synchronous step that
 * decides its placement, so a compaction registered at that moment is seen and one that registers
 * later sees the ingested files in the version it picks from.
 *
 * Keys are user keys; Buffers are held by reference (the compaction must not modify them).
 */
import { assert } from '../util/errors';
import { compareUserKeys } from '../base/keyCompare';
import { formatKey } from '../base/internalKey';

/** A user-key range [smallest, largest] (or [smallest, largest) when largestExclusive). */
export interface UserKeyRange {
  smallest: Buffer;
  largest: Buffer;
  largestExclusive: boolean;
}

export interface RunningCompactionHandle {
  readonly outputLevel: number;
  readonly range: UserKeyRange;
  release(): void;
}

/** `[smallest, largest]`, or `[smallest, largest)` when largestExclusive, keys shown by formatKey. */
export function describeUserKeyRange(r: UserKeyRange): string {
  return `[${formatKey(r.smallest)}, ${formatKey(r.largest)}${r.largestExclusive ? ')' : ']'}`;
}

/** True when user key `key` is not past the end of `range`. */
export function keyBeforeRangeEnd(key: Buffer, range: UserKeyRange): boolean {
  const c = compareUserKeys(key, range.largest);
  return range.largestExclusive ? c < 0 : c <= 0;
}

/** True when two user-key ranges share at least one user key. */
export function userKeyRangesOverlap(a: UserKeyRange, b: UserKeyRange): boolean {
  return keyBeforeRangeEnd(a.smallest, b) && keyBeforeRangeEnd(b.smallest, a);
}

export class RunningCompactions {
  private readonly running = new Set<RunningCompactionHandle>();

  register(outputLevel: number, smallest: Buffer, largest: Buffer, largestExclusive = false): RunningCompactionHandle {
    assert(compareUserKeys(smallest, largest) <= 0, 'a compaction output range starts before it ends');
    let released = false;
    const handle: RunningCompactionHandle = {
      outputLevel,
      range: { smallest, largest, largestExclusive },
      release: () => {
        assert(!released, 'running compaction handle released twice');
        released = true;
        this.running.delete(handle);
      },
    };
    this.running.add(handle);
    return handle;
  }

  /** True when a running compaction writes output overlapping `range` into `level`. */
  overlaps(level: number, range: UserKeyRange): boolean {
    for (const c of this.running) {
      if (c.outputLevel === level && userKeyRangesOverlap(c.range, range)) return true;
    }
    return false;
  }

  get count(): number {
    return this.running.size;
  }
}
