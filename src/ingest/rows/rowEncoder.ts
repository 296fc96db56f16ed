/**
 * Row layout and row encoding: which fields make the key and the value, and the value bytes.
 *
 * Value formats (stable; valueEncoding.ts states them, docs/import.md documents them):
 * - csv:  the value fields joined by the value delimiter, a field holding the delimiter, the
 *         quote, CR or LF written in quotes with its quotes doubled (RFC 4180); every other field
 *         copied as it is, so a row none of whose value fields needs quoting is stored exactly
 *         as raw stores it. Lossless: valueColumns.ts splits it back.
 * - raw:  the value fields' bytes (quotes removed, doubled quotes undone) joined by the delimiter.
 *         A field that itself held the delimiter is not re-quoted, so raw is lossless only when no
 *         value field holds the delimiter.
 * - json: one object `{"name":"field",...}` with every value field as a JSON string, keys in
 *         value-column order, names from the header or --columns, else 1-based positions ("2").
 *         Bytes >= 0x80 are copied as they are (UTF-8 input gives valid JSON); `"`, `\` and
 *         control bytes are escaped.
 *
 * Hot path contract: `encode` writes the key then the value into `out` at `pos` (the caller
 * reserved `boundBytes(recordBytes)`), copying field bytes directly; no strings, no allocation.
 * Contiguous unquoted value fields that need no quoting are copied as one span (when the value
 * delimiter is the input's). Bound of a value: csv 2 + 2x bytes per field of x bytes (quotes,
 * every byte a doubled quote) plus the delimiters; raw x; json 6x (\u00XX) plus the names.
 */
import { IngestError } from '../../util/errors';
import { copyRange } from '../../util/copyRange';
import { KeySpec, copyUnescaped } from './keySpec';
import { ValueFormat, ValueSyntax } from './valueEncoding';

export type { ValueFormat } from './valueEncoding';

export interface RowLayoutInit {
  /** Names of the columns (header or --columns), or null when the input has none. */
  columnNames: string[] | null;
  /** Fields each record must have. */
  fieldCount: number;
  keySpec: KeySpec;
  /** 0-based value field indexes, in value order. */
  valueFields: number[];
  valueFormat: ValueFormat;
  /** The input's delimiter: raw values are joined by it. */
  delimiter: string;
  /** csv: the delimiter joining values and the quote around those that need it (default: `delimiter` and `"`). */
  valueSyntax?: ValueSyntax;
}

/** Parses `--value COLS` (names or 1-based positions, comma separated) against the columns. */
export function resolveValueColumns(
  spec: string | undefined,
  columnNames: readonly string[] | null,
  fieldCount: number,
  keyFields: readonly number[],
): number[] {
  if (spec === undefined) {
    const out: number[] = [];
    for (let i = 0; i < fieldCount; i++) if (!keyFields.includes(i)) out.push(i);
    return out;
  }
  if (spec.trim() === '') return [];
  return spec.split(',').map((col) => {
    if (/^[0-9]+$/.test(col)) {
      const p = Number(col);
      if (p < 1 || p > fieldCount) throw new IngestError('USAGE', `--value column ${col} is outside 1..${fieldCount}`);
      return p - 1;
    }
    if (columnNames === null)
      throw new IngestError('USAGE', `--value names column "${col}" but the input has no header (use --header or --columns, or positions)`);
    const i = columnNames.indexOf(col);
    if (i < 0) throw new IngestError('USAGE', `--value column "${col}" is not among the columns: ${columnNames.join(', ')}`);
    return i;
  });
}

const QUOTE_CHAR = 0x22;
const LF = 0x0a;
const CR = 0x0d;
const BACKSLASH = 0x5c;
const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** Worst-case JSON bytes for one input byte: \u00XX. */
const JSON_EXPANSION = 6;

