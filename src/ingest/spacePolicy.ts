/**
 * The space policy of a database that only short-lived processes open (`ingest import --db` from
 * cron): the import's process finishes, before it exits, the compactions its ingestion made due,
 * because no process is left afterwards to run them in the background.
 *
 * Why: each CLI command opens the engine, works and closes it, so background compaction never
 * gets the time to run; after nights of overwrites the database held every night's versions
 * (2.9x its compacted size after 8 nights). A live engine (library, `ingest serve`) keeps
 * compacting in the background and is left alone.
 *
 * Steps of settleSpace(engine, options), in order, each started only while the time budget
 * lasts (a compaction started runs to its end: each is one atomic manifest edit):
 * 1. replaced: an import with a replace range compacts that range, so the data its tombstones
 *    delete is dropped now (an estimate from the levels' shape cannot see deleted bytes);
 * 2. due: the compactions the engine's level targets make due (L0 file count, level sizes);
 * 3. amplification: when the estimate (engine/spaceAmplification.ts, all table bytes per byte of
 *    the last level with data) exceeds maxSpaceAmplification, the span of every file above the
 *    last level is compacted down into it, which brings the estimate to about 1.
 * The default bound, DEFAULT_MAX_SPACE_AMPLIFICATION = 1.3: RocksDB's leveled target is about
 * 1.11 (levels 10x apart); 1.3 lets a few nights of changes (each ingested as a small upper-level
 * file now that unchanged rows are left out) accumulate before the last level is rewritten, so the
 * rewrite is paid once every few nights, not every night, while the database never exceeds 1.3x.
 */
import { Engine } from '../engine/engine';
import { spaceAmplificationOf } from '../engine/spaceAmplification';
import { IngestError, assert } from '../util/errors';
import { parseDurationMs } from './resume/pendingExpiry';

export const DEFAULT_MAX_SPACE_AMPLIFICATION = 1.3;
/** Default time the settling may start compactions in (10 minutes: a night's window is hours). */
export const DEFAULT_COMPACT_BUDGET_MS = 10 * 60 * 1000;

export interface SpacePolicyOptions {
  /** Compact when the estimate exceeds this (>= 1.05); null: never (the policy is off). */
  maxSpaceAmplification: number | null;
  /** No compaction is started once this many milliseconds have passed. */
  budgetMs: number;
  /** The replace range an import ingested: compacted first. */
  replaced?: { start: Buffer; end: Buffer } | null;
  /** Leave step 2 to a live engine's background compactions (which may always have one due). */
  skipDue?: boolean;
  /** Told of each step as it starts (the CLI's progress). */
  onStep?: (step: SpaceStep) => void;
  /** For tests: the clock in milliseconds (default performance.now). */
  clockMs?: () => number;
}

export type SpaceStep = 'replaced' | 'due' | 'amplification';

export interface SpaceSettleResult {
  /** The estimate before and after. */
  amplificationBefore: number;
  amplificationAfter: number;
  tableBytesBefore: number;
  tableBytesAfter: number;
  /** The steps that ran, in order. */
  steps: SpaceStep[];
  /** True when the budget ran out before a step that was needed. */
  budgetExhausted: boolean;
  seconds: number;
  /** Why the policy stopped short (the import stays committed), or null. */
  error: { code: string; message: string } | null;
}

/** The result of a policy that failed (a full disk while compacting, say): the import is in all the same. */
export function spaceSettleFailure(e: unknown): SpaceSettleResult {
  const code = e instanceof IngestError ? e.code : 'IO';
  const message = e instanceof Error ? e.message : String(e);
  return {
    amplificationBefore: 0,
    amplificationAfter: 0,
    tableBytesBefore: 0,
    tableBytesAfter: 0,
    steps: [],
    budgetExhausted: false,
    seconds: 0,
    error: { code, message },
  };
}

/** --max-space-amp: a number in [1.05, 100], or "off" (null). */
export function parseMaxSpaceAmplification(text: string): number | null {
  if (text === 'off') return null;
  const x = /^[0-9]+(\.[0-9]+)?$/.test(text) ? Number(text) : NaN;
  if (!(x >= 1.05 && x <= 100))
    throw new IngestError('USAGE', `--max-space-amp must be a number from 1.05 to 100 (times the compacted size), or off; got "${text}"`);
  return x;
}

/** The policy of the CLI's --max-space-amp and --compact-budget (each undefined: the default). */
export function spacePolicyOf(maxText: string | undefined, budgetText: string | undefined): SpacePolicyOptions {
  return {
    maxSpaceAmplification: maxText === undefined ? DEFAULT_MAX_SPACE_AMPLIFICATION : parseMaxSpaceAmplification(maxText),
    budgetMs: budgetText === undefined ? DEFAULT_COMPACT_BUDGET_MS : parseDurationMs(budgetText, '--compact-budget'),
  };
}

export async function settleSpace(engine: Engine, opts: SpacePolicyOptions): Promise<SpaceSettleResult> {
  const max = opts.maxSpaceAmplification;
  assert(max === null || max >= 1.05, `space amplification bound ${String(max)}`);
  const clock = opts.clockMs ?? (() => performance.now());
  const startMs = clock();
  const before = spaceAmplificationOf(engine.levelFiles());
  const result: SpaceSettleResult = {
    amplificationBefore: before.estimate,
    amplificationAfter: before.estimate,
    tableBytesBefore: before.tableBytes,
    tableBytesAfter: before.tableBytes,
    steps: [],
    budgetExhausted: false,
    seconds: 0,
    error: null,
  };
  if (max === null) return result;
  const step = async (name: SpaceStep, work: () => Promise<void>): Promise<void> => {
    if (clock() - startMs >= opts.budgetMs) {
      result.budgetExhausted = true;
      return;
    }
    opts.onStep?.(name);
    result.steps.push(name);
    await work();
  };
  const replaced = opts.replaced;
  if (replaced !== undefined && replaced !== null) await step('replaced', () => engine.compactRange(replaced.start, replaced.end));
  if (opts.skipDue !== true) await step('due', () => engine.waitForCompactions());
  const now = spaceAmplificationOf(engine.levelFiles());
  const span = now.spanAbove;
  if (now.estimate > max && span !== null) await step('amplification', () => engine.compactRange(span.smallest, span.largest));
  const after = spaceAmplificationOf(engine.levelFiles());
  result.amplificationAfter = after.estimate;
  result.tableBytesAfter = after.tableBytes;
  result.seconds = Math.round(clock() - startMs) / 1000;
  return result;
}
