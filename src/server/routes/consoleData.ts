/**
 * The web console's data (JSON, behind the token like every /v1 route; docs/serve.md "Console
 * data"):
 *   GET /v1/console/imports                   {"running": [ImportView...], "recent": [ImportView...]}
 *                                             newest first (importRegistry.ts)
 *   GET /v1/console/imports/{id}/conflicts    ?offset=0&limit=50&prefix=&file=: {"id", "total"
 *                                             (matching the filter), "offset", "limit",
 *                                             "conflicts": [ReportedConflict...]}, in the report's
 *                                             order; prefix: keys whose shown text starts with it;
 *                                             file: rows from that source file. limit at most
 *                                             CONFLICT_PAGE_MAX; 404 NOT_FOUND for an unknown id or
 *                                             a report no longer kept
 *   GET /v1/console/history                   {"intervalMs", "samples": [...]} (historySampler.ts)
 */
import { RequestContext, replyJson } from '../requestContext';
import { badRequest } from '../httpErrors';
import { CONFLICT_PAGE_MAX, ConflictQuery } from '../importRegistry';
import type { HistorySampler } from '../historySampler';

export const CONSOLE_IMPORTS = '/v1/console/imports';
export const CONSOLE_CONFLICTS = '/v1/console/imports/{id}/conflicts';
export const CONSOLE_HISTORY = '/v1/console/history';
const DEFAULT_CONFLICT_PAGE = 50;
/** Import ids are the registry's (`imp-...`): anything longer or stranger is no id of ours. */
const IMPORT_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The {id} of /v1/console/imports/{id}/conflicts, or null when the path is not that. */
export function conflictsParamOf(rawPath: string): string | null {
  const prefix = `${CONSOLE_IMPORTS}/`;
  const suffix = '/conflicts';
  if (!rawPath.startsWith(prefix) || !rawPath.endsWith(suffix)) return null;
  const id = rawPath.slice(prefix.length, rawPath.length - suffix.length);
  return id.length > 0 && !id.includes('/') ? id : null;
}

export async function getConsoleImports(ctx: RequestContext): Promise<void> {
  replyJson(ctx, 200, ctx.importRegistry.list());
}

function countOf(ctx: RequestContext, name: string, fallback: number, max: number): number {
  const text = ctx.query.get(name)?.toString('utf8');
  if (text === undefined) return fallback;
  const n = /^[0-9]{1,15}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n > max) throw badRequest(`${name} must be an integer 0..${max}, got "${text.slice(0, 40)}"`);
  return n;
}

function textOf(ctx: RequestContext, name: string): string | undefined {
  const v = ctx.query.get(name);
  return v === undefined || v.length === 0 ? undefined : v.toString('utf8');
}

export async function getConsoleConflicts(ctx: RequestContext): Promise<void> {
  const id = ctx.param;
  if (!IMPORT_ID.test(id)) throw badRequest(`import id ${JSON.stringify(id.slice(0, 80))}: expected [A-Za-z0-9_-]{1,64}`);
  const query: ConflictQuery = {
    offset: countOf(ctx, 'offset', 0, Number.MAX_SAFE_INTEGER),
    limit: countOf(ctx, 'limit', DEFAULT_CONFLICT_PAGE, CONFLICT_PAGE_MAX),
    prefix: textOf(ctx, 'prefix'),
    file: textOf(ctx, 'file'),
  };
  replyJson(ctx, 200, ctx.importRegistry.conflicts(id, query));
}

export function historyRoute(history: HistorySampler): (ctx: RequestContext) => Promise<void> {
  return async (ctx) => replyJson(ctx, 200, history.view());
}
