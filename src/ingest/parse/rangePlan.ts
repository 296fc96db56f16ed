/**
 * The parse phase's plan: every regular input probed and cut into byte ranges, each range a
 * ParseTask any parser (a worker thread here, another machine later) can run on its own.
 *
 * Record boundaries: a range is started after the first LF at or after its nominal offset. That
 * LF may sit inside a quoted field, so the guess is checked once the ranges are parsed
 * (rangeChain.ts): the range before it parses past its own end up to the first *true* record
 * boundary and reports it. The first range of each file starts right after the file's header,
 * found by a probe of the file's first bytes (which also binds the layout: the header's names,
 * or the first record's field count).
 *
 * Contract: the plan is plain data (it crosses to workers and, serialized, to other machines);
 * ranges of a file are in file order, disjoint, and cover the file's data from the probe's
 * data start to its end; task ids and source ids are the ranges' positions in `tasks`.
 */
import * as fs from 'fs';
import { IngestError, assert } from '../../util/errors';
import { CsvDialect, dialectBytes } from '../csv/csvDialect';
import { CsvTokenizer, RecordSink } from '../csv/csvTokenizer';
import { MAX_RECORD_BYTES } from '../csv/csvReader';
import { InputNamer, ParseSettings, ParseTask } from './parseTypes';
import { BoundLayout, bindLayout } from './rowSink';
import { SORT_BYTES_PER_ENTRY } from '../sort/sortBuffer';

const LF = 0x0a;
/**
 * The probe's first read; it grows fourfold while it holds too few complete records. Small on
 * purpose: the probe tokenizes all it reads, on the main thread, before any worker starts (a
 * 1 MiB first read cost 20-25 ms there at 1M rows, for two records).
 */
const PROBE_INITIAL_BYTES = 64 << 10;
const BOUNDARY_SCAN_BYTES = 64 << 10;
/** Expected sort-buffer bytes per input byte for ~100-byte rows (row + index); sizes ranges so one usually fits one run. */
const BUFFER_BYTES_PER_INPUT_BYTE = 1 + SORT_BYTES_PER_ENTRY / 100;
const MIN_TASK_BYTES = 1 << 20;
/** Rounds of ranges per worker at least (see planTaskBytes). */
export const MIN_PARSE_ROUNDS = 2;

interface FileProbe {
  dataStart: number;
  /** Line of the byte at dataStart. */
  dataStartLine: number;
  header: string[] | null;
  /** Field count of the first data record, or -1 when there is none in the probe. */
  firstFieldCount: number;
}

/** Reads a file's first bytes: BOM, skipped lines, header record, first data record. */
function probeFile(file: string, size: number, settings: ParseSettings, name: string): FileProbe {
  const { dialect, plan } = settings;
  const fd = fs.openSync(file, 'r');
  try {
    for (let want = PROBE_INITIAL_BYTES; ; want *= 4) {
      const buf = Buffer.allocUnsafe(Math.min(size, want));
      const got = readFileStart(fd, buf);
      const eof = got >= size;
      let pos = afterPreamble(buf, got, dialect.skipLines);
      if (pos < 0) {
        if (!eof) continue;
        pos = got; // the last skipped line has no line end
      }
      const { records, stop } = firstRecords(buf, pos, got, eof, dialect);
      if (records.length < (plan.header ? 2 : 1) && !eof) {
        if (stop < got) {
          if (want >= MAX_RECORD_BYTES) throw new IngestError('BAD_INPUT', `${name}: no complete record in its first ${want} bytes`);
          continue;
        }
        // Complete records only, but too few of them in the window: read more.
        if (want >= size) break;
        continue;
      }
      if (!plan.header) {
        const firstFieldCount = records.length > 0 ? records[0].fields.length : -1;
        return { dataStart: pos, dataStartLine: dialect.skipLines + 1, header: null, firstFieldCount };
      }
      if (records.length === 0) return { dataStart: size, dataStartLine: dialect.skipLines + 1, header: null, firstFieldCount: -1 };
      return headerProbe(buf, got, records);
    }
    return { dataStart: size, dataStartLine: 1, header: null, firstFieldCount: -1 };
  } finally {
    fs.closeSync(fd);
  }
}

/** Fills buf from the start of the file (fewer bytes if the file ends first); returns how many were read. */
function readFileStart(fd: number, buf: Buffer): number {
  let got = 0;
  while (got < buf.length) {
    const r = fs.readSync(fd, buf, got, buf.length - got, got);
    if (r === 0) break;
    got += r;
  }
  return got;
}

/** Where the data starts in buf[0, got): after a byte-order mark and `skipLines` lines; -1 when those lines do not all end in it. */
function afterPreamble(buf: Buffer, got: number, skipLines: number): number {
  let pos = got >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf ? 3 : 0;
  for (let skipped = 0; skipped < skipLines; skipped++) {
    const lf = pos < got ? buf.indexOf(LF, pos) : -1;
    if (lf < 0 || lf >= got) return -1;
    pos = lf + 1;
  }
  return pos;
}

