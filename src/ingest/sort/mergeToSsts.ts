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
 * Each written entry goes to the SstSetWriter with the (source, line) of the row it came from,
 * for the origins side files when those are on.
 */
import { copyBytes } from '../../util/byteRanges';
import { RunInfo, RunReader, RunWriter } from './runFile';
import { PREFIX_BYTES, RunMerger, compareRanges } from './runMerger';
import { SstSetWriter } from './sstSetWriter';
import {
  DuplicatePolicy,
  MAX_DUPLICATE_EXAMPLES,
  MergeRange,
  MergeResult,
  MergeResumeHooks,
  PROGRESS_EVERY_ENTRIES,
  checkpointAt,
  punchingBehindCheckpoints,
  readRegionsFor,
  startingResult,
} from './mergeResult';
import { mergeRunsIntoSstsNatively, nativeMergeOptions } from './nativeMerge';

export type {
  DuplicatePair,
  DuplicatePolicy,
  MergeCheckpoint,
  MergeRange,
  MergeResult,
  MergeResumeHooks,
  RowPosition,
} from './mergeResult';
export { MAX_DUPLICATE_EXAMPLES } from './mergeResult';

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

export function mergeRunsIntoSsts(
  runs: readonly RunInfo[],
  policy: DuplicatePolicy,
  out: SstSetWriter,
  readBufferBytes: number,
  onProgress?: (rowsMerged: number) => void,
  range?: MergeRange,
  resume?: MergeResumeHooks,
): MergeResult {
  const nativeOptions = nativeMergeOptions(policy, out);
  if (nativeOptions !== null)
    return mergeRunsIntoSstsNatively(nativeOptions, runs, policy, out, readBufferBytes, onProgress, range, resume);
  // Without a range this merge is the runs' only reader: each run is deleted once read.
  const regions = readRegionsFor(runs, range, resume);
  const merger = new RunMerger(
    runs,
    readBufferBytes,
    range === undefined ? { deleteRuns: true, regions } : { startOffsets: range.startOffsets, low: range.low, high: range.high, regions },
  );
  const hooks = resume === undefined ? undefined : punchingBehindCheckpoints(runs, () => merger.runReaders, resume);
  const prevKey = new Held();
  const heldValue = new Held();
  // Prefix words of the previous key (see src/ingest/sort/runMerger.ts); -1 before the first row, which no key has.
  let prevHigh = -1;
  let prevLow = -1;
  let holding = false; // policy "last": prevKey/heldValue not yet written
  let firstSource = 0;
  let firstLine = 0;
  // Policy "last": where the held value's row came from.
  let heldSource = 0;
  let heldLine = 0;
  let writing = true;
  const result = startingResult(resume);
  let rowsMerged = result.rowsMerged;
  // Duplicates of the key in prevKey: under "last" that key is not yet written when a file is
  // cut before it, so its duplicates belong after the cut (see checkpointAt).
  let dupsOfPrevKey = 0;
  if (hooks !== undefined) out.onFileFinished = (f) => hooks.onFileFinished(f, checkpointAt(f, result, dupsOfPrevKey));
  try {
    while (merger.next()) {
      const r = merger.current as RunReader;
      const buf = r.buf;
      const keyStart = r.keyStart;
      const keyEnd = r.keyEnd;
      const high = merger.currentPrefixHigh;
      const low = merger.currentPrefixLow;
      rowsMerged++;
      if ((rowsMerged & (PROGRESS_EVERY_ENTRIES - 1)) === 0) onProgress?.(rowsMerged);
      // Same key as the previous row? Equal prefixes and lengths settle it for keys of up to
      // PREFIX_BYTES; longer keys compare their bytes.
      if (high === prevHigh && low === prevLow) {
        const n = keyEnd - keyStart;
        const held = prevKey.buf;
        if (n === held.length && (n <= PREFIX_BYTES || compareRanges(buf, keyStart, keyEnd, held, 0, n) === 0)) {
          result.duplicateCount++;
          dupsOfPrevKey++;
          if (result.duplicates.length < MAX_DUPLICATE_EXAMPLES) {
            result.duplicates.push({
              key: Buffer.from(buf.subarray(keyStart, keyEnd)),
              first: { source: firstSource, line: firstLine },
              duplicate: { source: r.source, line: r.line },
            });
          }
          if (policy === 'error') writing = false;
          else if (policy === 'last') {
            heldValue.set(buf, keyEnd, r.valueEnd);
            heldSource = r.source;
            heldLine = r.line;
          }
          continue;
        }
      }
      if (holding) {
        if (writing) out.add(prevKey.buf, heldValue.buf, heldSource, heldLine);
        result.rowsWritten++;
      }
      prevKey.set(buf, keyStart, keyEnd);
      dupsOfPrevKey = 0;
      prevHigh = high;
      prevLow = low;
      firstSource = r.source;
      firstLine = r.line;
      if (policy === 'last') {
        heldValue.set(buf, keyEnd, r.valueEnd);
        heldSource = r.source;
        heldLine = r.line;
        holding = true;
      } else {
        // A view per row until the SST writer takes (buffer, offset, length); the value is copied
        // into the data block at once, so the view never outlives this call. A plain Uint8Array
        // costs well under half of Buffer#subarray (no species lookup, no FastBuffer).
        if (writing) out.add(prevKey.buf, new Uint8Array(buf.buffer, buf.byteOffset + keyEnd, r.valueEnd - keyEnd), r.source, r.line);
        result.rowsWritten++;
      }
    }
    if (holding) {
      if (writing) out.add(prevKey.buf, heldValue.buf, heldSource, heldLine);
      result.rowsWritten++;
    }
    if (!writing) result.rowsWritten = 0;
    result.rowsMerged = rowsMerged;
    onProgress?.(rowsMerged);
    return result;
  } finally {
    out.onFileFinished = null;
    merger.close();
  }
}

/** Merges runs into one run, keeping every row (no duplicate handling): for too many runs. */
export function mergeRunsIntoRun(runs: readonly RunInfo[], path: string, readBufferBytes: number, deleteRuns = true): RunInfo {
  const merger = new RunMerger(runs, readBufferBytes, { deleteRuns });
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
