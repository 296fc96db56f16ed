/**
 * GET /v1/stats: the engine's stats document (engine/statsReport.ts, the same `ingest stats
 * --json` prints) plus "server": {"connections", "inFlightRequests", "importsRunning",
 * "importsQueued", "requests" (answered since start), "errors" (4xx and 5xx answered),
 * "memory": {"budgetBytes", "heldBytes", "peakHeldBytes", "refusals"}, "valueEncoding": {"recorded" (the
 * database's VALUE-ENCODING record or null), "holdsData"}: what `ingest import --server` settles its encoding against},
 * "staging": {"imports", "stagedBytes" (held now), "filesStaged", "identicalPuts", "commits", "expired" (since start)}.
 *
 * GET /healthz: {"status": "ok"} while serving (nothing else: it is also the bench's empty route), 503 UNAVAILABLE while draining,
 * 503 {"status": "degraded", "writable": false, "error": {"code", "message"}, "resumable"} while the engine refuses writes
 * (a full disk: writes answer 507 until the server resumes it, writeRecovery.ts);
 * the only route that needs no token, so a load balancer or a script can poll it.
 */
import { statsReportOf } from '../../engine/statsReport';
import { databaseHoldsData, readValueEncoding } from '../../ingest/valueEncodingFile';
import { RequestContext, replyJson } from '../requestContext';

export interface ServerCounters {
  connections: number;
  inFlightRequests: number;
  requests: number;
  errors: number;
  /** The memory budget (memoryBudget.ts): its size, what requests hold now and at most so far, 503s it caused. */
  memory: { budgetBytes: number; heldBytes: number; peakHeldBytes: number; refusals: number };
}

export function statsRoute(counters: () => ServerCounters): (ctx: RequestContext) => Promise<void> {
  return async (ctx) => {
    const valueEncoding = { recorded: readValueEncoding(ctx.engine.dir), holdsData: databaseHoldsData(ctx.engine.dir, ctx.engine) };
    const staging = { imports: ctx.staging.list().length, stagedBytes: ctx.staging.stagedBytes, ...ctx.staging.counters };
    const server = { ...counters(), importsRunning: ctx.imports.running, importsQueued: ctx.imports.queued, valueEncoding, staging };
    replyJson(ctx, 200, { ...statsReportOf(ctx.engine), server });
  };
}

const HEALTHY = { status: 'ok' };

/** 200 ok; 503 degraded while the engine refuses writes (a full disk: reads go on, writes answer 507 until it resumes). */
export async function getHealth(ctx: RequestContext): Promise<void> {
  const error = ctx.engine.writeError;
  if (error === null) {
    replyJson(ctx, 200, HEALTHY);
    return;
  }
  ctx.res.setHeader('retry-after', '1');
  replyJson(ctx, 503, {
    status: 'degraded',
    writable: false,
    error: { code: error.code, message: error.message },
    resumable: error.resumable,
  });
}
