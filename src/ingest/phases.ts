/**
 * The import as phase tasks: functions with explicit, plain-data inputs and outputs, which a
 * driver runs in this process, on worker threads, or (given only the task and the files it
 * names) on another machine. `ingest import` (src/ingest/importer.ts) is one such driver: its
 * parse workers run parseRange, its merge workers mergeRange, and it publishes with publishSsts.
 *
 *   task                                   input → output                 durability of the output
 *   planImport(options)                    options → ImportPlan           none (reads the inputs' sizes)
 *   planParse(plan, runDir, sizing)        → ParsePlan | null             none (probes the inputs' first bytes)
 *   parseRangeTasks(parsePlan)             → ParseRangeTask[]             none
 *   parseRange(task)                       → ParseTaskResult              runs written in runDir, not fsynced
 *   finishParse(plan, parsePlan, results, rerun) → ParseOutcome                 as parseRange's (re-runs ranges whose
 *                                                                         guessed start was wrong, through `rerun`)
 *   planMerge(plan, outcome, ranges, dir, token) → MergeRangeTask[]       none
 *   mergeRange(task)                       → MergedRange                  SSTs fsynced, under temporary names in dir
 *   finishMerge(ranges)                    → MergedRange                  none (counts added, files concatenated)
 *   publishSsts(dir, files)                → final paths                  renamed to 000001.sst... at once, dir synced
 *
 * Resume lives around these, not in them: a driver records each task's result once it is
 * durable and skips the tasks whose results it has (src/ingest/resume/). The checked ingestion
 * into a database (src/ingest/importIntoDb.ts) comes after publishSsts, or takes the merged
 * files directly.
 *
 * Invariants asserted at the phases' ends: byte ranges in file order from each file's data
 * start; every range's run entries equal its rows; ranges chained where the previous one ended;
 * merge key ranges ordered, disjoint and covering the key space; every merged file inside its
 * range, files in key order and disjoint; file entries adding up to the rows written.
 */
import { IngestError, assert } from '../util/errors';
import { SstFileWriterOptions } from '../sstwriter/sstFileWriter';
import { CsvDialect, fastPathRefusal, normalizeDialect } from './csv/csvDialect';
import { checkInputs, displayName } from './csv/inputSource';
import { DEFAULT_TARGET_FILE_SIZE_BYTES, ImportOptions } from './importTypes';
import { DEFAULT_MEMORY_LIMIT_BYTES, MemoryBudget } from './memoryBudget';
import { InputNamer, ParseOutcome, ParseSettings, ParseTaskResult, SourceInfo } from './parse/parseTypes';
import { RangeParser, runParseTask } from './parse/parseRange';
import { RangePlan, RangeSizing, planParseRanges } from './parse/rangePlan';
import { RangeRunner, chainRangeResults } from './parse/rangeChain';
import { BoundLayout, LayoutPlan } from './parse/rowSink';
import { KeySpec } from './rows/keySpec';
import { DEFAULT_VALUE_FORMAT, ValueSyntax, defaultValueSyntax, valueSyntaxProblem } from './rows/valueEncoding';
import { DuplicatePolicy } from './sort/mergeToSsts';
import { MergeRangeTask, MergedRange, combineMergeRanges } from './sort/mergeRange';
import { MergeTaskBase, mergeRangeTasks, planKeyRanges } from './sort/parallelMerge';
import { SortBuffer } from './sort/sortBuffer';
import { RowOriginSources, WrittenFile, publishFiles } from './sort/sstSetWriter';

export { mergeRange } from './sort/mergeRange';
export type { MergeRangeTask, MergedRange } from './sort/mergeRange';
export type { ParseOutcome, ParseTaskResult } from './parse/parseTypes';
export type { WrittenFile } from './sort/sstSetWriter';

/** The import's options, settled: everything the phases need, as plain data. */
export interface ImportPlan {
  inputs: string[];
  /** The name each input goes by in messages and row origins. */
  inputNames: string[];
  /** Bytes of each input; null for stdin. */
  inputSizes: (number | null)[];
  totalInputBytes: number;
  dialect: CsvDialect;
  layout: LayoutPlan;
  parser: 'fast' | 'csv-parse';
  parserReason: string;
  policy: DuplicatePolicy;
  maxBadRows: number;
  memoryLimitBytes: number;
  targetFileSizeBytes: number;
  sstOptions: Partial<SstFileWriterOptions>;
  workerNiceness: number;
  writeRowOrigins: boolean;
}

