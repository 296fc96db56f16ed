/**
 * The imports view: /v1/console/imports every IMPORTS_POLL_MS. Running imports with their phase,
 * rows, bytes, rate and ETA (a progress bar when the total size is known); recent ones with their
 * outcome and counts, and a link to the conflict report when the server kept it.
 *
 * Rows carry data-import-id, data-phase, data-rows, data-bytes and data-outcome for the test.
 */
import type { ImportView, ImportsDoc } from './wire';
import { usePoll } from './usePoll';
import { formatBytes, formatCount, formatSeconds, formatTime, secondsBetween } from './format';

const IMPORTS_POLL_MS = 1000;

function Progress({ imp }: { imp: ImportView }) {
  if (imp.totalBytes === null || imp.totalBytes <= 0) return <span class="muted">size unknown</span>;
  const share = Math.min(1, imp.bytes / imp.totalBytes);
  return (
    <div class="progress" title={`${formatBytes(imp.bytes)} of ${formatBytes(imp.totalBytes)}`}>
      <div class="progress-fill" style={{ width: `${(share * 100).toFixed(1)}%` }} />
      <span class="progress-text">{(share * 100).toFixed(0)}%</span>
    </div>
  );
}

function RunningTable({ running }: { running: ImportView[] }) {
  if (running.length === 0) return <p class="muted">No import is running.</p>;
  return (
    <table class="imports running">
      <thead>
        <tr>
          <th>id</th>
          <th>input</th>
          <th>kind / mode</th>
          <th>phase</th>
          <th>progress</th>
          <th class="num">rows</th>
          <th class="num">bytes</th>
          <th class="num">rate</th>
          <th class="num">ETA</th>
          <th class="num">running for</th>
        </tr>
      </thead>
      <tbody>
        {running.map((imp) => (
          <tr
            key={imp.id}
            data-import-id={imp.id}
            data-phase={imp.phase}
            data-rows={imp.rows}
            data-bytes={imp.bytes}
            data-outcome={imp.outcome}
          >
            <td class="mono">{imp.id}</td>
            <td>{imp.name}</td>
            <td>
              {imp.kind} / {imp.mode}
            </td>
            <td>
              <span class="phase">{imp.phase}</span>
            </td>
            <td>
              <Progress imp={imp} />
            </td>
            <td class="num">{formatCount(imp.rows)}</td>
            <td class="num">
              {formatBytes(imp.bytes)}
              {imp.totalBytes !== null && <span class="muted"> / {formatBytes(imp.totalBytes)}</span>}
            </td>
            <td class="num">{imp.rowsPerSecond > 0 ? `${formatCount(imp.rowsPerSecond)} rows/s` : '–'}</td>
            <td class="num">{formatSeconds(imp.etaSeconds)}</td>
            <td class="num">{formatSeconds(secondsBetween(imp.startedAt, null))}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Outcome({ imp }: { imp: ImportView }) {
  return (
    <span class={`outcome outcome-${imp.outcome}`} title={imp.error === null ? undefined : `${imp.error.code}: ${imp.error.message}`}>
      {imp.outcome}
    </span>
  );
}

function RecentTable({ recent }: { recent: ImportView[] }) {
  if (recent.length === 0) return <p class="muted">No import has finished since the server started.</p>;
  return (
    <table class="imports recent">
      <thead>
        <tr>
          <th>id</th>
          <th>input</th>
          <th>kind / mode</th>
          <th>finished</th>
          <th class="num">took</th>
          <th>outcome</th>
          <th class="num">rows</th>
          <th class="num">keys</th>
          <th class="num">new</th>
          <th class="num">unchanged</th>
          <th class="num">conflicts</th>
          <th>report / error</th>
        </tr>
      </thead>
      <tbody>
        {recent.map((imp) => (
          <tr key={imp.id} data-import-id={imp.id} data-outcome={imp.outcome} data-rows={imp.rows}>
            <td class="mono">{imp.id}</td>
            <td>{imp.name}</td>
            <td>
              {imp.kind} / {imp.mode}
            </td>
            <td>{formatTime(imp.finishedAt)}</td>
            <td class="num">{formatSeconds(secondsBetween(imp.startedAt, imp.finishedAt))}</td>
            <td>
              <Outcome imp={imp} />
            </td>
            <td class="num">{formatCount(imp.rows)}</td>
            <td class="num">{imp.counts === null ? '–' : formatCount(imp.counts.sstKeys)}</td>
            <td class="num">{imp.counts === null ? '–' : formatCount(imp.counts.new)}</td>
            <td class="num">{imp.counts === null ? '–' : formatCount(imp.counts.unchanged)}</td>
            <td class="num">{imp.counts === null ? '–' : formatCount(imp.counts.conflicts)}</td>
            <td>
              {imp.reportAvailable && (imp.counts?.conflicts ?? 0) > 0 ? (
                <a href={`#conflicts/${encodeURIComponent(imp.id)}`}>view conflicts</a>
              ) : imp.error !== null ? (
                <span class="error-text">{imp.error.code}</span>
              ) : (
                <span class="muted">–</span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function ImportsView() {
  const { data, error } = usePoll<ImportsDoc>('/v1/console/imports', IMPORTS_POLL_MS);
  if (data === null)
    return <section class="view">{error === null ? <p>Loading /v1/console/imports …</p> : <p class="error">{error}</p>}</section>;
  return (
    <section class="view imports-view">
      {error !== null && <p class="error">{error} (showing the last answer)</p>}
      <h2>Running ({data.running.length})</h2>
      <RunningTable running={data.running} />
      <h2>Recent ({data.recent.length})</h2>
      <RecentTable recent={data.recent} />
    </section>
  );
}
