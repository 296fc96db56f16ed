/**
 * The imports the server runs (POST /v1/imports, POST /v1/imports/sst, POST
 * /v1/imports/{id}/commit), each registered when its request is accepted into the import queue
 * and kept after it ends: the web console's imports view and conflict viewer read it
 * (routes/consoleData.ts), the metrics count what it reports (metrics.ts), the log writes its
 * lifecycle events (serverLog.ts).
 *
 * An import's life: registered with an id (`imp-<server start, ms base 36>-<n>`, unique per
 * server) in phase "queued"; then "receiving" (its body or uploads arriving; bytes are the
 * connection's), "verifying" (uploaded SSTs checked), the phases of its CSV import's progress
 * events (ingest/progress.ts ProgressEvent: "parse", "merge"), "checking" (a check's conflict
 * scan) or "ingesting" (the conflict check and the ingestion or plan), and "done". It ends with
 * an outcome: landed (an import ingested, or had nothing to ingest), conflicts (a check found
 * some, or they aborted the import), checked, planned, or failed (with the error's code and
 * message).
 *
 * Wire layout (GET /v1/console/imports; docs/serve.md): ImportView below, and the conflicts of a
 * finished import as its JSON report lists them (conflict/report.ts ReportedConflict), paged.
 *
 * Bounds: running imports are bounded by the import queue (maxConcurrentImports +
 * maxQueuedImports; a request it refuses is never registered); the last RECENT_IMPORTS_MAX
 * finished ones are kept; their conflict lists together are held within reportBudgetBytes
 * (estimated, conflictBytesOf): a new report pushes the oldest out first, and an entry whose
 * report went says `reportAvailable: false`. The per-phase totals are keyed by phase name, a
 * small fixed set (PHASE_NAMES_MAX guards it anyway).
 */
import type { DbCheckResult, DbImportResult } from '../ingest/importIntoDb';
import type { ProgressEvent } from '../ingest/progress';
import type { ReportedConflict } from '../conflict/report';
import { HttpError, errorReplyOf } from './httpErrors';

export type ImportKind = 'csv' | 'sst' | 'staged';
export type ImportMode = 'import' | 'check' | 'plan';
export type ImportOutcome = 'running' | 'landed' | 'conflicts' | 'failed' | 'checked' | 'planned';

export interface ImportCounts {
  sstKeys: number;
  new: number;
  unchanged: number;
  conflicts: number;
}

export interface ImportView {
  id: string;
  kind: ImportKind;
  /** The input name(s) as the client gave them (the CSV's `name`, the uploaded files' names). */
  name: string;
  mode: ImportMode;
  startedAt: string;
  finishedAt: string | null;
  phase: string;
  /** Running: the current phase's rows and bytes; finished: keys checked and input bytes. */
  rows: number;
  bytes: number;
  totalBytes: number | null;
  rowsPerSecond: number;
  etaSeconds: number | null;
  outcome: ImportOutcome;
  counts: ImportCounts | null;
  error: { code: string; message: string } | null;
  reportAvailable: boolean;
}

/** What the log and the metrics hear of an import. */
export type ImportEvent =
  | { event: 'accepted'; id: string; requestId: string | null; kind: ImportKind; name: string; mode: ImportMode }
  | { event: 'phase'; id: string; phase: string }
  | {
      event: 'finished';
      id: string;
      outcome: Exclude<ImportOutcome, 'running'>;
      counts: ImportCounts | null;
      rows: number;
      bytes: number;
      durationMs: number;
      error: { code: string; message: string } | null;
      /** The status a failure was answered with (the log's level follows it); null when it did not fail. */
      status: number | null;
    };

export interface ConflictPage {
  id: string;
  /** Conflicts matching the filter. */
  total: number;
  offset: number;
  limit: number;
  conflicts: ReportedConflict[];
}

export interface ConflictQuery {
  offset: number;
  limit: number;
  /** Keys whose shown text starts with this. */
  prefix?: string;
  /** Rows from this source file (the CSV input's name). */
  file?: string;
}

/** Finished imports kept for the console (newest first). */
export const RECENT_IMPORTS_MAX = 50;
/** Bytes the kept conflict lists may hold together (estimated). */
export const REPORT_BUDGET_BYTES = 64 * 1024 * 1024;
/** The most conflicts one page returns. */
export const CONFLICT_PAGE_MAX = 500;
/** Guard on the per-phase totals' keys (the phases are a fixed handful). */
const PHASE_NAMES_MAX = 32;
/** The most input names an import's `name` lists before "(+N more)". */
const NAMES_SHOWN_MAX = 8;

