/**
 * The conflict check of `ingest sst ingest|plan` (cli/commands/ingestSst.ts): its options, the
 * checked ingestion, the plan's check, and what they add to the commands' output.
 *
 * Default: checked, `--on-conflict abort`, as the server's SST upload (POST /v1/imports/sst) and
 * `ingest import --db` are: a file that would change a live value is not ingested unless asked
 * for. `--no-conflict-check` is the engine's plain ingestion (RocksDB's IngestExternalFile: the
 * files' values win), and the way for files the check does not read (deletions, merge operands,
 * range deletions: the check reads put-only SSTs, as `ingest import` and SstFileWriter.put write).
 *
 * - ingest: src/conflict/ingestWithConflictCheck.ts, so the scan, the policy and the ingestion run
 *   under the engine's span latch (no write into the files' span slips in between). abort with
 *   conflicts ingests nothing (exit 3, after the report is written and the result printed);
 *   overwrite ingests every file; skip ingests the files rewritten without the conflicting rows.
 *   Rewrites (skip's, and those leaving out rows that hold the live value already) are written
 *   to a scratch directory inside the database (engine/scratchDirs.ts: same file system, removed
 *   at the end, or by the next open after a kill), never beside the caller's files, and go in by
 *   the command's --copy/--link/--move; the caller's files are never modified, and --move
 *   removes only those that went in as they are.
 * - plan: the same scan at the database's current state, changing nothing: the counts, the report,
 *   and what the policy would do (rowsHeldBack; rewrittenFiles and emptiedFiles null, as nothing
 *   is rewritten); a plan never fails on conflicts (exit 0), as `ingest plan` does not.
 *
 * `--json` gains, with the names of `ingest import --db --json` (src/ingest/importJson.ts):
 *   check (the conflict summary, docs/conflicts.md), report (the report's path or null),
 *   policy {onConflict, ingest, rowsHeldBack, rewrittenFiles, emptiedFiles};
 * all three null with --no-conflict-check.
 */
import * as fs from 'fs';
import * as path from 'path';
import type { Engine } from '../../src/engine/engine';
import { ownScratchDirPrefix } from '../../src/engine/scratchDirs';
import type { IngestOptions, IngestionResult } from '../../src/engine/ingest/ingestionJob';
import { checkSstConflicts } from '../../src/conflict/checkSstConflicts';
import { ingestWithConflictCheck } from '../../src/conflict/ingestWithConflictCheck';
import type { OnConflict } from '../../src/conflict/policy';
import type { ConflictReport, ConflictStrategy } from '../../src/conflict/report';
import { ConflictReportFile, ReportFormat, checkReportOptions } from '../../src/conflict/reportStream';
import { CONFLICT_CHECK_OPTIONS, ConflictCheckOptionValues, ON_CONFLICT_OPTION, OptionDef } from '../../src/ingest/options/optionTable';
import { IngestError } from '../../src/util/errors';
import type { DbTextCodec } from './dbText';

/** The check's options, in help order: the policy, the switch, then the scan and report options `ingest check` takes. */
export const SST_CHECK_OPTIONS: readonly OptionDef[] = [
  ON_CONFLICT_OPTION,
  {
    flags: '--no-conflict-check',
    description: "ingest without the conflict check (the files' values win): for files holding deletions or merges, which it does not read",
  },
  ...CONFLICT_CHECK_OPTIONS,
];

export interface SstCheckCliOptions extends ConflictCheckOptionValues {
  onConflict: OnConflict;
  conflictCheck: boolean;
}

export interface SstCheck {
  onConflict: OnConflict;
  strategy: ConflictStrategy;
  maxReported: number;
  formatKey: (key: Buffer) => string;
  reportPath: string | null;
  reportFormat: ReportFormat;
}

/** What the command's output shows of the policy (the names of import's `policy`). */
export interface SstPolicyJson {
  onConflict: OnConflict;
  ingest: boolean;
  rowsHeldBack: number;
  /** Null in a plan, which rewrites nothing. */
  rewrittenFiles: number | null;
  emptiedFiles: number | null;
}

export interface SstCheckOutcome {
  report: ConflictReport;
  policy: SstPolicyJson;
}

/** The check the options ask for, or null with --no-conflict-check; USAGE for options that do not go together. */
export function sstCheckOf(o: SstCheckCliOptions, codec: DbTextCodec, replacing: boolean): SstCheck | null {
  if (!o.conflictCheck) return null;
  checkReportOptions(o.report, o.reportFormat, o.maxReported);
  if (o.onConflict === 'skip' && replacing) {
    throw new IngestError(
      'USAGE',
      '--on-conflict skip cannot be combined with --replace-start/--replace-end: the range would delete the live values skip keeps',
    );
  }
  return {
    onConflict: o.onConflict,
    strategy: o.conflictStrategy,
    maxReported: o.maxReported,
    formatKey: (k) => codec.displayKey(k),
    reportPath: o.report ?? null,
    reportFormat: o.reportFormat ?? 'json',
  };
}

