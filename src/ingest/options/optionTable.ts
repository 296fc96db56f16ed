/**
 * The import pipeline's options (`import`, `check`, `plan`, and the server's POST /v1/imports),
 * declared once as data, below every front end: the CLI turns each OptionDef into a commander
 * option (cli/commands/importOptions.ts), the server reads its query with optionParser.ts. So
 * `--key id:int64 --on-conflict skip` and `?key=id:int64&on-conflict=skip` mean the same, with
 * the same defaults, choices and error messages.
 *
 * Contract:
 * - IMPORT_OPTIONS (the CSV import), CONFLICT_CHECK_OPTIONS (the scan and its report) and
 *   DB_POLICY_OPTIONS (what happens with conflicts and how files go in) mean the same wherever
 *   they are taken; a front end's own options (the CLI's --db, --json, progress; the server's
 *   mode and name) are declared by that front end.
 * - Flags: `--name <v>` takes a value, `--name [v]` an optional one (true when bare), `--name`
 *   is a flag (true when given), `--no-name` its negation (false when given; true by default
 *   unless `--name` is declared too, then undefined unless one is given).
 * - A value's attribute is its long name in camelCase (`--max-bad-rows` → maxBadRows), and the
 *   values of a table are read as the interfaces below.
 */
import { WRITABLE_COMPRESSION_NAMES } from '../../sstable/compression';
import { ON_CONFLICT_CHOICES, OnConflict } from '../../conflict/policy';
import { ConflictStrategy, DEFAULT_MAX_REPORTED } from '../../conflict/report';
import { MAX_REPORTED_ALL, REPORT_FORMAT_CHOICES, ReportFormat } from '../../conflict/reportStream';
import { DEFAULT_TARGET_FILE_SIZE_BYTES, ParserChoice } from '../importTypes';
import { DEFAULT_MEMORY_LIMIT_BYTES } from '../memoryBudget';
import { DuplicatePolicy } from '../sort/mergeToSsts';
import { VALUE_FORMATS, ValueFormat } from '../rows/valueEncoding';
import { countOrAll, nonNegativeInteger } from './optionText';

/** One option, as data. */
export interface OptionDef {
  flags: string;
  description: string;
  choices?: readonly string[];
  defaultValue?: string | number;
  /** Turns the option's text into its value; throws IngestError('USAGE') on bad text. */
  parse?: (text: string) => number;
  /** Refused when absent. */
  required?: boolean;
}

/** The CSV import's options, in help order. */
export const IMPORT_OPTIONS: readonly OptionDef[] = [
  { flags: '--delimiter <c>', description: 'field delimiter (\\t for tab)', defaultValue: ',' },
  { flags: '--quote <c>', description: "quote character ('' to disable quoting)", defaultValue: '"' },
  { flags: '--escape <c>', description: 'escape character inside quotes (default: the quote, i.e. doubling)' },
  { flags: '--header', description: 'the first row names the columns' },
  { flags: '--columns <names>', description: 'column names, comma separated' },
  {
    flags: '--skip-lines <n>',
    description: 'skip this many physical lines at the start of each file',
    parse: nonNegativeInteger('--skip-lines'),
    defaultValue: 0,
  },
  { flags: '--comment <c>', description: 'skip records whose first character is this' },
  {
    flags: '--key <spec>',
    description: 'key columns: COL[:TYPE][,COL[:TYPE]...], COL a name or 1-based position, TYPE bytes|int64|uint64',
    defaultValue: '1',
  },
  { flags: '--value <cols>', description: 'value columns, comma separated (default: all but the key columns)' },
  {
    flags: '--value-format <f>',
    description:
      'value encoding: csv (the value columns joined by the delimiter, a field holding the delimiter, a quote or a line end quoted: lossless), raw (joined, never quoted) or json (default: csv; with --db: what the database records, raw for one written before formats were recorded)',
    choices: VALUE_FORMATS,
  },
  { flags: '--memory-limit <size>', description: 'memory the sort may hold', defaultValue: `${DEFAULT_MEMORY_LIMIT_BYTES >> 20}MiB` },
  {
    flags: '--tmp-dir <dir>',
    description:
      "where sorted runs are spilled (default: a resumable import's job directory, inside the database or --output-dir; else, as for check or stdin, the system temp directory)",
  },
  {
    flags: '--target-file-size <size>',
    description: 'size of each output SST',
    defaultValue: `${DEFAULT_TARGET_FILE_SIZE_BYTES >> 20}MiB`,
  },
  { flags: '--on-duplicate <policy>', description: 'what a repeated key does', choices: ['error', 'first', 'last'], defaultValue: 'error' },
  {
    flags: '--max-bad-rows <n>',
    description: 'go on past up to this many bad rows',
    parse: nonNegativeInteger('--max-bad-rows'),
    defaultValue: 0,
  },
  { flags: '--rejects <file>', description: 'write bad rows here as JSON lines {file, line, reason, text}' },
  { flags: '--parser <p>', description: 'CSV parser', choices: ['auto', 'fast', 'csv-parse'], defaultValue: 'auto' },
  {
    flags: '--threads <n>',
    description: 'parse worker threads (0 = parse on the main thread; default: 2 on 2+ cores for large regular files)',
    parse: nonNegativeInteger('--threads'),
  },
  {
    flags: '--merge-threads <n>',
    description:
      'merge worker threads, each writing the SSTs of one key range (1 = merge on the main thread; default: 2 on 2+ cores once the sorted runs reach 32 MiB)',
    parse: nonNegativeInteger('--merge-threads'),
  },
  { flags: '--compression <c>', description: 'SST block compression', choices: WRITABLE_COMPRESSION_NAMES, defaultValue: 'lz4' },
  {
    flags: '--bloom-bits <n>',
    description: 'bloom filter bits per key (0 = none)',
    parse: nonNegativeInteger('--bloom-bits'),
    defaultValue: 10,
  },
  { flags: '--block-size <size>', description: 'SST data block size', defaultValue: '4KiB' },
];

