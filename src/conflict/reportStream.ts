/**
 * The conflict report as NDJSON, written as the scan finds the conflicts (`--report-format
 * ndjson`), and the report file of a check in either format (ConflictReportFile).
 *
 * Layout (one JSON object a line, UTF-8, each line ending in "\n"):
 *   {"type":"conflict", key, keyHex, existingValue, newValue, existingSeq, source, sstFile}
 *       one line per listed conflict, in key order, with the fields of the JSON report's
 *       `conflicts` entries (report.ts, docs/conflicts.md);
 *   {"type":"summary", format, version, db, snapshotSequence, sstFiles, summary}
 *       the last line: the JSON report's header fields, written once the scan is done.
 * A file without its summary line is never seen under the asked-for name: it is written under a
 * temporary name in the same directory (`<path>.<random>.tmp`), fsynced, and renamed when the
 * summary is in; a failed or interrupted check removes it (abort), so the report is complete or
 * absent, as the JSON report is.
 *
 * Memory: NdjsonReportWriter holds one buffer of REPORT_STREAM_BUFFER_BYTES and writes it to the
 * file (synchronously: the scan calls it between its slices) whenever a line would not fit; the
 * check hands it conflicts in small batches (checkSstConflicts.ts, reportSink) and keeps none
 * it has handed over. So a report of millions of conflicts (`--max-reported all`) costs about the
 * same memory as one of a hundred.
 */
import * as fs from 'fs';
import { randomBytes } from 'crypto';
import { IngestError } from '../util/errors';
import { ConflictReport, ReportedConflict, syncParentDir, writeConflictReport } from './report';

export type ReportFormat = 'json' | 'ndjson';
export const REPORT_FORMAT_CHOICES: readonly ReportFormat[] = ['json', 'ndjson'];
/** `--max-reported all`: no bound on the conflicts listed (only an NDJSON report may ask for it). */
export const MAX_REPORTED_ALL = Number.MAX_SAFE_INTEGER;
/** The NDJSON writer's buffer: lines go to the file whenever it fills. */
export const REPORT_STREAM_BUFFER_BYTES = 64 * 1024;

/** Where a check hands its listed conflicts when it streams them (CheckSstConflictsOptions.reportSink). */
export interface ConflictSink {
  write(conflict: ReportedConflict): void;
}

/** One conflict's line, without its newline. */
export function ndjsonConflictLine(conflict: ReportedConflict): string {
  return JSON.stringify({ type: 'conflict', ...conflict });
}

/** The summary line (the report's header fields), without its newline. */
export function ndjsonSummaryLine(report: ConflictReport): string {
  const { format, version, db, snapshotSequence, sstFiles, summary } = report;
  return JSON.stringify({ type: 'summary', format, version, db, snapshotSequence, sstFiles, summary });
}

/** An NDJSON report being written: conflict lines through a fixed buffer, then the summary and the rename. */
export class NdjsonReportWriter implements ConflictSink {
  /** Conflict lines written (buffered ones included). */
  conflictsWritten = 0;
  private fd: number | null;
  /** Renamed into place, or removed: nothing left to do. */
  private done = false;
  private readonly tmp: string;
  private readonly buffer = Buffer.allocUnsafe(REPORT_STREAM_BUFFER_BYTES);
  private used = 0;

  private constructor(
    readonly path: string,
    tmp: string,
    fd: number,
  ) {
    this.tmp = tmp;
    this.fd = fd;
  }

