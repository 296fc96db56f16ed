/**
 * Sorted runs: the spill files of the external sort, written once in key order and read back
 * once, sequentially, by the merge. They live in the import's temp directory and never outlive it.
 *
 * On disk:
 *   "INGRUN1\n"                                    8-byte magic
 *   entry*: varint32 keyLength | varint32 valueLength | varint32 source | varint64 line | key | value
 * Entries are in key order, rows with equal keys in input order. The entry count is kept in the
 * RunInfo (in memory), and the reader checks it at the end, so a truncated run is caught.
 *
 * Samples: the RunInfo also lists (file offset, key) of the first entry and of the first entry
 * after every SAMPLE_EVERY_BYTES of the file. The parallel merge picks its key-range split
 * points from them and starts a partition's reader at the last sample below its range.
 *
 * Buffers: the writer gathers WRITE_CHUNK_BYTES before each write; the reader reads
 * `readBufferBytes` at a time and grows only for an entry larger than that (up to the entry's size).
 */
import * as fs from 'fs';
import { IngestError } from '../../util/errors';
import { writeVarint } from '../../util/coding';
import { copyRange } from '../../util/copyRange';
import { BufferRegion } from '../csv/csvReader';
import { SortBuffer } from './sortBuffer';
import { crashPoint } from '../../util/crashPoints';
import { nativeImport } from '../nativeImport';
import { nativeUtil } from '../../util/nativeUtil';

const MAGIC = Buffer.from('INGRUN1\n', 'latin1');
const WRITE_CHUNK_BYTES = 1 << 20;
/** Longest entry header: three varint32 and one varint64. */
const MAX_ENTRY_HEADER_BYTES = 5 * 3 + 10;

/** Run bytes between samples. */
export const SAMPLE_EVERY_BYTES = 64 << 10;
/** Offset of the first entry. */
export const FIRST_ENTRY_OFFSET = MAGIC.length;

export interface RunSample {
  /** File offset of the entry. */
  offset: number;
  /** Its key, hex (RunInfo crosses postMessage, so plain data). */
  keyHex: string;
}

export interface RunInfo {
  path: string;
  entries: number;
  bytes: number;
  samples: RunSample[];
}

/** Appends entries to a new run file, through a chunk of its own or one lent by the caller. */
export class RunWriter {
  readonly path: string;
  private fd: number;
  /** Entries gather in chunk[lo, fill) (at most up to hi) before each write. */
  private chunk: Buffer;
  private lo: number;
  private hi: number;
  private fill: number;
  private entries = 0;
  private bytes = 0;
  private nextSampleAt = 0;
  private readonly samples: RunSample[] = [];
  /** gatherRun's [next entry, fill]. */
  private readonly gatherState = new Uint32Array(2);

  constructor(path: string, chunk?: BufferRegion) {
    this.path = path;
    if (chunk !== undefined) {
      this.chunk = chunk.buf;
      this.lo = chunk.start;
      this.hi = chunk.end;
    } else {
      this.chunk = Buffer.allocUnsafe(WRITE_CHUNK_BYTES);
      this.lo = 0;
      this.hi = WRITE_CHUNK_BYTES;
    }
    try {
      this.fd = fs.openSync(path, 'wx');
    } catch (e) {
      throw new IngestError('IO', `cannot create run file ${path}: ${(e as Error).message}`, { cause: e });
    }
    MAGIC.copy(this.chunk, this.lo);
    this.fill = this.lo + MAGIC.length;
  }

