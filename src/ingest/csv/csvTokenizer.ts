/**
 * The fast CSV path: a byte-level tokenizer that finds records and fields in a Buffer without
 * making a string, so row encoding can copy field bytes straight into the sort buffer.
 *
 * Contract:
 * - `tokenize(buf, pos, end, eof, sink, stopAt)` reports every complete record in buf[pos..end)
 *   that starts before `stopAt` to the sink and returns where it stopped: at the first incomplete
 *   record, at the first record boundary at or after `stopAt`, or at `end`.
 *   The caller keeps those bytes and calls again with more after them (or with eof = true at the
 *   end of the input, when every remaining byte belongs to a last record).
 * - A record's field i is buf[starts[i] .. ends[i]): for a quoted field, the bytes between the
 *   quotes, with `unescape[i]` = 1 when they still hold doubled quotes (consumers turn each pair
 *   into one quote; see keySpec.copyUnescaped). The arrays are reused: consumers must copy what
 *   they keep before returning from `record`.
 * - `line` is the 1-based physical line at the current position (LF bytes so far + the caller's
 *   start line); records report the line they start on.
 * - Malformed records (an unterminated quote, a quote inside an unquoted field, bytes after a
 *   closing quote) go to `sink.badRecord` and the tokenizer resumes at the next LF after the
 *   fault (an unterminated quote swallows the rest of the input: that is all it can mean).
 *
 * The dialect is the one src/ingest/csv/csvDialect.ts describes (single-byte delimiter/quote/comment, escape =
 * quote); the differential test checks record-for-record agreement with csv-parse.
 */
import { DialectBytes } from './csvDialect';

/** What the fast path offers a sink's bulk path: one object per tokenizer, refilled for each call. */
export interface SimpleRecordsOffer {
  buf: Buffer;
  /** Input ends here (buf may go on past it). */
  end: number;
  /** Where to start; on return, where the sink stopped. */
  pos: number;
  /** Records must start before this (a parse range's end), or Infinity. */
  stopAt: number;
  /** Line of the record at pos. */
  line: number;
  delimiter: number;
  /** -1: none. */
  quote: number;
  /** -1: none. */
  comment: number;
}

export interface RecordSink {
  /** One good record. `recordStart/recordEnd` delimit its raw bytes (without the line end). */
  record(
    src: Buffer,
    fieldCount: number,
    starts: Int32Array,
    ends: Int32Array,
    unescape: Uint8Array,
    line: number,
    recordStart: number,
    recordEnd: number,
  ): void;
  /** A malformed record starting at `line`; its raw bytes are src[recordStart..recordEnd). */
  badRecord(line: number, reason: string, src: Buffer, recordStart: number, recordEnd: number): void;
  /**
   * Optional bulk path: takes the fast path's records (each one line, ending with an LF before
   * `offer.end`, no quote byte) from offer.buf[offer.pos..) for as long as it can, exactly as
   * `record` would take them one by one, and stops at the first it cannot (which then goes to
   * `record`). Returns the records taken and leaves where it stopped in `offer.pos`.
   */
  takeSimpleRecords?(offer: SimpleRecordsOffer): number;
}

const LF = 0x0a;
const CR = 0x0d;
const INITIAL_FIELD_CAPACITY = 64;
/**
 * Records in a row the fast path may fail on (quotes) before this tokenize call stops trying it:
 * a run of quoted records gives up on it, a sprinkling of them does not.
 */
const FAST_PATH_MAX_MISSES = 32;
/** Records in a row the sink's bulk path may take none of before this fastRecords call stops asking it. */
const BULK_PATH_MAX_MISSES = 32;

export class CsvTokenizer {
  /** 1-based physical line at the position where tokenizing continues. */
  line: number;
  private starts = new Int32Array(INITIAL_FIELD_CAPACITY);
  private ends = new Int32Array(INITIAL_FIELD_CAPACITY);
  private unescape = new Uint8Array(INITIAL_FIELD_CAPACITY);
  private readonly delimiter: number;
  private readonly quote: number;
  private readonly comment: number;

