/**
 * The JSON documents the console reads, as the server sends them (docs/serve.md and
 * docs/console.md describe the fields). The console is bundled on its own, without the server's
 * sources, so the shapes are written out here; the browser test (test/server/console.test.ts)
 * compares what the console draws with the same documents fetched directly, so a drift shows.
 *
 *   GET /v1/stats                            StatsDoc (the LSM: "levels", "spaceAmplification")
 *   GET /v1/console/imports                  ImportsDoc {running, recent}, newest first
 *   GET /v1/console/imports/{id}/conflicts   ConflictsPage (offset, limit, prefix, file)
 *   GET /v1/console/history                  HistoryDoc (one sample a second, oldest first)
 */

export interface StatsFile {
  number: number;
  sizeBytes: number;
  smallestHex: string;
  largestHex: string;
  smallestSeq: number;
  largestSeq: number;
  /** Range tombstones in the file; absent from a server older than the console. */
  rangeDeletions?: number;
}

export interface StatsDoc {
  lastSequence: number;
  levels: { level: number; files: StatsFile[] }[];
  compaction: { count?: number; trivialMoves?: number; bytesWritten?: number; running?: boolean };
  spaceAmplification: { estimate: number; tableBytes: number; lastLevel: number; lastLevelBytes: number };
  server?: { importsRunning?: number; importsQueued?: number; requests?: number; errors?: number };
}

export type ImportOutcome = 'running' | 'landed' | 'conflicts' | 'failed' | 'checked' | 'planned';

export interface ImportCounts {
  sstKeys: number;
  new: number;
  unchanged: number;
  conflicts: number;
}

export interface ImportView {
  id: string;
  kind: 'csv' | 'sst' | 'staged';
  name: string;
  mode: 'import' | 'check' | 'plan';
  startedAt: string;
  finishedAt: string | null;
  phase: string;
  rows: number;
  bytes: number;
  totalBytes: number | null;
  rowsPerSecond: number;
  etaSeconds: number | null;
  outcome: ImportOutcome;
  counts: ImportCounts | null;
  error: { code: string; message: string } | null;
  reportAvailable: boolean;
}

export interface ImportsDoc {
  running: ImportView[];
  recent: ImportView[];
}

export interface ShownValue {
  encoding: 'utf8' | 'hex';
  data: string;
  sizeBytes: number;
  truncated: boolean;
}

export interface ReportedConflict {
  key: string;
  keyHex: string;
  existingValue: ShownValue;
  newValue: ShownValue;
  existingSeq: number;
  source: { file: string; line: number } | null;
  sstFile: string;
}

export interface ConflictsPage {
  id: string;
  total: number;
  offset: number;
  limit: number;
  conflicts: ReportedConflict[];
}

export interface HistorySample {
  /** Epoch milliseconds (the interval's end). */
  t: number;
  /** Data reads and writes answered in the interval. */
  reads: number;
  writes: number;
  readsPerSecond: number;
  writesPerSecond: number;
  /** The interval's reads' and writes' latency percentiles; null when there were none. */
  latencyP50Ms: number | null;
  latencyP99Ms: number | null;
  compactionBytesPerSecond: number;
  flushBytesPerSecond: number;
  stalls: number;
  memtableBytes: number;
}

export interface HistoryDoc {
  intervalMs: number;
  samples: HistorySample[];
}
