/**
 * A merge worker thread: merges one key range of all runs into SSTs (mergeRange.ts; see src/ingest/sort/parallelMerge.ts) and
 * replies once with its MergeResult and files, then is terminated. With `report` it also posts
 * each SST as it finishes it, fsynced, with the counts up to its last key (a resumable job's
 * checkpoint), before the final reply. The task comes as workerData, or, for a standby worker
 * started ahead by MergeWorkerPool or a parse worker handed over to it (serveNextMergeTask), as
 * the next message. On failure it removes the
 * files it wrote before replying.
 */
import { MessagePort, parentPort, workerData } from 'worker_threads';
import { IngestError } from '../../util/errors';
import { MergeRangeHooks, mergeRange } from './mergeRange';
import { MergeReply, MergeTask, withBufferKeys } from './parallelMerge';

/** Longest single wait for the main thread's record of a file; the wait loops until it comes. */
const RECORD_WAIT_SLICE_MS = 1000;

function runMergeTask(t: MergeTask): MergeReply {
  const progress = new Float64Array(t.progress);
  const port = parentPort as MessagePort;
  const hooks: MergeRangeHooks = {
    onProgress: (rows) => {
      progress[t.partition] = rows;
    },
  };
  if (t.report !== null) {
    hooks.firstFileIndex = t.report.firstFileIndex;
    const recorded = new Int32Array(t.recorded);
    let reported = 0;
    hooks.resume = {
      initial: withBufferKeys(t.report.initial),
      // The main thread records each file after this thread reports it. Returning only once it
      // has keeps the hook's contract (recorded on return: the merge may punch behind it), and a
      // kill then redoes at most the file each merge thread was writing.
      onFileFinished: (file, upTo) => {
        port.postMessage({ type: 'file', file, upTo } satisfies MergeReply);
        waitUntilRecorded(recorded, t.partition, ++reported);
      },
    };
  }
  try {
    const { result, files } = mergeRange(t, hooks);
    return { type: 'done', result, files };
  } catch (e) {
    const err = e as Error;
    return { type: 'error', message: err.message, code: e instanceof IngestError ? e.code : null, stack: err.stack ?? '' };
  }
}

/** Blocks until the main thread has recorded `files` files of this partition (it notifies the cell). */
function waitUntilRecorded(recorded: Int32Array, partition: number, files: number): void {
  for (let seen = Atomics.load(recorded, partition); seen < files; seen = Atomics.load(recorded, partition)) {
    Atomics.wait(recorded, partition, seen, RECORD_WAIT_SLICE_MS);
  }
}

/** A standby merge worker's wait: its task comes as the next message on `port`. */
export function serveNextMergeTask(port: MessagePort): void {
  port.once('message', (task: MergeTask) => port.postMessage(runMergeTask(task)));
}

if (parentPort !== null && workerData !== null && typeof workerData === 'object') {
  const port = parentPort;
  if ('startOffsets' in workerData) port.postMessage(runMergeTask(workerData as MergeTask));
  // A standby worker (MergeWorkerPool): loaded ahead, its task comes as its first message.
  else if ('standby' in workerData) serveNextMergeTask(port);
}
