/**
 * The distributed import's coordinator: the phase functions (phases.ts) run as BullMQ flows by any
 * number of `ingest worker` processes (clusterWorker.ts), leaving the SSTs of the whole import in
 * the shared directory for one checked ingestion (the caller's: importIntoDb with `prebuilt`).
 *
 *   plan     planImport, planParse: byte ranges of every input (taskBytes each, default
 *            DEFAULT_TASK_BYTES; a range is the unit of retry)                     here
 *   map      parseRange per range: sorted runs, sampled every RUN_SAMPLE bytes    a flow of jobs
 *   chain    finishParse: ranges whose guessed start was wrong are parsed again   here
 *   split    planMerge: R key ranges of about equal run bytes, from the runs' samples (TiDB's
 *            global sort chooses its split points from its segments' statistics the same way)
 *   reduce   mergeRange per key range: that range of every run into SSTs, cut as the single-
 *            process import cuts them; duplicates found across ranges and files   a flow of jobs
 *   publish  finishMerge, publishSsts: the files renamed to ssts/000001.sst... in key order
 * Everything the workers write is under <shared>/import-<importId>/; remove() deletes it once
 * the import has landed (or failed for good).
 *
 * Resumable: the import's id hashes its inputs (path, size, mtime, sampled bytes) and the options
 * that shape its output, and fixes every job's id, so running the same command again after a
 * kill finds the finished tasks in Redis and waits for the rest; a changed input gets a new id.
 * A phase whose barrier failed (a task failed for good) is cleared and added afresh by the next
 * run, so a transient failure past its retries is retried by running the command again.
 *
 * Requirements: regular, uncompressed inputs and the fast parser (byte ranges need both), and
 * the same paths for the inputs and the shared directory on every worker's machine.
 */
import * as fs from 'fs';
import * as path from 'path';
import { createHash } from 'crypto';
import { FlowProducer, Job, Queue } from 'bullmq';
import { IngestError, assert } from '../../util/errors';
import { DistributedPhases, ImportOptions } from '../importTypes';
import { ImportSummary } from '../importer';
import { MemoryBudget } from '../memoryBudget';
import { ParsePlan, ParseRangeTask, finishMerge, finishParse, parseRangeTasks, planImport, planMerge, planParse } from '../phases';
import { publishFiles } from '../sort/sstSetWriter';
import { ImportPlan, inputNamer } from '../phases';
import { MergeRangeTask, MergedRange } from '../sort/mergeRange';
import { ParseTask, ParseTaskResult } from '../parse/parseTypes';
import { runParseTask } from '../parse/parseRange';
import { SortBuffer } from '../sort/sortBuffer';
import { duplicateKeysError, importSummaryOf, locatorOf } from '../importReport';
import { KeySpec } from '../rows/keySpec';
import { fingerprintInput } from '../resume/fingerprint';
import {
  QUEUE_NAME,
  TASK_ATTEMPTS,
  TASK_BACKOFF_MS,
  TaskKind,
  barrierJobId,
  connectionOf,
  errorOfReason,
  isDefinitive,
  taskJobId,
} from './clusterQueue';
import { fromWire, toWire } from './wire';
import type { TimedResult } from './taskThread';
import { roundTo3Decimals } from '../../util/rounding';

/** Bytes of input per map task (TiDB and the 256 MiB: big enough to amortize a job, small enough to retry). */
export const DEFAULT_TASK_BYTES = 256 << 20;
/** How often the coordinator looks at a phase's barrier. */
const POLL_MS = 100;

export interface DistributedImportOptions {
  clusterUrl: string;
  sharedDir: string;
  /** The import (its outputDir is not used: the SSTs go to the shared directory). */
  import: Omit<ImportOptions, 'outputDir'>;
  /** Input bytes per map task (default DEFAULT_TASK_BYTES). */
  taskBytes?: number;
  /** Key ranges, one reduce task each (default: one per taskBytes of input, at least 1). */
  reduceTasks?: number;
  /** Told of each phase as it starts. */
  onPhase?: (phase: 'map' | 'reduce' | 'publish', tasks: number) => void;
  /** Told, while a phase runs (every POLL_MS), how many of its tasks are done and of its input bytes (map) or run bytes (reduce). */
  onTasks?: (phase: TaskKind, done: number, total: number, bytesDone: number, bytesTotal: number) => void;
}

