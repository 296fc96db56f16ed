/**
 * A stored value read back as columns, by the value encoding its database records
 * (valueEncoding.ts; `ingest get|scan --as-columns`). The inverse of RowEncoder's value formats:
 *
 * - csv: split at each delimiter outside quotes; a field that starts with the quote runs to the
 *   quote not followed by another (each doubled quote inside is one), and must be followed by
 *   the delimiter or the end. Exact: splitting what csv wrote gives back the fields' bytes.
 * - json: the object's names and string values in the order written (not JSON.parse's order,
 *   which puts integer-like names such as "2" first), each value the exact bytes encoded (read as
 *   latin1, so bytes >= 0x80 that are not UTF-8 come back as they were).
 * - raw: split at every delimiter. Lossy: a field that held the delimiter reads as two, so the
 *   result says `lossy` and names the fields by position when their count is not the columns'.
 *
 * Names: json's own; else the recorded columns when there are as many fields, else 1-based
 * positions in the value ("1", "2", ...). A value that does not parse in its format (a value `put` by hand, say) gives
 * `columns: null` and the problem in words; nothing is thrown.
 */
import { ValueEncoding, ValueSyntax } from './valueEncoding';

export interface ValueColumn {
  name: string;
  value: Buffer;
}

export interface ValueColumns {
  /** In value order; null when the value does not parse in its format (`problem` says why). */
  columns: ValueColumn[] | null;
  problem: string | null;
  /** raw: fields were split at every delimiter, and one that held the delimiter reads as two. */
  lossy: boolean;
}

/** Splits a stored value by `encoding` (see the module comment). */
export function splitValue(value: Buffer, encoding: ValueEncoding): ValueColumns {
  const lossy = encoding.format === 'raw';
  if (encoding.format === 'json') {
    const object = splitJsonValue(value);
    if (typeof object === 'string') return { columns: null, problem: object, lossy };
    return { columns: object.fields.map((v, i) => ({ name: object.names[i], value: v })), problem: null, lossy };
  }
  let fields: Buffer[] | string;
  if (encoding.columns !== null && encoding.columns.length === 0 && value.length === 0) fields = [];
  else if (encoding.format === 'raw') fields = splitRawValue(value, encoding.delimiter as string);
  else fields = splitCsvValue(value, { delimiter: encoding.delimiter as string, quote: encoding.quote as string });
  if (typeof fields === 'string') return { columns: null, problem: fields, lossy };
  const names = encoding.columns !== null && encoding.columns.length === fields.length ? encoding.columns : null;
  return { columns: fields.map((v, i) => ({ name: names?.[i] ?? String(i + 1), value: v })), problem: null, lossy };
}

/** raw: the value split at every delimiter. */
export function splitRawValue(value: Buffer, delimiter: string): Buffer[] {
  const d = Buffer.from(delimiter, 'utf8');
  const fields: Buffer[] = [];
  let pos = 0;
  for (let at = value.indexOf(d, pos); at >= 0; at = value.indexOf(d, pos)) {
    fields.push(value.subarray(pos, at));
    pos = at + d.length;
  }
  fields.push(value.subarray(pos));
  return fields;
}

/** csv: the fields, or why the value is not csv of this syntax. */
export function splitCsvValue(value: Buffer, syntax: ValueSyntax): Buffer[] | string {
  const d = Buffer.from(syntax.delimiter, 'utf8');
  const q = syntax.quote.charCodeAt(0);
  const fields: Buffer[] = [];
  let pos = 0;
  for (;;) {
    let end: number;
    if (pos < value.length && value[pos] === q) {
      const quoted = readQuoted(value, pos, q);
      if (typeof quoted === 'string') return quoted;
      fields.push(quoted.field);
      end = quoted.end;
      if (end < value.length && !value.subarray(end, end + d.length).equals(d))
        return `bytes after the closing quote at offset ${end} (expected the delimiter or the end)`;
    } else {
      const at = value.indexOf(d, pos);
      end = at < 0 ? value.length : at;
      const field = value.subarray(pos, end);
      if (field.includes(q)) return `a quote inside an unquoted field at offset ${pos + field.indexOf(q)}`;
      fields.push(field);
    }
    if (end >= value.length) return fields;
    pos = end + d.length;
  }
}

/** The quoted field at value[pos] (its quote), undoubled, and where it ends (past the closing quote); or why not. */
function readQuoted(value: Buffer, pos: number, q: number): { field: Buffer; end: number } | string {
  const out = Buffer.allocUnsafe(value.length - pos);
  let n = 0;
  for (let k = pos + 1; k < value.length; k++) {
    const b = value[k];
    if (b !== q) {
      out[n++] = b;
      continue;
    }
    if (value[k + 1] !== q) return { field: Buffer.from(out.subarray(0, n)), end: k + 1 };
    out[n++] = q;
    k++;
  }
  return `the quote at offset ${pos} is never closed`;
}

/** A JSON string literal, escapes and all. */
const JSON_STRING = /"(?:[^"\\]|\\.)*"/g;

/** json: the object's names and string values in the order written, or why the value is not such an object. */
export function splitJsonValue(value: Buffer): { names: string[]; fields: Buffer[] } | string {
  // latin1: one character per byte, so bytes >= 0x80 come back exactly; escapes only stand for ASCII.
  const text = value.toString('latin1');
  const literals = text.match(JSON_STRING) ?? [];
  const skeleton = text.replace(JSON_STRING, 's').replace(/[ \t\r\n]/g, '');
  const expected = literals.length === 0 ? '{}' : `{${Array.from({ length: literals.length / 2 }, () => 's:s').join(',')}}`;
  if (literals.length % 2 !== 0 || skeleton !== expected) return 'not a JSON object of string values';
  const names: string[] = [];
  const fields: Buffer[] = [];
  try {
    for (let i = 0; i < literals.length; i += 2) {
      names.push(Buffer.from(JSON.parse(literals[i]) as string, 'latin1').toString('utf8'));
      fields.push(Buffer.from(JSON.parse(literals[i + 1]) as string, 'latin1'));
    }
  } catch (err) {
    return `not a JSON object of string values: ${(err as Error).message}`;
  }
  return { names, fields };
}
