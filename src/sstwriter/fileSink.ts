/**
 * Table output sinks. A table builder only appends bytes; where they go is the sink's business.
 *
 * `FileSink` gathers appended bytes in a memory buffer and writes them to its file descriptor in
 * chunks of at least FLUSH_THRESHOLD_BYTES with fs.writeSync: a 4 KiB block per syscall would
 * cost more in syscalls than in copying. An append of at least WRITE_THROUGH_BYTES (a batch of
 * stored blocks, say) is written straight through after flushing what is buffered: one more
 * syscall costs less than copying it. The buffer therefore never grows past
 * FLUSH_THRESHOLD_BYTES + WRITE_THROUGH_BYTES.
 *
 * Writeback: every WRITEBACK_EVERY_BYTES written, the sink asks the kernel to start writing them
 * to disk (startWriteback in src/util/nativeUtil.ts: sync_file_range, as RocksDB's
 * bytes_per_sync), so the fsync at the end waits for the tail instead of the whole file. A hint
 * only; without the native addon nothing changes but that wait.
 *
 * Contract: `flush()` writes everything buffered; `sync()` flushes and then fsyncs. The sink does
 * not own the descriptor (the caller opens and closes it). Write failures surface as
 * IngestError('IO') naming the file.
 */
import * as fs from 'fs';
import { ByteSink } from '../util/coding';
import { IngestError } from '../util/errors';
import { nativeUtil } from '../util/nativeUtil';

export interface TableSink {
  append(data: Uint8Array): void;
}

/** Buffered bytes that trigger a write to the file. */
export const FLUSH_THRESHOLD_BYTES = 1 << 20;
/** Appends this large are not copied into the buffer. */
export const WRITE_THROUGH_BYTES = 64 * 1024;
/** Bytes written between two writeback requests. */
export const WRITEBACK_EVERY_BYTES = 4 << 20;
/** The buffer holds less than the threshold plus one append smaller than WRITE_THROUGH_BYTES. */
const BUFFER_LIMIT_BYTES = FLUSH_THRESHOLD_BYTES + WRITE_THROUGH_BYTES;

export class FileSink implements TableSink {
  private readonly buffer = new ByteSink(BUFFER_LIMIT_BYTES, BUFFER_LIMIT_BYTES);
  /** Bytes handed to the OS so far (the file offset of the first buffered byte). */
  private writtenBytes = 0;
  /** Where the next writeback request starts: bytes before it were asked for already. */
  private writebackFrom = 0;

  constructor(
    private readonly fd: number,
    private readonly fileName: string,
  ) {}

  append(data: Uint8Array): void {
    if (data.length >= WRITE_THROUGH_BYTES) {
      this.flush();
      this.writeFully(data);
      return;
    }
    this.buffer.putBytes(data);
    if (this.buffer.length >= FLUSH_THRESHOLD_BYTES) this.flush();
  }

  /** Total bytes appended (written or buffered). */
  sizeBytes(): number {
    return this.writtenBytes + this.buffer.length;
  }

  flush(): void {
    if (this.buffer.length === 0) return;
    this.writeFully(this.buffer.view());
    this.buffer.clear();
  }

  sync(): void {
    this.flush();
    try {
      fs.fsyncSync(this.fd);
    } catch (e) {
      throw new IngestError('IO', `fsync of ${this.fileName} failed: ${(e as Error).message}`, { cause: e });
    }
  }

  private writeFully(data: Uint8Array): void {
    let done = 0;
    try {
      while (done < data.length) {
        done += fs.writeSync(this.fd, data, done, data.length - done, this.writtenBytes + done);
      }
    } catch (e) {
      throw new IngestError(
        'IO',
        `write of ${data.length} bytes at offset ${this.writtenBytes} to ${this.fileName} failed: ${(e as Error).message}`,
        { cause: e },
      );
    }
    this.writtenBytes += data.length;
    if (nativeUtil !== null && this.writtenBytes - this.writebackFrom >= WRITEBACK_EVERY_BYTES) {
      nativeUtil.startWriteback(this.fd, this.writebackFrom, this.writtenBytes - this.writebackFrom);
      this.writebackFrom = this.writtenBytes;
    }
  }
}

/** A sink that keeps everything in memory (tests, small tables). */
export class MemorySink implements TableSink {
  private readonly buffer: ByteSink;

  constructor(limitBytes = 0x7fffffff) {
    this.buffer = new ByteSink(64 * 1024, limitBytes);
  }

  append(data: Uint8Array): void {
    this.buffer.putBytes(data);
  }

  /** The bytes appended so far (a copy). */
  contents(): Buffer {
    return Buffer.from(this.buffer.view());
  }
}
