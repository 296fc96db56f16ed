/**
 * The distributed import's use of BullMQ: one queue, its job names and ids, the Redis connection
 * of a `--cluster` URL, and the errors jobs fail with.
 *
 * Jobs (queue QUEUE_NAME), one flow per phase (a parent that waits for its children):
 *   map-<importId>-<i>      parse byte range i into sorted runs       data: TaskJobData (a ParseRangeTask)
 *   maps-<importId>         the map phase's barrier                   data: { importId }
 *   reduce-<importId>-<r>   merge key range r of every run into SSTs  data: TaskJobData (a MergeRangeTask)
 *   reduces-<importId>      the reduce phase's barrier
 * Ids are fixed by the import's id, so a coordinator that runs again (after a kill) adds the same
 * jobs, which BullMQ keeps as they are: finished tasks are not redone. A task's result is its job's
 * return value (wire.ts text); its output files lie in a directory of its own attempt, so an
 * attempt presumed dead that wakes up writes only where no later attempt and no reader looks.
 *
 * Failures: a task failing on its input (bad rows past the limit, duplicates under error, a
 * usage error) fails at once, without retries (UnrecoverableError), and fails its phase; any other
 * error is retried with exponential backoff, up to TASK_ATTEMPTS times. The reason is JSON
 * {code, message} so the coordinator fails with the task's own error code (and exit code).
 */
import { UnrecoverableError } from 'bullmq';
import type { ConnectionOptions } from 'bullmq';
import { ErrorCode, IngestError } from '../../util/errors';

export const QUEUE_NAME = 'sst-ingest';
export const TASK_ATTEMPTS = 5;
export const TASK_BACKOFF_MS = 500;

export type TaskKind = 'map' | 'reduce';

export interface TaskJobData {
  importId: string;
  /** The shared directory as the coordinator names it: workers must see it at the same path. */
  sharedDir: string;
  index: number;
  /** The task, as wire.ts text. */
  wire: string;
}

export function taskJobId(kind: TaskKind, importId: string, index: number): string {
  return `${kind}-${importId}-${index}`;
}

export function barrierJobId(kind: TaskKind, importId: string): string {
  return `${kind}s-${importId}`;
}

/** `redis://[:password@]host[:port][/db]` as BullMQ's connection options. USAGE when it is not one. */
export function connectionOf(url: string): ConnectionOptions {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new IngestError('USAGE', `--cluster must be a redis://host:port URL, got "${url}"`);
  }
  if (u.protocol !== 'redis:') throw new IngestError('USAGE', `--cluster must be a redis://host:port URL, got "${url}"`);
  const db = u.pathname.length > 1 ? Number(u.pathname.slice(1)) : 0;
  if (!Number.isInteger(db) || db < 0) throw new IngestError('USAGE', `--cluster ${url}: the database number must be an integer`);
  return {
    host: u.hostname,
    port: u.port === '' ? 6379 : Number(u.port),
    password: u.password === '' ? undefined : decodeURIComponent(u.password),
    db,
    // BullMQ's workers block on Redis: a command must wait for a reconnect, not fail after retries.
    maxRetriesPerRequest: null,
  };
}

/** Codes of errors in the task's input or options: retrying cannot help. */
const DEFINITIVE: ReadonlySet<string> = new Set(['BAD_INPUT', 'USAGE', 'DUPLICATE_KEY', 'KEY_ORDER', 'INVALID_ARGUMENT', 'NOT_SUPPORTED']);

/** Whether `err` is an error of the import's input or options (a rerun of the same command fails the same way). */
export function isDefinitive(err: unknown): boolean {
  return err instanceof IngestError && DEFINITIVE.has(err.code);
}

/** The error a job fails with for `err`: unrecoverable for the input's errors, else retried. */
export function jobErrorOf(err: unknown): Error {
  const code = err instanceof IngestError ? err.code : (((err as { code?: unknown }).code as string | undefined) ?? 'INTERNAL');
  const message = err instanceof Error ? err.message : String(err);
  const reason = JSON.stringify({ code, message });
  return DEFINITIVE.has(code) ? new UnrecoverableError(reason) : new Error(reason);
}

/** The IngestError a failed job's reason stands for (jobErrorOf's JSON, or any text as INTERNAL). */
export function errorOfReason(reason: string | undefined, what: string): IngestError {
  try {
    const r = JSON.parse(reason ?? '') as { code: ErrorCode; message: string };
    if (typeof r.code === 'string' && typeof r.message === 'string') return new IngestError(r.code, r.message);
  } catch {
    // Not ours: BullMQ's own reason (a stalled job past its limit, say).
  }
  return new IngestError('INTERNAL', `${what} failed: ${reason ?? 'no reason given'}`);
}
