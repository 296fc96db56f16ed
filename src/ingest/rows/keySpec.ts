/**
 * The key codec: how the `--key COL[:TYPE][,COL[:TYPE]...]` spec turns CSV fields into user keys,
 * and back into text for `get`, `scan`, reports and error messages.
 *
 * Contract: bytewise order of encoded keys is the natural order of the key tuples, so SST order
 * (RocksDB's bytewise comparator) is the order a user expects: integers numerically, tuples
 * lexicographically by component. Encoding is injective and `decode(encode(x))` gives x back.
 *
 * Encoding (stable; documented in docs/import.md):
 * - one column:
 *   - bytes:  the field's bytes as they are;
 *   - int64:  8 bytes big-endian two's complement with the sign bit flipped (so -1 < 0 < 1 bytewise);
 *   - uint64: 8 bytes big-endian.
 * - two or more columns (a tuple): the components concatenated, where
 *   - int64 / uint64 components are their 8 fixed bytes (fixed width needs no terminator);
 *   - bytes components escape 0x00 as 0x00 0xFF and end with 0x00 0x01. A shorter component
 *     sorts first because its terminator 0x00 0x01 is below both an escaped 0x00 (0x00 0xFF) and
 *     any non-zero byte, so tuple order is component order.
 *
 * Integer text is strict: an optional sign (`-` only for int64, `+` for both) then 1 or more ASCII
 * digits, no spaces, in range. Parsing works on bytes and on two 32-bit halves, never BigInt,
 * because it runs once per row on the import hot path; BigInt is used only for display.
 *
 * One spec per run: the `--key` text is parsed once (`KeySpec.parse`, by the CLI or at the
 * library boundary, `KeySpec.of`) and the object travels from there. A parsed spec encodes and
 * decodes keys given in key order; its `refs` (plain data, so they cross to parse workers) are
 * what the row encoder binds to an input's columns.
 */
import { IngestError } from '../../util/errors';
import { copyRange } from '../../util/copyRange';

export type KeyColumnType = 'bytes' | 'int64' | 'uint64';

/** One key column as the user wrote it: a column name or a 1-based position, and a type. */
export interface KeyColumnRef {
  /** 1-based position when the user gave a number, else null. */
  position: number | null;
  /** The column name when the user gave a name, else null. */
  name: string | null;
  type: KeyColumnType;
}

const TWO_POW_32 = 4294967296;
const FIXED_INT_BYTES = 8;
const ESCAPE_BYTE = 0x00;
const ESCAPED_ZERO = 0xff;
const TERMINATOR = 0x01;
const DIGIT_0 = 0x30;
const MINUS = 0x2d;
const PLUS = 0x2b;
/** Longest integer text we accept: sign plus 20 digits (uint64 max has 20). Leading zeros beyond that are refused. */
const MAX_INT_TEXT_BYTES = 21;

/**
 * Parses the `--key` spec text. Components are separated by `,`; each is `COL` or `COL:TYPE`,
 * where COL is a 1-based position (all digits) or a column name.
 */
export function parseKeySpecText(text: string): KeyColumnRef[] {
  if (text.trim() === '') throw new IngestError('USAGE', '--key must name at least one column');
  return text.split(',').map((part) => {
    const colon = part.lastIndexOf(':');
    let col = part;
    let type: KeyColumnType = 'bytes';
    if (colon >= 0) {
      const t = part.slice(colon + 1);
      if (t === 'bytes' || t === 'int64' || t === 'uint64') {
        type = t;
        col = part.slice(0, colon);
      } else {
        throw new IngestError('USAGE', `--key component "${part}": type must be bytes, int64 or uint64, got "${t}"`);
      }
    }
    if (col === '') throw new IngestError('USAGE', `--key component "${part}" names no column`);
    if (/^[0-9]+$/.test(col)) {
      const position = Number(col);
      if (position < 1) throw new IngestError('USAGE', `--key column positions are 1-based, got ${col}`);
      return { position, name: null, type };
    }
    return { position: null, name: col, type };
  });
}

/**
 * A key spec bound to the columns of an input: knows which field indexes make the key and
 * encodes/decodes keys. Immutable; safe to share.
 */
export class KeySpec {
  /** The columns the key is read from, in this spec's field layout. */
  readonly columns: readonly KeyColumnRef[];
  /**
   * The spec as the user wrote it (names or input positions), to be bound to an input's columns.
   * The same as `columns` except for a spec made by `forKeyFields`.
   */
  readonly refs: readonly KeyColumnRef[];
  /** 0-based field index of each key component, in key order. */
  readonly fieldIndexes: readonly number[];
  readonly types: readonly KeyColumnType[];
  /** Display names of the key components (column names, or positions as text). */
  readonly names: readonly string[];
  /** Last failure reason from the hot-path encoder (valid after it returns -1). */
  lastError = '';
  private readonly composite: boolean;
  private readonly typeCodes: Uint8Array; // 0 bytes, 1 int64, 2 uint64

