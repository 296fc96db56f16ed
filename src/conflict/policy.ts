/**
 * What an import does about conflicts (`--on-conflict`), decided from a conflict report:
 * - abort (default): with any conflict, ingest nothing (the CLI exits with code 3);
 * - overwrite: ingest every file; the new values win (they get newer sequence numbers);
 * - skip: ingest everything but the conflicting rows: files holding one are rewritten without
 *   them (rewrite.ts); the rest go in as they are.
 * Unchanged rows (the live value already) are left out of the ingestion when the report carries
 * their runs (checkSstConflicts' collectUnchangedRuns): a file holding only unchanged rows is
 * not ingested at all, and one at least half unchanged is rewritten without them (rewrite.ts).
 * Otherwise they go in: a value written over itself changes nothing a reader can see.
 *
 * The decision is only as fresh as the report's snapshot: the caller must ingest without
 * letting writes into the files' span in between, or a write racing the import can turn into an
 * unreported overwrite. ingestWithConflictCheck (ingestWithConflictCheck.ts) does that with the engine's
 * span latch; applyConflictPolicySliced is the same decision with the skip rewrite run a slice at
 * a time.
 */
import { IngestError } from '../util/errors';
import { ConflictReport } from './report';
import { SliceOptions } from '../util/slices';
import { RewriteOptions, RewriteResult, RewrittenFile, rewriteWithoutKeys, rewriteWithoutKeysSliced } from './rewrite';

export type OnConflict = 'abort' | 'overwrite' | 'skip';

export const ON_CONFLICT_CHOICES: readonly OnConflict[] = ['abort', 'overwrite', 'skip'];

export interface IngestPlan {
  policy: OnConflict;
  /** False when nothing may be ingested (abort with conflicts). */
  ingest: boolean;
  /** The files to ingest (rewritten ones in place of their originals). */
  files: string[];
  rewritten: RewrittenFile[];
  /** Originals left out because every row in them conflicted (skip). */
  emptied: string[];
  /** Conflicting rows that will not be ingested (skip) or that stopped the import (abort). */
  rowsHeldBack: number;
  /** Originals left out whole because every row in them holds the live value already. */
  unchangedLeftOut: string[];
  /** Unchanged rows left out of the ingestion (in rewrites and in files left out whole). */
  rowsUnchangedDropped: number;
}

export function parseOnConflict(text: string): OnConflict {
  if ((ON_CONFLICT_CHOICES as readonly string[]).includes(text)) return text as OnConflict;
  throw new IngestError('USAGE', `--on-conflict must be one of ${ON_CONFLICT_CHOICES.join(', ')}, got "${text}"`);
}

/**
 * Decides which files to ingest. For `skip` with conflicts, the report must come from
 * checkSstConflicts with collectConflictingKeys, and the rewritten files are written now.
 */
export function applyConflictPolicy(
  policy: OnConflict,
  report: ConflictReport,
  sstPaths: readonly string[],
  rewrite: RewriteOptions = {},
): IngestPlan {
  const decided = decideWithoutRewrite(policy, report, sstPaths);
  if (decided.plan !== null) return decided.plan;
  return withRewrite(decided.base, rewriteWithoutKeys(sstPaths, decided.keys, { ...rewrite, unchanged: report.unchangedRuns }));
}

/** applyConflictPolicy with the skip rewrite run a slice at a time. */
export async function applyConflictPolicySliced(
  policy: OnConflict,
  report: ConflictReport,
  sstPaths: readonly string[],
  rewrite: RewriteOptions = {},
  slicing: SliceOptions = {},
): Promise<IngestPlan> {
  const decided = decideWithoutRewrite(policy, report, sstPaths);
  if (decided.plan !== null) return decided.plan;
  return withRewrite(
    decided.base,
    await rewriteWithoutKeysSliced(sstPaths, decided.keys, { ...rewrite, unchanged: report.unchangedRuns }, slicing),
  );
}

type Decided = { plan: IngestPlan; base: null; keys: null } | { plan: null; base: IngestPlan; keys: readonly Buffer[] };

/**
 * The plan when no rewrite is needed; else what the rewrite needs: the conflicting keys to leave
 * out (skip), and the report's unchanged runs, which rewriteWithoutKeys leaves out under every
 * policy that ingests.
 */
function decideWithoutRewrite(policy: OnConflict, report: ConflictReport, sstPaths: readonly string[]): Decided {
  const conflicts = report.summary.conflicts;
  const plan: IngestPlan = {
    policy,
    ingest: true,
    files: sstPaths.slice(),
    rewritten: [],
    emptied: [],
    rowsHeldBack: 0,
    unchangedLeftOut: [],
    rowsUnchangedDropped: 0,
  };
  if (policy === 'abort' && conflicts > 0)
    return { plan: { ...plan, ingest: false, files: [], rowsHeldBack: conflicts }, base: null, keys: null };
  const hasUnchangedRuns = (report.unchangedRuns?.rowsInRuns ?? 0) > 0;
  if (policy !== 'skip' || conflicts === 0)
    return hasUnchangedRuns ? { plan: null, base: plan, keys: [] } : { plan, base: null, keys: null };
  const keys = report.conflictingKeys;
  if (keys === null || keys.length !== conflicts) {
    throw new IngestError(
      'INVALID_ARGUMENT',
      'the skip policy needs every conflicting key: run checkSstConflicts with collectConflictingKeys',
    );
  }
  return { plan: null, base: { ...plan, rowsHeldBack: conflicts }, keys };
}

function withRewrite(base: IngestPlan, r: RewriteResult): IngestPlan {
  return {
    ...base,
    files: r.paths,
    rewritten: r.rewritten,
    emptied: r.emptied,
    unchangedLeftOut: r.unchangedLeftOut,
    rowsUnchangedDropped: r.unchangedDropped,
  };
}