  constructor(dialect: DialectBytes, startLine = 1) {
    this.delimiter = dialect.delimiter;
    this.quote = dialect.quote;
    this.comment = dialect.comment;
    this.line = startLine;
    this.offer = {
      buf: Buffer.alloc(0),
      end: 0,
      pos: 0,
      stopAt: 0,
      line: 0,
      delimiter: this.delimiter,
      quote: this.quote,
      comment: this.comment,
    };
  }

  private grow(): void {
    const n = this.starts.length * 2;
    const s = new Int32Array(n);
    s.set(this.starts);
    const e = new Int32Array(n);
    e.set(this.ends);
    const u = new Uint8Array(n);
    u.set(this.unescape);
    this.starts = s;
    this.ends = e;
    this.unescape = u;
  }

  /** The bulk path's offer (RecordSink.takeSimpleRecords), reused. */
  private readonly offer: SimpleRecordsOffer;
  /** Fast path: where the next quote byte is (Infinity: none before the end; -1: not searched yet). */
  private nextQuote = -1;
  /** Records the last fastRecords call reported (each is one line). */
  private fastRecordCount = 0;

  /**
   * The fast path: reports records from `pos` on for as long as each ends with an LF before the
   * next quote byte. Such a record holds no quoted field, so only delimiters split it: memchr
   * (indexOf) finds the LF and one comparison per byte finds the fields. Gives exactly what the
   * general path gives for these records (a CR right before the LF belongs to the line end);
   * empty lines, lines led by a CR or the comment byte, and records with no LF yet are left to
   * the general path. Returns where it stopped (`pos` when it took no record).
   */
  private fastRecords(buf: Buffer, bounded: Buffer, pos: number, stopAt: number, sink: RecordSink, line: number): number {
    const delimiter = this.delimiter;
    const comment = this.comment;
    let starts = this.starts;
    let ends = this.ends;
    let unescape = this.unescape;
    let nextQuote = this.nextQuote;
    const firstLine = line;
    const takeSimpleRecords = sink.takeSimpleRecords;
    let bulkMisses = 0;
    while (pos < stopAt) {
      if (takeSimpleRecords !== undefined && bulkMisses < BULK_PATH_MAX_MISSES) {
        const offer = this.offer;
        offer.buf = buf;
        offer.end = bounded.length;
        offer.pos = pos;
        offer.stopAt = stopAt;
        offer.line = line;
        const taken = takeSimpleRecords.call(sink, offer);
        if (taken === 0) bulkMisses++;
        else {
          bulkMisses = 0;
          pos = offer.pos;
          line += taken;
          if (pos >= stopAt) break;
        }
      }
      const first = buf[pos];
      if (first === LF || first === CR || first === comment) break;
      if (nextQuote < pos) {
        nextQuote = bounded.indexOf(this.quote, pos);
        if (nextQuote < 0) nextQuote = Infinity;
      }
      const lf = bounded.indexOf(LF, pos);
      if (lf < 0 || lf > nextQuote) break;
      let fieldCount = 0;
      let fieldStart = pos;
      for (;;) {
        // No capacity check per field (it costs a quarter of this loop): a store past the end of
        // a typed array is dropped, so a record with too many fields is scanned again after the
        // arrays grow, which happens once for the widest record.
        for (let j = pos; j < lf; j++) {
          if (buf[j] !== delimiter) continue;
          starts[fieldCount] = fieldStart;
          ends[fieldCount] = j;
          unescape[fieldCount] = 0;
          fieldCount++;
          fieldStart = j + 1;
        }
        if (fieldCount < starts.length) break;
        while (this.starts.length <= fieldCount) this.grow();
        starts = this.starts;
        ends = this.ends;
        unescape = this.unescape;
        fieldCount = 0;
        fieldStart = pos;
      }
      const fieldEnd = lf > fieldStart && buf[lf - 1] === CR ? lf - 1 : lf;
      starts[fieldCount] = fieldStart;
      ends[fieldCount] = fieldEnd;
      unescape[fieldCount] = 0;
      fieldCount++;
      sink.record(buf, fieldCount, starts, ends, unescape, line, pos, fieldEnd);
      pos = lf + 1;
      line++;
    }
    this.nextQuote = nextQuote;
    this.fastRecordCount = line - firstLine;
    return pos;
  }

