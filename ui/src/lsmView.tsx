/**
 * The LSM view: /v1/stats every LSM_POLL_MS, each level a row, each file a bar across the
 * database's key space (keySpace.ts), its height by its size, its colour by its largest
 * sequence number (blue the oldest, orange the newest), hatched when it holds range tombstones;
 * hovering a bar shows the file's details. Above the rows: the space amplification and totals.
 *
 * Each bar carries data-file-number, data-level, data-size-bytes and data-range-deletions, and
 * the view data-last-sequence of the document drawn, so a test reads exactly what is drawn.
 */
import { useState } from 'preact/hooks';
import type { StatsDoc, StatsFile } from './wire';
import { usePoll } from './usePoll';
import { KeyScale, KeySpace, keySpaceOf, laneCount, placeBars } from './keySpace';
import { formatBytes, formatCount } from './format';
import { keyText } from './keyText';

const LSM_POLL_MS = 1000;
/** A bar's least width: a file of one key still shows. The same figure is in app.css (.file-bar). */
const BAR_MIN_WIDTH_PX = 4;
/** Width of the key-space area assumed when turning BAR_MIN_WIDTH_PX into a fraction for stacking. */
const ASSUMED_TRACK_WIDTH_PX = 900;
/** Lanes a level's row stacks overlapping files into (L0), at most. */
const LANES_MAX = 8;
const LANE_HEIGHT_PX = 26;
/** The hover details' box (its height about its usual content's) and its distance from the pointer. */
const DETAILS_WIDTH_PX = 380;
const DETAILS_HEIGHT_PX = 160;
const CURSOR_GAP_PX = 14;

interface Hovered {
  file: StatsFile;
  level: number;
  x: number;
  y: number;
}

/** Colour of a file by its largest sequence number within [oldest, newest]. */
function ageColour(seq: number, oldest: number, newest: number): string {
  const t = newest > oldest ? (seq - oldest) / (newest - oldest) : 1;
  return `hsl(${Math.round(215 - 185 * t)}, 70%, ${Math.round(48 + 6 * t)}%)`;
}

function allFiles(doc: StatsDoc): StatsFile[] {
  return doc.levels.flatMap((l) => l.files);
}

function Summary({ doc }: { doc: StatsDoc }) {
  const files = allFiles(doc);
  const amp = doc.spaceAmplification;
  return (
    <div class="summary">
      <Figure label="space amplification" value={`×${amp.estimate.toFixed(2)}`} title={`all table bytes / bytes of L${amp.lastLevel}`} />
      <Figure label="table bytes" value={formatBytes(amp.tableBytes)} />
      <Figure label={`L${amp.lastLevel} (last level)`} value={formatBytes(amp.lastLevelBytes)} />
      <Figure label="files" value={formatCount(files.length)} />
      <Figure label="last sequence" value={formatCount(doc.lastSequence)} />
      <Figure
        label="compactions"
        value={`${formatCount(doc.compaction.count ?? 0)}${doc.compaction.running === true ? ' (running)' : ''}`}
      />
      <Figure label="trivial moves" value={formatCount(doc.compaction.trivialMoves ?? 0)} />
    </div>
  );
}

export function Figure({ label, value, title }: { label: string; value: string; title?: string }) {
  return (
    <div class="figure" title={title}>
      <div class="figure-value">{value}</div>
      <div class="figure-label">{label}</div>
    </div>
  );
}

interface RowProps {
  level: number;
  files: StatsFile[];
  space: KeySpace;
  oldest: number;
  newest: number;
  maxSizeBytes: number;
  onHover: (h: Hovered | null) => void;
}

function LevelRow({ level, files, space, oldest, newest, maxSizeBytes, onHover }: RowProps) {
  const bars = placeBars(files, space, BAR_MIN_WIDTH_PX / ASSUMED_TRACK_WIDTH_PX, LANES_MAX);
  const bytes = files.reduce((n, f) => n + f.sizeBytes, 0);
  return (
    <div class="level" data-level-row={level}>
      <div class="level-label">
        <strong>L{level}</strong>
        <span>
          {files.length} {files.length === 1 ? 'file' : 'files'}
        </span>
        <span>{formatBytes(bytes)}</span>
      </div>
      <div class="level-track" style={{ height: `${laneCount(bars) * LANE_HEIGHT_PX}px` }}>
        {bars.map(({ file, left, width, lane }) => {
          const share = 0.35 + 0.65 * Math.sqrt(maxSizeBytes > 0 ? file.sizeBytes / maxSizeBytes : 1);
          const height = Math.max(6, Math.round((LANE_HEIGHT_PX - 4) * share));
          const rangeDeletions = file.rangeDeletions ?? 0;
          return (
            <div
              key={file.number}
              class={`file-bar${rangeDeletions > 0 ? ' has-range-deletions' : ''}`}
              data-file-number={file.number}
              data-level={level}
              data-size-bytes={file.sizeBytes}
              data-range-deletions={rangeDeletions}
              style={{
                left: `min(${(left * 100).toFixed(4)}%, calc(100% - ${BAR_MIN_WIDTH_PX}px))`,
                width: `${(width * 100).toFixed(4)}%`,
                top: `${lane * LANE_HEIGHT_PX + (LANE_HEIGHT_PX - height) / 2}px`,
                height: `${height}px`,
                background: ageColour(file.largestSeq, oldest, newest),
              }}
              onMouseMove={(e) => onHover({ file, level, x: e.clientX, y: e.clientY })}
              onMouseLeave={() => onHover(null)}
            >
              <span class="file-bar-label">{formatBytes(file.sizeBytes)}</span>
            </div>
          );
        })}
      </div>
    </div>
  );
}

