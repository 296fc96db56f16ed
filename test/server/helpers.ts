/**
 * What the server tests share: an HTTP client that returns status, headers and the whole body
 * (keep-alive through an http.Agent when given one), a raw TCP exchange for requests no client
 * library sends (truncated bodies, garbage), the JSON error body's shape, a full scan of the
 * database through GET /v1/scan (hex), the server as a child process (`ingest serve --port 0`,
 * the URL read from its one JSON line), small CSV and SST builders.
 */
import * as fs from 'fs';
import * as http from 'http';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { ChildProcess, spawn } from 'child_process';
import { SstFileWriter } from '../../src/sstwriter/sstFileWriter';
import { REPO_ROOT } from '../support/paths';

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

export interface RequestSpec {
  method?: string;
  /** Path and query, sent as given (already percent-encoded). */
  path: string;
  headers?: http.OutgoingHttpHeaders;
  body?: Buffer | string;
  /** Bearer token. */
  token?: string;
  /** Keep-alive agent; default: a fresh connection. */
  agent?: http.Agent;
}

export function tmpDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** One request; resolves once the whole response is read. Errors after the response arrived (EPIPE of an unread body) are ignored. */
export function send(baseUrl: string, spec: RequestSpec): Promise<Reply> {
  const u = new URL(baseUrl);
  const headers: http.OutgoingHttpHeaders = { ...spec.headers };
  if (spec.token !== undefined) headers.authorization = `Bearer ${spec.token}`;
  return new Promise((resolve, reject) => {
    let responded = false;
    const req = http.request(
      { host: u.hostname, port: Number(u.port), method: spec.method ?? 'GET', path: spec.path, headers, agent: spec.agent ?? false },
      (res) => {
        responded = true;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
        res.on('aborted', () => reject(new Error(`${spec.method ?? 'GET'} ${spec.path.slice(0, 80)}: response aborted`)));
      },
    );
    req.on('error', (err) => {
      if (!responded) reject(err);
    });
    req.end(spec.body);
  });
}

export interface ErrorBody {
  code: string;
  message: string;
}

/** The `{"error": {"code", "message"}}` of a reply; fails the test when the body is not that. */
export function errorOf(reply: Reply): ErrorBody {
  expect(reply.headers['content-type']).toBe('application/json');
  const doc = JSON.parse(reply.body.toString('utf8')) as { error?: { code?: unknown; message?: unknown } };
  expect(typeof doc.error?.code).toBe('string');
  expect(typeof doc.error?.message).toBe('string');
  return { code: String(doc.error?.code), message: String(doc.error?.message) };
}

/** Expects an error reply with this status and code and a message matching `message`. */
export function expectError(reply: Reply, status: number, code: string, message: RegExp | string): ErrorBody {
  if (reply.status !== status)
    throw new Error(`expected ${status} ${code}, got ${reply.status}: ${reply.body.toString('utf8').slice(0, 400)}`);
  const err = errorOf(reply);
  expect({ status: reply.status, code: err.code }).toEqual({ status, code });
  if (typeof message === 'string') expect(err.message).toContain(message);
  else expect(err.message).toMatch(message);
  return err;
}

/** Parses the first HTTP response in `raw` (latin1 text of the bytes received). */
export function parseRawResponse(raw: Buffer): Reply | null {
  const text = raw.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = text.slice(0, end).split('\r\n');
  const m = /^HTTP\/1\.1 (\d{3}) /.exec(lines[0]);
  if (m === null) return null;
  const headers: http.IncomingHttpHeaders = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? '0');
  return { status: Number(m[1]), headers, body: raw.subarray(end + 4, end + 4 + length) };
}

/**
 * Writes `data` on a new TCP connection, half-closes it when `endAfter` (a truncated request:
 * the client went away), and resolves with the first response once the server closes (at most
 * `timeoutMs`; null when nothing parseable came back).
 */
export function rawExchange(baseUrl: string, data: Buffer | string, endAfter: boolean, timeoutMs = 5000): Promise<Reply | null> {
  const u = new URL(baseUrl);
  return new Promise((resolve) => {
    const socket = net.connect(Number(u.port), u.hostname);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseRawResponse(Buffer.concat(chunks)));
    });
    socket.write(data, () => {
      if (endAfter) socket.end();
    });
  });
}