/** Estimated bytes of one reported conflict in memory: its strings (UTF-16) and the objects around them. */
export function conflictBytesOf(c: ReportedConflict): number {
  const chars = c.key.length + c.keyHex.length + c.existingValue.data.length + c.newValue.data.length;
  return 2 * (chars + (c.source?.file.length ?? 0) + c.sstFile.length) + 400;
}

/** The names of an import's inputs as one short text. */
export function namesText(names: readonly string[]): string {
  if (names.length <= NAMES_SHOWN_MAX) return names.join(', ');
  return `${names.slice(0, NAMES_SHOWN_MAX).join(', ')} (+${names.length - NAMES_SHOWN_MAX} more)`;
}

interface Finished {
  view: ImportView;
  /** The report's conflicts, or null when it was not kept (failed) or pushed out of the budget. */
  conflicts: ReportedConflict[] | null;
  reportBytes: number;
}

export class ImportRegistry {
  private readonly running = new Map<string, TrackedImport>();
  /** Newest first, at most RECENT_IMPORTS_MAX. */
  private readonly recent: Finished[] = [];
  private reportBytes = 0;
  private readonly idPrefix: string;
  private nextNumber = 1;
  /** Rows and bytes every import reported, per phase (counters: they only grow). */
  readonly phaseTotals = new Map<string, { rows: number; bytes: number }>();
  /** Finished imports per outcome, and conflicts found, since the server started. */
  readonly finishedByOutcome = new Map<Exclude<ImportOutcome, 'running'>, number>();
  conflictsFound = 0;

  constructor(
    private readonly onEvent: (event: ImportEvent) => void = () => undefined,
    private readonly reportBudgetBytes = REPORT_BUDGET_BYTES,
    private readonly now: () => number = Date.now,
  ) {
    this.idPrefix = `imp-${now().toString(36)}`;
  }

  /** Registers an import accepted into the queue (phase "queued"). */
  begin(kind: ImportKind, names: readonly string[], mode: ImportMode, requestId: string | null = null): TrackedImport {
    const id = `${this.idPrefix}-${this.nextNumber++}`;
    const tracked = new TrackedImport(this, id, kind, namesText(names), mode, this.now());
    this.running.set(id, tracked);
    this.emit({ event: 'accepted', id, requestId, kind, name: tracked.name, mode });
    return tracked;
  }

  /** Running imports and the recent finished ones, newest first. */
  list(): { running: ImportView[]; recent: ImportView[] } {
    const running = [...this.running.values()].reverse().map((t) => t.view());
    return { running, recent: this.recent.map((f) => ({ ...f.view })) };
  }

  /** A page of a finished import's conflicts matching the query; 404 for an unknown id or a report not kept. */
  conflicts(id: string, q: ConflictQuery): ConflictPage {
    const entry = this.recent.find((f) => f.view.id === id);
    if (entry === undefined || entry.conflicts === null) {
      const why = this.running.has(id)
        ? 'is still running'
        : entry === undefined
          ? 'is not among the recent imports'
          : 'no longer has its report (the oldest reports go first)';
      throw new HttpError(404, 'NOT_FOUND', `import ${id} ${why}`);
    }
    const matching = entry.conflicts.filter(
      (c) => (q.prefix === undefined || c.key.startsWith(q.prefix)) && (q.file === undefined || c.source?.file === q.file),
    );
    return { id, total: matching.length, offset: q.offset, limit: q.limit, conflicts: matching.slice(q.offset, q.offset + q.limit) };
  }

  /** Called by TrackedImport. */
  emit(event: ImportEvent): void {
    try {
      this.onEvent(event);
    } catch {
      // A listener's failure (a log that cannot be written) never fails an import.
    }
  }

  /** Adds rows and bytes reported in `phase` to its totals. */
  account(phase: string, rows: number, bytes: number): void {
    if (rows <= 0 && bytes <= 0) return;
    let totals = this.phaseTotals.get(phase);
    if (totals === undefined) {
      if (this.phaseTotals.size >= PHASE_NAMES_MAX) phase = 'other';
      totals = this.phaseTotals.get(phase) ?? { rows: 0, bytes: 0 };
      this.phaseTotals.set(phase, totals);
    }
    totals.rows += Math.max(0, rows);
    totals.bytes += Math.max(0, bytes);
  }

