/**
 * Progress for `ingest import`, `check` and `plan` on stderr, in one of two forms, or to a
 * library caller's callback:
 * - bar (a TTY, not --quiet): one line, redrawn in place at most every REDRAW_INTERVAL_MS,
 *   showing the phase, bytes read of total, rows/s and an ETA; `done` clears the line.
 * - json (--progress json): NDJSON events for scripts, one object per line, at most one
 *   "progress" event per JSON_INTERVAL_MS, then one final "done" or "error" event. Fields:
 *     {"event":"progress","phase","elapsedSeconds","phaseSeconds","rowsDone","rowsTotal",
 *      "bytesDone","bytesTotal","rowsPerSecond","bytesPerSecond","etaSeconds"}
 *     {"event":"done","elapsedSeconds","exitCode":0|3,"summary":<the --json document>}
 *     {"event":"error","elapsedSeconds","exitCode","code","message"}
 *   rowsTotal, bytesTotal and etaSeconds are null when unknown (stdin; a phase without a total);
 *   the rates are over the last second or more (progressMeter.ts), null in a phase's first
 *   second. docs/import.md documents each field; the names are stable.
 * - a callback (ImportOptions.onProgress, for library callers; Progress.toCallback): the same
 *   "progress" event objects as json, at the same rate, handed to a function instead of written
 *   anywhere, plus the last sample of each phase when it ends (so a phase shorter than a second
 *   is seen too, and the counts a phase ends with). No "done"/"error" event: the import's
 *   promise settles instead.
 *
 * Contract: `update` is cheap enough to call from hot loops (it checks the clock and returns);
 * nothing is written when disabled; the final event is written once, by the command. A callback
 * that throws does not stop the import: its error is dropped (the import owns the call site).
 */

import { ProgressMeter } from './progressMeter';
import { roundTo3Decimals } from '../util/rounding';

const REDRAW_INTERVAL_MS = 200;
const JSON_INTERVAL_MS = 1000;

export interface ProgressState {
  phase: string;
  /** Bytes done and total for this phase (total null when unknown, e.g. stdin). */
  doneBytes: number;
  totalBytes: number | null;
  rows: number;
  /** Rows expected in this phase, when known (the merge knows). */
  totalRows: number | null;
}

export type ProgressMode = 'bar' | 'json' | 'none';

/** The "progress" event of --progress json, and what ImportOptions.onProgress receives. */
export interface ProgressEvent {
  event: 'progress';
  phase: string;
  elapsedSeconds: number;
  phaseSeconds: number;
  rowsDone: number;
  rowsTotal: number | null;
  bytesDone: number;
  bytesTotal: number | null;
  rowsPerSecond: number | null;
  bytesPerSecond: number | null;
  etaSeconds: number | null;
}

/** A library caller's progress callback (ImportOptions.onProgress). */
export type ProgressCallback = (event: ProgressEvent) => void;

export class Progress {
  private last = 0;
  /** Callback mode: the receiver of events, and the phase of the last update not yet handed to it. */
  private callback: ProgressCallback | null = null;
  private unsentPhase: string | null = null;
  private readonly start: number;
  private readonly meter = new ProgressMeter();
  private drawn = false;
  private finished = false;
  readonly mode: ProgressMode;

  constructor(
    enabledOrMode: boolean | ProgressMode,
    private readonly out: NodeJS.WritableStream = process.stderr,
    /** Milliseconds; a test's fake clock. */
    private readonly now: () => number = Date.now,
  ) {
    this.mode = typeof enabledOrMode === 'boolean' ? (enabledOrMode ? 'bar' : 'none') : enabledOrMode;
    this.start = now();
  }

  /** Progress events to `callback` (see the module comment); nothing is written to any stream. */
  static toCallback(callback: ProgressCallback, now: () => number = Date.now): Progress {
    const p = new Progress('json', process.stderr, now);
    p.callback = callback;
    return p;
  }

  static forStderr(quiet: boolean): Progress {
    return new Progress(!quiet && process.stderr.isTTY === true);
  }

  /** --progress auto|json|none with --quiet: auto is a bar on a TTY; quiet silences auto only. */
  static forOption(option: string | undefined, quiet: boolean): Progress {
    if (option === 'json') return new Progress('json');
    if (option === 'none') return new Progress('none');
    return Progress.forStderr(quiet);
  }

