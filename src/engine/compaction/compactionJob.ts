/**
 * Compaction jobs: the work of a flush or a compaction, from a merged input to finished table
 * files, run in slices so the event loop keeps serving reads and writes in between.
 *
 * `compactToTables` is the shared core: input entries go through the compaction iterator (which
 * drops what no snapshot needs; compactionIterator.ts) into the outputs (cut at the target file
 * size, tombstones spread over them; compactionOutputs.ts). `compactionSlices` prepares it for a
 * leveled compaction: the input files' tombstones, each clipped to its file's bounds and fragmented
 * together, and a merging iterator over the input files (one per L0 file, one level iterator per
 * deeper level; blocks read without filling the block cache).
 *
 * Slicing: a job is a generator that yields every `entriesPerSlice` input entries; `runSlices`
 * returns to the event loop (setImmediate) between slices and polls `shouldAbort`, abandoning the
 * generator (its `finally` deletes every output written) when asked to. Why slices and not a
 * worker thread: a compaction's work is reading blocks through the engine's table cache and
 * writing through the table builder, both synchronous and tied to this thread's state (open
 * readers, the block cache); a worker would need its own readers and a copy of the version. With
 * slices of a few thousand entries, a foreground read waits at most one slice (a few ms), and the
 * table builder can still compress on its own worker (TableBuilderOptions.backgroundCompression).
 *
 * The job never touches the version: installing its outputs (and deleting its inputs) is the
 * engine's job, which checks that the inputs are still in place first.
 */
import { setImmediate as yieldToEventLoop } from 'timers/promises';
import { InternalIterator } from '../../base/iterator';
import { MergingIterator } from '../mergingIterator';
import { LevelIterator } from '../levelIterator';
import { TableCache } from '../tableCache';
import { FileMetaData } from '../versionEdit';
import { FragmentedTombstoneList, fragmentTombstones, RangeTombstone } from '../../base/fragmenter';
import { CompactionIterator, CompactionIteratorStats } from './compactionIterator';
import { CompactionOutputs, CompactionOutputOptions } from './compactionOutputs';
import { Compaction } from './compactionPicker';

export const ABORTED = 'aborted' as const;

export interface CompactToTablesOptions extends Omit<CompactionOutputOptions, 'tombstones'> {
  /** Live snapshot sequence numbers, ascending, distinct. */
  snapshots: readonly number[];
  bottommost: boolean;
  /** Input entries between yields. */
  entriesPerSlice: number;
}

export interface CompactionResult {
  /** Output files in key order (none if nothing survived). */
  files: FileMetaData[];
  bytesWritten: number;
  entries: CompactionIteratorStats;
  /** Tombstone fragments in the input and written out (a fragment counts once per sequence). */
  tombstonesIn: number;
  tombstonesOut: number;
}

/** The shared core of flushes and compactions (see the module comment). */
export function* compactToTables(
  input: InternalIterator,
  tombstones: FragmentedTombstoneList,
  opts: CompactToTablesOptions,
): Generator<void, CompactionResult, void> {
  const it = new CompactionIterator(input, { snapshots: opts.snapshots, tombstones, bottommost: opts.bottommost });
  const outputTombstones = it.outputTombstones();
  const outputs = new CompactionOutputs({ ...opts, tombstones: outputTombstones });
  let finished = false;
  try {
    let sliceEnd = opts.entriesPerSlice;
    for (it.first(); it.valid(); it.next()) {
      outputs.add(it.key(), it.value());
      if (it.stats.entriesIn >= sliceEnd) {
        sliceEnd = it.stats.entriesIn + opts.entriesPerSlice;
        yield;
      }
    }
    const files = outputs.finish();
    finished = true;
    return {
      files,
      bytesWritten: outputs.fileBytesWritten,
      entries: it.stats,
      tombstonesIn: sequenceCount(tombstones),
      tombstonesOut: sequenceCount(outputTombstones),
    };
  } finally {
    // Errors and abandoned generators (return()) leave nothing behind.
    if (!finished) outputs.abort();
  }
}

export interface CompactionJobOptions extends Omit<CompactToTablesOptions, 'bottommost'> {
  tableCache: TableCache;
}

/** A leveled compaction's slices (see the module comment). */
export function* compactionSlices(c: Compaction, opts: CompactionJobOptions): Generator<void, CompactionResult, void> {
  const tombstones: RangeTombstone[] = [];
  for (const files of c.inputs) {
    for (const f of files) {
      const h = opts.tableCache.acquire(f);
      try {
        const clipped = h.fileTombstones(f);
        if (clipped.count > 0) for (const t of clipped.toTombstones()) tombstones.push(t);
      } finally {
        h.release();
      }
    }
  }
  const children: InternalIterator[] = [];
  const read = { fillCache: false };
  if (c.level === 0) {
    for (const f of c.inputs[0]) children.push(new LevelIterator([f], opts.tableCache, undefined, undefined, read));
  } else {
    children.push(new LevelIterator(c.inputs[0], opts.tableCache, undefined, undefined, read));
  }
  if (c.inputs[1].length > 0) children.push(new LevelIterator(c.inputs[1], opts.tableCache, undefined, undefined, read));
  const input = new MergingIterator(children);
  try {
    return yield* compactToTables(input, fragmentTombstones(tombstones), { ...opts, bottommost: c.bottommost });
  } finally {
    input.close();
  }
}

/** Tombstones in a fragment list, counting each (fragment, sequence) once. */
function sequenceCount(list: FragmentedTombstoneList): number {
  return list.count === 0 ? 0 : list.seqOffsets[list.count] - list.seqOffsets[0];
}

/** Runs a job's slices, yielding to the event loop between them; ABORTED if shouldAbort said so. */
export async function runSlices<T>(slices: Generator<void, T, void>, shouldAbort: () => boolean): Promise<T | typeof ABORTED> {
  for (;;) {
    const step = slices.next();
    if (step.done === true) return step.value;
    await yieldToEventLoop();
    if (shouldAbort()) {
      // return() runs the generator's finally blocks (which delete its outputs); the value is unused.
      slices.return(undefined as never);
      return ABORTED;
    }
  }
}
