/**
 * Parse workers started ahead of the import that will use them.
 *
 * Why: a worker thread takes 35-50 ms to boot and load the parse code on this 2-core VM, and
 * the import's first ranges cannot start before that; meanwhile `ingest import` spends its first
 * 150 ms or so on one core, loading its own modules. A command line that knows it is about to
 * import starts the workers first (prestartParseWorkers, before it loads anything heavy), so they
 * boot on the idle core; parseInWorkers takes them (takePrestartedWorkers) and sends each its
 * ParseWorkerData as its first message (ParseWorkerInit).
 *
 * Contract:
 * - A prestarted worker is unref'd until taken: it never keeps a process alive, and a command
 *   that fails before parsing exits as it would have.
 * - Only workers of the niceness asked for are taken, and only live ones: one that failed or
 *   exited while waiting is dropped, and the pool starts a fresh one in its place.
 * - Workers nobody takes are terminated by discardPrestartedWorkers (the import calls it once it
 *   has taken what it needs; the command line once more at its end, for imports that parsed in
 *   process or failed early).
 * - At most MAX_PRESTARTED_WORKERS wait at once.
 *
 * This module loads nothing but worker_threads and the bootstrap: it runs before the rest.
 */
import { Worker } from 'worker_threads';
import { assert } from '../../util/errors';
import { startModuleWorker } from '../../util/workerBootstrap';
import type { DeferredParseWorkerData } from './parseTypes';

/**
 * Inputs smaller than this are parsed in-process: threads cost more to start than they save.
 * Here, not in the importer, so that a command line deciding whether to prestart workers can
 * read it without loading the import.
 */
export const PARALLEL_MIN_INPUT_BYTES = 32 << 20;

/** Bound on the workers waiting to be taken (a parse never asks for more threads than cores). */
export const MAX_PRESTARTED_WORKERS = 16;

interface Waiting {
  worker: Worker;
  niceness: number;
  alive: boolean;
  drop: () => void;
}

const waiting: Waiting[] = [];
let takenTotal = 0;

/** Starts parse workers at `niceness` until `count` wait (0 <= count <= MAX_PRESTARTED_WORKERS). */
export function prestartParseWorkers(count: number, niceness: number): void {
  assert(Number.isInteger(count) && count >= 0 && count <= MAX_PRESTARTED_WORKERS, `cannot prestart ${count} parse workers`);
  while (waiting.length < count) {
    const data: DeferredParseWorkerData = { deferred: true };
    const worker = startModuleWorker(__filename, 'parseWorker', data, { niceness });
    worker.unref();
    // A worker that fails while waiting is dropped (the pool starts its own); its error is not the import's.
    const entry: Waiting = {
      worker,
      niceness,
      alive: true,
      drop: () => {
        entry.alive = false;
        const at = waiting.indexOf(entry);
        if (at >= 0) waiting.splice(at, 1);
      },
    };
    worker.on('error', entry.drop);
    worker.on('exit', entry.drop);
    waiting.push(entry);
  }
}

/**
 * Up to `count` waiting workers of this niceness, taken out of the list and ref'd again. Each
 * must get its ParseWorkerInit as its first message.
 */
export function takePrestartedWorkers(count: number, niceness: number): Worker[] {
  const taken: Worker[] = [];
  for (let i = 0; i < waiting.length && taken.length < count;) {
    const entry = waiting[i];
    if (!entry.alive || entry.niceness !== niceness) {
      i++;
      continue;
    }
    waiting.splice(i, 1);
    entry.worker.off('error', entry.drop);
    entry.worker.off('exit', entry.drop);
    entry.worker.ref();
    taken.push(entry.worker);
  }
  takenTotal += taken.length;
  return taken;
}

/** Terminates every worker still waiting. */
export async function discardPrestartedWorkers(): Promise<void> {
  const left = waiting.splice(0, waiting.length);
  await Promise.all(left.map((e) => e.worker.terminate()));
}

/** Workers waiting, and workers taken by imports since the process started (for tests and benchmarks). */
export function prestartCounts(): { waiting: number; taken: number } {
  return { waiting: waiting.length, taken: takenTotal };
}
