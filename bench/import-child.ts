/**
 * bench/import-child: one measured import for bench/import.ts, in a process of its own so that
 * its wall time, CPU time and peak RSS are the import's alone. It loads only the import (no
 * benchmark harness: the parent's modules cost this process about 30-40 ms of start-up that no
 * user's `ingest import` pays), runs it, and prints one JSON line: the import's summary with
 * `outputFileCount`, `dbSeconds` (with target db: engine open, the conflict check, the ingestion
 * and the close, after the import's own phases) and `usage` (process.resourceUsage: every
 * thread's CPU, peak RSS).
 *
 * Usage: node dist/bench/import-child.js CSV OUT_DIR TMP_DIR MEMORY_LIMIT THREADS MERGE_THREADS
 *          lz4|none resume|plain|cli db|output      (THREADS, MERGE_THREADS: '' for the default)
 * The CSV is the trades file of bench/gen-trades (pipe-delimited, header, key t_id).
 *
 * `resume` and `plain` call the library (runImport, importIntoDb) with or without the resumable
 * job's checkpoints. `cli` runs the command line in this process, `ingest import CSV --db OUT` (or
 * `--output-dir OUT`) with the same options as a user types them and its defaults otherwise (a
 * resumable job among them), through cli/ingest.ts's main: so the figures are those of the command
 * a nightly script runs, its start-up included. Each mode loads only its own modules: the library
 * modes the import, the CLI mode the entry and what it loads.
 */
import type { ImportOptions, ImportSummary } from '../src/ingest/importer';

/** The child's own accounting at its end: every thread's CPU (workers included) and its peak RSS. */
export interface ChildUsage {
  cpuSeconds: number;
  maxRssKiB: number;
}

/** "256MiB", "1g", "4096": bytes. */
export function parseSize(s: string): number {
  const m = /^([0-9.]+)\s*(k|m|g|kib|mib|gib)?$/i.exec(s.trim());
  if (m === null) throw new Error(`bad size ${s}`);
  const unit = (m[2] ?? '').toLowerCase();
  const mul = unit.startsWith('k') ? 1 << 10 : unit.startsWith('m') ? 1 << 20 : unit.startsWith('g') ? 1 << 30 : 1;
  return Math.floor(Number(m[1]) * mul);
}

/** The `ingest import` arguments equivalent to the library options the other modes pass. */
function cliArguments(argv: readonly string[]): string[] {
  const [input, outputDir, tmpDir, memoryLimit, threads, mergeThreads, compression, , target] = argv;
  const args = ['import', input, target === 'db' ? '--db' : '--output-dir', outputDir, '--tmp-dir', tmpDir];
  args.push('--delimiter', '|', '--header', '--key', 't_id:int64', '--value-format', 'raw', '--memory-limit', memoryLimit);
  if (threads !== '') args.push('--threads', threads);
  if (mergeThreads !== '') args.push('--merge-threads', mergeThreads);
  args.push('--compression', compression, '--json', '--quiet');
  return args;
}

/**
 * Runs the CLI in this process and returns what it printed on stdout (its --json document);
 * throws on a non-zero exit code. stdout is captured only while the command runs.
 */
async function runCli(cli: typeof import('../cli/ingest'), args: string[]): Promise<string> {
  const chunks: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array): boolean => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  }) as typeof process.stdout.write;
  let code: number;
  try {
    code = await cli.main(['node', 'ingest', ...args]);
  } finally {
    process.stdout.write = write;
  }
  if (code !== 0) throw new Error(`ingest ${args.join(' ')} exited with ${code}`);
  return chunks.join('');
}

/**
 * The `cli` mode: the command's own summary (with --db, its `import` member), and as dbSeconds
 * the command's time outside its import phases: loading the command line, and with --db the
 * database's open, check, ingestion and close.
 */
async function cliSummary(argv: readonly string[], target: 'db' | 'output'): Promise<ImportSummary & { dbSeconds?: number }> {
  const t0 = performance.now();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const cli = require('../cli/ingest') as typeof import('../cli/ingest');
  const printed = JSON.parse(await runCli(cli, cliArguments(argv))) as { import?: ImportSummary } & ImportSummary;
  const wallSeconds = (performance.now() - t0) / 1000;
  if (target === 'output') return printed;
  const summary = printed.import as ImportSummary;
  return { ...summary, dbSeconds: +(wallSeconds - summary.phases.totalSeconds).toFixed(3) };
}

async function child(argv: string[]): Promise<void> {
  const [input, outputDir, tmpDir, memoryLimit, threads, mergeThreads, compression, resume, target] = argv;
  if ((target !== 'db' && target !== 'output') || !['resume', 'plain', 'cli'].includes(resume))
    throw new Error(`usage: import-child CSV OUT TMP LIMIT THREADS MERGE_THREADS lz4|none resume|plain|cli db|output`);
  if (resume === 'cli') {
    report(await cliSummary(argv, target));
    return;
  }
  const importOptions: Omit<ImportOptions, 'outputDir'> = {
    resume: resume === 'resume',
    inputs: [input],
    tmpDir,
    dialect: { delimiter: '|' },
    header: true,
    key: 't_id:int64',
    valueFormat: 'raw',
    memoryLimitBytes: parseSize(memoryLimit),
    parseThreads: threads === '' ? undefined : Number(threads),
    mergeThreads: mergeThreads === '' ? undefined : Number(mergeThreads),
    sstOptions: { compression: compression === 'none' ? 0 : 4 },
  };
  let summary: ImportSummary & { dbSeconds?: number };
  if (target === 'db') {
    // Into a new database, as the peer's IngestExternalFile: engine open, the (empty) conflict
    // check, the ingestion and the close are timed together as dbSeconds.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { importIntoDb } = require('../src/ingest/importIntoDb') as typeof import('../src/ingest/importIntoDb');
    const t0 = performance.now();
    const r = await importIntoDb({ dbDir: outputDir, import: importOptions, onConflict: 'abort' });
    summary = { ...r.import, dbSeconds: +((performance.now() - t0) / 1000 - r.import.phases.totalSeconds).toFixed(3) };
  } else {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { runImport } = require('../src/ingest/importer') as typeof import('../src/ingest/importer');
    summary = await runImport({ ...importOptions, outputDir, writeSummaryFile: false });
  }
  report(summary);
}

/** Prints the one JSON line: the summary, its file count, this process's usage. */
function report(summary: ImportSummary & { dbSeconds?: number }): void {
  // The parent needs the file count, not every file's listing.
  const files = summary.outputFiles.length;
  summary.outputFiles = summary.outputFiles.slice(0, 3);
  const u = process.resourceUsage();
  const usage: ChildUsage = { cpuSeconds: (u.userCPUTime + u.systemCPUTime) / 1e6, maxRssKiB: u.maxRSS };
  process.stdout.write(`${JSON.stringify({ ...summary, outputFileCount: files, usage })}\n`);
}

if (require.main === module) {
  child(process.argv.slice(2)).catch((e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
