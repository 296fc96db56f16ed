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
/**
 * What the general path returns instead of where the next line starts (positions are >= 0): the
 * record goes on past the input so far (NEED_MORE); a record starts here, not an empty line.
 */
const NEED_MORE = -1;
const A_RECORD = -2;

export class CsvTokenizer {
  /**
   * 1-based physical line at the position where tokenizing continues (within a record the general
   * path is parsing, the line its quoted fields have reached).
   */
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

  /** The record generalRecords is on, for the helpers that end it: where it starts, and its line. */
  private recordStart = 0;
  private recordLine = 0;

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

  /**
   * Reports the records of buf[pos, end) that start before stopAt (see the module comment): runs
   * of simple records through fastRecords while it keeps finding them, empty and comment lines
   * skipped, every other record through generalRecords. Returns where it stopped; an incomplete
   * record leaves pos and `line` at its start (it is parsed again, whole, with more input).
   */
  tokenize(buf: Buffer, pos: number, end: number, eof: boolean, sink: RecordSink, stopAt = Infinity): number {
    // Fast path state (see fastRecords): a view that bounds indexOf to buf[0, end) (buf may be a
    // window into a larger arena), where the next quote byte is, and failed attempts so far.
    const bounded = buf.subarray(0, end);
    this.nextQuote = this.quote < 0 ? Infinity : -1;
    let fastMisses = 0;
    while (pos < end && pos < stopAt) {
      if (fastMisses < FAST_PATH_MAX_MISSES) {
        const after = this.fastRecords(buf, bounded, pos, stopAt, sink, this.line);
        if (after !== pos) {
          fastMisses = 0;
          this.line += this.fastRecordCount;
          pos = after;
          continue;
        }
        fastMisses++;
      }
      const first = buf[pos];
      let next = first === LF || first === CR || first === this.comment ? this.skipEmptyOrCommentLine(buf, pos, end, eof) : A_RECORD;
      // One record while the fast path may take the next, else up to the first line it cannot parse.
      if (next === A_RECORD) {
        next = this.generalRecords(buf, pos, end, eof, sink, stopAt, fastMisses < FAST_PATH_MAX_MISSES);
        // Records before the incomplete one were taken: resume at its start.
        if (next === NEED_MORE) pos = this.recordStart;
      }
      if (next === NEED_MORE) break;
      pos = next;
    }
    return pos;
  }

  /**
   * The general path: parses the record at buf[pos] field by field and reports it, then the next
   * ones while each starts with a field (not an empty or comment line) before `end` and stopAt,
   * unless `oneStep`. A record that ends other than at an LF, or a malformed one, goes to one of
   * the helpers below, which reports it, and parsing stops after it. Returns where the next line
   * starts, its line in `line`; or NEED_MORE for a record that goes on past `end` before eof:
   * it starts at `recordStart`, on `line`.
   *
   * Why one function for the field loop, the byte loops and the step to the next record: V8
   * compiles it as one unit, with the field arrays in locals and the byte index in a register.
   * Each split measured on 30-50 MB of quoted fields: a call per record cost 9%, the quoted-field
   * scan as an (inlined) method 10-20%, per-field results through `this` 10-20%; and one byte
   * loop with every case of a quoted field in it kept j off the registers (10% on long fields).
   */
  private generalRecords(buf: Buffer, pos: number, end: number, eof: boolean, sink: RecordSink, stopAt: number, oneStep: boolean): number {
    const { delimiter, quote, comment } = this;
    let { starts, ends, unescape } = this;
    let line = this.line;
    for (;;) {
      // Record state for the helpers; `line` counts the LFs in its quoted fields.
      this.recordStart = pos;
      this.recordLine = line;
      let fieldCount = 0;
      let i = pos;
      for (;;) {
        if (fieldCount === starts.length) {
          this.grow();
          ({ starts, ends, unescape } = this);
        }
        let j = i;
        let b = 0;
        if (i < end && buf[i] === quote) {
          // To the closing quote: the next one that is not doubled.
          let escaped = 0;
          for (j = i + 1; ;) {
            let c = 0;
            while (j < end) {
              c = buf[j];
              if (c === quote || c === LF) break;
              j++;
            }
            if (j < end && c === LF) this.line++;
            else if (j + 1 < end && buf[j + 1] === quote) escaped = 1;
            else break;
            j += c === LF ? 1 : 2;
          }
          if (j + 1 >= end) return this.quotedFieldAtEnd(buf, sink, end, eof, fieldCount, i, j, escaped);
          starts[fieldCount] = i + 1;
          ends[fieldCount] = j;
          unescape[fieldCount++] = escaped;
          i = j + 1;
          b = buf[i];
          if (b === delimiter && i + 1 < end) {
            i++;
            continue;
          }
          if (b !== LF) return this.afterClosingQuote(buf, sink, end, eof, fieldCount, i);
          sink.record(buf, fieldCount, starts, ends, unescape, line, pos, i);
          break;
        }
        while (j < end) {
          b = buf[j];
          if (b === delimiter || b === LF || b === quote) break;
          j++;
        }
        starts[fieldCount] = i;
        unescape[fieldCount] = 0;
        if (j + 1 < end && b === delimiter) {
          ends[fieldCount++] = j;
          i = j + 1;
          continue;
        }
        if (j >= end || b !== LF) return this.afterUnquotedField(buf, sink, end, eof, fieldCount, i, j);
        // A CR right before the LF belongs to the line end.
        const fieldEnd = j > i && buf[j - 1] === CR ? j - 1 : j;
        ends[fieldCount++] = fieldEnd;
        sink.record(buf, fieldCount, starts, ends, unescape, line, pos, fieldEnd);
        i = j;
        break;
      }
      // The record ended at the LF at buf[i].
      pos = i + 1;
      line = this.line + 1;
      this.line = line;
      if (oneStep || pos >= end || pos >= stopAt || buf[pos] === LF || buf[pos] === CR || buf[pos] === comment) return pos;
    }
  }

