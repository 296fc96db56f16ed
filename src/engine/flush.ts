/**
 * Flush: writes an immutable memtable out as one L0 table file.
 *
 * A flush is a compaction with one input, the memtable (compaction/compactionJob.ts): its point
 * entries in internal-key order and its range tombstones fragmented, through the compaction
 * iterator, so versions no snapshot can see any more (shadowed, or covered by a tombstone of the
 * same memtable) are not written. It is never bottommost (older data lies below L0), so
 * deletions and tombstones are all kept. The output is a single file, however large (L0 files are
 * one per memtable); its bounds include its tombstones. The file is fsynced by the writer; making
 * its directory entry durable and logging it in the manifest is the caller's job, after which
 * the memtable may be dropped.
 *
 * Background: `flushMemtable` hands the event loop back every `entriesPerSlice` entries
 * (setImmediate), so foreground reads and writes keep running while a flush is under way; the
 * work is the same as `flushMemtableSync`, which recovery uses. `shouldAbort` is polled between
 * slices: an aborted flush deletes its partial file and returns ABORTED (close() uses this, since
 * the memtable's data is safe in its WAL anyway).
 */
import { Memtable } from './memtable/memtable';
import { FileMetaData } from './versionEdit';
import { TableBuilderOptions } from '../sstwriter/tableBuilder';
import { assert } from '../util/errors';
import { ABORTED, CompactionResult, compactToTables, runSlices } from './compaction/compactionJob';
import { runSlicedSync } from '../util/slices';

export { ABORTED };

export interface FlushOptions {
  dir: string;
  fileNumber: number;
  table: Partial<TableBuilderOptions>;
  /** Entries written between returns to the event loop (background flushes only). */
  entriesPerSlice: number;
  shouldAbort: () => boolean;
  /** Live snapshot sequence numbers, ascending and distinct (default none). */
  snapshots?: readonly number[];
}

/** The flush as a sequence of slices; an empty memtable creates no file. */
function* flushSlices(mem: Memtable, opts: FlushOptions): Generator<void, FileMetaData | null, void> {
  if (mem.isEmpty) return null;
  let numbersHandedOut = 0;
  const it = mem.newIterator();
  let result: CompactionResult;
  try {
    result = yield* compactToTables(it, mem.fragmentedRangeTombstones(), {
      dir: opts.dir,
      table: opts.table,
      targetFileSizeBytes: Number.POSITIVE_INFINITY,
      newFileNumber: () => {
        // One output file: the number the caller reserved.
        assert(numbersHandedOut++ === 0, 'a flush writes one file');
        return opts.fileNumber;
      },
      snapshots: opts.snapshots ?? [],
      bottommost: false,
      entriesPerSlice: opts.entriesPerSlice,
    });
  } finally {
    it.close();
  }
  return result.files.length === 0 ? null : result.files[0];
}

/** Flushes in slices, yielding to the event loop between them. */
export function flushMemtable(mem: Memtable, opts: FlushOptions): Promise<FileMetaData | null | typeof ABORTED> {
  return runSlices(flushSlices(mem, opts), opts.shouldAbort);
}

/** Flushes in one go (recovery, where nothing else runs). */
export function flushMemtableSync(mem: Memtable, opts: FlushOptions): FileMetaData | null {
  return runSlicedSync(flushSlices(mem, opts));
}