/** Fields a record may have on the native path (native/rowParse.h, ROW_PARSE_MAX_FIELDS). */
const NATIVE_MAX_FIELDS = 256;
/** Slots of the native layout (native/ingestExports.c, parseRows). */
export const NATIVE_LAYOUT_SLOTS = 10;
export const NATIVE_LAYOUT_DELIMITER = 0;
export const NATIVE_LAYOUT_QUOTE = 1;
export const NATIVE_LAYOUT_COMMENT = 2;
const NATIVE_LAYOUT_FIELD_COUNT = 3;
const NATIVE_LAYOUT_KEY_FIELD = 4;
const NATIVE_LAYOUT_KEY_TYPE = 5;
const NATIVE_LAYOUT_VALUE_DELIMITER = 6;
const NATIVE_LAYOUT_FIXED_BYTES = 7;
export const NATIVE_LAYOUT_SOURCE = 8;
/** 0 raw, 1 csv (native/rowParse.h, ROW_PARSE_VALUE_*). */
const NATIVE_LAYOUT_VALUE_FORMAT = 9;

/** An encoder's rows as native/rowParse.c encodes them: the layout slots and the value fields. */
export interface NativeRowLayout {
  layout: Int32Array;
  valueFields: Int32Array;
  /**
   * csv: its quote byte, which the native path must refuse records on (every other record's
   * fields need no quoting there: no delimiter, no LF, and CR refused); -1 for raw.
   */
  csvQuote: number;
}

export class RowEncoder {
  readonly layout: RowLayoutInit;
  /** After a successful encode: bytes of key and of value written. */
  keyBytes = 0;
  valueBytes = 0;
  /** After a failed encode: why. */
  error = '';
  /** The delimiter joining csv and raw values. */
  private readonly delimiter: Buffer;
  private readonly valueFields: Int32Array;
  private readonly keySpec: KeySpec;
  private readonly json: boolean;
  /** csv: the quote byte; -1: raw or json. */
  private readonly csvQuote: number;
  /** The value delimiter is the input's: adjacent fields may be copied as one span. */
  private readonly spansJoin: boolean;
  /** A delimiter of 2+ bytes: periods[m] = 1 when its bytes from m on repeat its start (holdsLongDelimiter). */
  private readonly delimiterPeriods: Uint8Array;
  /** JSON: pieces before each value (`{"a":"`, `","b":"`) and the closing `"}`. */
  private readonly jsonPrefixes: Buffer[] = [];
  private readonly jsonClose = Buffer.from('"}', 'latin1');
  private readonly fixedBytes: number;
  /** Bytes of value a record byte may become: 1 raw, 2 csv, JSON_EXPANSION json. */
  private readonly bytesPerRecordByte: number;

  constructor(layout: RowLayoutInit) {
    this.layout = layout;
    const csv = layout.valueFormat === 'csv';
    const syntax = csv ? (layout.valueSyntax ?? { delimiter: layout.delimiter, quote: '"' }) : null;
    this.delimiter = Buffer.from(syntax?.delimiter ?? layout.delimiter, 'utf8');
    this.csvQuote = syntax === null ? -1 : syntax.quote.charCodeAt(0);
    this.spansJoin = syntax === null || syntax.delimiter === layout.delimiter;
    this.delimiterPeriods = new Uint8Array(this.delimiter.length);
    for (let m = 1; m < this.delimiter.length; m++)
      this.delimiterPeriods[m] = this.delimiter.subarray(m).equals(this.delimiter.subarray(0, this.delimiter.length - m)) ? 1 : 0;
    this.valueFields = Int32Array.from(layout.valueFields);
    this.keySpec = layout.keySpec;
    this.json = layout.valueFormat === 'json';
    let fixed = (this.delimiter.length + (csv ? 2 : 0)) * layout.valueFields.length;
    if (this.json) {
      layout.valueFields.forEach((f, i) => {
        const name = layout.columnNames !== null ? layout.columnNames[f] : String(f + 1);
        this.jsonPrefixes.push(Buffer.from(`${i === 0 ? '{' : '",'}${JSON.stringify(name)}:"`, 'utf8'));
      });
      fixed = this.jsonPrefixes.reduce((a, b) => a + b.length, 0) + this.jsonClose.length + 2;
    }
    this.fixedBytes = fixed;
    this.bytesPerRecordByte = this.json ? JSON_EXPANSION : csv ? 2 : 1;
  }

