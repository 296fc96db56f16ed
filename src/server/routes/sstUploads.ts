/**
 * POST /v1/imports/sst?{options}: prebuilt SSTs (ours, or RocksDB's SstFileWriter's) uploaded
 * and landed through the same checked ingestion as a CSV import (mode=check|plan too). The CLI's
 * `ingest import ... --server URL` parses and sorts on the client and sends its SSTs here, each
 * with its row-origins file, so conflicts still name the CSV file and line.
 *
 * Body, either:
 *   - multipart/form-data (`curl -F sst=@000001.sst -F sst=@000002.sst`): file parts named
 *     NAME.sst, and optionally NAME.origins beside a NAME.sst (names: [A-Za-z0-9._-], at most
 *     128 characters, each once); other parts are a 400;
 *   - application/octet-stream: one SST, called ?name= (default upload.sst).
 * Options: the policy and check options of POST /v1/imports (on-conflict, conflict-strategy,
 * max-reported, replace-range, key to show keys, blocking-flush; importQuery.ts).
 *
 * Every file is verified in full (every block's checksum, key order, properties; on a worker
 * thread at the lowest priority when large) before anything else: a file that fails is a 422
 * CORRUPTION (or NOT_SUPPORTED, INVALID_ARGUMENT: not an external SST) naming the file and the
 * block offset, and nothing is ingested. The same pass measures the largest key and value: a
 * file holding a key over ServerLimits.maxKeyBytes or a value over maxValueBytes (the limits of
 * PUT /v1/kv and POST /v1/batch) is a 413 TOO_LARGE naming the upload and the size, nothing
 * ingested. The ingestion then skips a second verification: the files sit in the request's
 * private directory, which nothing else writes. No error names that directory (or the database's):
 * files are named as uploaded, whether the verification or the run (a conflict check that takes
 * put-only SSTs: 422 NOT_SUPPORTED for a file with deletions) refused them.
 *
 * The answer is the document of POST /v1/imports, with "import" replaced by "uploads": [{"name",
 * "sizeBytes", "entries", "smallestHex", "largestHex"}] (a client that sorted the rows itself has
 * the import summary already).
 *
 * landVerifiedUploads (verified files → summary → run → reply) is shared with the commit of a
 * staged import (stagedFiles.ts), and the name checks and verification with its PUT.
 */
import { VALUE_ENCODING_HEADER } from '../valueEncodingHeader';
import { parseValueEncodingText } from '../../ingest/valueEncodingFile';
import { ValueEncoding } from '../../ingest/rows/valueEncoding';
import * as fs from 'fs';
import { Readable } from 'stream';
import * as path from 'path';
import busboy from 'busboy';
import { pipeline } from 'stream/promises';
import { inspectExternalFiles } from '../../engine/ingest/inspectFiles';
import { ExternalFileInfo } from '../../engine/ingest/externalFile';
import { compareUserKeys } from '../../base/keyCompare';
import { ImportSummary } from '../../ingest/importer';
import { LIVE_WORKER_NICENESS } from '../../ingest/importIntoDb';
import { dbImportOptionsOf } from '../../ingest/options/importSettings';
import { showKey } from '../../conflict/report';
import { IngestError } from '../../util/errors';
import { RequestContext } from '../requestContext';
import { HttpError, badRequest, statusOfCode, tooLarge } from '../httpErrors';
import { ServerLimits } from '../limits';
import { ImportRequest, importRequestOf } from '../importQuery';
import { spoolBody } from '../requestBody';
import { makeRequestScratchDir, receivingBody, replyImportResult, runServerImport, trackImport } from './imports';
import type { TrackedImport } from '../importRegistry';

export const UPLOAD_NAME = /^[A-Za-z0-9._-]{1,128}$/;

export interface Upload {
  name: string;
  file: string;
  sizeBytes: number;
}

