/**
 * The figures of one phase's progress, as a person or a script reads them: counts that never go
 * back, bytes never past their total, rates over a sliding window, and an ETA from them.
 *
 * Why not the phase's averages: the first sample of a phase came 1 ms after its start and gave
 * rates of hundreds of millions of rows a second, and an average from the phase's start hides a
 * phase that slows down (the merge after its page cache is gone). Why clamp and hold: byte
 * ranges parse past their stop to the next record boundary and a range started at a wrong
 * boundary is parsed again, so the bytes read pass the file's size; and a worker's row count
 * restarts with each range it takes (the parse adds them up, parse/parseRange.ts), so a sum of
 * cells read at the wrong moment can dip.
 *
 * Contract:
 * - `observe(state, nowMs)` takes a sample (cheap: at most MAX_SAMPLES kept, at least
 *   MIN_SAMPLE_SPACING_MS apart); a new phase name starts the meter over.
 * - `rowsDone` and `bytesDone` never decrease within a phase; `bytesDone` never exceeds a known
 *   `bytesTotal`.
 * - rates are over the window from the newest sample at least WINDOW_MS old to now; null until
 *   the phase has run that long. `etaSeconds` is the remaining bytes (else rows) over the
 *   matching rate; null when there is no total or no rate.
 */
import { assert } from '../util/errors';
import { roundTo3Decimals } from '../util/rounding';

/** A rate spans at least this much time. */
export const WINDOW_MS = 1000;
/** Samples kept. */
const MAX_SAMPLES = 64;
/**
 * Samples are at least this far apart, so the ones kept always reach back past WINDOW_MS
 * (64 × 62 ms ≈ 4 s) however often a caller observes: a parse reporting every chunk (a few ms)
 * would otherwise fill the ring with the last few hundred milliseconds and never have a rate.
 */
const MIN_SAMPLE_SPACING_MS = Math.ceil(WINDOW_MS / 16);

export interface MeterSample {
  rowsDone: number;
  rowsTotal: number | null;
  bytesDone: number;
  bytesTotal: number | null;
}

export interface MeterReading extends MeterSample {
  phaseSeconds: number;
  rowsPerSecond: number | null;
  bytesPerSecond: number | null;
  etaSeconds: number | null;
}

interface TimedSample {
  atMs: number;
  rows: number;
  bytes: number;
}

export class ProgressMeter {
  private phase = '';
  private phaseStartMs = 0;
  private readonly samples: TimedSample[] = [];
  private last: MeterSample = { rowsDone: 0, rowsTotal: null, bytesDone: 0, bytesTotal: null };

  /** Whether `phase` starts a new phase (the meter then starts over). */
  observe(phase: string, s: MeterSample, nowMs: number): boolean {
    const newPhase = phase !== this.phase;
    if (newPhase) {
      this.phase = phase;
      this.phaseStartMs = nowMs;
      this.samples.length = 0;
      this.last = { rowsDone: 0, rowsTotal: null, bytesDone: 0, bytesTotal: null };
    }
    const bytesTotal = s.bytesTotal;
    const bytesDone = Math.max(this.last.bytesDone, bytesTotal === null ? s.bytesDone : Math.min(s.bytesDone, bytesTotal));
    const rowsDone = Math.max(this.last.rowsDone, s.rowsDone);
    this.last = { rowsDone, rowsTotal: s.rowsTotal, bytesDone, bytesTotal };
    const newest = this.samples[this.samples.length - 1];
    if (newest === undefined || nowMs - newest.atMs >= MIN_SAMPLE_SPACING_MS)
      this.samples.push({ atMs: nowMs, rows: rowsDone, bytes: bytesDone });
    if (this.samples.length > MAX_SAMPLES) this.samples.splice(0, this.samples.length - MAX_SAMPLES);
    return newPhase;
  }

  /** The phase's figures at `nowMs` (after its last observe). */
  read(nowMs: number): MeterReading {
    const start = this.windowStart(nowMs);
    const spanSeconds = start === null ? 0 : (nowMs - start.atMs) / 1000;
    const rowsPerSecond = start === null ? null : (this.last.rowsDone - start.rows) / spanSeconds;
    const bytesPerSecond = start === null ? null : (this.last.bytesDone - start.bytes) / spanSeconds;
    return {
      ...this.last,
      phaseSeconds: Math.max(0, (nowMs - this.phaseStartMs) / 1000),
      rowsPerSecond: rowsPerSecond === null ? null : Math.round(rowsPerSecond),
      bytesPerSecond: bytesPerSecond === null ? null : Math.round(bytesPerSecond),
      etaSeconds: this.eta(rowsPerSecond, bytesPerSecond),
    };
  }

  /** The newest sample at least WINDOW_MS before now, or null while the phase is younger. */
  private windowStart(nowMs: number): TimedSample | null {
    for (let i = this.samples.length - 1; i >= 0; i--) {
      const sample = this.samples[i];
      if (nowMs - sample.atMs >= WINDOW_MS) return sample;
    }
    return null;
  }

  private eta(rowsPerSecond: number | null, bytesPerSecond: number | null): number | null {
    const { bytesDone, bytesTotal, rowsDone, rowsTotal } = this.last;
    let seconds: number | null = null;
    if (bytesTotal !== null && bytesTotal > 0)
      seconds = bytesPerSecond !== null && bytesPerSecond > 0 ? (bytesTotal - bytesDone) / bytesPerSecond : null;
    else if (rowsTotal !== null && rowsTotal > 0)
      seconds = rowsPerSecond !== null && rowsPerSecond > 0 ? Math.max(0, rowsTotal - rowsDone) / rowsPerSecond : null;
    if (seconds === null) return null;
    assert(seconds >= 0, `a negative ETA (${seconds} s)`);
    return roundTo3Decimals(seconds);
  }
}
