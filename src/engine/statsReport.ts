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
import { Engine } from './engine';
import { spaceAmplificationOf } from './spaceAmplification';

export interface StatsReportFile {
  number: number;
  sizeBytes: number;
  smallestHex: string;
  largestHex: string;
  smallestSeq: number;
  largestSeq: number;
  /** Range tombstones in the table (its rocksdb.num.range-deletions property). */
  rangeDeletions: number;
}

export interface StatsReport {
  lastSequence: number;
  levels: { level: number; files: StatsReportFile[] }[];
  compaction: object;
  spaceAmplification: { estimate: number; tableBytes: number; lastLevel: number; lastLevelBytes: number };
}

export function statsReportOf(engine: Engine): StatsReport {
  const stats = engine.stats();
  const rangeDeletions = engine.rangeDeletionsPerFile();
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
