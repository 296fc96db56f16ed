/**
 * The compaction picker: decides which files a leveled compaction rewrites, from a Version.
 *
 * Triggers (RocksDB's leveled compaction, static level targets):
 * - L0 score = L0 file count / level0FileNumCompactionTrigger;
 * - Ln score (1 <= n < numLevels - 1) = bytes in Ln / maxBytesForLevel(n), where
 *   maxBytesForLevel(1) = maxBytesForLevelBase and each deeper level is maxBytesForLevelMultiplier
 *   times larger. The last level has no target: nothing lies below it.
 * The level with the highest score >= 1 is compacted into the next one.
 *
 * Inputs:
 * - From L0: the oldest L0 file, then every L0 file whose user-key range overlaps one already
 *   taken, until none does. For any user key, an L0 file left behind overlaps no file taken, so
 *   it holds nothing of the keys the output holds: the output (older data) goes below it safely.
 * - From Ln (n >= 1): one file, chosen by `compactionPri`:
 *   - 'min-overlapping-ratio' (default, RocksDB's kMinOverlappingRatio): the file whose
 *     overlapping bytes in Ln+1 are the smallest multiple of its own size, ties to the smaller
 *     keys. Compacting it rewrites the fewest bytes below per byte moved down, which is what
 *     write amplification counts. (RocksDB weighs a file's size up by its deletions; we use the
 *     file's size alone.)
 *   - 'round-robin' (LevelDB's): through the level by key, with a compact pointer per level (the
 *     largest key of the last file compacted there), so every part of the level gets its turn.
 * - Then every file of the output level whose user-key range overlaps the inputs' range (bounds
 *   inclusive, even for a file ending at an exclusive tombstone sentinel: conservative).
 * A single input file with nothing to merge with in the output level is moved down by a version
 * edit instead of being rewritten (a trivial move).
 *
 * Bottommost: no file in a level below the output level overlaps the inputs' user-key range. Only
 * then may the compaction drop point deletions and range tombstones (compactionIterator.ts).
 *
 * Manual compactions (Engine.compactRange) pick every file of one level overlapping a user-key
 * range (L0: expanded as above), into the next level or, at the last level with data, into the
 * same level (rewriting it in place to drop deletions).
 */
import { FileMetaData, NUM_LEVELS } from '../versionEdit';
import { Version } from '../version';
import { compareInternal, compareUserKeys } from '../../base/keyCompare';
import { userKeyOf } from '../../base/internalKey';
import { assert } from '../../util/errors';

/** How a level >= 1 chooses the file it compacts into the next level (see the module comment). */
export type CompactionPri = 'min-overlapping-ratio' | 'round-robin';

export const COMPACTION_PRIS: readonly CompactionPri[] = ['min-overlapping-ratio', 'round-robin'];

export interface LevelCompactionOptions {
  /** Levels used, <= NUM_LEVELS; the last one is numLevels - 1. */
  numLevels: number;
  compactionPri: CompactionPri;
  level0FileNumCompactionTrigger: number;
  maxBytesForLevelBase: number;
  maxBytesForLevelMultiplier: number;
}

export enum CompactionReason {
  Level0FileCount = 'level0-file-count',
  LevelSize = 'level-size',
  Manual = 'manual',
}

export interface Compaction {
  reason: CompactionReason;
  level: number;
  outputLevel: number;
  /** Input files at `level`, and at `outputLevel` (empty when outputLevel === level). */
  inputs: [FileMetaData[], FileMetaData[]];
  /** User-key range of all inputs, inclusive. */
  smallestUserKey: Buffer;
  largestUserKey: Buffer;
  bottommost: boolean;
  /** One input file, nothing to merge with: move it down instead of rewriting it. */
  trivialMove: boolean;
}

export function levelBytes(files: readonly FileMetaData[]): number {
  let n = 0;
  for (const f of files) n += f.fileSizeBytes;
  return n;
}

/** Target size of level >= 1. */
export function maxBytesForLevel(opts: LevelCompactionOptions, level: number): number {
  assert(level >= 1, 'L0 has a file-count trigger, not a size target');
  return opts.maxBytesForLevelBase * Math.pow(opts.maxBytesForLevelMultiplier, level - 1);
}

