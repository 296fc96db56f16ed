/**
 * GET /v1/scan?from=&to=&limit=&reverse=: keys in [from, to) in order (or reverse order), at
 * most `limit` (default defaultScanLimit, at most maxScanLimit), streamed as NDJSON: one line
 * {"key"|"keyHex", "value"|"valueHex"} per entry (urlBytes.ts: text only when exact; always hex
 * with ?hex=1). The read is one consistent snapshot (the iterator's), however long the stream.
 *
 * When the limit cut the scan short (more entries lie in the range), a last line says where to go
 * on: {"next": {"from"|"fromHex": K}} going forward (K is the first key not sent: the next request's
 * `from`), {"next": {"to"|"toHex": K}} going back (K is the last key sent: the next request's
 * exclusive `to`), text or hex as keys are. A stream without it is the whole range. A line with
 * "next" has no "key": a client that reads entries by their key field tells the two apart.
 *
 * Memory: lines are sent in chunks of about SCAN_CHUNK_BYTES, and the next chunk is read only once
 * the socket has taken the last one, so a slow reader holds one chunk, not the result. A client
 * that goes away ends the scan and frees its iterator. An error after the first chunk cannot
 * become a status any more: the connection is cut, so the client sees a truncated stream (no
 * final newline), never a silently short one.
 */
import { compareUserKeys } from '../../base/keyCompare';
import { DbIterator } from '../../engine/dbIterator';
import { RequestContext, queryFlag } from '../requestContext';
import { SCAN_RESERVE_BYTES } from '../memoryBudget';
import { badRequest } from '../httpErrors';
import { jsonBytesField, keyOf } from '../urlBytes';

export const SCAN_CHUNK_BYTES = 64 * 1024;

interface ScanRequest {
  from: Buffer | undefined;
  to: Buffer | undefined;
  limit: number;
  reverse: boolean;
}

function scanRequestOf(ctx: RequestContext): ScanRequest {
  const bound = (name: string): Buffer | undefined => {
    const v = ctx.query.get(name);
    return v === undefined ? undefined : keyOf(v, ctx.hex, `query parameter ${name}`, ctx.limits.maxKeyBytes);
  };
  const from = bound('from');
  const to = bound('to');
  if (from !== undefined && to !== undefined && compareUserKeys(from, to) > 0) throw badRequest('scan: from sorts after to');
  const limitText = ctx.query.get('limit')?.toString('utf8');
  // Digits only: Number('') is 0 and Number(' 1e3') is 1000, neither of which the client wrote as a limit.
  const limit = limitText === undefined ? ctx.limits.defaultScanLimit : /^[0-9]+$/.test(limitText) ? Number(limitText) : NaN;
  if (!Number.isSafeInteger(limit) || limit < 0 || limit > ctx.limits.maxScanLimit) {
    throw badRequest(`scan: limit must be an integer 0..${ctx.limits.maxScanLimit}, got "${limitText}"`);
  }
  return { from, to, limit, reverse: queryFlag(ctx.query, 'reverse') };
}

function position(it: DbIterator, r: ScanRequest): void {
  if (r.reverse) {
    if (r.to !== undefined) it.seekLT(r.to);
    else it.last();
  } else if (r.from !== undefined) it.seekGE(r.from);
  else it.first();
}

/**
 * The last line of a scan the limit cut short: where the next request starts (see the module
 * comment). Going back with limit 0 nothing was sent: the range's own `to` (or none) goes on.
 */
function continuationLine(it: DbIterator, r: ScanRequest, lastSent: Buffer | null, hex: boolean): string {
  if (!r.reverse) return `${JSON.stringify({ next: jsonBytesField('from', it.key(), hex) })}\n`;
  const to = lastSent ?? r.to;
  return `${JSON.stringify({ next: to === undefined ? {} : jsonBytesField('to', to, hex) })}\n`;
}

/** Resolves when the response can take more, or the client is gone (then `closed`). */
function writable(ctx: RequestContext): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      ctx.res.off('drain', done);
      ctx.res.off('close', done);
      resolve();
    };
    ctx.res.on('drain', done);
    ctx.res.on('close', done);
  });
}

export async function getScan(ctx: RequestContext): Promise<void> {
  const r = scanRequestOf(ctx);
  await ctx.memory.reserve(SCAN_RESERVE_BYTES, 'scan');
  const it = ctx.engine.newIterator({ lowerBound: r.from, upperBound: r.to });
  try {
    position(it, r);
    ctx.res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    let sent = 0;
    // Going back, the continuation is the last key sent: copied once, as the limit's last entry is sent.
    let lastSent: Buffer | null = null;
    while (sent < r.limit && it.valid() && !ctx.res.destroyed) {
      const lines: string[] = [];
      let bytes = 0;
      for (; sent < r.limit && it.valid() && bytes < SCAN_CHUNK_BYTES; sent++) {
        const line = JSON.stringify({ ...jsonBytesField('key', it.key(), ctx.hex), ...jsonBytesField('value', it.value(), ctx.hex) });
        lines.push(line, '\n');
        bytes += line.length + 1;
        if (sent + 1 === r.limit && r.reverse) lastSent = Buffer.from(it.key());
        if (r.reverse) it.prev();
        else it.next();
      }
      if (!ctx.res.write(lines.join(''))) await writable(ctx);
    }
    if (sent === r.limit && it.valid() && !ctx.res.destroyed) ctx.res.write(continuationLine(it, r, lastSent, ctx.hex));
    ctx.res.end();
  } finally {
    it.close();
  }
}
