/**
 * GET, PUT and DELETE /v1/kv/{key}: one key. The key is the path's percent-encoded bytes (hex
 * digits with ?hex=1; see urlBytes.ts).
 *
 *   GET    → 200, the value as application/octet-stream; 404 NOT_FOUND when absent
 *   PUT    → 204 once the write is in the WAL, written to the OS (fdatasynced under --sync); body = the value
 *   DELETE → 204 likewise
 * A write's 204 carries `Ingest-Sequence: N`, its sequence number. A write into a span an import
 * has latched waits for it (at most the engine's latch timeout: then 503 LATCH_TIMEOUT).
 */
import { RequestContext, replyNoContent } from '../requestContext';
import { HttpError } from '../httpErrors';
import { readBody } from '../requestBody';
import { keyOf, percentDecode } from '../urlBytes';

/**
 * Waits until the write may be acknowledged: in the WAL on disk with --sync (the write itself
 * synced it), else written to the OS, so that a SIGKILL after the 204 loses nothing. Writes of
 * one event-loop turn share that one write() (Engine.flushWal).
 */
export async function acknowledgeable(ctx: RequestContext): Promise<void> {
  if (!ctx.syncWrites) await ctx.engine.flushWal();
}

function pathKey(ctx: RequestContext): Buffer {
  return keyOf(percentDecode(ctx.param, 'the key'), ctx.hex, 'the key', ctx.limits.maxKeyBytes);
}

export async function getKey(ctx: RequestContext): Promise<void> {
  const key = pathKey(ctx);
  const value = ctx.engine.get(key);
  if (value === null) throw new HttpError(404, 'NOT_FOUND', `key 0x${key.toString('hex')} not found`);
  ctx.res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': value.length });
  ctx.res.end(value);
}

export async function putKey(ctx: RequestContext): Promise<void> {
  const key = pathKey(ctx);
  // readBody refuses a value over the limit (413) before or while it arrives.
  const value = await readBody(ctx.req, ctx.limits.maxValueBytes, `PUT of key 0x${key.toString('hex')}`, ctx.memory);
  const sequence = await ctx.engine.put(key, value, { sync: ctx.syncWrites });
  await acknowledgeable(ctx);
  replyNoContent(ctx, sequence);
}

export async function deleteKey(ctx: RequestContext): Promise<void> {
  const key = pathKey(ctx);
  const sequence = await ctx.engine.delete(key, { sync: ctx.syncWrites });
  await acknowledgeable(ctx);
  replyNoContent(ctx, sequence);
}
