/**
 * Space amplification: how many bytes of tables a database holds per byte it would hold fully
 * compacted, estimated from its shape alone (no reads), as RocksDB's universal compaction does:
 *
 *   estimate = all table bytes / bytes of the last level with data
 *
 * The last level with data stands for the compacted database; everything above it is counted
 * as if it were older versions still to be dropped. So when the upper levels hold overwrites of
 * keys below (a night's `--on-conflict overwrite`), the estimate is the true figure; when they
 * hold new keys it overstates, and a policy acting on it compacts early, never late. Deletions
 * (point or range) in upper levels make it understate: the data they delete below is still
 * counted as live; an import with a replace range compacts the range it replaced for that reason
 * (src/ingest/spacePolicy.ts). When the only level with data is L0, its largest file stands for
 * the compacted database (L0 files overlap one another).
 *
 * `spanAbove` is the user-key span of every file above that level: compacting it (Engine
 * compactRange) merges the upper levels into the last one, which brings the estimate to 1.
 */
import { FileMetaData } from './versionEdit';
import { userRange } from './compaction/compactionPicker';
import { roundTo3Decimals } from '../util/rounding';

export interface SpaceAmplification {
  /** Bytes of every live table. */
  tableBytes: number;
  /** The last level holding a table, or -1 when there is none. */
  lastLevel: number;
  /** Bytes standing for the compacted database (see the module comment). */
  lastLevelBytes: number;
  /** tableBytes / lastLevelBytes, rounded to 3 decimals; 1 for an empty database. */
  estimate: number;
  /** User keys [smallest, largest] of the files above lastLevel; null when there are none. */
  spanAbove: { smallest: Buffer; largest: Buffer } | null;
}

export function spaceAmplificationOf(levels: ReadonlyArray<ReadonlyArray<FileMetaData>>): SpaceAmplification {
  let tableBytes = 0;
  let lastLevel = -1;
  for (let level = 0; level < levels.length; level++) {
    for (const f of levels[level]) tableBytes += f.fileSizeBytes;
    if (levels[level].length > 0) lastLevel = level;
  }
  if (lastLevel < 0) return { tableBytes: 0, lastLevel, lastLevelBytes: 0, estimate: 1, spanAbove: null };
  const bottom = levels[lastLevel];
  const lastLevelBytes =
    lastLevel === 0 ? Math.max(...bottom.map((f) => f.fileSizeBytes)) : bottom.reduce((n, f) => n + f.fileSizeBytes, 0);
  const above = lastLevel === 0 ? bottom.slice() : levels.slice(0, lastLevel).flat();
  const estimate = lastLevelBytes > 0 ? roundTo3Decimals(tableBytes / lastLevelBytes) : 1;
  return { tableBytes, lastLevel, lastLevelBytes, estimate, spanAbove: spanOf(lastLevel === 0 && above.length === 1 ? [] : above) };
}

function spanOf(files: readonly FileMetaData[]): { smallest: Buffer; largest: Buffer } | null {
  if (files.length === 0) return null;
  const { smallest, largest } = userRange(files);
  return { smallest: Buffer.from(smallest), largest: Buffer.from(largest) };
}
