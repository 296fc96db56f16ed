/**
 * The conflict report viewer: pick a recent import whose report the server kept, then page
 * through its conflicts (GET /v1/console/imports/{id}/conflicts, PAGE_SIZES rows a page),
 * filtered by key prefix and by source file (the server filters; the text fields are sent
 * FILTER_DELAY_MS after the last keystroke). Each row: the key, the input file and line of the
 * incoming row, and the existing and incoming values side by side.
 *
 * The table carries data-total and data-offset, each row data-key-hex, for the test.
 */
import { useEffect, useState } from 'preact/hooks';
import type { ConflictsPage, ImportsDoc, ShownValue } from './wire';
import { usePoll } from './usePoll';
import { getJson, messageOf, Unauthorized } from './api';
import { formatBytes, formatCount, formatTime } from './format';

const PAGE_SIZES = [10, 25, 50, 100, 500];
const DEFAULT_PAGE_SIZE = 25;
const FILTER_DELAY_MS = 300;
/** The list of imports with reports changes only when an import finishes. */
const IMPORT_LIST_POLL_MS = 3000;

interface Query {
  id: string;
  offset: number;
  limit: number;
  prefix: string;
  file: string;
}

function pathOf(q: Query): string {
  const params = new URLSearchParams({ offset: String(q.offset), limit: String(q.limit) });
  if (q.prefix !== '') params.set('prefix', q.prefix);
  if (q.file !== '') params.set('file', q.file);
  return `/v1/console/imports/${encodeURIComponent(q.id)}/conflicts?${params.toString()}`;
}

/** One page, fetched again whenever the query changes; the last page stays shown while the next loads. */
function usePage(query: Query | null): { page: ConflictsPage | null; error: string | null; loading: boolean } {
  const [state, setState] = useState<{ page: ConflictsPage | null; error: string | null; loading: boolean }>({
    page: null,
    error: null,
    loading: false,
  });
  const path = query === null ? null : pathOf(query);
  useEffect(() => {
    if (path === null) return undefined;
    const aborter = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    getJson<ConflictsPage>(path, aborter.signal).then(
      (page) => setState({ page, error: null, loading: false }),
      (err: unknown) => {
        if (!aborter.signal.aborted && !(err instanceof Unauthorized)) setState({ page: null, error: messageOf(err), loading: false });
      },
    );
    return () => aborter.abort();
  }, [path]);
  return state;
}

/** `value` FILTER_DELAY_MS after it last changed. */
function useDelayed(value: string): string {
  const [delayed, setDelayed] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setDelayed(value), FILTER_DELAY_MS);
    return () => clearTimeout(timer);
  }, [value]);
  return delayed;
}

function Value({ value }: { value: ShownValue }) {
  const text = value.encoding === 'hex' ? `0x${value.data}` : value.data;
  return (
    <div class={`value${value.encoding === 'hex' ? ' mono' : ''}`}>
      <span class="value-text">{text}</span>
      {value.truncated && <span class="muted"> … ({formatBytes(value.sizeBytes)} in all)</span>}
    </div>
  );
}

