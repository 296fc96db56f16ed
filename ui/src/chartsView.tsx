/**
 * Live charts of the last few minutes (GET /v1/console/history every HISTORY_POLL_MS; the server
 * keeps one sample a second): reads and writes a second, request latency p50/p99, flush and
 * compaction bytes a second, write stalls, memtable bytes. Drawn with uPlot (canvas; one chart
 * per panel, created once and fed new data, sized to its panel).
 *
 * The view carries data-sample-count, the samples drawn, for the test.
 */
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import type { HistoryDoc, HistorySample } from './wire';
import { usePoll } from './usePoll';
import { formatBytes, formatCount } from './format';

const HISTORY_POLL_MS = 2000;
const CHART_HEIGHT_PX = 180;
/** Until the panel has been laid out. */
const FALLBACK_WIDTH_PX = 600;

interface SeriesSpec {
  label: string;
  colour: string;
  /** null: nothing to show for that second (no request to time); the line breaks there. */
  valueOf: (s: HistorySample) => number | null;
}

interface ChartSpec {
  title: string;
  unit: 'count' | 'bytes' | 'ms';
  series: SeriesSpec[];
}

const CHARTS: ChartSpec[] = [
  {
    title: 'Requests a second',
    unit: 'count',
    series: [
      { label: 'reads/s', colour: '#2f6fde', valueOf: (s) => s.readsPerSecond },
      { label: 'writes/s', colour: '#e0672b', valueOf: (s) => s.writesPerSecond },
    ],
  },
  {
    title: 'Request latency',
    unit: 'ms',
    series: [
      { label: 'p50 ms', colour: '#2f9e6b', valueOf: (s) => s.latencyP50Ms },
      { label: 'p99 ms', colour: '#c23b6b', valueOf: (s) => s.latencyP99Ms },
    ],
  },
  {
    title: 'Background writes',
    unit: 'bytes',
    series: [
      { label: 'compaction bytes/s', colour: '#7a4fd6', valueOf: (s) => s.compactionBytesPerSecond },
      { label: 'flush bytes/s', colour: '#2aa3b8', valueOf: (s) => s.flushBytesPerSecond },
    ],
  },
  { title: 'Write stalls and delays', unit: 'count', series: [{ label: 'stalls', colour: '#d23c3c', valueOf: (s) => s.stalls }] },
  { title: 'Memtable', unit: 'bytes', series: [{ label: 'memtable bytes', colour: '#8a6d1f', valueOf: (s) => s.memtableBytes }] },
];

function formatValue(unit: ChartSpec['unit'], v: number | null): string {
  if (v === null) return '–';
  if (unit === 'bytes') return formatBytes(v);
  if (unit === 'ms') return v < 10 ? v.toFixed(2) : v.toFixed(1);
  return v < 10 && !Number.isInteger(v) ? v.toFixed(1) : formatCount(v);
}

function optionsOf(spec: ChartSpec, width: number): uPlot.Options {
  return {
    width,
    height: CHART_HEIGHT_PX,
    ms: 1,
    series: [
      {},
      ...spec.series.map((s) => ({
        label: s.label,
        stroke: s.colour,
        width: 2,
        value: (_u: uPlot, v: number | null) => formatValue(spec.unit, v),
      })),
    ],
    scales: { y: { range: (_u: uPlot, _min: number, max: number): uPlot.Range.MinMax => [0, max > 0 ? max * 1.1 : 1] } },
    axes: [{}, { size: 70, values: (_u: uPlot, splits: number[]) => splits.map((v) => formatValue(spec.unit, v)) }],
  };
}

function dataOf(spec: ChartSpec, samples: HistorySample[]): uPlot.AlignedData {
  return [samples.map((s) => s.t), ...spec.series.map((series) => samples.map(series.valueOf))];
}

function Chart({ spec, samples }: { spec: ChartSpec; samples: HistorySample[] }) {
  const holder = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const el = holder.current;
    if (el === null) return undefined;
    const chart = new uPlot(optionsOf(spec, el.clientWidth || FALLBACK_WIDTH_PX), dataOf(spec, []), el);
    plot.current = chart;
    const resize = new ResizeObserver(() => chart.setSize({ width: el.clientWidth || FALLBACK_WIDTH_PX, height: CHART_HEIGHT_PX }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      chart.destroy();
      plot.current = null;
    };
  }, [spec]);
  useEffect(() => plot.current?.setData(dataOf(spec, samples)), [spec, samples]);
  return (
    <div class="chart-panel">
      <h3>{spec.title}</h3>
      <div class="chart" ref={holder} />
    </div>
  );
}

export function ChartsView() {
  const { data, error } = usePoll<HistoryDoc>('/v1/console/history', HISTORY_POLL_MS);
  const samples = data?.samples ?? [];
  const minutes = data === null ? 0 : (samples.length * data.intervalMs) / 60_000;
  return (
    <section class="view charts-view" data-sample-count={samples.length}>
      {error !== null && <p class="error">{error}</p>}
      <p class="muted">
        {data === null
          ? 'Loading /v1/console/history …'
          : `${samples.length} samples, one every ${data.intervalMs} ms (${minutes.toFixed(1)} minutes)`}
      </p>
      <div class="charts">
        {CHARTS.map((spec) => (
          <Chart key={spec.title} spec={spec} samples={samples} />
        ))}
      </div>
    </section>
  );
}
