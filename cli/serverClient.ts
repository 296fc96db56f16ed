/**
 * The client of the server's API (docs/serve.md), for the CLI's `--server URL` mode: each call
 * is one HTTP/1.1 request over a keep-alive agent, and a server's JSON error comes back as the
 * IngestError it was (same code, same message), so the CLI exits as it would with `--db`.
 *
 * Contract:
 * - keys and values travel as hex (`?hex=1`), so every byte survives whatever the terminal;
 * - a response body is read into memory only up to MAX_RESPONSE_BYTES (a scan is streamed line
 *   by line instead, each line at most MAX_SCAN_LINE_BYTES);
 * - SST uploads stream each file from disk as multipart/form-data with a Content-Length known in
 *   advance (the files are never read whole into memory); staged uploads (PUT
 *   /v1/imports/{id}/files/{name}) stream one file a request, each retried once when the
 *   connection fails (the server takes the same bytes again as a no-op);
 * - a server that cannot be reached is IngestError('UNAVAILABLE') naming the URL (exit 1);
 *   a connection silent for REQUEST_TIMEOUT_MS is 'TIMEOUT' (an upload's is UPLOAD_IDLE_TIMEOUT_MS:
 *   the server may think for as long as its own import limit before answering);
 * - an error body with a code this client does not know keeps its message and gets the code its
 *   status stands for (4xx exits 2, 409 exits 3, the rest 1).
 */
import * as fs from 'fs';
import * as http from 'http';
import * as path from 'path';
import { randomBytes } from 'crypto';
import { ErrorCode, IngestError } from '../src/util/errors';
import { statusOfCode } from '../src/server/httpErrors';
import { DEFAULT_LIMITS } from '../src/server/limits';

export const MAX_RESPONSE_BYTES = 256 * 1024 * 1024;
export const MAX_SCAN_LINE_BYTES = 64 * 1024 * 1024;
/** Silence (no byte either way) after which a request is given up: above the server's own requestTimeoutMs. */
export const REQUEST_TIMEOUT_MS = 120_000;
/**
 * The same for an upload: the server may be silent while it checks and lands the SSTs, up to its
 * importTimeoutMs (it answers 408 then), so the client waits a minute past that before giving up.
 */
export const UPLOAD_IDLE_TIMEOUT_MS = DEFAULT_LIMITS.importTimeoutMs + 60_000;

export interface ClientResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** A staged import as GET /v1/imports lists it. */
export interface StagedImportJson {
  id: string;
  files: Array<{ name: string; sizeBytes: number; sha256: string }>;
  totalBytes: number;
  createdAt: string;
  updatedAt: string;
}

/** A file part of an upload: the name the server sees and where it is here. */
export interface UploadFile {
  name: string;
  path: string;
}

interface RequestSpec {
  method: string;
  pathAndQuery: string;
  body?: Buffer;
  headers?: http.OutgoingHttpHeaders;
  /** Milliseconds, or 0 for none. */
  timeoutMs?: number;
}

/** The code a status stands for when the body names none we know (a proxy's page, a newer server's code). */
function codeOfStatus(status: number): ErrorCode {
  if (status === 401) return 'UNAUTHORIZED';
  if (status === 409) return 'CONFLICT';
  if (status === 413) return 'TOO_LARGE';
  if (status === 429) return 'BUSY';
  if (status === 503) return 'UNAVAILABLE';
  return status >= 400 && status < 500 ? 'BAD_INPUT' : 'IO';
}

function isErrorCode(code: string): code is ErrorCode {
  // statusOfCode's table covers every ErrorCode (it is typed as a Record over them).
  return statusOfCode(code as ErrorCode) !== undefined;
}

/** The server's `{"error": {code, message}}` as the IngestError it was, so exitCodeFor maps it as --db would. */
export function errorOf(status: number, body: Buffer): IngestError {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { error?: { code?: unknown; message?: unknown } };
    const code = parsed.error?.code;
    const message = parsed.error?.message;
    if (typeof message === 'string') {
      return new IngestError(typeof code === 'string' && isErrorCode(code) ? code : codeOfStatus(status), message);
    }
  } catch {
    // Not our JSON: fall through to a plain description.
  }
  return new IngestError(codeOfStatus(status), `the server answered ${status}: ${body.toString('utf8').slice(0, 200)}`);
}

