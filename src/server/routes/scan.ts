/**
 * GET /v1/scan?from=&to=&limit=&reverse=: keys in [from, to) in order (or reverse order), at
 * most `limit` (default defaultScanLimit, at most maxScanLimit), streamed as NDJSON: one line
 * {"key"|"keyHex", "value"|"valueHex"} per entry (urlBytes.ts: text only when exact; always hex
 * with ?hex=1). The read is one consistent snapshot (the iterator's), however long the stream.
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
    while (sent < r.limit && it.valid() && !ctx.res.destroyed) {
      const lines: string[] = [];
      let bytes = 0;
      for (; sent < r.limit && it.valid() && bytes < SCAN_CHUNK_BYTES; sent++) {
        const line = JSON.stringify({ ...jsonBytesField('key', it.key(), ctx.hex), ...jsonBytesField('value', it.value(), ctx.hex) });
        lines.push(line, '\n');
        bytes += line.length + 1;
        if (r.reverse) it.prev();
        else it.next();
      }
      if (!ctx.res.write(lines.join(''))) await writable(ctx);
    }
    ctx.res.end();
  } finally {
    it.close();
  }
}