function PageTable({ page }: { page: ConflictsPage }) {
  if (page.conflicts.length === 0) return <p class="muted">No conflict matches.</p>;
  return (
    <table class="conflicts" data-total={page.total} data-offset={page.offset}>
      <thead>
        <tr>
          <th class="num">#</th>
          <th>key</th>
          <th>source (file:line)</th>
          <th>existing value</th>
          <th>incoming value</th>
        </tr>
      </thead>
      <tbody>
        {page.conflicts.map((c, i) => (
          <tr key={c.keyHex} data-key-hex={c.keyHex}>
            <td class="num muted">{formatCount(page.offset + i + 1)}</td>
            <td class="mono" title={`0x${c.keyHex}`}>
              {c.key}
            </td>
            <td class="mono">{c.source === null ? c.sstFile : `${c.source.file}:${c.source.line}`}</td>
            <td title={`sequence ${c.existingSeq}`}>
              <Value value={c.existingValue} />
            </td>
            <td>
              <Value value={c.newValue} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

interface PagerProps {
  page: ConflictsPage | null;
  offset: number;
  limit: number;
  setOffset: (n: number) => void;
  setLimit: (n: number) => void;
}

function Pager({ page, offset, limit, setOffset, setLimit }: PagerProps) {
  const total = page?.total ?? 0;
  const shownTo = Math.min(total, offset + (page?.conflicts.length ?? 0));
  return (
    <div class="pager">
      <button type="button" class="prev" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - limit))}>
        ← previous
      </button>
      <span class="pager-text">{total === 0 ? 'none' : `${formatCount(offset + 1)}–${formatCount(shownTo)} of ${formatCount(total)}`}</span>
      <button type="button" class="next" disabled={offset + limit >= total} onClick={() => setOffset(offset + limit)}>
        next →
      </button>
      <label>
        rows a page{' '}
        <select class="page-size" value={String(limit)} onChange={(e) => setLimit(Number((e.currentTarget as HTMLSelectElement).value))}>
          {PAGE_SIZES.map((n) => (
            <option key={n} value={String(n)}>
              {n}
            </option>
          ))}
        </select>
      </label>
    </div>
  );
}

export function ConflictsView({ importId, setImportId }: { importId: string | null; setImportId: (id: string | null) => void }) {
  const imports = usePoll<ImportsDoc>('/v1/console/imports', IMPORT_LIST_POLL_MS);
  const withReports = (imports.data?.recent ?? []).filter((i) => i.reportAvailable && (i.counts?.conflicts ?? 0) > 0);
  const [limit, setLimit] = useState(DEFAULT_PAGE_SIZE);
  const [prefixInput, setPrefixInput] = useState('');
  const [fileInput, setFileInput] = useState('');
  const prefix = useDelayed(prefixInput);
  const file = useDelayed(fileInput);
  // A new import, filter or page size starts at the first page, in the same render (no fetch of a stale offset).
  const filterKey = JSON.stringify([importId, prefix, file, limit]);
  const [paging, setPaging] = useState({ filterKey, offset: 0 });
  const offset = paging.filterKey === filterKey ? paging.offset : 0;
  const setOffset = (n: number): void => setPaging({ filterKey, offset: n });
  const { page, error, loading } = usePage(importId === null ? null : { id: importId, offset, limit, prefix, file });
  return (
    <section class="view conflicts-view">
      <div class="filters">
        <label>
          import{' '}
          <select
            class="import-select"
            value={importId ?? ''}
            onChange={(e) => setImportId((e.currentTarget as HTMLSelectElement).value || null)}
          >
            <option value="">choose an import with a report…</option>
            {importId !== null && !withReports.some((i) => i.id === importId) && <option value={importId}>{importId}</option>}
            {withReports.map((i) => (
              <option key={i.id} value={i.id}>
                {i.id} · {i.name} · {i.counts === null ? '' : `${formatCount(i.counts.conflicts)} conflicts · `}
                {formatTime(i.finishedAt)}
              </option>
            ))}
          </select>
        </label>
        <label>
          key prefix{' '}
          <input
            class="prefix-filter"
            placeholder="key text starts with"
            value={prefixInput}
            onInput={(e) => setPrefixInput((e.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <label>
          source file{' '}
          <input
            class="file-filter"
            placeholder="exact name"
            value={fileInput}
            onInput={(e) => setFileInput((e.currentTarget as HTMLInputElement).value)}
          />
        </label>
        {loading && <span class="muted">loading…</span>}
      </div>
      {imports.error !== null && <p class="error">{imports.error}</p>}
      {importId === null && withReports.length === 0 && (
        <p class="muted">No recent import found conflicts (or their reports were dropped to keep the server's memory bound).</p>
      )}
      {error !== null && <p class="error">{error}</p>}
      {importId !== null && <Pager page={page} offset={offset} limit={limit} setOffset={setOffset} setLimit={setLimit} />}
      {page !== null && <PageTable page={page} />}
    </section>
  );
}
