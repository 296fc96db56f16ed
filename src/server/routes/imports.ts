/**
 * POST /v1/imports?{import options}: a CSV body through the whole pipeline on the server
 * (src/ingest/importIntoDb.ts against the server's live engine), answered with the JSON
 * `ingest import --db --json` prints (`ingest plan` / `ingest check` with mode=plan|check; see
 * importJson.ts) plus "conflictReport", the conflict report itself (and, for a check, "db"):
 *   200 it landed (or a plan; or a check without conflicts);
 *   409 conflicts aborted it (or a check found some), with the report and
 *       "error": {"code": "CONFLICT", "message"}; nothing was ingested;
 *   400 bad input (file = the `name` parameter, default "request body", and the line), and
 *       every other error of the CLI's, with its status (httpErrors.ts).
 *
 * The body is spooled to a file in a scratch directory inside the database (gzip decoded on the
 * way, Content-Encoding), never held in memory, then parsed by the import's worker threads at
 * the lowest CPU priority, so the serving thread keeps answering. A scratch directory survives
 * nothing: removed when the request ends, and after a SIGKILL by the next open of the database.
 * The request waits its turn in the import queue before its body is read (429 when it is full).
 */
import * as fs from 'fs';
import * as path from 'path';
import { ownScratchDirPrefix } from '../../engine/scratchDirs';
import { DbCheckResult, DbImport, DbImportOptions, DbImportResult, conflictFailure } from '../../ingest/importIntoDb';
import { dbRunJson } from '../../ingest/importJson';
import { DEFAULT_MEMORY_LIMIT_BYTES } from '../../ingest/memoryBudget';
import { SpaceSettleResult, settleSpace, spacePolicyOf, spaceSettleFailure } from '../../ingest/spacePolicy';
import { conflictReportJson } from '../../conflict/report';
import { dbImportOptionsOf } from '../../ingest/options/importSettings';
import { IngestError } from '../../util/errors';
import { RequestContext, replyJson } from '../requestContext';
import { HttpError } from '../httpErrors';
import { importRequestOf } from '../importQuery';
import { spoolBody } from '../requestBody';
import { ImportKind, ImportMode, TrackedImport, checkPhaseOf } from '../importRegistry';

