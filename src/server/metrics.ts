/**
 * GET /metrics: the server's metrics in Prometheus' text format (version 0.0.4), through
 * prom-client (the Prometheus client Node services use) with a Registry of this server's own,
 * never the process-global one: two servers in one process (tests, a library caller) count
 * apart. Behind the token like /v1, unless `ingest serve --metrics-public` (a scraper on a
 * trusted network without the token); docs/serve.md "Metrics" lists and explains every metric.
 *
 * Where the numbers come from:
 *   - HTTP: observeRequest, once per answered request (requestObserver.ts): a counter by route
 *     template, method and status, and a latency histogram by route template. Labels are route
 *     templates (`/v1/kv/{key}`), never raw paths: keys stay out, and the label sets stay bounded.
 *   - the engine: read at scrape time (refresh(): one engine.stats() and one statsReport-like
 *     pass over the level files per scrape, nothing on the data path). The engine's monotonic
 *     counters become Prometheus counters by adding what they grew since the last scrape.
 *   - the engine's block cache (Engine.blockCache: its hit and lookup counts), and the
 *     process' perf context for Bloom checks (base/perfContext.ts: process-wide).
 *   - imports: the import queue (running, queued) and the import registry (finished per
 *     outcome, rows and bytes per phase, conflicts found).
 *   - the process: prom-client's default metrics (heap, event-loop lag, GC, CPU, descriptors),
 *     registered on this server's registry at its first scrape: a server never scraped pays for
 *     no GC observer or event-loop monitor (prom-client cannot stop them once started).
 *
 * Bounds: label values come from fixed sets (route templates, HTTP methods Node's parser
 * accepts, statuses, the seven levels, outcomes, phases), so the registry's size is bounded.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Engine, EngineStats } from '../engine/engine';
import { spaceAmplificationOf } from '../engine/spaceAmplification';
import type { BlockCache } from '../sstable/reader/blockCache';
import { perf } from '../base/perfContext';
import type { ImportQueue } from './importQueue';
import type { ImportRegistry } from './importRegistry';
import type { FinishedRequest } from './requestObserver';
import type { RequestContext } from './requestContext';
import type { ServerMemoryBudget } from './memoryBudget';

/** Request latency buckets, seconds: 100 µs (a cached GET) to 10 minutes (an import). */
const DURATION_BUCKETS_SECONDS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600,
];

export interface MetricsSources {
  engine: Engine;
  /** The engine's block cache (Engine.blockCache), or null for an engine without one: then no cache metrics. */
  blockCache: BlockCache | null;
  imports: ImportQueue;
  importRegistry: ImportRegistry;
  memory: ServerMemoryBudget;
  /** Open connections and requests in flight now. */
  connections: () => number;
  inFlightRequests: () => number;
  /** Log lines dropped since start because stderr did not keep up (serverLog.ts). */
  logLinesDropped: () => number;
}

/** What one scrape reads of the engine, once. */
interface EngineSnapshot {
  stats: EngineStats;
  spaceAmplification: number;
}

/** A counter that follows a monotonic total read at scrape time (it adds what the total grew). */
function followingCounter(registry: Registry, name: string, help: string, read: () => number): void {
  let last = 0;
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = read();
      // A total that went back (a library caller reset the perf context) restarts the count, as a process restart would.
      if (now < last) {
        this.reset();
        last = 0;
      }
      this.inc(now - last);
      last = now;
    },
  });
}

/** One series of a metric as the registry holds it (prom-client's values, without its types in our declarations). */
export interface MetricSample {
  /** The series' name: the metric's, or a histogram's `_bucket`, `_sum` or `_count` name. */
  name: string;
  labels: Record<string, string | number>;
  value: number;
}

export class ServerMetrics {
  /**
   * Private: prom-client's types stay out of the package's declarations (a library user would
   * otherwise type-check prom-client's, and pino's, with their compiler options).
   */
  private readonly registry = new Registry();
  private readonly requests: Counter<'route' | 'method' | 'status'>;
  private readonly durations: Histogram<'route'>;
  /** Labeled children by route, then method and status: an answered request finds its series without building a label key. */
  private readonly requestSeries = new Map<string, Map<string, ReturnType<Counter['labels']>>>();
  private readonly durationSeries = new Map<string, ReturnType<Histogram['labels']>>();
  private snapshot: EngineSnapshot | null = null;
  private finished!: Counter<'outcome'>;
  private importRows!: Counter<'phase'>;
  private importBytes!: Counter<'phase'>;
  /** The import registry's totals as the counters last took them, by counter and label. */
  private readonly importTotalsSeen = new Map<string, number>();
  private processMetrics = false;

