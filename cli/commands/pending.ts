/**
 * `ingest pending DIR [--discard ID | --discard-all] [--json]`: the interrupted imports a
 * database or an output directory holds (src/ingest/resume/importJob.ts), with their phase and
 * progress, and the explicit way to give their scratch space back.
 *
 * `ingest pending --server URL [--token-file F] [--discard ID | --discard-all] [--json]`: the
 * staged imports of an `ingest serve` (GET /v1/imports; --discard is DELETE /v1/imports/{id}).
 * With --json one object {"server", "imports": [{"id", "files", "totalBytes", "createdAt",
 * "updatedAt"}...], "discarded": [id...], "totalBytes"}; otherwise one line per import, then the
 * total. An unknown --discard id exits 2 (as a local one does), an unreachable server 1.
 *
 * Output: with --json one object {"dir", "pending": [PendingJob...], "discarded": [jobId...],
 * "totalScratchBytes"}; otherwise one line per job, then the total scratch space they hold. A running job is listed with "running": true and is never
 * discarded (exit 1, BUSY). Exit codes: 0; 2 for an unknown job id or an unreadable DIR.
 */
import { Command } from 'commander';
import { PendingJob, discardJob, listPendingJobs } from '../../src/ingest/resume/importJob';
import { IngestError } from '../../src/util/errors';
import type { ServerClient, StagedImportJson } from '../serverClient';
import { TargetOptions, withServer } from './serverTarget';

interface PendingCliOptions extends Omit<TargetOptions, 'db'> {
  discard?: string;
  discardAll?: boolean;
  json?: boolean;
}

export function registerPendingCommand(program: Command): void {
  program
    .command('pending')
    .description('list the interrupted imports DIR (a database or an --output-dir) holds; --discard removes one')
    .argument('[dir]', 'the database or output directory (or --server URL)')
    .option('--server <url>', 'list the staged imports of the `ingest serve` at this URL instead')
    .option('--token-file <file>', "with --server: the server's token (first line)")
    .option('--discard <id>', 'remove this pending (or staged) import and its files')
    .option('--discard-all', 'remove every pending import that is not running (every staged import)')
    .option('--json', 'print one JSON object on stdout')
    .action((dir: string | undefined, o: PendingCliOptions) => {
      if ((dir === undefined) === (o.server === undefined))
        throw new IngestError('USAGE', 'pending: give DIR or --server URL (one of them)');
      if (o.server === undefined && o.tokenFile !== undefined) throw new IngestError('USAGE', 'pending: --token-file goes with --server');
      return dir === undefined ? withServer(o, (client) => runPendingOnServer(client, o)) : runPending(dir, o);
    });
}

async function runPendingOnServer(client: ServerClient, o: PendingCliOptions): Promise<void> {
  const discarded: string[] = [];
  if (o.discard !== undefined) {
    if (!(await client.deleteStaged(o.discard))) throw new IngestError('BAD_INPUT', `no staged import ${o.discard} on ${client.url}`);
    discarded.push(o.discard);
  }
  if (o.discardAll === true) {
    for (const staged of await client.stagedImports()) if (await client.deleteStaged(staged.id)) discarded.push(staged.id);
  }
  const imports = await client.stagedImports();
  const totalBytes = imports.reduce((n, i) => n + i.totalBytes, 0);
  if (o.json === true) {
    process.stdout.write(`${JSON.stringify({ server: client.url, imports, discarded, totalBytes })}\n`);
    return;
  }
  for (const id of discarded) process.stdout.write(`discarded ${id}\n`);
  if (imports.length === 0 && discarded.length === 0) process.stdout.write(`no staged imports on ${client.url}\n`);
  for (const staged of imports) process.stdout.write(`${stagedLineOf(staged)}\n`);
  if (imports.length > 0)
    process.stdout.write(`total staged ${(totalBytes / (1 << 20)).toFixed(1)} MiB in ${imports.length} staged import(s)\n`);
}

function stagedLineOf(s: StagedImportJson): string {
  return `${s.id}  staged  ${s.files.length} file(s)  ${(s.totalBytes / (1 << 20)).toFixed(1)} MiB  since ${s.createdAt}  updated ${s.updatedAt}`;
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