  /** Appends an entry whose key is src[start, start + keyLength) and whose value follows it directly. */
  add(src: Buffer, start: number, keyLength: number, valueLength: number, source: number, line: number): void {
    const need = MAX_ENTRY_HEADER_BYTES + keyLength + valueLength;
    if (this.fill + need > this.hi) {
      this.flush();
      if (need > this.hi - this.lo) {
        // An entry larger than the chunk: use a chunk of our own, big enough.
        this.chunk = Buffer.allocUnsafe(need);
        this.lo = this.fill = 0;
        this.hi = need;
      }
    }
    const c = this.chunk;
    let p = this.fill;
    const fileOffset = this.bytes + (p - this.lo);
    if (fileOffset >= this.nextSampleAt) {
      this.samples.push({ offset: fileOffset, keyHex: src.toString('hex', start, start + keyLength) });
      this.nextSampleAt = fileOffset + SAMPLE_EVERY_BYTES;
    }
    p = writeVarint(c, p, keyLength);
    p = writeVarint(c, p, valueLength);
    p = writeVarint(c, p, source);
    p = writeVarint(c, p, line);
    this.fill = copyRange(src, start, start + keyLength + valueLength, c, p);
    this.entries++;
  }

  /**
   * Appends the buffer's entries order[from, to) (after `sort()`). With the native codec, one call
   * gathers rows until the chunk is full or the next sample is due, instead of an add() per row:
   * at 1M trade rows the per-row loop cost a parse worker 160-175 ms. Rows the call cannot take
   * (the one due for a sample, one that needs a flush or a chunk of its own) go through add().
   */
  addSorted(buffer: SortBuffer, from: number, to: number, useNative = nativeImport !== null): void {
    const codec = nativeImport;
    if (!useNative || codec === null || this.chunk !== buffer.arena) {
      addWithPrefetch(this, buffer, from, to);
      return;
    }
    const state = this.gatherState;
    let next = from;
    while (next < to) {
      if (this.bytes + (this.fill - this.lo) < this.nextSampleAt) {
        state[0] = next;
        state[1] = this.fill;
        const stopAtFill = Math.min(this.hi, this.lo + (this.nextSampleAt - this.bytes));
        codec.gatherRun(
          buffer.arena,
          buffer.order,
          buffer.offset,
          buffer.keyLength,
          buffer.valueLength,
          buffer.source,
          buffer.line,
          to,
          this.chunk,
          this.hi,
          stopAtFill,
          state,
        );
        this.entries += state[0] - next;
        this.fill = state[1];
        if (state[0] > next) {
          next = state[0];
          continue;
        }
      }
      addWithPrefetch(this, buffer, next, next + 1);
      next++;
    }
  }

  private flush(): void {
    let off = this.lo;
    while (off < this.fill) off += fs.writeSync(this.fd, this.chunk, off, this.fill - off);
    this.bytes += this.fill - this.lo;
    this.fill = this.lo;
  }

  finish(): RunInfo {
    this.flush();
    fs.closeSync(this.fd);
    this.fd = -1;
    crashPoint('run.spilled');
    return { path: this.path, entries: this.entries, bytes: this.bytes, samples: this.samples };
  }

  /** Closes and deletes the file (after an error). */
  abort(): void {
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
    fs.rmSync(this.path, { force: true });
  }
}

/**
 * Rows gathered per prefetch batch by addWithPrefetch (the path without the native codec). The
 * spill reads rows in key order, which is random order in the arena, so each row's first bytes
 * are a cache (and often TLB) miss. A first pass over a batch only loads one byte at each end of
 * every row; those loads do not depend on each other, so the CPU keeps many misses in flight at
 * once, and the copies that follow mostly hit the cache. Measured on the trades rows: the gather
 * loop alone about a quarter faster, the whole spill (sort included) a few percent. 64 rows of
 * ~110 bytes stay well inside L1/L2.
 */
const SPILL_PREFETCH_ROWS = 64;
/** Where the prefetch loads go: a store the JIT must keep, so it cannot drop the loads. */
let prefetchSink = 0;

/** RunWriter.add for the buffer's entries order[from, to), in prefetched batches. */
function addWithPrefetch(w: RunWriter, buffer: SortBuffer, from: number, to: number): void {
  const { order, offset, keyLength, valueLength, source, line, arena } = buffer;
  let touched = 0;
  for (let i = from; i < to; i += SPILL_PREFETCH_ROWS) {
    const batchEnd = i + SPILL_PREFETCH_ROWS < to ? i + SPILL_PREFETCH_ROWS : to;
    for (let j = i; j < batchEnd; j++) {
      const e = order[j];
      const o = offset[e];
      touched ^= arena[o] ^ arena[o + keyLength[e] + valueLength[e] - 1];
    }
    for (let j = i; j < batchEnd; j++) {
      const e = order[j];
      w.add(arena, offset[e], keyLength[e], valueLength[e], source[e], line[e]);
    }
  }
  prefetchSink ^= touched;
}

