/**
 * Plain-data types shared by the import's parse phase, in-process and in worker threads:
 * settings, the task protocol between the main thread and parse workers, and outcomes.
 * Everything here crosses postMessage, so it is data only (no classes, no functions).
 */
import { IngestError } from '../../util/errors';
import { CsvDialect } from '../csv/csvDialect';
import { BadRow, BoundLayout, LayoutPlan } from './rowSink';
import { RunInfo } from '../sort/runFile';

/** Settings every parser (in-process or worker) needs. */
export interface ParseSettings {
  dialect: CsvDialect;
  plan: LayoutPlan;
  quoteByte: number;
  maxBadRows: number;
  runDir: string;
  /** CPU priority drop of parse worker threads (ImportOptions.workerNiceness). */
  workerNiceness: number;
}

/** Where rows came from: a source is a whole file or a byte range of one. */
export interface SourceInfo {
  file: string;
  /** Absolute line = lineOffset + the line the parser reported. */
  lineOffset: number;
}

export interface ParseOutcome {
  runs: RunInfo[];
  sources: SourceInfo[];
  rowsRead: number;
  badRowCount: number;
  badRows: BadRow[];
  bound: BoundLayout | null;
  inputBytes: number;
  /** Byte ranges parsed by workers (0 in-process), and how many were parsed again after a wrong boundary guess. */
  ranges: number;
  rangesRetried: number;
}

/** Data a parse worker starts with. */
export interface ParseWorkerData {
  settings: ParseSettings;
  bound: BoundLayout;
  sortBufferBytes: number;
  workerIndex: number;
  /** Float64 slots [bytesRead, rows] per worker, for progress. */
  progress: SharedArrayBuffer;
}

/**
 * The first message to a worker started ahead of its import (prestart.ts): the data it would
 * otherwise have been started with. Until it comes the worker only loads its code.
 */
export interface ParseWorkerInit {
  init: ParseWorkerData;
}

/** The workerData of a worker started ahead: its ParseWorkerData comes in a ParseWorkerInit. */
export interface DeferredParseWorkerData {
  deferred: true;
}

/** One byte range of one file: parse the records starting in [startOffset, stopAtOffset). */
export interface ParseTask {
  taskId: number;
  /** Source id stamped on the task's rows. */
  source: number;
  file: string;
  fileSizeBytes: number;
  startOffset: number;
  stopAtOffset: number;
}

export interface ParseTaskResult {
  taskId: number;
  startOffset: number;
  /** First record boundary at or after stopAtOffset (where the next range must start). */
  endOffset: number;
  /** LF bytes in [startOffset, endOffset). */
  lineFeeds: number;
  runs: RunInfo[];
  rows: number;
  bytes: number;
  badRowCount: number;
  /** The first maxBadRows + 1 bad rows, lines relative to the task (line 1 = startOffset). */
  badRows: BadRow[];
  /** The task stopped at its (maxBadRows + 1)-th bad row; it wrote no runs. */
  stoppedEarly: boolean;
}

export type WorkerReply =
  { type: 'done'; result: ParseTaskResult } | { type: 'error'; message: string; code: string | null; stack: string };

/** A bad row past --max-bad-rows; carries the bad rows so far so --rejects can still be written. */
export class TooManyBadRowsError extends IngestError {
  constructor(
    message: string,
    readonly badRows: BadRow[],
    readonly sources: SourceInfo[],
  ) {
    super('BAD_INPUT', message);
  }
}

/** @param row the fatal row, its line absolute */
/** The name an input file goes by in messages and row sources (see ImportOptions.inputNames). */
export type InputNamer = (file: string) => string;

export function tooManyBadRowsError(
  row: BadRow,
  where: string,
  maxBadRows: number,
  badRows: BadRow[],
  sources: SourceInfo[],
): TooManyBadRowsError {
  const limit = maxBadRows > 0 ? ` (more than --max-bad-rows ${maxBadRows} bad rows)` : '';
  return new TooManyBadRowsError(`${where} line ${row.line}: ${row.reason}${limit}`, badRows, sources);
}

/**
 * Sent to a parse worker after its last task instead of terminating it: it releases its sort
 * buffer and becomes a standby merge worker (src/ingest/sort/mergeWorker.ts), whose task is the
 * next message. Why: a new worker costs a new isolate (about 50-80 ms of CPU to start and as
 * much to load the merge's modules, and fresh memory to fault in); the parse worker's isolate,
 * heap and shared modules are already there.
 */
export interface BecomeMergeWorker {
  becomeMergeWorker: true;
}
