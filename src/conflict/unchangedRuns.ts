/**
 * Unchanged runs: which rows of new SSTs hold exactly the live value already, kept compactly so
 * that they can be left out of the ingestion (a night that changes nothing ingests nothing).
 *
 * A run is a stretch of consecutive entries of one SST file, every one of them unchanged:
 * { fileIndex, first, last, rows }. The conflict scan reports the SST keys in key order; an
 * unchanged key extends the current run, and anything else it meets (a new key, a conflict, a
 * skipped stretch, another file) ends it. So "every entry of file F with first <= key <= last"
 * is exactly `rows` unchanged entries, and a rewrite checks that count (rewrite.ts): a scan that
 * failed to end a run would be caught there, not turned into a lost row.
 *
 * Memory: two copied keys per run, up to maxBytes (default UNCHANGED_RUNS_MAX_BYTES) in all;
 * past that no new run is started and `complete` turns false. Leaving an unchanged row in is
 * always correct (ingesting a value over itself changes nothing a reader sees), so the bound
 * costs space, never correctness. A night with no change is one run per file; a night changing
 * one row in k is about n/k runs.
 */
import { assert } from '../util/errors';
import { compareByteRanges } from '../base/keyCompare';

/** Index of the first run of a file at or after `fileIndex` (runs.length when none is). */
function firstRunAtOrAfter(runs: readonly UnchangedRun[], fileIndex: number): number {
  let lo = 0;
  let hi = runs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (runs[mid].fileIndex < fileIndex) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Bytes of run keys kept at most (64 MiB: a million runs of 32-byte keys). */
export const UNCHANGED_RUNS_MAX_BYTES = 64 * 1024 * 1024;
/** Overhead counted per run besides its two keys (object, two buffers). */
const RUN_OVERHEAD_BYTES = 160;

export interface UnchangedRun {
  fileIndex: number;
  /** Smallest and largest user key of the run (copies). */
  first: Buffer;
  last: Buffer;
  rows: number;
}

export class UnchangedRuns {
  private readonly sealed: UnchangedRun[] = [];
  /** Unchanged rows in the runs (those left out of any run are not counted). */
  rowsInRuns = 0;
  /** False once the byte bound stopped a run from being started. */
  complete = true;
  private open: UnchangedRun | null = null;
  /** The open run's last key, copied into a reused buffer (one copy per run, not per row). */
  private openLast: Buffer = Buffer.alloc(64);
  private openLastLength = 0;
  private bytes = 0;

  constructor(private readonly maxBytes: number = UNCHANGED_RUNS_MAX_BYTES) {
    assert(maxBytes >= 0, `unchanged runs bound ${maxBytes}`);
  }

  /** An unchanged SST entry; `key` is a view valid only during the call. */
  add(key: Buffer, fileIndex: number): void {
    const run = this.open;
    if (run !== null && run.fileIndex === fileIndex) {
      // Compared in place: a view of openLast per unchanged row would be an allocation on the scan's hot path.
      assert(compareByteRanges(this.openLast, 0, this.openLastLength, key, 0, key.length) < 0, 'unchanged keys come in ascending order');
      this.setOpenLast(key);
      run.rows++;
      this.rowsInRuns++;
      return;
    }
    this.end();
    const previous = this.sealed.length === 0 ? null : this.sealed[this.sealed.length - 1];
    assert(previous === null || previous.fileIndex <= fileIndex, 'unchanged runs come in SST order (runsOf relies on it)');
    if (this.bytes + 2 * key.length + RUN_OVERHEAD_BYTES > this.maxBytes) {
      this.complete = false;
      return;
    }
    const first = Buffer.from(key);
    this.open = { fileIndex, first, last: first, rows: 1 };
    this.setOpenLast(key);
    this.bytes += 2 * key.length + RUN_OVERHEAD_BYTES;
    this.rowsInRuns++;
  }

  /** Something other than an unchanged entry came next in SST order: the open run ends. */
  end(): void {
    const run = this.open;
    if (run === null) return;
    run.last = Buffer.from(this.openLast.subarray(0, this.openLastLength));
    this.sealed.push(run);
    this.open = null;
  }

  /** Every run, in SST order (the open one ended first). */
  get runs(): readonly UnchangedRun[] {
    this.end();
    return this.sealed;
  }

  /** The runs of one file, in key order: a slice of the runs, which are in SST order (file indexes ascending). */
  runsOf(fileIndex: number): UnchangedRun[] {
    const runs = this.runs;
    return runs.slice(firstRunAtOrAfter(runs, fileIndex), firstRunAtOrAfter(runs, fileIndex + 1));
  }

  private setOpenLast(key: Buffer): void {
    if (key.length > this.openLast.length) this.openLast = Buffer.alloc(Math.max(key.length, 2 * this.openLast.length));
    key.copy(this.openLast, 0);
    this.openLastLength = key.length;
  }
}