/** Where a scan the server's limit cut goes on: the next request's `from` (forward) or exclusive `to` (reverse). */
export interface ScanContinuation {
  from?: Buffer;
  to?: Buffer;
}

function continuationOf(next: { fromHex?: string; toHex?: string }): ScanContinuation {
  return {
    ...(next.fromHex === undefined ? {} : { from: Buffer.from(next.fromHex, 'hex') }),
    ...(next.toHex === undefined ? {} : { to: Buffer.from(next.toHex, 'hex') }),
  };
}

export class ServerClient {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  private readonly base: URL;

  constructor(
    url: string,
    private readonly token: string | undefined,
  ) {
    try {
      this.base = new URL(url);
    } catch {
      throw new IngestError('USAGE', `--server must be a URL like http://127.0.0.1:7420, got "${url}"`);
    }
    if (this.base.protocol !== 'http:') throw new IngestError('USAGE', `--server: only http:// URLs are served, got "${url}"`);
  }

  get url(): string {
    return this.base.origin;
  }

  close(): void {
    this.agent.destroy();
  }

  /** Starts a request; resolves with the response once its headers are in. */
  private start(spec: RequestSpec, writeBody: (req: http.ClientRequest) => void): Promise<http.IncomingMessage> {
    const headers: http.OutgoingHttpHeaders = { ...spec.headers };
    if (this.token !== undefined) headers.authorization = `Bearer ${this.token}`;
    return new Promise((resolve, reject) => {
      const req = http.request(new URL(spec.pathAndQuery, this.base), { method: spec.method, agent: this.agent, headers }, resolve);
      const timeoutMs = spec.timeoutMs ?? REQUEST_TIMEOUT_MS;
      if (timeoutMs > 0) {
        req.setTimeout(timeoutMs, () =>
          req.destroy(new IngestError('TIMEOUT', `no answer from ${this.url}: the connection was silent for ${timeoutMs} ms`)),
        );
      }
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err instanceof IngestError) reject(err);
        else reject(new IngestError('UNAVAILABLE', `cannot reach the server at ${this.url}: ${err.code ?? err.message}`, { cause: err }));
      });
      writeBody(req);
    });
  }

  /** One request, its whole (bounded) answer. */
  async request(spec: RequestSpec): Promise<ClientResponse> {
    const body = spec.body;
    const headers = body === undefined ? spec.headers : { 'content-length': body.length, ...spec.headers };
    const res = await this.start({ ...spec, headers }, (req) => req.end(body));
    return { status: res.statusCode ?? 0, headers: res.headers, body: await readAll(res, this.url) };
  }

  /** The answer when its status is one of `ok`, else the server's error thrown. */
  async expect(spec: RequestSpec, ok: readonly number[]): Promise<ClientResponse> {
    const r = await this.request(spec);
    if (!ok.includes(r.status)) throw errorOf(r.status, r.body);
    return r;
  }

  // --- the API ------------------------------------------------------------------------------------

  /** The value of `key`, or null when absent. */
  async get(key: Buffer): Promise<Buffer | null> {
    const r = await this.expect({ method: 'GET', pathAndQuery: `/v1/kv/${key.toString('hex')}?hex=1` }, [200, 404]);
    if (r.status === 200) return r.body;
    const absent = errorOf(r.status, r.body);
    if (absent.code === 'NOT_FOUND') return null;
    throw absent;
  }

  /** PUT or DELETE of one key; resolves to the write's sequence number. */
  async write(method: 'PUT' | 'DELETE', key: Buffer, value?: Buffer): Promise<number> {
    const r = await this.expect({ method, pathAndQuery: `/v1/kv/${key.toString('hex')}?hex=1`, body: value }, [204]);
    return Number(r.headers['ingest-sequence']);
  }

  /** An atomic batch of operations (hex keys and values); resolves to its first sequence number. */
  async batch(ops: ReadonlyArray<Record<string, string>>): Promise<number> {
    const body = Buffer.from(JSON.stringify(ops));
    const r = await this.expect(
      { method: 'POST', pathAndQuery: '/v1/batch?hex=1', body, headers: { 'content-type': 'application/json' } },
      [200],
    );
    return (JSON.parse(r.body.toString('utf8')) as { sequence: number }).sequence;
  }

  async stats(): Promise<Record<string, unknown>> {
    const r = await this.expect({ method: 'GET', pathAndQuery: '/v1/stats' }, [200]);
    return JSON.parse(r.body.toString('utf8')) as Record<string, unknown>;
  }

  /**
   * Streams a scan: `visit` gets each entry's key and value and returns false to stop (the
   * connection is then closed), or a promise to wait for (backpressure on the caller's output).
   * Resolves to where the range goes on when the server's limit cut it (its last line,
   * {"next": {"fromHex"|"toHex"}}: the next request's bound), else null (the range is done, or
   * `visit` stopped).
   */
  async scan(query: URLSearchParams, visit: (key: Buffer, value: Buffer) => boolean | Promise<boolean>): Promise<ScanContinuation | null> {
    query.set('hex', '1');
    const res = await this.start({ method: 'GET', pathAndQuery: `/v1/scan?${query.toString()}` }, (req) => req.end());
    if (res.statusCode !== 200) throw errorOf(res.statusCode ?? 0, await readAll(res, this.url));
    let pending = '';
    let next: ScanContinuation | null = null;
    try {
      for await (const chunk of res) {
        pending += (chunk as Buffer).toString('latin1');
        if (pending.length > MAX_SCAN_LINE_BYTES)
          throw new IngestError('IO', `a scan line from ${this.url} is over ${MAX_SCAN_LINE_BYTES} bytes`);
        let nl: number;
        while ((nl = pending.indexOf('\n')) >= 0) {
          const line = JSON.parse(pending.slice(0, nl)) as {
            keyHex: string;
            valueHex: string;
            next?: { fromHex?: string; toHex?: string };
          };
          pending = pending.slice(nl + 1);
          if (line.next !== undefined) next = continuationOf(line.next);
          else if (!(await visit(Buffer.from(line.keyHex, 'hex'), Buffer.from(line.valueHex, 'hex')))) return null;
        }
      }
    } finally {
      res.destroy();
    }
    if (pending.length > 0 || !res.complete) throw new IngestError('IO', `the scan from ${this.url} was cut off before its end`);
    return next;
  }

  /**
   * Uploads files to POST /v1/imports/sst?query as multipart/form-data, streamed from disk.
   * Resolves with the status (200 or 409) and the JSON document; any other status is thrown.
   */
  async uploadSsts(
    files: readonly UploadFile[],
    query: URLSearchParams,
    extraHeaders: Readonly<Record<string, string>> = {},
  ): Promise<{ status: number; document: Record<string, unknown> }> {
    const boundary = `----sst-ingest-${randomBytes(12).toString('hex')}`;
    const heads = files.map((f) =>
      Buffer.from(
        `--${boundary}\r\ncontent-disposition: form-data; name="sst"; filename="${path.basename(f.name)}"\r\ncontent-type: application/octet-stream\r\n\r\n`,
      ),
    );
    const tail = Buffer.from(`--${boundary}--\r\n`);
    const sizes = files.map((f) => fs.statSync(f.path).size);
    const length = heads.reduce((n, h, i) => n + h.length + sizes[i] + 2, tail.length);
    const headers = { ...extraHeaders, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': length };
    const spec = { method: 'POST', pathAndQuery: `/v1/imports/sst?${query.toString()}`, headers, timeoutMs: UPLOAD_IDLE_TIMEOUT_MS };
    const res = await this.start(spec, (req) => void writeParts(req, files, heads, tail));
    const body = await readAll(res, this.url);
    const status = res.statusCode ?? 0;
    if (status !== 200 && status !== 409) throw errorOf(status, body);
    return { status, document: JSON.parse(body.toString('utf8')) as Record<string, unknown> };
  }

  /** PUTs one file into staged import `id`, streamed from disk; once more when the connection fails. */
  async putStagedFile(id: string, file: UploadFile): Promise<void> {
    const once = async (): Promise<void> => {
      const headers = { 'content-type': 'application/octet-stream', 'content-length': fs.statSync(file.path).size };
      const pathAndQuery = `/v1/imports/${encodeURIComponent(id)}/files/${encodeURIComponent(file.name)}`;
      const res = await this.start({ method: 'PUT', pathAndQuery, headers, timeoutMs: UPLOAD_IDLE_TIMEOUT_MS }, (req) =>
        writeFile(req, file.path),
      );
      const body = await readAll(res, this.url);
      if (res.statusCode !== 200 && res.statusCode !== 201) throw errorOf(res.statusCode ?? 0, body);
    };
    try {
      await once();
    } catch (err) {
      if (!(err instanceof IngestError) || err.code !== 'UNAVAILABLE') throw err;
      await once();
    }
  }

  /** POST /v1/imports/{id}/commit?query: the status (200 or 409) and the document; any other status is thrown. */
  async commitStaged(
    id: string,
    query: URLSearchParams,
    extraHeaders: Readonly<Record<string, string>> = {},
  ): Promise<{ status: number; document: Record<string, unknown> }> {
    const spec = {
      method: 'POST',
      pathAndQuery: `/v1/imports/${encodeURIComponent(id)}/commit?${query.toString()}`,
      headers: extraHeaders,
      timeoutMs: UPLOAD_IDLE_TIMEOUT_MS,
    };
    const r = await this.expect(spec, [200, 409]);
    return { status: r.status, document: JSON.parse(r.body.toString('utf8')) as Record<string, unknown> };
  }

  async stagedImports(): Promise<StagedImportJson[]> {
    const r = await this.expect({ method: 'GET', pathAndQuery: '/v1/imports' }, [200]);
    return (JSON.parse(r.body.toString('utf8')) as { imports: StagedImportJson[] }).imports;
  }

  /** DELETE /v1/imports/{id}: true when it was removed, false when the server has no such import. */
  async deleteStaged(id: string): Promise<boolean> {
    const r = await this.expect({ method: 'DELETE', pathAndQuery: `/v1/imports/${encodeURIComponent(id)}` }, [204, 404]);
    return r.status === 204;
  }
}