  /**
   * The line at buf[pos] when it starts with an LF, a CR or the comment byte: an empty or comment
   * line is skipped (returns where the next line starts, `line` counted on); a CR not before an
   * LF starts a record (A_RECORD); NEED_MORE when that is not known yet.
   */
  private skipEmptyOrCommentLine(buf: Buffer, pos: number, end: number, eof: boolean): number {
    const first = buf[pos];
    let next: number;
    if (first === LF) next = pos + 1;
    else if (first === CR) {
      // A lone CR at the very end is a one-field record holding "\r" (csv-parse agrees).
      if (pos + 1 >= end) return eof ? A_RECORD : NEED_MORE;
      if (buf[pos + 1] !== LF) return A_RECORD;
      next = pos + 2;
    } else {
      const lf = buf.indexOf(LF, pos);
      // A comment that ends the input has no line end to count.
      if (lf < 0 || lf >= end) return eof ? end : NEED_MORE;
      next = lf + 1;
    }
    this.line++;
    return next;
  }

  // The helpers below end a record the general path could not: each returns where the next line
  // starts, with `line` counted on, or NEED_MORE with `line` back at the record's (needMore).

  /**
   * The quoted field that opens at buf[i], after `fieldCount` fields, has no closing quote with a
   * byte after it before `end`; j is where its scan stopped: at `end`, or at a quote that is the
   * input's last byte. Before eof the record needs more input; at eof that quote closes the field
   * and the record, and without it the quote is unterminated.
   */
  private quotedFieldAtEnd(
    buf: Buffer,
    sink: RecordSink,
    end: number,
    eof: boolean,
    fieldCount: number,
    i: number,
    j: number,
    escaped: number,
  ): number {
    if (!eof) return this.needMore();
    if (j >= end) {
      // The rest of the input is this record; the line stays the record's (its LFs are not counted).
      this.line = this.recordLine;
      return this.skipBadRecord(buf, sink, end, eof, 'unterminated quoted field (the quote opened here is never closed)', end);
    }
    this.starts[fieldCount] = i + 1;
    this.ends[fieldCount] = j;
    this.unescape[fieldCount] = escaped;
    return this.reportRecord(buf, sink, fieldCount + 1, end, end);
  }