  update(s: ProgressState, force = false): void {
    if (this.mode === 'none') return;
    const now = this.now();
    const sample = { rowsDone: s.rows, rowsTotal: s.totalRows, bytesDone: s.doneBytes, bytesTotal: s.totalBytes };
    const newPhase = this.meter.observe(s.phase, sample, now);
    const interval = this.mode === 'json' ? JSON_INTERVAL_MS : REDRAW_INTERVAL_MS;
    // JSON events keep their one-a-second bound even across phase changes.
    const due = this.mode === 'json' ? now - this.last >= interval : newPhase || force || now - this.last >= interval;
    if (!due) {
      this.unsentPhase = s.phase;
      return;
    }
    this.unsentPhase = null;
    this.last = now;
    if (this.mode === 'json') this.emit(this.eventOf(s.phase, now));
    else this.draw(s.phase, now);
  }

  private eventOf(phase: string, now: number): ProgressEvent {
    const r = this.meter.read(now);
    return {
      event: 'progress',
      // The bar's "parse (2 threads)" is the phase "parse" here: the names scripts match on stay fixed.
      phase: phase.split(' ')[0],
      elapsedSeconds: roundTo3Decimals((now - this.start) / 1000),
      phaseSeconds: roundTo3Decimals(r.phaseSeconds),
      rowsDone: r.rowsDone,
      rowsTotal: r.rowsTotal,
      bytesDone: r.bytesDone,
      bytesTotal: r.bytesTotal,
      rowsPerSecond: r.rowsPerSecond,
      bytesPerSecond: r.bytesPerSecond,
      etaSeconds: r.etaSeconds,
    };
  }

  private draw(phase: string, now: number): void {
    const r = this.meter.read(now);
    const parts = [phase];
    if (r.bytesTotal !== null) parts.push(`${mib(r.bytesDone)} of ${mib(r.bytesTotal)} MiB`);
    else if (r.bytesDone > 0) parts.push(`${mib(r.bytesDone)} MiB`);
    parts.push(`${r.rowsDone.toLocaleString('en-US')} rows`);
    if (r.rowsPerSecond !== null) parts.push(`${r.rowsPerSecond.toLocaleString('en-US')} rows/s`);
    if (r.etaSeconds !== null) parts.push(`ETA ${Math.round(r.etaSeconds)}s`);
    this.out.write(`\r\x1b[K${parts.join('  ')}`);
    this.drawn = true;
  }

  /** A phase is over: clears the bar; a callback gets the phase's last sample if it has not yet. */
  done(): void {
    if (this.mode === 'bar' && this.drawn) this.out.write('\r\x1b[K');
    this.drawn = false;
    if (this.callback !== null && this.unsentPhase !== null) this.emit(this.eventOf(this.unsentPhase, this.now()));
    this.unsentPhase = null;
  }

  /** The final JSON event of a run that finished (exit code 0, or 3 for conflicts) with this summary. */
  finishDone(summary: unknown, exitCode: number): void {
    this.finish({ event: 'done', exitCode, summary });
  }

  /** The final JSON event of a run that failed. */
  finishError(code: string, message: string, exitCode: number): void {
    this.finish({ event: 'error', exitCode, code, message });
  }

  private finish(fields: Record<string, unknown>): void {
    if (this.mode !== 'json' || this.callback !== null || this.finished) return;
    this.finished = true;
    const { event, ...rest } = fields;
    this.writeEvent({ event, elapsedSeconds: roundTo3Decimals((this.now() - this.start) / 1000), ...rest });
  }

  /** A "progress" event: to the callback, else as a JSON line. */
  private emit(event: ProgressEvent): void {
    if (this.callback === null) {
      this.writeEvent(event);
      return;
    }
    try {
      this.callback(event);
    } catch {
      // The caller's bug; the import goes on (module comment).
    }
  }

  private writeEvent(event: object): void {
    this.out.write(`${JSON.stringify(event)}\n`);
  }
}

function mib(bytes: number): string {
  return (bytes / (1 << 20)).toFixed(1);
}