export interface DistributedImport {
  importId: string;
  summary: ImportSummary;
  /** Seconds in each phase, and the map and reduce tasks run. */
  phases: DistributedPhases;
  /** Removes the import's directory in the shared directory and its jobs from Redis. */
  remove(): Promise<void>;
}

interface Cluster {
  onTasks: DistributedImportOptions['onTasks'];
  /** Seconds the phase's tasks ran, summed over tasks (each on its worker's thread). */
  taskSeconds: Record<TaskKind, number>;
  queue: Queue;
  flows: FlowProducer;
  importId: string;
  sharedDir: string;
  dir: string;
}

export async function runDistributedImport(o: DistributedImportOptions): Promise<DistributedImport> {
  const plan = planImport({ ...o.import, outputDir: o.sharedDir });
  if (plan.parser !== 'fast' || plan.inputSizes.some((s) => s === null) || plan.inputs.some((p) => /\.gz$/i.test(p)))
    throw new IngestError('USAGE', 'a distributed import needs regular, uncompressed input files and the fast parser (--cluster)');
  const taskBytes = o.taskBytes ?? DEFAULT_TASK_BYTES;
  const reduceTasks = o.reduceTasks ?? Math.max(1, Math.round(plan.totalInputBytes / taskBytes));
  const importId = importIdOf(plan, taskBytes, reduceTasks);
  const sharedDir = path.resolve(o.sharedDir);
  const connection = connectionOf(o.clusterUrl);
  const cluster: Cluster = {
    onTasks: o.onTasks,
    taskSeconds: { map: 0, reduce: 0 },
    queue: new Queue(QUEUE_NAME, { connection }),
    flows: new FlowProducer({ connection }),
    importId,
    sharedDir,
    dir: path.join(sharedDir, `import-${importId}`),
  };
  try {
    return await runPhases(cluster, plan, o, taskBytes, reduceTasks);
  } catch (e) {
    // The input's own error: a rerun would fail the same way, so nothing of it is kept.
    if (isDefinitive(e)) await removeImport(cluster);
    throw e;
  } finally {
    await cluster.flows.close();
    await cluster.queue.close();
  }
}

async function runPhases(
  c: Cluster,
  plan: ImportPlan,
  o: DistributedImportOptions,
  taskBytes: number,
  reduceTasks: number,
): Promise<DistributedImport> {
  const t0 = performance.now();
  fs.mkdirSync(c.dir, { recursive: true });
  const parsePlan = planParse(plan, path.join(c.dir, 'unused'), 1, taskBytes);
  if (parsePlan === null)
    throw new IngestError('USAGE', 'the inputs cannot be cut into byte ranges (a distributed import needs the fast parser)');
  const mapTasks = parseRangeTasks(parsePlan);
  o.onPhase?.('map', mapTasks.length);
  const mapped = await runPhase<ParseTaskResult>(c, 'map', mapTasks);
  const outcome = await finishParse(plan, parsePlan, mapped, (task) => Promise.resolve(rerunLocally(c, parsePlan, task)));
  const t1 = performance.now();
  const keySpec = KeySpec.of(o.import.key ?? '1');
  const merges = outcome.runs.length === 0 ? [] : planMergeWithin(plan, outcome, reduceTasks, c);
  o.onPhase?.('reduce', merges.length);
  const reduced = merges.length === 0 ? [] : await runPhase<MergedRange>(c, 'reduce', merges);
  const merged = finishMerge(reduced);
  const t2 = performance.now();
  const locate = locatorOf(outcome.sources, inputNamer(plan));
  if (merged.result.duplicateCount > 0 && plan.policy === 'error') throw duplicateKeysError(merged.result, keySpec, locate);
  o.onPhase?.('publish', merged.files.length);
  const finalDir = path.join(c.dir, 'ssts');
  fs.mkdirSync(finalDir, { recursive: true });
  // Resuming: a run killed mid-publish left some files renamed; they are taken as they are.
  const finals = publishFiles(finalDir, merged.files, true);
  const t3 = performance.now();
  const summary = importSummaryOf({
    o: { ...o.import, outputDir: finalDir },
    inputSizes: plan.inputSizes,
    totalInput: plan.totalInputBytes,
    fast: true,
    parserReason: `${plan.parserReason}; distributed: ${mapTasks.length} map and ${merges.length} reduce tasks`,
    threads: mapTasks.length,
    outcome,
    merge: merged.result,
    policy: plan.policy,
    written: merged.files,
    finalPaths: finals,
    mergeThreads: merges.length,
    keySpec,
    locate,
    memoryLimitBytes: plan.memoryLimitBytes,
    runs: outcome.runs,
    seconds: { parse: (t1 - t0) / 1000, merge: (t2 - t1) / 1000, publish: (t3 - t2) / 1000 },
    resume: null,
    layout: plan.layout,
  });
  const round = (x: number): number => Math.round(x) / 1000;
  return {
    importId: c.importId,
    summary,
    phases: {
      mapSeconds: round(t1 - t0),
      reduceSeconds: round(t2 - t1),
      publishSeconds: round(t3 - t2),
      mapTasks: mapTasks.length,
      reduceTasks: merges.length,
      mapTaskSeconds: roundTo3Decimals(c.taskSeconds.map),
      reduceTaskSeconds: roundTo3Decimals(c.taskSeconds.reduce),
    },
    remove: () => removeImport(c),
  };
}