  /**
   * The layout native/rowParse.c takes over for this encoder's rows (see SortBuffer.parseRows),
   * or null when it cannot: only raw or csv values with a one-byte delimiter (csv: the input's)
   * and a one-column key have a native path. Slots 0-2 (the dialect) and 8 (the source) are the
   * caller's to fill.
   */
  nativeLayout(): NativeRowLayout | null {
    const { keySpec, fieldCount } = this.layout;
    if (this.json || keySpec.isComposite || this.delimiter.length !== 1 || !this.spansJoin) return null;
    if (fieldCount > NATIVE_MAX_FIELDS || this.valueFields.length > NATIVE_MAX_FIELDS) return null;
    const type = keySpec.types[0];
    const layout = new Int32Array(NATIVE_LAYOUT_SLOTS);
    layout[NATIVE_LAYOUT_FIELD_COUNT] = fieldCount;
    layout[NATIVE_LAYOUT_KEY_FIELD] = keySpec.fieldIndexes[0];
    layout[NATIVE_LAYOUT_KEY_TYPE] = type === 'bytes' ? 0 : type === 'int64' ? 1 : 2;
    layout[NATIVE_LAYOUT_VALUE_DELIMITER] = this.delimiter[0];
    layout[NATIVE_LAYOUT_FIXED_BYTES] = this.fixedBytes;
    layout[NATIVE_LAYOUT_VALUE_FORMAT] = this.csvQuote >= 0 ? 1 : 0;
    return { layout, valueFields: this.valueFields, csvQuote: this.csvQuote };
  }

  /** Upper bound of key + value bytes for a record of `recordBytes` raw bytes. */
  boundBytes(recordBytes: number): number {
    return this.keySpec.maxEncodedBytes(recordBytes) + this.fixedBytes + this.bytesPerRecordByte * recordBytes;
  }

  /** Encodes key and value of a record at out[pos]; false (with `error`) when the key does not parse. */
  encode(
    src: Buffer,
    fieldCount: number,
    starts: Int32Array,
    ends: Int32Array,
    unescape: Uint8Array,
    quote: number,
    out: Buffer,
    pos: number,
  ): boolean {
    if (fieldCount !== this.layout.fieldCount) {
      this.error = `expected ${this.layout.fieldCount} fields, got ${fieldCount}`;
      return false;
    }
    const keyEnd = this.keySpec.encodeInto(out, pos, src, starts, ends, unescape, quote);
    if (keyEnd < 0) {
      this.error = this.keySpec.lastError;
      return false;
    }
    this.keyBytes = keyEnd - pos;
    const valueEnd = this.json
      ? this.encodeJson(src, starts, ends, unescape, quote, out, keyEnd)
      : this.encodeDelimited(src, starts, ends, unescape, quote, out, keyEnd);
    this.valueBytes = valueEnd - keyEnd;
    return true;
  }

  /** csv and raw: the value fields joined by the delimiter, csv quoting those that need it. */
  private encodeDelimited(
    src: Buffer,
    starts: Int32Array,
    ends: Int32Array,
    unescape: Uint8Array,
    quote: number,
    out: Buffer,
    pos: number,
  ): number {
    const vf = this.valueFields;
    const n = vf.length;
    const delim = this.delimiter;
    const dl = delim.length;
    const csv = this.csvQuote >= 0;
    let i = 0;
    while (i < n) {
      if (i > 0) {
        if (dl === 1) out[pos++] = delim[0];
        else pos += delim.copy(out, pos);
      }
      const f = vf[i];
      const escaped = unescape[f] !== 0;
      if (csv && this.needsQuotes(src, starts[f], ends[f], escaped)) {
        pos = this.writeQuoted(src, starts[f], ends[f], escaped ? quote : -1, out, pos);
        i++;
        continue;
      }
      if (escaped) {
        pos = copyUnescaped(src, starts[f], ends[f], quote, out, pos);
        i++;
        continue;
      }
      // Extend over following fields that sit right after this one in the input, with the
      // delimiter between them: the input bytes already are the joined value.
      const s = starts[f];
      let e = ends[f];
      let j = i + 1;
      while (j < n && this.spansJoin) {
        const g = vf[j];
        if (g !== vf[j - 1] + 1 || unescape[g] !== 0 || starts[g] !== e + dl) break;
        if (csv && this.needsQuotes(src, starts[g], ends[g], false)) break;
        e = ends[g];
        j++;
      }
      pos = copyRange(src, s, e, out, pos);
      i = j;
    }
    return pos;
  }