/** A scratch directory inside the database for one request, removed by `release`. */
export function makeRequestScratchDir(dbDir: string): { dir: string; release: () => void } {
  let dir: string;
  try {
    dir = fs.mkdtempSync(ownScratchDirPrefix(dbDir));
  } catch (err) {
    throw new IngestError('IO', `cannot create a scratch directory in ${dbDir}: ${(err as Error).message}`, { cause: err });
  }
  return { dir, release: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** The answer to a finished run: 200, or 409 with the conflict error beside the document. */
export function replyImportResult(ctx: RequestContext, result: DbImportResult | DbCheckResult, extra: Record<string, unknown>): void {
  const failure = conflictFailure(result);
  // A check's document has no "db" (the CLI's has none either); the server names its database for clients that print it.
  const db = result.mode === 'check' ? { db: result.db } : {};
  const body = { ...db, ...dbRunJson(result), ...extra, conflictReport: conflictReportJson(result.report) };
  if (failure === null) replyJson(ctx, 200, body);
  else replyJson(ctx, 409, { ...body, error: { code: failure.code, message: failure.message } });
}

/**
 * Runs a DbImport against the server's engine, silently (run() removes its private directory
 * whatever happens), then, when it ingested something, the space policy (spacePolicy.ts) before
 * the answer: the background compactions keep the level targets, but only the policy compacts a
 * database whose upper levels pile up older versions (estimate over DEFAULT_MAX_SPACE_AMPLIFICATION), so a nightly import through the server leaves it as bounded as one through the CLI.
 * It runs in the import queue's turn, one at a time; its compaction yields to reads and writes as
 * every compaction does.
 */
export async function runServerImport(
  ctx: RequestContext,
  options: DbImportOptions,
  tracked: TrackedImport,
): Promise<DbImportResult | DbCheckResult> {
  // The import's sort buffers and workers hold up to its memory limit while it runs.
  await ctx.memory.reserve(options.import.memoryLimitBytes ?? DEFAULT_MEMORY_LIMIT_BYTES, 'import');
  const result = await new DbImport({
    ...options,
    engine: ctx.engine,
    // Progress goes to the import registry (the console, the metrics, the log), never to stderr.
    import: { ...options.import, progress: undefined, onProgress: (e) => tracked.progress(e) },
    onCheckStart: () => tracked.setPhase(checkPhaseOf(tracked.mode)),
  }).run();
  if (result.mode === 'import' && !result.dryRun && (result.ingest !== null || result.replaceRange !== null)) {
    result.space = await settleLiveSpace(ctx, result);
  }
  tracked.finish(result);
  return result;
}

/**
 * Runs an import request's `job` in the import queue's turn, registered in the import registry
 * from the moment the queue takes it (a request the queue refuses, 429, is never registered);
 * a job that throws marks it failed. The job calls runServerImport, which records the result.
 */
export async function trackImport(
  ctx: RequestContext,
  spec: { kind: ImportKind; names: readonly string[]; mode: ImportMode },
  job: (tracked: TrackedImport) => Promise<void>,
): Promise<void> {
  ctx.imports.checkRoom();
  const tracked = ctx.importRegistry.begin(spec.kind, spec.names, spec.mode, ctx.requestId);
  try {
    await ctx.imports.run(() => job(tracked));
  } catch (err) {
    tracked.fail(err);
    throw err;
  } finally {
    // A job that neither finished nor threw (it answered without running the import) is not left running.
    tracked.fail(new HttpError(500, 'INTERNAL', 'the import ended without a result'));
  }
}

/**
 * Phase "receiving": the body's bytes as they arrive (as sent: gzip or multipart framing
 * included), of its Content-Length when given. Call it in the same tick as the body's reader
 * starts (spoolBody, busboy's pipe): the count's 'data' listener sets the body flowing, and a
 * reader that attached later would miss the first chunks.
 */
export function receivingBody(ctx: RequestContext, tracked: TrackedImport): void {
  let bytes = 0;
  ctx.req.on('data', (chunk: Buffer) => void (bytes += chunk.length));
  const declared = Number(ctx.req.headers['content-length'] ?? NaN);
  tracked.receiving(() => bytes, Number.isSafeInteger(declared) ? declared : null);
}

async function settleLiveSpace(ctx: RequestContext, result: DbImportResult): Promise<SpaceSettleResult> {
  const replaced =
    result.replaceRange === null
      ? null
      : { start: Buffer.from(result.replaceRange.startHex, 'hex'), end: Buffer.from(result.replaceRange.endHex, 'hex') };
  try {
    // The level targets' compactions are the background's: a live engine may always have one due.
    return await settleSpace(ctx.engine, { ...spacePolicyOf(undefined, undefined), replaced, skipDue: true });
  } catch (e) {
    return spaceSettleFailure(e);
  }
}

export async function postImport(ctx: RequestContext): Promise<void> {
  const request = importRequestOf(ctx.query, 'request body', ctx.limits);
  await trackImport(ctx, { kind: 'csv', names: [request.name], mode: request.mode }, async (tracked) => {
    const scratch = makeRequestScratchDir(ctx.engine.dir);
    try {
      const bodyFile = path.join(scratch.dir, 'body.csv');
      receivingBody(ctx, tracked);
      await spoolBody(ctx.req, bodyFile, ctx.limits.maxImportBodyBytes, `import ${request.name}`);
      const options = dbImportOptionsOf([bodyFile], { ...request.options, db: ctx.engine.dir }, request.mode);
      // Sorted runs (and a check's SSTs) go to the scratch directory too: inside the database, removed with it.
      const result = await runServerImport(
        ctx,
        { ...options, import: { ...options.import, inputNames: [request.name], tmpDir: scratch.dir } },
        tracked,
      );
      replyImportResult(ctx, result, {});
    } finally {
      scratch.release();
    }
  });
}