/** Scores of levels 0 .. numLevels-1 (the last level's is 0: it is never compacted by size). */
export function levelScores(version: Version, opts: LevelCompactionOptions): number[] {
  const scores: number[] = [];
  for (let level = 0; level < opts.numLevels; level++) {
    if (level === opts.numLevels - 1) scores.push(0);
    else if (level === 0) scores.push(version.files[0].length / opts.level0FileNumCompactionTrigger);
    else scores.push(levelBytes(version.files[level]) / maxBytesForLevel(opts, level));
  }
  return scores;
}

/** True when file f's user-key range [smallest, largest] meets [lo, hi] (null: unbounded). */
export function overlapsUserRange(f: FileMetaData, lo: Buffer | null, hi: Buffer | null): boolean {
  if (hi !== null && compareUserKeys(userKeyOf(f.smallest), hi) > 0) return false;
  if (lo !== null && compareUserKeys(userKeyOf(f.largest), lo) < 0) return false;
  return true;
}

export function overlappingFiles(files: readonly FileMetaData[], lo: Buffer | null, hi: Buffer | null): FileMetaData[] {
  return files.filter((f) => overlapsUserRange(f, lo, hi));
}

/** Every L0 file transitively overlapping `seed` (see the module comment), oldest first. */
export function expandLevel0(l0: readonly FileMetaData[], seed: readonly FileMetaData[]): FileMetaData[] {
  const taken = new Set(seed);
  let range = userRange(seed);
  for (let grew = true; grew;) {
    grew = false;
    for (const f of l0) {
      if (!taken.has(f) && overlapsUserRange(f, range.smallest, range.largest)) {
        taken.add(f);
        range = userRange([...taken]);
        grew = true;
      }
    }
  }
  // l0 is newest first; keep that order reversed (oldest first) for readability of logs.
  return l0.filter((f) => taken.has(f)).reverse();
}

/** Smallest and largest user keys over `files` (non-empty). */
export function userRange(files: readonly FileMetaData[]): { smallest: Buffer; largest: Buffer } {
  assert(files.length > 0, 'the range of no files');
  let smallest = userKeyOf(files[0].smallest);
  let largest = userKeyOf(files[0].largest);
  for (const f of files) {
    const s = userKeyOf(f.smallest);
    const l = userKeyOf(f.largest);
    if (compareUserKeys(s, smallest) < 0) smallest = s;
    if (compareUserKeys(l, largest) > 0) largest = l;
  }
  return { smallest, largest };
}

/**
 * The file of `files` (one level >= 1: sorted by key, disjoint) whose overlapping bytes in
 * `nextLevel` (sorted, disjoint) are the smallest multiple of its own size; ties go to the file
 * with smaller keys. One pass over both levels: a next-level file is passed over only once it
 * ends before the current file starts, since one crossing a boundary overlaps both neighbours.
 */
export function minOverlappingRatioFile(files: readonly FileMetaData[], nextLevel: readonly FileMetaData[]): FileMetaData {
  assert(files.length > 0, 'picking a file from an empty level');
  let best = files[0];
  let bestRatio = Infinity;
  let j = 0;
  for (const f of files) {
    const smallest = userKeyOf(f.smallest);
    const largest = userKeyOf(f.largest);
    while (j < nextLevel.length && compareUserKeys(userKeyOf(nextLevel[j].largest), smallest) < 0) j++;
    let overlappingBytes = 0;
    for (let k = j; k < nextLevel.length && compareUserKeys(userKeyOf(nextLevel[k].smallest), largest) <= 0; k++) {
      overlappingBytes += nextLevel[k].fileSizeBytes;
    }
    // A file of zero bytes cannot be written (every table has a footer); max() keeps the
    // division finite regardless.
    const ratio = overlappingBytes / Math.max(1, f.fileSizeBytes);
    if (ratio < bestRatio) {
      best = f;
      bestRatio = ratio;
    }
  }
  return best;
}

