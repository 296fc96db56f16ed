/**
 * A parse worker thread: runs ParseTasks (byte ranges of regular files) one at a time, each into
 * its own sorted runs, and replies with a ParseTaskResult.
 *
 * Contract: a task's runs hold only that task's rows (the sort buffer is spilled at the end of
 * every task), so the main thread can throw away the output of a task that started at a wrong
 * record boundary and run it again. A task that reaches maxBadRows + 1 bad rows stops, deletes
 * its runs and reports them. The sort buffer (sortBufferBytes) is reused across tasks.
 *
 * After its last task the worker may be handed over to the merge (BecomeMergeWorker): it
 * releases its sort buffer and waits, as a standby merge worker, for one merge task.
 *
 * Start: with its ParseWorkerData as workerData, or started ahead of its import (prestart.ts)
 * with DeferredParseWorkerData, and then the data as its first message (ParseWorkerInit).
 */
import { MessagePort, parentPort, workerData } from 'worker_threads';
import { IngestError } from '../../util/errors';
import { BecomeMergeWorker, DeferredParseWorkerData, ParseTask, ParseWorkerData, ParseWorkerInit, WorkerReply } from './parseTypes';
import { runParseTask } from './parseRange';
import { SortBuffer } from '../sort/sortBuffer';

/** Serves ParseTasks on `port` with `data` until the worker is handed over to the merge. */
function serveParseTasks(port: MessagePort, data: ParseWorkerData): void {
  const buffer = new SortBuffer(data.sortBufferBytes);
  const progress = new Float64Array(data.progress);
  const onTask = (message: ParseTask | BecomeMergeWorker): void => {
    if ('becomeMergeWorker' in message) {
      // Handed over to the merge (see BecomeMergeWorker): the sort buffer's memory goes back
      // now, not when the collector gets to it, so the merge's memory comes on top of nothing.
      port.off('message', onTask);
      buffer.releaseMemory();
      loadMergeWorker().serveNextMergeTask(port);
      return;
    }
    const task = message;
    let reply: WorkerReply;
    try {
      reply = { type: 'done', result: runParseTask(data, buffer, task, progress) };
    } catch (e) {
      const err = e as Error;
      reply = { type: 'error', message: err.message, code: e instanceof IngestError ? e.code : null, stack: err.stack ?? '' };
    }
    port.postMessage(reply);
  };
  port.on('message', onTask);
}

/** The merge's worker code, loaded when first needed (a parse worker may never merge). */
function loadMergeWorker(): typeof import('../sort/mergeWorker') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('../sort/mergeWorker') as typeof import('../sort/mergeWorker');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object';
}

if (parentPort !== null && isObject(workerData) && 'sortBufferBytes' in workerData) {
  serveParseTasks(parentPort, workerData as unknown as ParseWorkerData);
} else if (parentPort !== null && isObject(workerData) && (workerData as Partial<DeferredParseWorkerData>).deferred === true) {
  // Started ahead of its import (prestart.ts), while the main thread still loads its own code:
  // the merge's code is loaded now too, when nothing waits for this thread, rather than on the
  // way from the parse to the merge. Messages posted meanwhile wait in the port.
  const port = parentPort;
  loadMergeWorker();
  port.once('message', (message: ParseWorkerInit) => serveParseTasks(port, message.init));
}
