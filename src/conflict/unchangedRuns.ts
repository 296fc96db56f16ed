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
import { compareUserKeys } from '../base/keyCompare';

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
      assert(compareUserKeys(this.openLast.subarray(0, this.openLastLength), key) < 0, 'unchanged keys come in ascending order');
      this.setOpenLast(key);
      run.rows++;
      this.rowsInRuns++;
      return;
    }
    this.end();
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

  /** The runs of one file, in key order. */
  runsOf(fileIndex: number): UnchangedRun[] {
    return this.runs.filter((r) => r.fileIndex === fileIndex);
  }

  private setOpenLast(key: Buffer): void {
    if (key.length > this.openLast.length) this.openLast = Buffer.alloc(Math.max(key.length, 2 * this.openLast.length));
    key.copy(this.openLast, 0);
    this.openLastLength = key.length;
  }
}
