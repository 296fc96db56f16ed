/**
 * The options of the import pipeline's commands (`import`, `check`, `plan`), declared once as
 * data. Each command adds the groups it takes, in the order its help lists them, so no command
 * copies another's options and registration order does not matter.
 *
 * Contract:
 * - IMPORT_OPTIONS (the CSV import), CONFLICT_CHECK_OPTIONS (the scan and its report) and
 *   DB_POLICY_OPTIONS (what happens with conflicts and how files go in) mean the same in every
 *   command that takes them; a command's own options (--db, --output-dir, --json, --quiet, with
 *   their per-command wording) are declared where the command is.
 * - `toImportOptions` turns parsed option values into the library's import options; sizes and
 *   the key spec are parsed here, once per run (bad text: IngestError 'USAGE', exit code 2), and
 *   the KeySpec object goes on to the library and to the command's key display.
 */
import { Command, Option } from 'commander';
import { IngestError } from '../../src/util/errors';
import { parseCompression, WRITABLE_COMPRESSION_NAMES } from '../../src/sstable/compression';
import { DEFAULT_TARGET_FILE_SIZE_BYTES, ImportOptions, ParserChoice } from '../../src/ingest/importer';
import { DEFAULT_MEMORY_LIMIT_BYTES } from '../../src/ingest/memoryBudget';
import { STEP_CHECKPOINTS_FROM_INPUT_BYTES } from '../../src/ingest/resume/jobSteps';
import { KeySpec } from '../../src/ingest/rows/keySpec';
import { DuplicatePolicy } from '../../src/ingest/sort/mergeToSsts';
import { ValueFormat } from '../../src/ingest/rows/rowEncoder';
import { ON_CONFLICT_CHOICES, OnConflict } from '../../src/conflict/policy';
import { ConflictStrategy, DEFAULT_MAX_REPORTED } from '../../src/conflict/report';
import { DbImportMode, DbImportOptions, ReplaceRangeRequest } from '../../src/ingest/importIntoDb';
import { DbTextCodec } from './dbText';

/** One command-line option, as data: what `new Option(...)` is made from. */
export interface OptionDef {
  flags: string;
  description: string;
  choices?: readonly string[];
  defaultValue?: string | number;
  /** Turns the option's text into its value; throws IngestError('USAGE') on bad text. */
  parse?: (text: string) => number;
  /** The command fails without it (commander's requiredOption). */
  required?: boolean;
}

export function addOptions(cmd: Command, defs: readonly OptionDef[]): Command {
  for (const def of defs) {
    const option = new Option(def.flags, def.description);
    if (def.choices !== undefined) option.choices(def.choices);
    if (def.parse !== undefined) option.argParser(def.parse);
    if (def.defaultValue !== undefined) option.default(def.defaultValue);
    if (def.required === true) option.makeOptionMandatory();
    cmd.addOption(option);
  }
  return cmd;
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1000,
  kib: 1024,
  m: 1 << 20,
  mb: 1e6,
  mib: 1 << 20,
  g: 1 << 30,
  gb: 1e9,
  gib: 1 << 30,
};

/** "256MiB", "64M", "1g", "4096" → bytes. Binary units for K/M/G/KiB/MiB/GiB, decimal for KB/MB/GB. */
export function parseByteSize(text: string, name: string): number {
  const m = /^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  const unit = m !== null ? SIZE_UNITS[m[2].toLowerCase()] : undefined;
  if (m === null || unit === undefined) throw new IngestError('USAGE', `${name} must be a size like 256MiB, 64M or 4096, got "${text}"`);
  return Math.floor(Number(m[1]) * unit);
}

