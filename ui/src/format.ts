/** Numbers as the console shows them: bytes in binary units, counts with separators, durations, rates. */

const BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return '–';
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(value < 10 ? 2 : 1)} ${BYTE_UNITS[unit]}`;
}

export function formatCount(n: number): string {
  return Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '–';
}

/** 0.42 → "0.4s", 75 → "1m 15s"; null → "–". */
export function formatSeconds(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return '–';
  if (seconds < 10) return `${Math.max(0, seconds).toFixed(1)}s`;
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** An ISO time as the browser's local clock time. */
export function formatTime(iso: string | null): string {
  if (iso === null) return '–';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleTimeString('en-GB');
}

/** Seconds between two ISO times (the second null: now). */
export function secondsBetween(startIso: string, endIso: string | null): number | null {
  const start = Date.parse(startIso);
  const end = endIso === null ? Date.now() : Date.parse(endIso);
  return Number.isNaN(start) || Number.isNaN(end) ? null : (end - start) / 1000;
}
