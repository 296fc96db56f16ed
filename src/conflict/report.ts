/**
 * The conflict report: what a conflict check found, as a versioned JSON document
 * (docs/conflicts.md documents every field; bump CONFLICT_REPORT_VERSION on any incompatible
 * change, add fields freely).
 *
 * Document layout (version 1):
 *   { format: "sst-ingest.conflict-report", version: 1,
 *     db, snapshotSequence, sstFiles: [path...],
 *     summary: { sstKeys, new, unchanged, conflicts, engineKeysVisited, strategy, scanSeconds, ... },
 *     conflicts: [{ key, keyHex, existingValue, newValue, existingSeq, source, sstFile }] }
 * Counts in the summary are exact; the conflicts list holds the first `maxReported` conflicts in
 * key order. A value is shown as UTF-8 text when its (shown part) is valid, printable UTF-8, else
 * as hex; only its first VALUE_SHOWN_MAX_BYTES bytes are shown, with its full size beside.
 *
 * The report is written atomically (temp file, fsync, rename), so a reader never sees half. The
 * same report as NDJSON, streamed while the scan runs (one line a conflict, the header last), is
 * reportStream.ts's.
 */
import * as fs from 'fs';
import * as nodePath from 'path';
import { randomBytes } from 'crypto';
import { IngestError } from '../util/errors';
import type { AdaptiveScanStats } from './scanStrategy';
import type { UnchangedRuns } from './unchangedRuns';

export const CONFLICT_REPORT_FORMAT = 'sst-ingest.conflict-report';
export const CONFLICT_REPORT_VERSION = 1;
/** Bytes of a value a report shows; longer values are cut (their full size is still given). */
export const VALUE_SHOWN_MAX_BYTES = 256;
/** Default bound on the conflicts a report lists (the counts stay exact). */
export const DEFAULT_MAX_REPORTED = 100;

export type ConflictStrategy = 'auto' | 'seek' | 'get';

/** Where a new row came from: its input file and 1-based line. */
export interface RowSource {
  file: string;
  line: number;
}

export interface ShownValue {
  /** How `data` encodes the shown bytes. */
  encoding: 'utf8' | 'hex';
  data: string;
  /** The value's full size. */
  sizeBytes: number;
  /** True when only the first VALUE_SHOWN_MAX_BYTES bytes (or fewer, at a UTF-8 boundary) are shown. */
  truncated: boolean;
}

export interface ReportedConflict {
  /** Display text of the key (the import's key spec when known, else UTF-8 or 0x-hex). */
  key: string;
  keyHex: string;
  existingValue: ShownValue;
  newValue: ShownValue;
  /** Sequence number of the engine's live version. */
  existingSeq: number;
  /** Input file and line of the new row, when the caller can say. */
  source: RowSource | null;
  /** The SST file holding the new row. */
  sstFile: string;
}

export interface ConflictSummary {
  /** Keys in the new SSTs (= new + unchanged + conflicts). */
  sstKeys: number;
  new: number;
  unchanged: number;
  conflicts: number;
  /** Engine keys the scan compared with SST keys (seek: iterator positions; get: keys found). */
  engineKeysVisited: number;
  /** The strategy that ran. */
  strategy: 'seek' | 'get';
  /** The strategy asked for (auto chooses between seek and get). */
  strategyRequested: ConflictStrategy;
  strategyReason: string;
  /** Whether engine seeks passed trySeekUsingNext (always, unless a benchmark turns it off). */
  trySeekUsingNext: boolean;
  /** True when one seek showed the engine holds nothing in the SSTs' key range. */
  emptySpan: boolean;
  /** The engine's table bytes in the SSTs' key range (estimated; null when not needed). */
  engineBytesInSpan: number | null;
  /** What `auto`'s adaptive scan did, chunk by chunk (null for seek, get, or an empty span). */
  adaptive: AdaptiveScanStats | null;
  sstBytes: number;
  /** Key comparisons made by the scan (engine and SST iterators included). */
  keyComparisons: number;
  /** Seconds of the scan step alone (not opening files, choosing, or resolving sources). */
  scanSeconds: number;
  /** CPU seconds (user + system, whole process) of the scan step: unlike scanSeconds, not inflated by a busy machine. */
  scanCpuSeconds: number;
  /**
   * CPU seconds of the thread that ran the scan step, alone: V8's background compiler and GC
   * threads (working for whatever ran before, or after a deoptimization) are not counted, so
   * this is the steadiest figure for comparing strategies. Null without the native addon.
   */
  scanThreadCpuSeconds: number | null;
  /** Conflicts listed (at most maxReported): in `conflicts`, or the lines of a streamed (NDJSON) report. */
  conflictsReported: number;
  maxReported: number;
  /**
   * The most listed conflicts the check held in memory at once: conflictsReported for a JSON
   * report; a streamed one hands them to its file in batches (reportStream.ts), so a few thousand at most.
   */
  conflictsHeldMax: number;
}

