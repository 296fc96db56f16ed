/**
 * DIR/VALUE-ENCODING: the value encoding a database's imports write (rows/valueEncoding.ts), so
 * that every import into it writes values one way and `ingest get|scan --as-columns` can split
 * them back into columns.
 *
 * Layout: one JSON object and a newline,
 *   {"version":1,"format":"csv","delimiter":",","quote":"\"","columns":["name","city"]}
 * `delimiter` null for json, `quote` null for raw and json, `columns` null when unknown.
 * Written once, by the first import that ingests into the database, before its ingestion
 * commits (so no data is ever in the database without the record), atomically: a temp file
 * VALUE-ENCODING.tmp, fsync, rename, directory fsync (engine/durableFs.ts).
 *
 * Neither this engine nor RocksDB knows the name (engine/fileNames.ts parseFileName, RocksDB's
 * ParseFileName): their obsolete-file cleanup leaves it alone and `ldb` or RocksDB open the
 * directory as if it were not there.
 *
 * Settling an import's encoding (settleValueEncoding): the recorded one; an explicit
 * --value-format that differs from it is a usage error naming both (one database, one
 * encoding: mixed values cannot be read back as columns). No record: the explicit format, else
 * raw when the database already holds data (written by a version that had no record and wrote
 * raw by default), else the default (csv).
 */
import * as fs from 'fs';
import * as path from 'path';
import { Engine } from '../engine/engine';
import { replaceFileDurably } from '../engine/durableFs';
import { FileKind, parseFileName } from '../engine/fileNames';
import { IngestError } from '../util/errors';
import {
  DEFAULT_VALUE_FORMAT,
  VALUE_FORMATS,
  ValueEncoding,
  ValueFormat,
  ValueSyntax,
  defaultValueSyntax,
  sameValueSyntax,
  valueSyntaxProblem,
} from './rows/valueEncoding';

export const VALUE_ENCODING_FILE_NAME = 'VALUE-ENCODING';
const TEMP_FILE_NAME = 'VALUE-ENCODING.tmp';
const RECORD_VERSION = 1;
/** A record is a few hundred bytes; anything much larger is not one. */
const MAX_RECORD_BYTES = 1 << 20;

export function valueEncodingFileName(dir: string): string {
  return path.join(dir, VALUE_ENCODING_FILE_NAME);
}