function checkName(name: string, seen: Set<string>): void {
  if (!UPLOAD_NAME.test(name) || name === '.' || name === '..') {
    throw badRequest(`upload name ${JSON.stringify(name)}: use 1..128 characters of A-Z a-z 0-9 . _ -`);
  }
  if (!name.endsWith('.sst') && !name.endsWith('.origins')) throw badRequest(`upload ${name}: expected NAME.sst or NAME.origins`);
  if (seen.has(name)) throw badRequest(`upload ${name} is given twice`);
  seen.add(name);
}

/** Streams every file part into `dir`; the request's body is consumed whole or the upload fails. */
function receiveMultipart(ctx: RequestContext, dir: string): Promise<Upload[]> {
  const limits = ctx.limits;
  return new Promise((resolve, reject) => {
    const uploads: Upload[] = [];
    const writes: Promise<void>[] = [];
    // Every part's stream and file still open: a failed or aborted upload closes them at once
    // (else a part whose body never ends keeps its descriptor, and its deleted file, forever).
    const open = new Set<Readable | fs.WriteStream>();
    const seen = new Set<string>();
    let totalBytes = 0;
    let failed = false;
    const fail = (err: unknown): void => {
      if (failed) return;
      failed = true;
      ctx.req.unpipe(parser);
      ctx.req.resume();
      for (const stream of open) stream.destroy();
      open.clear();
      reject(err);
    };
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: ctx.req.headers, limits: { files: limits.maxUploadFiles, fields: 0, parts: limits.maxUploadFiles } });
    } catch (err) {
      reject(badRequest(`upload: ${(err as Error).message}`));
      return;
    }
    parser.on('file', (_field, stream, info) => {
      const name = info.filename ?? '';
      try {
        checkName(name, seen);
      } catch (err) {
        stream.resume();
        fail(err);
        return;
      }
      const upload: Upload = { name, file: path.join(dir, name), sizeBytes: 0 };
      uploads.push(upload);
      stream.on('data', (chunk: Buffer) => {
        upload.sizeBytes += chunk.length;
        totalBytes += chunk.length;
        if (totalBytes > limits.maxUploadBytes) fail(tooLarge(`upload: over the limit of ${limits.maxUploadBytes} bytes`));
      });
      const out = fs.createWriteStream(upload.file, { flags: 'wx' });
      open.add(stream);
      open.add(out);
      writes.push(
        pipeline(stream, out).then(
          () => {
            open.delete(stream);
            open.delete(out);
          },
          (err: unknown) => fail(err),
        ),
      );
    });
    parser.on('field', (name) => fail(badRequest(`upload: unexpected form field ${name} (only file parts are taken)`)));
    parser.on('filesLimit', () => fail(tooLarge(`upload: more than ${limits.maxUploadFiles} files`)));
    parser.on('partsLimit', () => fail(tooLarge(`upload: more than ${limits.maxUploadFiles} parts`)));
    parser.on('fieldsLimit', () => fail(badRequest('upload: only file parts are taken')));
    parser.on('error', (err: Error) => fail(badRequest(`upload: malformed multipart body (${err.message})`)));
    parser.on('close', () => {
      if (failed) return;
      Promise.all(writes).then(() => {
        if (!ctx.req.complete) fail(new HttpError(400, 'BAD_INPUT', 'upload: the body ended before it was complete'));
        else if (!failed) resolve(uploads);
      }, fail);
    });
    ctx.req.on('aborted', () => fail(new HttpError(400, 'BAD_INPUT', 'upload: the body ended before it was complete')));
    ctx.req.pipe(parser);
  });
}

async function receiveUploads(ctx: RequestContext, dir: string): Promise<Upload[]> {
  const type = (ctx.req.headers['content-type'] ?? '').toLowerCase();
  if (type.startsWith('multipart/form-data')) return receiveMultipart(ctx, dir);
  if (type.startsWith('application/octet-stream')) {
    const name = ctx.query.get('name')?.toString('utf8') ?? 'upload.sst';
    checkName(name, new Set());
    if (!name.endsWith('.sst')) throw badRequest(`upload ${name}: a single upload is an SST (NAME.sst)`);
    const file = path.join(dir, name);
    const sizeBytes = await spoolBody(ctx.req, file, ctx.limits.maxUploadBytes, `upload ${name}`);
    return [{ name, file, sizeBytes }];
  }
  throw new HttpError(415, 'NOT_SUPPORTED', `upload: Content-Type must be multipart/form-data or application/octet-stream, got "${type}"`);
}