  /**
   * @param refs the parsed `--key` spec
   * @param columnNames the input's column names (header or --columns), or null when there are none
   * @param fieldCount the number of fields per record, used to check positions
   * @param writtenRefs the spec as the user wrote it, when `refs` is a re-laid-out copy of it
   */
  constructor(
    refs: readonly KeyColumnRef[],
    columnNames: readonly string[] | null,
    fieldCount: number,
    writtenRefs: readonly KeyColumnRef[] = refs,
  ) {
    if (refs.length === 0) throw new IngestError('USAGE', '--key must name at least one column');
    this.columns = refs;
    this.refs = writtenRefs;
    const idx: number[] = [];
    const names: string[] = [];
    for (const ref of refs) {
      let i: number;
      if (ref.position !== null) {
        i = ref.position - 1;
        if (i >= fieldCount) throw new IngestError('USAGE', `--key column ${ref.position} is past the last column (${fieldCount})`);
      } else {
        if (columnNames === null)
          throw new IngestError(
            'USAGE',
            `--key names column "${ref.name}" but the input has no header (use --header or --columns, or a position)`,
          );
        i = columnNames.indexOf(ref.name as string);
        if (i < 0) throw new IngestError('USAGE', `--key column "${ref.name}" is not among the columns: ${columnNames.join(', ')}`);
      }
      if (idx.includes(i)) throw new IngestError('USAGE', `--key names column ${i + 1} twice`);
      idx.push(i);
      names.push(columnNames !== null ? columnNames[i] : String(i + 1));
    }
    this.fieldIndexes = idx;
    this.types = refs.map((r) => r.type);
    this.names = names;
    this.composite = refs.length > 1;
    this.typeCodes = Uint8Array.from(this.types.map((t) => (t === 'bytes' ? 0 : t === 'int64' ? 1 : 2)));
  }

  /** A spec over fields given in key order (for `get`/`scan` arguments): component i is field i. */
  static forKeyFields(refs: readonly KeyColumnRef[]): KeySpec {
    const positional = refs.map((r, i) => ({ position: i + 1, name: null, type: r.type }));
    return new KeySpec(
      positional,
      refs.map((r, i) => r.name ?? String(r.position ?? i + 1)),
      refs.length,
      refs,
    );
  }

  /** The `--key` spec text, parsed: a codec for keys in key order that can be bound to an input. Throws IngestError('USAGE'). */
  static parse(text: string): KeySpec {
    return KeySpec.forKeyFields(parseKeySpecText(text));
  }

  /** The library boundary: a caller's spec text is parsed here, once; a KeySpec passes through. */
  static of(spec: KeySpec | string): KeySpec {
    return typeof spec === 'string' ? KeySpec.parse(spec) : spec;
  }

  get isComposite(): boolean {
    return this.composite;
  }

  /**
   * Upper bound of the encoded size of a key whose key fields total `fieldBytes` bytes: bytes
   * components can double in a tuple (every byte 0x00) plus a 2-byte terminator each.
   */
  maxEncodedBytes(fieldBytes: number): number {
    if (!this.composite) return Math.max(fieldBytes, FIXED_INT_BYTES);
    return 2 * fieldBytes + (FIXED_INT_BYTES + 2) * this.typeCodes.length;
  }

  /**
   * Hot path: encodes the key of one record into `out` at `pos` and returns the position after
   * it, or -1 when a typed field does not parse (reason in `lastError`). Field i of the record is
   * `src[starts[i] .. ends[i])`; `unescape[i]` != 0 means the field holds doubled quote bytes
   * (`quote`) that stand for one. `out` must have room for `maxEncodedBytes` of the key fields.
   */
  encodeInto(out: Buffer, pos: number, src: Buffer, starts: Int32Array, ends: Int32Array, unescape: Uint8Array, quote: number): number {
    const n = this.typeCodes.length;
    for (let c = 0; c < n; c++) {
      const f = this.fieldIndexes[c];
      const s = starts[f];
      const e = ends[f];
      const t = this.typeCodes[c];
      if (t === 0) {
        if (!this.composite) {
          if (unescape[f] !== 0) return copyUnescaped(src, s, e, quote, out, pos);
          return copyRange(src, s, e, out, pos);
        }
        pos = writeEscapedComponent(src, s, e, unescape[f] !== 0 ? quote : -1, out, pos);
      } else {
        // Integers never hold quote bytes; a quoted integer field is still parsed by its digits.
        if (!parseIntInto(src, s, e, t === 1, out, pos)) {
          this.lastError = `key column ${this.names[c]} is not a valid ${this.types[c]}: ${JSON.stringify(src.toString('utf8', s, Math.min(e, s + 40)))}`;
          return -1;
        }
        pos += FIXED_INT_BYTES;
      }
    }
    return pos;
  }