  /** Called by TrackedImport when it ends: moves it to the recent list with its report. */
  settle(tracked: TrackedImport, view: ImportView, conflicts: ReportedConflict[] | null): void {
    this.running.delete(tracked.id);
    const outcome = view.outcome as Exclude<ImportOutcome, 'running'>;
    this.finishedByOutcome.set(outcome, (this.finishedByOutcome.get(outcome) ?? 0) + 1);
    this.conflictsFound += view.counts?.conflicts ?? 0;
    const reportBytes = conflicts === null ? 0 : conflicts.reduce((n, c) => n + conflictBytesOf(c), 0);
    const kept = conflicts !== null && reportBytes <= this.reportBudgetBytes;
    this.recent.unshift({
      view: { ...view, reportAvailable: kept },
      conflicts: kept ? conflicts : null,
      reportBytes: kept ? reportBytes : 0,
    });
    this.reportBytes += kept ? reportBytes : 0;
    while (this.recent.length > RECENT_IMPORTS_MAX) this.dropReport(this.recent.pop() as Finished);
    for (let i = this.recent.length - 1; i > 0 && this.reportBytes > this.reportBudgetBytes; i--) this.dropReport(this.recent[i]);
  }

  private dropReport(f: Finished): void {
    this.reportBytes -= f.reportBytes;
    f.reportBytes = 0;
    f.conflicts = null;
    f.view.reportAvailable = false;
  }

  /** Bytes the kept reports hold now (estimated). */
  get heldReportBytes(): number {
    return this.reportBytes;
  }

  clock(): number {
    return this.now();
  }
}

/** One import while it runs; ends with finish() or fail(), once. */
export class TrackedImport {
  private phase = 'queued';
  private rows = 0;
  private bytes = 0;
  private totalBytes: number | null = null;
  private rowsPerSecond = 0;
  private etaSeconds: number | null = null;
  /** While receiving: the bytes received so far, read when asked. */
  private bytesSource: (() => number) | null = null;
  /** Per phase, the rows and bytes this import added to the registry's totals (a handful of phases). */
  private readonly accounted = new Map<string, { rows: number; bytes: number }>();
  private ended = false;

  constructor(
    private readonly registry: ImportRegistry,
    readonly id: string,
    readonly kind: ImportKind,
    public name: string,
    readonly mode: ImportMode,
    private readonly startedAtMs: number,
  ) {}

  /** The input names, once known (an upload's files arrive after the import was accepted). */
  setNames(names: readonly string[]): void {
    this.name = namesText(names);
  }

  /** A phase of the server's own (receiving, verifying, checking, ingesting). */
  setPhase(phase: string, totalBytes: number | null = null): void {
    if (this.ended) return;
    // Verification that ended in a next phase checked every byte it was given.
    if (this.phase === 'verifying' && this.totalBytes !== null) this.raise('verifying', 0, this.totalBytes);
    this.closePhase();
    this.phase = phase;
    this.rows = 0;
    this.bytes = 0;
    this.totalBytes = totalBytes;
    this.rowsPerSecond = 0;
    this.etaSeconds = null;
    this.registry.emit({ event: 'phase', id: this.id, phase });
  }

  /** Phase "receiving": `bytesReceived` is read whenever the import is shown. */
  receiving(bytesReceived: () => number, totalBytes: number | null): void {
    this.setPhase('receiving', totalBytes);
    this.bytesSource = bytesReceived;
  }

  /** A progress event of the import's CSV pipeline (ImportOptions.onProgress). */
  progress(e: ProgressEvent): void {
    if (this.ended) return;
    if (e.phase !== this.phase) this.setPhase(e.phase);
    this.rows = e.rowsDone;
    this.bytes = e.bytesDone;
    this.totalBytes = e.bytesTotal;
    this.rowsPerSecond = e.rowsPerSecond ?? 0;
    this.etaSeconds = e.etaSeconds;
    this.raise(this.phase, this.rows, this.bytes);
  }