/** planMerge, refusing (with what to do) more runs than one merge may open at once. */
function planMergeWithin(plan: ImportPlan, outcome: Parameters<typeof planMerge>[1], reduceTasks: number, c: Cluster): MergeRangeTask[] {
  const fanIn = new MemoryBudget(plan.memoryLimitBytes).mergeFanIn(reduceTasks);
  if (outcome.runs.length > fanIn)
    throw new IngestError(
      'USAGE',
      `the map tasks wrote ${outcome.runs.length} sorted runs, more than a reduce task may merge at once (${fanIn} with --memory-limit ${plan.memoryLimitBytes >> 20}MiB): raise --memory-limit or --task-size`,
    );
  // No punching: a reduce attempt that dies after freeing run bytes would leave its retry zeros
  // to read; the runs go whole with the import's directory.
  return planMerge(plan, outcome, reduceTasks, path.join(c.dir, 'unused'), c.importId.slice(0, 12)).map((t) => ({
    ...t,
    regions: t.regions.map((r) => ({ ...r, punchFrom: 0, punchTo: 0 })),
  }));
}

/** A range whose guessed start was wrong, parsed again here from its true start (rare: a quoted line feed at a cut). */
function rerunLocally(c: Cluster, parsePlan: ParsePlan, task: ParseTask): ParseTaskResult {
  const runDir = path.join(c.dir, `rerun-${task.taskId}`);
  fs.mkdirSync(runDir, { recursive: true });
  const buffer = new SortBuffer(parsePlan.sortBufferBytes);
  try {
    const parser = { settings: { ...parsePlan.settings, runDir }, bound: parsePlan.bound as ParseRangeTask['bound'], workerIndex: 0 };
    return runParseTask(parser, buffer, task, null);
  } finally {
    buffer.releaseMemory();
  }
}

/**
 * Runs one phase's tasks as a flow (a barrier job whose children are the tasks) and returns their
 * results in task order once every one is done; fails with the first failed task's error.
 */