interface ProbedRecord {
  fields: string[];
  line: number;
  start: number;
  end: number;
}

/** The first two records of buf[pos, got) as strings, and where the tokenizer stopped. */
function firstRecords(buf: Buffer, pos: number, got: number, eof: boolean, dialect: CsvDialect): { records: ProbedRecord[]; stop: number } {
  const records: ProbedRecord[] = [];
  const sink: RecordSink = {
    record(src, fieldCount, starts, ends, unescape, line, recordStart, recordEnd) {
      if (records.length >= 2) return;
      const fields: string[] = [];
      for (let i = 0; i < fieldCount; i++) {
        let s = src.toString('utf8', starts[i], ends[i]);
        if (unescape[i] !== 0) s = s.split(dialect.quote + dialect.quote).join(dialect.quote);
        fields.push(s);
      }
      records.push({ fields, line, start: recordStart, end: recordEnd });
    },
    badRecord() {},
  };
  const tokenizer = new CsvTokenizer(dialectBytes(dialect), dialect.skipLines + 1);
  const stop = tokenizer.tokenize(buf, pos, got, eof, sink);
  return { records, stop };
}

/** The probe of a file with a header: records[0] is the header, the data starts on the line after it. */
function headerProbe(buf: Buffer, got: number, records: ProbedRecord[]): FileProbe {
  const h = records[0];
  let dataStart = buf.indexOf(LF, h.end);
  dataStart = dataStart < 0 || dataStart >= got ? got : dataStart + 1;
  let lineFeeds = 0;
  for (let p = buf.indexOf(LF, h.start); p >= 0 && p < dataStart; p = buf.indexOf(LF, p + 1)) lineFeeds++;
  return {
    dataStart,
    dataStartLine: h.line + lineFeeds,
    header: h.fields,
    firstFieldCount: records.length > 1 ? records[1].fields.length : -1,
  };
}

/** The offset right after the first LF at or after `from - 1` (a guessed record boundary), or `size`. */
function nextLineStart(fd: number, from: number, size: number): number {
  if (from <= 0) return 0;
  const buf = Buffer.allocUnsafe(BOUNDARY_SCAN_BYTES);
  for (let off = from - 1; off < size; off += BOUNDARY_SCAN_BYTES) {
    const n = fs.readSync(fd, buf, 0, Math.min(BOUNDARY_SCAN_BYTES, size - off), off);
    if (n === 0) break;
    const lf = buf.indexOf(LF);
    if (lf >= 0 && lf < n) return off + lf + 1;
  }
  return size;
}

/**
 * Range size: at most what fills one sort buffer (so a range is usually one run), and a range
 * count that is a multiple of the thread count, so the last round of ranges keeps every worker
 * busy instead of leaving all but one idle while it sorts and spills (with one file; several
 * files round each file's last range anyway).
 *
 * At least MIN_PARSE_ROUNDS rounds, even when one would fit: a worker's second range reuses the
 * sort buffer memory its first touched, so an input smaller than the sort buffers first-touches
 * half as much memory. Why it matters: on the 2-core VM memory the process has not touched before
 * costs 1.7-2.4 ms per MiB to fault in (where a rewrite costs nothing), and at 1M trade rows two
 * rounds took peak RSS from 276 to 198 MiB and the parse from 0.280 to 0.249 s (medians of seven
 * alternating runs), for 20 ms more merge (four runs instead of two); three rounds gained no more
 * parse and cost 40 ms of merge. The ranges also balance better: a worker that finishes first
 * takes the next range.
 */
export function planTaskBytes(dataBytes: number, maxTaskBytes: number, threads: number): number {
  assert(threads >= 1 && Number.isInteger(threads), `parse threads must be a positive integer, got ${threads}`);
  const largest = Math.max(MIN_TASK_BYTES, maxTaskBytes);
  const rounds = Math.max(MIN_PARSE_ROUNDS, Math.ceil(dataBytes / largest / threads));
  return Math.max(MIN_TASK_BYTES, Math.ceil(dataBytes / (rounds * threads)));
}

export interface PlannedTask extends ParseTask {
  /** First range of its file: its start is known to be a record boundary. */
  firstOfFile: boolean;
  fileIndex: number;
}

/** The parse's plan: what every range task needs, and what assembling their results needs. Plain data. */
export interface RangePlan {
  /** The layout every range binds its rows with; null when the inputs hold no data at all. */
  bound: BoundLayout | null;
  tasks: PlannedTask[];
  /** Per input: the line of its first data byte. */
  dataStartLines: number[];
  /** Per input: its size in bytes. */
  sizes: number[];
  /** The nominal range size the tasks were cut with. */
  taskBytes: number;
}