/** The conflict scan's options (`check`, `plan`, `import --db`). */
export const CONFLICT_CHECK_OPTIONS: readonly OptionDef[] = [
  {
    flags: '--conflict-strategy <s>',
    description: 'seek (interleaved SeekGE), get (point lookups), or auto (by the engine bytes in range vs the SSTs)',
    choices: ['auto', 'seek', 'get'],
    defaultValue: 'auto',
  },
  { flags: '--report <file>', description: 'write the conflict report here (complete or absent)' },
  {
    flags: '--report-format <f>',
    description: 'json (one document) or ndjson (a line per conflict, written as the scan finds them, then a summary line)',
    choices: REPORT_FORMAT_CHOICES,
    defaultValue: 'json',
  },
  {
    flags: '--max-reported <n>',
    description: 'conflicts listed in the report (counts stay exact); all: every one (ndjson only)',
    parse: countOrAll('--max-reported', MAX_REPORTED_ALL),
    defaultValue: DEFAULT_MAX_REPORTED,
  },
];

/** What happens with conflicts: the first of DB_POLICY_OPTIONS, also taken by `sst ingest|plan`. */
export const ON_CONFLICT_OPTION: OptionDef = {
  flags: '--on-conflict <policy>',
  description: 'with conflicts: abort (ingest nothing, exit 3), overwrite, or skip the conflicting rows',
  choices: ON_CONFLICT_CHOICES,
  defaultValue: 'abort',
};

/** What happens with conflicts and how the files go in (`plan`, `import --db`). */
export const DB_POLICY_OPTIONS: readonly OptionDef[] = [
  ON_CONFLICT_OPTION,
  {
    flags: '--replace-range [from..to]',
    description: "replace every key in [FROM, TO) (default: the import's first key to just past its last)",
  },
  { flags: '--no-create-if-missing', description: 'fail when DIR holds no database (default: create it)' },
  {
    flags: '--verify-checksums',
    description: 're-read every block of the new SSTs before ingesting (default: no: checksummed as written, read whole by the check)',
  },
  { flags: '--no-verify-checksums', description: 'do not re-read the new SSTs (the default; kept for scripts that say so)' },
  { flags: '--no-blocking-flush', description: 'fail instead of flushing a memtable that overlaps the import' },
];

/** Values of IMPORT_OPTIONS. */
export interface ImportOptionValues {
  delimiter: string;
  quote: string;
  escape?: string;
  header?: boolean;
  columns?: string;
  skipLines: number;
  comment?: string;
  key: string;
  value?: string;
  /** Undefined unless given: the default depends on the database (DbImport settles it). */
  valueFormat?: ValueFormat;
  memoryLimit: string;
  tmpDir?: string;
  targetFileSize: string;
  onDuplicate: DuplicatePolicy;
  maxBadRows: number;
  rejects?: string;
  parser: ParserChoice;
  threads?: number;
  mergeThreads?: number;
  compression: string;
  bloomBits: number;
  blockSize: string;
}

/** Values of CONFLICT_CHECK_OPTIONS. */
export interface ConflictCheckOptionValues {
  conflictStrategy: ConflictStrategy;
  report?: string;
  /** Absent where no --report is taken (the server's query). */
  reportFormat?: ReportFormat;
  /** MAX_REPORTED_ALL for `all`. */
  maxReported: number;
}

/** Values of DB_POLICY_OPTIONS. */
export interface DbPolicyOptionValues {
  onConflict: OnConflict;
  /** true for a bare --replace-range (the import's own span). */
  replaceRange?: string | true;
  createIfMissing: boolean;
  /** undefined unless --verify-checksums or --no-verify-checksums was given: the library's default (no re-read). */
  verifyChecksums?: boolean;
  blockingFlush: boolean;
}

/** Values of a pipeline run: `check` has no policy options, `plan` and `import` have them. */
export type PipelineOptionValues = ImportOptionValues &
  ConflictCheckOptionValues &
  Partial<DbPolicyOptionValues> & { db: string; outputDir?: string };
