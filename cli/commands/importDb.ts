/**
 * `ingest import <inputs...> --db DIR` and `ingest plan <inputs...> --db DIR`: CSV into a live
 * database through the pipeline object of src/ingest/importIntoDb.ts (DbImport) in its 'import'
 * and 'plan' modes. docs/import.md ("Into a database") documents the options and the JSON fields.
 *
 * Wiring: `import` (cli/commands/import.ts) calls runDbImport when --db is given, `plan`
 * (cli/commands/plan.ts) always. Both take their options from the shared tables of importOptions.ts, so either
 * registers on its own, in any order.
 *
 * Options (besides every import option): --db DIR; --on-conflict abort|overwrite|skip (default
 * abort); the check's --conflict-strategy, --report FILE, --max-reported N; --replace-range
 * [FROM..TO] (either bound may be left out: FROM.., ..TO; keys typed as --key reads them);
 * --dry-run (import only; `plan` always); --no-create-if-missing; --verify-checksums (re-read the new SSTs first);
 * --no-blocking-flush.
 *
 * `--server URL [--token-file F]` instead of --db (either command): the same run against the
 * database an `ingest serve` holds, the import half here and the check and ingestion there
 * (cli/commands/importRemote.ts, which prints through printImportResult of importOutput.ts, so the document,
 * the human lines, the --report file and the exit codes are those of --db).
 *
 * Exit codes: 0 ingested (or planned: a plan exits 0 even with conflicts, and shows them);
 * 3 conflicts under abort, nothing ingested, after the report is written; 2 bad input or usage;
 * 1 anything else. `import` is resumable (see cli/commands/import.ts): an interrupted run keeps its
 * job directory in DIR for the next run of the same command; `plan` and `check` change nothing and
 * remove their private directory on every failure and on Ctrl-C.
 */
import { DbImport, conflictFailure } from '../../src/ingest/importIntoDb';
import { Progress } from '../../src/ingest/progress';
import { dbImportJson } from '../../src/ingest/importJson';
import { IngestError } from '../../src/util/errors';
import { DbImportCliOptions, abandonedMessage, dbImportOptionsOf, diskQuotaOf, stepCheckpointsOf } from './importOptions';
import { printImportResult } from './importOutput';
import { withFinalEvent } from './progressEvents';
import { parsePendingMaxAge } from '../../src/ingest/resume/pendingExpiry';
import { runInterruptible } from './interrupt';
import { spacePolicyOf } from '../../src/ingest/spacePolicy';
import { runClusterImport } from './importCluster';

export type { DbImportCliOptions } from './importOptions';

/** `import --db` (mode 'import', or 'plan' with --dry-run) and `plan`: run, print, then fail with exit 3 when abort stopped it. */
export async function runDbImport(inputs: string[], o: DbImportCliOptions, mode: 'plan' | 'import'): Promise<void> {
  if (o.outputDir !== undefined)
    throw new IngestError(
      'USAGE',
      '--output-dir and --db do not go together: with --db the SSTs go to a private directory inside the database',
    );
  if (o.cluster !== undefined) return runClusterImport(inputs, o, mode);
  if (o.sharedDir !== undefined || o.taskSize !== undefined || o.reduceTasks !== undefined)
    throw new IngestError('USAGE', '--shared-dir, --task-size and --reduce-tasks go with --cluster');
  const { options, codec } = dbImportOptionsOf(inputs, o, mode);
  const progress = Progress.forOption(o.progress, o.quiet === true);
  // Only `import` resumes (a plan changes nothing, so there is nothing to resume). --no-resume
  // discards a pending job and starts over; the new run is resumable all the same.
  const resume = mode === 'import';
  await withFinalEvent(progress, async () => {
    const job = new DbImport({
      ...options,
      mode,
      resume,
      restart: o.resume === false,
      pendingMaxAgeMs: o.pendingMaxAge === undefined ? undefined : parsePendingMaxAge(o.pendingMaxAge),
      space: spacePolicyOf(o.maxSpaceAmp, o.compactBudget),
      import: { ...options.import, progress, diskQuotaBytes: diskQuotaOf(o), stepCheckpointsFromInputBytes: stepCheckpointsOf(o) },
    });
    const result = await runInterruptible(job, () =>
      job.settlingSpace
        ? 'the import is committed; the space policy stopped between or inside a compaction (the database is consistent)'
        : abandonedMessage(resume, inputs, o.db, 'import abandoned'),
    );
    printImportResult(result, o, codec, false);
    return { doc: dbImportJson(result), failure: conflictFailure(result) };
  });
}
