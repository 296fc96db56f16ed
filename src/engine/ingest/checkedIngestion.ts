/**
 * Checked ingestion: a caller's check (a conflict scan and its policy, from a layer above the
 * engine) and the ingestion it decides on, run as one atomic step against concurrent writers.
 *
 * Steps of ingestExternalFilesChecked(host, paths, check, options):
 * 1. Inspect the files (ingestionJob.ts step 1), outside any latch: verification of large files
 *    runs on a worker thread and takes no lock.
 * 2. Take the span latch over the files' envelope (the replace range included). Writes whose keys
 *    fall inside it wait from now on; writes outside go on. Waiting for an overlapping ingestion's
 *    latch is bounded by latchTimeoutMs (LATCH_TIMEOUT).
 * 3. Take a snapshot S and run `check({ snapshot, span, files })`. It may take as long as it likes
 *    and yield to the event loop (the conflict scan does, in slices): inside the span nothing
 *    changes, because every write there waits on the latch. It answers with the files to ingest
 *    (the originals, a subset, or rewrites of them holding a subset of their keys) or null to
 *    ingest nothing, and a result passed back to the caller.
 * 4. Ingest the chosen files under the same latch (ingestionJob.ts steps 2-4: stage, flush
 *    memtables holding data in the range, commit in one manifest edit), release the latch.
 *
 * Guarantee: the database's contents inside the span at the commit are exactly its contents at S,
 * so what the check decided about them is what is true when the files land. No write inside the
 * span is acknowledged between S and the commit: racing writes are held back and land after the
 * commit, above the ingested files (they are newer, so they win, as any later write does). A
 * writer inside the span is held up at most for the check plus the ingestion; a writer outside
 * is not held up at all. Background flushes and compactions keep running: they move data between
 * files without changing what a read at the latest sequence number sees.
 *
 * Files the check returns that were not among the inspected ones (rewrites) are inspected before
 * step 4, still under the latch, and must lie inside the span (asserted: a rewrite only drops
 * keys).
 */
import { IngestError } from '../../util/errors';
import type { Snapshot } from '../snapshot';
import { UserKeyRange, describeUserKeyRange, userKeyRangesOverlap } from '../runningCompactions';
import { ExternalFileInfo } from './externalFile';
import { IngestionHost } from './ingestionHost';
import { IngestOptions, IngestionResult, ingestInspected, inspectAll, spanOfIngestion } from './ingestionJob';
import { compareUserKeys } from '../../base/keyCompare';

export interface IngestionCheckContext {
  /** The read point of the check; released by the engine once the check returns. */
  readonly snapshot: Snapshot;
  /** The latched span: the files' envelope and the replace range. */
  readonly span: UserKeyRange;
  /** The inspected files in key order. */
  readonly files: ReadonlyArray<{ path: string; range: UserKeyRange; fileSizeBytes: number; numPointEntries: number }>;
}

export interface IngestionCheckDecision<R> {
  /** Files to ingest, or null to ingest nothing. */
  ingest: readonly string[] | null;
  /** Handed back unchanged in CheckedIngestion.result. */
  result: R;
}

export type IngestionCheck<R> = (ctx: IngestionCheckContext) => Promise<IngestionCheckDecision<R>>;

export interface CheckedIngestion<R> {
  result: R;
  /** The ingestion, or null when the check chose to ingest nothing. */
  ingestion: IngestionResult | null;
  /** The latched span. */
  span: UserKeyRange;
  /** The check's snapshot sequence number. */
  snapshotSequence: number;
  /** Time spent waiting for the latch (another ingestion over an overlapping span). */
  latchWaitMs: number;
  /** Time the latch was held: the longest any writer inside the span can have waited. */
  latchHeldMs: number;
}

export async function ingestExternalFilesChecked<R>(
  host: IngestionHost,
  paths: readonly string[],
  check: IngestionCheck<R>,
  opts: IngestOptions = {},
): Promise<CheckedIngestion<R>> {
  host.checkWritable();
  const infos = await inspectAll(paths, opts);
  const span = spanOfIngestion(infos, opts.replaceRange);
  const waitStartMs = performance.now();
  return host.latches.withLatch(span, host.latchTimeoutMs, `checked ingestion of ${infos.length} file(s)`, async () => {
    const heldFromMs = performance.now();
    const snapshot = host.getSnapshot();
    const snapshotSequence = snapshot.sequence;
    let decision: IngestionCheckDecision<R>;
    try {
      decision = await check({ snapshot, span, files: infos.map(describeFile) });
    } finally {
      snapshot.release();
    }
    let ingestion: IngestionResult | null = null;
    if (decision.ingest !== null) {
      const chosen = await chosenInfos(decision.ingest, infos, span, opts);
      if (chosen.length > 0 || opts.replaceRange !== undefined) ingestion = await ingestInspected(host, chosen, opts);
    }
    const latchHeldMs = performance.now() - heldFromMs;
    return { result: decision.result, ingestion, span, snapshotSequence, latchWaitMs: heldFromMs - waitStartMs, latchHeldMs };
  });
}

function describeFile(i: ExternalFileInfo): IngestionCheckContext['files'][number] {
  return { path: i.path, range: i.range, fileSizeBytes: i.fileSizeBytes, numPointEntries: i.numPointEntries };
}

/** The inspected files for `paths`: known ones reused, new ones (rewrites) inspected now. */
async function chosenInfos(
  paths: readonly string[],
  inspected: readonly ExternalFileInfo[],
  span: UserKeyRange,
  opts: IngestOptions,
): Promise<ExternalFileInfo[]> {
  const byPath = new Map(inspected.map((i) => [i.path, i]));
  const fresh = paths.filter((p) => !byPath.has(p));
  const freshInfos = fresh.length === 0 ? [] : await inspectAll(fresh, { ...opts, replaceRange: undefined });
  for (const f of freshInfos) {
    // The latch covers the inspected files' span only: a file reaching past it could meet writes.
    if (!withinSpan(f.range, span))
      throw new IngestError(
        'INVALID_ARGUMENT',
        `the check chose ${f.path}, which reaches outside the latched span ${describeUserKeyRange(span)}`,
      );
    byPath.set(f.path, f);
  }
  const out = [...new Set(paths)].map((p) => byPath.get(p) as ExternalFileInfo);
  out.sort((a, b) => compareUserKeys(a.range.smallest, b.range.smallest));
  for (let i = 1; i < out.length; i++) {
    if (userKeyRangesOverlap(out[i - 1].range, out[i].range)) {
      throw new IngestError('INVALID_ARGUMENT', `the check chose overlapping files: ${out[i - 1].path} and ${out[i].path}`);
    }
  }
  return out;
}

/** True when every key of `r` lies in `span` (conservative for an exclusive end just past it). */
function withinSpan(r: UserKeyRange, span: UserKeyRange): boolean {
  if (compareUserKeys(r.smallest, span.smallest) < 0) return false;
  const c = compareUserKeys(r.largest, span.largest);
  if (r.largestExclusive) return c <= 0;
  return span.largestExclusive ? c < 0 : c <= 0;
}