/** The encoding DIR records, or null when it records none. A record that does not parse is CORRUPTION naming the file. */
export function readValueEncoding(dir: string): ValueEncoding | null {
  const file = valueEncodingFileName(dir);
  let text: string;
  try {
    if (fs.statSync(file).size > MAX_RECORD_BYTES) throw new Error(`larger than ${MAX_RECORD_BYTES} bytes`);
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new IngestError('IO', `cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new IngestError('CORRUPTION', `${file} is not JSON: ${(err as Error).message}`, { cause: err });
  }
  const problem = recordProblem(parsed);
  if (problem !== null) throw new IngestError('CORRUPTION', `${file} is not a value encoding record: ${problem}`);
  return encodingOf(parsed as ValueEncoding);
}

function encodingOf(r: ValueEncoding): ValueEncoding {
  return { format: r.format, delimiter: r.delimiter, quote: r.quote, columns: r.columns === null ? null : [...r.columns] };
}

/**
 * A value encoding sent by a client (the record's JSON, `version` included: the header of an SST
 * upload, src/server/routes/sstUploads.ts); BAD_INPUT naming `what` when it is not one.
 */
export function parseValueEncodingText(text: string, what: string): ValueEncoding {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new IngestError('BAD_INPUT', `${what} is not JSON: ${(err as Error).message}`);
  }
  const problem = recordProblem(parsed);
  if (problem !== null) throw new IngestError('BAD_INPUT', `${what} is not a value encoding: ${problem}`);
  return encodingOf(parsed as ValueEncoding);
}

/** The text parseValueEncodingText reads: the record's JSON. */
export function valueEncodingText(encoding: ValueEncoding): string {
  return JSON.stringify({ version: RECORD_VERSION, ...encoding });
}

/** Why `v` is not a record of RECORD_VERSION, or null. */
function recordProblem(v: unknown): string | null {
  if (typeof v !== 'object' || v === null) return 'not an object';
  const r = v as Record<string, unknown>;
  if (r.version !== RECORD_VERSION) return `version ${JSON.stringify(r.version)} (this version reads ${RECORD_VERSION})`;
  if (!VALUE_FORMATS.includes(r.format as ValueFormat)) return `unknown format ${JSON.stringify(r.format)}`;
  if (!(r.columns === null || (Array.isArray(r.columns) && r.columns.every((c) => typeof c === 'string')))) return 'bad columns';
  if (r.format === 'json') return r.delimiter === null && r.quote === null ? null : 'json with a delimiter or quote';
  if (typeof r.delimiter !== 'string' || r.delimiter === '') return 'no delimiter';
  if (r.format === 'raw') return r.quote === null ? null : 'raw with a quote';
  if (typeof r.quote !== 'string') return 'csv without a quote';
  return valueSyntaxProblem({ delimiter: r.delimiter, quote: r.quote });
}

/** Records `encoding` in DIR, atomically and durably. */
export function writeValueEncoding(dir: string, encoding: ValueEncoding): void {
  const record = { version: RECORD_VERSION, ...encoding };
  replaceFileDurably(valueEncodingFileName(dir), path.join(dir, TEMP_FILE_NAME), Buffer.from(`${JSON.stringify(record)}\n`), dir);
}

/**
 * Whether the database at DIR holds data: with its engine open, any table or any write; else
 * any table file, or a write-ahead log that is not empty. A directory with no database holds none.
 */
export function databaseHoldsData(dir: string, engine?: Engine): boolean {
  if (engine !== undefined) return engine.lastSequence > 0 || engine.levelFiles().some((level) => level.length > 0);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return false;
  }
  return names.some((name) => {
    const kind = parseFileName(name)?.kind;
    if (kind === FileKind.Table) return true;
    if (kind !== FileKind.Log) return false;
    try {
      return fs.statSync(path.join(dir, name)).size > 0;
    } catch {
      return false;
    }
  });
}

/** The encoding an import into a database writes with, and the record it found. */
export interface SettledValueEncoding {
  format: ValueFormat;
  /** csv into a database that records another delimiter or quote than the input's: the recorded ones. */
  syntax: ValueSyntax | undefined;
  /** The record found (null: none; the import that ingests writes one). */
  recorded: ValueEncoding | null;
}

/** See the module comment. `explicit`: --value-format as given, undefined when left out. */
export function settleValueEncoding(
  dir: string,
  explicit: ValueFormat | undefined,
  dialect: { delimiter: string; quote: string },
  engine?: Engine,
): SettledValueEncoding {
  return settleValueEncodingAgainst(readValueEncoding(dir), () => databaseHoldsData(dir, engine), explicit, dialect, dir);
}

/** settleValueEncoding for a database known by what it records and whether it holds data (a server's, `where`). */
export function settleValueEncodingAgainst(
  recorded: ValueEncoding | null,
  holdsData: () => boolean,
  explicit: ValueFormat | undefined,
  dialect: { delimiter: string; quote: string },
  where: string,
): SettledValueEncoding {
  const dir = where;
  if (recorded === null) {
    const format = explicit ?? (holdsData() ? 'raw' : DEFAULT_VALUE_FORMAT);
    return { format, syntax: undefined, recorded: null };
  }
  if (explicit !== undefined && explicit !== recorded.format) {
    throw new IngestError(
      'USAGE',
      `--value-format ${explicit} differs from the value format ${recorded.format} that the database at ${dir} records ` +
        `(${VALUE_ENCODING_FILE_NAME}): values in two encodings cannot be read back as columns; leave --value-format out or give ${recorded.format}`,
    );
  }
  if (recorded.format !== 'csv') return { format: recorded.format, syntax: undefined, recorded };
  const syntax = { delimiter: recorded.delimiter as string, quote: recorded.quote as string };
  return { format: 'csv', syntax: sameValueSyntax(syntax, defaultValueSyntax(dialect)) ? undefined : syntax, recorded };
}

/**
 * Records `encoding` (what the import wrote) unless DIR records one already; called before the
 * ingestion. A record written meanwhile (another import into a live engine) must agree on the
 * format and, for csv, the syntax, else this import would mix encodings: USAGE, nothing ingested.
 */
export function recordValueEncodingBeforeIngest(dir: string, encoding: ValueEncoding): void {
  const now = readValueEncoding(dir);
  if (now === null) {
    writeValueEncoding(dir, encoding);
    return;
  }
  if (now.format !== encoding.format || (now.format === 'csv' && (now.delimiter !== encoding.delimiter || now.quote !== encoding.quote))) {
    throw new IngestError(
      'USAGE',
      `the database at ${dir} came to record the value format ${now.format} during this import, which wrote ${encoding.format}; nothing ingested, run the import again`,
    );
  }
}
