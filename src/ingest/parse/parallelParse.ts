/**
 * Parallel parse: regular files cut into byte ranges, parsed by worker threads (src/ingest/parse/parseWorker.ts).
 *
 * Record boundaries: a range is started after the first LF at or after its nominal offset. That
 * LF may sit inside a quoted field, so the guess is checked: the range before it parses past its
 * own end up to the first *true* record boundary and reports it; if that differs from where the
 * next range started, the next range's output is discarded and it is parsed again from the right
 * place. The first range of each file starts right after the file's header, found by a probe of
 * the file's first bytes on the main thread (which also binds the layout).
 *
 * Scheduling: ranges go to workers in file order, at most one per worker at a time (p-limit);
 * the main thread then walks the results in input order, checking boundaries, re-running
 * mismatched ranges, totalling line offsets and bad rows. A range that hit the bad-row limit
 * stops the dispatch of new ranges; the walk then decides (in input order) which bad row is the
 * fatal one.
 *
 * Memory: each worker's sort buffer is its share of the limit (MemoryBudget.parserShare), asked
 * for once the layout is bound, so bad input is reported before a limit too small for the threads.
 */
import * as fs from 'fs';
import pLimit from 'p-limit';
import { Worker } from 'worker_threads';
import { IngestError, assert } from '../../util/errors';
import { dialectBytes } from '../csv/csvDialect';
import { CsvTokenizer, RecordSink } from '../csv/csvTokenizer';
import { MAX_RECORD_BYTES } from '../csv/csvReader';
import {
  ParseOutcome,
  ParseSettings,
  ParseTask,
  ParseTaskResult,
  ParseWorkerData,
  SourceInfo,
  WorkerReply,
  BecomeMergeWorker,
  tooManyBadRowsError,
  InputNamer,
  ParseWorkerInit,
} from './parseTypes';
import { discardPrestartedWorkers, takePrestartedWorkers } from './prestart';
import { MemoryBudget } from '../memoryBudget';
import { Progress } from '../progress';
import { BadRow, BoundLayout, bindLayout } from '../rows/rowSink';
import { SORT_BYTES_PER_ENTRY } from '../sort/sortBuffer';
import { startModuleWorker } from '../../util/workerBootstrap';
import { MergeWorkerPool } from '../sort/parallelMerge';

const LF = 0x0a;
/**
 * The probe's first read; it grows fourfold while it holds too few complete records. Small on
 * purpose: the probe tokenizes all it reads, on the main thread, before any worker starts (a
 * 1 MiB first read cost 20-25 ms there at 1M rows, for two records).
 */
const PROBE_INITIAL_BYTES = 64 << 10;
const BOUNDARY_SCAN_BYTES = 64 << 10;
const PROGRESS_INTERVAL_MS = 200;
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
      const n = Math.min(size, want);
      const buf = Buffer.allocUnsafe(n);
      let got = 0;
      while (got < n) {
        const r = fs.readSync(fd, buf, got, n - got, got);
        if (r === 0) break;
        got += r;
      }
      const eof = got >= size;
      let pos = 0;
      if (got >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf) pos = 3;
      let skipped = 0;
      while (skipped < dialect.skipLines && pos < got) {
        const lf = buf.indexOf(LF, pos);
        if (lf < 0 || lf >= got) {
          pos = got;
          break;
        }
        pos = lf + 1;
        skipped++;
      }
      if (skipped < dialect.skipLines && !eof) continue;
      const records: { fields: string[]; line: number; start: number; end: number }[] = [];
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
      const needed = plan.header ? 2 : 1;
      if (records.length < needed && !eof && stop < got) {
        if (want >= MAX_RECORD_BYTES) throw new IngestError('BAD_INPUT', `${name}: no complete record in its first ${want} bytes`);
        continue;
      }
      if (records.length < needed && !eof) {
        // Complete records only, but too few of them in the window: read more.
        if (want >= size) break;
        continue;
      }
      if (!plan.header) {
        return {
          dataStart: pos,
          dataStartLine: dialect.skipLines + 1,
          header: null,
          firstFieldCount: records.length > 0 ? records[0].fields.length : -1,
        };
      }
      if (records.length === 0) return { dataStart: size, dataStartLine: dialect.skipLines + 1, header: null, firstFieldCount: -1 };
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
    return { dataStart: size, dataStartLine: 1, header: null, firstFieldCount: -1 };
  } finally {
    fs.closeSync(fd);
  }
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

