/**
 * Parallel parse: regular files cut into byte ranges, parsed by worker threads (src/ingest/parse/parseWorker.ts).
 *
 * The plan (probes, layout, ranges) is rangePlan.ts's, the walk over the results (boundaries
 * checked, wrong guesses parsed again, line offsets and bad rows totalled) rangeChain.ts's: this
 * module runs the ranges on worker threads between the two.
 *
 * Scheduling: ranges go to workers in file order, at most one per worker at a time (p-limit);
 * the main thread then walks the results in input order, checking boundaries, re-running
 * mismatched ranges, totalling line offsets and bad rows. A range that hit the bad-row limit
 * stops the dispatch of new ranges; the walk then decides (in input order) which bad row is the
 * fatal one.
 *
 * Memory: each worker's sort buffer is its share of the limit (MemoryBudget.parserShare), asked
 * for once the layout is bound, so bad input is reported before a limit too small for the threads.
 */
import * as fs from 'fs';
import pLimit from 'p-limit';
import { Worker } from 'worker_threads';
import { IngestError } from '../../util/errors';
import {
  ParseOutcome,
  ParseSettings,
  ParseTask,
  ParseTaskResult,
  ParseWorkerData,
  WorkerReply,
  BecomeMergeWorker,
  InputNamer,
  ParseWorkerInit,
} from './parseTypes';
import { planParseRanges } from './rangePlan';
import { chainRangeResults } from './rangeChain';
import { discardPrestartedWorkers, takePrestartedWorkers } from './prestart';
import { MemoryBudget } from '../memoryBudget';
import { Progress } from '../progress';
import { startModuleWorker } from '../../util/workerBootstrap';
import { MergeWorkerPool } from '../sort/parallelMerge';

const PROGRESS_INTERVAL_MS = 200;

export { MIN_PARSE_ROUNDS, planTaskBytes } from './rangePlan';

class WorkerPool {
  private readonly idle: Worker[] = [];
  private readonly all: Worker[] = [];
  private readonly waiting = new Map<Worker, { resolve: (r: ParseTaskResult) => void; reject: (e: Error) => void }>();

  constructor(count: number, dataFor: (i: number) => ParseWorkerData, niceness: number) {
    // Workers a command line started ahead (prestart.ts) first, then fresh ones.
    const prestarted = takePrestartedWorkers(count, niceness);
    for (let i = 0; i < count; i++) {
      const w = i < prestarted.length ? prestarted[i] : startModuleWorker(__filename, 'parseWorker', dataFor(i), { niceness });
      if (i < prestarted.length) w.postMessage({ init: dataFor(i) } satisfies ParseWorkerInit);
      w.on('message', (reply: WorkerReply) => {
        const waiter = this.waiting.get(w);
        this.waiting.delete(w);
        this.idle.push(w);
        if (waiter === undefined) return;
        if (reply.type === 'done') waiter.resolve(reply.result);
        else {
          const err =
            reply.code !== null
              ? new IngestError(reply.code as IngestError['code'], reply.message)
              : new Error(`parse worker failed: ${reply.message}\n${reply.stack}`);
          waiter.reject(err);
        }
      });
      w.on('error', (e) => {
        const waiter = this.waiting.get(w);
        this.waiting.delete(w);
        waiter?.reject(e);
      });
      this.idle.push(w);
      this.all.push(w);
    }
  }

  /** Runs a task on an idle worker (the caller bounds concurrency to the pool size). */
  run(task: ParseTask): Promise<ParseTaskResult> {
    const w = this.idle.pop();
    if (w === undefined) throw new Error('no idle parse worker (concurrency above pool size)');
    return new Promise((resolve, reject) => {
      this.waiting.set(w, { resolve, reject });
      const { taskId, source, file, fileSizeBytes, startOffset, stopAtOffset } = task;
      w.postMessage({ taskId, source, file, fileSizeBytes, startOffset, stopAtOffset });
    });
  }

  /**
   * Hands up to `count` idle workers over to the merge (BecomeMergeWorker) instead of
   * terminating them: each releases its sort buffer and waits in `target` for a merge task.
   */
  handOver(target: MergeWorkerPool, count: number): void {
    for (let i = 0; i < count && this.idle.length > 0; i++) {
      const w = this.idle.pop() as Worker;
      this.all.splice(this.all.indexOf(w), 1);
      w.removeAllListeners('message');
      w.removeAllListeners('error');
      w.postMessage({ becomeMergeWorker: true } satisfies BecomeMergeWorker);
      target.adopt(w);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.all.map((w) => w.terminate()));
  }
}

/**
 * A resumable parse's hooks (src/ingest/resume/): the ranges an earlier attempt finished are
 * taken as they are, and each range this attempt starts and finishes is reported, so the job can
 * checkpoint it. `taskBytes` fixes the range size to the first attempt's, so the same ranges
 * come out whatever the memory limit or thread count of this one.
 */
export interface ParseResume {
  taskBytes: number | null;
  done: ReadonlyMap<number, ParseTaskResult>;
  onPlanned(taskBytes: number): void;
  onStarted(task: ParseTask): void;
  /**
   * Called once the range's runs are written; makes them durable and records them in the
   * background. The promise settles when that is done (a failure also comes out of settle()).
   */
  onFinished(result: ParseTaskResult): Promise<void>;
  /** Resolves once every range reported finished is durable and recorded; rejects with the first failure. */
  settle(): Promise<void>;
  /** Whether a failure leaves the runs for a resume (else they are deleted, as without resume). */
  keepsRunsAfter(err: unknown): boolean;
}