/** Sorts the buffer and writes it as one run. */
export function spillSortBuffer(buffer: SortBuffer, path: string, useNative = nativeImport !== null): RunInfo {
  buffer.sort(useNative);
  const w = new RunWriter(path, buffer.chunkRegion());
  try {
    w.addSorted(buffer, 0, buffer.count, useNative);
    return w.finish();
  } catch (e) {
    w.abort();
    throw e;
  }
}

/**
 * Where one reader of a run reads, and what it may free behind itself (RunReader's `region`):
 * - `endOffset`: it reads nothing at or past this offset (an entry start: the first sample at or
 *   above the partition's high bound, so every entry there is past the partition), so the bytes
 *   its neighbour partition alone reads stay its neighbour's;
 * - `punchFrom` / `punchTo`: the bytes only this reader reads, which it punches out of the file
 *   (fallocate PUNCH_HOLE) once consumed, up to `punchLimit` (raised by `allowPunchUpTo`;
 *   unbounded when `punchLimit` is Infinity).
 * Why punch: on a VM whose host backs guest memory lazily, and takes freed memory back, page
 * cache the kernel has not used recently costs 1.5-5 ms per MiB on first write, and memory
 * just freed 0.13 (docs/import-benchmark-history.md, "Ninth round"); the SSTs the merge writes then land in the
 * pages the runs gave up. A resumable job re-reads runs from its last finished file, so the
 * merge raises the limit only to what a resume would no longer read.
 */
export interface RunReadRegion {
  endOffset: number;
  punchFrom: number;
  punchTo: number;
  punchLimit: number;
}

/**
 * Where a reader of `run` starts for keys from `low` on: the last sample below `low` (the run's
 * first entry when there is none), so it skips at most one sample interval of entries below it.
 */
export function startOffsetBelow(run: RunInfo, low: Uint8Array): number {
  const i = firstSampleAtOrAbove(run, low);
  return i === 0 ? FIRST_ENTRY_OFFSET : run.samples[i - 1].offset;
}

/**
 * Where a reader of `run` for keys below `high` may stop: the first sample at or above `high`
 * (every entry from there on is at or above it, the run being sorted), or the run's end.
 */
export function endOffsetAtOrAbove(run: RunInfo, high: Uint8Array): number {
  const i = firstSampleAtOrAbove(run, high);
  return i === run.samples.length ? run.bytes : run.samples[i].offset;
}

/** Index of the first sample whose key is at or above `key` (samples.length when none is). */
function firstSampleAtOrAbove(run: RunInfo, key: Uint8Array): number {
  const i = run.samples.findIndex((s) => Buffer.compare(Buffer.from(s.keyHex, 'hex'), key) >= 0);
  return i < 0 ? run.samples.length : i;
}

/** A RunReadRegion before its punch limit is known (the merge sets it: see punchLimit). */
export type RunReadPlan = Omit<RunReadRegion, 'punchLimit'>;

/** The whole run, punched as it is read: for a merge that is a run's only reader. */
export const WHOLE_RUN: RunReadPlan = Object.freeze({ endOffset: Infinity, punchFrom: 0, punchTo: Infinity });

/** Bytes punched at once: one fallocate per this much consumed. */
const PUNCH_STEP_BYTES = 256 << 10;
const PAGE_BYTES = 4096;

/**
 * Reads a run front to back, or from a sample's offset to the end (or to `region.endOffset`).
 * After `next()` returns true, the entry is buf[keyStart, keyEnd) / buf[keyEnd, valueEnd) with
 * `source` and `line`; those bytes stay valid until the next call.
 */
