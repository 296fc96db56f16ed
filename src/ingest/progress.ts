/**
 * Progress for `ingest import` on stderr: one line, redrawn in place at most every
 * REDRAW_INTERVAL_MS, showing the phase, bytes read of total, rows/s and an ETA.
 *
 * Contract: `update` is cheap enough to call from hot loops (it checks the clock and returns);
 * nothing is printed unless enabled (stderr is a TTY and not --quiet); `done` clears the line.
 */

const REDRAW_INTERVAL_MS = 200;

export interface ProgressState {
  phase: string;
  /** Bytes done and total for this phase (total null when unknown, e.g. stdin). */
  doneBytes: number;
  totalBytes: number | null;
  rows: number;
  /** Rows expected in this phase, when known (the merge knows). */
  totalRows: number | null;
}

export class Progress {
  private last = 0;
  private phaseStart = Date.now();
  private phase = '';
  private drawn = false;

  constructor(
    private readonly enabled: boolean,
    private readonly out: NodeJS.WriteStream = process.stderr,
  ) {}

  static forStderr(quiet: boolean): Progress {
    return new Progress(!quiet && process.stderr.isTTY === true);
  }

  update(s: ProgressState, force = false): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (s.phase !== this.phase) {
      this.phase = s.phase;
      this.phaseStart = now;
    } else if (!force && now - this.last < REDRAW_INTERVAL_MS) {
      return;
    }
    this.last = now;
    const seconds = Math.max((now - this.phaseStart) / 1000, 1e-3);
    const rate = s.rows / seconds;
    let fraction: number | null = null;
    if (s.totalBytes !== null && s.totalBytes > 0) fraction = s.doneBytes / s.totalBytes;
    else if (s.totalRows !== null && s.totalRows > 0) fraction = s.rows / s.totalRows;
    const parts = [s.phase];
    if (s.totalBytes !== null) parts.push(`${mib(s.doneBytes)} of ${mib(s.totalBytes)} MiB`);
    else if (s.doneBytes > 0) parts.push(`${mib(s.doneBytes)} MiB`);
    parts.push(`${s.rows.toLocaleString('en-US')} rows`, `${Math.round(rate).toLocaleString('en-US')} rows/s`);
    if (fraction !== null && fraction > 0.01 && fraction < 1) parts.push(`ETA ${Math.round((seconds / fraction) * (1 - fraction))}s`);
    this.out.write(`\r\x1b[K${parts.join('  ')}`);
    this.drawn = true;
  }

  done(): void {
    if (this.enabled && this.drawn) this.out.write('\r\x1b[K');
    this.drawn = false;
  }
}

function mib(bytes: number): string {
  return (bytes / (1 << 20)).toFixed(1);
}
