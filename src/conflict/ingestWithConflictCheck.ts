/**
 * ingestWithConflictCheck: the conflict scan, the on-conflict policy and the ingestion of new SSTs
 * as one atomic step against the engine's concurrent writers (Engine.ingestExternalFilesChecked
 * holds the span latch over all three; see src/engine/ingest/checkedIngestion.ts).
 *
 * What a caller can rely on, for the files' span (their envelope, the replace range included):
 * - the report describes the database exactly as the ingestion commits over it: no write inside
 *   the span is acknowledged between the report's snapshot and the commit (such writes wait on the
 *   latch and land after the commit, above the files, so they win as any later write does);
 * - abort: with any conflict nothing is ingested (plan.ingest false, ingestion null);
 * - overwrite: every file is ingested, the import's values win over every write acknowledged
 *   before the commit, and the report lists every live value it overwrote;
 * - skip: the conflicting keys keep their live values (their rows are rewritten out of the files),
 *   everything else is ingested.
 * Under every policy that ingests, rows holding the live value already are left out (policy.ts),
 * so a load that changes nothing ingests no file (ingestion null). The rewritten files are this
 * call's own and are removed once it returns; the caller's files are never modified.
 * The scan and the skip rewrite run a slice at a time (sliceMs, default 4 ms), so reads and writes
 * of the same process, inside the span included for reads, keep being served meanwhile.
 */
import * as fs from 'fs';
import { crashPoint } from '../util/crashPoints';
import type { Engine } from '../engine/engine';
import type { IngestOptions, IngestionResult } from '../engine/ingest/ingestionJob';
import type { UserKeyRange } from '../engine/runningCompactions';
import { CheckSstConflictsOptions, checkSstConflictsSliced } from './checkSstConflicts';
import { IngestPlan, OnConflict, applyConflictPolicySliced } from './policy';
import { ConflictReport } from './report';
import { RewriteOptions, RewrittenFile } from './rewrite';

export interface ConflictCheckedIngestOptions {
  onConflict: OnConflict;
  /** The scan's options; the snapshot is the latch's, and skip collects every conflicting key. */
  check?: Omit<CheckSstConflictsOptions, 'snapshot' | 'collectConflictingKeys'>;
  /** Where the skip policy writes its rewrites. */
  rewrite?: RewriteOptions;
  ingest?: IngestOptions;
  /** Longest slice of scan or rewrite work before the event loop gets a turn (default 4 ms). */
  sliceMs?: number;
  /** Called with the report under the latch, before the policy acts (e.g. to write it to a file). */
  onReport?: (report: ConflictReport) => void;
  /**
   * Leave rows holding the live value already out of the ingestion (default true; always off
   * with a replace range, which must find every row of the range in the files).
   */
  dropUnchanged?: boolean;
}

export interface ConflictCheckedIngestResult {
  report: ConflictReport;
  plan: IngestPlan;
  /** Null when the policy ingested nothing (abort with conflicts, or every row skipped). */
  ingestion: IngestionResult | null;
  /** From the policy's decision to the commit (staging, flush, commit); 0 when nothing was ingested. */
  ingestSeconds: number;
  latch: { span: UserKeyRange; waitMs: number; heldMs: number };
}

export async function ingestWithConflictCheck(
  engine: Engine,
  sstPaths: readonly string[],
  opts: ConflictCheckedIngestOptions,
): Promise<ConflictCheckedIngestResult> {
  const sliceMs = opts.sliceMs;
  const replacing = opts.ingest?.replaceRange !== undefined;
  let decidedAtMs = 0;
  let rewritten: readonly RewrittenFile[] = [];
  try {
    const checked = await engine.ingestExternalFilesChecked(
      sstPaths,
      async ({ snapshot }) => {
        const report = await checkSstConflictsSliced(engine, sstPaths, {
          ...opts.check,
          snapshot,
          collectConflictingKeys: opts.onConflict === 'skip',
          collectUnchangedRuns: opts.dropUnchanged !== false && !replacing,
          sliceMs,
        });
        opts.onReport?.(report);
        const plan = await applyConflictPolicySliced(opts.onConflict, report, sstPaths, opts.rewrite, { sliceMs });
        rewritten = plan.rewritten;
        decidedAtMs = performance.now();
        // Checked and decided, not yet ingested: a kill here must leave the database as it was.
        crashPoint('check.decided');
        const anything = plan.ingest && (plan.files.length > 0 || replacing);
        return { ingest: anything ? plan.files : null, result: { report, plan } };
      },
      opts.ingest,
    );
    return {
      ...checked.result,
      ingestion: checked.ingestion,
      ingestSeconds: checked.ingestion === null ? 0 : (performance.now() - decidedAtMs) / 1000,
      latch: { span: checked.span, waitMs: checked.latchWaitMs, heldMs: checked.latchHeldMs },
    };
  } finally {
    // The rewrites are this call's own: once ingested the database holds its own copy or link.
    for (const r of rewritten) fs.rmSync(r.to, { force: true });
  }
}