/**
 * How to size ranges: a fixed size (a resumed job's, a test's, a distributed plan's), or from the
 * sort buffers of `threads` parsers, asked for only once the layout is bound, so that bad input
 * is reported before a memory limit too small for the threads.
 */
export type RangeSizing = { taskBytes: number } | { threads: number; sortBufferBytes: () => number };

/**
 * Probes the inputs, binds the layout and cuts the ranges; null when the layout cannot be bound
 * from the probes (data, but no good record in their windows: the caller parses in-process,
 * which reports each bad row as it should). Headers that differ between files are BAD_INPUT.
 */
export function planParseRanges(
  inputs: readonly string[],
  settings: ParseSettings,
  nameOf: InputNamer,
  sizing: RangeSizing,
): RangePlan | null {
  const sizes = inputs.map((f) => fs.statSync(f).size);
  const probes = inputs.map((f, i) => probeFile(f, sizes[i], settings, nameOf(f)));
  const header = commonHeader(inputs, probes, nameOf);
  const firstWithData = probes.find((p) => p.firstFieldCount >= 0);
  const named = settings.plan.columns !== null || header !== null;
  const dataStartLines = probes.map((p) => p.dataStartLine);
  if (!named && firstWithData === undefined) {
    if (probes.some((p, i) => p.dataStart < sizes[i])) return null;
    return { bound: null, tasks: [], dataStartLines, sizes, taskBytes: 0 };
  }
  const bound = bindLayout(settings.plan, header, firstWithData?.firstFieldCount ?? 0);
  const dataBytes = probes.reduce((a, p, i) => a + (sizes[i] - p.dataStart), 0);
  const taskBytes =
    'taskBytes' in sizing
      ? sizing.taskBytes
      : planTaskBytes(dataBytes, Math.floor(sizing.sortBufferBytes() / BUFFER_BYTES_PER_INPUT_BYTE), sizing.threads);
  assert(taskBytes >= 1, `parse ranges of ${taskBytes} bytes`);
  const tasks: PlannedTask[] = [];
  inputs.forEach((file, fileIndex) => cutFile(file, fileIndex, sizes[fileIndex], probes[fileIndex].dataStart, taskBytes, tasks));
  assertRangesInOrder(tasks, probes);
  return { bound, tasks, dataStartLines, sizes, taskBytes };
}

/** The first header among the probes; every other file's must equal it. */
function commonHeader(inputs: readonly string[], probes: readonly FileProbe[], nameOf: InputNamer): string[] | null {
  let header: string[] | null = null;
  for (let i = 0; i < probes.length; i++) {
    const h = probes[i].header;
    if (h === null) continue;
    if (header === null) header = h;
    else if (h.join('\u0000') !== header.join('\u0000')) {
      throw new IngestError(
        'BAD_INPUT',
        `${nameOf(inputs[i])}: header ${JSON.stringify(h)} differs from the first file's ${JSON.stringify(header)}`,
      );
    }
  }
  return header;
}

/** Appends the ranges of one file: range j nominally covers [dataStart + j*taskBytes, dataStart + (j+1)*taskBytes). */
function cutFile(file: string, fileIndex: number, size: number, dataStart: number, taskBytes: number, tasks: PlannedTask[]): void {
  if (dataStart >= size) return;
  const fd = fs.openSync(file, 'r');
  try {
    let start = dataStart;
    for (let j = 1; start < size; j++) {
      const stopAt = Math.min(size, dataStart + j * taskBytes);
      tasks.push({
        taskId: tasks.length,
        source: tasks.length,
        file,
        fileSizeBytes: size,
        startOffset: start,
        stopAtOffset: Math.max(stopAt, start),
        firstOfFile: j === 1,
        fileIndex,
      });
      if (stopAt >= size) break;
      start = Math.max(start, nextLineStart(fd, stopAt, size));
    }
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Each file's first range starts at its data start, and its ranges follow each other in file
 * order (a range parses on past its stop to the next record boundary, where the next one starts:
 * rangeChain.ts checks that once they are parsed).
 */
function assertRangesInOrder(tasks: readonly PlannedTask[], probes: readonly FileProbe[]): void {
  let previous: PlannedTask | null = null;
  for (const t of tasks) {
    assert(t.taskId === t.source && tasks[t.taskId] === t, `range ${t.taskId} out of place`);
    if (t.firstOfFile) {
      assert(t.startOffset === probes[t.fileIndex].dataStart, `the first range of input ${t.fileIndex} starts off its data`);
    } else {
      assert(previous !== null && previous.fileIndex === t.fileIndex, `range ${t.taskId} follows another input's`);
      assert(t.startOffset >= previous.startOffset && t.startOffset <= t.stopAtOffset, `range ${t.taskId} out of order`);
    }
    previous = t;
  }
}
