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
 * - Row origins (only when constructed with a RowOriginSources): beside each SST an origins side
 *   file (src/conflict/rowOrigins.ts) with one (input, line) per entry, in the same order, named
 *   like the SST with `.origins` for `.sst`. It follows its SST through every step: written
 *   under the temporary name, renamed by `publishFiles` (`NNNNNN.origins`), removed by
 *   `abort()` / `removeFiles`. Its own half-written temp file also starts with the import's
 *   temporary prefix, so `removeTempFiles` clears it after a crash.
 */
import * as fs from 'fs';
import * as path from 'path';
import { IngestError, assert } from '../../util/errors';
import { SstFileMetadata, SstFileWriter, SstFileWriterOptions, syncDirectory } from '../../sstwriter/sstFileWriter';
import type { EncodedDataBlock } from '../../sstwriter/tableBuilder';
import { RowOriginsWriter, originsPathFor } from '../../conflict/rowOriginsFile';
import { crashPoint } from '../../util/crashPoints';

/** A finished file under its temporary name. Plain data (crosses postMessage; Buffers arrive as Uint8Array). */
export interface WrittenFile {
  tempPath: string;
  fileSizeBytes: number;
  entries: number;
  smallestUserKey: Uint8Array;
  largestUserKey: Uint8Array;
  /** Its finished origins side file (temporary name), or null when origins are not written. */
  originsTempPath: string | null;
}

/**
 * How the merge's row sources (a whole input, or a byte range of one under the parallel parse)
 * map to origins entries. Plain data (crosses postMessage to merge workers).
 */
export interface RowOriginSources {
  /** Display names of the inputs: the origins file's source table. */
  inputNames: string[];
  /** Per row source: its index in inputNames. */
  inputOfSource: number[];
  /** Per row source: added to the row's line to give its line in the input. */
  lineOffsetOfSource: number[];
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
  /** The current file's origins writer (null when origins are off or no file is open). */
  private originsWriter: RowOriginsWriter | null = null;
  /**
   * Called when a file is finished (its SST and origins file fsynced), before the next is
   * started: a resumable import checkpoints it (src/ingest/resume/).
   */
  onFileFinished: ((file: WrittenFile) => void) | null = null;
  /** Files an earlier attempt of a resumed import finished: numbering goes on after them. */
  firstFileIndex = 1;

  constructor(
    private readonly dir: string,
    private readonly token: string,
    private readonly partition: number,
    private readonly targetFileSizeBytes: number,
    private readonly options: Partial<SstFileWriterOptions>,
    private readonly rowOrigins: RowOriginSources | null = null,
  ) {}

  /** Adds one entry; `source` / `line` are the row's (as the runs carry them), for the origins file. */
  add(key: Uint8Array, value: Uint8Array, source: number, line: number): void {
    if (this.writer !== null && this.currentSize() >= this.targetFileSizeBytes) this.finishCurrent();
    const writer = this.writer ?? this.open();
    writer.put(key, value);
    this.bytesAdded += key.length + value.length;
    const origins = this.rowOrigins;
    if (origins !== null)
      (this.originsWriter as RowOriginsWriter).add(origins.inputOfSource[source], origins.lineOffsetOfSource[source] + line);
  }

  /**
   * Adds a data block the merge encoded (src/ingest/sort/nativeMerge.ts) to the current file,
   * starting one if none is open. The encoder decides the cuts, by add()'s rule on
   * `openFileSizeBytes()`, and calls `cutFile()`; origins are not written on this path.
   */
  addEncodedBlock(block: EncodedDataBlock): void {
    if (this.rowOrigins !== null) assert(false, 'encoded blocks carry no row origins');
    (this.writer ?? this.open()).putEncodedBlock(block);
  }

  /** Whether origins side files are written (then every entry goes through add()). */
  get writesOrigins(): boolean {
    return this.rowOrigins !== null;
  }

  /** The SST options every file is written with; the cut target. */
  get fileOptions(): Readonly<Partial<SstFileWriterOptions>> {
    return this.options;
  }

  get targetFileBytes(): number {
    return this.targetFileSizeBytes;
  }

  /** The open file's size estimate (SstFileWriter.fileSizeEstimate), or 0 when none is open. */
  openFileSizeBytes(): number {
    return this.writer === null ? 0 : this.currentSize();
  }

  /** Finishes the open file (the next entry or block starts a new one). */
  cutFile(): void {
    if (this.writer !== null) this.finishCurrent();
  }