/** The checked ingestion; the report is written (under abort too) before this returns. */
export async function ingestChecked(
  engine: Engine,
  files: readonly string[],
  c: SstCheck,
  ingest: IngestOptions,
): Promise<{ outcome: SstCheckOutcome; ingestion: IngestionResult | null }> {
  const reportFile = c.reportPath === null ? null : new ConflictReportFile(c.reportPath, c.reportFormat);
  const scratch = new ScratchDir(engine.dir);
  try {
    const checked = await withCheckHint(() =>
      ingestWithConflictCheck(engine, files, {
        onConflict: c.onConflict,
        check: { strategy: c.strategy, maxReported: c.maxReported, formatKey: c.formatKey, reportSink: reportFile?.sink() },
        rewrite: { outputPathFor: (p) => scratch.pathFor(p) },
        ingest,
        onReport: (report) => reportFile?.complete(report),
      }),
    );
    const plan = checked.plan;
    const policy = {
      onConflict: plan.policy,
      ingest: plan.ingest,
      rowsHeldBack: plan.rowsHeldBack,
      rewrittenFiles: plan.rewritten.length,
      emptiedFiles: plan.emptied.length,
    };
    return { outcome: { report: checked.report, policy }, ingestion: checked.ingestion };
  } finally {
    reportFile?.abandon();
    scratch.remove();
  }
}

/** The plan's check: the scan at the current state and what the policy would decide; changes nothing. */
export async function planChecked(engine: Engine, files: readonly string[], c: SstCheck): Promise<SstCheckOutcome> {
  const reportFile = c.reportPath === null ? null : new ConflictReportFile(c.reportPath, c.reportFormat);
  try {
    const report = await withCheckHint(async () =>
      checkSstConflicts(engine, files, {
        strategy: c.strategy,
        maxReported: c.maxReported,
        formatKey: c.formatKey,
        reportSink: reportFile?.sink(),
      }),
    );
    reportFile?.complete(report);
    const conflicts = report.summary.conflicts;
    const aborts = c.onConflict === 'abort' && conflicts > 0;
    const rowsHeldBack = c.onConflict === 'overwrite' ? 0 : conflicts;
    return { report, policy: { onConflict: c.onConflict, ingest: !aborts, rowsHeldBack, rewrittenFiles: null, emptiedFiles: null } };
  } finally {
    reportFile?.abandon();
  }
}

/** The check's fields of the --json document (null with --no-conflict-check). */
export function checkJson(outcome: SstCheckOutcome | null, c: SstCheck | null): Record<string, unknown> {
  return { check: outcome?.report.summary ?? null, report: c?.reportPath ?? null, policy: outcome?.policy ?? null };
}

/** The human line of the check. */
export function checkLine(outcome: SstCheckOutcome, db: string, c: SstCheck): string {
  const s = outcome.report.summary;
  const where = c.reportPath === null ? '' : `, report in ${c.reportPath}`;
  return `checked ${s.sstKeys} keys against ${db}: ${s.new} new, ${s.unchanged} unchanged, ${s.conflicts} conflicting (${s.strategy} scan${where})`;
}

/** The CONFLICT error (exit 3) of an ingestion the abort policy stopped, or null. */
export function conflictFailureOf(outcome: SstCheckOutcome, db: string): IngestError | null {
  if (outcome.policy.ingest) return null;
  const first = outcome.report.conflicts[0];
  const example = first === undefined ? '' : `; first: key ${first.key} (${first.sstFile})`;
  return new IngestError(
    'CONFLICT',
    `${outcome.report.summary.conflicts} key(s) would change a live value in ${db}; nothing ingested (--on-conflict overwrite|skip to go on)${example}`,
  );
}

/** A file the check cannot read (not put-only): the error says how to ingest it anyway. */
async function withCheckHint<T>(body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof IngestError && err.code === 'NOT_SUPPORTED' && err.message.includes('put-only')) {
      throw new IngestError('NOT_SUPPORTED', `${err.message}; --no-conflict-check ingests it unchecked`, { cause: err });
    }
    throw err;
  }
}

/** Where rewrites go: a scratch directory inside the database, made on the first rewrite, removed at the end. */
class ScratchDir {
  private dir: string | null = null;
  private count = 0;

  constructor(private readonly dbDir: string) {}

  /** A fresh name for the rewrite of `original` (numbered: two inputs may share a base name). */
  pathFor(original: string): string {
    this.dir ??= fs.mkdtempSync(ownScratchDirPrefix(this.dbDir));
    const ext = path.extname(original);
    return path.join(this.dir, `${++this.count}-${path.basename(original, ext)}.rewrite.sst`);
  }

  remove(): void {
    if (this.dir !== null) fs.rmSync(this.dir, { recursive: true, force: true });
    this.dir = null;
  }
}
