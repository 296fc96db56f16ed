/**
 * Flush: writes an immutable memtable out as one L0 table file.
 *
 * The table gets every point entry of the memtable in internal-key order (all versions: without
 * compaction there is nothing to drop them for) and every range tombstone, through the table
 * builder (sstwriter/tableFileWriter.ts: an engine file, not an external one). The file is
 * fsynced by the writer; making its directory entry durable and logging it in the manifest is
 * the caller's job, after which the memtable may be dropped.
 *
 * Background: `flushMemtable` hands the event loop back every `entriesPerSlice` entries
 * (setImmediate), so foreground reads and writes keep running while a flush is under way; the
 * work is the same as `flushMemtableSync`, which recovery uses. `shouldAbort` is polled between
 * slices: an aborted flush deletes its partial file and returns ABORTED (close() uses this, since
 * the memtable's data is safe in its WAL anyway).
 */
import { setImmediate as yieldToEventLoop } from 'timers/promises';
import { Memtable } from './memtable/memtable';
import { FileMetaData } from './versionEdit';
import { tableFileName } from './fileNames';
import { TableFileWriter } from '../sstwriter/tableFileWriter';
import { TableBuilderOptions } from '../sstwriter/tableBuilder';

export const ABORTED = 'aborted' as const;

export interface FlushOptions {
  dir: string;
  fileNumber: number;
  table: Partial<TableBuilderOptions>;
  /** Entries written between returns to the event loop (background flushes only). */
  entriesPerSlice: number;
  shouldAbort: () => boolean;
}

/**
 * The flush as a sequence of slices: each `next()` writes up to entriesPerSlice entries; the
 * final value is the file's metadata, or null for an empty memtable (no file is created).
 */
function* flushSlices(mem: Memtable, opts: FlushOptions): Generator<void, FileMetaData | null, void> {
  if (mem.isEmpty) return null;
  const path = tableFileName(opts.dir, opts.fileNumber);
  const writer = new TableFileWriter(path, { ...opts.table, externalFile: false, originalFileNumber: opts.fileNumber });
  let finished = false;
  try {
    for (const t of mem.rangeTombstones()) writer.addRangeTombstone(t.start, t.end, t.seq);
    const it = mem.newIterator();
    try {
      let inSlice = 0;
      for (it.first(); it.valid(); it.next()) {
        writer.add(it.key(), it.value());
        if (++inSlice === opts.entriesPerSlice) {
          inSlice = 0;
          yield;
        }
      }
    } finally {
      it.close();
    }
    const result = writer.finish();
    finished = true;
    return {
      fileNumber: opts.fileNumber,
      fileSizeBytes: result.fileSizeBytes,
      smallest: result.smallestKey,
      largest: result.largestKey,
      smallestSeq: result.smallestSeq,
      largestSeq: result.largestSeq,
    };
  } finally {
    // Reached on errors and on an abandoned generator (return()): remove the partial file.
    if (!finished) writer.abort();
  }
}

/** Flushes in slices, yielding to the event loop between them. */
export async function flushMemtable(mem: Memtable, opts: FlushOptions): Promise<FileMetaData | null | typeof ABORTED> {
  const slices = flushSlices(mem, opts);
  for (;;) {
    const step = slices.next();
    if (step.done === true) return step.value;
    await yieldToEventLoop();
    if (opts.shouldAbort()) {
      slices.return(null);
      return ABORTED;
    }
  }
}

/** Flushes in one go (recovery, where nothing else runs). */
export function flushMemtableSync(mem: Memtable, opts: FlushOptions): FileMetaData | null {
  const slices = flushSlices(mem, opts);
  for (;;) {
    const step = slices.next();
    if (step.done === true) return step.value;
  }
}
