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
import { readCsvRange } from '../csv/csvReader';
import { ParseTask, ParseTaskResult, ParseWorkerData } from './parseTypes';
import { RowSink } from './rowSink';
import { RunInfo, spillSortBuffer } from '../sort/runFile';
import { SortBuffer } from '../sort/sortBuffer';

/** What a parser of ranges is given: the settings, the bound layout, and its id (it names the parser's run files). */
export type RangeParser = Pick<ParseWorkerData, 'settings' | 'bound' | 'workerIndex'>;

/** Thrown through the tokenizer to end a task at its (maxBadRows + 1)-th bad row. */
class StopTask extends Error {}

export function runParseTask(data: RangeParser, buffer: SortBuffer, task: ParseTask, progress: Float64Array | null): ParseTaskResult {
  const { settings } = data;
  const runs: RunInfo[] = [];
  let runNumber = 0;
  buffer.clear();
  const spill = (): void => {
    if (buffer.count === 0) return;
    const file = path.join(settings.runDir, `w${data.workerIndex}-t${task.taskId}-${++runNumber}-${task.startOffset}.run`);
    runs.push(spillSortBuffer(buffer, file));
    buffer.clear();
  };
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
  const slot = data.workerIndex * 2;
  // The slot holds the worker's rows over all its ranges: each range adds its own to what the
  // ones before it left, so the parse's total never goes back when a worker takes a new range.
  const rowsBefore = progress === null ? 0 : progress[slot + 1];
  let stoppedEarly = false;
  let endOffset = task.startOffset;
  let lineFeeds = 0;
  let bytes = 0;
  const fd = fs.openSync(task.file, 'r');
  try {
    const r = readCsvRange(
      fd,
      task.fileSizeBytes,
      task.startOffset,
      task.stopAtOffset,
      settings.dialect,
      sink,
      1,
      buffer.windowRegion(),
      (n) => {
        bytes += n;
        if (progress !== null) {
          progress[slot] += n;
          progress[slot + 1] = rowsBefore + sink.rows;
        }
      },
    );
    endOffset = r.endOffset;
    lineFeeds = r.lineFeeds;
    spill();
  } catch (e) {
    if (!(e instanceof StopTask)) {
      for (const run of runs) fs.rmSync(run.path, { force: true });
      throw e;
    }
    stoppedEarly = true;
    for (const run of runs) fs.rmSync(run.path, { force: true });
    runs.length = 0;
    buffer.clear();
  } finally {
    fs.closeSync(fd);
  }
  const result: ParseTaskResult = {
    taskId: task.taskId,
    startOffset: task.startOffset,
    endOffset,
    lineFeeds,
    runs,
    rows: sink.rows,
    bytes,
    badRowCount: sink.badRowCount,
    badRows: sink.badRows,
    stoppedEarly,
  };
  assertRangeResult(task, result);
  return result;
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