  tokenize(buf: Buffer, pos: number, end: number, eof: boolean, sink: RecordSink, stopAt = Infinity): number {
    const delimiter = this.delimiter;
    const quote = this.quote;
    const comment = this.comment;
    let line = this.line;
    let starts = this.starts;
    let ends = this.ends;
    let unescape = this.unescape;

    // Fast path state (see fastRecords): a view that bounds indexOf to buf[0, end) (buf may be a
    // window into a larger arena), where the next quote byte is, and failed attempts so far.
    const bounded = buf.subarray(0, end);
    this.nextQuote = quote < 0 ? Infinity : -1;
    let fastMisses = 0;

    let recordLine = line;
    records: while (pos < end && pos < stopAt) {
      const recordStart = pos;
      recordLine = line;
      const first = buf[pos];

      if (fastMisses < FAST_PATH_MAX_MISSES) {
        const after = this.fastRecords(buf, bounded, pos, stopAt, sink, line);
        if (after === pos) {
          fastMisses++;
        } else {
          fastMisses = 0;
          line += this.fastRecordCount;
          pos = after;
          starts = this.starts; // fastRecords may have grown them
          ends = this.ends;
          unescape = this.unescape;
          continue records;
        }
      }
      // Empty lines are no records.
      if (first === LF) {
        pos++;
        line++;
        continue;
      }
      if (first === CR) {
        if (pos + 1 >= end) {
          if (!eof) break;
          // A lone CR at the very end is a one-field record holding "\r" (csv-parse agrees).
        } else if (buf[pos + 1] === LF) {
          pos += 2;
          line++;
          continue;
        }
      }
      if (first === comment) {
        const lf = buf.indexOf(LF, pos);
        if (lf < 0 || lf >= end) {
          if (!eof) break;
          pos = end;
          continue;
        }
        pos = lf + 1;
        line++;
        continue;
      }

      let fieldCount = 0;
      let i = pos;
      let fault: string;
      let faultAt: number;
      fields: for (;;) {
        if (fieldCount === starts.length) {
          this.grow();
          starts = this.starts;
          ends = this.ends;
          unescape = this.unescape;
        }
        if (i < end && buf[i] === quote) {
          // Quoted field: runs to the next quote that is not doubled.
          let j = i + 1;
          let escaped = 0;
          for (;;) {
            if (j >= end) {
              if (!eof) break records; // need more input (line is reset below)
              sink.badRecord(recordLine, 'unterminated quoted field (the quote opened here is never closed)', buf, recordStart, end);
              line = recordLine;
              pos = end;
              continue records;
            }
            const b = buf[j];
            if (b === quote) {
              if (j + 1 < end) {
                if (buf[j + 1] === quote) {
                  escaped = 1;
                  j += 2;
                  continue;
                }
                break;
              }
              if (!eof) break records;
              break;
            }
            if (b === LF) line++;
            j++;
          }
          starts[fieldCount] = i + 1;
          ends[fieldCount] = j;
          unescape[fieldCount] = escaped;
          fieldCount++;
          i = j + 1; // after the closing quote
          if (i >= end) {
            // eof (a non-eof end was sent back for more input above)
            sink.record(buf, fieldCount, starts, ends, unescape, recordLine, recordStart, end);
            pos = end;
            continue records;
          }
          const after = buf[i];
          if (after === delimiter) {
            i++;
            if (i >= end) {
              if (!eof) break records;
              starts[fieldCount] = end;
              ends[fieldCount] = end;
              unescape[fieldCount] = 0;
              fieldCount++;
              sink.record(buf, fieldCount, starts, ends, unescape, recordLine, recordStart, end);
              pos = end;
              continue records;
            }
            continue fields;
          }
          if (after === LF) {
            sink.record(buf, fieldCount, starts, ends, unescape, recordLine, recordStart, i);
            pos = i + 1;
            line++;
            continue records;
          }
          if (after === CR) {
            if (i + 1 >= end && !eof) break records;
            if (i + 1 < end && buf[i + 1] === LF) {
              sink.record(buf, fieldCount, starts, ends, unescape, recordLine, recordStart, i);
              pos = i + 2;
              line++;
              continue records;
            }
          }
          fault = `unexpected ${describeByte(after)} after the closing quote of field ${fieldCount}`;
          faultAt = i;
          break fields;
        }

        // Unquoted field: runs to the delimiter or the line end.
        let j = i;
        let b = 0;
        while (j < end) {
          b = buf[j];
          if (b === delimiter || b === LF || b === quote) break;
          j++;
        }
        if (j >= end) {
          if (!eof) break records;
          starts[fieldCount] = i;
          ends[fieldCount] = end;
          unescape[fieldCount] = 0;
          fieldCount++;
          sink.record(buf, fieldCount, starts, ends, unescape, recordLine, recordStart, end);
          pos = end;
          continue records;
        }
        if (b === quote) {
          fault = `quote inside unquoted field ${fieldCount + 1} (quote the whole field, or pass --quote '' if quotes are data)`;
          faultAt = j;
          break fields;
        }
        starts[fieldCount] = i;
        unescape[fieldCount] = 0;
        if (b === delimiter) {
          ends[fieldCount] = j;
          fieldCount++;
          i = j + 1;
          if (i >= end) {
            if (!eof) break records;
            if (fieldCount === starts.length) {
              this.grow();
              starts = this.starts;
              ends = this.ends;
              unescape = this.unescape;
            }
            starts[fieldCount] = end;
            ends[fieldCount] = end;
            unescape[fieldCount] = 0;
            fieldCount++;
            sink.record(buf, fieldCount, starts, ends, unescape, recordLine, recordStart, end);
            pos = end;
            continue records;
          }
          continue fields;
        }
        // LF: a CR right before it belongs to the line end.
        const fieldEnd = j > i && buf[j - 1] === CR ? j - 1 : j;
        ends[fieldCount] = fieldEnd;
        fieldCount++;
        sink.record(buf, fieldCount, starts, ends, unescape, recordLine, recordStart, fieldEnd);
        pos = j + 1;
        line++;
        continue records;
      }

      // A malformed record: report it and resume after the next LF.
      const lf = buf.indexOf(LF, faultAt);
      if (lf < 0 || lf >= end) {
        if (!eof) break records;
        sink.badRecord(recordLine, fault, buf, recordStart, end);
        pos = end;
        continue records;
      }
      // Lines inside the quoted fields before the fault were counted; count the rest to the LF.
      line = recordLine + countLf(buf, recordStart, lf) + 1;
      sink.badRecord(recordLine, fault, buf, recordStart, lf > recordStart && buf[lf - 1] === CR ? lf - 1 : lf);
      pos = lf + 1;
    }
    // `break records` leaves pos at the start of an incomplete record. LFs inside its quoted fields
    // may have been counted already; they are counted again when it is re-scanned, so go back.
    if (pos < end && pos < stopAt) line = recordLine;
    this.line = line;
    return pos;
  }
}

function countLf(buf: Buffer, from: number, to: number): number {
  let n = 0;
  let p = buf.indexOf(LF, from);
  while (p >= 0 && p < to) {
    n++;
    p = buf.indexOf(LF, p + 1);
  }
  return n;
}

function describeByte(b: number): string {
  if (b >= 0x20 && b < 0x7f) return `"${String.fromCharCode(b)}"`;
  return `byte 0x${b.toString(16).padStart(2, '0')}`;
}