/** The SSTs among the uploads, each origins file beside its SST. */
export function sstsOf(uploads: readonly Upload[]): Upload[] {
  const ssts = uploads.filter((u) => u.name.endsWith('.sst'));
  const names = new Set(ssts.map((u) => u.name.slice(0, -'.sst'.length)));
  for (const u of uploads) {
    if (u.name.endsWith('.origins') && !names.has(u.name.slice(0, -'.origins'.length))) {
      throw badRequest(`upload ${u.name} has no ${u.name.slice(0, -'.origins'.length)}.sst beside it`);
    }
  }
  // No SST at all is an empty import (the CLI sends one for a CSV without rows): nothing to ingest.
  return ssts;
}

/** The tracked import's phase while `ssts` are verified: their names, and their bytes as the total. */
export function verifyingUploads(tracked: TrackedImport, ssts: readonly Upload[]): void {
  tracked.setNames(ssts.map((u) => u.name));
  tracked.setPhase(
    'verifying',
    ssts.reduce((n, u) => n + u.sizeBytes, 0),
  );
}

/** Verifies every file; a failure is a 422 naming the upload (not the server's directory) and the block. */
export async function verifyUploads(ssts: readonly Upload[], dir: string): Promise<ExternalFileInfo[]> {
  try {
    return await inspectExternalFiles(
      ssts.map((u) => u.file),
      { verifyChecksums: true, workerNiceness: LIVE_WORKER_NICENESS },
    );
  } catch (err) {
    if (!(err instanceof IngestError) || err.code === 'IO') throw err;
    const message = err.message.split(`${dir}${path.sep}`).join('');
    throw new HttpError(422, err.code, `upload rejected, nothing ingested: ${message}`);
  }
}

/** 413 for an upload holding a key or value over the server's limits (verifyUploads measured them). */
export function checkEntrySizes(infos: readonly ExternalFileInfo[], limits: ServerLimits): void {
  for (const info of infos) {
    const name = path.basename(info.path);
    const keyBytes = info.largestKeyBytes ?? 0;
    const valueBytes = info.largestValueBytes ?? 0;
    if (keyBytes > limits.maxKeyBytes)
      throw tooLarge(`upload ${name} holds a key of ${keyBytes} bytes, over the limit of ${limits.maxKeyBytes}; nothing ingested`);
    if (valueBytes > limits.maxValueBytes)
      throw tooLarge(`upload ${name} holds a value of ${valueBytes} bytes, over the limit of ${limits.maxValueBytes}; nothing ingested`);
  }
}

/**
 * `err` without the request's scratch directory in its message (an upload's file is named as
 * uploaded, as verifyUploads names it), with the status its code has; other errors as they are.
 */
export function withoutScratchPath(err: unknown, scratchDir: string): unknown {
  if (!(err instanceof IngestError) || !err.message.includes(scratchDir)) return err;
  const message = err.message.split(`${scratchDir}${path.sep}`).join('').split(scratchDir).join('the upload');
  if (err instanceof HttpError) return new HttpError(err.status, err.code, message, err.headers);
  return new HttpError(statusOfCode(err.code) ?? 500, err.code, message);
}

/** The encoding the upload's client wrote its values in (valueEncodingHeader.ts), or undefined. */
function uploadedValueEncoding(ctx: RequestContext): ValueEncoding | undefined {
  const header = ctx.req.headers[VALUE_ENCODING_HEADER];
  if (header === undefined) return undefined;
  if (Array.isArray(header)) throw new HttpError(400, 'BAD_INPUT', `the upload names its value encoding twice (${VALUE_ENCODING_HEADER})`);
  return parseValueEncodingText(header, `the upload's ${VALUE_ENCODING_HEADER} header`);
}

