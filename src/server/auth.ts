/**
 * The bearer token: `Authorization: Bearer <token>` on every request but GET /healthz, when the
 * server was given a token file. Compared in constant time (both sides hashed to 32 bytes first,
 * so neither the token's length nor the position of the first differing byte shows in the
 * timing), and the reason for a 401 does not say how the token was wrong beyond missing/invalid.
 *
 * Token file: its first line, trimmed; at least MIN_TOKEN_CHARS characters, at most
 * MAX_TOKEN_CHARS, each printable ASCII without spaces (what a Bearer header can carry: a token
 * with a space or a non-ASCII character could never authenticate). Anything else is refused at
 * start-up, by the server and by a client reading the same file.
 */
import * as fs from 'fs';
import { createHash, timingSafeEqual } from 'crypto';
import { IncomingMessage } from 'http';
import { IngestError } from '../util/errors';
import { HttpError } from './httpErrors';

export const MIN_TOKEN_CHARS = 16;
export const MAX_TOKEN_CHARS = 4096;

export function readTokenFile(file: string): string {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new IngestError('USAGE', `cannot read the token file ${file}: ${(err as Error).message}`);
  }
  const token = (text.split(/\r?\n/)[0] ?? '').trim();
  checkTokenText(token, `the token in ${file}`);
  return token;
}

/** Printable ASCII, no spaces: the characters a `Bearer` header's token may hold. */
const TOKEN_TEXT = /^[\x21-\x7e]+$/;

/** Refuses a token that is too short or long, or that no Authorization header could carry (USAGE). */
export function checkTokenText(token: string, what: string): void {
  if (token.length < MIN_TOKEN_CHARS || token.length > MAX_TOKEN_CHARS) {
    throw new IngestError('USAGE', `${what} must be ${MIN_TOKEN_CHARS}..${MAX_TOKEN_CHARS} characters on its first line`);
  }
  if (!TOKEN_TEXT.test(token))
    throw new IngestError('USAGE', `${what} must be printable ASCII without spaces: a Bearer header cannot carry it otherwise`);
}

function digestOf(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

export class TokenCheck {
  private readonly expected: Buffer;

  constructor(token: string) {
    checkTokenText(token, 'the token');
    this.expected = digestOf(token);
  }

  /** Throws a 401 unless the request carries the token. */
  check(req: IncomingMessage): void {
    const header = req.headers.authorization;
    if (header === undefined) throw unauthorized('missing Authorization: Bearer <token>');
    const m = /^Bearer +(\S+) *$/i.exec(header);
    const given = digestOf(m === null ? '' : m[1]);
    if (!timingSafeEqual(given, this.expected) || m === null) throw unauthorized('invalid token');
  }
}

function unauthorized(message: string): HttpError {
  return new HttpError(401, 'UNAUTHORIZED', message);
}