/** No file below `outputLevel` overlaps [lo, hi]. */
export function isBottommost(version: Version, outputLevel: number, lo: Buffer, hi: Buffer): boolean {
  for (let level = outputLevel + 1; level < NUM_LEVELS; level++) {
    for (const f of version.files[level]) if (overlapsUserRange(f, lo, hi)) return false;
  }
  return true;
}

export class CompactionPicker {
  private readonly opts: LevelCompactionOptions;
  /** Per level: largest key of the last file compacted out of it (round-robin's position). */
  private readonly compactPointers: Array<Buffer | null>;

  constructor(opts: LevelCompactionOptions) {
    assert(opts.numLevels >= 2 && opts.numLevels <= NUM_LEVELS, `numLevels must be in [2, ${NUM_LEVELS}], got ${opts.numLevels}`);
    this.opts = opts;
    this.compactPointers = new Array<Buffer | null>(NUM_LEVELS).fill(null);
  }

  /** The compaction the level scores call for, or null when every score is below 1. */
  pickAuto(version: Version): Compaction | null {
    const scores = levelScores(version, this.opts);
    let best = -1;
    for (let level = 0; level < scores.length; level++) {
      if (scores[level] >= 1 && (best < 0 || scores[level] > scores[best])) best = level;
    }
    if (best < 0) return null;
    if (best === 0) {
      const l0 = version.files[0];
      const inputs = expandLevel0(l0, [l0[l0.length - 1]]);
      return this.build(version, CompactionReason.Level0FileCount, 0, 1, inputs);
    }
    const files = version.files[best];
    let pick: FileMetaData;
    if (this.opts.compactionPri === 'min-overlapping-ratio') {
      pick = minOverlappingRatioFile(files, version.files[best + 1]);
    } else {
      const pointer = this.compactPointers[best];
      pick = files[0];
      if (pointer !== null) pick = files.find((f) => compareInternal(f.smallest, pointer) > 0) ?? files[0];
      this.compactPointers[best] = pick.largest;
    }
    return this.build(version, CompactionReason.LevelSize, best, best + 1, [pick]);
  }

  /**
   * The files of `level` overlapping user keys [from, to] (null: unbounded) compacted into
   * `outputLevel` (level + 1, or level itself to rewrite it in place), or null if none overlap.
   */
  pickManual(version: Version, level: number, outputLevel: number, from: Buffer | null, to: Buffer | null): Compaction | null {
    assert(
      outputLevel === level || outputLevel === level + 1,
      `a compaction writes to its own or the next level, not L${level} -> L${outputLevel}`,
    );
    assert(outputLevel >= 1 && outputLevel < this.opts.numLevels, `no compaction into L${outputLevel}`);
    let inputs = overlappingFiles(version.files[level], from, to);
    if (inputs.length === 0) return null;
    if (level === 0) inputs = expandLevel0(version.files[0], inputs);
    const c = this.build(version, CompactionReason.Manual, level, outputLevel, inputs);
    // A manual compaction rewrites even a lone file when it stays in its level.
    if (outputLevel === level) c.trivialMove = false;
    return c;
  }

  private build(version: Version, reason: CompactionReason, level: number, outputLevel: number, levelInputs: FileMetaData[]): Compaction {
    const range = userRange(levelInputs);
    const outputInputs = outputLevel === level ? [] : overlappingFiles(version.files[outputLevel], range.smallest, range.largest);
    const all = range;
    if (outputInputs.length > 0) {
      const r = userRange(outputInputs);
      if (compareUserKeys(r.smallest, all.smallest) < 0) all.smallest = r.smallest;
      if (compareUserKeys(r.largest, all.largest) > 0) all.largest = r.largest;
    }
    return {
      reason,
      level,
      outputLevel,
      inputs: [levelInputs, outputInputs],
      smallestUserKey: all.smallest,
      largestUserKey: all.largest,
      bottommost: isBottommost(version, outputLevel, all.smallest, all.largest),
      trivialMove: outputLevel !== level && levelInputs.length === 1 && outputInputs.length === 0,
    };
  }
}