export class RunReader {
  readonly info: RunInfo;
  buf: Buffer;
  keyStart = 0;
  keyEnd = 0;
  valueEnd = 0;
  source = 0;
  line = 0;
  private fd: number;
  private pos = 0;
  private limit = 0;
  private fileOffset = 0;
  private eof = false;
  private seen = 0;
  private readonly endOffset: number;
  /** Punching (see RunReadRegion): the next byte to punch, the exclusive end, and the current limit. */
  private punchedUpTo: number;
  private readonly punchTo: number;
  private punchLimit: number;

  /** Entries are counted (and the count checked at the end) only when reading the whole run. */
  private readonly counting: boolean;

  /**
   * @param startOffset FIRST_ENTRY_OFFSET or a sample's offset
   * @param deleteAtEnd unlink the file once it has been read to the end (its only reader)
   * @param region where to stop and what to punch (see RunReadRegion); none: to the end, no punching
   */
  constructor(
    info: RunInfo,
    readBufferBytes: number,
    startOffset = FIRST_ENTRY_OFFSET,
    private readonly deleteAtEnd = false,
    region: RunReadRegion | null = null,
  ) {
    this.info = info;
    this.buf = Buffer.allocUnsafe(Math.max(readBufferBytes, MAX_ENTRY_HEADER_BYTES * 4));
    this.endOffset = region === null ? Infinity : region.endOffset;
    this.counting = startOffset === FIRST_ENTRY_OFFSET && this.endOffset >= info.bytes;
    // SST_INGEST_PUNCH_RUNS=0 turns punching off (for comparisons).
    const punching =
      region !== null && region.punchTo > region.punchFrom && nativeUtil !== null && process.env.SST_INGEST_PUNCH_RUNS !== '0';
    // Never the first page: it holds the run's header, which every reader checks.
    this.punchedUpTo = punching
      ? Math.ceil(Math.max((region as RunReadRegion).punchFrom, FIRST_ENTRY_OFFSET) / PAGE_BYTES) * PAGE_BYTES
      : 0;
    this.punchTo = punching ? (region as RunReadRegion).punchTo : 0;
    this.punchLimit = punching ? (region as RunReadRegion).punchLimit : 0;
    try {
      this.fd = fs.openSync(info.path, punching ? 'r+' : 'r');
    } catch (e) {
      throw new IngestError('IO', `cannot open run file ${info.path}: ${(e as Error).message}`, { cause: e });
    }
    const magic = Buffer.alloc(MAGIC.length);
    if (fs.readSync(this.fd, magic, 0, MAGIC.length, 0) !== MAGIC.length || !magic.equals(MAGIC)) {
      fs.closeSync(this.fd);
      throw new IngestError('IO', `run file ${info.path} has no run header`);
    }
    this.fileOffset = startOffset;
    this.refill(0);
  }

  /** Lets the reader punch consumed bytes below `offset` (a resumable merge's last checkpoint allows it). */
  allowPunchUpTo(offset: number): void {
    if (offset > this.punchLimit) this.punchLimit = offset;
  }

  /** Punches the consumed bytes below `consumedOffset` that this reader alone reads, a step at a time. */
  private punchConsumed(consumedOffset: number): void {
    const end = Math.floor(Math.min(consumedOffset, this.punchTo, this.punchLimit) / PAGE_BYTES) * PAGE_BYTES;
    if (end - this.punchedUpTo < PUNCH_STEP_BYTES || this.fd < 0) return;
    // A refusal (a file system without hole punching) only leaves the pages in place.
    (nativeUtil as NonNullable<typeof nativeUtil>).punchHole(this.fd, this.punchedUpTo, end - this.punchedUpTo);
    this.punchedUpTo = end;
  }

  /** Keeps buf[from, limit), moves it to the front, and reads more after it. */
  private refill(from: number): void {
    if (this.punchTo > 0) this.punchConsumed(this.fileOffset - this.limit + from);
    const keep = this.limit - from;
    if (keep > 0 && from > 0) this.buf.copy(this.buf, 0, from, this.limit);
    this.limit = keep;
    this.pos = 0;
    while (!this.eof && this.limit < this.buf.length) {
      const room = Math.min(this.buf.length - this.limit, this.endOffset - this.fileOffset);
      const n = room <= 0 ? 0 : fs.readSync(this.fd, this.buf, this.limit, room, this.fileOffset);
      if (n === 0) this.eof = true;
      this.limit += n;
      this.fileOffset += n;
    }
  }