export interface ScanEntry {
  keyHex: string;
  valueHex: string;
}

/** Every entry of the database, in key order, through GET /v1/scan?hex=1 (NDJSON). */
export async function scanAll(
  baseUrl: string,
  opts: { token?: string; agent?: http.Agent; query?: string; limit?: number } = {},
): Promise<ScanEntry[]> {
  const reply = await send(baseUrl, {
    path: `/v1/scan?hex=1&limit=${opts.limit ?? 1_000_000}${opts.query ?? ''}`,
    token: opts.token,
    agent: opts.agent,
  });
  expect(reply.status).toBe(200);
  expect(reply.headers['content-type']).toBe('application/x-ndjson');
  const text = reply.body.toString('utf8');
  if (text === '') return [];
  expect(text.endsWith('\n')).toBe(true);
  const lines = text
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as ScanEntry & { next?: unknown });
  // A continuation line means the limit cut the scan: not every entry.
  if (lines[lines.length - 1].next !== undefined)
    throw new Error(`scanAll: the scan stopped at its limit: ${JSON.stringify(lines[lines.length - 1])}`);
  return lines;
}

/** Scan entries as key text → value text (keys and values the tests write are UTF-8). */
export function entriesAsMap(entries: readonly ScanEntry[]): Map<string, string> {
  return new Map(entries.map((e) => [Buffer.from(e.keyHex, 'hex').toString('utf8'), Buffer.from(e.valueHex, 'hex').toString('utf8')]));
}

/** A CSV body of `key,value` rows. */
export function csvOf(rows: ReadonlyArray<readonly [string, string]>): string {
  return rows.map(([k, v]) => `${k},${v}\n`).join('');
}

/** Writes one of our own SSTs with these entries (sorted by the caller). */
export function writeSst(file: string, entries: ReadonlyArray<readonly [string, string]>): Buffer {
  const w = new SstFileWriter(file, { backgroundCompression: false });
  for (const [k, v] of entries) w.put(Buffer.from(k), Buffer.from(v));
  w.finish();
  return fs.readFileSync(file);
}

/** A multipart/form-data body of file parts (field `sst`), and its Content-Type. */
export function multipartOf(files: ReadonlyArray<{ name: string; data: Buffer }>): { body: Buffer; contentType: string } {
  const boundary = `----ingest-test-${files.length}-${files.reduce((n, f) => n + f.data.length, 0)}`;
  const parts: Buffer[] = [];
  for (const f of files) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="sst"; filename="${f.name}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      ),
      f.data,
      Buffer.from('\r\n'),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

export interface ChildServer {
  url: string;
  pid: number;
  child: ChildProcess;
  /** Everything the child wrote on stderr so far. */
  stderr: () => string;
  /** Resolves with the exit code and signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `ingest serve --db DIR --port 0 ...` in a child process; resolves once it printed its JSON line. */
export function startChildServer(dbDir: string, extraArgs: readonly string[] = [], stderrFd?: number): Promise<ChildServer> {
  const child = spawn(
    process.execPath,
    [
      '--require',
      path.join(REPO_ROOT, 'test/support/swc-register.js'),
      path.join(REPO_ROOT, 'cli/ingest.ts'),
      'serve',
      '--db',
      dbDir,
      '--port',
      '0',
      ...extraArgs,
    ],
    // A file descriptor for stderr (a log file on a full disk, say), else a pipe read here.
    { stdio: ['ignore', 'pipe', stderrFd ?? 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer): void => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl < 0) return;
      child.stdout?.off('data', onData);
      const line = JSON.parse(out.slice(0, nl)) as { url: string; pid: number; db: string };
      resolve({ url: line.url, pid: line.pid, child, stderr: () => stderr, exited });
    };
    child.stdout?.on('data', onData);
    void exited.then(({ code, signal }) => reject(new Error(`ingest serve exited (${code ?? signal}) before listening: ${stderr}`)));
  });
}