/** Checks the options and settles them; touches no file but the inputs' sizes. Bad options are USAGE errors. */
export function planImport(o: ImportOptions): ImportPlan {
  const inputSizes = checkInputs(o.inputs);
  if (o.inputNames !== undefined && o.inputNames.length !== o.inputs.length) {
    throw new IngestError('INVALID_ARGUMENT', `inputNames has ${o.inputNames.length} names for ${o.inputs.length} inputs`);
  }
  const dialect = normalizeDialect(o.dialect ?? {});
  const keySpec = KeySpec.of(o.key ?? '1');
  const refusal = fastPathRefusal(dialect);
  const parserChoice = o.parser ?? 'auto';
  if (parserChoice === 'fast' && refusal !== null) throw new IngestError('USAGE', `--parser fast cannot run this dialect: ${refusal}`);
  const fast = parserChoice !== 'csv-parse' && refusal === null;
  const memoryLimitBytes = o.memoryLimitBytes ?? DEFAULT_MEMORY_LIMIT_BYTES;
  // Refuses a limit below the minimum now, before anything is read.
  new MemoryBudget(memoryLimitBytes);
  const valueFormat = o.valueFormat ?? DEFAULT_VALUE_FORMAT;
  return {
    inputs: [...o.inputs],
    inputNames: o.inputs.map((p, i) => o.inputNames?.[i] ?? displayName(p)),
    inputSizes,
    totalInputBytes: inputSizes.reduce<number>((a, b) => a + (b ?? 0), 0),
    dialect,
    layout: {
      keyRefs: [...keySpec.refs],
      valueSpec: o.value,
      valueFormat,
      valueSyntax: valueFormat === 'csv' ? csvSyntaxOf(o.valueSyntax, dialect) : undefined,
      columns: o.columns ?? null,
      header: o.header ?? false,
      delimiter: dialect.delimiter,
    },
    parser: fast ? 'fast' : 'csv-parse',
    parserReason: fast
      ? 'single-byte delimiter/quote/comment with quote doubling'
      : parserChoice === 'csv-parse'
        ? 'requested with --parser csv-parse'
        : (refusal as string),
    policy: o.onDuplicate ?? 'error',
    maxBadRows: o.maxBadRows ?? 0,
    memoryLimitBytes,
    targetFileSizeBytes: o.targetFileSizeBytes ?? DEFAULT_TARGET_FILE_SIZE_BYTES,
    sstOptions: o.sstOptions ?? {},
    workerNiceness: o.workerNiceness ?? 0,
    writeRowOrigins: o.writeRowOrigins === true,
  };
}

/** csv's delimiter and quote: the caller's (checked), else the dialect's (valueEncoding.ts). */
function csvSyntaxOf(given: ValueSyntax | undefined, dialect: CsvDialect): ValueSyntax {
  if (given === undefined) return defaultValueSyntax(dialect);
  const problem = valueSyntaxProblem(given);
  if (problem !== null) throw new IngestError('INVALID_ARGUMENT', `valueSyntax ${JSON.stringify(given)}: ${problem}`);
  return { delimiter: given.delimiter, quote: given.quote };
}

/** The name an input path goes by (ImportPlan.inputNames). */
export function inputNamer(plan: ImportPlan): InputNamer {
  return (file) => {
    const i = plan.inputs.indexOf(file);
    return i >= 0 ? plan.inputNames[i] : displayName(file);
  };
}

/** The settings every parser of the plan works with, its runs going to `runDir`. */
export function parseSettingsOf(plan: ImportPlan, runDir: string): ParseSettings {
  return {
    dialect: plan.dialect,
    plan: plan.layout,
    quoteByte: plan.dialect.quote === '' ? -1 : plan.dialect.quote.charCodeAt(0),
    maxBadRows: plan.maxBadRows,
    runDir,
    workerNiceness: plan.workerNiceness,
  };
}

/** The parse's plan: the byte ranges, and what each range's parser is given. Plain data. */
export interface ParsePlan extends RangePlan {
  settings: ParseSettings;
  /** The sort buffer of each range's parser (its share of the memory limit). */
  sortBufferBytes: number;
}

/** One range and its parser's settings: all parseRange needs. Plain data. */
export interface ParseRangeTask extends RangeParser {
  sortBufferBytes: number;
  range: ParsePlan['tasks'][number];
}

/**
 * Probes the inputs (regular files, not compressed: the fast parser's dialects), binds the layout
 * and cuts the ranges, sized for `parsers` parsers at once (or `taskBytes` each); null when the
 * layout cannot be bound from the probes (a driver then parses the inputs whole, in-process).
 */
export function planParse(plan: ImportPlan, runDir: string, parsers: number, taskBytes?: number): ParsePlan | null {
  assert(plan.parser === 'fast', 'byte ranges need the fast parser (csv-parse reads whole inputs)');
  const settings = parseSettingsOf(plan, runDir);
  const sortBufferBytes = new MemoryBudget(plan.memoryLimitBytes).parserShare(parsers).sortBufferBytes;
  const sizing: RangeSizing = taskBytes !== undefined ? { taskBytes } : { threads: parsers, sortBufferBytes: () => sortBufferBytes };
  const ranges = planParseRanges(plan.inputs, settings, inputNamer(plan), sizing);
  return ranges === null ? null : { ...ranges, settings, sortBufferBytes };
}

/** The plan's ranges as tasks, parser ids spread over `parsers` (they name the run files apart). */
export function parseRangeTasks(parsePlan: ParsePlan, parsers = 1): ParseRangeTask[] {
  const bound = parsePlan.bound as BoundLayout;
  return parsePlan.tasks.map((range, i) => ({
    settings: parsePlan.settings,
    bound,
    workerIndex: i % parsers,
    sortBufferBytes: parsePlan.sortBufferBytes,
    range,
  }));
}