  next(): boolean {
    if (this.limit - this.pos < MAX_ENTRY_HEADER_BYTES && !this.eof) this.refill(this.pos);
    if (this.pos >= this.limit) {
      this.reachedEnd(this.seen);
      return false;
    }
    const buf = this.buf;
    let p = this.pos;
    // Four varints, inline: the merge reads every entry through here.
    let b = buf[p++];
    let keyLength = b & 0x7f;
    for (let shift = 7; b >= 0x80; shift += 7) {
      b = buf[p++];
      keyLength |= (b & 0x7f) << shift;
    }
    b = buf[p++];
    let valueLength = b & 0x7f;
    for (let shift = 7; b >= 0x80; shift += 7) {
      b = buf[p++];
      valueLength |= (b & 0x7f) << shift;
    }
    b = buf[p++];
    let source = b & 0x7f;
    for (let shift = 7; b >= 0x80; shift += 7) {
      b = buf[p++];
      source |= (b & 0x7f) << shift;
    }
    b = buf[p++];
    let line = b & 0x7f;
    for (let mul = 128; b >= 0x80; mul *= 128) {
      b = buf[p++];
      line += (b & 0x7f) * mul;
    }
    keyLength >>>= 0;
    valueLength >>>= 0;
    const need = p - this.pos + keyLength + valueLength;
    if (p + keyLength + valueLength > this.limit) {
      if (this.eof) throw new IngestError('IO', `run file ${this.info.path} is truncated inside entry ${this.seen + 1}`);
      if (need > this.buf.length) {
        const bigger = Buffer.allocUnsafe(need);
        this.buf.copy(bigger, 0, this.pos, this.limit);
        this.limit -= this.pos;
        this.pos = 0;
        this.buf = bigger;
      }
      this.refill(this.pos);
      return this.next(); // the whole entry is in the buffer now
    }
    this.keyStart = p;
    this.keyEnd = p + keyLength;
    this.valueEnd = this.keyEnd + valueLength;
    this.source = source >>> 0;
    this.line = line;
    this.pos = this.valueEnd;
    this.seen++;
    return true;
  }

  /**
   * The run was read to its end after `seen` entries (by next(), or by the native merge, which
   * decodes the buffer itself): checks the count, and frees the file when this is its only reader.
   */
  reachedEnd(seen: number): void {
    if (this.counting && seen !== this.info.entries)
      throw new IngestError('IO', `run file ${this.info.path} ended after ${seen} of ${this.info.entries} entries`);
    if (this.deleteAtEnd && this.fd >= 0) {
      // Free its disk space now, on a libuv thread, while the merge goes on (unlinking a large
      // file costs the kernel real time). A failure leaves it to the temp directory's removal at
      // the end of the import.
      this.close();
      fs.unlink(this.info.path, () => undefined);
    }
  }

  /** Valid bytes in buf (from 0), and whether the file has nothing more: for the native merge. */
  get validBytes(): number {
    return this.limit;
  }

  get atEof(): boolean {
    return this.eof;
  }

  /**
   * For the native merge, which decodes the buffer itself: keeps buf[from, validBytes) at the
   * front and reads more after it, first growing buf to `needBytes` (an entry longer than it).
   */
  refillFrom(from: number, needBytes: number): void {
    if (!(from >= 0 && from <= this.limit))
      throw new IngestError('IO', `run file ${this.info.path}: refill from ${from} outside the buffer`);
    if (needBytes > this.buf.length) {
      const bigger = Buffer.allocUnsafe(needBytes);
      this.buf.copy(bigger, 0, from, this.limit);
      this.limit -= from;
      this.buf = bigger;
      from = 0;
    }
    this.refill(from);
  }

  close(): void {
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
  }
}
