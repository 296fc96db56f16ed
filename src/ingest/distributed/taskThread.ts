/**
 * A distributed import's tasks, run on worker threads of the worker process so that the job
 * engine's event loop stays free: BullMQ renews each job's lock from the event loop, and a
 * CPU-bound handler on it lets the lock expire and the job be taken again (BullMQ's documented
 * failure mode). A worker keeps one thread per job it may run at once (clusterWorker.ts); each
 * takes tasks one at a time and keeps its sort buffer between them.
 *
 * Messages: TaskThreadData { kind, wire, attemptDir } in → { ok: true, wire (a TimedResult) } or
 * { ok: false, code, message } out, one reply per task.
 * A map task writes its runs, a reduce task its SSTs, into attemptDir (the attempt's own).
 */
import { parentPort, workerData } from 'worker_threads';
import { IngestError } from '../../util/errors';
import { ParseRangeTask } from '../phases';
import { runParseTask } from '../parse/parseRange';
import { SortBuffer } from '../sort/sortBuffer';
import { MergeRangeTask, mergeRange } from '../sort/mergeRange';
import { fromWire, toWire } from './wire';

export interface TaskThreadData {
  kind: 'map' | 'reduce';
  wire: string;
  attemptDir: string;
}

export type TaskThreadReply = { ok: true; wire: string } | { ok: false; code: string; message: string };

/** A task's result and how long it ran (the coordinator tells the job engine's share of a phase from it). */
export interface TimedResult<R> {
  result: R;
  seconds: number;
}

/**
 * The map tasks' sort buffer, kept from task to task (as the single-process import's parse
 * workers keep theirs): a fresh one per task costs a first touch of every page of it, which on a
 * VM whose host takes freed memory back is most of a 256 MiB task's time.
 */
let sortBuffer: SortBuffer | null = null;

function sortBufferOf(bytes: number): SortBuffer {
  if (sortBuffer === null || sortBuffer.memoryLimitBytes !== bytes) sortBuffer = new SortBuffer(bytes);
  return sortBuffer;
}

/** Runs one task, its outputs going to attemptDir; a TimedResult as wire text. */
export function runTask(data: TaskThreadData): string {
  const t0 = performance.now();
  let result: unknown;
  if (data.kind === 'map') {
    const task = fromWire<ParseRangeTask>(data.wire);
    const parser = { ...task, settings: { ...task.settings, runDir: data.attemptDir } };
    result = runParseTask(parser, sortBufferOf(task.sortBufferBytes), task.range, null);
  } else {
    const task = fromWire<MergeRangeTask>(data.wire);
    result = mergeRange({ ...task, outputDir: data.attemptDir });
  }
  return toWire({ result, seconds: (performance.now() - t0) / 1000 });
}

function replyTo(data: TaskThreadData): TaskThreadReply {
  try {
    return { ok: true, wire: runTask(data) };
  } catch (e) {
    return {
      ok: false,
      code: e instanceof IngestError ? e.code : 'INTERNAL',
      message: e instanceof IngestError ? e.message : ((e as Error).stack ?? String(e)),
    };
  }
}

// A thread of a worker's pool (clusterWorker.ts): one reply per task message, for as long as it lives.
if (
  parentPort !== null &&
  workerData !== null &&
  typeof workerData === 'object' &&
  (workerData as { taskThread?: boolean }).taskThread === true
) {
  const port = parentPort;
  port.on('message', (data: TaskThreadData) => port.postMessage(replyTo(data)));
}