function FileDetails({ hovered }: { hovered: Hovered }) {
  const f = hovered.file;
  // Right of the pointer, or left of it near the window's right edge; above it near the bottom.
  const left =
    hovered.x + CURSOR_GAP_PX + DETAILS_WIDTH_PX > window.innerWidth
      ? hovered.x - CURSOR_GAP_PX - DETAILS_WIDTH_PX
      : hovered.x + CURSOR_GAP_PX;
  const top =
    hovered.y + CURSOR_GAP_PX + DETAILS_HEIGHT_PX > window.innerHeight
      ? hovered.y - CURSOR_GAP_PX - DETAILS_HEIGHT_PX
      : hovered.y + CURSOR_GAP_PX;
  const style = { left: `${Math.max(0, left)}px`, top: `${Math.max(0, top)}px`, width: `${DETAILS_WIDTH_PX}px` };
  return (
    <div class="file-details" style={style} data-details-file-number={f.number}>
      <div class="file-details-title">
        file {String(f.number).padStart(6, '0')}.sst · L{hovered.level}
      </div>
      <dl>
        <dt>size</dt>
        <dd>
          {formatBytes(f.sizeBytes)} ({formatCount(f.sizeBytes)} bytes)
        </dd>
        <dt>smallest key</dt>
        <dd class="mono">{keyText(f.smallestHex)}</dd>
        <dt>largest key</dt>
        <dd class="mono">{keyText(f.largestHex)}</dd>
        <dt>sequence numbers</dt>
        <dd>
          {formatCount(f.smallestSeq)} – {formatCount(f.largestSeq)}
        </dd>
        <dt>range deletions</dt>
        <dd>{f.rangeDeletions === undefined ? 'not reported' : formatCount(f.rangeDeletions)}</dd>
      </dl>
    </div>
  );
}

function Legend({ oldest, newest, scale, setScale }: { oldest: number; newest: number; scale: KeyScale; setScale: (s: KeyScale) => void }) {
  return (
    <div class="legend">
      <span>colour: largest sequence number</span>
      <span class="swatch" style={{ background: ageColour(oldest, oldest, newest) }} /> {formatCount(oldest)} (oldest)
      <span class="swatch" style={{ background: ageColour(newest, oldest, newest) }} /> {formatCount(newest)} (newest)
      <span class="swatch hatched" /> holds range deletions
      <label>
        key axis{' '}
        <select value={scale} onChange={(e) => setScale((e.currentTarget as HTMLSelectElement).value as KeyScale)}>
          <option value="value">by key value</option>
          <option value="ordinal">by file boundaries</option>
        </select>
      </label>
    </div>
  );
}

export function LsmView() {
  const { data, error, updatedAtMs } = usePoll<StatsDoc>('/v1/stats', LSM_POLL_MS);
  const [hovered, setHovered] = useState<Hovered | null>(null);
  const [scale, setScale] = useState<KeyScale>('value');
  if (data === null) return <section class="view">{error === null ? <p>Loading /v1/stats …</p> : <p class="error">{error}</p>}</section>;
  const files = allFiles(data);
  const space = keySpaceOf(files, scale);
  const seqs = files.map((f) => f.largestSeq);
  const oldest = seqs.length > 0 ? Math.min(...seqs) : 0;
  const newest = seqs.length > 0 ? Math.max(...seqs) : 0;
  const maxSizeBytes = files.reduce((n, f) => Math.max(n, f.sizeBytes), 0);
  const ends =
    files.length > 0
      ? [
          files.map((f) => f.smallestHex).sort()[0],
          files
            .map((f) => f.largestHex)
            .sort()
            .pop() ?? '',
        ]
      : null;
  return (
    <section class="view lsm" data-last-sequence={data.lastSequence} data-updated-at={updatedAtMs}>
      <Summary doc={data} />
      {error !== null && <p class="error">{error} (showing the last answer)</p>}
      <Legend oldest={oldest} newest={newest} scale={scale} setScale={setScale} />
      <div class="levels">
        {data.levels.map((l) => (
          <LevelRow
            key={l.level}
            level={l.level}
            files={l.files}
            space={space}
            {...{ oldest, newest, maxSizeBytes }}
            onHover={setHovered}
          />
        ))}
        <div class="key-axis">
          <span class="mono">{ends === null ? 'no files yet' : keyText(ends[0])}</span>
          <span>key space ({scale === 'value' ? 'by key value' : 'by file boundaries'})</span>
          <span class="mono">{ends === null ? '' : keyText(ends[1])}</span>
        </div>
      </div>
      {hovered !== null && files.some((f) => f.number === hovered.file.number) && <FileDetails hovered={hovered} />}
    </section>
  );
}
