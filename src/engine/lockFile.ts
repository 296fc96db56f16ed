/**
 * The LOCK file: at most one opener of a database at a time, across processes and within one.
 *
 * Node has no flock(), so the lock is the file's existence: an opener creates LOCK exclusively,
 * holding "<pid> <process start time>\n", and deletes it on close. Two cases need care:
 * - Within one process, a second open of the same directory must fail even though the pid in
 *   LOCK is our own; a process-wide Set of open (real) directory paths decides that.
 * - A process killed with SIGKILL leaves its LOCK behind, and crash recovery must still work.
 *   A LOCK whose pid is dead is stale and is taken over. A live pid whose start time differs
 *   from the recorded one is a reused pid (common in containers), also stale. The start time is
 *   field 22 of /proc/<pid>/stat (clock ticks since boot); where /proc is unavailable the pid
 *   alone decides, erring towards "locked".
 * - RocksDB locks an empty LOCK file with fcntl(F_SETLK) and leaves it behind when it closes. An
 *   empty LOCK is therefore RocksDB's: held while /proc/locks lists a lock on its inode (the
 *   holder's pid is reported), else taken over like a stale one; on release an empty LOCK is put
 *   back, so the directory is left as RocksDB expects it. A stale LOCK of ours that a RocksDB
 *   process has since locked (it keeps the content) is held too. The converse cannot be had without
 *   fcntl: RocksDB does not see this engine's LOCK as held, so a RocksDB process must not open a
 *   directory while this engine has it open (docs/rocksdb-compat.md).
 * The LOCK content is written to a temp file and hard-linked into place, so no opener ever sees
 * a LOCK without its owner. Stale takeover re-reads the LOCK right before deleting it; two
 * processes taking over the same stale lock at the same instant is the one race this cannot
 * close without kernel locks.
 */
import * as fs from 'fs';
import * as path from 'path';
import { DbLockedError } from '../util/errors';
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

function lockedError(dir: string, pid: number | 'unknown'): DbLockedError {
  return new DbLockedError(dir, pid === 'unknown' ? null : pid);
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

/** Creates LOCK holding `content` atomically; false if it already exists. */
function tryCreateLock(dir: string, lockPath: string, content: string): boolean {
  const temp = path.join(dir, `LOCK.${process.pid}.${Date.now()}.tmp`);
  fs.writeFileSync(temp, content, 'latin1');
  try {
    fs.linkSync(temp, lockPath);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw ioError('cannot create', lockPath, err);
  } finally {
    removeIfExists(temp);
  }
}

/**
 * The pid holding a POSIX or flock lock on the file with inode `ino`, per /proc/locks; null when
 * none does. When /proc/locks cannot be read: "held" (pid 0) if `unknownIsHeld`, else null (a
 * stale LOCK of ours is then taken over on the pid alone, as before /proc/locks was consulted).
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
 * Takes over RocksDB's empty LOCK when no process holds it (see the module comment); throws
 * DB_LOCKED when one does. Returns false when the LOCK changed meanwhile (retry).
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

export class DbLock {
  private released = false;
  /** Set when the LOCK was RocksDB's empty one: release puts an empty LOCK back. */
  private restoreEmptyLock = false;

  private constructor(
    readonly dir: string,
    private readonly realDir: string,
    private readonly content: string,
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
      if (tryCreateLock(realDir, lockPath, content)) {
        openDirs.add(realDir);
        const lock = new DbLock(dir, realDir, content);
        lock.restoreEmptyLock = tookRocksdbLock;
        return lock;
      }
      const existing = readLock(lockPath);
      if (existing === null) continue; // released in between; try again
      if (existing === '') {
        tookRocksdbLock = takeOverRocksdbLock(dir, lockPath) || tookRocksdbLock;
        continue;
      }
      const owner = parseOwner(existing);
      // An unparsable LOCK (an older format, a stray file) is not ours to delete.
      if (owner === null) throw lockedError(dir, 'unknown');
      if (ownerIsAlive(owner)) throw lockedError(dir, owner.pid);
      // A dead owner's LOCK that RocksDB opened since (it keeps the content and fcntl-locks it).
      const ino = fs.statSync(lockPath, { throwIfNoEntry: false })?.ino;
      const rocksdbHolder = ino === undefined ? null : lockHolderPid(ino, false);
      if (rocksdbHolder !== null) throw lockedError(dir, rocksdbHolder);
      // Stale: delete it only if it is still the same stale lock, then retry the create.
      if (readLock(lockPath) === existing) removeIfExists(lockPath);
    }
    throw lockedError(dir, 'unknown');
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    openDirs.delete(this.realDir);
    const lockPath = lockFileName(this.realDir);
    if (readLock(lockPath) !== this.content) return;
    if (this.restoreEmptyLock) {
      // Truncate in place rather than unlink: a RocksDB opener finds the LOCK it left.
      fs.writeFileSync(lockPath, '');
    } else {
      removeIfExists(lockPath);
    }
  }
}
