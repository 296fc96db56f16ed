/**
 * The back half of the external sort: merge the runs into output SSTs (or into a bigger run when
 * there are more runs than one merge may open), applying the duplicate-key policy.
 *
 * Duplicates: rows come out of the merge in (key, input order), so the rows sharing a key are
 * adjacent and the first of them is the earliest in the input.
 * - error: nothing more is written after the first duplicate; the merge runs to the end anyway so
 *   the count is exact, and keeps the first MAX_DUPLICATE_EXAMPLES pairs (first row, duplicate row);
 * - first: the earliest row of each key is written;
 * - last: the latest row of each key is written (held back until the key changes).
 */
import { copyBytes } from '../sstwriter/byteRanges';
import { RunInfo, RunReader, RunWriter } from './runFile';
import { RunMerger, compareRanges } from './runMerger';
import { SstSetWriter } from './sstSetWriter';

export type DuplicatePolicy = 'error' | 'first' | 'last';
export const MAX_DUPLICATE_EXAMPLES = 100;
/** Entries between progress callbacks. */
const PROGRESS_EVERY_ENTRIES = 1 << 16;

export interface RowPosition {
  source: number;
  line: number;
}

export interface DuplicatePair {
  key: Buffer;
  first: RowPosition;
  duplicate: RowPosition;
}

export interface MergeResult {
  /** Rows read from the runs. */
  rowsMerged: number;
  /** Rows written to SSTs. */
  rowsWritten: number;
  duplicateCount: number;
  duplicates: DuplicatePair[];
}

/**
 * A copy of one key (or value) in a Buffer of exactly its length, reused while the length stays
 * the same (always, for fixed-width keys), so handing it on costs no view per row.
 */
class Held {
  buf = Buffer.allocUnsafe(0);
  set(src: Buffer, start: number, end: number): void {
    const n = end - start;
    if (n !== this.buf.length) this.buf = Buffer.allocUnsafe(n);
    copyBytes(src, start, end, this.buf, 0);
  }
}

/** A key range [low, high) of the merge (null: unbounded), and where each run's reader starts for it. */
export interface MergeRange {
  low: Buffer | null;
  high: Buffer | null;
  startOffsets: number[];
}

export function mergeRunsIntoSsts(
  runs: readonly RunInfo[],
  policy: DuplicatePolicy,
  out: SstSetWriter,
  readBufferBytes: number,
  onProgress?: (rowsMerged: number) => void,
  range?: MergeRange,
): MergeResult {
  // Without a range this merge is the runs' only reader: each run is deleted once read.
  const merger = new RunMerger(runs, readBufferBytes, range?.startOffsets, range === undefined);
  const low = range?.low ?? null;
  const high = range?.high ?? null;
  const prevKey = new Held();
  const heldValue = new Held();
  let havePrev = false;
  let holding = false; // policy "last": prevKey/heldValue not yet written
  let firstSource = 0;
  let firstLine = 0;
  let writing = true;
  const result: MergeResult = { rowsMerged: 0, rowsWritten: 0, duplicateCount: 0, duplicates: [] };
  try {
    while (merger.next()) {
      const r = merger.current as RunReader;
      const buf = r.buf;
      // A partition's readers start at a sample below its range: skip up to it, stop past it.
      if (low !== null && compareRanges(buf, r.keyStart, r.keyEnd, low, 0, low.length) < 0) continue;
      if (high !== null && compareRanges(buf, r.keyStart, r.keyEnd, high, 0, high.length) >= 0) break;
      result.rowsMerged++;
      if ((result.rowsMerged & (PROGRESS_EVERY_ENTRIES - 1)) === 0) onProgress?.(result.rowsMerged);
      if (havePrev && compareRanges(buf, r.keyStart, r.keyEnd, prevKey.buf, 0, prevKey.buf.length) === 0) {
        result.duplicateCount++;
        if (result.duplicates.length < MAX_DUPLICATE_EXAMPLES) {
          result.duplicates.push({
            key: Buffer.from(buf.subarray(r.keyStart, r.keyEnd)),
            first: { source: firstSource, line: firstLine },
            duplicate: { source: r.source, line: r.line },
          });
        }
        if (policy === 'error') writing = false;
        else if (policy === 'last') heldValue.set(buf, r.keyEnd, r.valueEnd);
        continue;
      }
      if (holding) {
        if (writing) out.add(prevKey.buf, heldValue.buf);
        result.rowsWritten++;
      }
      prevKey.set(buf, r.keyStart, r.keyEnd);
      havePrev = true;
      firstSource = r.source;
      firstLine = r.line;
      if (policy === 'last') {
        heldValue.set(buf, r.keyEnd, r.valueEnd);
        holding = true;
      } else {
        if (writing) out.add(prevKey.buf, buf.subarray(r.keyEnd, r.valueEnd));
        result.rowsWritten++;
      }
    }
    if (holding) {
      if (writing) out.add(prevKey.buf, heldValue.buf);
      result.rowsWritten++;
    }
    if (!writing) result.rowsWritten = 0;
    onProgress?.(result.rowsMerged);
    return result;
  } finally {
    merger.close();
  }
}

/** Merges runs into one run, keeping every row (no duplicate handling): for too many runs. */
export function mergeRunsIntoRun(runs: readonly RunInfo[], path: string, readBufferBytes: number): RunInfo {
  const merger = new RunMerger(runs, readBufferBytes, undefined, true);
  const w = new RunWriter(path);
  try {
    while (merger.next()) {
      const r = merger.current as RunReader;
      w.add(r.buf, r.keyStart, r.keyEnd - r.keyStart, r.valueEnd - r.keyEnd, r.source, r.line);
    }
    return w.finish();
  } catch (e) {
    w.abort();
    throw e;
  } finally {
    merger.close();
  }
}
