/**
 * The parse of whole inputs in this process: what runs where byte ranges cannot (stdin, .gz,
 * the csv-parse dialects, small inputs, a layout the probes could not bind). Every input is read
 * from its start by one parser into one sort buffer, spilled to a run in `nextRunPath()` each
 * time it fills; a row's source is its input's index, its line the input's own.
 *
 * Contract: as a range's parse (parseRange.ts), but for whole inputs: the runs hold every good
 * row, in sorted runs; a bad row past maxBadRows throws TooManyBadRowsError (with the bad rows
 * so far); runs are written, not fsynced.
 */
import { readCsvFast, readCsvWithCsvParse } from '../csv/csvReader';
import { openByteSource, statInputSize } from '../csv/inputSource';
import { MemoryBudget } from '../memoryBudget';
import { Progress } from '../progress';
import { RunInfo, spillSortBuffer } from '../sort/runFile';
import { SortBuffer } from '../sort/sortBuffer';
import { InputNamer, ParseOutcome, ParseSettings, SourceInfo, tooManyBadRowsError } from './parseTypes';
import { RowSink } from './rowSink';

export async function parseWholeInputs(
  inputs: string[],
  settings: ParseSettings,
  fast: boolean,
  budget: MemoryBudget,
  progress: Progress,
  nameOf: InputNamer,
  nextRunPath: () => string,
): Promise<ParseOutcome> {
  const buffer = new SortBuffer(budget.parserShare(1).sortBufferBytes);
  const runs: RunInfo[] = [];
  const sources: SourceInfo[] = inputs.map((file) => ({ file, lineOffset: 0 }));
  const spill = (): void => {
    if (buffer.count === 0) return;
    runs.push(spillSortBuffer(buffer, nextRunPath()));
    buffer.clear();
  };
  const describe = (source: number): string => nameOf(sources[source].file);
  const sink = new RowSink(
    settings.plan,
    null,
    buffer,
    settings.quoteByte,
    spill,
    settings.maxBadRows,
    settings.maxBadRows + 1,
    (row) => {
      throw tooManyBadRowsError(row, describe(row.source), settings.maxBadRows, sink.badRows, sources);
    },
    describe,
  );
  let inputBytes = 0;
  let doneBefore = 0;
  const total = inputs.reduce<number | null>((a, p) => (a === null || p === '-' ? null : a + statInputSize(p)), 0);
  for (let i = 0; i < inputs.length; i++) {
    sink.source = i;
    sink.expectHeader = settings.plan.header;
    const src = await openByteSource(inputs[i]);
    const onProgress = (consumed: number): void =>
      progress.update({ phase: 'parse', doneBytes: doneBefore + consumed, totalBytes: total, rows: sink.rows, totalRows: null });
    try {
      if (fast) await readCsvFast(src, settings.dialect, sink, { onProgress, window: buffer.windowRegion() });
      else await readCsvWithCsvParse(src, settings.dialect, sink, { onProgress });
      inputBytes += src.consumedBytes();
      doneBefore += src.consumedBytes();
    } finally {
      await src.close();
    }
  }
  spill();
  return {
    runs,
    sources,
    rowsRead: sink.rows,
    badRowCount: sink.badRowCount,
    badRows: sink.badRows,
    bound: sink.bound,
    inputBytes,
    ranges: 0,
    rangesRetried: 0,
  };
}
