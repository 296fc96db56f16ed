/**
 * The engine's state as one JSON document with stable field names: `ingest stats --json` prints
 * it and the server's GET /v1/stats returns it (docs/engine-cli.md lists the fields).
 *
 *   {"lastSequence", "levels": [{"level", "files": [{"number", "sizeBytes", "smallestHex",
 *    "largestHex", "smallestSeq", "largestSeq", "rangeDeletions"}]}] (every level, L0 newest
 *    file first; rangeDeletions: the range tombstones the table holds, from its properties),
 *    "compaction": {...} (the compaction counters),
 *    "spaceAmplification": {"estimate", "tableBytes", "lastLevel", "lastLevelBytes"}
 *    (spaceAmplification.ts: all table bytes per byte of the last level with data)}
 */
import { userKeyOf } from '../base/internalKey';
import { TableReader } from '../sstable/reader/tableReader';
import { Engine } from './engine';
import { tableFileName } from './fileNames';
import { spaceAmplificationOf } from './spaceAmplification';
import type { FileMetaData } from './versionEdit';

export interface StatsReportFile {
  number: number;
  sizeBytes: number;
  smallestHex: string;
  largestHex: string;
  smallestSeq: number;
  largestSeq: number;
  /** Range tombstones in the table (its rocksdb.num.range-deletions property; 0 when it cannot be read). */
  rangeDeletions: number;
}

export interface StatsReport {
  lastSequence: number;
  levels: { level: number; files: StatsReportFile[] }[];
  compaction: object;
  spaceAmplification: { estimate: number; tableBytes: number; lastLevel: number; lastLevelBytes: number };
}

/**
 * Per engine, each table file's range-deletion count. The engine's metadata does not carry it, so
 * it is read from the table's properties, once per file: a table file never changes under its
 * number, so a count read once stays true. Pruned to the live files on every report (so it holds
 * at most one entry per live file); a WeakMap, so a closed engine's counts go with it.
 */
const rangeDeletionCounts = new WeakMap<Engine, Map<number, number>>();

function rangeDeletionsOf(engine: Engine, levels: ReadonlyArray<ReadonlyArray<FileMetaData>>): Map<number, number> {
  const before = rangeDeletionCounts.get(engine) ?? new Map<number, number>();
  const counts = new Map<number, number>();
  for (const files of levels) {
    for (const f of files) {
      const known = before.get(f.fileNumber);
      const count = known ?? tableRangeDeletions(tableFileName(engine.dir, f.fileNumber));
      if (count !== null) counts.set(f.fileNumber, count);
    }
  }
  rangeDeletionCounts.set(engine, counts);
  return counts;
}

/** The table's range-deletion count from its properties, or null when it cannot be read now. */
function tableRangeDeletions(file: string): number | null {
  try {
    const reader = TableReader.open(file);
    try {
      return reader.properties.numRangeDeletions;
    } finally {
      reader.close();
    }
  } catch {
    // A table gone under the report (a compaction's input deleted) or unreadable: shown as 0, asked again next time.
    return null;
  }
}

export function statsReportOf(engine: Engine): StatsReport {
  const stats = engine.stats();
  const rangeDeletions = rangeDeletionsOf(engine, engine.levelFiles());
  const levels = engine.levelFiles().map((files, level) => ({
    level,
    files: files.map((f) => ({
      number: f.fileNumber,
      sizeBytes: f.fileSizeBytes,
      smallestHex: userKeyOf(f.smallest).toString('hex'),
      largestHex: userKeyOf(f.largest).toString('hex'),
      smallestSeq: f.smallestSeq,
      largestSeq: f.largestSeq,
      rangeDeletions: rangeDeletions.get(f.fileNumber) ?? 0,
    })),
  }));
  const { estimate, tableBytes, lastLevel, lastLevelBytes } = spaceAmplificationOf(engine.levelFiles());
  return {
    lastSequence: stats.lastSequence,
    levels,
    compaction: stats.compaction,
    spaceAmplification: { estimate, tableBytes, lastLevel, lastLevelBytes },
  };
}
