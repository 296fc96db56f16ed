/**
 * Drives a CSV parser over an input: the file preamble (byte-order mark, skipped lines), the
 * read buffer, and which parser runs.
 *
 * - `readCsvFast`: the byte tokenizer over a ByteSource (file, stdin, .gz), whole input.
 * - `readCsvRange`: the byte tokenizer over one byte range of a regular file (the unit a parse
 *   worker runs): starts at a record boundary, reports every record that starts before
 *   `stopAtOffset`, reading past it to finish the last one, and says where it stopped, so the
 *   caller can check it against where the next range started.
 * - `readCsvWithCsvParse`: csv-parse, for dialects the tokenizer does not cover.
 *
 * Read buffer: starts at `readBufferBytes`, holds the unfinished record plus the next read, and
 * doubles only while one record does not fit, up to MAX_RECORD_BYTES; a longer record is a
 * BAD_INPUT error (it is almost always an unterminated quote).
 */
import * as fs from 'fs';
import { Readable } from 'stream';
import type { CsvError, Options } from 'csv-parse';
import { IngestError } from '../../util/errors';
import { CsvDialect, dialectBytes } from './csvDialect';
import { CsvTokenizer, RecordSink } from './csvTokenizer';
import { ByteSource } from './inputSource';
import { onFirstUse } from '../../util/onFirstUse';

/** csv-parse, loaded on first use: only the csv-parse dialects need it (see docs/import.md, Parsing). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const csvParseModule = onFirstUse(() => require('csv-parse') as typeof import('csv-parse'));

/** Longest record (raw bytes) either path accepts. */
export const MAX_RECORD_BYTES = 64 << 20;
export const DEFAULT_READ_BUFFER_BYTES = 1 << 20;
const LF = 0x0a;
const CR = 0x0d;
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * A region of a caller's buffer lent to the reader as its read window. The import lends the front
 * of its sort buffer's memory, so copying a value from the window into the sort buffer is a
 * `copyWithin` inside one Buffer (several times cheaper than a copy between two Buffers).
 */
export interface BufferRegion {
  buf: Buffer;
  start: number;
  end: number;
}

/** The window over the input: bytes [start, end) of buf are unparsed; the window is buf[lo, hi). */
class Window {
  buf: Buffer;
  lo: number;
  hi: number;
  start: number;
  end: number;
  /** Input offset of buf[lo]. */
  base = 0;
  constructor(bytes: number, region?: BufferRegion) {
    if (region !== undefined) {
      this.buf = region.buf;
      this.lo = region.start;
      this.hi = region.end;
    } else {
      this.buf = Buffer.allocUnsafe(bytes);
      this.lo = 0;
      this.hi = bytes;
    }
    this.start = this.end = this.lo;
  }
  /** Moves the unparsed bytes to the front and makes room to read; throws past MAX_RECORD_BYTES. */
  makeRoom(what: () => string): void {
    if (this.start > this.lo) {
      this.buf.copyWithin(this.lo, this.start, this.end);
      this.base += this.start - this.lo;
      this.end -= this.start - this.lo;
      this.start = this.lo;
    }
    if (this.end < this.hi) return;
    const size = this.hi - this.lo;
    if (size >= MAX_RECORD_BYTES) {
      throw new IngestError('BAD_INPUT', `${what()}: a record is longer than ${MAX_RECORD_BYTES} bytes (an unterminated quote?)`);
    }
    // A record longer than the window: move to a bigger buffer of our own.
    const bigger = Buffer.allocUnsafe(Math.min(size * 2, MAX_RECORD_BYTES));
    this.buf.copy(bigger, 0, this.lo, this.end);
    this.end -= this.lo;
    this.start = 0;
    this.lo = 0;
    this.hi = bigger.length;
    this.buf = bigger;
  }
}

