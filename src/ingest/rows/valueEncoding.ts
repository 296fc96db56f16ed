/**
 * Value encodings: the formats an import can write a row's value in, and the syntax (delimiter,
 * quote) the `csv` format writes with. The bytes of each format are RowEncoder's
 * (rowEncoder.ts); reading them back as columns is valueColumns.ts; a database records its
 * encoding in DIR/VALUE-ENCODING (src/ingest/valueEncodingFile.ts). docs/import.md ("Values")
 * is the user's description; the formats are stable.
 *
 * - csv (the default): the value fields joined by the delimiter; a field holding the delimiter,
 *   the quote, CR or LF is written RFC 4180 style: in quotes, each quote inside doubled. Every
 *   other field is copied as it is, so csv is byte-identical to raw on every row whose value
 *   fields need no quoting, and it always splits back into the fields it was made of.
 *   With a delimiter of more than one byte, a field is also quoted when a delimiter would start
 *   inside it and end in the delimiter after it (`a|` before `||`), so the first delimiter found
 *   is always a field's end.
 * - raw: the value fields joined by the delimiter, never quoted: lossless only when no value
 *   field holds the delimiter (the format of databases written before csv existed).
 * - json: `{"name":"field",...}`, see rowEncoder.ts.
 *
 * Syntax: csv's quote is the input's --quote when that is one ASCII byte, else `"` (or, should
 * the delimiter hold that, the first of `'` and `` ` `` it does not hold). Into a database that
 * records an encoding, csv writes with the recorded delimiter and quote whatever the input's,
 * so every value in it splits the same way; raw always joins by the input's delimiter.
 */
export type ValueFormat = 'csv' | 'raw' | 'json';

export const VALUE_FORMATS: readonly ValueFormat[] = ['csv', 'raw', 'json'];
export const DEFAULT_VALUE_FORMAT: ValueFormat = 'csv';

/** How csv joins and quotes value fields. */
export interface ValueSyntax {
  delimiter: string;
  /** One ASCII character, not in the delimiter. */
  quote: string;
}

/** A value encoding as a database records it and as an import summary shows it. */
export interface ValueEncoding {
  format: ValueFormat;
  /** csv and raw: the delimiter values are joined by; null for json. */
  delimiter: string | null;
  /** csv: the quote around fields that need it; null for raw and json. */
  quote: string | null;
  /**
   * The value columns' names (the header's or --columns'), else their 1-based input positions
   * ("2", "3"), in value order; null when the import that recorded the encoding did not know them.
   */
  columns: string[] | null;
}

const QUOTE_CANDIDATES = ['"', "'", '`'];

function isOneAsciiByte(s: string): boolean {
  return s.length === 1 && s.charCodeAt(0) < 0x80;
}

/** csv's syntax for an input dialect (see the module comment). */
export function defaultValueSyntax(dialect: { delimiter: string; quote: string }): ValueSyntax {
  const { delimiter, quote } = dialect;
  if (isOneAsciiByte(quote) && !delimiter.includes(quote)) return { delimiter, quote };
  return { delimiter, quote: QUOTE_CANDIDATES.find((q) => !delimiter.includes(q)) ?? '"' };
}

/** Why `s` cannot be csv's syntax, or null when it can. */
export function valueSyntaxProblem(s: ValueSyntax): string | null {
  if (s.delimiter.length === 0) return 'the delimiter is empty';
  if (!isOneAsciiByte(s.quote)) return `the quote ${JSON.stringify(s.quote)} is not one ASCII character`;
  if (s.delimiter.includes(s.quote)) return 'the delimiter holds the quote';
  if (/[\r\n]/.test(s.delimiter) || /[\r\n]/.test(s.quote)) return 'the delimiter or the quote holds a line end';
  return null;
}

export function sameValueSyntax(a: ValueSyntax, b: ValueSyntax): boolean {
  return a.delimiter === b.delimiter && a.quote === b.quote;
}

/**
 * The encoding an import writes: `format`, its syntax (csv: `syntax`, raw: the input's
 * delimiter), and the value columns' names, else 1-based positions (null when unknown: no row
 * bound the layout).
 */
export function valueEncodingOf(
  format: ValueFormat,
  syntax: ValueSyntax | undefined,
  inputDelimiter: string,
  bound: { columnNames: string[] | null; valueFields: number[] } | null,
): ValueEncoding {
  const columns = bound === null ? null : bound.valueFields.map((f) => bound.columnNames?.[f] ?? String(f + 1));
  if (format === 'json') return { format, delimiter: null, quote: null, columns };
  if (format === 'raw') return { format, delimiter: inputDelimiter, quote: null, columns };
  const { delimiter, quote } = syntax ?? { delimiter: inputDelimiter, quote: '"' };
  return { format, delimiter, quote, columns };
}