  /** Encodes key fields given in key order (text or bytes). Throws IngestError('BAD_INPUT'). */
  encode(fields: readonly (string | Uint8Array)[]): Buffer {
    if (fields.length !== this.typeCodes.length) {
      throw new IngestError('BAD_INPUT', `key needs ${this.typeCodes.length} field(s) (${this.names.join(', ')}), got ${fields.length}`);
    }
    const bufs = fields.map((f) => (typeof f === 'string' ? Buffer.from(f, 'utf8') : Buffer.from(f.buffer, f.byteOffset, f.byteLength)));
    const total = bufs.reduce((a, b) => a + b.length, 0);
    const concat = Buffer.concat(bufs);
    // Lay the fields out as a pseudo-record whose field i is at the key's field index.
    const width = Math.max(...this.fieldIndexes) + 1;
    const starts = new Int32Array(width);
    const ends = new Int32Array(width);
    let p = 0;
    for (let c = 0; c < bufs.length; c++) {
      starts[this.fieldIndexes[c]] = p;
      p += bufs[c].length;
      ends[this.fieldIndexes[c]] = p;
    }
    const out = Buffer.allocUnsafe(this.maxEncodedBytes(total));
    const end = this.encodeInto(out, 0, concat, starts, ends, new Uint8Array(width), -1);
    if (end < 0) throw new IngestError('BAD_INPUT', this.lastError);
    return Buffer.from(out.subarray(0, end));
  }

  /**
   * Parses a key as a user types it on the command line: the text itself for a one-column key;
   * for a tuple either `a,b,c` or a JSON array `["a,b", 5]` when a component holds a comma.
   */
  encodeText(text: string): Buffer {
    if (!this.composite) return this.encode([text]);
    if (text.startsWith('[')) {
      let arr: unknown;
      try {
        arr = JSON.parse(text);
      } catch {
        throw new IngestError('BAD_INPUT', `key ${text} is not a valid JSON array`);
      }
      if (!Array.isArray(arr)) throw new IngestError('BAD_INPUT', `key ${text} is not a JSON array`);
      return this.encode(arr.map((v) => String(v)));
    }
    return this.encode(text.split(','));
  }

  /** Decodes an encoded key into its components as text. Throws IngestError('BAD_INPUT') on a key this spec cannot have made. */
  decode(key: Uint8Array): string[] {
    const out: string[] = [];
    let p = 0;
    for (let c = 0; c < this.typeCodes.length; c++) {
      const t = this.typeCodes[c];
      if (t === 0) {
        if (!this.composite) {
          out.push(displayBytes(key.subarray(0)));
          p = key.length;
          continue;
        }
        const bytes: number[] = [];
        for (;;) {
          if (p >= key.length) throw new IngestError('BAD_INPUT', `key ${hex(key)} ends inside component ${c + 1}`);
          const b = key[p++];
          if (b !== ESCAPE_BYTE) {
            bytes.push(b);
            continue;
          }
          if (p >= key.length) throw new IngestError('BAD_INPUT', `key ${hex(key)} ends inside an escape`);
          const n = key[p++];
          if (n === TERMINATOR) break;
          if (n !== ESCAPED_ZERO) throw new IngestError('BAD_INPUT', `key ${hex(key)} has a bad escape 0x00 0x${n.toString(16)}`);
          bytes.push(0);
        }
        out.push(displayBytes(Uint8Array.from(bytes)));
      } else {
        if (p + FIXED_INT_BYTES > key.length)
          throw new IngestError('BAD_INPUT', `key ${hex(key)} is too short for ${this.types[c]} component ${c + 1}`);
        const v = Buffer.from(key.buffer, key.byteOffset + p, FIXED_INT_BYTES).readBigUInt64BE(0);
        out.push(t === 1 ? (v - (1n << 63n)).toString() : v.toString());
        p += FIXED_INT_BYTES;
      }
    }
    if (p !== key.length)
      throw new IngestError(
        'BAD_INPUT',
        `key ${hex(key)} has ${key.length - p} trailing bytes after its ${this.typeCodes.length} component(s)`,
      );
    return out;
  }

