/**
 * The CSV dialect options of `ingest import`, their validation, and which parser can run them.
 *
 * Semantics shared by both parsers (the differential test holds them to it):
 * - a UTF-8 byte-order mark at the very start of a file is dropped;
 * - `skipLines` physical lines (LF-terminated, whatever they contain) are then skipped;
 * - records end at LF or CRLF; a lone CR is data; an empty line (LF or CRLF alone) is no record;
 * - a field is quoted when its first byte is the quote; inside, a doubled quote (or, with a
 *   distinct escape, escape+quote / escape+escape) stands for itself; delimiters and line ends
 *   inside quotes are data; after the closing quote must come a delimiter, a line end or the end;
 * - a quote byte inside an unquoted field is an error (csv-parse's strict default): pass
 *   `quote: ''` to treat quotes as plain data;
 * - `comment`: a record whose first byte is the comment character is skipped up to its line end
 *   (csv-parse's `comment_no_infix`: a comment character elsewhere is data).
 *
 * The fast byte tokenizer (src/ingest/csv/csvTokenizer.ts) runs when every special character is one ASCII byte
 * and the escape is the quote itself (RFC 4180 doubling). Anything else goes to csv-parse.
 */
import { IngestError } from '../../util/errors';

export interface CsvDialect {
  /** Field separator; default `,`. */
  delimiter: string;
  /** Quote character; `''` disables quoting. Default `"`. */
  quote: string;
  /** Escape inside quoted fields; defaults to the quote (doubling). */
  escape: string;
  /** Comment character for whole-record comments; `''` for none. */
  comment: string;
  /** Physical lines skipped at the start of each file, after a byte-order mark. */
  skipLines: number;
}

export const DEFAULT_DIALECT: CsvDialect = { delimiter: ',', quote: '"', escape: '"', comment: '', skipLines: 0 };

/** Fills defaults (escape defaults to the quote) and rejects contradictory dialects with USAGE. */
export function normalizeDialect(partial: Partial<CsvDialect>): CsvDialect {
  const d: CsvDialect = {
    delimiter: partial.delimiter ?? DEFAULT_DIALECT.delimiter,
    quote: partial.quote ?? DEFAULT_DIALECT.quote,
    escape: partial.escape ?? partial.quote ?? DEFAULT_DIALECT.escape,
    comment: partial.comment ?? '',
    skipLines: partial.skipLines ?? 0,
  };
  if (d.delimiter === '\\t') d.delimiter = '\t';
  if (d.delimiter.length === 0) throw new IngestError('USAGE', '--delimiter must not be empty');
  for (const [name, v] of [
    ['--delimiter', d.delimiter],
    ['--quote', d.quote],
    ['--escape', d.escape],
    ['--comment', d.comment],
  ] as const) {
    if (v.includes('\n') || v.includes('\r')) throw new IngestError('USAGE', `${name} must not contain a line end`);
  }
  if (d.quote !== '' && d.delimiter.includes(d.quote)) throw new IngestError('USAGE', '--quote and --delimiter must differ');
  if (d.comment !== '' && (d.comment === d.delimiter || d.comment === d.quote))
    throw new IngestError('USAGE', '--comment must differ from --delimiter and --quote');
  if (d.quote === '') d.escape = '';
  if (!Number.isInteger(d.skipLines) || d.skipLines < 0)
    throw new IngestError('USAGE', `--skip-lines must be a non-negative integer, got ${d.skipLines}`);
  return d;
}

function singleAsciiByte(s: string): boolean {
  return s.length === 1 && s.charCodeAt(0) < 0x80;
}

/** Null when the fast tokenizer can run this dialect, else why not (for the summary and README). */
export function fastPathRefusal(d: CsvDialect): string | null {
  if (!singleAsciiByte(d.delimiter)) return 'the delimiter is not a single ASCII byte';
  if (d.quote !== '' && !singleAsciiByte(d.quote)) return 'the quote is not a single ASCII byte';
  if (d.escape !== d.quote) return 'the escape differs from the quote';
  if (d.comment !== '' && !singleAsciiByte(d.comment)) return 'the comment character is not a single ASCII byte';
  return null;
}

/** The dialect as single bytes for the fast tokenizer; -1 for "none". Call only after fastPathRefusal() is null. */
export interface DialectBytes {
  delimiter: number;
  quote: number;
  comment: number;
}

export function dialectBytes(d: CsvDialect): DialectBytes {
  return {
    delimiter: d.delimiter.charCodeAt(0),
    quote: d.quote === '' ? -1 : d.quote.charCodeAt(0),
    comment: d.comment === '' ? -1 : d.comment.charCodeAt(0),
  };
}
