/**
 * Where parsed records go: header handling, the column-count check, row encoding into the sort
 * buffer (spilling it when full), and bad-row accounting. Both parsers and both execution modes
 * (in-process, parse worker) feed one of these.
 *
 * Contract:
 * - The layout (key spec, value columns, expected field count) is bound once: from the header
 *   or --columns when there are names, else from the first data record's field count. Later
 *   files' headers must equal the first file's.
 * - A record with the wrong field count or an unparsable typed key is a bad row; so is every
 *   malformed record the parser reports. The first `keepBadRows` bad rows are kept (text capped
 *   at MAX_REJECT_TEXT_BYTES); when the count passes `maxBadRows`, `onTooManyBadRows` is called
 *   (it throws: an IngestError in-process, a stop signal in a worker).
 */
import { IngestError } from '../../util/errors';
import { RecordSink, SimpleRecordsOffer } from '../csv/csvTokenizer';
import { KeyColumnRef, KeySpec } from '../rows/keySpec';
import {
  NATIVE_LAYOUT_COMMENT,
  NATIVE_LAYOUT_DELIMITER,
  NATIVE_LAYOUT_QUOTE,
  NATIVE_LAYOUT_SOURCE,
  NativeRowLayout,
  RowEncoder,
  ValueFormat,
  resolveValueColumns,
} from '../rows/rowEncoder';
import { ValueSyntax } from '../rows/valueEncoding';
import { SortBuffer } from '../sort/sortBuffer';

/** Reject text kept per bad row. */
export const MAX_REJECT_TEXT_BYTES = 64 * 1024;

/** What the user asked for, before it meets the input's columns. Plain data: crosses to workers. */
export interface LayoutPlan {
  keyRefs: KeyColumnRef[];
  valueSpec: string | undefined;
  valueFormat: ValueFormat;
  /** csv: how values are joined and quoted (valueEncoding.ts); default the delimiter and `"`. */
  valueSyntax?: ValueSyntax;
  /** --columns names, or null. */
  columns: string[] | null;
  header: boolean;
  delimiter: string;
}

/** A plan bound to an input's columns. Plain data: crosses to workers. */
export interface BoundLayout {
  columnNames: string[] | null;
  fieldCount: number;
  valueFields: number[];
}

export function bindLayout(plan: LayoutPlan, headerNames: string[] | null, firstRecordFieldCount: number): BoundLayout {
  const columnNames = plan.columns ?? headerNames;
  const fieldCount = columnNames !== null ? columnNames.length : firstRecordFieldCount;
  if (columnNames !== null) {
    const seen = new Set<string>();
    for (const n of columnNames) {
      if (seen.has(n)) throw new IngestError('USAGE', `column name "${n}" appears twice (rename it with --columns)`);
      seen.add(n);
    }
  }
  try {
    const keySpec = new KeySpec(plan.keyRefs, columnNames, fieldCount);
    const valueFields = resolveValueColumns(plan.valueSpec, columnNames, fieldCount, keySpec.fieldIndexes);
    return { columnNames, fieldCount, valueFields };
  } catch (err) {
    if (err instanceof IngestError && fieldCount === 1 && plan.columns === null)
      throw new IngestError(err.code, `${err.message}${oneColumnHint(plan.delimiter, columnNames)}`, { cause: err });
    throw err;
  }
}

/** Delimiters a one-column record may really have used. */
const LIKELY_DELIMITERS: readonly string[] = [',', ';', '|', '\t'];
const SHOWN_COLUMN_CHARS = 60;

/**
 * Why the columns may not bind: the header (or first record) read as one column, which a wrong
 * --delimiter does; names a delimiter the text holds, when it holds one.
 */
function oneColumnHint(delimiter: string, header: string[] | null): string {
  const what =
    header !== null
      ? `the header parsed as one column ${JSON.stringify(header[0].slice(0, SHOWN_COLUMN_CHARS))}`
      : 'the first record parsed as one column';
  const other = header === null ? undefined : LIKELY_DELIMITERS.find((d) => d !== delimiter && header[0].includes(d));
  const suggestion =
    other === undefined ? '' : `; it holds ${JSON.stringify(other)}: try --delimiter ${other === '\t' ? "'\\t'" : `'${other}'`}`;
  return ` (${what} with --delimiter ${JSON.stringify(delimiter)}${suggestion})`;
}

export function makeEncoder(plan: LayoutPlan, bound: BoundLayout): RowEncoder {
  return new RowEncoder({
    columnNames: bound.columnNames,
    fieldCount: bound.fieldCount,
    keySpec: new KeySpec(plan.keyRefs, bound.columnNames, bound.fieldCount),
    valueFields: bound.valueFields,
    valueFormat: plan.valueFormat,
    delimiter: plan.delimiter,
    valueSyntax: plan.valueSyntax,
  });
}

export interface BadRow {
  source: number;
  line: number;
  reason: string;
  text: string;
}

export class RowSink implements RecordSink {
  /** Source id stamped on rows (a file, or a byte range of one). */
  source = 0;
  /** True while the next record is a header. */
  expectHeader = false;
  /** The header of the first file that had one. */
  headerNames: string[] | null = null;
  bound: BoundLayout | null;
  rows = 0;
  badRowCount = 0;
  readonly badRows: BadRow[] = [];
  private encoder: RowEncoder | null;
  /** The encoder's rows on the native fast path (SortBuffer.parseRows), or null when it has none. */
  private nativeRows: NativeRowLayout | null = null;

