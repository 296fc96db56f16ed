/**
 * The route table: method and path → handler, and whether the route needs the token and which
 * time limit it runs under. Matching is by exact path, then by prefix for `/v1/kv/{key}` (the key
 * is the rest of the path, still percent-encoded), then by the staged imports' templates
 * `/v1/imports/{id}`, `/v1/imports/{id}/commit` and `/v1/imports/{id}/files/{name}` (the
 * parameter is `id`, or `id/name`; the handlers check both), and by prefix for the console's
 * `/ui/{asset}` (routes/console.ts), and the console data's `/v1/console/imports/{id}/conflicts`
 * (routes/consoleData.ts). A known path with another method is
 * a 405 with an Allow header; an unknown path a 404.
 */
import { RouteHandler } from './requestContext';
import { HttpError } from './httpErrors';
import { deleteKey, getKey, putKey } from './routes/kv';
import { postBatch } from './routes/batch';
import { getScan } from './routes/scan';
import { getHealth } from './routes/stats';
import { postImport } from './routes/imports';
import { postSstUpload } from './routes/sstUploads';
import { commitStagedImport, deleteStagedImport, getStagedImport, listStagedImports, putStagedFile } from './routes/stagedFiles';
import { CONSOLE_PATH, CONSOLE_PREFIX, consoleRoute } from './routes/console';
import {
  CONSOLE_CONFLICTS,
  CONSOLE_HISTORY,
  CONSOLE_IMPORTS,
  conflictsParamOf,
  getConsoleConflicts,
  getConsoleImports,
} from './routes/consoleData';

export interface Route {
  handler: RouteHandler;
  /** GET /healthz, the console's static files (/ui, /ui/{asset}), GET /metrics with --metrics-public: no token needed. */
  public: boolean;
  /** Imports run under importTimeoutMs, everything else under requestTimeoutMs. */
  isImport: boolean;
}

export const KV_PREFIX = '/v1/kv/';
const STAGED_PREFIX = '/v1/imports/';
const STAGED_IMPORT = '/v1/imports/{id}';
const STAGED_COMMIT = '/v1/imports/{id}/commit';
const STAGED_FILE = '/v1/imports/{id}/files/{name}';

type MethodTable = Readonly<Record<string, Route>>;

function route(handler: RouteHandler, opts: { public?: boolean; isImport?: boolean } = {}): Route {
  return { handler, public: opts.public === true, isImport: opts.isImport === true };
}

/** The web console's files carry no data (its data calls are /v1 requests with the token): public, GET and HEAD. */
const consoleMethods: MethodTable = { GET: route(consoleRoute(), { public: true }), HEAD: route(consoleRoute(), { public: true }) };

/** The handlers that close over the server's own state (routes/consoleData.ts, metrics.ts). */
export interface ServerRouteHandlers {
  history: RouteHandler;
  metrics: RouteHandler;
  /** GET /metrics needs no token (`ingest serve --metrics-public`). */
  metricsPublic: boolean;
}

export function routeTable(stats: RouteHandler, server: ServerRouteHandlers): ReadonlyMap<string, MethodTable> {
  return new Map<string, MethodTable>([
    ['/healthz', { GET: route(getHealth, { public: true }) }],
    [KV_PREFIX, { GET: route(getKey), PUT: route(putKey), DELETE: route(deleteKey) }],
    ['/v1/batch', { POST: route(postBatch) }],
    ['/v1/scan', { GET: route(getScan) }],
    ['/v1/stats', { GET: route(stats) }],
    ['/v1/imports', { POST: route(postImport, { isImport: true }), GET: route(listStagedImports) }],
    ['/v1/imports/sst', { POST: route(postSstUpload, { isImport: true }) }],
    [STAGED_IMPORT, { GET: route(getStagedImport), DELETE: route(deleteStagedImport) }],
    [STAGED_COMMIT, { POST: route(commitStagedImport, { isImport: true }) }],
    [STAGED_FILE, { PUT: route(putStagedFile, { isImport: true }) }],
    [CONSOLE_PATH, consoleMethods],
    [CONSOLE_IMPORTS, { GET: route(getConsoleImports) }],
    [CONSOLE_CONFLICTS, { GET: route(getConsoleConflicts) }],
    [CONSOLE_HISTORY, { GET: route(server.history) }],
    ['/metrics', { GET: route(server.metrics, { public: server.metricsPublic }) }],
    [CONSOLE_PREFIX, consoleMethods],
  ]);
}