async function runPhase<R>(c: Cluster, kind: TaskKind, tasks: ReadonlyArray<object>): Promise<R[]> {
  const barrierId = barrierJobId(kind, c.importId);
  const existing = await c.queue.getJob(barrierId);
  if (existing !== undefined && (await existing.getState()) === 'failed') await existing.remove({ removeChildren: true });
  await c.flows.add({
    name: `${kind}s`,
    queueName: QUEUE_NAME,
    data: { importId: c.importId, tasks: tasks.length },
    opts: { jobId: barrierId },
    children: tasks.map((t, i) => ({
      name: kind,
      queueName: QUEUE_NAME,
      data: { importId: c.importId, sharedDir: c.sharedDir, index: i, wire: toWire(t) },
      opts: {
        jobId: taskJobId(kind, c.importId, i),
        attempts: TASK_ATTEMPTS,
        backoff: { type: 'exponential', delay: TASK_BACKOFF_MS },
        failParentOnFailure: true,
      },
    })),
  });
  await untilFinished(c, barrierId, kind, tasks.map(taskBytesOf));
  const barrier = (await c.queue.getJob(barrierId)) as Job;
  // Keyed by the children's Redis keys, `<prefix>:<queue>:<job id>`: by job id once, not searched per task.
  const byJobId = new Map(Object.entries(await barrier.getChildrenValues<string>()).map(([k, v]) => [k.slice(k.lastIndexOf(':') + 1), v]));
  return tasks.map((_, i) => {
    const value = byJobId.get(taskJobId(kind, c.importId, i));
    assert(value !== undefined, `${kind} task ${i} finished without a result`);
    const timed = fromWire<TimedResult<R>>(value);
    c.taskSeconds[kind] += timed.seconds;
    return timed.result;
  });
}

/** The bytes a task works on: its byte range (map), or its key range's share of the runs (reduce). */
function taskBytesOf(task: object): number {
  if ('range' in task) {
    const r = (task as ParseRangeTask).range;
    return r.stopAtOffset - r.startOffset;
  }
  const m = task as MergeRangeTask;
  return m.regions.reduce((n, region, i) => n + Math.max(0, (region.endOffset ?? m.runs[i].bytes) - m.startOffsets[i]), 0);
}

/** Waits until the barrier completed, telling onTasks how far it is; a failed one fails with its failed task's error. */
async function untilFinished(c: Cluster, barrierId: string, kind: TaskKind, taskBytes: readonly number[]): Promise<void> {
  const totalBytes = taskBytes.reduce((a, b) => a + b, 0);
  for (;;) {
    const job = await c.queue.getJob(barrierId);
    if (job === undefined) throw new IngestError('INTERNAL', `the ${kind} phase's job ${barrierId} is gone from the cluster`);
    const state = await job.getState();
    if (state === 'completed') {
      c.onTasks?.(kind, taskBytes.length, taskBytes.length, totalBytes, totalBytes);
      return;
    }
    if (state === 'failed') throw await failedTaskError(c, kind, taskBytes.length, job.failedReason);
    if (c.onTasks !== undefined) {
      const { processed = 0 } = await job.getDependenciesCount({ processed: true });
      // Tasks finish in any order; their bytes are about equal, so done bytes are told pro rata.
      c.onTasks(kind, processed, taskBytes.length, Math.round((totalBytes * processed) / taskBytes.length), totalBytes);
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

async function failedTaskError(c: Cluster, kind: TaskKind, tasks: number, barrierReason: string): Promise<IngestError> {
  for (let i = 0; i < tasks; i++) {
    const job = await c.queue.getJob(taskJobId(kind, c.importId, i));
    if (job !== undefined && (await job.getState()) === 'failed') return errorOfReason(job.failedReason, `${kind} task ${i}`);
  }
  return errorOfReason(barrierReason, `the ${kind} phase`);
}

/** The import's directory and jobs go (after it landed, or failed for good). */
async function removeImport(c: Cluster): Promise<void> {
  fs.rmSync(c.dir, { recursive: true, force: true });
  const queue = new Queue(QUEUE_NAME, { connection: c.queue.opts.connection });
  try {
    for (const kind of ['map', 'reduce'] as const) {
      const job = await queue.getJob(barrierJobId(kind, c.importId));
      if (job !== undefined) await job.remove({ removeChildren: true });
    }
  } finally {
    await queue.close();
  }
}

/** The import's id: its inputs (fingerprinted) and everything that shapes its tasks. */
function importIdOf(plan: ImportPlan, taskBytes: number, reduceTasks: number): string {
  const inputs = plan.inputs.map((p, i) => fingerprintInput(p, plan.inputNames[i]));
  const shaping = { ...plan, inputs, workerNiceness: undefined, taskBytes, reduceTasks };
  return createHash('sha256').update(JSON.stringify(shaping)).digest('hex').slice(0, 20);
}