function nonNegativeInt(name: string): (text: string) => number {
  return (text: string) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n < 0) throw new IngestError('USAGE', `${name} must be a non-negative integer, got "${text}"`);
    return n;
  };
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
    parse: nonNegativeInt('--skip-lines'),
    defaultValue: 0,
  },
  { flags: '--comment <c>', description: 'skip records whose first character is this' },
  {
    flags: '--key <spec>',
    description: 'key columns: COL[:TYPE][,COL[:TYPE]...], COL a name or 1-based position, TYPE bytes|int64|uint64',
    defaultValue: '1',
  },
  { flags: '--value <cols>', description: 'value columns, comma separated (default: all but the key columns)' },
  { flags: '--value-format <f>', description: 'value encoding', choices: ['raw', 'json'], defaultValue: 'raw' },
  { flags: '--memory-limit <size>', description: 'memory the sort may hold', defaultValue: `${DEFAULT_MEMORY_LIMIT_BYTES >> 20}MiB` },
  { flags: '--tmp-dir <dir>', description: 'where sorted runs are spilled (default: the system temp directory)' },
  {
    flags: '--target-file-size <size>',
    description: 'size of each output SST',
    defaultValue: `${DEFAULT_TARGET_FILE_SIZE_BYTES >> 20}MiB`,
  },
  { flags: '--on-duplicate <policy>', description: 'what a repeated key does', choices: ['error', 'first', 'last'], defaultValue: 'error' },
  {
    flags: '--max-bad-rows <n>',
    description: 'go on past up to this many bad rows',
    parse: nonNegativeInt('--max-bad-rows'),
    defaultValue: 0,
  },
  { flags: '--rejects <file>', description: 'write bad rows here as JSON lines {file, line, reason, text}' },
  { flags: '--parser <p>', description: 'CSV parser', choices: ['auto', 'fast', 'csv-parse'], defaultValue: 'auto' },
  {
    flags: '--threads <n>',
    description: 'parse worker threads (0 = parse on the main thread; default: 2 on 2+ cores for large regular files)',
    parse: nonNegativeInt('--threads'),
  },
  {
    flags: '--merge-threads <n>',
    description:
      'merge worker threads, each writing the SSTs of one key range (1 = merge on the main thread; default: 2 on 2+ cores once the sorted runs reach 32 MiB)',
    parse: nonNegativeInt('--merge-threads'),
  },
  { flags: '--compression <c>', description: 'SST block compression', choices: WRITABLE_COMPRESSION_NAMES, defaultValue: 'lz4' },
  {
    flags: '--bloom-bits <n>',
    description: 'bloom filter bits per key (0 = none)',
    parse: nonNegativeInt('--bloom-bits'),
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
  { flags: '--report <file>', description: 'write the JSON conflict report here' },
  {
    flags: '--max-reported <n>',
    description: 'conflicts listed in the report (counts stay exact)',
    parse: nonNegativeInt('--max-reported'),
    defaultValue: DEFAULT_MAX_REPORTED,
  },
];