/** Parses one byte range into sorted runs (parseRange.ts's contract), with a sort buffer of its own. */
export function parseRange(task: ParseRangeTask): ParseTaskResult {
  const buffer = new SortBuffer(task.sortBufferBytes);
  try {
    return runParseTask(task, buffer, task.range, null);
  } finally {
    buffer.releaseMemory();
  }
}

/** The ranges' results as one ParseOutcome (rangeChain.ts): `rerun` parses a range again from its true start. */
export async function finishParse(
  plan: ImportPlan,
  parsePlan: ParsePlan,
  results: (ParseTaskResult | null)[],
  rerun: RangeRunner,
): Promise<ParseOutcome> {
  const outcome = await chainRangeResults(parsePlan, results, rerun, parsePlan.settings.maxBadRows, inputNamer(plan));
  const entries = outcome.runs.reduce((a, r) => a + r.entries, 0);
  assert(entries === outcome.rowsRead, `the parse read ${outcome.rowsRead} rows but its runs hold ${entries}`);
  return outcome;
}

/** The origins files' view of the row sources: one name per input, a line offset per source. */
export function rowOriginSourcesOf(sources: readonly SourceInfo[], nameOf: InputNamer): RowOriginSources {
  const inputNames: string[] = [];
  const indexOfName = new Map<string, number>();
  const inputOfSource: number[] = [];
  const lineOffsetOfSource: number[] = [];
  for (const s of sources) {
    const name = nameOf(s.file);
    let i = indexOfName.get(name);
    if (i === undefined) {
      i = inputNames.length;
      inputNames.push(name);
      indexOfName.set(name, i);
    }
    inputOfSource.push(i);
    lineOffsetOfSource.push(s.lineOffset);
  }
  return { inputNames, inputOfSource, lineOffsetOfSource };
}

/**
 * Cuts the key space of the parse's runs into up to `ranges` key ranges of about equal run bytes
 * (split points from the runs' samples), each a task that writes its SSTs into `outputDir` under
 * temporary names carrying `token`. The runs must be few enough to merge at once
 * (MemoryBudget.mergeFanIn; a driver merges groups of runs first when they are not).
 */
export function planMerge(plan: ImportPlan, outcome: ParseOutcome, ranges: number, outputDir: string, token: string): MergeRangeTask[] {
  const budget = new MemoryBudget(plan.memoryLimitBytes);
  const runs = outcome.runs;
  assert(runs.length <= budget.mergeFanIn(ranges), `${runs.length} runs, more than one merge may read at once`);
  const plans = runs.length === 0 ? [] : planKeyRanges(runs, Math.max(1, ranges));
  assertRangesCoverKeys(plans);
  const rowOrigins = plan.writeRowOrigins ? rowOriginSourcesOf(outcome.sources, inputNamer(plan)) : null;
  const readBufferBytes = budget.mergeReadBufferBytes(runs.length * plans.length);
  return mergeRangeTasks(runs, plans, mergeTaskBase(plan, readBufferBytes, outputDir, token, rowOrigins));
}

/** What every key range's merge task of the plan shares (parallelMerge.ts's MergeTaskBase). */
export function mergeTaskBase(
  plan: ImportPlan,
  readBufferBytes: number,
  outputDir: string,
  token: string,
  rowOrigins: RowOriginSources | null,
): MergeTaskBase {
  return {
    policy: plan.policy,
    readBufferBytes,
    outputDir,
    token,
    targetFileSizeBytes: plan.targetFileSizeBytes,
    // Each range compresses its own blocks: a compression thread per merge thread would put
    // twice as many busy threads as cores on a two-core machine (docs/import.md).
    sstOptions: { ...plan.sstOptions, backgroundCompression: false },
    rowOrigins,
  };
}

/** Key ranges in order: the first unbounded below, the last above, each starting where the last ended. */
export function assertRangesCoverKeys(plans: ReadonlyArray<{ lowHex: string | null; highHex: string | null }>): void {
  plans.forEach((p, i) => {
    assert((i === 0) === (p.lowHex === null), `key range ${i}: only the first is unbounded below`);
    assert((i === plans.length - 1) === (p.highHex === null), `key range ${i}: only the last is unbounded above`);
    if (i > 0) assert(p.lowHex === plans[i - 1].highHex, `key range ${i} does not start where range ${i - 1} ends`);
    if (p.lowHex !== null && p.highHex !== null)
      assert(Buffer.compare(Buffer.from(p.lowHex, 'hex'), Buffer.from(p.highHex, 'hex')) < 0, `key range ${i} is empty`);
  });
}

/** The ranges' results, in range order, as one (mergeRange.ts's combineMergeRanges). */
export function finishMerge(ranges: readonly MergedRange[]): MergedRange {
  return combineMergeRanges(ranges);
}

/** Renames the merged files (in key order) to outputDir/000001.sst, ...; all or none. */
export function publishSsts(outputDir: string, files: readonly WrittenFile[]): string[] {
  return publishFiles(outputDir, files);
}
