/**
 * What an import reports: its summary (the `--json` document and import-summary.json, field names
 * stable), the --rejects file, and the failure under --on-duplicate error, each naming rows by
 * input file and line (a Locator turns a row's parse source and source-relative line into them).
 */
import * as fs from 'fs';
import { IngestError } from '../util/errors';
import { displayName } from './csv/inputSource';
import { ImportOptions, ImportSummary, RowLocation } from './importTypes';
import { InputNamer, ParseOutcome, SourceInfo } from './parse/parseTypes';
import { BadRow, LayoutPlan } from './parse/rowSink';
import { valueEncodingOf } from './rows/valueEncoding';
import { KeySpec } from './rows/keySpec';
import { DuplicatePolicy, MergeResult } from './sort/mergeToSsts';
import { RunInfo } from './sort/runFile';
import { WrittenFile } from './sort/sstSetWriter';
import { ImportResumeSummary } from './resume/jobSteps';
import { roundTo3Decimals } from '../util/rounding';

/** Where a row came from, by parse source and source-relative line. */
export type Locator = (source: number, line: number) => RowLocation;

export function importSummaryOf(a: {
  o: ImportOptions;
  inputSizes: (number | null)[];
  totalInput: number;
  fast: boolean;
  parserReason: string;
  threads: number;
  outcome: ParseOutcome;
  merge: MergeResult;
  policy: DuplicatePolicy;
  written: WrittenFile[];
  finalPaths: string[];
  mergeThreads: number;
  keySpec: KeySpec;
  locate: Locator;
  memoryLimitBytes: number;
  runs: RunInfo[];
  seconds: { parse: number; merge: number; publish: number };
  resume: ImportResumeSummary | null;
  layout: LayoutPlan;
}): ImportSummary {
  const fmt = (k: Buffer): string => a.keySpec.format(k);
  const total = a.seconds.parse + a.seconds.merge + a.seconds.publish;
  return {
    inputs: a.o.inputs.map((p, i) => ({ path: a.o.inputNames?.[i] ?? displayName(p), bytes: a.inputSizes[i] })),
    inputBytes: a.outcome.inputBytes,
    parser: a.fast ? 'fast' : 'csv-parse',
    parserReason: a.parserReason,
    parseThreads: a.threads,
    parseRanges: a.outcome.ranges,
    parseRangesRetried: a.outcome.rangesRetried,
    mergeThreads: a.mergeThreads,
    rowsRead: a.outcome.rowsRead,
    rowsWritten: a.merge.rowsWritten,
    badRows: a.outcome.badRowCount,
    rejectsPath: a.o.rejectsPath ?? null,
    duplicates: {
      policy: a.policy,
      count: a.merge.duplicateCount,
      examples: a.merge.duplicates.map((d) => ({
        key: fmt(d.key),
        first: a.locate(d.first.source, d.first.line),
        duplicate: a.locate(d.duplicate.source, d.duplicate.line),
      })),
    },
    outputDir: a.o.outputDir,
    outputFiles: a.written.map((f, i) => outputFileOf(f, a.finalPaths[i], a.keySpec)),
    runs: a.runs.length,
    runBytes: a.runs.reduce((s, r) => s + r.bytes, 0),
    phases: {
      parseSeconds: roundTo3Decimals(a.seconds.parse),
      mergeSeconds: roundTo3Decimals(a.seconds.merge),
      publishSeconds: roundTo3Decimals(a.seconds.publish),
      totalSeconds: roundTo3Decimals(total),
    },
    resume: a.resume,
    rowsPerSecond: Math.round(a.outcome.rowsRead / Math.max(total, 1e-9)),
    inputMiBPerSecond: roundTo3Decimals(a.outcome.inputBytes / (1 << 20) / Math.max(total, 1e-9)),
    memoryLimitBytes: a.memoryLimitBytes,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
    valueEncoding: valueEncodingOf(a.layout.valueFormat, a.layout.valueSyntax, a.layout.delimiter, a.outcome.bound),
  };
}

/** One SST as the summary lists it: its final path, size, entries, and key bounds as the key spec shows them and in hex. */
function outputFileOf(f: WrittenFile, finalPath: string, keySpec: KeySpec): ImportSummary['outputFiles'][number] {
  const smallest = Buffer.from(f.smallestUserKey);
  const largest = Buffer.from(f.largestUserKey);
  return {
    path: finalPath,
    fileSizeBytes: f.fileSizeBytes,
    entries: f.entries,
    smallestKey: keySpec.format(smallest),
    largestKey: keySpec.format(largest),
    smallestKeyHex: smallest.toString('hex'),
    largestKeyHex: largest.toString('hex'),
  };
}

/** Absolute file and line of a row, from its parse source and the line the parser gave. */
export function locatorOf(sources: readonly SourceInfo[], nameOf: InputNamer): Locator {
  return (source, line) => {
    const s = sources[source];
    return { file: nameOf(s.file), line: s.lineOffset + line };
  };
}

/** The failure under --on-duplicate error: the first duplicates (file and line of both rows) and the total. */
export function duplicateKeysError(merge: MergeResult, keySpec: KeySpec, locate: Locator): IngestError {
  const lines = merge.duplicates.map((d) => {
    const a = locate(d.first.source, d.first.line);
    const b = locate(d.duplicate.source, d.duplicate.line);
    return `  key ${keySpec.format(d.key)}: ${b.file} line ${b.line} repeats ${a.file} line ${a.line}`;
  });
  const more = merge.duplicateCount > merge.duplicates.length ? `\n  ... and ${merge.duplicateCount - merge.duplicates.length} more` : '';
  return new IngestError(
    'DUPLICATE_KEY',
    `${merge.duplicateCount} duplicate key(s) in the input (use --on-duplicate first|last to keep one):\n${lines.join('\n')}${more}`,
  );
}

/** Rejects: JSON lines {"file","line","reason","text"}, in input order. */
export function writeRejects(file: string, rows: BadRow[], locate: Locator): void {
  const sorted = [...rows].sort((x, y) => x.source - y.source || x.line - y.line);
  const text = sorted.map((r) => JSON.stringify({ ...locate(r.source, r.line), reason: r.reason, text: r.text })).join('\n');
  try {
    fs.writeFileSync(file, text.length > 0 ? `${text}\n` : '');
  } catch (e) {
    throw new IngestError('IO', `cannot write --rejects ${file}: ${(e as Error).message}`, { cause: e });
  }
}