/** The import summary the pipeline expects, for files a client (or RocksDB) sorted. */
function uploadSummaryOf(infos: ExternalFileInfo[], dir: string): ImportSummary {
  const files = [...infos].sort((a, b) => compareUserKeys(a.range.smallest, b.range.smallest));
  const entries = files.reduce((n, f) => n + f.numPointEntries, 0);
  return {
    inputs: [],
    inputBytes: files.reduce((n, f) => n + f.fileSizeBytes, 0),
    parser: 'fast',
    parserReason: 'prebuilt SSTs (upload)',
    resume: null,
    parseThreads: 0,
    parseRanges: 0,
    parseRangesRetried: 0,
    mergeThreads: 0,
    rowsRead: entries,
    rowsWritten: entries,
    badRows: 0,
    rejectsPath: null,
    duplicates: { policy: 'error', count: 0, examples: [] },
    outputDir: dir,
    outputFiles: files.map((f) => ({
      path: f.path,
      fileSizeBytes: f.fileSizeBytes,
      entries: f.numPointEntries,
      smallestKey: showKey(f.range.smallest),
      largestKey: showKey(f.range.largest),
      smallestKeyHex: f.range.smallest.toString('hex'),
      largestKeyHex: f.range.largest.toString('hex'),
    })),
    runs: 0,
    runBytes: 0,
    phases: { parseSeconds: 0, mergeSeconds: 0, publishSeconds: 0, totalSeconds: 0 },
    rowsPerSecond: 0,
    inputMiBPerSecond: 0,
    memoryLimitBytes: 0,
    peakRssBytes: 0,
  };
}

/** Where the files being landed are: their directory (kept out of messages) and the run's own scratch directory. */
export interface LandingDirs {
  filesDir: string;
  scratchDir: string;
}

/**
 * What every route that lands uploaded SSTs shares (the multipart upload and the commit of a
 * staged import, stagedFiles.ts): verified files → import summary → runServerImport → the reply
 * (200, or 409 with the conflict report). Returns the status it answered.
 */
export async function landVerifiedUploads(
  ctx: RequestContext,
  request: ImportRequest,
  infos: ExternalFileInfo[],
  dirs: LandingDirs,
  tracked: TrackedImport,
): Promise<number> {
  const summary = uploadSummaryOf(infos, dirs.filesDir);
  summary.valueEncoding = uploadedValueEncoding(ctx);
  const options = dbImportOptionsOf([], { ...request.options, db: ctx.engine.dir }, request.mode);
  const result = await runServerImport(
    ctx,
    {
      ...options,
      prebuilt: summary,
      // Verified on arrival, in a directory nothing else writes.
      verifyChecksums: false,
      import: { ...options.import, tmpDir: dirs.scratchDir },
    },
    tracked,
  ).catch((err: unknown) => {
    throw withoutScratchPath(withoutScratchPath(err, dirs.filesDir), dirs.scratchDir);
  });
  const uploads = summary.outputFiles.map((f) => ({
    name: path.basename(f.path),
    sizeBytes: f.fileSizeBytes,
    entries: f.entries,
    smallestHex: f.smallestKeyHex,
    largestHex: f.largestKeyHex,
  }));
  replyImportResult(ctx, result, { import: undefined, uploads });
  return ctx.res.statusCode;
}

export async function postSstUpload(ctx: RequestContext): Promise<void> {
  const request = importRequestOf(ctx.query, 'upload', ctx.limits);
  await trackImport(ctx, { kind: 'sst', names: [], mode: request.mode }, async (tracked) => {
    const scratch = makeRequestScratchDir(ctx.engine.dir);
    try {
      receivingBody(ctx, tracked);
      const ssts = sstsOf(await receiveUploads(ctx, scratch.dir));
      verifyingUploads(tracked, ssts);
      const infos = await verifyUploads(ssts, scratch.dir);
      checkEntrySizes(infos, ctx.limits);
      await landVerifiedUploads(ctx, request, infos, { filesDir: scratch.dir, scratchDir: scratch.dir }, tracked);
    } finally {
      scratch.release();
    }
  });
}