export interface ConflictReport {
  format: typeof CONFLICT_REPORT_FORMAT;
  version: typeof CONFLICT_REPORT_VERSION;
  /** The engine's directory. */
  db: string;
  /** The sequence number the scan read at. */
  snapshotSequence: number;
  sstFiles: string[];
  summary: ConflictSummary;
  /** The listed conflicts; when the check streamed them to a sink (reportStream.ts), only the first, for messages. */
  conflicts: ReportedConflict[];
  /**
   * Every conflicting key in key order, when the check was asked to collect them (the `skip`
   * policy needs them all); not part of the JSON document.
   */
  conflictingKeys: Buffer[] | null;
  /** The runs of unchanged entries, when the check was asked to keep them; not part of the JSON document. */
  unchangedRuns?: UnchangedRuns | null;
}

/** The JSON document of a report (everything but the collected keys). */
export function conflictReportJson(report: ConflictReport): Omit<ConflictReport, 'conflictingKeys' | 'unchangedRuns'> {
  const { conflictingKeys: _omitted, unchangedRuns: _runs, ...doc } = report;
  void _omitted;
  void _runs;
  return doc;
}

/** Writes the report's JSON document to `path` atomically. */
export function writeConflictReport(path: string, report: ConflictReport): void {
  const text = `${JSON.stringify(conflictReportJson(report), null, 2)}\n`;
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const fd = fs.openSync(tmp, 'w');
    try {
      fs.writeSync(fd, text);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, path);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw new IngestError('IO', `cannot write the conflict report ${path}: ${(e as Error).message}`, { cause: e });
  }
  syncParentDir(path);
}

/** fsyncs the directory holding `path` (after a rename into it), where the file system allows. */
export function syncParentDir(path: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(nodePath.dirname(nodePath.resolve(path)), 'r');
    fs.fsyncSync(fd);
  } catch {
    // Some file systems refuse to sync a directory; the rename itself has happened.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

const utf8Strict = new TextDecoder('utf-8', { fatal: true });

/**
 * How a report shows a value (or any bytes): the first VALUE_SHOWN_MAX_BYTES bytes as UTF-8 when
 * they decode and print (no control characters but tab, LF and CR), else as hex. A cut UTF-8 text
 * ends at the last whole character, so the shown text is always valid.
 */
export function showValue(bytes: Uint8Array, sizeBytes = bytes.length): ShownValue {
  let end = Math.min(bytes.length, VALUE_SHOWN_MAX_BYTES);
  const truncated = sizeBytes > end;
  const text = printableUtf8(bytes, truncated ? utf8CutPoint(bytes, end) : end);
  if (text !== null) return { encoding: 'utf8', data: text, sizeBytes, truncated };
  end = Math.min(bytes.length, VALUE_SHOWN_MAX_BYTES);
  return { encoding: 'hex', data: Buffer.from(bytes.buffer, bytes.byteOffset, end).toString('hex'), sizeBytes, truncated };
}

/** Display text of a key: printable UTF-8 as itself, else 0x-prefixed hex. */
export function showKey(key: Uint8Array): string {
  const text = printableUtf8(key, key.length);
  return text !== null ? text : `0x${Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('hex')}`;
}

/** bytes[0, end) as text when valid UTF-8 without control characters (tab, LF, CR allowed); else null. */
function printableUtf8(bytes: Uint8Array, end: number): string | null {
  let ascii = true;
  for (let i = 0; i < end; i++) {
    const b = bytes[i];
    if (b >= 0x80) ascii = false;
    else if ((b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) || b === 0x7f) return null;
  }
  if (ascii) return Buffer.from(bytes.buffer, bytes.byteOffset, end).toString('latin1');
  let text: string;
  try {
    text = utf8Strict.decode(bytes.subarray(0, end));
  } catch {
    return null;
  }
  // C1 controls (U+0080..U+009F) do not print either.
  // eslint-disable-next-line no-control-regex
  return /[\u0080-\u009f]/.test(text) ? null : text;
}

/** The largest cut <= end that does not split a UTF-8 sequence (looks only at bytes[0, end)). */
function utf8CutPoint(bytes: Uint8Array, end: number): number {
  // Find the lead byte of the last character starting before `end`; cut before it if it is incomplete.
  let j = end - 1;
  while (j >= 0 && end - j <= 4 && (bytes[j] & 0xc0) === 0x80) j--;
  if (j < 0 || bytes[j] < 0x80) return end;
  const lead = bytes[j];
  const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return j + length <= end ? end : j;
}