  private open(): SstFileWriter {
    const name = `${tempPrefix(this.token)}p${this.partition}-${finalSstName(this.firstFileIndex + this.files.length)}`;
    const sstPath = path.join(this.dir, name);
    const writer = new SstFileWriter(sstPath, this.options);
    const sized = writer as SstFileWriter & SizedWriter;
    this.sizeEstimate = typeof sized.fileSizeEstimate === 'function' ? () => (sized.fileSizeEstimate as () => number).call(writer) : null;
    this.writer = writer;
    this.bytesAdded = 0;
    if (this.rowOrigins !== null) this.originsWriter = new RowOriginsWriter(originsPathFor(sstPath), this.rowOrigins.inputNames);
    return writer;
  }

  private currentSize(): number {
    return this.sizeEstimate !== null ? this.sizeEstimate() : this.bytesAdded;
  }

  private finishCurrent(): void {
    const w = this.writer as SstFileWriter;
    this.writer = null;
    const meta: SstFileMetadata = w.finish();
    const origins = this.originsWriter;
    this.originsWriter = null;
    let originsTempPath: string | null = null;
    if (origins !== null) {
      try {
        origins.finish();
      } catch (e) {
        fs.rmSync(meta.path, { force: true });
        throw e;
      }
      originsTempPath = origins.path;
    }
    this.files.push({
      tempPath: meta.path,
      originsTempPath,
      fileSizeBytes: meta.fileSizeBytes,
      entries: meta.numEntries,
      smallestUserKey: meta.smallestKey.subarray(0, meta.smallestKey.length - TRAILER_BYTES),
      largestUserKey: meta.largestKey.subarray(0, meta.largestKey.length - TRAILER_BYTES),
    });
    crashPoint('sst.finished');
    this.onFileFinished?.(this.files[this.files.length - 1]);
  }

  /** Finishes the last file; files stay under temporary names until publishFiles(). */
  finish(): WrittenFile[] {
    if (this.writer !== null) this.finishCurrent();
    return this.files;
  }

  /**
   * Removes every file made so far (temporary or finished); with `keepFinished`, only the file
   * being written, and the finished ones stay (a resumable job has recorded them; the importer's
   * cleanup removes them if the import ends for good). Safe to call more than once.
   */
  abort(keepFinished = false): void {
    if (this.writer !== null) {
      this.writer.abort();
      this.writer = null;
    }
    if (this.originsWriter !== null) {
      this.originsWriter.abort();
      this.originsWriter = null;
    }
    if (!keepFinished) removeFiles(this.files);
  }
}

export function removeFiles(files: readonly WrittenFile[]): void {
  for (const f of files) {
    fs.rmSync(f.tempPath, { force: true });
    if (f.originsTempPath !== null) fs.rmSync(f.originsTempPath, { force: true });
  }
}

/**
 * Renames `files` (in key order) to dir/000001.sst, 000002.sst, ... (and their origins files to
 * 000001.origins, ...); all or none. Returns the final SST paths.
 */
export function publishFiles(dir: string, files: readonly WrittenFile[], resuming = false): string[] {
  const finals = files.map((_, i) => path.join(dir, finalSstName(i + 1)));
  // Every rename to make, SSTs and origins files alike: [from, to].
  const moves: [string, string][] = [];
  files.forEach((f, i) => {
    moves.push([f.tempPath, finals[i]]);
    if (f.originsTempPath !== null) moves.push([f.originsTempPath, originsPathFor(finals[i])]);
  });
  // A resumed import may find some renames done by the attempt a crash stopped mid-publish.
  if (resuming)
    for (let i = moves.length - 1; i >= 0; i--) if (!fs.existsSync(moves[i][0]) && fs.existsSync(moves[i][1])) moves.splice(i, 1);
  for (const [, to] of moves) {
    if (fs.existsSync(to)) throw new IngestError('IO', `cannot publish the import: ${to} already exists`);
  }
  for (let i = 0; i < moves.length; i++) {
    try {
      fs.renameSync(moves[i][0], moves[i][1]);
    } catch (e) {
      // Put back what was renamed, so the directory shows none of this import.
      for (let j = 0; j < i; j++) fs.renameSync(moves[j][1], moves[j][0]);
      throw new IngestError('IO', `cannot rename ${moves[i][0]} to ${moves[i][1]}: ${(e as Error).message}`, { cause: e });
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
