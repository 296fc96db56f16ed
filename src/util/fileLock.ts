/**
 * POSIX record locks (fcntl F_SETLK / F_GETLK) over a whole file, through the native addon
 * (native/utilExports.c; loaded by nativeAddon.ts), or null when the addon is not in use: Node
 * has no fcntl. The database's LOCK (src/engine/lockFile.ts) takes one so that RocksDB, which
 * locks DIR/LOCK this way, sees a database this engine holds as held, and the other way round.
 *
 * Contract (the kernel's, and easy to get wrong):
 * - The lock is the process's, not the descriptor's: every thread of the process shares it, and
 *   the process never conflicts with itself (a second lock by the same process just succeeds).
 * - Closing ANY descriptor of the file in the process drops the process's locks on it, so the
 *   holder keeps one descriptor open for as long as it holds the lock, and nothing else in the
 *   process may open and close that file meanwhile (no fs.readFileSync of it, no copy).
 * - The descriptor must be open for writing (a write lock); the lock goes when the process dies.
 *
 * Errors: a negative or non-integer fd throws an Error with code INVALID_ARGUMENT; otherwise the
 * calls report through their results.
 */
import { constants } from 'os';
import { nativeFace } from './nativeAddon';

export interface NativeFileLock {
  /** Takes a write lock over the whole file without waiting: 0, else the errno (EAGAIN / EACCES: held by another process). */
  lockWholeFile(fd: number): number;
  /**
   * The pid of another process holding a lock that conflicts with a whole-file write lock; 0 when
   * one is held but the kernel cannot name its holder, -1 when none is held, -2 when the call fails.
   */
  wholeFileLockHolder(fd: number): number;
}

const loaded = nativeFace<NativeFileLock>({ lockWholeFile: true, wholeFileLockHolder: true });

/** The lock calls, or null (then a database's LOCK is invisible to RocksDB: docs/rocksdb-compat.md). */
export const nativeFileLock: NativeFileLock | null = loaded.face;

/** Why the lock calls are or are not in use ("loaded <file>" when they are). */
export const nativeFileLockStatus: string = loaded.status;

/** Errnos of lockWholeFile that mean "another process holds it". */
export const LOCK_HELD_ERRNOS: ReadonlySet<number> = new Set([constants.errno.EAGAIN, constants.errno.EACCES]);
