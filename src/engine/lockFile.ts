/**
 * The LOCK file: at most one opener of a database at a time, across processes and within one,
 * and (with the native addon) mutual exclusion with RocksDB.
 *
 * Two mechanisms, both kept:
 * - The file's existence, for openers of this engine: an opener creates LOCK exclusively, holding
 *   "<pid> <process start time>\n", and deletes it on close. This works without the addon and
 *   names the holder; a LOCK whose owner died (SIGKILL) is stale and taken over (below).
 * - An fcntl(F_SETLK) write lock over the whole LOCK file, as RocksDB takes (src/util/fileLock.ts,
 *   through the native addon): RocksDB (ldb, db_bench, an application) then fails to open a
 *   directory this engine holds ("IO error: While lock file: DIR/LOCK: Resource temporarily
 *   unavailable"), and this engine fails on one RocksDB holds, both ways. Without the addon
 *   (SST_INGEST_NATIVE=0, or no C compiler at install) there is no fcntl in Node: RocksDB does
 *   not see this engine's LOCK as held (docs/rocksdb-compat.md says so), and RocksDB's lock is
 *   found through /proc/locks instead.
 * The fcntl lock is the process's and the kernel drops it when the process closes ANY descriptor
 * of the file, so DbLock keeps the one descriptor it locked open from acquire to release and
 * reads and truncates LOCK through it; nothing else in the process may open LOCK while it is held
 * (a second opener in the process is refused by a process-wide Set before it reads the file).
 *
 * Cases:
 * - Within one process, a second open of the same directory must fail even though the pid in
 *   LOCK is our own; a process-wide Set of open (real) directory paths decides that.
 * - A new LOCK is written to a temp file, fcntl-locked, then hard-linked into place: no opener
 *   ever sees a LOCK without its owner, nor ours without its fcntl lock.
 * - A process killed with SIGKILL leaves its LOCK behind, and crash recovery must still work.
 *   A LOCK whose pid is dead is stale and is taken over. A live pid whose start time differs
 *   from the recorded one is a reused pid (common in containers), also stale. The start time is
 *   field 22 of /proc/<pid>/stat (clock ticks since boot); where /proc is unavailable the pid
 *   alone decides, erring towards "locked".
 * - RocksDB locks an empty LOCK file with fcntl(F_SETLK) and leaves it behind when it closes. An
 *   empty LOCK is therefore RocksDB's: held while another process has an fcntl lock on it (the
 *   holder's pid is reported), else taken over; on release an empty LOCK is put back, so the
 *   directory is left as RocksDB expects it. A stale LOCK of ours that a RocksDB process has since
 *   locked (it keeps the content) is held too.
 * - Takeover with the addon happens in place: the existing LOCK is opened and fcntl-locked first
 *   (failing as held when another process has it), re-read through that descriptor, and only if
 *   it is still the same stale or empty file is our record written into it. Two openers racing
 *   for it are thus decided by the kernel. Without the addon the stale LOCK is re-read right
 *   before it is deleted and a new one created; two processes taking over the same stale lock at
 *   the same instant is the one race that cannot close without kernel locks.
 */
import * as fs from 'fs';
import * as path from 'path';
import { DbLockedError, IngestError } from '../util/errors';
import { LOCK_HELD_ERRNOS, NativeFileLock, nativeFileLock } from '../util/fileLock';
import { lockFileName } from './fileNames';
import { ioError, removeIfExists } from './durableFs';

/** Real paths of databases this process holds open. */
const openDirs = new Set<string>();

const MAX_LOCK_FILE_BYTES = 256;
const MAX_TAKEOVER_ATTEMPTS = 3;

interface LockOwner {
  pid: number;
  /** Start time from /proc, or '-' when unknown. */
  startTime: string;
}