  constructor(private readonly sources: MetricsSources) {
    const registers = [this.registry];
    this.requests = new Counter({
      name: 'ingest_http_requests_total',
      help: 'HTTP requests answered, by route template, method and status',
      labelNames: ['route', 'method', 'status'],
      registers,
    });
    this.durations = new Histogram({
      name: 'ingest_http_request_duration_seconds',
      help: 'Time from the start of handling a request to the end of its response, by route template',
      labelNames: ['route'],
      buckets: DURATION_BUCKETS_SECONDS,
      registers,
    });
    this.serverMetrics();
    this.engineMetrics();
    this.cacheMetrics();
    this.importMetrics();
  }

  /** An answered request (requestObserver.ts). */
  observeRequest(r: FinishedRequest): void {
    let byMethod = this.requestSeries.get(r.route);
    if (byMethod === undefined) this.requestSeries.set(r.route, (byMethod = new Map()));
    const key = `${r.method} ${r.status}`;
    let series = byMethod.get(key);
    if (series === undefined) byMethod.set(key, (series = this.requests.labels(r.route, r.method, String(r.status))));
    series.inc();
    let duration = this.durationSeries.get(r.route);
    if (duration === undefined) this.durationSeries.set(r.route, (duration = this.durations.labels(r.route)));
    duration.observe(r.durationMs / 1000);
  }

  /** The series of one metric, by its name (tests read histograms' counts here), or null if there is none. */
  async samplesOf(metricName: string): Promise<MetricSample[] | null> {
    const metric = this.registry.getSingleMetric(metricName);
    if (metric === undefined) return null;
    const read = await metric.get();
    return read.values.map((v) => ({
      name: (v as { metricName?: string }).metricName ?? metricName,
      labels: { ...v.labels } as Record<string, string | number>,
      value: v.value,
    }));
  }

  /** The text exposition of every metric, read now. */
  async render(): Promise<{ contentType: string; text: string }> {
    if (!this.processMetrics) {
      this.processMetrics = true;
      collectDefaultMetrics({ register: this.registry });
    }
    this.snapshot = this.readEngine();
    this.syncImportTotals();
    try {
      return { contentType: this.registry.contentType, text: await this.registry.metrics() };
    } finally {
      this.snapshot = null;
    }
  }

  /** The engine's stats of the scrape in progress (read afresh when a concurrent scrape's ended first). */
  private engine(): EngineSnapshot {
    if (this.snapshot === null) this.snapshot = this.readEngine();
    return this.snapshot;
  }

  private readEngine(): EngineSnapshot {
    const engine = this.sources.engine;
    return { stats: engine.stats(), spaceAmplification: spaceAmplificationOf(engine.levelFiles()).estimate };
  }