/** Preamble state: drop a BOM at offset 0, then skip whole lines. */
class Preamble {
  private bomChecked = false;
  constructor(private linesToSkip: number) {}
  /** Advances w.start past the preamble; true when it is done (parsing may begin). */
  consume(w: Window, eof: boolean): boolean {
    if (!this.bomChecked) {
      if (w.end - w.start < BOM.length && !eof) return false;
      if (w.end - w.start >= BOM.length && w.buf.compare(BOM, 0, BOM.length, w.start, w.start + BOM.length) === 0) w.start += BOM.length;
      this.bomChecked = true;
    }
    while (this.linesToSkip > 0) {
      const lf = w.buf.indexOf(LF, w.start);
      if (lf < 0 || lf >= w.end) {
        w.start = w.end; // part of a skipped line: drop it
        if (eof) this.linesToSkip = 0;
        return eof;
      }
      w.start = lf + 1;
      this.linesToSkip--;
    }
    return true;
  }
}

export interface ReadOptions {
  readBufferBytes?: number;
  /** Use this region as the read window (readBufferBytes is then ignored). */
  window?: BufferRegion;
  /** Called after each read with the source's consumed bytes (progress). */
  onProgress?: (consumedBytes: number) => void;
}

/** Parses a whole input with the byte tokenizer. Returns the number of physical lines seen. */
export async function readCsvFast(source: ByteSource, dialect: CsvDialect, sink: RecordSink, opts: ReadOptions = {}): Promise<number> {
  const w = new Window(opts.readBufferBytes ?? DEFAULT_READ_BUFFER_BYTES, opts.window);
  const preamble = new Preamble(dialect.skipLines);
  const tokenizer = new CsvTokenizer(dialectBytes(dialect), dialect.skipLines + 1);
  let inPreamble = true;
  let eof = false;
  while (!eof) {
    w.makeRoom(() => `${source.name} line ${tokenizer.line}`);
    const n = await source.read(w.buf, w.end, w.hi - w.end);
    if (n === 0) eof = true;
    w.end += n;
    opts.onProgress?.(source.consumedBytes());
    if (inPreamble) {
      if (!preamble.consume(w, eof)) continue;
      inPreamble = false;
    }
    w.start = tokenizer.tokenize(w.buf, w.start, w.end, eof, sink);
  }
  return tokenizer.line - 1;
}

export interface RangeResult {
  /** File offset where parsing stopped: the first record boundary at or after stopAtOffset (or the end of the file). */
  endOffset: number;
  /** LF bytes between the start offset and endOffset. */
  lineFeeds: number;
}

/**
 * Parses the records of `fd` that start in [startOffset, stopAtOffset), startOffset being a record
 * boundary (by the caller's belief; see module comment). Lines are reported relative: the record
 * at startOffset is on line `startLine`.
 */
export function readCsvRange(
  fd: number,
  fileSizeBytes: number,
  startOffset: number,
  stopAtOffset: number,
  dialect: CsvDialect,
  sink: RecordSink,
  startLine: number,
  window: BufferRegion | undefined,
  onProgress?: (bytes: number) => void,
): RangeResult {
  const w = new Window(DEFAULT_READ_BUFFER_BYTES, window);
  w.base = startOffset;
  const tokenizer = new CsvTokenizer(dialectBytes(dialect), startLine);
  let fileOffset = startOffset;
  let eof = fileOffset >= fileSizeBytes;
  for (;;) {
    const stopInWindow = stopAtOffset - w.base + w.lo;
    if (w.start >= stopInWindow || (eof && w.start >= w.end)) break;
    if (!eof) {
      w.makeRoom(() => `line ${tokenizer.line} (relative to offset ${startOffset})`);
      const n = fs.readSync(fd, w.buf, w.end, w.hi - w.end, fileOffset);
      fileOffset += n;
      w.end += n;
      if (n === 0 || fileOffset >= fileSizeBytes) eof = true;
      onProgress?.(n);
    }
    w.start = tokenizer.tokenize(w.buf, w.start, w.end, eof, sink, stopAtOffset - w.base + w.lo);
  }
  return { endOffset: w.base + (w.start - w.lo), lineFeeds: tokenizer.line - startLine };
}

/**
 * LF counts by stream offset over the chunks handed to csv-parse, for records it reports by
 * end offset. Offsets asked for only grow, so chunks behind the cursor are dropped; the queue
 * holds what csv-parse has been given but not yet reported on (bounded by stream buffering).
 */
