/**
 * What a route handler gets: the request and response, the decoded path parameter and query, the
 * engine, the limits, and the server's shared services (the import queue, the staged imports).
 * A handler answers through `reply*` or throws; the server turns a throw into the JSON error.
 */
import { IncomingMessage, ServerResponse } from 'http';
import { Engine } from '../engine/engine';
import { ServerLimits } from './limits';
import { ImportQueue } from './importQueue';
import { badRequest } from './httpErrors';
import type { RequestMemory } from './memoryBudget';
import type { StagedImports } from './stagedImports';
import type { ImportRegistry } from './importRegistry';

export interface RequestContext {
  /** The request's id in the log (`<server start, base 36>-<n>`). */
  requestId: string;
  req: IncomingMessage;
  res: ServerResponse;
  /** The path's parameter (`/v1/kv/{key}`), still percent-encoded; '' when the route has none. */
  param: string;
  query: Map<string, Buffer>;
  /** `?hex=1`: keys and values in the path, query and JSON are hex. */
  hex: boolean;
  engine: Engine;
  limits: Readonly<ServerLimits>;
  imports: ImportQueue;
  /** The staged imports (stagedImports.ts), kept on disk in the database directory. */
  staging: StagedImports;
  /** Every import the server runs and ran lately (importRegistry.ts): the console's and the metrics' source. */
  importRegistry: ImportRegistry;
  /** fdatasync every write before acknowledging it (`ingest serve --sync`). */
  syncWrites: boolean;
  /** This request's share of the server's memory budget, released when it is answered. */
  memory: RequestMemory;
}

export type RouteHandler = (ctx: RequestContext) => Promise<void>;

/** A boolean query flag: absent or 0/false is false; '', 1 or true is true; anything else a 400. */
export function queryFlag(query: Map<string, Buffer>, name: string): boolean {
  const v = query.get(name)?.toString('utf8');
  if (v === undefined || v === '0' || v === 'false') return false;
  if (v === '' || v === '1' || v === 'true') return true;
  throw badRequest(`query parameter ${name} must be 1, true, 0 or false, got "${v}"`);
}

export function replyJson(ctx: RequestContext, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  ctx.res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  ctx.res.end(text);
}

export function replyNoContent(ctx: RequestContext, sequence: number): void {
  ctx.res.writeHead(204, { 'ingest-sequence': String(sequence) });
  ctx.res.end();
}
