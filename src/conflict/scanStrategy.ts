/**
 * The conflict scan's strategies and what an adaptive scan (adaptiveScan.ts) reports of its
 * choices between them, in the conflict report (report.ts). Types only, in a file of their own so
 * that the report and the scan that fills it in do not import each other.
 */

/** seek: the interleaved SeekGE + trySeekUsingNext of scan.ts; get: one point lookup per SST key. */
export type ScanStrategy = 'seek' | 'get';

export interface AdaptiveScanStats {
  /** The strategy of the first chunk. */
  firstStrategy: ScanStrategy;
  /** SST keys classified by point lookups; the rest of the run went by the interleaved seeks. */
  getKeys: number;
  seekKeys: number;
  chunks: number;
  /** Chunks run by the strategy not preferred at the time, to measure it. */
  explorations: number;
  /** Times the preferred strategy changed. */
  switches: number;
  /** The last estimates, nanoseconds per SST key, rounded; null if never measured. */
  seekCostPerKeyNs: number | null;
  getCostPerKeyNs: number | null;
}