class LineFeedIndex {
  private readonly chunks: Buffer[] = [];
  private chunkBase = 0; // stream offset of chunks[0]
  private cursor = 0; // stream offset counted up to
  private lineFeeds = 0; // LFs in [0, cursor)
  add(chunk: Buffer): void {
    this.chunks.push(chunk);
  }
  /** LFs in stream bytes [0, offset). */
  lineFeedsBefore(offset: number): number {
    while (this.cursor < offset && this.chunks.length > 0) {
      const c = this.chunks[0];
      const from = this.cursor - this.chunkBase;
      const to = Math.min(c.length, offset - this.chunkBase);
      for (let p = c.indexOf(LF, from); p >= 0 && p < to; p = c.indexOf(LF, p + 1)) this.lineFeeds++;
      this.cursor = this.chunkBase + to;
      if (to === c.length) {
        this.chunks.shift();
        this.chunkBase += c.length;
      }
    }
    return this.lineFeeds;
  }
  /** The stream byte before `offset` (at offset > 0, not yet passed by the cursor). */
  byteBefore(offset: number): number {
    let base = this.chunkBase;
    for (const c of this.chunks) {
      if (offset - 1 < base + c.length) return c[offset - 1 - base];
      base += c.length;
    }
    return -1;
  }
}

/**
 * Parses a whole input with csv-parse, reporting records to the same sink. Lines: csv-parse's
 * own line counter drifts (it counts a CRLF inside quotes, or ending a comment, as two lines), so
 * a record's line comes from its end offset (info.bytes): the LFs before it, less the LFs inside
 * the record. Malformed records are reported at csv-parse's line, corrected for the CRLFs seen
 * in records so far (approximate), and parsing goes on where csv-parse resumes (which may differ
 * from the tokenizer's "next line").
 */
export async function readCsvWithCsvParse(
  source: ByteSource,
  dialect: CsvDialect,
  sink: RecordSink,
  opts: ReadOptions = {},
): Promise<number> {
  const records = new CsvParseRecords(sink, dialect.skipLines);
  const parser = csvParseModule().parse(csvParseOptions(dialect, (err, raw) => records.skip(err, raw)));
  const input = Readable.from(csvParseInput(source, dialect, opts, records.lineFeeds));
  input.on('error', (e) => parser.destroy(e)); // pipe() does not forward errors
  try {
    for await (const item of input.pipe(parser)) {
      const { record, info } = item as { record: string[]; info: { bytes: number } };
      records.add(record, info.bytes);
    }
  } catch (e) {
    throw records.failure(e, source.name);
  }
  return records.lastLine;
}

/** csv-parse's options for `dialect`, with `onSkip` called for each malformed record. */
function csvParseOptions(dialect: CsvDialect, onSkip: (err: CsvError | undefined, raw: string | undefined) => undefined): Options {
  return {
    delimiter: dialect.delimiter,
    quote: dialect.quote === '' ? false : dialect.quote,
    escape: dialect.escape === '' ? null : dialect.escape,
    comment: dialect.comment === '' ? undefined : dialect.comment,
    comment_no_infix: true,
    record_delimiter: ['\r\n', '\n'],
    skip_empty_lines: true,
    relax_column_count: true,
    // Strings, not Buffers: csv-parse 7 fails to build its own error objects with encoding null.
    // Fields go back to UTF-8 bytes; invalid UTF-8 becomes U+FFFD on this path only.
    encoding: 'utf8',
    info: true,
    raw: true,
    max_record_size: MAX_RECORD_BYTES,
    skip_records_with_error: true,
    on_skip: onSkip,
  };
}

/**
 * The input's chunks for csv-parse, past its preamble (byte-order mark, skipped lines), each a
 * copy (csv-parse may hold on to it) also added to `lineFeeds` for the records' lines.
 */
