/**
 * A distributed import's task, run on a worker thread of the worker process so that the job
 * engine's event loop stays free: BullMQ renews each job's lock from the event loop, and a
 * CPU-bound handler on it lets the lock expire and the job be taken again (BullMQ's documented
 * failure mode). One thread per task; it exits when the task is done.
 *
 * workerData: { kind, wire, attemptDir } → one message: { ok: true, wire (a TimedResult) } or { ok: false, code, message }.
 * A map task writes its runs, a reduce task its SSTs, into attemptDir (the attempt's own).
 */
import { parentPort, workerData } from 'worker_threads';
import { IngestError } from '../../util/errors';
import { ParseRangeTask, parseRange } from '../phases';
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

/** Runs one task, its outputs going to attemptDir; a TimedResult as wire text. */
export function runTask(data: TaskThreadData): string {
  const t0 = performance.now();
  let result: unknown;
  if (data.kind === 'map') {
    const task = fromWire<ParseRangeTask>(data.wire);
    result = parseRange({ ...task, settings: { ...task.settings, runDir: data.attemptDir } });
  } else {
    const task = fromWire<MergeRangeTask>(data.wire);
    result = mergeRange({ ...task, outputDir: data.attemptDir });
  }
  return toWire({ result, seconds: (performance.now() - t0) / 1000 });
}

if (parentPort !== null && workerData !== null && typeof workerData === 'object' && 'attemptDir' in workerData) {
  let reply: TaskThreadReply;
  try {
    reply = { ok: true, wire: runTask(workerData as TaskThreadData) };
  } catch (e) {
    reply = { ok: false, code: e instanceof IngestError ? e.code : 'INTERNAL', message: (e as Error).stack ?? String(e) };
    if (e instanceof IngestError) reply.message = e.message;
  }
  parentPort.postMessage(reply);
}
