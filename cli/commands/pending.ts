/**
 * `ingest pending DIR [--discard ID | --discard-all] [--json]`: the interrupted imports a
 * database or an output directory holds (src/ingest/resume/importJob.ts), with their phase and
 * progress, and the explicit way to give their scratch space back.
 *
 * Output: with --json one object {"dir", "pending": [PendingJob...], "discarded": [jobId...],
 * "totalScratchBytes"}; otherwise one line per job, then the total scratch space they hold. A running job is listed with "running": true and is never
 * discarded (exit 1, BUSY). Exit codes: 0; 2 for an unknown job id or an unreadable DIR.
 */
import { Command } from 'commander';
import { PendingJob, discardJob, listPendingJobs } from '../../src/ingest/resume/importJob';

interface PendingCliOptions {
  discard?: string;
  discardAll?: boolean;
  json?: boolean;
}

export function registerPendingCommand(program: Command): void {
  program
    .command('pending')
    .description('list the interrupted imports DIR (a database or an --output-dir) holds; --discard removes one')
    .argument('<dir>', 'the database or output directory')
    .option('--discard <id>', 'remove this pending import and its scratch files')
    .option('--discard-all', 'remove every pending import that is not running')
    .option('--json', 'print one JSON object on stdout')
    .action((dir: string, o: PendingCliOptions) => runPending(dir, o));
}

function runPending(dir: string, o: PendingCliOptions): void {
  const discarded: string[] = [];
  if (o.discard !== undefined) discarded.push(discardJob(dir, o.discard).jobId);
  if (o.discardAll === true) {
    for (const job of listPendingJobs(dir)) if (!job.running) discarded.push(discardJob(dir, job.jobId).jobId);
  }
  const pending = listPendingJobs(dir);
  const totalScratchBytes = pending.reduce((a, j) => a + j.scratchBytes, 0);
  if (o.json === true) {
    process.stdout.write(`${JSON.stringify({ dir, pending, discarded, totalScratchBytes })}\n`);
    return;
  }
  for (const id of discarded) process.stdout.write(`discarded ${id}\n`);
  if (pending.length === 0 && discarded.length === 0) process.stdout.write(`no pending imports in ${dir}\n`);
  for (const job of pending) process.stdout.write(`${lineOf(job)}\n`);
  if (pending.length > 0)
    process.stdout.write(`total scratch ${(totalScratchBytes / (1 << 20)).toFixed(1)} MiB in ${pending.length} pending import(s)\n`);
}

function lineOf(j: PendingJob): string {
  const p = j.progress;
  const parsed = p.inputBytes > 0 ? `${Math.floor((100 * p.parsedBytes) / p.inputBytes)}% parsed` : 'parsed';
  const state = j.running ? 'running' : 'interrupted';
  return (
    `${j.jobId}  ${state}  phase ${j.phase}  ${parsed}, ${p.rowsMerged} rows merged, ${j.sstsDone} SSTs  ` +
    `attempts ${j.attempts}  scratch ${(j.scratchBytes / (1 << 20)).toFixed(1)} MiB  inputs ${j.inputs.join(', ')}  since ${j.startedAt}`
  );
}