  /**
   * The byte at buf[i] follows the closing quote of field `fieldCount` and is neither an LF nor a
   * delimiter with input after it: a delimiter that is the input's last byte, a CR (a line end
   * with an LF after it), or anything else, which makes the record malformed.
   */
  private afterClosingQuote(buf: Buffer, sink: RecordSink, end: number, eof: boolean, fieldCount: number, i: number): number {
    const after = buf[i];
    if (after === this.delimiter) return this.delimiterAtEnd(buf, sink, end, eof, fieldCount);
    if (after === CR) {
      if (i + 1 >= end && !eof) return this.needMore();
      if (i + 1 < end && buf[i + 1] === LF) {
        this.line++;
        return this.reportRecord(buf, sink, fieldCount, i, i + 2);
      }
    }
    return this.skipBadRecord(buf, sink, end, eof, `unexpected ${describeByte(after)} after the closing quote of field ${fieldCount}`, i);
  }

  /**
   * The unquoted field buf[i, j), after `fieldCount` fields, ends neither at an LF nor at a
   * delimiter with input after it: at the end of the input (at eof, the record's last field), at
   * a delimiter that is the input's last byte, or at a quote (a malformed record).
   */
  private afterUnquotedField(buf: Buffer, sink: RecordSink, end: number, eof: boolean, fieldCount: number, i: number, j: number): number {
    if (j >= end) return eof ? this.reportWithLastField(buf, sink, fieldCount, i, end) : this.needMore();
    if (buf[j] === this.quote) {
      const reason = `quote inside unquoted field ${fieldCount + 1} (quote the whole field, or pass --quote '' if quotes are data)`;
      return this.skipBadRecord(buf, sink, end, eof, reason, j);
    }
    this.starts[fieldCount] = i;
    this.ends[fieldCount] = j;
    this.unescape[fieldCount] = 0;
    return this.delimiterAtEnd(buf, sink, end, eof, fieldCount + 1);
  }

  /** A delimiter was the input's last byte, after `fieldCount` fields: at eof the record ends with an empty field. */
  private delimiterAtEnd(buf: Buffer, sink: RecordSink, end: number, eof: boolean, fieldCount: number): number {
    return eof ? this.reportWithLastField(buf, sink, fieldCount, end, end) : this.needMore();
  }

  /**
   * Reports the record that ends with the input (eof), after `fieldCount` fields: its last field
   * is buf[from, end), empty when from === end (the record ends with a delimiter). Returns `end`.
   */
  private reportWithLastField(buf: Buffer, sink: RecordSink, fieldCount: number, from: number, end: number): number {
    if (fieldCount === this.starts.length) this.grow();
    this.starts[fieldCount] = from;
    this.ends[fieldCount] = end;
    this.unescape[fieldCount] = 0;
    return this.reportRecord(buf, sink, fieldCount + 1, end, end);
  }

  /** Reports the record's first `fieldCount` fields, its raw bytes ending at recordEnd. Returns `next`. */
  private reportRecord(buf: Buffer, sink: RecordSink, fieldCount: number, recordEnd: number, next: number): number {
    sink.record(buf, fieldCount, this.starts, this.ends, this.unescape, this.recordLine, this.recordStart, recordEnd);
    return next;
  }

  /** The record goes on past the input so far: NEED_MORE, with `line` back at the record's. */
  private needMore(): number {
    this.line = this.recordLine;
    return NEED_MORE;
  }

  /**
   * Reports the record as malformed (`reason`, found at buf[at]) and skips it: it ends at the
   * next LF after the fault (at eof, with the input). NEED_MORE when that LF is not in yet.
   */
  private skipBadRecord(buf: Buffer, sink: RecordSink, end: number, eof: boolean, reason: string, at: number): number {
    const recordStart = this.recordStart;
    const lf = at < end ? buf.indexOf(LF, at) : -1;
    if (lf < 0 || lf >= end) {
      if (!eof) return this.needMore();
      sink.badRecord(this.recordLine, reason, buf, recordStart, end);
      return end;
    }
    // Lines inside the quoted fields before the fault were counted; count the rest to the LF.
    this.line = this.recordLine + countLf(buf, recordStart, lf) + 1;
    sink.badRecord(this.recordLine, reason, buf, recordStart, lf > recordStart && buf[lf - 1] === CR ? lf - 1 : lf);
    return lf + 1;
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
