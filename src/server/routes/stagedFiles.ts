/**
 * Staged ingestion (stagedImports.ts keeps the imports): a client sends its SSTs one request at a
 * time, each retried on its own, and lands them all at once.
 *
 *   PUT    /v1/imports/{id}/files/{name}  one file as the body (Content-Length required, else 411;
 *                                         over maxUploadBytes 413; past the staging quota 507; all
 *                                         before the body is read). Streamed to disk, hashed
 *                                         (SHA-256) on the way, fsynced; an SST is verified as an
 *                                         upload is (sstUploads.ts: 422 for a bad file, 413 for a
 *                                         key or value over the limits; the file is not kept), then
 *                                         renamed into place. 201 {"id", "name", "sizeBytes",
 *                                         "sha256", "staged": true}. The same bytes again under
 *                                         that name: 200 {..., "staged": false, "identical": true},
 *                                         nothing redone (a client's retry); other bytes: 409.
 *   GET    /v1/imports/{id}               {"id", "files": [{"name", "sizeBytes", "sha256"}],
 *                                         "totalBytes", "createdAt", "updatedAt"}; 404 unknown
 *   GET    /v1/imports                    {"imports": [that, ...]} oldest first
 *   POST   /v1/imports/{id}/commit?{opts} the checked ingestion of every staged SST as one, through
 *                                         the multipart upload's own code (landVerifiedUploads), in
 *                                         the import queue, with the upload's options and
 *                                         Ingest-Value-Encoding header. A mode=import commit that
 *                                         answers 200 or 409 (conflicts, aborted) removes the
 *                                         import; any other answer (a 5xx, a plan, a check) keeps
 *                                         it, to be committed again or deleted.
 *   DELETE /v1/imports/{id}               204; 404 unknown
 * id: [A-Za-z0-9_-]{1,64} (not "sst"); name: [A-Za-z0-9._-]{1,128}, NAME.sst or NAME.origins (the
 * row origins of NAME.sst, so conflicts name the client's CSV file and line); else 400.
 */
import * as fs from 'fs';
import * as path from 'path';
import { createHash } from 'crypto';
import { Transform, TransformCallback } from 'stream';
import { pipeline } from 'stream/promises';
import { inspectExternalFiles } from '../../engine/ingest/inspectFiles';
import { IngestError, isNoSpaceError } from '../../util/errors';
import { RequestContext, replyJson } from '../requestContext';
import { HttpError, tooLarge } from '../httpErrors';
import { importRequestOf } from '../importQuery';
import { StagedFile, StagedImport, checkImportId, checkStagedFileName } from '../stagedImports';
import { makeRequestScratchDir, trackImport } from './imports';
import { Upload, checkEntrySizes, landVerifiedUploads, sstsOf, verifyUploads, verifyingUploads, withoutScratchPath } from './sstUploads';

/** The {id}/{name} parameter of the file route (routes.ts). */
function fileParamOf(param: string): { id: string; name: string } {
  const slash = param.indexOf('/');
  return { id: checkImportId(param.slice(0, slash)), name: checkStagedFileName(param.slice(slash + 1)) };
}

/** Counts and hashes the bytes on their way to the file; fails past `limitBytes`. */
class HashingCounter extends Transform {
  readonly hash = createHash('sha256');
  bytes = 0;
  constructor(private readonly limitBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limitBytes) {
      done(tooLarge(`the body is longer than its Content-Length of ${this.limitBytes}`));
      return;
    }
    this.hash.update(chunk);
    done(null, chunk);
  }
}

function declaredLengthOf(ctx: RequestContext, name: string): number {
  const header = ctx.req.headers['content-length'];
  const n = Number(header);
  if (header === undefined || !Number.isSafeInteger(n) || n < 0) {
    throw new HttpError(411, 'USAGE', `PUT of ${name}: a Content-Length is required (the body is one file, sent whole)`);
  }
  if (n > ctx.limits.maxUploadBytes) throw tooLarge(`PUT of ${name}: ${n} bytes is over the upload limit of ${ctx.limits.maxUploadBytes}`);
  const encoding = (ctx.req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding !== 'identity' && encoding !== '')
    throw new HttpError(415, 'NOT_SUPPORTED', `PUT of ${name}: Content-Encoding ${encoding} is not taken (send the file as it is)`);
  return n;
}

