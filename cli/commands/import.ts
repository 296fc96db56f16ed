/**
 * `ingest import <inputs...> --output-dir DIR`: CSV files (or `-` for stdin, `.gz` decompressed
 * on the fly) become sorted, non-overlapping SSTs in DIR, in bounded memory. See
 * src/ingest/importer.ts for the pipeline and docs/import.md for the options, the key and value
 * encodings and the summary's field names.
 *
 * Output: with --json one summary object on stdout; otherwise one human line on stdout unless
 * --quiet. Progress goes to stderr when it is a TTY (not with --quiet). Exit codes: 0 success;
 * 2 bad input, duplicates under --on-duplicate error, usage; 1 anything else. On any failure,
 * and on Ctrl-C, nothing is left in DIR or in the temp directory.
 *
 * `ingest import <inputs...> --db DIR` (import, conflict check, ingestion into a database) is
 * cli/commands/importDb.ts: it adds its options to this command and takes over the action.
 */
import { Command, Option } from 'commander';
import { IngestError } from '../../src/util/errors';
import { parseCompression } from '../../src/sstable/compression';
import { CsvImport, DEFAULT_MEMORY_LIMIT_BYTES, DEFAULT_TARGET_FILE_SIZE_BYTES, ImportOptions, ParserChoice } from '../../src/ingest/importer';
import { DuplicatePolicy } from '../../src/ingest/sort/mergeToSsts';
import { Progress } from '../../src/ingest/progress';
import { ValueFormat } from '../../src/ingest/rows/rowEncoder';

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

function nonNegativeInt(name: string): (v: string) => number {
  return (v: string) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new IngestError('USAGE', `${name} must be a non-negative integer, got "${v}"`);
    return n;
  };
}

export interface ImportCliOptions {
  outputDir: string;
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
  mergeThreads: number;
  compression: string;
  bloomBits: number;
  blockSize: string;
  json?: boolean;
  quiet?: boolean;
}

export function toImportOptions(inputs: string[], o: ImportCliOptions): ImportOptions {
  return {
    inputs,
    outputDir: o.outputDir,
    tmpDir: o.tmpDir,
    dialect: { delimiter: o.delimiter, quote: o.quote, escape: o.escape, comment: o.comment ?? '', skipLines: o.skipLines },
    header: o.header === true,
    columns: o.columns !== undefined ? o.columns.split(',') : null,
    key: o.key,
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
  };
}

export function registerImportCommand(program: Command): void {
  program
    .command('import')
    .description('import CSV files (- for stdin, .gz decompressed) as sorted, non-overlapping SSTs')
    .argument('<inputs...>', 'CSV files, - for stdin, *.gz decompressed on the fly')
    .option('--output-dir <dir>', 'directory for the SSTs and import-summary.json (must hold no .sst files); or --db')
    .option('--delimiter <c>', 'field delimiter (\\t for tab)', ',')
    .option('--quote <c>', "quote character ('' to disable quoting)", '"')
    .option('--escape <c>', 'escape character inside quotes (default: the quote, i.e. doubling)')
    .option('--header', 'the first row names the columns')
    .option('--columns <names>', 'column names, comma separated')
    .option('--skip-lines <n>', 'skip this many physical lines at the start of each file', nonNegativeInt('--skip-lines'), 0)
    .option('--comment <c>', 'skip records whose first character is this')
    .option('--key <spec>', 'key columns: COL[:TYPE][,COL[:TYPE]...], COL a name or 1-based position, TYPE bytes|int64|uint64', '1')
    .option('--value <cols>', 'value columns, comma separated (default: all but the key columns)')
    .addOption(new Option('--value-format <f>', 'value encoding').choices(['raw', 'json']).default('raw'))
    .option('--memory-limit <size>', 'memory the sort may hold', `${DEFAULT_MEMORY_LIMIT_BYTES >> 20}MiB`)
    .option('--tmp-dir <dir>', 'where sorted runs are spilled (default: the system temp directory)')
    .option('--target-file-size <size>', 'size of each output SST', `${DEFAULT_TARGET_FILE_SIZE_BYTES >> 20}MiB`)
    .addOption(new Option('--on-duplicate <policy>', 'what a repeated key does').choices(['error', 'first', 'last']).default('error'))
    .option('--max-bad-rows <n>', 'go on past up to this many bad rows', nonNegativeInt('--max-bad-rows'), 0)
    .option('--rejects <file>', 'write bad rows here as JSON lines {file, line, reason, text}')
    .addOption(new Option('--parser <p>', 'CSV parser').choices(['auto', 'fast', 'csv-parse']).default('auto'))
    .option('--threads <n>', 'parse worker threads (0 = parse on the main thread; default: 2 on 2+ cores for large regular files)', nonNegativeInt('--threads'))
    .option('--merge-threads <n>', 'merge worker threads, each writing the SSTs of one key range (1 = merge on the main thread)', nonNegativeInt('--merge-threads'), 1)
    .addOption(new Option('--compression <c>', 'SST block compression').choices(['lz4', 'none']).default('lz4'))
    .option('--bloom-bits <n>', 'bloom filter bits per key (0 = none)', nonNegativeInt('--bloom-bits'), 10)
    .option('--block-size <size>', 'SST data block size', '4KiB')
    .option('--json', 'print one JSON summary object on stdout')
    .option('--quiet', 'no progress and no human summary')
    .action((inputs: string[], o: Omit<ImportCliOptions, 'outputDir'> & { outputDir?: string }) => runImportToDir(inputs, o));
}

/** `ingest import --output-dir DIR`: the SSTs stay in DIR. (With --db, cli/commands/importDb.ts takes over the action.) */
export async function runImportToDir(inputs: string[], o: Omit<ImportCliOptions, 'outputDir'> & { outputDir?: string }): Promise<void> {
  const outputDir = o.outputDir;
  if (outputDir === undefined) throw new IngestError('USAGE', 'import needs --output-dir DIR (SSTs in DIR) or --db DIR (ingested into a database)');
  const options = toImportOptions(inputs, { ...o, outputDir });
  options.progress = Progress.forStderr(o.quiet === true);
  const job = new CsvImport(options);
  const onSignal = (): void => {
    job.cleanupSync();
    process.stderr.write('\ninterrupted: import abandoned, nothing written\n');
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const summary = await job.run();
    if (o.json === true) process.stdout.write(`${JSON.stringify(summary)}\n`);
    else if (o.quiet !== true) {
      process.stdout.write(
        `imported ${summary.rowsWritten} rows into ${summary.outputFiles.length} SST file(s) in ${summary.outputDir} ` +
          `(${summary.phases.totalSeconds}s, ${summary.rowsPerSecond} rows/s, ${summary.badRows} bad rows, ${summary.duplicates.count} duplicates)\n`,
      );
    }
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}
