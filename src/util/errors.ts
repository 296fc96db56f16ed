/**
 * Typed errors shared by every layer.
 *
 * Contract: every error the product raises on purpose is an `IngestError` with a stable `code`.
 * The CLI maps codes to exit codes (see `exitCodeFor`): 2 for bad input or usage, 3 for
 * conflicts, 130 for an interruption (SIGINT, SIGTERM), 1 for anything else. Messages name the file, offset, line or key involved, because
 * users read them in nightly-load logs without a debugger.
 */

export type ErrorCode =
  | 'USAGE' // bad command line
  | 'BAD_INPUT' // malformed CSV row, unparsable typed key, ...
  | 'KEY_ORDER' // keys added out of order to a writer
  | 'DUPLICATE_KEY' // the same key twice in an import
  | 'CORRUPTION' // checksum mismatch, bad magic, malformed block
  | 'NOT_SUPPORTED' // a valid RocksDB feature we do not read (compression type, index type)
  | 'INVALID_ARGUMENT' // an API called with arguments it cannot honour
  | 'DB_LOCKED' // a second opener of a database
  | 'CONFLICT' // conflicts found under the abort policy
  | 'LATCH_TIMEOUT' // a write or an ingestion waited too long for a span latch (engine/spanLatches.ts)
  | 'IO' // a file system failure
  | 'NO_SPACE' // a full disk (ENOSPC, EDQUOT) or --disk-quota: a clean stop, resumable once space is freed
  | 'INTERRUPTED' // SIGINT or SIGTERM stopped a command (exit code 130, the shell's for death by SIGINT)
  // Raised by the server (src/server) and rebuilt by its client, so `--server` exits as `--db` would:
  | 'UNAUTHORIZED' // a request without a valid token
  | 'NOT_FOUND' // an unknown route, or a key that is absent
  | 'TOO_LARGE' // a body, key, value or batch over the server's limit
  | 'BUSY' // the import queue or the connection limit is full; retry later
  | 'TIMEOUT' // a request that took longer than the server's limit
  | 'UNAVAILABLE' // the server is draining (SIGTERM) or unreachable
  | 'INTERNAL'; // a bug: an error that is not an IngestError

export class IngestError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = 'IngestError';
  }
}

/** A block or file failed a checksum or structural check; names the file and offset. */
export class CorruptionError extends IngestError {
  readonly file: string;
  readonly offset: number;
  constructor(file: string, offset: number, reason: string) {
    super('CORRUPTION', `corruption in ${file} at offset ${offset}: ${reason}`);
    this.name = 'CorruptionError';
    this.file = file;
    this.offset = offset;
  }
}

/**
 * A database another opener holds (its LOCK). Carries the directory and the holder's pid so an
 * entry point can say more: the CLI names the server that holds it (src/server/serverRecord.ts).
 */
export class DbLockedError extends IngestError {
  readonly dir: string;
  /** The holder's pid, or null when the LOCK does not say. */
  readonly pid: number | null;
  /** `detail`, when given, follows the message after "; " (how the holder holds it). */
  constructor(dir: string, pid: number | null, detail?: string) {
    super('DB_LOCKED', `database is locked: ${dir} (held by pid ${pid ?? 'unknown'})${detail === undefined ? '' : `; ${detail}`}`);
    this.name = 'DbLockedError';
    this.dir = dir;
    this.pid = pid;
  }
}

export function exitCodeFor(err: unknown): number {
  if (err instanceof IngestError) {
    switch (err.code) {
      case 'USAGE':
      case 'BAD_INPUT':
      case 'KEY_ORDER':
      case 'DUPLICATE_KEY':
      case 'INVALID_ARGUMENT':
      case 'UNAUTHORIZED':
      case 'TOO_LARGE':
        return 2;
      case 'CONFLICT':
        return 3;
      case 'INTERRUPTED':
        return 130;
      default:
        return 1;
    }
  }
  return 1;
}

/**
 * Whether an error, its causes or its message (as a worker thread sends it back) say ENOSPC or
 * EDQUOT: a full disk or an exhausted quota, which freeing space mends.
 */
export function isNoSpaceError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 8; depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'NO_SPACE') return true;
    if (e instanceof Error && /\bENOSPC\b|\bEDQUOT\b|no space left on device|disk quota exceeded/i.test(e.message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** Invariant check: a failed assertion is a bug in this program, never a user error. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) assertionFailed(message);
}

/**
 * A failed invariant, for checks on paths run once per key or per block: written
 * `if (!condition) assertionFailed(\`…${detail}…\`)`, the message is built only on failure,
 * where `assert(condition, \`…\`)` formats its numbers into a string on every call (about 1% of a
 * point read, measured with perf, in the block cache's and table cache's release alone).
 */
export function assertionFailed(message: string): never {
  throw new Error(`assertion failed: ${message}`);
}