/** Streams the body into `file` and fsyncs it; returns its SHA-256 (hex). */
async function receiveBody(ctx: RequestContext, file: string, sizeBytes: number, name: string): Promise<string> {
  const counter = new HashingCounter(sizeBytes);
  let aborted = false;
  ctx.req.on('aborted', () => (aborted = true));
  try {
    await pipeline(ctx.req, counter, fs.createWriteStream(file, { flags: 'wx' }));
  } catch (err) {
    if (err instanceof IngestError) throw err;
    if (isNoSpaceError(err)) throw new IngestError('NO_SPACE', `PUT of ${name}: the server's disk is full (retry once space is freed)`);
    if (aborted || !ctx.req.complete) throw new HttpError(400, 'BAD_INPUT', `PUT of ${name}: the body ended before it was complete`);
    throw new IngestError('IO', `PUT of ${name}: cannot write the file: ${(err as Error).message}`, { cause: err });
  }
  if (aborted || !ctx.req.complete || counter.bytes !== sizeBytes)
    throw new HttpError(400, 'BAD_INPUT', `PUT of ${name}: the body ended before it was complete`);
  const fd = fs.openSync(file, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return counter.hash.digest('hex');
}

function differentFile(id: string, name: string, staged: StagedFile, sizeBytes: number): HttpError {
  return new HttpError(
    409,
    'CONFLICT',
    `staged import ${id} already holds a different ${name} (${staged.sizeBytes} bytes, sha256 ${staged.sha256}; this one ${sizeBytes} bytes): DELETE the import or use another name`,
  );
}

/** Verifies a received SST as an upload is verified (the file is named as sent in any error). */
async function verifyReceived(ctx: RequestContext, upload: Upload, dir: string): Promise<void> {
  if (!upload.name.endsWith('.sst')) return;
  checkEntrySizes(await verifyUploads([upload], dir), ctx.limits);
}

/** True when `file` is staged under its name already (the same bytes); 409 when other bytes are. */
function isStagedAlready(ctx: RequestContext, id: string, file: StagedFile): boolean {
  const staged = ctx.staging.fileOf(id, file.name);
  if (staged === undefined) return false;
  if (staged.sha256 !== file.sha256 || staged.sizeBytes !== file.sizeBytes) throw differentFile(id, file.name, staged, file.sizeBytes);
  return true;
}

export async function putStagedFile(ctx: RequestContext): Promise<void> {
  const { id, name } = fileParamOf(ctx.param);
  const sizeBytes = declaredLengthOf(ctx, name);
  const before = ctx.staging.fileOf(id, name);
  if (before !== undefined && before.sizeBytes !== sizeBytes) throw differentFile(id, name, before, sizeBytes);
  // A retry of a staged file adds nothing to the staged total.
  const receiving = ctx.staging.beginReceiving(id, before === undefined ? sizeBytes : 0);
  try {
    const upload: Upload = { name, file: path.join(receiving.dir, name), sizeBytes };
    const file: StagedFile = { name, sizeBytes, sha256: await receiveBody(ctx, upload.file, sizeBytes, name) };
    if (!isStagedAlready(ctx, id, file)) {
      await verifyReceived(ctx, upload, receiving.dir);
      // Asked again: a concurrent PUT of the same name may have staged it meanwhile (addFile is synchronous).
      if (!isStagedAlready(ctx, id, file)) {
        ctx.staging.addFile(id, upload.file, file);
        replyJson(ctx, 201, { id, ...file, staged: true });
        return;
      }
    }
    ctx.staging.counters.identicalPuts++;
    replyJson(ctx, 200, { id, ...file, staged: false, identical: true });
  } finally {
    receiving.release();
  }
}

function importJson(r: StagedImport): StagedImport {
  return { id: r.id, files: r.files, totalBytes: r.totalBytes, createdAt: r.createdAt, updatedAt: r.updatedAt };
}

export async function getStagedImport(ctx: RequestContext): Promise<void> {
  replyJson(ctx, 200, importJson(ctx.staging.get(checkImportId(ctx.param))));
}

export async function listStagedImports(ctx: RequestContext): Promise<void> {
  replyJson(ctx, 200, { imports: ctx.staging.list().map(importJson) });
}

export async function deleteStagedImport(ctx: RequestContext): Promise<void> {
  ctx.staging.delete(checkImportId(ctx.param));
  ctx.res.writeHead(204);
  ctx.res.end();
}

export async function commitStagedImport(ctx: RequestContext): Promise<void> {
  const id = checkImportId(ctx.param);
  const request = importRequestOf(ctx.query, 'upload', ctx.limits);
  const staged = ctx.staging.get(id);
  const names = staged.files.filter((f) => f.name.endsWith('.sst')).map((f) => f.name);
  await trackImport(ctx, { kind: 'staged', names, mode: request.mode }, async (tracked) => {
    const commit = ctx.staging.beginCommit(id);
    const scratch = makeRequestScratchDir(ctx.engine.dir);
    try {
      const filesDir = ctx.staging.filesDir(id);
      const uploads = commit.record.files.map((f) => ({ name: f.name, file: path.join(filesDir, f.name), sizeBytes: f.sizeBytes }));
      const ssts = sstsOf(uploads);
      verifyingUploads(tracked, ssts);
      // Every checksum was verified on arrival: the properties and bounds are enough here.
      const infos = await inspectExternalFiles(
        ssts.map((u) => u.file),
        { verifyChecksums: false },
      ).catch((err: unknown) => {
        throw withoutScratchPath(err, filesDir);
      });
      const status = await landVerifiedUploads(ctx, request, infos, { filesDir, scratchDir: scratch.dir }, tracked);
      if (request.mode === 'import' && (status === 200 || status === 409)) ctx.staging.remove(id);
    } finally {
      scratch.release();
      commit.end();
    }
  });
}
