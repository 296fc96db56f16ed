/**
 * POST /v1/batch: several writes applied atomically (one WriteBatch, one WAL record: all of them
 * or, after a crash, none). Body: a JSON array of operations, at most maxBatchOperations, keys
 * and values UTF-8 strings (hex strings with ?hex=1):
 *
 *   [{"op": "put", "key": "a", "value": "1"}, {"op": "delete", "key": "b"},
 *    {"op": "deleteRange", "start": "c", "end": "d"}]
 *
 * → 200 {"sequence": N (the first operation's), "count": n}. Any malformed operation is a 400
 * naming its index, and nothing of the batch is applied (it is checked whole before it is built).
 */
import { WriteBatch } from '../../engine/writeBatch';
import { compareUserKeys } from '../../base/keyCompare';
import { RequestContext, replyJson } from '../requestContext';
import { badRequest, tooLarge } from '../httpErrors';
import { readBody } from '../requestBody';
import { BATCH_DECODE_FACTOR } from '../memoryBudget';
import { acknowledgeable } from './kv';
import { bytesOfJsonString } from '../urlBytes';

type Operation =
  { op: 'put'; key: Buffer; value: Buffer } | { op: 'delete'; key: Buffer } | { op: 'deleteRange'; start: Buffer; end: Buffer };

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (err) {
    throw badRequest(`batch: the body is not JSON (${(err as Error).message})`);
  }
}

function checkedKey(ctx: RequestContext, value: unknown, what: string): Buffer {
  const key = bytesOfJsonString(value, ctx.hex, what);
  if (key.length === 0) throw badRequest(`${what} is empty`);
  if (key.length > ctx.limits.maxKeyBytes) throw tooLarge(`${what} is ${key.length} bytes, over the limit of ${ctx.limits.maxKeyBytes}`);
  return key;
}

function operationOf(ctx: RequestContext, raw: unknown, i: number): Operation {
  const at = `batch operation ${i}`;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw badRequest(`${at} must be an object`);
  const o = raw as Record<string, unknown>;
  switch (o.op) {
    case 'put': {
      const value = bytesOfJsonString(o.value, ctx.hex, `${at}: value`);
      if (value.length > ctx.limits.maxValueBytes) throw tooLarge(`${at}: value is over ${ctx.limits.maxValueBytes} bytes`);
      return { op: 'put', key: checkedKey(ctx, o.key, `${at}: key`), value };
    }
    case 'delete':
      return { op: 'delete', key: checkedKey(ctx, o.key, `${at}: key`) };
    case 'deleteRange': {
      const start = checkedKey(ctx, o.start, `${at}: start`);
      const end = checkedKey(ctx, o.end, `${at}: end`);
      if (compareUserKeys(start, end) >= 0) throw badRequest(`${at}: start must sort below end`);
      return { op: 'deleteRange', start, end };
    }
    default:
      throw badRequest(`${at}: op must be put, delete or deleteRange, got ${JSON.stringify(o.op ?? null)}`);
  }
}

export async function postBatch(ctx: RequestContext): Promise<void> {
  const body = await readBody(ctx.req, ctx.limits.maxBatchBodyBytes, 'batch', ctx.memory);
  await ctx.memory.reserve(BATCH_DECODE_FACTOR * body.length, 'batch');
  const parsed = parseJson(body);
  if (!Array.isArray(parsed)) throw badRequest('batch: the body must be a JSON array of operations');
  if (parsed.length === 0) throw badRequest('batch: no operations');
  if (parsed.length > ctx.limits.maxBatchOperations) {
    throw tooLarge(`batch: ${parsed.length} operations, over the limit of ${ctx.limits.maxBatchOperations}`);
  }
  const ops = parsed.map((raw, i) => operationOf(ctx, raw, i));
  const batch = new WriteBatch(Math.min(body.length + 64, ctx.limits.maxBatchBodyBytes));
  for (const op of ops) {
    if (op.op === 'put') batch.put(op.key, op.value);
    else if (op.op === 'delete') batch.delete(op.key);
    else batch.deleteRange(op.start, op.end);
  }
  const sequence = await ctx.engine.write(batch, { sync: ctx.syncWrites });
  await acknowledgeable(ctx);
  replyJson(ctx, 200, { sequence, count: ops.length });
}
