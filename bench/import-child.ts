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
 *          lz4|none resume|plain db|output      (THREADS, MERGE_THREADS: '' for the default)
 * The CSV is the trades file of bench/gen-trades (pipe-delimited, header, key t_id).
 */
import { ImportOptions, ImportSummary, runImport } from '../src/ingest/importer';
import { importIntoDb } from '../src/ingest/importIntoDb';

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

async function child(argv: string[]): Promise<void> {
  const [input, outputDir, tmpDir, memoryLimit, threads, mergeThreads, compression, resume, target] = argv;
  if (target !== 'db' && target !== 'output')
    throw new Error(`usage: import-child CSV OUT TMP LIMIT THREADS MERGE_THREADS lz4|none resume|plain db|output`);
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
    const t0 = performance.now();
    const r = await importIntoDb({ dbDir: outputDir, import: importOptions, onConflict: 'abort' });
    summary = { ...r.import, dbSeconds: +((performance.now() - t0) / 1000 - r.import.phases.totalSeconds).toFixed(3) };
  } else {
    summary = await runImport({ ...importOptions, outputDir, writeSummaryFile: false });
  }
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
