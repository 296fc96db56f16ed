/**
 * `ingest jobs --cluster URL`: the distributed imports a cluster holds, phase by phase: the
 * phase's state (BullMQ's: waiting-children while its tasks run, completed, failed), its tasks,
 * how many are done, how many attempts failed (retried or not) and which tasks failed for good.
 * Read from the queue alone (clusterQueue.ts), so any machine that reaches Redis can ask.
 */
import { Job, Queue } from 'bullmq';
import { QUEUE_NAME, TaskKind, connectionOf, taskJobId } from './clusterQueue';

export interface PhaseView {
  phase: TaskKind;
  state: string;
  tasks: number;
  done: number;
  /** Attempts that failed, over all the phase's tasks (a retried task counts each). */
  failedAttempts: number;
  /** Tasks that failed for good, with their reasons. */
  failedTasks: Array<{ task: number; reason: string }>;
}

export interface DistributedImportView {
  importId: string;
  phases: PhaseView[];
}

const STATES = ['waiting-children', 'waiting', 'active', 'delayed', 'completed', 'failed'] as const;

export async function listDistributedImports(clusterUrl: string): Promise<DistributedImportView[]> {
  const queue = new Queue(QUEUE_NAME, { connection: connectionOf(clusterUrl) });
  try {
    const barriers = (await queue.getJobs([...STATES])).filter((j) => j.name === 'maps' || j.name === 'reduces');
    const byImport = new Map<string, PhaseView[]>();
    for (const b of barriers) {
      const importId = (b.data as { importId: string }).importId;
      const views = byImport.get(importId) ?? [];
      views.push(await phaseViewOf(queue, b, importId));
      byImport.set(importId, views);
    }
    return [...byImport].map(([importId, phases]) => ({ importId, phases: phases.sort((a, b) => a.phase.localeCompare(b.phase)) }));
  } finally {
    await queue.close();
  }
}

async function phaseViewOf(queue: Queue, barrier: Job, importId: string): Promise<PhaseView> {
  const phase: TaskKind = barrier.name === 'maps' ? 'map' : 'reduce';
  const tasks = (barrier.data as { tasks?: number }).tasks ?? 0;
  const view: PhaseView = { phase, state: await barrier.getState(), tasks, done: 0, failedAttempts: 0, failedTasks: [] };
  for (let i = 0; i < tasks; i++) {
    const job = await queue.getJob(taskJobId(phase, importId, i));
    if (job === undefined) continue;
    const state = await job.getState();
    if (state === 'completed') view.done++;
    // attemptsMade counts the attempts that ended; a completed task's last one succeeded.
    view.failedAttempts += Math.max(0, job.attemptsMade - (state === 'completed' ? 1 : 0));
    if (state === 'failed') view.failedTasks.push({ task: i, reason: job.failedReason });
  }
  return view;
}
