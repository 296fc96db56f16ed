/**
 * `ingest worker --cluster redis://HOST:PORT --shared-dir DIR [--concurrency N] [--lock-duration MS]`:
 * a worker of distributed imports (src/ingest/distributed/clusterWorker.ts, docs/distributed.md).
 * It prints one JSON line {"worker", "cluster", "sharedDir"} once it is connected, then runs jobs
 * until SIGTERM or SIGINT: it stops taking jobs, finishes the ones it runs, and exits 0. Any number
 * of workers may run, on any machine that sees the inputs and DIR at the same paths.
 *
 * Exit codes: 0 stopped by a signal; 2 usage (a bad URL, a missing DIR); 1 anything else (Redis
 * unreachable at start).
 */
import { Command } from 'commander';
import { IngestError } from '../../src/util/errors';

interface WorkerCliOptions {
  cluster: string;
  sharedDir: string;
  concurrency: string;
  lockDuration?: string;
}

function positiveInteger(text: string, name: string, max: number): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new IngestError('USAGE', `${name} must be an integer 1..${max}, got "${text}"`);
  return n;
}

async function workerCommand(o: WorkerCliOptions): Promise<void> {
  const { startClusterWorker } = await import('../../src/ingest/distributed/clusterWorker');
  const worker = await startClusterWorker({
    clusterUrl: o.cluster,
    sharedDir: o.sharedDir,
    concurrency: positiveInteger(o.concurrency, '--concurrency', 256),
    lockDurationMs: o.lockDuration === undefined ? undefined : positiveInteger(o.lockDuration, '--lock-duration', 3600_000),
    log: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${JSON.stringify({ worker: process.pid, cluster: o.cluster, sharedDir: o.sharedDir })}\n`);
  await new Promise<void>((resolve) => {
    const onSignal = (): void => resolve();
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
  await worker.close();
  process.stderr.write(`stopped after ${worker.counts.completed} job(s), ${worker.counts.failed} failed\n`);
}

export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description('run distributed import jobs from a cluster (docs/distributed.md) until SIGTERM')
    .requiredOption('--cluster <url>', 'the Redis of the cluster, redis://host:port')
    .requiredOption('--shared-dir <dir>', 'the directory every worker and the importing command share (same path everywhere)')
    .option('--concurrency <n>', 'jobs at once (each uses a core)', '1')
    .option(
      '--lock-duration <ms>',
      "how long a job's lock lasts unrenewed: a killed worker's job is retried after about this (default 30000)",
    )
    .action((o: WorkerCliOptions) => workerCommand(o));
}

interface JobsCliOptions {
  cluster: string;
  json?: boolean;
}

/** `ingest jobs --cluster URL [--json]`: the cluster's distributed imports, phase by phase. */
async function jobsCommand(o: JobsCliOptions): Promise<void> {
  const { listDistributedImports } = await import('../../src/ingest/distributed/clusterJobs');
  const imports = await listDistributedImports(o.cluster);
  if (o.json === true) {
    process.stdout.write(`${JSON.stringify({ imports })}\n`);
    return;
  }
  if (imports.length === 0) process.stdout.write('no distributed imports in the cluster\n');
  for (const i of imports) {
    process.stdout.write(`import ${i.importId}\n`);
    for (const p of i.phases) {
      const failed = p.failedTasks.map((f) => `task ${f.task}: ${f.reason}`).join('; ');
      process.stdout.write(
        `  ${p.phase}: ${p.state}, ${p.done}/${p.tasks} tasks done, ${p.failedAttempts} failed attempt(s)${failed === '' ? '' : `; failed: ${failed}`}\n`,
      );
    }
  }
}

export function registerJobsCommand(program: Command): void {
  program
    .command('jobs')
    .description("list a cluster's distributed imports with per-phase progress and failed attempts (docs/distributed.md)")
    .requiredOption('--cluster <url>', 'the Redis of the cluster, redis://host:port')
    .option('--json', 'print {"imports": [{"importId", "phases": [{"phase", "state", "tasks", "done", "failedAttempts", "failedTasks"}]}]}')
    .action((o: JobsCliOptions) => jobsCommand(o));
}