/** Streams a file as the request's body. */
function writeFile(req: http.ClientRequest, file: string): void {
  const stream = fs.createReadStream(file);
  stream.on('error', (err) => req.destroy(err));
  stream.pipe(req);
}

/** Writes each part's head, the file's bytes (streamed) and CRLF, then the closing boundary. */
async function writeParts(req: http.ClientRequest, files: readonly UploadFile[], heads: readonly Buffer[], tail: Buffer): Promise<void> {
  try {
    for (let i = 0; i < files.length; i++) {
      req.write(heads[i]);
      for await (const chunk of fs.createReadStream(files[i].path)) {
        if (!req.write(chunk as Buffer)) await new Promise((resolve) => req.once('drain', resolve));
      }
      req.write('\r\n');
    }
    req.end(tail);
  } catch (err) {
    req.destroy(err as Error);
  }
}

function readAll(res: http.IncomingMessage, url: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    res.on('data', (c: Buffer) => {
      total += c.length;
      if (total > MAX_RESPONSE_BYTES) res.destroy(new IngestError('IO', `the answer of ${url} is over ${MAX_RESPONSE_BYTES} bytes`));
      else chunks.push(c);
    });
    res.on('end', () => resolve(Buffer.concat(chunks, total)));
    res.on('error', (err) =>
      reject(err instanceof IngestError ? err : new IngestError('IO', `reading the answer of ${url}: ${err.message}`)),
    );
  });
}
