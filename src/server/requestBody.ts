/**
 * Request bodies, read within a limit: into memory for the small ones (PUT values, batches), and
 * to a file for imports, where a body is as large as a night's data and is never held whole.
 *
 * Contract:
 * - A Content-Length over the limit is refused before a byte is read (413); a body that turns out
 *   longer than the limit is cut off there (413), whatever Content-Length said.
 * - A client that goes away mid-body (a truncated body) gets a 400 BAD_INPUT: nothing of it is
 *   applied, since every route acts only on a complete body.
 * - `Content-Encoding: gzip` (or x-gzip) is decoded on the way to the file, the limit counting the
 *   decoded bytes (a small bomb cannot fill the disk); any other encoding is a 415 NOT_SUPPORTED;
 *   bad gzip data is a 400 naming the request.
 */
import * as fs from 'fs';
import * as zlib from 'zlib';
import { IncomingMessage } from 'http';
import { Transform, TransformCallback } from 'stream';
import { pipeline } from 'stream/promises';
import { IngestError, isNoSpaceError } from '../util/errors';
import { HttpError, tooLarge } from './httpErrors';
import type { RequestMemory } from './memoryBudget';

function declaredLength(req: IncomingMessage): number | null {
  const header = req.headers['content-length'];
  if (header === undefined) return null;
  const n = Number(header);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

function truncated(what: string, cause?: unknown): HttpError {
  const detail = cause instanceof Error ? ` (${cause.message})` : '';
  return new HttpError(400, 'BAD_INPUT', `${what}: the body ended before it was complete${detail}`);
}

/**
 * The whole body, at most `limitBytes`, charged to the request's memory: its Content-Length
 * before a byte is read (waiting briefly for room, else 503), or a chunked body's chunks as they
 * come (503 at the first that finds no room).
 */
export async function readBody(req: IncomingMessage, limitBytes: number, what: string, memory: RequestMemory): Promise<Buffer> {
  const declared = declaredLength(req);
  if (declared !== null && declared > limitBytes) {
    throw tooLarge(`${what}: body of ${declared} bytes is over the limit of ${limitBytes}`);
  }
  if (declared !== null) await memory.reserve(declared, what);
  return readBodyCharged(req, limitBytes, what, declared === null ? memory : null);
}

function readBodyCharged(req: IncomingMessage, limitBytes: number, what: string, chunkCharge: RequestMemory | null): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      req.removeAllListeners('data');
      reject(err);
    };
    req.on('data', (chunk: Buffer) => {
      total += chunk.length;
      if (total > limitBytes) fail(tooLarge(`${what}: body is over the limit of ${limitBytes} bytes`));
      else if (chunkCharge !== null && !settled && !chunkCharge.tryReserve(chunk.length)) fail(chunkCharge.refused(chunk.length, what));
      else if (!settled) chunks.push(chunk);
    });
    req.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, total));
    });
    req.on('aborted', () => fail(truncated(what)));
    req.on('error', (err) => fail(truncated(what, err)));
  });
}

/** Counts bytes through a stream and fails it past the limit. */
class ByteLimit extends Transform {
  bytes = 0;
  constructor(
    private readonly limitBytes: number,
    private readonly what: string,
  ) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limitBytes) done(tooLarge(`${this.what}: body is over the limit of ${this.limitBytes} bytes (decoded)`));
    else done(null, chunk);
  }
}

/** The decoder for the request's Content-Encoding, or null for identity. */
function decoderOf(req: IncomingMessage, what: string): zlib.Gunzip | null {
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return null;
  if (encoding === 'gzip' || encoding === 'x-gzip') return zlib.createGunzip();
  throw new HttpError(415, 'NOT_SUPPORTED', `${what}: Content-Encoding ${encoding} is not supported (gzip or none)`);
}

/** Writes the (decoded) body to `file`; returns its size. The file is left for the caller to remove. */
export async function spoolBody(req: IncomingMessage, file: string, limitBytes: number, what: string): Promise<number> {
  const declared = declaredLength(req);
  const decoder = decoderOf(req, what);
  if (decoder === null && declared !== null && declared > limitBytes) {
    throw tooLarge(`${what}: body of ${declared} bytes is over the limit of ${limitBytes}`);
  }
  const limit = new ByteLimit(limitBytes, what);
  let aborted = false;
  req.on('aborted', () => (aborted = true));
  const out = fs.createWriteStream(file, { flags: 'wx' });
  try {
    if (decoder === null) await pipeline(req, limit, out);
    else await pipeline(req, decoder, limit, out);
  } catch (err) {
    if (err instanceof IngestError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? '';
    // Before the truncation checks: a full disk also ends the pipeline early, and is the server's
    // condition (507, retry once space is freed), not the client's bad input.
    if (isNoSpaceError(err))
      throw new IngestError('NO_SPACE', `${what}: the server's disk is full: the body cannot be spooled (retry once space is freed)`, {
        cause: err,
      });
    if (aborted || code === 'ECONNRESET' || code === 'ERR_STREAM_PREMATURE_CLOSE') throw truncated(what, err);
    if (code.startsWith('Z_')) throw new HttpError(400, 'BAD_INPUT', `${what}: invalid gzip data (${(err as Error).message})`);
    throw new IngestError('IO', `${what}: cannot write the body to ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (aborted || !req.complete) throw truncated(what);
  return limit.bytes;
}