  /**
   * csv: whether the field src[s, e) must be quoted (it holds the delimiter, the quote, CR or
   * LF). `escaped`: its bytes still hold the input's doubled quotes (the same bytes, twice).
   */
  private needsQuotes(src: Buffer, s: number, e: number, escaped: boolean): boolean {
    const q = this.csvQuote;
    if (this.delimiter.length !== 1) return escaped || this.holdsLongDelimiter(src, s, e);
    const d = this.delimiter[0];
    for (let k = s; k < e; k++) {
      const b = src[k];
      if (b === d || b === q || b === LF || b === CR) return true;
    }
    return false;
  }

  /**
   * A delimiter of 2+ bytes: whether src[s, e) holds the quote, CR, LF or the delimiter, or ends
   * with the delimiter's first m bytes where the delimiter after it would complete one (its bytes
   * from m on repeat its start: `a|` before `||`), so the first delimiter found ends the field.
   */
  private holdsLongDelimiter(src: Buffer, s: number, e: number): boolean {
    const d = this.delimiter;
    const dl = d.length;
    const q = this.csvQuote;
    for (let k = s; k < e; k++) {
      const b = src[k];
      if (b === q || b === LF || b === CR) return true;
      if (b !== d[0]) continue;
      let m = 1;
      while (m < dl && k + m < e && src[k + m] === d[m]) m++;
      if (m === dl || (k + m === e && this.delimiterPeriods[m] === 1)) return true;
    }
    return false;
  }

  /** csv: the field in quotes, its quotes doubled; `inputQuote` >= 0: skip the second of each of the input's pairs. */
  private writeQuoted(src: Buffer, s: number, e: number, inputQuote: number, out: Buffer, pos: number): number {
    const q = this.csvQuote;
    out[pos++] = q;
    for (let k = s; k < e; k++) {
      const b = src[k];
      out[pos++] = b;
      if (b === q) out[pos++] = q;
      if (b === inputQuote) k++;
    }
    out[pos++] = q;
    return pos;
  }

  private encodeJson(
    src: Buffer,
    starts: Int32Array,
    ends: Int32Array,
    unescape: Uint8Array,
    quote: number,
    out: Buffer,
    pos: number,
  ): number {
    const vf = this.valueFields;
    if (vf.length === 0) {
      out[pos++] = 0x7b; // {
      out[pos++] = 0x7d; // }
      return pos;
    }
    for (let i = 0; i < vf.length; i++) {
      const prefix = this.jsonPrefixes[i];
      pos += prefix.copy(out, pos);
      const f = vf[i];
      const skipQuotePairs = unescape[f] !== 0;
      const e = ends[f];
      for (let k = starts[f]; k < e; k++) {
        const b = src[k];
        if (b >= 0x20 && b !== QUOTE_CHAR && b !== BACKSLASH) {
          out[pos++] = b;
          if (skipQuotePairs && b === quote) k++;
          continue;
        }
        out[pos++] = BACKSLASH;
        if (b === QUOTE_CHAR || b === BACKSLASH) {
          out[pos++] = b;
          if (skipQuotePairs && b === quote) k++;
        } else if (b === 0x0a) {
          out[pos++] = 0x6e; // n
        } else if (b === 0x0d) {
          out[pos++] = 0x72; // r
        } else if (b === 0x09) {
          out[pos++] = 0x74; // t
        } else {
          out[pos++] = 0x75; // u
          out[pos++] = 0x30;
          out[pos++] = 0x30;
          out[pos++] = HEX[b >> 4];
          out[pos++] = HEX[b & 15];
        }
      }
    }
    pos += this.jsonClose.copy(out, pos);
    return pos;
  }
}
