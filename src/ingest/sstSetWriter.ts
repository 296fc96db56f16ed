/**
 * Writes one ascending stream of distinct keys as a set of non-overlapping SSTs of about
 * `targetFileSizeBytes` each, under temporary names; `publishFiles` later gives every file of an
 * import (all partitions, in key order) its final name at once.
 *
 * Contract:
 * - `add(key, value)`: keys strictly ascending (SstFileWriter checks). A new file is started
 *   before a key when the current file has reached the target size; since keys are distinct,
 *   every cut falls between two different keys, so files never share a user key.
 * - Files are written as `<dir>/.import-<token>-p<partition>-NNNNNN.sst` (hidden temporary names).
 *   `publishFiles` renames them to `<dir>/NNNNNN.sst` (from 000001, in the order given) and
 *   fsyncs the directory, undoing the renames if one fails; `abort()` / `removeFiles` delete
 *   them. An import therefore lands whole or not at all.
 * - Size: the SstFileWriter's own estimate when it offers one (`fileSizeEstimate()`), else the
 *   key+value bytes added (an over-estimate under compression, so files come out smaller).
 */
import * as fs from 'fs';
import * as path from 'path';
import { IngestError } from '../util/errors';
import { SstFileMetadata, SstFileWriter, SstFileWriterOptions, syncDirectory } from '../sstwriter/sstFileWriter';

/** A finished file under its temporary name. Plain data (crosses postMessage; Buffers arrive as Uint8Array). */
export interface WrittenFile {
  tempPath: string;
  fileSizeBytes: number;
  entries: number;
  smallestUserKey: Uint8Array;
  largestUserKey: Uint8Array;
}

/** SstFileWriter, with the size estimate it may offer. */
interface SizedWriter {
  fileSizeEstimate?: () => number;
}

export function finalSstName(index: number): string {
  return `${String(index).padStart(6, '0')}.sst`;
}

/** Prefix of every temporary file an import with this token makes in the output directory. */
export function tempPrefix(token: string): string {
  return `.import-${token}-`;
}

const TRAILER_BYTES = 8;

export class SstSetWriter {
  readonly files: WrittenFile[] = [];
  private writer: SstFileWriter | null = null;
  private bytesAdded = 0;
  /** The current writer's fileSizeEstimate, when it has one (looked up once per file, not per row). */
  private sizeEstimate: (() => number) | null = null;

  constructor(
    private readonly dir: string,
    private readonly token: string,
    private readonly partition: number,
    private readonly targetFileSizeBytes: number,
    private readonly options: Partial<SstFileWriterOptions>,
  ) {}

  add(key: Uint8Array, value: Uint8Array): void {
    if (this.writer !== null && this.currentSize() >= this.targetFileSizeBytes) this.finishCurrent();
    if (this.writer === null) {
      const name = `${tempPrefix(this.token)}p${this.partition}-${finalSstName(this.files.length + 1)}`;
      const writer = new SstFileWriter(path.join(this.dir, name), this.options);
      const sized = writer as SstFileWriter & SizedWriter;
      this.sizeEstimate = typeof sized.fileSizeEstimate === 'function' ? () => (sized.fileSizeEstimate as () => number).call(writer) : null;
      this.writer = writer;
      this.bytesAdded = 0;
    }
    this.writer.put(key, value);
    this.bytesAdded += key.length + value.length;
  }

  private currentSize(): number {
    return this.sizeEstimate !== null ? this.sizeEstimate() : this.bytesAdded;
  }

  private finishCurrent(): void {
    const w = this.writer as SstFileWriter;
    this.writer = null;
    const meta: SstFileMetadata = w.finish();
    this.files.push({
      tempPath: meta.path,
      fileSizeBytes: meta.fileSizeBytes,
      entries: meta.numEntries,
      smallestUserKey: meta.smallestKey.subarray(0, meta.smallestKey.length - TRAILER_BYTES),
      largestUserKey: meta.largestKey.subarray(0, meta.largestKey.length - TRAILER_BYTES),
    });
  }

  /** Finishes the last file; files stay under temporary names until publishFiles(). */
  finish(): WrittenFile[] {
    if (this.writer !== null) this.finishCurrent();
    return this.files;
  }

  /** Removes every file made so far (temporary or finished). Safe to call more than once. */
  abort(): void {
    if (this.writer !== null) {
      this.writer.abort();
      this.writer = null;
    }
    removeFiles(this.files);
  }
}

export function removeFiles(files: readonly WrittenFile[]): void {
  for (const f of files) fs.rmSync(f.tempPath, { force: true });
}

/** Renames `files` (in key order) to dir/000001.sst, 000002.sst, ...; all or none. Returns the final paths. */
export function publishFiles(dir: string, files: readonly WrittenFile[]): string[] {
  const finals = files.map((_, i) => path.join(dir, finalSstName(i + 1)));
  for (const f of finals) {
    if (fs.existsSync(f)) throw new IngestError('IO', `cannot publish the import: ${f} already exists`);
  }
  const renamed: number[] = [];
  for (let i = 0; i < files.length; i++) {
    try {
      fs.renameSync(files[i].tempPath, finals[i]);
      renamed.push(i);
    } catch (e) {
      // Put back what was renamed, so the directory shows none of this import.
      for (const j of renamed) fs.renameSync(finals[j], files[j].tempPath);
      throw new IngestError('IO', `cannot rename ${files[i].tempPath} to ${finals[i]}: ${(e as Error).message}`, { cause: e });
    }
  }
  syncDirectory(dir);
  return finals;
}

/** Deletes whatever temporary files of import `token` are left in `dir` (after a crash of a worker). */
export function removeTempFiles(dir: string, token: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  const prefix = tempPrefix(token);
  for (const n of names) if (n.startsWith(prefix)) fs.rmSync(path.join(dir, n), { force: true });
}