  /** Display text of a key: the component for one column, else components joined by `,`. Falls back to hex. */
  format(key: Uint8Array): string {
    try {
      const parts = this.decode(key);
      return this.composite ? parts.join(',') : parts[0];
    } catch {
      return hex(key);
    }
  }
}

function hex(b: Uint8Array): string {
  return `0x${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')}`;
}

/** Text of key bytes: as UTF-8 when that is valid and printable, else 0x-prefixed hex. */
function displayBytes(b: Uint8Array): string {
  const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const s = buf.toString('utf8');
  // A lossless round trip and no control characters means the text shows the bytes faithfully.
  // eslint-disable-next-line no-control-regex
  if (Buffer.byteLength(s, 'utf8') === buf.length && !s.includes('\ufffd') && !/[\x00-\x1f\x7f]/.test(s)) return s;
  return hex(b);
}

/** Copies src[s..e) to out at pos, turning each doubled `quote` byte into one. Returns the end. */
export function copyUnescaped(src: Buffer, s: number, e: number, quote: number, out: Buffer, pos: number): number {
  for (let i = s; i < e; i++) {
    const b = src[i];
    out[pos++] = b;
    if (b === quote) i++; // skip the second of the pair
  }
  return pos;
}

/** Writes one escaped, terminated bytes component (tuple encoding). `quote` < 0: no unescaping. */
function writeEscapedComponent(src: Buffer, s: number, e: number, quote: number, out: Buffer, pos: number): number {
  for (let i = s; i < e; i++) {
    const b = src[i];
    if (b === ESCAPE_BYTE) {
      out[pos++] = ESCAPE_BYTE;
      out[pos++] = ESCAPED_ZERO;
      continue;
    }
    out[pos++] = b;
    if (b === quote) i++;
  }
  out[pos++] = ESCAPE_BYTE;
  out[pos++] = TERMINATOR;
  return pos;
}

/**
 * Parses the decimal integer in src[s..e) and writes its 8-byte order-preserving form at
 * out[pos]. int64 (`signed`) flips the sign bit of the two's complement; uint64 refuses a minus.
 * Returns false when the text is not an integer in range.
 */
export function parseIntInto(src: Uint8Array, s: number, e: number, signed: boolean, out: Uint8Array, pos: number): boolean {
  let i = s;
  let negative = false;
  if (i < e && src[i] === MINUS) {
    if (!signed) return false;
    negative = true;
    i++;
  } else if (i < e && src[i] === PLUS) {
    i++;
  }
  const digits = e - i;
  if (digits <= 0 || e - s > MAX_INT_TEXT_BYTES) return false;
  let hi = 0;
  let lo = 0;
  if (digits <= 15) {
    // Below 2^53: one double holds the value exactly.
    let v = 0;
    for (; i < e; i++) {
      const d = src[i] - DIGIT_0;
      if (d < 0 || d > 9) return false;
      v = v * 10 + d;
    }
    hi = Math.floor(v / TWO_POW_32);
    lo = v - hi * TWO_POW_32;
  } else {
    for (; i < e; i++) {
      const d = src[i] - DIGIT_0;
      if (d < 0 || d > 9) return false;
      const l = lo * 10 + d; // < 2^36, exact
      const carry = Math.floor(l / TWO_POW_32);
      lo = l - carry * TWO_POW_32;
      hi = hi * 10 + carry;
      if (hi >= TWO_POW_32) return false;
    }
  }
  if (signed) {
    if (negative) {
      // Magnitude at most 2^63.
      if (hi > 0x80000000 || (hi === 0x80000000 && lo !== 0)) return false;
      if (hi !== 0 || lo !== 0) {
        // Two's complement of the magnitude.
        lo = (~lo + 1) >>> 0;
        hi = (~hi + (lo === 0 ? 1 : 0)) >>> 0;
      }
    } else if (hi >= 0x80000000) {
      return false;
    }
    hi = (hi ^ 0x80000000) >>> 0;
  }
  out[pos] = hi >>> 24;
  out[pos + 1] = (hi >>> 16) & 0xff;
  out[pos + 2] = (hi >>> 8) & 0xff;
  out[pos + 3] = hi & 0xff;
  out[pos + 4] = lo >>> 24;
  out[pos + 5] = (lo >>> 16) & 0xff;
  out[pos + 6] = (lo >>> 8) & 0xff;
  out[pos + 7] = lo & 0xff;
  return true;
}
