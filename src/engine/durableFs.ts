/**
 * File-system steps the engine needs for crash safety, each named for the guarantee it gives.
 *
 * POSIX makes a new or renamed directory entry durable only once the directory itself is
 * fsynced, and a file's contents only once the file is; these helpers do both explicitly, and
 * turn failures into IngestError('IO') naming the path.
 */
import * as fs from 'fs';
import * as fsp from 'fs/promises';
import { IngestError } from '../util/errors';

export function ioError(what: string, path: string, err: unknown): IngestError {
  return new IngestError('IO', `${what} ${path}: ${(err as Error).message}`, { cause: err });
}

/**
 * syncDir on the thread pool: the same guarantee once it resolves, without holding the event loop
 * for the fsync (tens of milliseconds on a busy disk, while the journal commits).
 */
export function syncDirAsync(dir: string): Promise<void> {
  return syncPathAsync(dir, 'directory');
}

/** Makes the directory's entries (creations, renames, deletions) durable. */
export function syncDir(dir: string): void {
  syncPath(dir, 'directory');
}

/**
 * Makes a file's contents (or, for a directory, its entries) durable by path: open read-only,
 * fsync, close. `what` names it in errors ("file", "directory").
 */
export function syncPath(path: string, what = 'file'): void {
  let fd: number;
  try {
    fd = fs.openSync(path, 'r');
  } catch (err) {
    throw ioError(`cannot open ${what}`, path, err);
  }
  try {
    fs.fsyncSync(fd);
  } catch (err) {
    throw ioError(`fsync failed for ${what}`, path, err);
  } finally {
    fs.closeSync(fd);
  }
}

/** syncPath on the thread pool. */
export async function syncPathAsync(path: string, what = 'file'): Promise<void> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(path, 'r');
  } catch (err) {
    throw ioError(`cannot open ${what}`, path, err);
  }
  try {
    await handle.sync();
  } catch (err) {
    throw ioError(`fsync failed for ${what}`, path, err);
  } finally {
    await handle.close();
  }
}

/**
 * Replaces `path` with `contents` atomically and durably: write a temp file, fsync it, rename
 * it over `path`, fsync the directory. A crash leaves either the old or the new file, never a
 * mix, and the temp file is at worst a leftover the engine deletes on open.
 */
export function replaceFileDurably(path: string, tempPath: string, contents: Buffer, dir: string): void {
  let fd: number;
  try {
    fd = fs.openSync(tempPath, 'w');
  } catch (err) {
    throw ioError('cannot create', tempPath, err);
  }
  try {
    let written = 0;
    while (written < contents.length) written += fs.writeSync(fd, contents, written, contents.length - written, written);
    fs.fsyncSync(fd);
  } catch (err) {
    throw ioError('cannot write', tempPath, err);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.renameSync(tempPath, path);
  } catch (err) {
    throw ioError('cannot rename into place', path, err);
  }
  syncDir(dir);
}

/** Deletes a file that may already be gone (obsolete-file cleanup after a crash). */
export function removeIfExists(path: string): void {
  try {
    fs.unlinkSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError('cannot delete', path, err);
  }
}