/** What happens with conflicts and how the files go in (`plan`, `import --db`). */
export const DB_POLICY_OPTIONS: readonly OptionDef[] = [
  {
    flags: '--on-conflict <policy>',
    description: 'with conflicts: abort (ingest nothing, exit 3), overwrite, or skip the conflicting rows',
    choices: ON_CONFLICT_CHOICES,
    defaultValue: 'abort',
  },
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

/**
 * Progress for scripts, in every pipeline command (not in the server's query: a server reports
 * nothing on the client's stderr).
 */
export const PROGRESS_OPTION: OptionDef = {
  flags: '--progress <mode>',
  description: 'progress on stderr: auto (a bar on a TTY), json (NDJSON events, at most one a second), none',
  choices: ['auto', 'json', 'none'],
  defaultValue: 'auto',
};

/** `import`'s own: resuming an interrupted run, and the scratch space it may take (docs/import.md). */
export const RESUME_OPTIONS: readonly OptionDef[] = [
  {
    flags: '--no-resume',
    description: 'start over: discard a pending interrupted import of these inputs (default: resume it)',
  },
  {
    flags: '--disk-quota <size>',
    description: 'scratch space (runs and SSTs) the import may use; checked before parsing against the estimate and the free space',
  },
  {
    flags: '--step-checkpoints-from <size>',
    description: `input size from which each parse range and SST is checkpointed; a smaller import is redone whole after a kill (default ${STEP_CHECKPOINTS_FROM_INPUT_BYTES >> 20}MiB; 0: always)`,
  },
];

/** Option values of PROGRESS_OPTION and RESUME_OPTIONS. */
export interface ResumeCliOptions {
  progress?: string;
  resume?: boolean;
  diskQuota?: string;
  stepCheckpointsFrom?: string;
}

/** Option values of IMPORT_OPTIONS, plus the --json and --quiet every pipeline command has. */
export interface ImportCliOptions {
  delimiter: string;
  quote: string;
  escape?: string;
  header?: boolean;
  columns?: string;
  skipLines: number;
  comment?: string;
  key: string;
  value?: string;
  valueFormat: ValueFormat;
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
  json?: boolean;
  quiet?: boolean;
}

/** Option values of CONFLICT_CHECK_OPTIONS. */
export interface ConflictCheckCliOptions {
  conflictStrategy: ConflictStrategy;
  report?: string;
  maxReported: number;
}

/** Option values of DB_POLICY_OPTIONS. */
export interface DbPolicyCliOptions {
  onConflict: OnConflict;
  /** true for a bare --replace-range (the import's own span). */
  replaceRange?: string | true;
  createIfMissing: boolean;
  /** undefined unless --verify-checksums or --no-verify-checksums was given: the library's default (no re-read). */
  verifyChecksums?: boolean;
  blockingFlush: boolean;
}

/** The import options every pipeline command builds, less where the SSTs go; the key spec parsed. */
export type ImportSettings = Omit<ImportOptions, 'outputDir' | 'writeSummaryFile' | 'writeRowOrigins'> & { key: KeySpec };

export function toImportOptions(inputs: string[], o: ImportCliOptions): ImportSettings {
  return {
    inputs,
    tmpDir: o.tmpDir,
    dialect: { delimiter: o.delimiter, quote: o.quote, escape: o.escape, comment: o.comment ?? '', skipLines: o.skipLines },
    header: o.header === true,
    columns: o.columns !== undefined ? o.columns.split(',') : null,
    value: o.value,
    valueFormat: o.valueFormat,
    memoryLimitBytes: parseByteSize(o.memoryLimit, '--memory-limit'),
    targetFileSizeBytes: parseByteSize(o.targetFileSize, '--target-file-size'),
    onDuplicate: o.onDuplicate,
    maxBadRows: o.maxBadRows,
    rejectsPath: o.rejects,
    parser: o.parser,
    parseThreads: o.threads,
    mergeThreads: o.mergeThreads,
    sstOptions: {
      compression: parseCompression(o.compression),
      bloomBitsPerKey: o.bloomBits,
      blockSizeBytes: parseByteSize(o.blockSize, '--block-size'),
    },
    key: KeySpec.parse(o.key),
  };
}

/** "FROM..TO", "FROM..", "..TO" (split at the first ".."), or a bare flag: the import's span. */
export function parseReplaceRange(text: string | true | undefined, codec: DbTextCodec): ReplaceRangeRequest | undefined {
  if (text === undefined) return undefined;
  if (text === true) return {};
  const at = text.indexOf('..');
  if (at < 0) throw new IngestError('USAGE', `--replace-range must be FROM..TO (either side may be empty), got "${text}"`);
  const from = text.slice(0, at);
  const to = text.slice(at + 2);
  return {
    start: from === '' ? undefined : codec.parseKey(from, '--replace-range FROM'),
    end: to === '' ? undefined : codec.parseKey(to, '--replace-range TO'),
  };
}

/** Option values of every pipeline command: `check` has no policy options, `plan` and `import` have them. */
export type PipelineCliOptions = ImportCliOptions &
  ConflictCheckCliOptions &
  Partial<DbPolicyCliOptions> & { db: string; outputDir?: string };

/**
 * The DbImport options of a pipeline command's parsed options (the CLI's and the server's
 * POST /v1/imports, which parses its query with these same tables), and the codec that shows
 * keys the way the import's key spec reads them.
 */
export function dbImportOptionsOf(
  inputs: string[],
  o: PipelineCliOptions,
  mode: DbImportMode,
): { options: DbImportOptions; codec: DbTextCodec } {
  const importSettings = toImportOptions(inputs, o);
  // The import's key spec shows keys here too: --replace-range bounds in, file bounds out.
  const codec = new DbTextCodec({ keySpec: importSettings.key });
  const common = {
    mode,
    dbDir: o.db,
    import: importSettings,
    conflictStrategy: o.conflictStrategy,
    maxReported: o.maxReported,
    reportPath: o.report,
  };
  if (mode === 'check') return { options: { ...common, outputDir: o.outputDir }, codec };
  const options: DbImportOptions = {
    ...common,
    createIfMissing: o.createIfMissing,
    onConflict: o.onConflict,
    replaceRange: parseReplaceRange(o.replaceRange, codec),
    verifyChecksums: o.verifyChecksums,
    allowBlockingFlush: o.blockingFlush,
  };
  return { options, codec };
}