/** Field 22 (starttime) of /proc/<pid>/stat, or null when /proc does not say. */
function processStartTime(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The command name (field 2) is parenthesised and may contain spaces; fields after it are not.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

/** This process's start time as LOCK and scratch-directory names record it ('-' when unknown). */
export const ownStartTime = processStartTime(process.pid) ?? '-';

function parseOwner(text: string): LockOwner | null {
  const m = /^(\d+) (\S+)\n$/.exec(text);
  return m === null ? null : { pid: Number(m[1]), startTime: m[2] };
}

function ownerIsAlive(owner: LockOwner): boolean {
  // Our own pid without our Set entry: a lock an earlier process with this pid left behind, or
  // one whose deletion failed at close. Either way no live opener holds it.
  if (owner.pid === process.pid) return false;
  return processIsAlive(owner.pid, owner.startTime);
}

/**
 * Whether the process `pid` that started at `startTime` ('-' = unknown: the pid alone decides)
 * is still running. A live pid with another start time is a reused pid: not the same process.
 * Errs towards "alive" when the system does not tell (EPERM, no /proc), so a caller that deletes
 * a dead owner's state never deletes a live one's.
 */
export function processIsAlive(pid: number, startTime: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (startTime === '-') return true;
  const actual = processStartTime(pid);
  return actual === null || actual === startTime;
}

function lockedError(dir: string, pid: number | 'unknown', detail?: string): DbLockedError {
  return new DbLockedError(dir, pid === 'unknown' ? null : pid, detail);
}

/** DB_LOCKED for a LOCK another process holds an fcntl lock on (RocksDB's way, and ours). */
function fcntlLockedError(dir: string, lockPath: string, holder: number | null): DbLockedError {
  return lockedError(
    dir,
    holder === null || holder <= 0 ? 'unknown' : holder,
    `another process holds an fcntl lock on ${lockPath} (RocksDB, or this engine)`,
  );
}

function readLock(lockPath: string): string | null {
  try {
    const text = fs.readFileSync(lockPath, 'latin1');
    return text.slice(0, MAX_LOCK_FILE_BYTES);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw ioError('cannot read', lockPath, err);
  }
}

/** The LOCK's content read through `fd` (never by path while its fcntl lock is held: see the module comment). */
function readLockFd(fd: number): string {
  const buf = Buffer.alloc(MAX_LOCK_FILE_BYTES);
  const n = fs.readSync(fd, buf, 0, buf.length, 0);
  return buf.toString('latin1', 0, n);
}

/** Whether `fd` is still the file at `lockPath` (not deleted or replaced meanwhile). */
function isFileAt(fd: number, lockPath: string): boolean {
  const held = fs.fstatSync(fd);
  const named = fs.statSync(lockPath, { throwIfNoEntry: false });
  return named !== undefined && named.ino === held.ino && named.dev === held.dev;
}

/** Replaces the content of the file at `fd` with `content`. */
function writeLockFd(fd: number, content: string): void {
  fs.ftruncateSync(fd, 0);
  fs.writeSync(fd, content, 0, 'latin1');
}

/** Takes the fcntl lock on a fresh, private file (nobody else can hold it): IO error on failure. */
function lockFreshFile(lock: NativeFileLock, fd: number, file: string): void {
  const errno = lock.lockWholeFile(fd);
  if (errno !== 0) throw new IngestError('IO', `cannot fcntl-lock ${file}: errno ${errno}`);
}

/** A directory that refuses writes: an error that says so (the read commands open it read-only). */
function lockCreateError(dir: string, file: string, err: unknown): IngestError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EROFS' || code === 'EACCES' || code === 'EPERM') {
    return new IngestError(
      'IO',
      `cannot write to the database directory ${dir} (${code}: ${code === 'EROFS' ? 'a read-only file system' : 'no write permission'}): writes need a writable directory; get, scan and stats read it read-only`,
      { cause: err },
    );
  }
  return ioError('cannot create', file, err);
}

/**
 * Creates LOCK holding `content` atomically, fcntl-locked (with the addon) before its name
 * appears: returns its open descriptor, to be kept while the lock is held, or null if LOCK
 * already exists.
 */
