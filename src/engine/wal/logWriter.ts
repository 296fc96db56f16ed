/**
 * Appends logical records to a log file in the log format (see logFormat.ts).
 *
 * Contract: `addRecord` fragments the payload across 32 KiB blocks, writes all of its physical
 * records with one positioned write, and, when the writer was opened with `sync`, fdatasyncs
 * before returning, so a returned `addRecord` under `sync` is durable. Without `sync` the record
 * is in the OS page cache on return: it survives a process crash but not a machine crash.
 * A failed write leaves the tail of the file unknown; the writer then refuses further records
 * (the caller must switch to a new log), because appending after a torn record would turn a
 * droppable tail into corruption in the middle.
 */
import * as fs from 'fs';
import { IngestError, assert } from '../../util/errors';
import {
  LOG_BLOCK_SIZE_BYTES,
  LOG_HEADER_BYTES,
  LogRecordType,
  MAX_LOGICAL_RECORD_BYTES,
  recordChecksum,
} from './logFormat';

export interface LogWriterOptions {
  /** fdatasync after every record. */
  sync?: boolean;
}

/** Scratch space kept between records; larger records get a one-off buffer. */
const RETAINED_SCRATCH_BYTES = 1024 * 1024;

export class LogWriter {
  readonly path: string;
  private fd: number;
  private readonly syncEachRecord: boolean;
  /** Bytes written to the file so far. */
  private fileOffsetBytes = 0;
  private scratch: Buffer = Buffer.allocUnsafe(64 * 1024);
  private failed: Error | null = null;
  /** fdatasyncs issued so far (a statistic, and how tests see that `sync` is honoured). */
  syncCount = 0;

  private constructor(path: string, fd: number, syncEachRecord: boolean) {
    this.path = path;
    this.fd = fd;
    this.syncEachRecord = syncEachRecord;
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
    try {
      let written = 0;
      while (written < out.length) {
        written += fs.writeSync(this.fd, out, written, out.length - written, recordOffset + written);
      }
      if (this.syncEachRecord) {
        fs.fdatasyncSync(this.fd);
        this.syncCount++;
      }
    } catch (err) {
      this.failed = err as Error;
      throw new IngestError('IO', `write to log ${this.path} at offset ${recordOffset} failed: ${(err as Error).message}`, {
        cause: err,
      });
    }
    this.fileOffsetBytes += out.length;
    return recordOffset;
  }

  /** Makes everything written so far durable. */
  sync(): void {
    assert(this.fd >= 0, `log ${this.path} is closed`);
    try {
      fs.fdatasyncSync(this.fd);
      this.syncCount++;
    } catch (err) {
      throw new IngestError('IO', `fdatasync of log ${this.path} failed: ${(err as Error).message}`, { cause: err });
    }
  }

  close(): void {
    if (this.fd < 0) return;
    const fd = this.fd;
    this.fd = -1;
    fs.closeSync(fd);
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
