/**
 * A few minutes of the server's history, one sample a second, for the web console's live charts
 * (GET /v1/console/history, routes/consoleData.ts): reads and writes answered, their latency
 * percentiles, compaction and flush throughput, write stalls, memtable bytes.
 *
 * Contract: the server tells `observe` of every answered data request (GET /v1/kv/{key} and GET
 * /v1/scan are reads; PUT and DELETE /v1/kv/{key} and POST /v1/batch are writes; any status);
 * every intervalMs a timer (unref'd: it never keeps the process up; stopped by stop(), which
 * IngestServer.close() calls) closes the interval into a sample. Rates are over the interval's
 * measured length; `reads` and `writes` are the interval's exact counts. Latencies are of the
 * interval's reads and writes together, read from a log-scale histogram (LatencyHistogram: each
 * bucket about 9% wide, so a percentile is within 9% of the true one), null when there were none.
 *
 * Wire layout: {"intervalMs", "samples": [{"t" (epoch ms, the interval's end), "reads",
 * "writes", "readsPerSecond", "writesPerSecond", "latencyP50Ms", "latencyP99Ms",
 * "compactionBytesPerSecond", "flushBytesPerSecond", "stalls" (write stalls and delays in the
 * interval), "memtableBytes"}...]} oldest first.
 *
 * Bounds: at most maxSamples samples (a ring: the oldest goes), and one fixed histogram.
 */
import type { EngineStats } from '../engine/engine';
import { roundTo3Decimals } from '../util/rounding';

export const HISTORY_INTERVAL_MS = 1000;
/** Five minutes of one-second samples. */
export const HISTORY_SAMPLES_MAX = 300;

export interface HistorySample {
  t: number;
  reads: number;
  writes: number;
  readsPerSecond: number;
  writesPerSecond: number;
  latencyP50Ms: number | null;
  latencyP99Ms: number | null;
  compactionBytesPerSecond: number;
  flushBytesPerSecond: number;
  stalls: number;
  memtableBytes: number;
}

export type DataOperation = 'read' | 'write';

/** Whether a request (its route template and method) is a read, a write, or neither. */
export function dataOperationOf(template: string, method: string): DataOperation | null {
  if (template === '/v1/kv/{key}') return method === 'GET' ? 'read' : method === 'PUT' || method === 'DELETE' ? 'write' : null;
  if (template === '/v1/scan' && method === 'GET') return 'read';
  if (template === '/v1/batch' && method === 'POST') return 'write';
  return null;
}

/** Bucket i holds durations in [MIN * R^(i-1), MIN * R^i): R = 2^(1/8), from 1 µs to about 2.3 hours. */
const LATENCY_MIN_MS = 0.001;
const LATENCY_BUCKETS_PER_DOUBLING = 8;
const LATENCY_BUCKETS = 8 * 33;

/** Durations counted in log-scale buckets: O(1) memory however many requests an interval has. */
export class LatencyHistogram {
  private readonly counts = new Uint32Array(LATENCY_BUCKETS);
  private total = 0;

  add(durationMs: number): void {
    const ratio = durationMs / LATENCY_MIN_MS;
    const i = ratio <= 1 ? 0 : Math.min(LATENCY_BUCKETS - 1, Math.ceil(Math.log2(ratio) * LATENCY_BUCKETS_PER_DOUBLING));
    this.counts[i]++;
    this.total++;
  }

  get count(): number {
    return this.total;
  }

  /** The upper bound of the bucket holding quantile q (0..1), in ms; null when empty. */
  quantileMs(q: number): number | null {
    if (this.total === 0) return null;
    const rank = Math.max(1, Math.ceil(q * this.total));
    let seen = 0;
    for (let i = 0; i < LATENCY_BUCKETS; i++) {
      seen += this.counts[i];
      if (seen >= rank) return roundTo3Decimals(LATENCY_MIN_MS * 2 ** (i / LATENCY_BUCKETS_PER_DOUBLING));
    }
    return null;
  }

  reset(): void {
    this.counts.fill(0);
    this.total = 0;
  }
}

interface EngineTotals {
  compactionBytes: number;
  flushBytes: number;
  stalls: number;
}

function totalsOf(s: EngineStats): EngineTotals {
  return { compactionBytes: s.compaction.bytesWritten, flushBytes: s.flushBytesWritten, stalls: s.writeStalls + s.delayedWrites };
}

export class HistorySampler {
  private readonly samples: HistorySample[] = [];
  private readonly latency = new LatencyHistogram();
  private reads = 0;
  private writes = 0;
  private last: { atMs: number; totals: EngineTotals } | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly engineStats: () => EngineStats,
    readonly intervalMs = HISTORY_INTERVAL_MS,
    private readonly maxSamples = HISTORY_SAMPLES_MAX,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    if (this.timer !== null) return;
    this.last = { atMs: this.now(), totals: totalsOf(this.engineStats()) };
    this.timer = setInterval(() => {
      try {
        this.sample();
      } catch {
        // A sample missed (the engine closing under it) is a gap in a chart, never a failure.
      }
    }, this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** A data request answered, and how long it took. */
  observe(operation: DataOperation, durationMs: number): void {
    if (operation === 'read') this.reads++;
    else this.writes++;
    this.latency.add(durationMs);
  }

  /** Closes the interval into a sample (the timer's tick; tests call it directly). */
  sample(): void {
    const atMs = this.now();
    const stats = this.engineStats();
    const totals = totalsOf(stats);
    const last = this.last ?? { atMs: atMs - this.intervalMs, totals };
    const seconds = Math.max(0.001, (atMs - last.atMs) / 1000);
    this.samples.push({
      t: atMs,
      reads: this.reads,
      writes: this.writes,
      readsPerSecond: roundTo3Decimals(this.reads / seconds),
      writesPerSecond: roundTo3Decimals(this.writes / seconds),
      latencyP50Ms: this.latency.quantileMs(0.5),
      latencyP99Ms: this.latency.quantileMs(0.99),
      compactionBytesPerSecond: Math.round(Math.max(0, totals.compactionBytes - last.totals.compactionBytes) / seconds),
      flushBytesPerSecond: Math.round(Math.max(0, totals.flushBytes - last.totals.flushBytes) / seconds),
      stalls: Math.max(0, totals.stalls - last.totals.stalls),
      memtableBytes: stats.activeMemtableBytes,
    });
    if (this.samples.length > this.maxSamples) this.samples.shift();
    this.last = { atMs, totals };
    this.reads = 0;
    this.writes = 0;
    this.latency.reset();
  }

  view(): { intervalMs: number; samples: HistorySample[] } {
    return { intervalMs: this.intervalMs, samples: [...this.samples] };
  }
}
