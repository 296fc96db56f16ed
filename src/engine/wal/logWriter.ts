/**
 * Appends logical records to a log file in the log format (see logFormat.ts).
 *
 * Contract: `addRecord` fragments the payload across 32 KiB blocks into physical records.
 * - Opened with `sync`, the writer writes them with one positioned write and fdatasyncs before
 *   returning, so a returned `addRecord` is durable (the MANIFEST's mode).
 * - Otherwise records are buffered in memory (RocksDB's manual_wal_flush, Pebble's log writer):
 *   one write syscall per record was most of the cost of a small unsynced put. The buffer goes to
 *   the file when WRITE_BUFFER_BYTES fill up, on `sync()` (which then fdatasyncs, so a synced
 *   write of the engine is durable when it returns, with everything logged before it), on
 *   `flush()` and `close()`, and at the end of the event-loop turn that logged the record
 *   (setImmediate). So an unsynced record reaches the OS page cache within one turn of the event
 *   loop, or at once if a synchronous loop of writes fills the buffer: a process crash in that
 *   window loses the last unsynced records, which RocksDB with manual_wal_flush and a machine
 *   crash without sync both allow too. A lost tail is a whole number of records (writes go out
 *   in record order), which recovery reads as an ordinary end of log.
 * A failed write leaves the tail of the file unknown; the writer then refuses further records
 * (the caller must switch to a new log), because appending after a torn record would turn a
 * droppable tail into corruption in the middle. A failure in the end-of-turn write has no
 * caller to throw to: it surfaces at the next addRecord, flush, sync or close.
 */
import * as fs from 'fs';
import { IngestError, assert } from '../../util/errors';
import { LOG_BLOCK_SIZE_BYTES, LOG_HEADER_BYTES, LogRecordType, MAX_LOGICAL_RECORD_BYTES, recordChecksum } from './logFormat';

export interface LogWriterOptions {
  /** fdatasync after every record. */
  sync?: boolean;
}

/** Scratch space kept between records; larger records get a one-off buffer. */
const RETAINED_SCRATCH_BYTES = 1024 * 1024;
/** Unsynced records wait in memory up to this many bytes; a record at least this big goes straight out. */
export const WRITE_BUFFER_BYTES = 64 * 1024;

export class LogWriter {
  readonly path: string;
  private fd: number;
  private readonly syncEachRecord: boolean;
  /** Bytes logged so far, buffered ones included (the logical end of the log). */
  private fileOffsetBytes = 0;
  /** Records not yet written: they belong at file offset fileOffsetBytes - pendingBytes. */
  private readonly pending: Buffer;
  private pendingBytes = 0;
  /** The end-of-turn write, while one is scheduled. */
  private scheduledFlush: NodeJS.Immediate | null = null;
  private scratch: Buffer = Buffer.allocUnsafe(64 * 1024);
  private failed: Error | null = null;
  /** fdatasyncs issued so far (a statistic, and how tests see that `sync` is honoured). */
  syncCount = 0;

  private constructor(path: string, fd: number, syncEachRecord: boolean) {
    this.path = path;
    this.fd = fd;
    this.syncEachRecord = syncEachRecord;
    this.pending = syncEachRecord ? Buffer.alloc(0) : Buffer.allocUnsafe(WRITE_BUFFER_BYTES);
  }

  /** Creates a new, empty log file; the file must not exist. */
  static create(path: string, opts: LogWriterOptions = {}): LogWriter {
    let fd: number;
    try {
      fd = fs.openSync(path, 'wx');
    } catch (err) {
      throw new IngestError('IO', `cannot create log file ${path}: ${(err as Error).message}`, { cause: err });
    }
    return new LogWriter(path, fd, opts.sync === true);
  }

  get sizeBytes(): number {
    return this.fileOffsetBytes;
  }

  /** Appends one logical record; returns the file offset at which its first fragment starts. */
  addRecord(payload: Uint8Array): number {
    assert(this.fd >= 0, `log ${this.path} is closed`);
    if (this.failed !== null) {
      throw new IngestError('IO', `log ${this.path} failed earlier and accepts no more records`, { cause: this.failed });
    }
    if (payload.length > MAX_LOGICAL_RECORD_BYTES) {
      throw new IngestError(
        'INVALID_ARGUMENT',
        `log record of ${payload.length} bytes exceeds the limit of ${MAX_LOGICAL_RECORD_BYTES} bytes`,
      );
    }
    const out = this.encode(payload);
    const recordOffset = this.fileOffsetBytes;
    if (!this.syncEachRecord && out.length < WRITE_BUFFER_BYTES) {
      if (this.pendingBytes + out.length > WRITE_BUFFER_BYTES) this.flush();
      out.copy(this.pending, this.pendingBytes);
      this.pendingBytes += out.length;
      this.fileOffsetBytes += out.length;
      if (this.scheduledFlush === null) this.scheduledFlush = setImmediate(this.flushAtEndOfTurn);
      return recordOffset;
    }
    this.flush();
    this.writeAt(out, 0, out.length, recordOffset);
    if (this.syncEachRecord) {
      try {
        fs.fdatasyncSync(this.fd);
      } catch (err) {
        this.failed = err as Error;
        throw new IngestError('IO', `fdatasync of log ${this.path} failed: ${(err as Error).message}`, { cause: err });
      }
      this.syncCount++;
    }
    this.fileOffsetBytes += out.length;
    return recordOffset;
  }