  constructor(
    private readonly plan: LayoutPlan,
    bound: BoundLayout | null,
    private readonly buffer: SortBuffer,
    private readonly quote: number,
    private readonly spill: () => void,
    private readonly maxBadRows: number,
    private readonly keepBadRows: number,
    private readonly onTooManyBadRows: (row: BadRow) => never,
    private readonly describeSource: (source: number) => string,
  ) {
    // With --columns the layout is known now: bind it, so a bad --key fails even on empty input.
    if (bound === null && plan.columns !== null) bound = bindLayout(plan, null, plan.columns.length);
    this.bound = bound;
    this.encoder = null;
    if (bound !== null) this.setEncoder(makeEncoder(plan, bound));
  }

  private setEncoder(encoder: RowEncoder): RowEncoder {
    this.encoder = encoder;
    this.nativeRows = encoder.nativeLayout();
    return encoder;
  }

  /**
   * The tokenizer's fast path hands records here in bulk (RecordSink.takeSimpleRecords): the
   * sort buffer encodes and commits them natively, exactly as `record` would, and stops at the
   * first one `record` must see (a bad row, a full buffer, a quote). Returns the records taken.
   */
  takeSimpleRecords(offer: SimpleRecordsOffer): number {
    const rows = this.nativeRows;
    if (rows === null || this.expectHeader) return 0;
    // csv: the native path refuses records holding its quote, which are the ones to quote. With
    // the input's quote disabled it refuses csv's instead; with another input quote it cannot
    // refuse both.
    const refusedQuote = rows.csvQuote >= 0 && offer.quote < 0 ? rows.csvQuote : offer.quote;
    if (rows.csvQuote >= 0 && refusedQuote !== rows.csvQuote) return 0;
    const layout = rows.layout;
    layout[NATIVE_LAYOUT_DELIMITER] = offer.delimiter;
    layout[NATIVE_LAYOUT_QUOTE] = refusedQuote;
    layout[NATIVE_LAYOUT_COMMENT] = offer.comment;
    layout[NATIVE_LAYOUT_SOURCE] = this.source;
    const taken = this.buffer.parseRows(offer.buf, offer.end, offer.stopAt, offer.pos, offer.line, rows);
    offer.pos = this.buffer.parsedUpTo;
    this.rows += taken;
    return taken;
  }

  record(
    src: Buffer,
    fieldCount: number,
    starts: Int32Array,
    ends: Int32Array,
    unescape: Uint8Array,
    line: number,
    recordStart: number,
    recordEnd: number,
  ): void {
    if (this.expectHeader) {
      this.takeHeader(src, fieldCount, starts, ends, unescape);
      return;
    }
    let encoder = this.encoder;
    if (encoder === null) {
      this.bound = bindLayout(this.plan, this.headerNames, fieldCount);
      encoder = this.setEncoder(makeEncoder(this.plan, this.bound));
    }
    const bound = encoder.boundBytes(recordEnd - recordStart);
    const buffer = this.buffer;
    if (!buffer.reserve(bound)) {
      this.spill();
      if (!buffer.reserve(bound)) {
        throw new IngestError(
          'BAD_INPUT',
          `${this.describeSource(this.source)} line ${line}: a row of ${recordEnd - recordStart} bytes does not fit in the sort buffer (raise --memory-limit)`,
        );
      }
    }
    if (!encoder.encode(src, fieldCount, starts, ends, unescape, this.quote, buffer.arena, buffer.used)) {
      this.badRecord(line, encoder.error, src, recordStart, recordEnd);
      return;
    }
    buffer.commit(encoder.keyBytes, encoder.valueBytes, this.source, line);
    this.rows++;
  }

  badRecord(line: number, reason: string, src: Buffer, recordStart: number, recordEnd: number): void {
    this.badRowCount++;
    const row: BadRow = {
      source: this.source,
      line,
      reason,
      text: src.toString('utf8', recordStart, Math.min(recordEnd, recordStart + MAX_REJECT_TEXT_BYTES)),
    };
    if (this.badRows.length < this.keepBadRows) this.badRows.push(row);
    if (this.badRowCount > this.maxBadRows) this.onTooManyBadRows(row);
  }

  private takeHeader(src: Buffer, fieldCount: number, starts: Int32Array, ends: Int32Array, unescape: Uint8Array): void {
    this.expectHeader = false;
    const names: string[] = [];
    for (let i = 0; i < fieldCount; i++) {
      let s = src.toString('utf8', starts[i], ends[i]);
      if (unescape[i] !== 0 && this.quote >= 0) {
        const q = String.fromCharCode(this.quote);
        s = s.split(q + q).join(q);
      }
      names.push(s);
    }
    if (this.headerNames === null) {
      this.headerNames = names;
      if (this.encoder === null) {
        this.bound = bindLayout(this.plan, names, names.length);
        this.setEncoder(makeEncoder(this.plan, this.bound));
      }
      return;
    }
    if (names.join('\u0000') !== this.headerNames.join('\u0000')) {
      throw new IngestError(
        'BAD_INPUT',
        `${this.describeSource(this.source)}: header ${JSON.stringify(names)} differs from the first file's ${JSON.stringify(this.headerNames)}`,
      );
    }
  }
}
