/**
 * Table file writer: a TableBuilder bound to a new file on disk, for the engine's flush and
 * compaction outputs (arbitrary internal keys and sequence numbers) and as the storage layer of
 * SstFileWriter.
 *
 * Contract:
 * - The constructor creates `path` exclusively (it must not exist) and fails with
 *   IngestError('IO') otherwise.
 * - `add` / `addRangeTombstone` follow TableBuilder's contract (strictly increasing internal
 *   keys; tombstones in any order). Output is buffered and written in >= 1 MiB chunks.
 * - `finish()` writes the table, fsyncs and closes the file and returns its metadata. It does
 *   not sync the directory: the caller decides when the new name must be durable (SstFileWriter
 *   renames first; the engine syncs when it installs a version).
 * - `abort()` closes and unlinks the file; it is idempotent and a no-op after a successful
 *   `finish()`. After any thrown error other than KEY_ORDER / INVALID_ARGUMENT from `add`, the
 *   writer is unusable and the caller must `abort()`.
 */
import * as fs from 'fs';
import { IngestError } from '../util/errors';
import { FileSink } from './fileSink';
import { EncodedDataBlock, TableBuildResult, TableBuilder, TableBuilderOptions, resolveTableBuilderOptions } from './tableBuilder';

export interface TableFileMetadata extends TableBuildResult {
  path: string;
}

type State = 'open' | 'finished' | 'aborted';

export class TableFileWriter {
  readonly path: string;
  private readonly fd: number;
  private readonly sink: FileSink;
  private readonly builder: TableBuilder;
  private state: State = 'open';
  private fdOpen = true;

  constructor(path: string, options: Partial<TableBuilderOptions> = {}) {
    this.path = path;
    // Validate options before touching the file system, so a bad option leaves nothing behind.
    const resolved = resolveTableBuilderOptions(options);
    try {
      this.fd = fs.openSync(path, 'wx', 0o644);
    } catch (e) {
      throw new IngestError('IO', `cannot create table file ${path}: ${(e as Error).message}`, { cause: e });
    }
    this.sink = new FileSink(this.fd, path);
    try {
      this.builder = new TableBuilder(this.sink, resolved);
    } catch (e) {
      // E.g. the compression worker could not be started: leave nothing behind.
      fs.closeSync(this.fd);
      fs.rmSync(path, { force: true });
      throw e;
    }
  }

  /** See TableBuilder.add (`userKey` is an optional allocation-saving hint). */
  add(internalKey: Uint8Array, value: Uint8Array, userKey?: Uint8Array): void {
    this.checkOpen();
    this.builder.add(internalKey, value, userKey);
  }

  /** See TableBuilder.addEncodedDataBlock. */
  addEncodedDataBlock(block: EncodedDataBlock): void {
    this.checkOpen();
    this.builder.addEncodedDataBlock(block);
  }

  addRangeTombstone(startUserKey: Uint8Array, endUserKey: Uint8Array, seq: number): void {
    this.checkOpen();
    this.builder.addRangeTombstone(startUserKey, endUserKey, seq);
  }

  numEntries(): number {
    return this.builder.numEntries();
  }

  /** Bytes the file holds so far plus the open data block (meta blocks not counted). */
  fileSizeEstimate(): number {
    return this.builder.fileSizeEstimate();
  }

  finish(): TableFileMetadata {
    this.checkOpen();
    const result = this.builder.finish();
    this.sink.sync();
    this.closeFd();
    this.state = 'finished';
    return { path: this.path, ...result };
  }

  abort(): void {
    if (this.state !== 'open') return;
    this.state = 'aborted';
    this.builder.abandon();
    try {
      this.closeFd();
    } finally {
      try {
        fs.unlinkSync(this.path);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
          throw new IngestError('IO', `cannot remove aborted table file ${this.path}: ${(e as Error).message}`, { cause: e });
        }
      }
    }
  }

  private checkOpen(): void {
    if (this.state !== 'open') throw new IngestError('INVALID_ARGUMENT', `table file writer for ${this.path} is already ${this.state}`);
  }

  private closeFd(): void {
    if (!this.fdOpen) return;
    this.fdOpen = false;
    try {
      fs.closeSync(this.fd);
    } catch (e) {
      throw new IngestError('IO', `close of ${this.path} failed: ${(e as Error).message}`, { cause: e });
    }
  }
}