interface PlannedTask extends ParseTask {
  /** First range of its file: its start is known to be a record boundary. */
  firstOfFile: boolean;
  fileIndex: number;
}

class WorkerPool {
  private readonly idle: Worker[] = [];
  private readonly all: Worker[] = [];
  private readonly waiting = new Map<Worker, { resolve: (r: ParseTaskResult) => void; reject: (e: Error) => void }>();

  constructor(count: number, dataFor: (i: number) => ParseWorkerData, niceness: number) {
    // Workers a command line started ahead (prestart.ts) first, then fresh ones.
    const prestarted = takePrestartedWorkers(count, niceness);
    for (let i = 0; i < count; i++) {
      const w = i < prestarted.length ? prestarted[i] : startModuleWorker(__filename, 'parseWorker', dataFor(i), { niceness });
      if (i < prestarted.length) w.postMessage({ init: dataFor(i) } satisfies ParseWorkerInit);
      w.on('message', (reply: WorkerReply) => {
        const waiter = this.waiting.get(w);
        this.waiting.delete(w);
        this.idle.push(w);
        if (waiter === undefined) return;
        if (reply.type === 'done') waiter.resolve(reply.result);
        else {
          const err =
            reply.code !== null
              ? new IngestError(reply.code as IngestError['code'], reply.message)
              : new Error(`parse worker failed: ${reply.message}\n${reply.stack}`);
          waiter.reject(err);
        }
      });
      w.on('error', (e) => {
        const waiter = this.waiting.get(w);
        this.waiting.delete(w);
        waiter?.reject(e);
      });
      this.idle.push(w);
      this.all.push(w);
    }
  }

  /** Runs a task on an idle worker (the caller bounds concurrency to the pool size). */
  run(task: ParseTask): Promise<ParseTaskResult> {
    const w = this.idle.pop();
    if (w === undefined) throw new Error('no idle parse worker (concurrency above pool size)');
    return new Promise((resolve, reject) => {
      this.waiting.set(w, { resolve, reject });
      const { taskId, source, file, fileSizeBytes, startOffset, stopAtOffset } = task;
      w.postMessage({ taskId, source, file, fileSizeBytes, startOffset, stopAtOffset });
    });
  }

  /**
   * Hands up to `count` idle workers over to the merge (BecomeMergeWorker) instead of
   * terminating them: each releases its sort buffer and waits in `target` for a merge task.
   */
  handOver(target: MergeWorkerPool, count: number): void {
    for (let i = 0; i < count && this.idle.length > 0; i++) {
      const w = this.idle.pop() as Worker;
      this.all.splice(this.all.indexOf(w), 1);
      w.removeAllListeners('message');
      w.removeAllListeners('error');
      w.postMessage({ becomeMergeWorker: true } satisfies BecomeMergeWorker);
      target.adopt(w);
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.all.map((w) => w.terminate()));
  }
}

/**
 * A resumable parse's hooks (src/ingest/resume/): the ranges an earlier attempt finished are
 * taken as they are, and each range this attempt starts and finishes is reported, so the job can
 * checkpoint it. `taskBytes` fixes the range size to the first attempt's, so the same ranges
 * come out whatever the memory limit or thread count of this one.
 */
