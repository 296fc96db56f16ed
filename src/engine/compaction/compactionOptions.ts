/**
 * Leveled compaction settings: the options an engine is opened with, their defaults (RocksDB's
 * names and values unless noted) and their validation. Consumed by the picker (triggers, level
 * targets), the scheduler (stalls, slices) and the outputs (file size).
 */
import { IngestError } from '../../util/errors';
import { NUM_LEVELS } from '../versionEdit';
import { COMPACTION_PRIS, CompactionPri } from './compactionPicker';

/** Leveled compaction settings (RocksDB's names and defaults unless noted). */
export interface CompactionOptions {
  /** Levels in use, 2..7 (default 7). */
  numLevels?: number;
  /** L0 files that trigger an L0 -> L1 compaction (default 4). */
  level0FileNumCompactionTrigger?: number;
  /**
   * L0 files from which writes are paced to delayedWriteRateBytesPerSecond (default 20), so that
   * compactions catch up before the stop trigger (see writeDelay.ts).
   */
  level0SlowdownWritesTrigger?: number;
  /** L0 files at which writers needing a new memtable wait for compactions (default 36). */
  level0StopWritesTrigger?: number;
  /** The write rate while slowed down, in bytes per second (default 16 MiB/s, RocksDB's). */
  delayedWriteRateBytesPerSecond?: number;
  /** Target size of L1 (default 64 MiB; RocksDB's is 256 MiB). */
  maxBytesForLevelBase?: number;
  /** Each level's target is this many times the previous one's (default 10). */
  maxBytesForLevelMultiplier?: number;
  /**
   * Which file a level >= 1 compacts next: 'min-overlapping-ratio' (default, RocksDB's default
   * kMinOverlappingRatio: the least rewriting below per byte moved down) or 'round-robin'
   * (LevelDB's: through the level by key). See compactionPicker.ts.
   */
  compactionPri?: CompactionPri;
  /** Compaction output files are cut at this size (default 64 MiB). */
  targetFileSizeBytes?: number;
  /** Never compact in the background (compactRange still works; L0 never stalls writes). */
  disableAutoCompactions?: boolean;
  /** Input entries a compaction processes between returns to the event loop (default 4096). */
  compactionSliceEntries?: number;
}

export type ResolvedCompactionOptions = Required<CompactionOptions>;

const DEFAULTS: ResolvedCompactionOptions = {
  numLevels: NUM_LEVELS,
  level0FileNumCompactionTrigger: 4,
  level0SlowdownWritesTrigger: 20,
  level0StopWritesTrigger: 36,
  delayedWriteRateBytesPerSecond: 16 * 1024 * 1024,
  maxBytesForLevelBase: 64 * 1024 * 1024,
  maxBytesForLevelMultiplier: 10,
  compactionPri: 'min-overlapping-ratio',
  targetFileSizeBytes: 64 * 1024 * 1024,
  disableAutoCompactions: false,
  compactionSliceEntries: 4096,
};

/** Fills in defaults and validates (IngestError INVALID_ARGUMENT). */
export function resolveCompactionOptions(o: CompactionOptions): ResolvedCompactionOptions {
  const r: ResolvedCompactionOptions = {
    numLevels: o.numLevels ?? DEFAULTS.numLevels,
    level0FileNumCompactionTrigger: o.level0FileNumCompactionTrigger ?? DEFAULTS.level0FileNumCompactionTrigger,
    level0SlowdownWritesTrigger: o.level0SlowdownWritesTrigger ?? DEFAULTS.level0SlowdownWritesTrigger,
    level0StopWritesTrigger: o.level0StopWritesTrigger ?? DEFAULTS.level0StopWritesTrigger,
    delayedWriteRateBytesPerSecond: o.delayedWriteRateBytesPerSecond ?? DEFAULTS.delayedWriteRateBytesPerSecond,
    maxBytesForLevelBase: o.maxBytesForLevelBase ?? DEFAULTS.maxBytesForLevelBase,
    maxBytesForLevelMultiplier: o.maxBytesForLevelMultiplier ?? DEFAULTS.maxBytesForLevelMultiplier,
    compactionPri: o.compactionPri ?? DEFAULTS.compactionPri,
    targetFileSizeBytes: o.targetFileSizeBytes ?? DEFAULTS.targetFileSizeBytes,
    disableAutoCompactions: o.disableAutoCompactions ?? DEFAULTS.disableAutoCompactions,
    compactionSliceEntries: o.compactionSliceEntries ?? DEFAULTS.compactionSliceEntries,
  };
  const check = (name: keyof ResolvedCompactionOptions, ok: boolean): void => {
    if (!ok) throw new IngestError('INVALID_ARGUMENT', `${name} is out of range: ${String(r[name])}`);
  };
  const int = (v: number, min: number, max = Number.MAX_SAFE_INTEGER): boolean => Number.isSafeInteger(v) && v >= min && v <= max;
  check('numLevels', int(r.numLevels, 2, NUM_LEVELS));
  check('level0FileNumCompactionTrigger', int(r.level0FileNumCompactionTrigger, 1));
  if (o.level0SlowdownWritesTrigger === undefined) {
    // The default moves into [compaction trigger, stop trigger] when those are set around it.
    r.level0SlowdownWritesTrigger = Math.min(
      Math.max(DEFAULTS.level0SlowdownWritesTrigger, r.level0FileNumCompactionTrigger),
      r.level0StopWritesTrigger,
    );
  }
  check('level0StopWritesTrigger', int(r.level0StopWritesTrigger, r.level0FileNumCompactionTrigger));
  check('level0SlowdownWritesTrigger', int(r.level0SlowdownWritesTrigger, r.level0FileNumCompactionTrigger, r.level0StopWritesTrigger));
  check('delayedWriteRateBytesPerSecond', Number.isFinite(r.delayedWriteRateBytesPerSecond) && r.delayedWriteRateBytesPerSecond >= 1);
  check('maxBytesForLevelBase', int(r.maxBytesForLevelBase, 1));
  check('maxBytesForLevelMultiplier', Number.isFinite(r.maxBytesForLevelMultiplier) && r.maxBytesForLevelMultiplier > 1);
  check('compactionPri', COMPACTION_PRIS.includes(r.compactionPri));
  check('targetFileSizeBytes', int(r.targetFileSizeBytes, 1));
  check('compactionSliceEntries', int(r.compactionSliceEntries, 1));
  return r;
}