  /** Writes the buffered records to the file (not durably: see sync()). */
  flush(): void {
    assert(this.fd >= 0, `log ${this.path} is closed`);
    if (this.failed !== null) {
      throw new IngestError('IO', `log ${this.path} failed earlier and accepts no more records`, { cause: this.failed });
    }
    if (this.scheduledFlush !== null) {
      clearImmediate(this.scheduledFlush);
      this.scheduledFlush = null;
    }
    if (this.pendingBytes === 0) return;
    const n = this.pendingBytes;
    this.pendingBytes = 0;
    this.writeAt(this.pending, 0, n, this.fileOffsetBytes - n);
  }

  /** The end-of-turn write (bound once, so scheduling allocates no closure). */
  private readonly flushAtEndOfTurn = (): void => {
    this.scheduledFlush = null;
    if (this.fd < 0 || this.failed !== null) return;
    try {
      this.flush();
    } catch {
      // Recorded in `failed`; the next call on the writer reports it.
    }
  };

  private writeAt(buf: Buffer, start: number, end: number, fileOffset: number): void {
    try {
      let written = 0;
      while (start + written < end) {
        written += fs.writeSync(this.fd, buf, start + written, end - start - written, fileOffset + written);
      }
    } catch (err) {
      this.failed = err as Error;
      throw new IngestError('IO', `write to log ${this.path} at offset ${fileOffset} failed: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  /** Makes everything logged so far durable (buffered records are written first). */
  sync(): void {
    this.flush();
    try {
      fs.fdatasyncSync(this.fd);
      this.syncCount++;
    } catch (err) {
      throw new IngestError('IO', `fdatasync of log ${this.path} failed: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Writes the buffered records and closes the file; a failed write still closes it, then throws. */
  close(): void {
    if (this.fd < 0) return;
    try {
      if (this.failed === null) this.flush();
    } finally {
      if (this.scheduledFlush !== null) clearImmediate(this.scheduledFlush);
      this.scheduledFlush = null;
      const fd = this.fd;
      this.fd = -1;
      fs.closeSync(fd);
    }
  }

  /**
   * Lays out the physical records of `payload` starting at the current block offset, with the
   * zero padding of any block tail too short for a header, into one buffer.
   */
  private encode(payload: Uint8Array): Buffer {
    let blockOffset = this.fileOffsetBytes % LOG_BLOCK_SIZE_BYTES;
    // Upper bound: padding once per block crossed plus one header per fragment.
    const blocksTouched = Math.ceil((payload.length + blockOffset + LOG_HEADER_BYTES) / (LOG_BLOCK_SIZE_BYTES - LOG_HEADER_BYTES)) + 1;
    const capacity = payload.length + blocksTouched * (2 * LOG_HEADER_BYTES);
    let out = this.scratch;
    if (out.length < capacity) {
      out = Buffer.allocUnsafe(capacity);
      if (capacity <= RETAINED_SCRATCH_BYTES) this.scratch = out;
    }
    let pos = 0;
    let consumed = 0;
    let first = true;
    for (;;) {
      const leftInBlock = LOG_BLOCK_SIZE_BYTES - blockOffset;
      if (leftInBlock < LOG_HEADER_BYTES) {
        out.fill(0, pos, pos + leftInBlock);
        pos += leftInBlock;
        blockOffset = 0;
        continue;
      }
      const room = leftInBlock - LOG_HEADER_BYTES;
      const fragmentBytes = Math.min(room, payload.length - consumed);
      const last = consumed + fragmentBytes === payload.length;
      const type = first && last ? LogRecordType.Full : first ? LogRecordType.First : last ? LogRecordType.Last : LogRecordType.Middle;
      out.writeUInt32LE(recordChecksum(type, payload, consumed, consumed + fragmentBytes), pos);
      out.writeUInt16LE(fragmentBytes, pos + 4);
      out[pos + 6] = type;
      out.set(payload.subarray(consumed, consumed + fragmentBytes), pos + LOG_HEADER_BYTES);
      pos += LOG_HEADER_BYTES + fragmentBytes;
      blockOffset += LOG_HEADER_BYTES + fragmentBytes;
      consumed += fragmentBytes;
      first = false;
      if (last) break;
    }
    assert(pos <= out.length, `log record layout overran its buffer (${pos} > ${out.length})`);
    return out.subarray(0, pos);
  }
}