/** The staged-import template a path matches and its parameter, or null. */
function stagedTemplateOf(rawPath: string): { template: string; param: string } | null {
  if (!rawPath.startsWith(STAGED_PREFIX)) return null;
  const parts = rawPath.slice(STAGED_PREFIX.length).split('/');
  if (parts.length === 1) return { template: STAGED_IMPORT, param: parts[0] };
  if (parts.length === 2 && parts[1] === 'commit') return { template: STAGED_COMMIT, param: parts[0] };
  if (parts.length === 3 && parts[1] === 'files') return { template: STAGED_FILE, param: `${parts[0]}/${parts[2]}` };
  return null;
}

/** The table's key for a path and its parameter: the exact path, the KV prefix or a staged template. */
function keyOf(table: ReadonlyMap<string, MethodTable>, rawPath: string): { key: string; param: string } {
  if (table.has(rawPath)) return { key: rawPath, param: '' };
  if (rawPath.startsWith(KV_PREFIX)) return { key: KV_PREFIX, param: rawPath.slice(KV_PREFIX.length) };
  if (rawPath.startsWith(CONSOLE_PREFIX)) return { key: CONSOLE_PREFIX, param: rawPath.slice(CONSOLE_PREFIX.length) };
  const conflictsOf = conflictsParamOf(rawPath);
  if (conflictsOf !== null) return { key: CONSOLE_CONFLICTS, param: conflictsOf };
  const staged = stagedTemplateOf(rawPath);
  if (staged !== null) return { key: staged.template, param: staged.param };
  return { key: rawPath, param: '' };
}

/** A path matched against the table: its key there, its parameter, and its template (null: no route has it). */
export interface PathMatch {
  rawPath: string;
  key: string;
  param: string;
  /**
   * The route template (`/v1/kv/{key}`, `/v1/imports/{id}/commit`, a prefix's `{path}`, an exact
   * path), or null for a path no route has: metrics and logs name a request by it, never by its
   * raw path (which holds keys, and is unbounded).
   */
  template: string | null;
}

/** Matches a request's path once: resolveRoute and the request's log line and metrics both use it. */
export function matchPath(table: ReadonlyMap<string, MethodTable>, rawPath: string): PathMatch {
  const { key, param } = keyOf(table, rawPath);
  const template = !table.has(key) ? null : key === KV_PREFIX ? `${KV_PREFIX}{key}` : key.endsWith('/') ? `${key}{path}` : key;
  return { rawPath, key, param, template };
}

/** The route for a matched path (matchPath) and its parameter. */
export function resolveRoute(table: ReadonlyMap<string, MethodTable>, method: string, match: PathMatch): { route: Route; param: string } {
  const { key, param, rawPath } = match;
  const isKv = key === KV_PREFIX;
  const methods = table.get(key);
  if (methods === undefined) throw new HttpError(404, 'NOT_FOUND', `no route ${rawPath.slice(0, 200)}`);
  const found = methods[method];
  if (found === undefined) {
    const allow = Object.keys(methods).join(', ');
    const shown = isKv ? `${KV_PREFIX}{key}` : key === rawPath ? rawPath : key;
    throw new HttpError(405, 'USAGE', `${method} is not allowed on ${shown}`, { allow });
  }
  if (isKv && param === '') throw new HttpError(400, 'USAGE', 'the key is empty: /v1/kv/{key}');
  return { route: found, param };
}
