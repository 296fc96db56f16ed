/**
 * How the server answers a failure: one JSON body, `{"error": {"code", "message"}}`, with the
 * CLI's error codes (src/util/errors.ts) and an HTTP status per code, so a client in any language
 * can branch on the status and a script on the code. docs/serve.md lists the table.
 *
 *   400 USAGE, BAD_INPUT, KEY_ORDER, DUPLICATE_KEY, INVALID_ARGUMENT   (the CLI's exit code 2)
 *   401 UNAUTHORIZED        404 NOT_FOUND          405 (USAGE: method not allowed)
 *   408 TIMEOUT             409 CONFLICT (exit 3)  413 TOO_LARGE
 *   422 CORRUPTION, NOT_SUPPORTED of an upload (a well-formed request whose SST cannot be used)
 *   429 BUSY                503 UNAVAILABLE, LATCH_TIMEOUT (retry later; Retry-After is set)
 *   500 IO, CORRUPTION of the database itself, DB_LOCKED, INTERNAL
 *   507 NO_SPACE (the server's disk is full; nothing was ingested)
 *
 * An `HttpError` fixes its status itself (405, 422); every other error gets its code's status.
 * Anything that is not an IngestError is a bug: 500 INTERNAL, logged with its stack on stderr,
 * its message kept out of the response (it may name server paths).
 */
import { ErrorCode, IngestError } from '../util/errors';

export class HttpError extends IngestError {
  constructor(
    readonly status: number,
    code: ErrorCode,
    message: string,
    /** Extra response headers (Allow on a 405). */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(code, message);
    this.name = 'HttpError';
  }
}

const STATUS_OF_CODE: Readonly<Record<ErrorCode, number>> = {
  USAGE: 400,
  BAD_INPUT: 400,
  KEY_ORDER: 400,
  DUPLICATE_KEY: 400,
  INVALID_ARGUMENT: 400,
  UNAUTHORIZED: 401,
  NOT_FOUND: 404,
  TIMEOUT: 408,
  CONFLICT: 409,
  TOO_LARGE: 413,
  NOT_SUPPORTED: 422,
  BUSY: 429,
  UNAVAILABLE: 503,
  LATCH_TIMEOUT: 503,
  CORRUPTION: 500,
  IO: 500,
  NO_SPACE: 507,
  // A server's own requests are never interrupted by a signal (it drains); a client's are, before it sends anything.
  INTERRUPTED: 503,
  DB_LOCKED: 500,
  INTERNAL: 500,
};

/** Statuses that tell the client to come back: they carry Retry-After (seconds). */
export const RETRY_AFTER_SECONDS: Readonly<Record<number, number>> = { 429: 1, 503: 1 };

export interface ErrorReply {
  status: number;
  code: ErrorCode;
  message: string;
  headers: Readonly<Record<string, string>>;
}

export function errorReplyOf(err: unknown): ErrorReply {
  if (err instanceof HttpError) return { status: err.status, code: err.code, message: err.message, headers: err.headers };
  if (err instanceof IngestError) return { status: STATUS_OF_CODE[err.code] ?? 500, code: err.code, message: err.message, headers: {} };
  return { status: 500, code: 'INTERNAL', message: 'internal error (logged by the server)', headers: {} };
}

export function statusOfCode(code: ErrorCode): number {
  return STATUS_OF_CODE[code];
}

export function badRequest(message: string): HttpError {
  return new HttpError(400, 'USAGE', message);
}

export function tooLarge(message: string): HttpError {
  return new HttpError(413, 'TOO_LARGE', message);
}
