/**
 * The route table: method and path → handler, and whether the route needs the token and which
 * time limit it runs under. Matching is by exact path, or by prefix for `/v1/kv/{key}` (the key
 * is the rest of the path, still percent-encoded). A known path with another method is a 405
 * with an Allow header; an unknown path a 404.
 */
import { RouteHandler } from './requestContext';
import { HttpError } from './httpErrors';
import { deleteKey, getKey, putKey } from './routes/kv';
import { postBatch } from './routes/batch';
import { getScan } from './routes/scan';
import { getHealth } from './routes/stats';
import { postImport } from './routes/imports';
import { postSstUpload } from './routes/sstUploads';

export interface Route {
  handler: RouteHandler;
  /** GET /healthz only: no token needed. */
  public: boolean;
  /** Imports run under importTimeoutMs, everything else under requestTimeoutMs. */
  isImport: boolean;
}

export const KV_PREFIX = '/v1/kv/';

type MethodTable = Readonly<Record<string, Route>>;

function route(handler: RouteHandler, opts: { public?: boolean; isImport?: boolean } = {}): Route {
  return { handler, public: opts.public === true, isImport: opts.isImport === true };
}

export function routeTable(stats: RouteHandler): ReadonlyMap<string, MethodTable> {
  return new Map<string, MethodTable>([
    ['/healthz', { GET: route(getHealth, { public: true }) }],
    [KV_PREFIX, { GET: route(getKey), PUT: route(putKey), DELETE: route(deleteKey) }],
    ['/v1/batch', { POST: route(postBatch) }],
    ['/v1/scan', { GET: route(getScan) }],
    ['/v1/stats', { GET: route(stats) }],
    ['/v1/imports', { POST: route(postImport, { isImport: true }) }],
    ['/v1/imports/sst', { POST: route(postSstUpload, { isImport: true }) }],
  ]);
}

/** The route for a request and its path parameter. */
export function resolveRoute(table: ReadonlyMap<string, MethodTable>, method: string, rawPath: string): { route: Route; param: string } {
  const isKv = rawPath.startsWith(KV_PREFIX);
  const methods = table.get(isKv ? KV_PREFIX : rawPath);
  if (methods === undefined) throw new HttpError(404, 'NOT_FOUND', `no route ${rawPath.slice(0, 200)}`);
  const found = methods[method];
  if (found === undefined) {
    const allow = Object.keys(methods).join(', ');
    throw new HttpError(405, 'USAGE', `${method} is not allowed on ${isKv ? `${KV_PREFIX}{key}` : rawPath}`, { allow });
  }
  if (isKv && rawPath.length === KV_PREFIX.length) throw new HttpError(400, 'USAGE', 'the key is empty: /v1/kv/{key}');
  return { route: found, param: isKv ? rawPath.slice(KV_PREFIX.length) : '' };
}
