/**
 * The `--json` documents of the import pipeline's commands, one place for the field names that
 * `ingest import|plan --db --json`, `ingest check --json` and the server's POST /v1/imports all
 * print (docs/import.md and docs/conflicts.md list them; they are stable).
 *
 *   import, plan: {db, createdDb, dryRun, import, check, report, policy, replaceRange, ingest, plan, pendingJobs}
 *   check:        {import, check, report}
 * `import` is the import summary, `check` the conflict summary, `report` the report file's path
 * (or null). The server adds `conflictReport`, the report itself, beside these.
 */
import { DbCheckResult, DbImportResult } from './importIntoDb';

export function dbImportJson(r: DbImportResult): Record<string, unknown> {
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
  };
}

export function dbCheckJson(r: DbCheckResult): Record<string, unknown> {
  return { import: r.import, check: r.report.summary, report: r.reportPath };
}

/** The document of either mode. */
export function dbRunJson(r: DbImportResult | DbCheckResult): Record<string, unknown> {
  return r.mode === 'check' ? dbCheckJson(r) : dbImportJson(r);
}
