/**
 * The back half of the external sort: merge the runs into output SSTs (or into a bigger run when
 * there are more runs than one merge may open), applying the duplicate-key policy.
 *
 * Duplicates (DuplicatePolicyWriter): rows come out of the merge in (key, input order), so the
 * rows sharing a key are adjacent and the first of them is the earliest in the input.
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
import { SstSetWriter, WrittenFile } from './sstSetWriter';
import {
  DuplicatePolicy,
  MAX_DUPLICATE_EXAMPLES,
  MergeCheckpoint,
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
  const writer = new DuplicatePolicyWriter(policy, out, startingResult(resume));
  if (hooks !== undefined) out.onFileFinished = (f) => hooks.onFileFinished(f, writer.checkpointAt(f));
  try {
    let rowsMerged = writer.result.rowsMerged;
    while (merger.next()) {
      rowsMerged++;
      if ((rowsMerged & (PROGRESS_EVERY_ENTRIES - 1)) === 0) onProgress?.(rowsMerged);
      writer.add(merger.current as RunReader, merger.currentPrefixHigh, merger.currentPrefixLow);
    }
    writer.finish(rowsMerged);
    onProgress?.(rowsMerged);
    return writer.result;
  } finally {
    out.onFileFinished = null;
    merger.close();
  }
}

/**
 * Writes the merge's rows, in (key, input order), to the SSTs under the duplicate policy (see the
 * module comment), counting what it writes and the duplicates it finds into `result`.
 */
class DuplicatePolicyWriter {
  private readonly prevKey = new Held();
  /** Policy "last": the value of the latest row of the key in prevKey. */
  private readonly heldValue = new Held();
  /** Prefix words of the previous key (see src/ingest/sort/runMerger.ts); -1 before the first row, which no key has. */
  private prevHigh = -1;
  private prevLow = -1;
  /** Policy "last": prevKey/heldValue not yet written. */
  private holding = false;
  /** Where the first row of the key in prevKey came from. */
  private firstSource = 0;
  private firstLine = 0;
  /** Policy "last": where the held value's row came from. */
  private heldSource = 0;
  private heldLine = 0;
  /** False once policy "error" met a duplicate: nothing more is written. */
  private writing = true;
  /**
   * Duplicates of the key in prevKey: under "last" that key is not yet written when a file is
   * cut before it, so its duplicates belong after the cut (see checkpointAt).
   */
  private dupsOfPrevKey = 0;

  constructor(
    private readonly policy: DuplicatePolicy,
    private readonly out: SstSetWriter,
    readonly result: MergeResult,
  ) {}

  /** The next row of the merge, at r, with its key's prefix words. */
  add(r: RunReader, high: number, low: number): void {
    // Same key as the previous row? Equal prefixes and lengths settle it for keys of up to
    // PREFIX_BYTES; longer keys compare their bytes.
    if (high === this.prevHigh && low === this.prevLow) {
      const n = r.keyEnd - r.keyStart;
      const held = this.prevKey.buf;
      if (n === held.length && (n <= PREFIX_BYTES || compareRanges(r.buf, r.keyStart, r.keyEnd, held, 0, n) === 0)) {
        this.addDuplicate(r);
        return;
      }
    }
    this.writeHeld();
    this.prevKey.set(r.buf, r.keyStart, r.keyEnd);
    this.dupsOfPrevKey = 0;
    this.prevHigh = high;
    this.prevLow = low;
    this.firstSource = r.source;
    this.firstLine = r.line;
    if (this.policy === 'last') {
      this.hold(r);
    } else {
      // A view per row until the SST writer takes (buffer, offset, length); the value is copied
      // into the data block at once, so the view never outlives this call. A plain Uint8Array
      // costs well under half of Buffer#subarray (no species lookup, no FastBuffer).
      const buf = r.buf;
      if (this.writing)
        this.out.add(this.prevKey.buf, new Uint8Array(buf.buffer, buf.byteOffset + r.keyEnd, r.valueEnd - r.keyEnd), r.source, r.line);
      this.result.rowsWritten++;
    }
  }

  /** A row whose key equals the previous row's: counted, kept as an example, and under "last" held instead. */
  private addDuplicate(r: RunReader): void {
    const result = this.result;
    result.duplicateCount++;
    this.dupsOfPrevKey++;
    if (result.duplicates.length < MAX_DUPLICATE_EXAMPLES) {
      result.duplicates.push({
        key: Buffer.from(r.buf.subarray(r.keyStart, r.keyEnd)),
        first: { source: this.firstSource, line: this.firstLine },
        duplicate: { source: r.source, line: r.line },
      });
    }
    if (this.policy === 'error') this.writing = false;
    else if (this.policy === 'last') this.hold(r);
  }

  /** Policy "last": r's value is the one to write for its key, unless a later duplicate replaces it. */
  private hold(r: RunReader): void {
    this.heldValue.set(r.buf, r.keyEnd, r.valueEnd);
    this.heldSource = r.source;
    this.heldLine = r.line;
    this.holding = true;
  }

  /** Policy "last": writes the held row of the previous key (its key has ended). */
  private writeHeld(): void {
    if (!this.holding) return;
    if (this.writing) this.out.add(this.prevKey.buf, this.heldValue.buf, this.heldSource, this.heldLine);
    this.result.rowsWritten++;
  }

  /** The counts up to the last key of `file`, just finished (see checkpointAt in mergeResult.ts). */
  checkpointAt(file: WrittenFile): MergeCheckpoint {
    return checkpointAt(file, this.result, this.dupsOfPrevKey);
  }

  /** After the last row: writes what is held and settles the counts. */
  finish(rowsMerged: number): void {
    this.writeHeld();
    if (!this.writing) this.result.rowsWritten = 0;
    this.result.rowsMerged = rowsMerged;
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
