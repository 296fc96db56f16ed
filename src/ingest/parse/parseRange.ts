/**
 * One parse range: the records starting in a byte range of one regular file, parsed into sorted
 * runs. The unit of the parse phase, run by a parse worker (parseWorker.ts) or by a caller of
 * the phase functions (src/ingest/phases.ts) wherever it likes.
 *
 * Contract: a range's runs hold only that range's rows (the sort buffer is spilled at its end),
 * named after the parser and the range, in settings.runDir; so a range that started at a wrong
 * record boundary can be thrown away and run again (rangeChain.ts). A range that reaches
 * maxBadRows + 1 bad rows stops, deletes its runs and says so (stoppedEarly). On any other
 * failure its runs are deleted and the error thrown. Runs are written, not fsynced: a caller
 * that needs them to survive a crash syncs them (src/ingest/resume/).
 */
import * as fs from 'fs';
import * as path from 'path';
import { assert } from '../../util/errors';
import { CsvDialect } from '../csv/csvDialect';
import { RangeResult, readCsvRange } from '../csv/csvReader';
import { ParseTask, ParseTaskResult, ParseWorkerData } from './parseTypes';
import { RowSink } from './rowSink';
import { RunInfo, spillSortBuffer } from '../sort/runFile';
import { SortBuffer } from '../sort/sortBuffer';

/** What a parser of ranges is given: the settings, the bound layout, and its id (it names the parser's run files). */
export type RangeParser = Pick<ParseWorkerData, 'settings' | 'bound' | 'workerIndex'>;

/** Thrown through the tokenizer to end a task at its (maxBadRows + 1)-th bad row. */
class StopTask extends Error {}

export function runParseTask(data: RangeParser, buffer: SortBuffer, task: ParseTask, progress: Float64Array | null): ParseTaskResult {
  buffer.clear();
  const runs = new RangeRuns(data, buffer, task);
  const sink = rangeRowSink(data, buffer, task, () => runs.spill());
  const meter = new RangeProgress(progress, data.workerIndex, sink);
  let stoppedEarly = false;
  let read: RangeResult = { endOffset: task.startOffset, lineFeeds: 0 };
  try {
    read = readRange(data.settings.dialect, buffer, task, sink, (n) => meter.read(n));
    runs.spill();
  } catch (e) {
    runs.removeAll();
    if (!(e instanceof StopTask)) throw e;
    stoppedEarly = true;
    buffer.clear();
  }
  const result: ParseTaskResult = {
    taskId: task.taskId,
    startOffset: task.startOffset,
    endOffset: read.endOffset,
    lineFeeds: read.lineFeeds,
    runs: runs.list,
    rows: sink.rows,
    bytes: meter.bytes,
    badRowCount: sink.badRowCount,
    badRows: sink.badRows,
    stoppedEarly,
  };
  assertRangeResult(task, result);
  return result;
}

/** The range's rows as the sort buffer's entries; its (maxBadRows + 1)-th bad row throws StopTask. */
function rangeRowSink(data: RangeParser, buffer: SortBuffer, task: ParseTask, spill: () => void): RowSink {
  const { settings } = data;
  const sink = new RowSink(
    settings.plan,
    data.bound,
    buffer,
    settings.quoteByte,
    spill,
    settings.maxBadRows,
    settings.maxBadRows + 1,
    () => {
      throw new StopTask();
    },
    () => `${task.file} (bytes from ${task.startOffset})`,
  );
  sink.source = task.source;
  return sink;
}

/** Parses the task's byte range of its file into `sink`, through the sort buffer's read window; `onRead` gets each read's bytes. */
function readRange(dialect: CsvDialect, buffer: SortBuffer, task: ParseTask, sink: RowSink, onRead: (bytes: number) => void): RangeResult {
  const fd = fs.openSync(task.file, 'r');
  try {
    return readCsvRange(fd, task.fileSizeBytes, task.startOffset, task.stopAtOffset, dialect, sink, 1, buffer.windowRegion(), onRead);
  } finally {
    fs.closeSync(fd);
  }
}

/** The runs a range spills its sort buffer into, named after the parser and the range. */
class RangeRuns {
  readonly list: RunInfo[] = [];
  private runNumber = 0;

  constructor(
    private readonly data: RangeParser,
    private readonly buffer: SortBuffer,
    private readonly task: ParseTask,
  ) {}

  /** Writes what the sort buffer holds, if anything, as the next run, and empties it. */
  spill(): void {
    const { buffer, task } = this;
    if (buffer.count === 0) return;
    const file = path.join(
      this.data.settings.runDir,
      `w${this.data.workerIndex}-t${task.taskId}-${++this.runNumber}-${task.startOffset}.run`,
    );
    this.list.push(spillSortBuffer(buffer, file));
    buffer.clear();
  }

  /** Deletes the runs written so far. */
  removeAll(): void {
    for (const run of this.list) fs.rmSync(run.path, { force: true });
    this.list.length = 0;
  }
}

/** Counts a range's bytes read, and shows them and its rows in the parser's two progress slots. */
class RangeProgress {
  bytes = 0;
  private readonly slot: number;
  /**
   * The slot holds the worker's rows over all its ranges: each range adds its own to what the
   * ones before it left, so the parse's total never goes back when a worker takes a new range.
   */
  private readonly rowsBefore: number;

  constructor(
    private readonly progress: Float64Array | null,
    workerIndex: number,
    private readonly sink: RowSink,
  ) {
    this.slot = workerIndex * 2;
    this.rowsBefore = progress === null ? 0 : progress[this.slot + 1];
  }

  read(bytes: number): void {
    this.bytes += bytes;
    if (this.progress === null) return;
    this.progress[this.slot] += bytes;
    this.progress[this.slot + 1] = this.rowsBefore + this.sink.rows;
  }
}

/** Asserts what every range's result must hold, whoever ran it. */
export function assertRangeResult(task: ParseTask, r: ParseTaskResult): void {
  assert(r.taskId === task.taskId && r.startOffset === task.startOffset, `result of range ${r.taskId} for range ${task.taskId}`);
  assert(
    r.endOffset >= task.stopAtOffset || r.stoppedEarly,
    `range ${task.taskId} ended at ${r.endOffset}, before its stop ${task.stopAtOffset}`,
  );
  const entries = r.runs.reduce((a, run) => a + run.entries, 0);
  assert(r.stoppedEarly ? entries === 0 : entries === r.rows, `range ${task.taskId}: ${r.rows} rows but ${entries} run entries`);
}