  /** Creates the temporary file beside `path`. */
  static open(path: string): NdjsonReportWriter {
    const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      return new NdjsonReportWriter(path, tmp, fs.openSync(tmp, 'wx'));
    } catch (e) {
      throw reportIoError(path, e);
    }
  }

  write(conflict: ReportedConflict): void {
    this.line(ndjsonConflictLine(conflict));
    this.conflictsWritten++;
  }

  /** Writes the summary line, syncs, and renames the file into place. */
  finish(report: ConflictReport): void {
    this.line(ndjsonSummaryLine(report));
    const fd = this.openFd();
    try {
      this.flush();
      fs.fsyncSync(fd);
      fs.closeSync(fd);
      this.fd = null;
      fs.renameSync(this.tmp, this.path);
      this.done = true;
    } catch (e) {
      this.abort();
      throw reportIoError(this.path, e);
    }
    syncParentDir(this.path);
  }

  /** Closes and removes the temporary file; does nothing once finished or aborted. */
  abort(): void {
    if (this.done) return;
    this.done = true;
    if (this.fd !== null) {
      try {
        fs.closeSync(this.fd);
      } catch {
        // Closing is all that is left to do with it; the file goes either way.
      }
      this.fd = null;
    }
    fs.rmSync(this.tmp, { force: true });
  }

  private line(text: string): void {
    const bytes = Buffer.byteLength(text) + 1;
    if (bytes > this.buffer.length - this.used) this.flush();
    if (bytes > this.buffer.length) {
      // A line longer than the buffer (a very long key): straight to the file.
      this.writeAll(Buffer.from(`${text}\n`));
      return;
    }
    this.used += this.buffer.write(text, this.used);
    this.buffer[this.used++] = 0x0a;
  }

  private flush(): void {
    if (this.used === 0) return;
    this.writeAll(this.buffer.subarray(0, this.used));
    this.used = 0;
  }

  private writeAll(bytes: Buffer): void {
    const fd = this.openFd();
    try {
      for (let done = 0; done < bytes.length;) done += fs.writeSync(fd, bytes, done, bytes.length - done);
    } catch (e) {
      this.abort();
      throw reportIoError(this.path, e);
    }
  }

  private openFd(): number {
    if (this.fd === null) throw new IngestError('INVALID_ARGUMENT', `the conflict report ${this.path} is closed already`);
    return this.fd;
  }
}

/** Writes a report already in memory (the server's, for `--server`) as NDJSON, atomically. */
export function writeConflictReportNdjson(path: string, report: ConflictReport): void {
  const writer = NdjsonReportWriter.open(path);
  try {
    for (const c of report.conflicts) writer.write(c);
    writer.finish(report);
  } finally {
    writer.abort();
  }
}

/** Writes a report already in memory in either format. */
export function writeConflictReportAs(path: string, report: ConflictReport, format: ReportFormat = 'json'): void {
  if (format === 'ndjson') writeConflictReportNdjson(path, report);
  else writeConflictReport(path, report);
}

/**
 * The report file of one check: `sink()` before the check (NDJSON: the writer the check streams
 * its conflicts into; JSON: none, the document is built in memory), `complete(report)` after it,
 * `abandon()` whatever happens (removes an unfinished NDJSON file; nothing once completed).
 */
export class ConflictReportFile {
  private writer: NdjsonReportWriter | null = null;

  constructor(
    readonly path: string,
    readonly format: ReportFormat = 'json',
  ) {}

  sink(): ConflictSink | undefined {
    if (this.format !== 'ndjson') return undefined;
    this.writer?.abort();
    this.writer = NdjsonReportWriter.open(this.path);
    return this.writer;
  }

  complete(report: ConflictReport): void {
    const writer = this.writer;
    this.writer = null;
    if (writer !== null) writer.finish(report);
    else writeConflictReportAs(this.path, report, this.format);
  }

  abandon(): void {
    this.writer?.abort();
    this.writer = null;
  }
}

/**
 * The report options that do not go together: NDJSON without a file to write, and an unbounded
 * list in a JSON report (built in memory whole). IngestError USAGE naming the options.
 */
export function checkReportOptions(
  reportPath: string | undefined,
  format: ReportFormat | undefined,
  maxReported: number | undefined,
): void {
  if (format === 'ndjson' && reportPath === undefined) throw new IngestError('USAGE', '--report-format ndjson goes with --report FILE');
  if (maxReported === MAX_REPORTED_ALL && format !== 'ndjson') {
    throw new IngestError(
      'USAGE',
      '--max-reported all needs --report FILE --report-format ndjson: a JSON report is held in memory whole, an NDJSON one is streamed',
    );
  }
}

function reportIoError(path: string, e: unknown): IngestError {
  if (e instanceof IngestError) return e;
  return new IngestError('IO', `cannot write the conflict report ${path}: ${(e as Error).message}`, { cause: e });
}