/** After a parse that succeeds, up to `count` of its workers go to `pool` as merge workers (BecomeMergeWorker). */
export interface MergeHandOver {
  pool: MergeWorkerPool;
  count: number;
}

export async function parseInWorkers(
  inputs: string[],
  settings: ParseSettings,
  threads: number,
  budget: MemoryBudget,
  progress: Progress,
  nameOf: InputNamer,
  taskBytesOverride?: number,
  resume?: ParseResume,
  handOver?: MergeHandOver,
): Promise<ParseOutcome | null> {
  const fixedTaskBytes = resume?.taskBytes ?? taskBytesOverride;
  const sortBufferBytesOf = (): number => budget.parserShare(threads).sortBufferBytes;
  const sizing = fixedTaskBytes !== undefined ? { taskBytes: fixedTaskBytes } : { threads, sortBufferBytes: sortBufferBytesOf };
  const plan = planParseRanges(inputs, settings, nameOf, sizing);
  if (plan === null) return null;
  if (plan.bound === null) return chainRangeResults(plan, [], () => Promise.reject(new Error('no ranges')), settings.maxBadRows, nameOf);
  resume?.onPlanned(plan.taskBytes);
  const bound = plan.bound;
  const sortBufferBytes = sortBufferBytesOf();
  const progressCells = new SharedArrayBuffer(threads * 2 * Float64Array.BYTES_PER_ELEMENT);
  const pool = new WorkerPool(
    threads,
    (workerIndex) => ({ settings, bound, sortBufferBytes, workerIndex, progress: progressCells }),
    settings.workerNiceness,
  );
  // Prestarted workers this parse did not take (other niceness, fewer threads) go now.
  void discardPrestartedWorkers();
  const timer = startProgress(
    progress,
    progressCells,
    threads,
    plan.sizes.reduce((a, b) => a + b, 0),
  );
  const results: (ParseTaskResult | null)[] = plan.tasks.map((t) => resume?.done.get(t.taskId) ?? null);
  const runTask = recordingRunner(pool, threads, resume);
  try {
    await runAllRanges(plan.tasks, results, runTask, threads);
    const outcome = await chainRangeResults(plan, results, runTask, settings.maxBadRows, nameOf);
    await resume?.settle();
    if (handOver !== undefined) pool.handOver(handOver.pool, handOver.count);
    return outcome;
  } catch (e) {
    const allRuns = results.flatMap((r) => (r === null ? [] : r.runs.map((x) => x.path)));
    if (resume === undefined || !resume.keepsRunsAfter(e)) for (const p of allRuns) fs.rmSync(p, { force: true });
    throw e;
  } finally {
    clearInterval(timer);
    await pool.close();
  }
}

/** Progress of the parse from the workers' shared cells (bytes read, rows), every PROGRESS_INTERVAL_MS. */
function startProgress(progress: Progress, progressCells: SharedArrayBuffer, threads: number, totalBytes: number): NodeJS.Timeout {
  const cells = new Float64Array(progressCells);
  return setInterval(() => {
    let bytes = 0;
    let rows = 0;
    for (let i = 0; i < threads; i++) {
      bytes += cells[2 * i];
      rows += cells[2 * i + 1];
    }
    progress.update({ phase: `parse (${threads} threads)`, doneBytes: bytes, totalBytes, rows, totalRows: null });
  }, PROGRESS_INTERVAL_MS);
}

/**
 * Runs ranges on the pool, reporting each to a resumable job. Finished ranges whose runs are
 * still being fsynced and recorded are outstanding: a resume redoes every range started and not
 * yet recorded (the one each thread parses, and these). A thread waits before starting a range
 * while a whole round of them is outstanding, so that is at most two ranges per parse thread
 * even on a disk slower than the parse.
 */
function recordingRunner(pool: WorkerPool, threads: number, resume: ParseResume | undefined): (t: ParseTask) => Promise<ParseTaskResult> {
  const recording = new Set<Promise<void>>();
  return async (t) => {
    while (recording.size >= threads) await Promise.race(recording);
    resume?.onStarted(t);
    const r = await pool.run(t);
    if (resume !== undefined) {
      const done = (): void => void recording.delete(recorded);
      const recorded: Promise<void> = resume.onFinished(r).then(done, done);
      recording.add(recorded);
    }
    return r;
  };
}

/** Runs every range not done yet, in file order, `threads` at a time; a range that hit the bad-row limit stops the dispatch. */
async function runAllRanges(
  tasks: readonly ParseTask[],
  results: (ParseTaskResult | null)[],
  runTask: (t: ParseTask) => Promise<ParseTaskResult>,
  threads: number,
): Promise<void> {
  const limit = pLimit(threads);
  let stop = false;
  await Promise.all(
    tasks.map((t) =>
      limit(async () => {
        if (stop || results[t.taskId] !== null) return;
        const r = await runTask(t);
        results[t.taskId] = r;
        if (r.stoppedEarly) stop = true;
      }),
    ),
  );
}
