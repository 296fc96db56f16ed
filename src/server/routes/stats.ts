/**
 * GET /v1/stats: the engine's stats document (engine/statsReport.ts, the same `ingest stats
 * --json` prints) plus "server": {"connections", "inFlightRequests", "importsRunning",
 * "importsQueued", "requests" (answered since start), "errors" (4xx and 5xx answered)}.
 *
 * GET /healthz: {"status": "ok"} while serving (nothing else: it is also the bench's empty route), 503 UNAVAILABLE while draining;
 * the only route that needs no token, so a load balancer or a script can poll it.
 */
import { statsReportOf } from '../../engine/statsReport';
import { RequestContext, replyJson } from '../requestContext';

export interface ServerCounters {
  connections: number;
  inFlightRequests: number;
  requests: number;
  errors: number;
}

export function statsRoute(counters: () => ServerCounters): (ctx: RequestContext) => Promise<void> {
  return async (ctx) => {
    const server = { ...counters(), importsRunning: ctx.imports.running, importsQueued: ctx.imports.queued };
    replyJson(ctx, 200, { ...statsReportOf(ctx.engine), server });
  };
}

const HEALTHY = { status: 'ok' };

export async function getHealth(ctx: RequestContext): Promise<void> {
  replyJson(ctx, 200, HEALTHY);
}