  private gauge(name: string, help: string, read: () => number): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        this.set(read());
      },
    });
  }

  private perLevelGauge(name: string, help: string, read: (s: EngineStats) => number[]): void {
    const engine = (): EngineSnapshot => this.engine();
    new Gauge({
      name,
      help,
      labelNames: ['level'],
      registers: [this.registry],
      collect() {
        read(engine().stats).forEach((v, level) => this.set({ level: String(level) }, v));
      },
    });
  }

  private serverMetrics(): void {
    const s = this.sources;
    this.gauge('ingest_http_connections', 'Open client connections', s.connections);
    this.gauge('ingest_http_requests_in_flight', 'Requests being handled now', s.inFlightRequests);
    this.gauge('ingest_memory_budget_held_bytes', 'Bytes the requests hold now against the memory budget', () => s.memory.heldBytes);
    this.gauge('ingest_memory_budget_bytes', 'The memory budget of all requests together (--memory-budget)', () => s.memory.limitBytes);
    followingCounter(
      this.registry,
      'ingest_memory_budget_refusals_total',
      'Requests refused (503) because the memory budget was full',
      () => s.memory.refusals,
    );
    followingCounter(
      this.registry,
      'ingest_log_lines_dropped_total',
      'Log lines dropped because stderr did not take them fast enough (its buffer is bounded)',
      s.logLinesDropped,
    );
  }

  private engineMetrics(): void {
    const e = (): EngineStats => this.engine().stats;
    const r = this.registry;
    this.perLevelGauge('ingest_engine_level_files', 'Table files per LSM level', (s) => s.filesPerLevel);
    this.perLevelGauge('ingest_engine_level_bytes', 'Bytes of table files per LSM level', (s) => s.bytesPerLevel);
    this.gauge(
      'ingest_engine_space_amplification',
      'All table bytes per byte of the last level with data (1 when empty)',
      () => this.engine().spaceAmplification,
    );
    this.gauge('ingest_engine_memtable_bytes', 'Bytes the active memtable uses', () => e().activeMemtableBytes);
    this.gauge('ingest_engine_immutable_memtables', 'Memtables waiting to be flushed', () => e().immutableMemtables);
    this.gauge('ingest_engine_last_sequence', 'The last sequence number written', () => e().lastSequence);
    this.gauge('ingest_engine_open_tables', 'Table files the table cache holds open', () => e().openTables);
    this.gauge('ingest_engine_compaction_running', '1 while a compaction runs, else 0', () => (e().compaction.running ? 1 : 0));
    followingCounter(r, 'ingest_engine_flushes_total', 'Memtable flushes', () => e().flushes);
    followingCounter(r, 'ingest_engine_flush_written_bytes_total', 'Bytes of L0 tables written by flushes', () => e().flushBytesWritten);
    followingCounter(r, 'ingest_engine_compactions_total', 'Compactions run (automatic and manual)', () => e().compaction.count);
    followingCounter(r, 'ingest_engine_compaction_read_bytes_total', 'Bytes compactions read', () => e().compaction.bytesRead);
    followingCounter(r, 'ingest_engine_compaction_written_bytes_total', 'Bytes compactions wrote', () => e().compaction.bytesWritten);
    followingCounter(r, 'ingest_engine_write_stalls_total', 'Writes that waited for a flush (L0 or memtables full)', () => e().writeStalls);
    followingCounter(r, 'ingest_engine_write_delays_total', 'Writes slowed down at the L0 slowdown trigger', () => e().delayedWrites);
    followingCounter(
      r,
      'ingest_engine_write_delay_seconds_total',
      'Time slowed-down writes were told to wait',
      () => e().writeDelayMs / 1000,
    );
    followingCounter(
      r,
      'ingest_engine_latch_waits_total',
      'Writes that waited for an ingestion span latch',
      () => e().latches.writesDelayed,
    );
    followingCounter(r, 'ingest_engine_latch_timeouts_total', 'Latch waits that timed out (503 LATCH_TIMEOUT)', () => e().latches.timeouts);
    this.gauge('ingest_engine_latches_held', 'Span latches held now (ingestions landing)', () => e().latches.held);
  }

  private cacheMetrics(): void {
    const r = this.registry;
    const cache = this.sources.blockCache;
    if (cache !== null) {
      followingCounter(r, 'ingest_engine_block_cache_hits_total', 'Block cache lookups that found their block', () => cache.hits);
      followingCounter(
        r,
        'ingest_engine_block_cache_misses_total',
        'Block cache lookups that read the block from the file',
        () => cache.lookups - cache.hits,
      );
      this.gauge('ingest_engine_block_cache_usage_bytes', 'Bytes the block cache holds', () => cache.usageBytes);
      this.gauge('ingest_engine_block_cache_capacity_bytes', 'The block cache capacity', () => cache.capacityBytes);
    }
    followingCounter(r, 'ingest_engine_bloom_checked_total', 'Bloom filter probes (process-wide)', () => perf.bloomChecks);
    followingCounter(
      r,
      'ingest_engine_bloom_useful_total',
      'Bloom filter probes that proved a key absent, saving a block read (process-wide)',
      () => perf.bloomNegatives,
    );
  }

  private importMetrics(): void {
    const s = this.sources;
    const registry = s.importRegistry;
    this.gauge('ingest_imports_running', 'Imports running now', () => s.imports.running);
    this.gauge('ingest_imports_queued', 'Imports waiting for their turn in the import queue', () => s.imports.queued);
    this.gauge(
      'ingest_import_reports_held_bytes',
      "Bytes the recent imports' conflict lists hold for the console (estimated)",
      () => registry.heldReportBytes,
    );
    followingCounter(this.registry, 'ingest_import_conflicts_total', 'Conflicts the finished imports found', () => registry.conflictsFound);
    const registers = [this.registry];
    this.finished = new Counter({
      name: 'ingest_imports_finished_total',
      help: 'Imports finished, by outcome',
      labelNames: ['outcome'],
      registers,
    });
    this.importRows = new Counter({
      name: 'ingest_import_rows_total',
      help: 'Rows the imports processed, by phase',
      labelNames: ['phase'],
      registers,
    });
    this.importBytes = new Counter({
      name: 'ingest_import_bytes_total',
      help: 'Bytes the imports processed, by phase',
      labelNames: ['phase'],
      registers,
    });
  }

  /** The import registry's totals (they only grow) into the labeled counters: each scrape adds what they grew by. */
  private syncImportTotals(): void {
    const registry = this.sources.importRegistry;
    const follow = (counter: Counter<string>, label: string, value: string, now: number): void => {
      const key = `${counter === this.finished ? 'o' : counter === this.importRows ? 'r' : 'b'}:${value}`;
      const grown = now - (this.importTotalsSeen.get(key) ?? 0);
      if (grown > 0) counter.inc({ [label]: value }, grown);
      this.importTotalsSeen.set(key, now);
    };
    for (const [outcome, n] of registry.finishedByOutcome) follow(this.finished, 'outcome', outcome, n);
    for (const [phase, t] of registry.phaseTotals) {
      follow(this.importRows, 'phase', phase, t.rows);
      follow(this.importBytes, 'phase', phase, t.bytes);
    }
  }
}

/** GET /metrics. */
export function metricsRoute(metrics: ServerMetrics): (ctx: RequestContext) => Promise<void> {
  return async (ctx) => {
    const { contentType, text } = await metrics.render();
    ctx.res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
    ctx.res.end(text);
  };
}
