/**
 * The `--json` documents of the import pipeline's commands, one place for the field names that
 * `ingest import|plan --db --json`, `ingest check --json` and the server's POST /v1/imports all
 * print (docs/import.md and docs/conflicts.md list them; they are stable).
 *
 *   import, plan: {db, createdDb, dryRun, import, check, report, policy, replaceRange, ingest, plan, pendingJobs, space, distributed}
 *   check:        {import, check, report}
 * `import` is the import summary, `check` the conflict summary, `report` the report file's path
 * (or null). The server adds `conflictReport`, the report itself, beside these.
 */
import { DbCheckResult, DbImportResult } from './importIntoDb';
import type { ConflictSummary } from '../conflict/report';

/** The import and plan document, field by field (what scripts and tests parse). */
export interface DbImportJson {
  db: string;
  createdDb: boolean;
  dryRun: boolean;
  import: DbImportResult['import'];
  check: ConflictSummary;
  report: string | null;
  policy: DbImportResult['policy'];
  replaceRange: DbImportResult['replaceRange'];
  ingest: DbImportResult['ingest'];
  plan: DbImportResult['plan'];
  pendingJobs: NonNullable<DbImportResult['pendingJobs']> | null;
  space: NonNullable<DbImportResult['space']> | null;
  distributed: NonNullable<DbImportResult['distributed']> | null;
}

export function dbImportJson(r: DbImportResult): DbImportJson {
  return {
    db: r.db,
    createdDb: r.createdDb,
    dryRun: r.dryRun,
    import: r.import,
    check: r.report.summary,
    report: r.reportPath,
    policy: r.policy,
    replaceRange: r.replaceRange,
    ingest: r.ingest,
    plan: r.plan,
    // Import mode into an existing database: {discarded, pending, maxAgeSeconds}; else null.
    pendingJobs: r.pendingJobs ?? null,
    // The space policy after an import (spacePolicy.ts); null when it did not run.
    space: r.space ?? null,
    // `--cluster`: {importId, mapSeconds, reduceSeconds, publishSeconds, mapTasks, reduceTasks}; else null.
    distributed: r.distributed ?? null,
  };
}

export function dbCheckJson(r: DbCheckResult): Record<string, unknown> {
  return { import: r.import, check: r.report.summary, report: r.reportPath };
}

/** The document of either mode. */
export function dbRunJson(r: DbImportResult | DbCheckResult): DbImportJson | ReturnType<typeof dbCheckJson> {
  return r.mode === 'check' ? dbCheckJson(r) : dbImportJson(r);
}