function tryCreateLock(dir: string, realDir: string, lockPath: string, content: string): number | null {
  const temp = path.join(realDir, `LOCK.${process.pid}.${Date.now()}.tmp`);
  let fd: number;
  try {
    fd = fs.openSync(temp, 'wx+');
  } catch (err) {
    throw lockCreateError(dir, temp, err);
  }
  let linked = false;
  try {
    fs.writeSync(fd, content, 0, 'latin1');
    if (nativeFileLock !== null) lockFreshFile(nativeFileLock, fd, temp);
    fs.linkSync(temp, lockPath);
    linked = true;
    return fd;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return null;
    if (err instanceof IngestError) throw err;
    throw ioError('cannot create', lockPath, err);
  } finally {
    if (!linked) fs.closeSync(fd);
    removeIfExists(temp);
  }
}

/**
 * Takes over, in place and under its fcntl lock, a LOCK judged stale or RocksDB's with content
 * `expected` (see the module comment): returns its descriptor holding our `content`, null when
 * the LOCK changed meanwhile (retry), or throws DB_LOCKED when another process holds its lock.
 */
function takeOverInPlace(lock: NativeFileLock, dir: string, lockPath: string, expected: string, content: string): number | null {
  let fd: number;
  try {
    fd = fs.openSync(lockPath, 'r+');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw lockCreateError(dir, lockPath, err);
  }
  let kept = false;
  try {
    const errno = lock.lockWholeFile(fd);
    if (LOCK_HELD_ERRNOS.has(errno)) throw fcntlLockedError(dir, lockPath, lock.wholeFileLockHolder(fd));
    if (errno !== 0) throw new IngestError('IO', `cannot fcntl-lock ${lockPath}: errno ${errno}`);
    if (!isFileAt(fd, lockPath) || readLockFd(fd) !== expected) return null;
    writeLockFd(fd, content);
    kept = true;
    return fd;
  } finally {
    if (!kept) fs.closeSync(fd);
  }
}

/**
 * The pid holding a POSIX or flock lock on the file with inode `ino`, per /proc/locks; null when
 * none does. When /proc/locks cannot be read: "held" (pid 0) if `unknownIsHeld`, else null (a
 * stale LOCK of ours is then taken over on the pid alone, as before /proc/locks was consulted).
 * Used without the addon only: with it, fcntl itself answers.
 */
function lockHolderPid(ino: number, unknownIsHeld = true): number | null {
  let text: string;
  try {
    text = fs.readFileSync('/proc/locks', 'latin1');
  } catch {
    return unknownIsHeld ? 0 : null;
  }
  // "1: POSIX  ADVISORY  WRITE 4242 08:01:1234567 0 EOF": pid, then major:minor:inode.
  for (const line of text.split('\n')) {
    const m = /^\d+: \S+\s+\S+\s+\S+\s+(\d+) [0-9a-f]+:[0-9a-f]+:(\d+) /.exec(line);
    if (m !== null && Number(m[2]) === ino) return Number(m[1]);
  }
  return null;
}

/**
 * Without the addon: takes over RocksDB's empty LOCK when no process holds it (see the module
 * comment); throws DB_LOCKED when one does. Returns false when the LOCK changed meanwhile (retry).
 */
function takeOverRocksdbLock(dir: string, lockPath: string): boolean {
  let st: fs.Stats;
  try {
    st = fs.statSync(lockPath);
  } catch {
    return false;
  }
  if (st.size !== 0) return false;
  const holder = lockHolderPid(st.ino);
  if (holder !== null) throw lockedError(dir, holder === 0 ? 'unknown' : holder);
  const again = fs.statSync(lockPath, { throwIfNoEntry: false });
  if (again !== undefined && again.ino === st.ino && again.size === 0) removeIfExists(lockPath);
  return true;
}

/** Without the addon: deletes a dead owner's LOCK `existing` unless a RocksDB process has locked it since. */
function removeStaleLock(dir: string, lockPath: string, existing: string): void {
  // A dead owner's LOCK that RocksDB opened since (it keeps the content and fcntl-locks it).
  const ino = fs.statSync(lockPath, { throwIfNoEntry: false })?.ino;
  const rocksdbHolder = ino === undefined ? null : lockHolderPid(ino, false);
  if (rocksdbHolder !== null) throw lockedError(dir, rocksdbHolder);
  // Stale: delete it only if it is still the same stale lock, then retry the create.
  if (readLock(lockPath) === existing) removeIfExists(lockPath);
}