async function* csvParseInput(
  source: ByteSource,
  dialect: CsvDialect,
  opts: ReadOptions,
  lineFeeds: LineFeedIndex,
): AsyncGenerator<Buffer> {
  const w = new Window(opts.readBufferBytes ?? DEFAULT_READ_BUFFER_BYTES);
  const preamble = new Preamble(dialect.skipLines);
  let eof = false;
  let inPreamble = true;
  while (!eof) {
    w.start = 0;
    w.end = 0;
    const n = await source.read(w.buf, 0, w.buf.length);
    if (n === 0) eof = true;
    w.end = n;
    opts.onProgress?.(source.consumedBytes());
    if (inPreamble) {
      if (!preamble.consume(w, eof)) continue;
      inPreamble = false;
    }
    if (w.end > w.start) {
      const chunk = Buffer.from(w.buf.subarray(w.start, w.end));
      lineFeeds.add(chunk);
      yield chunk;
    }
  }
}

/**
 * The csv-parse path's side of the sink: each record's fields (strings) back to bytes in a
 * scratch buffer with its line (see readCsvWithCsvParse), each malformed record reported, and
 * what a failure is reported as.
 */
class CsvParseRecords {
  /** LF counts of the input handed to csv-parse. */
  readonly lineFeeds = new LineFeedIndex();
  /** The line after the last record. */
  lastLine: number;
  /** CRLFs seen inside records: csv-parse's line counter counts each as two lines. */
  private crlfSurplus = 0;
  /** What the sink threw from badRecord (csv-parse wraps errors thrown in on_skip). */
  private badError: unknown = null;
  private scratch = Buffer.allocUnsafe(4096);
  private starts = new Int32Array(64);
  private ends = new Int32Array(64);
  private unescape = new Uint8Array(64);

  constructor(
    private readonly sink: RecordSink,
    /** Lines before the first record's (the skipped lines). */
    private readonly lineOffset: number,
  ) {
    this.lastLine = lineOffset;
  }

  /** Reports the record csv-parse gave as `texts`, ending at input offset `endOffset` (info.bytes: after its line end, if any). */
  add(texts: string[], endOffset: number): void {
    const fields = texts.map((t) => Buffer.from(t, 'utf8'));
    if (fields.length > this.starts.length) {
      this.starts = new Int32Array(fields.length * 2);
      this.ends = new Int32Array(fields.length * 2);
      this.unescape = new Uint8Array(fields.length * 2);
    }
    let total = 0;
    let innerLineFeeds = 0;
    for (const f of fields) {
      total += f.length;
      for (let p = f.indexOf(LF); p >= 0; p = f.indexOf(LF, p + 1)) {
        innerLineFeeds++;
        if (p > 0 && f[p - 1] === CR) this.crlfSurplus++;
      }
    }
    if (total > this.scratch.length) this.scratch = Buffer.allocUnsafe(Math.max(total, this.scratch.length * 2));
    let p = 0;
    for (let i = 0; i < fields.length; i++) {
      this.starts[i] = p;
      p += fields[i].copy(this.scratch, p);
      this.ends[i] = p;
    }
    const endsWithLf = this.lineFeeds.byteBefore(endOffset) === LF;
    const lineFeeds = this.lineFeeds.lineFeedsBefore(endOffset) - (endsWithLf ? 1 : 0);
    this.lastLine = this.lineOffset + 1 + lineFeeds;
    const line = this.lastLine - innerLineFeeds;
    this.sink.record(this.scratch, fields.length, this.starts, this.ends, this.unescape, line, 0, p);
  }

  /** csv-parse's on_skip: reports a malformed record at csv-parse's line, less the CRLF surplus so far. */
  skip(err: CsvError | undefined, raw: string | undefined): undefined {
    try {
      const text = Buffer.from(raw ?? '', 'utf8');
      const lines = (err as (CsvError & { lines?: number }) | undefined)?.lines ?? 0;
      this.sink.badRecord(this.lineOffset + lines - this.crlfSurplus, err?.message ?? 'malformed record', text, 0, text.length);
    } catch (e) {
      this.badError = e;
      throw e;
    }
    return undefined;
  }

  /** What to throw for `e`, thrown while parsing `name`: the sink's own error, an IngestError as is, else BAD_INPUT. */
  failure(e: unknown, name: string): unknown {
    if (this.badError !== null) return this.badError;
    if (e instanceof IngestError) return e;
    const err = e as Error & { code?: string; lines?: number };
    return new IngestError('BAD_INPUT', `${name} line ${this.lineOffset + (err.lines ?? 0)}: ${err.message}`, { cause: e });
  }
}
