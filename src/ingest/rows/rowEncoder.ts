/**
 * Row layout and row encoding: which fields make the key and the value, and the value bytes.
 *
 * Value formats (stable; documented in docs/import.md):
 * - raw:  the value fields' bytes (quotes removed, doubled quotes undone) joined by the delimiter.
 *         A field that itself held the delimiter is not re-quoted, so raw is lossless only when no
 *         value field holds the delimiter; use json when that matters.
 * - json: one object `{"name":"field",...}` with every value field as a JSON string, keys in
 *         value-column order, names from the header or --columns, else 1-based positions ("2").
 *         Bytes >= 0x80 are copied as they are (UTF-8 input gives valid JSON); `"`, `\` and
 *         control bytes are escaped.
 *
 * Hot path contract: `encode` writes the key then the value into `out` at `pos` (the caller
 * reserved `boundBytes(recordBytes)`), copying field bytes directly; no strings, no allocation.
 * Contiguous unquoted raw value fields are copied as one span.
 */
import { IngestError } from '../../util/errors';
import { copyRange } from '../../util/copyRange';
import { KeySpec, copyUnescaped } from './keySpec';

export type ValueFormat = 'raw' | 'json';

export interface RowLayoutInit {
  /** Names of the columns (header or --columns), or null when the input has none. */
  columnNames: string[] | null;
  /** Fields each record must have. */
  fieldCount: number;
  keySpec: KeySpec;
  /** 0-based value field indexes, in value order. */
  valueFields: number[];
  valueFormat: ValueFormat;
  /** The delimiter as it joins raw values. */
  delimiter: string;
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
const BACKSLASH = 0x5c;
const HEX = Buffer.from('0123456789abcdef', 'latin1');
/** Worst-case JSON bytes for one input byte: \u00XX. */
const JSON_EXPANSION = 6;

/** Fields a record may have on the native path (native/rowParse.h, ROW_PARSE_MAX_FIELDS). */
const NATIVE_MAX_FIELDS = 256;
/** Slots of the native layout (native/ingestExports.c, parseRows). */
export const NATIVE_LAYOUT_SLOTS = 9;
export const NATIVE_LAYOUT_DELIMITER = 0;
export const NATIVE_LAYOUT_QUOTE = 1;
export const NATIVE_LAYOUT_COMMENT = 2;
const NATIVE_LAYOUT_FIELD_COUNT = 3;
const NATIVE_LAYOUT_KEY_FIELD = 4;
const NATIVE_LAYOUT_KEY_TYPE = 5;
const NATIVE_LAYOUT_VALUE_DELIMITER = 6;
const NATIVE_LAYOUT_FIXED_BYTES = 7;
export const NATIVE_LAYOUT_SOURCE = 8;

/** An encoder's rows as native/rowParse.c encodes them: the layout slots and the value fields. */
export interface NativeRowLayout {
  layout: Int32Array;
  valueFields: Int32Array;
}

export class RowEncoder {
  readonly layout: RowLayoutInit;
  /** After a successful encode: bytes of key and of value written. */
  keyBytes = 0;
  valueBytes = 0;
  /** After a failed encode: why. */
  error = '';
  private readonly delimiter: Buffer;
  private readonly valueFields: Int32Array;
  private readonly keySpec: KeySpec;
  private readonly json: boolean;
  /** JSON: pieces before each value (`{"a":"`, `","b":"`) and the closing `"}`. */
  private readonly jsonPrefixes: Buffer[] = [];
  private readonly jsonClose = Buffer.from('"}', 'latin1');
  private readonly fixedBytes: number;

  constructor(layout: RowLayoutInit) {
    this.layout = layout;
    this.delimiter = Buffer.from(layout.delimiter, 'utf8');
    this.valueFields = Int32Array.from(layout.valueFields);
    this.keySpec = layout.keySpec;
    this.json = layout.valueFormat === 'json';
    let fixed = this.delimiter.length * layout.valueFields.length;
    if (this.json) {
      layout.valueFields.forEach((f, i) => {
        const name = layout.columnNames !== null ? layout.columnNames[f] : String(f + 1);
        this.jsonPrefixes.push(Buffer.from(`${i === 0 ? '{' : '",'}${JSON.stringify(name)}:"`, 'utf8'));
      });
      fixed = this.jsonPrefixes.reduce((a, b) => a + b.length, 0) + this.jsonClose.length + 2;
    }
    this.fixedBytes = fixed;
  }

  /**
   * The layout native/rowParse.c takes over for this encoder's rows (see SortBuffer.parseRows),
   * or null when it cannot: only raw values with a one-byte delimiter and a one-column key have
   * a native path. Slots 0-2 (the dialect) and 8 (the source) are the caller's to fill.
   */
  nativeLayout(): NativeRowLayout | null {
    const { keySpec, fieldCount } = this.layout;
    if (this.json || keySpec.isComposite || this.delimiter.length !== 1) return null;
    if (fieldCount > NATIVE_MAX_FIELDS || this.valueFields.length > NATIVE_MAX_FIELDS) return null;
    const type = keySpec.types[0];
    const layout = new Int32Array(NATIVE_LAYOUT_SLOTS);
    layout[NATIVE_LAYOUT_FIELD_COUNT] = fieldCount;
    layout[NATIVE_LAYOUT_KEY_FIELD] = keySpec.fieldIndexes[0];
    layout[NATIVE_LAYOUT_KEY_TYPE] = type === 'bytes' ? 0 : type === 'int64' ? 1 : 2;
    layout[NATIVE_LAYOUT_VALUE_DELIMITER] = this.delimiter[0];
    layout[NATIVE_LAYOUT_FIXED_BYTES] = this.fixedBytes;
    return { layout, valueFields: this.valueFields };
  }

  /** Upper bound of key + value bytes for a record of `recordBytes` raw bytes. */
  boundBytes(recordBytes: number): number {
    return this.keySpec.maxEncodedBytes(recordBytes) + this.fixedBytes + (this.json ? JSON_EXPANSION * recordBytes : recordBytes);
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
      : this.encodeRaw(src, starts, ends, unescape, quote, out, keyEnd);
    this.valueBytes = valueEnd - keyEnd;
    return true;
  }

  private encodeRaw(
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
    let i = 0;
    while (i < n) {
      if (i > 0) {
        if (dl === 1) out[pos++] = delim[0];
        else pos += delim.copy(out, pos);
      }
      const f = vf[i];
      if (unescape[f] !== 0) {
        pos = copyUnescaped(src, starts[f], ends[f], quote, out, pos);
        i++;
        continue;
      }
      // Extend over following fields that sit right after this one in the input, with the
      // delimiter between them: the input bytes already are the joined value.
      const s = starts[f];
      let e = ends[f];
      let j = i + 1;
      while (j < n) {
        const g = vf[j];
        if (g !== vf[j - 1] + 1 || unescape[g] !== 0 || starts[g] !== e + dl) break;
        e = ends[g];
        j++;
      }
      pos = copyRange(src, s, e, out, pos);
      i = j;
    }
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