/**
 * A LOCK found in place with content `existing`: throws DB_LOCKED when it is held. Else with the
 * addon it is taken over in place: `fd` is its descriptor (null: it changed, retry); without, it
 * is deleted for the caller to create anew. `restoreEmpty`: it was RocksDB's empty LOCK.
 */
function takeOverExisting(dir: string, lockPath: string, existing: string, content: string): { fd: number | null; restoreEmpty: boolean } {
  if (existing !== '') {
    const owner = parseOwner(existing);
    // An unparsable LOCK (an older format, a stray file) is not ours to delete.
    if (owner === null) throw lockedError(dir, 'unknown');
    if (ownerIsAlive(owner)) throw lockedError(dir, owner.pid);
  }
  if (nativeFileLock !== null) {
    const fd = takeOverInPlace(nativeFileLock, dir, lockPath, existing, content);
    return { fd, restoreEmpty: fd !== null && existing === '' };
  }
  if (existing === '') return { fd: null, restoreEmpty: takeOverRocksdbLock(dir, lockPath) };
  removeStaleLock(dir, lockPath, existing);
  return { fd: null, restoreEmpty: false };
}

export class DbLock {
  private released = false;

  private constructor(
    readonly dir: string,
    private readonly realDir: string,
    private readonly content: string,
    /** LOCK's descriptor, open (and fcntl-locked, with the addon) until release. */
    private readonly fd: number,
    /** The LOCK was RocksDB's empty one: release empties it rather than deleting it. */
    private readonly restoreEmptyLock: boolean,
  ) {}

  /** Takes the lock on `dir` (which must exist) or throws IngestError('DB_LOCKED'). */
  static acquire(dir: string): DbLock {
    let realDir: string;
    try {
      realDir = fs.realpathSync(dir);
    } catch (err) {
      throw ioError('cannot resolve database directory', dir, err);
    }
    if (openDirs.has(realDir)) throw lockedError(dir, process.pid);
    const lockPath = lockFileName(realDir);
    const content = `${process.pid} ${ownStartTime}\n`;
    let tookRocksdbLock = false;
    for (let attempt = 0; attempt < MAX_TAKEOVER_ATTEMPTS; attempt++) {
      const created = tryCreateLock(dir, realDir, lockPath, content);
      if (created !== null) return DbLock.held(dir, realDir, content, created, tookRocksdbLock);
      const existing = readLock(lockPath);
      if (existing === null) continue; // released in between; try again
      const taken = takeOverExisting(dir, lockPath, existing, content);
      if (taken.fd !== null) return DbLock.held(dir, realDir, content, taken.fd, taken.restoreEmpty);
      // Without the addon an empty LOCK was deleted: the one created next is put back empty.
      tookRocksdbLock = taken.restoreEmpty || tookRocksdbLock;
    }
    throw lockedError(dir, 'unknown');
  }

  private static held(dir: string, realDir: string, content: string, fd: number, restoreEmptyLock: boolean): DbLock {
    openDirs.add(realDir);
    return new DbLock(dir, realDir, content, fd, restoreEmptyLock);
  }

  /** Deletes (or, if it was RocksDB's, empties) LOCK, then closes it, which drops the fcntl lock. */
  release(): void {
    if (this.released) return;
    this.released = true;
    openDirs.delete(this.realDir);
    const lockPath = lockFileName(this.realDir);
    try {
      if (!isFileAt(this.fd, lockPath) || readLockFd(this.fd) !== this.content) return;
      // Truncate in place rather than unlink: a RocksDB opener finds the LOCK it left.
      if (this.restoreEmptyLock) fs.ftruncateSync(this.fd, 0);
      else removeIfExists(lockPath);
    } finally {
      fs.closeSync(this.fd);
    }
  }
}