  /** The run's result: its outcome and counts, and its report kept for the console. */
  finish(result: DbImportResult | DbCheckResult): void {
    if (this.ended) return;
    const summary = result.report.summary;
    this.closePhase();
    // The phases' final counts, which the progress events (at most one a second) may not have
    // reached: the CSV's rows and bytes parsed, the rows and SST bytes merged, then the keys the
    // check compared and the SST bytes they are in.
    const imported = result.import;
    if (this.kind === 'csv') {
      this.raise('parse', imported.rowsRead, imported.inputBytes);
      this.raise(
        'merge',
        imported.rowsWritten,
        imported.outputFiles.reduce((n, f) => n + f.fileSizeBytes, 0),
      );
    }
    this.raise(checkPhaseOf(this.mode), summary.sstKeys, summary.sstBytes);
    const counts = { sstKeys: summary.sstKeys, new: summary.new, unchanged: summary.unchanged, conflicts: summary.conflicts };
    this.end(outcomeOf(result), counts, null, summary.sstKeys, result.import.inputBytes, result.report.conflicts);
  }

  /** The run failed (or its request went away): the error's code and message. */
  fail(err: unknown): void {
    if (this.ended) return;
    const reply = errorReplyOf(err);
    this.end('failed', null, { code: reply.code, message: reply.message }, this.rows, this.currentBytes(), null, reply.status);
  }

  private end(
    outcome: Exclude<ImportOutcome, 'running'>,
    counts: ImportCounts | null,
    error: { code: string; message: string } | null,
    rows: number,
    bytes: number,
    conflicts: ReportedConflict[] | null,
    status: number | null = null,
  ): void {
    this.closePhase();
    this.ended = true;
    const finishedAtMs = this.registry.clock();
    const seconds = Math.max(0.001, (finishedAtMs - this.startedAtMs) / 1000);
    this.phase = 'done';
    this.bytesSource = null;
    const view: ImportView = {
      ...this.view(),
      finishedAt: new Date(finishedAtMs).toISOString(),
      rows,
      bytes,
      totalBytes: bytes,
      rowsPerSecond: Math.round(rows / seconds),
      etaSeconds: null,
      outcome,
      counts,
      error,
    };
    this.registry.emit({
      event: 'finished',
      id: this.id,
      outcome,
      counts,
      rows,
      bytes,
      durationMs: finishedAtMs - this.startedAtMs,
      error,
      status,
    });
    this.registry.settle(this, view, conflicts);
  }

  /** A phase of the server's own ends: its bytes (receiving's, read from the connection) go to the totals. */
  private closePhase(): void {
    if (this.bytesSource !== null) {
      this.bytes = this.currentBytes();
      this.raise(this.phase, 0, this.bytes);
      this.bytesSource = null;
    }
  }

  /** This import's counts in `phase` reached these: the registry's totals grow by what they grew. */
  private raise(phase: string, rows: number, bytes: number): void {
    const before = this.accounted.get(phase) ?? { rows: 0, bytes: 0 };
    const after = { rows: Math.max(before.rows, rows), bytes: Math.max(before.bytes, bytes) };
    this.registry.account(phase, after.rows - before.rows, after.bytes - before.bytes);
    this.accounted.set(phase, after);
  }

  private currentBytes(): number {
    return this.bytesSource === null ? this.bytes : this.bytesSource();
  }

  view(): ImportView {
    return {
      id: this.id,
      kind: this.kind,
      name: this.name,
      mode: this.mode,
      startedAt: new Date(this.startedAtMs).toISOString(),
      finishedAt: null,
      phase: this.phase,
      rows: this.rows,
      bytes: this.currentBytes(),
      totalBytes: this.totalBytes,
      rowsPerSecond: this.rowsPerSecond,
      etaSeconds: this.etaSeconds,
      outcome: 'running',
      counts: null,
      error: null,
      reportAvailable: false,
    };
  }
}

/** The phase of the conflict check (with the ingestion or plan after it, but for a check). */
export function checkPhaseOf(mode: ImportMode): string {
  return mode === 'check' ? 'checking' : 'ingesting';
}

/** The outcome of a finished run, as its answer's status says it (routes/imports.ts replyImportResult). */
function outcomeOf(result: DbImportResult | DbCheckResult): Exclude<ImportOutcome, 'running' | 'failed'> {
  if (result.mode === 'check') return result.report.summary.conflicts > 0 ? 'conflicts' : 'checked';
  if (result.mode === 'plan') return 'planned';
  return result.policy.ingest ? 'landed' : 'conflicts';
}
