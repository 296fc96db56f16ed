/**
 * `ingest worker`: takes the distributed import's map and reduce jobs from the cluster's queue
 * (clusterQueue.ts) and runs each on one of `concurrency` task threads (taskThread.ts), which
 * the worker keeps from job to job.
 *
 * Contract:
 * - a job's outputs go to a directory of its own attempt, <shared>/<import>/<kind>-<i>/a<n>-<random>,
 *   made before the task starts; the job's return value names them;
 * - jobs for another shared directory than this worker's are refused (unrecoverable): the
 *   worker would not find the inputs' runs there;
 * - close() stops taking jobs, lets the running ones finish (BullMQ's graceful close) and
 *   resolves; `ingest worker` calls it on SIGTERM and exits 0.
 * A worker killed outright leaves its job active until its lock expires (lockDurationMs); BullMQ
 * then finds it stalled and hands it to another worker, as a new attempt.
 */
import * as fs from 'fs';
import * as path from 'path';
import { randomBytes } from 'crypto';
import { Worker } from 'worker_threads';
import { Job, UnrecoverableError, Worker as BullWorker } from 'bullmq';
import { IngestError, assert } from '../../util/errors';
import { startModuleWorker } from '../../util/workerBootstrap';
import { QUEUE_NAME, TaskJobData, connectionOf, jobErrorOf } from './clusterQueue';
import type { TaskThreadData, TaskThreadReply } from './taskThread';

export interface ClusterWorkerOptions {
  clusterUrl: string;
  sharedDir: string;
  /** Jobs run at once (default 1: each task uses a core). */
  concurrency?: number;
  /** How long a job's lock lasts without renewal: a killed worker's job is taken again after about this long (default 30 s). */
  lockDurationMs?: number;
  log?: (line: string) => void;
}

export interface ClusterWorker {
  /** Jobs finished and failed since start. */
  readonly counts: { completed: number; failed: number };
  close(): Promise<void>;
}

export async function startClusterWorker(o: ClusterWorkerOptions): Promise<ClusterWorker> {
  const sharedDir = path.resolve(o.sharedDir);
  if (!fs.existsSync(sharedDir)) throw new IngestError('USAGE', `--shared-dir ${o.sharedDir} does not exist`);
  const counts = { completed: 0, failed: 0 };
  const lockDuration = o.lockDurationMs ?? 30_000;
  const pool = new TaskThreadPool(o.concurrency ?? 1);
  const worker = new BullWorker(QUEUE_NAME, (job: Job) => processJob(job, sharedDir, pool), {
    connection: connectionOf(o.clusterUrl),
    concurrency: o.concurrency ?? 1,
    lockDuration,
    stalledInterval: Math.max(500, Math.floor(lockDuration / 2)),
    maxStalledCount: 3,
  });
  worker.on('completed', () => counts.completed++);
  worker.on('failed', (job, err) => {
    counts.failed++;
    o.log?.(`job ${job?.id ?? '?'} failed: ${err.message}`);
  });
  worker.on('error', quietly(o.log));
  await worker.waitUntilReady();
  return {
    counts,
    close: async () => {
      await worker.close();
      await pool.close();
    },
  };
}

/** Logs a worker's errors, the same one at most every ERROR_LOG_INTERVAL_MS (BullMQ repeats a lost connection's error as it retries). */
function quietly(log: ((line: string) => void) | undefined): (err: Error) => void {
  let last = '';
  let lastAtMs = 0;
  return (err) => {
    const now = Date.now();
    if (err.message === last && now - lastAtMs < ERROR_LOG_INTERVAL_MS) return;
    last = err.message;
    lastAtMs = now;
    log?.(`worker: ${err.message}`);
  };
}

const ERROR_LOG_INTERVAL_MS = 10_000;

async function processJob(job: Job, sharedDir: string, pool: TaskThreadPool): Promise<string> {
  // A phase's barrier has nothing to do: its children's results are its value.
  if (job.name !== 'map' && job.name !== 'reduce') return '';
  const data = job.data as TaskJobData;
  if (path.resolve(data.sharedDir) !== sharedDir) {
    throw new UnrecoverableError(
      JSON.stringify({ code: 'USAGE', message: `job ${job.id} is for shared directory ${data.sharedDir}, this worker has ${sharedDir}` }),
    );
  }
  const attemptDir = path.join(data.sharedDir, `import-${data.importId}`, `${job.name}-${data.index}`, attemptName(job));
  try {
    fs.mkdirSync(attemptDir, { recursive: true });
    return await pool.run({ kind: job.name, wire: data.wire, attemptDir });
  } catch (e) {
    throw jobErrorOf(e);
  }
}

/** a<attempts made before>-<random>: distinct for every attempt, even one presumed dead that wakes up. */
function attemptName(job: Job): string {
  return `a${job.attemptsMade}-${randomBytes(4).toString('hex')}`;
}

/**
 * The worker's task threads: `size` of them, kept (with their sort buffers) from task to task; a
 * task goes to an idle one (BullMQ's concurrency never runs more jobs than there are threads).
 * A thread that dies is replaced by a fresh one for the next task.
 */
export class TaskThreadPool {
  private readonly idle: Worker[] = [];
  private readonly all = new Set<Worker>();

  constructor(private readonly size: number) {}

  run(data: TaskThreadData): Promise<string> {
    const thread = this.idle.pop() ?? this.start();
    return new Promise<string>((resolve, reject) => {
      const onExit = (code: number): void => {
        this.all.delete(thread);
        reject(new Error(`task thread exited with code ${code} before replying`));
      };
      thread.once('exit', onExit);
      thread.once('message', (reply: TaskThreadReply) => {
        thread.off('exit', onExit);
        this.idle.push(thread);
        if (reply.ok) resolve(reply.wire);
        else reject(new IngestError(reply.code as IngestError['code'], reply.message));
      });
      thread.postMessage(data);
    });
  }

  async close(): Promise<void> {
    await Promise.all([...this.all].map((t) => t.terminate()));
    this.all.clear();
    this.idle.length = 0;
  }

  private start(): Worker {
    assert(this.all.size < this.size, `${this.all.size} task threads busy, the most is ${this.size}`);
    const thread = startModuleWorker(__filename, 'taskThread', { taskThread: true });
    thread.on('error', () => undefined); // reported as the exit that follows
    this.all.add(thread);
    return thread;
  }
}