export interface ParseResume {
  taskBytes: number | null;
  done: ReadonlyMap<number, ParseTaskResult>;
  onPlanned(taskBytes: number): void;
  onStarted(task: ParseTask): void;
  /**
   * Called once the range's runs are written; makes them durable and records them in the
   * background. The promise settles when that is done (a failure also comes out of settle()).
   */
  onFinished(result: ParseTaskResult): Promise<void>;
  /** Resolves once every range reported finished is durable and recorded; rejects with the first failure. */
  settle(): Promise<void>;
  /** Whether a failure leaves the runs for a resume (else they are deleted, as without resume). */
  keepsRunsAfter(err: unknown): boolean;
}

/** After a parse that succeeds, up to `count` of its workers go to `pool` as merge workers (BecomeMergeWorker). */
export interface MergeHandOver {
  pool: MergeWorkerPool;
  count: number;
}

export async function parseInWorkers(
  inputs: string[],
  settings: ParseSettings,
  threads: number,
  budget: MemoryBudget,
  progress: Progress,
  nameOf: InputNamer,
  taskBytesOverride?: number,
  resume?: ParseResume,
  handOver?: MergeHandOver,
): Promise<ParseOutcome | null> {
  // Probe every file; bind the layout from the first header or first record.
  const sizes = inputs.map((f) => fs.statSync(f).size);
  const probes = inputs.map((f, i) => probeFile(f, sizes[i], settings, nameOf(f)));
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
  const firstWithData = probes.find((p) => p.firstFieldCount >= 0);
  const named = settings.plan.columns !== null || header !== null;
  if (!named && firstWithData === undefined) {
    // Data but no good record in the probes' windows: the layout cannot be bound here, and the
    // data must not be dropped as if there were none. The caller parses in-process instead.
    if (probes.some((p, i) => p.dataStart < sizes[i])) return null;
    return {
      runs: [],
      sources: [],
      rowsRead: 0,
      badRowCount: 0,
      badRows: [],
      bound: null,
      inputBytes: sizes.reduce((a, b) => a + b, 0),
      ranges: 0,
      rangesRetried: 0,
    };
  }
  const bound: BoundLayout = bindLayout(settings.plan, header, firstWithData?.firstFieldCount ?? 0);

  // Plan ranges.
  const { sortBufferBytes } = budget.parserShare(threads);
  const dataBytes = probes.reduce((a, p, i) => a + (sizes[i] - p.dataStart), 0);
  const taskBytes =
    resume?.taskBytes ?? taskBytesOverride ?? planTaskBytes(dataBytes, Math.floor(sortBufferBytes / BUFFER_BYTES_PER_INPUT_BYTE), threads);
  resume?.onPlanned(taskBytes);
  const tasks: PlannedTask[] = [];
  inputs.forEach((file, fileIndex) => {
    const size = sizes[fileIndex];
    const p = probes[fileIndex];
    if (p.dataStart >= size) return;
    const fd = fs.openSync(file, 'r');
    try {
      // Range j nominally covers [dataStart + j*taskBytes, dataStart + (j+1)*taskBytes).
      let start = p.dataStart;
      for (let j = 1; start < size; j++) {
        const stopAt = Math.min(size, p.dataStart + j * taskBytes);
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
  });

  const progressCells = new SharedArrayBuffer(threads * 2 * Float64Array.BYTES_PER_ELEMENT);
  const cells = new Float64Array(progressCells);
  const pool = new WorkerPool(
    threads,
    (workerIndex) => ({ settings, bound, sortBufferBytes, workerIndex, progress: progressCells }),
    settings.workerNiceness,
  );
  // Prestarted workers this parse did not take (other niceness, fewer threads) go now.
  void discardPrestartedWorkers();
  const totalBytes = sizes.reduce((a, b) => a + b, 0);
  let finishedRows = 0;
  const timer = setInterval(() => {
    let bytes = 0;
    let rows = finishedRows;
    for (let i = 0; i < threads; i++) {
      bytes += cells[2 * i];
      rows += cells[2 * i + 1];
    }
    progress.update({ phase: `parse (${threads} threads)`, doneBytes: bytes, totalBytes, rows, totalRows: null });
  }, PROGRESS_INTERVAL_MS);

  const results: (ParseTaskResult | null)[] = tasks.map((t) => resume?.done.get(t.taskId) ?? null);
  // Finished ranges whose runs are still being fsynced and recorded (resumable parse only). A
  // resume redoes every range started and not yet recorded: the one each thread parses, and
  // these. A thread waits before starting a range while a whole round of them is outstanding,
  // so that is at most two ranges per parse thread even on a disk slower than the parse.
  const recording = new Set<Promise<void>>();
  const runTask = async (t: ParseTask): Promise<ParseTaskResult> => {
    while (recording.size >= threads) await Promise.race(recording);
    resume?.onStarted(t);
    const r = await pool.run(t);
    if (resume !== undefined) {
      const done = (): void => void recording.delete(recorded);
      const recorded: Promise<void> = resume.onFinished(r).then(done, done);
      recording.add(recorded);
    }
    return r;
  };
  const allRuns = (): string[] => results.flatMap((r) => (r === null ? [] : r.runs.map((x) => x.path)));
  try {
    const limit = pLimit(threads);
    let stop = false;
    await Promise.all(
      tasks.map((t) =>
        limit(async () => {
          if (stop || results[t.taskId] !== null) return;
          const r = await runTask(t);
          results[t.taskId] = r;
          if (r.stoppedEarly) stop = true;
        }),
      ),
    );

    // Walk in input order: check boundaries, re-run wrong guesses, total lines and bad rows.
    const sources: SourceInfo[] = [];
    const badRows: BadRow[] = [];
    let badRowCount = 0;
    let rowsRead = 0;
    let prev: ParseTaskResult | null = null;
    let lineOffset = 0;
    let rangesRetried = 0;
    for (const t of tasks) {
      let r = results[t.taskId];
      if (t.firstOfFile) {
        lineOffset = probes[t.fileIndex].dataStartLine - 1;
      } else if (prev !== null && (r === null || r.startOffset !== prev.endOffset)) {
        // Wrong guess (or never run): parse again from where the previous range really ended.
        if (r !== null) for (const run of r.runs) fs.rmSync(run.path, { force: true });
        const fixed: ParseTask = { ...t, startOffset: prev.endOffset, stopAtOffset: Math.max(t.stopAtOffset, prev.endOffset) };
        if (r !== null) rangesRetried++;
        r = await runTask(fixed);
        results[t.taskId] = r;
      }
      if (r === null) r = results[t.taskId] = await runTask(t);
      sources[t.source] = { file: t.file, lineOffset };
      if (badRowCount + r.badRowCount > settings.maxBadRows) {
        const fatalIndex = settings.maxBadRows - badRowCount;
        const fatal = r.badRows[fatalIndex];
        for (const b of r.badRows.slice(0, fatalIndex + 1)) badRows.push(b);
        throw tooManyBadRowsError({ ...fatal, line: lineOffset + fatal.line }, nameOf(t.file), settings.maxBadRows, badRows, sources);
      }
      for (const b of r.badRows) badRows.push(b);
      badRowCount += r.badRowCount;
      rowsRead += r.rows;
      lineOffset += r.lineFeeds;
      prev = r;
    }
    const runs = tasks.flatMap((t) => (results[t.taskId] as ParseTaskResult).runs);
    await resume?.settle();
    if (handOver !== undefined) pool.handOver(handOver.pool, handOver.count);
    return { runs, sources, rowsRead, badRowCount, badRows, bound, inputBytes: totalBytes, ranges: tasks.length, rangesRetried };
  } catch (e) {
    if (resume === undefined || !resume.keepsRunsAfter(e)) for (const p of allRuns()) fs.rmSync(p, { force: true });
    throw e;
  } finally {
    clearInterval(timer);
    await pool.close();
  }
}
