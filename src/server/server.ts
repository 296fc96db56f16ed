/**
 * `ingest serve`: the engine as an HTTP/1.1 service. One process owns the database (its LOCK),
 * serves reads and writes from it, and lands imports into it while it serves (docs/serve.md).
 *
 * Why Node's own http module and not fastify: the API is seven routes with byte keys in the path
 * and bodies that either stream to disk or are small, so a framework's JSON-schema routing and
 * body parsing would be bypassed on nearly every route, while node:http gives direct control of
 * backpressure, of limits before a body is read and of the sockets for a drain, with no
 * dependency. bench/serve.ts measures both stacks' empty routes in the same run: the figures
 * (docs/serve.md) show no throughput to gain from switching.
 *
 * Lifecycle:
 *   start   open the engine (creating the database when missing), or take the caller's open
 *           `engine`; load the staged imports (stagedImports.ts, expiring the stale); listen, write DIR/SERVER (serverRecord.ts), start
 *           the console's history sampler, log "listening" (serverLog.ts; stdout is the CLI's: its one JSON line);
 *   serve   each request: in-flight limit (429), draining (503), route (404/405), token (401),
 *           a time limit (408), the handler; a throw becomes the JSON error (httpErrors.ts);
 *           once answered, its route template, status, duration and bytes go to the metrics
 *           (metrics.ts), the log and the history (requestObserver.ts); imports are registered
 *           in the import registry (importRegistry.ts);
 *   close   log "draining", stop the history sampler, stop accepting, close idle keep-alive connections, let in-flight requests finish (at
 *           most drainTimeoutMs, then cut them off), remove DIR/SERVER, close the engine (it
 *           syncs the WAL and releases the LOCK) unless it is the caller's, which stays open; log "stopped".
 * A write is acknowledged only once it is in the WAL (fdatasynced with --sync), so SIGKILL loses
 * nothing acknowledged: recovery replays the WAL. An import lands in one manifest edit or not at
 * all; its scratch directory is removed by the next open after a kill.
 */
import * as http from 'http';
import { WriteRecovery } from './writeRecovery';
import { RequestMemory, ServerMemoryBudget } from './memoryBudget';
import * as path from 'path';
import { AddressInfo, Socket } from 'net';
import { Engine, EngineOptions } from '../engine/engine';
import { IngestError } from '../util/errors';
import { DEFAULT_HOST, DEFAULT_LIMITS, DEFAULT_PORT, ServerLimits } from './limits';
import { TokenCheck, checkTokenText } from './auth';
import { ImportQueue } from './importQueue';
import { HttpError, RETRY_AFTER_SECONDS, errorReplyOf } from './httpErrors';
import { RequestContext, queryFlag } from './requestContext';
import { Route, matchPath, resolveRoute, routeTable } from './routes';
import { FinishedRequest, WatchedRequest, watchRequest } from './requestObserver';
import { LogLevel, ServerLog } from './serverLog';
import { ServerCounters, statsRoute } from './routes/stats';
import { parseQuery } from './urlBytes';
import { removeServerRecord, writeServerRecord } from './serverRecord';
import { StagedImports } from './stagedImports';
import { ImportRegistry } from './importRegistry';
import { HistorySampler, dataOperationOf } from './historySampler';
import { historyRoute } from './routes/consoleData';
import { ServerMetrics, metricsRoute } from './metrics';

const MAX_QUERY_PARAMETERS = 64;

export interface ServeOptions {
  /** The database to open (created when missing); the server closes it when it stops. Not with `engine`. */
  dbDir?: string;
  /**
   * An engine the caller already has open: served as it is (no second open, so no LOCK clash)
   * and left open when the server stops; the caller closes it after close(). Not with `dbDir`
   * (unless it names the same directory) nor `engineOptions`.
   */
  engine?: Engine;
  host?: string;
  /** 0: any free port (tests). */
  port?: number;
  /** Required unless the host is a loopback address. */
  token?: string;
  /**
   * fdatasync the WAL before acknowledging each write. Default false, or with `engine`, that
   * engine's own default (EngineOptions.sync).
   */
  sync?: boolean;
  limits?: Partial<ServerLimits>;
  /** Options for the engine the server opens at dbDir (`sync` is the option above). */
  engineOptions?: Omit<EngineOptions, 'sync'>;
  /**
   * Every log line (one JSON object, without its newline) to this function instead of stderr
   * (serverLog.ts: requests, imports, start-up and shutdown, 5xx causes).
   */
  log?: (line: string) => void;
  /** The lowest level logged (`--log-level`; default info: every request). */
  logLevel?: LogLevel;
  /** The version the start-up line names (the CLI's package version); default "unknown". */
  version?: string;
  /** How often a database stopped by a full disk is asked to resume (default RECOVERY_POLL_MS; tests go faster). */
  recoveryPollMs?: number;
  /** GET /metrics without the token (`--metrics-public`); default false: it needs the token like /v1. */
  metricsPublic?: boolean;
}

/** The directory to open: ServeOptions without an `engine` must name one. */
function dbDirOf(opts: ServeOptions): string {
  if (opts.dbDir === undefined)
    throw new IngestError('INVALID_ARGUMENT', 'IngestServer.start needs dbDir (a database to open) or engine (an open one)');
  return opts.dbDir;
}

/** A caller's engine goes with no engineOptions (it is open already) and no other dbDir. */
function checkCallersEngine(opts: ServeOptions, engine: Engine): void {
  if (opts.engineOptions !== undefined) {
    throw new IngestError('INVALID_ARGUMENT', 'engineOptions are for an engine the server opens; the engine given is open already');
  }
  if (opts.dbDir !== undefined && path.resolve(opts.dbDir) !== path.resolve(engine.dir)) {
    throw new IngestError('INVALID_ARGUMENT', `dbDir ${opts.dbDir} is not the directory of the engine given (${engine.dir})`);
  }
}

export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * An asynchronous stderr (a pipe) reports a failed write as an 'error' event, which unhandled
 * would end the process: a log line lost must never take the server down.
 */
function ignoreStderrErrors(): void {
  if (process.stderr.listenerCount('error') === 0) process.stderr.on('error', () => undefined);
}

/** How long a refused request's socket stays after its error reply, for the reply to arrive (onClientError). */
const CLIENT_ERROR_LINGER_MS = 1000;

export class IngestServer {
  private readonly http: http.Server;
  private readonly routes: ReturnType<typeof routeTable>;
  private readonly imports: ImportQueue;
  private readonly tokenCheck: TokenCheck | null;
  private readonly sockets = new Set<Socket>();
  /** Per connection, the request being handled: a pipelined request starts once the one before it is done. */
  private readonly lastOnSocket = new WeakMap<Socket, Promise<void>>();
  private readonly inFlight = new Set<Promise<void>>();
  private draining = false;
  private closePromise: Promise<void> | null = null;
  private requests = 0;
  /** Request ids are `<server start, ms base 36>-<n>`: unique per server, ordered. */
  private readonly idPrefix = Date.now().toString(36);
  private errors = 0;
  /** What every request together holds in memory (memoryBudget.ts). */
  readonly memory: ServerMemoryBudget;
  /** Resumes the engine after a full disk (writeRecovery.ts). */
  private readonly recovery: WriteRecovery;
  /** The staged imports (stagedImports.ts): opened by start(), their expiry timer stopped by close(). */
  readonly staging: StagedImports;
  /** Every import run here and the recent ones (importRegistry.ts): the console's, the metrics' and the log's source. */
  readonly importRegistry: ImportRegistry;
  /** The console's charts: a sample a second (historySampler.ts), its timer stopped by close(). */
  readonly history: HistorySampler;
  /** GET /metrics (metrics.ts): a prom-client Registry of this server's own. */
  readonly metrics: ServerMetrics;
  /** The log (serverLog.ts): pino, JSON lines on stderr (pretty on a terminal) or to ServeOptions.log. */
  readonly serverLog: ServerLog;
  /** Each request being handled, for its 5xx cause's log line. */
  private readonly watched = new WeakMap<http.IncomingMessage, WatchedRequest>();
  url = '';

  /** Whether writes are fdatasynced before they are acknowledged (ServeOptions.sync). */
  private readonly syncWrites: boolean;

  private constructor(
    readonly engine: Engine,
    /** The server opened the engine and closes it; false for a caller's `engine`. */
    private readonly ownsEngine: boolean,
    readonly limits: Readonly<ServerLimits>,
    opts: ServeOptions,
  ) {
    this.syncWrites = opts.sync ?? (ownsEngine ? false : engine.syncsWritesByDefault);
    this.imports = new ImportQueue(limits.maxConcurrentImports, limits.maxQueuedImports);
    this.memory = new ServerMemoryBudget(limits.memoryBudgetBytes, limits.memoryWaitMs);
    this.tokenCheck = opts.token === undefined ? null : new TokenCheck(opts.token);
    this.serverLog = new ServerLog({ level: opts.logLevel, sink: opts.log });
    this.staging = new StagedImports(engine.dir, limits, (line) => this.log(line));
    this.importRegistry = new ImportRegistry((e) => this.serverLog.importEvent(e));
    this.history = new HistorySampler(() => engine.stats());
    this.metrics = new ServerMetrics({
      engine,
      blockCache: engine.blockCache,
      imports: this.imports,
      importRegistry: this.importRegistry,
      memory: this.memory,
      connections: () => this.sockets.size,
      inFlightRequests: () => this.inFlight.size,
      logLinesDropped: () => this.serverLog.droppedLines,
    });
    this.routes = routeTable(
      statsRoute(() => this.counters()),
      {
        history: historyRoute(this.history),
        metrics: metricsRoute(this.metrics),
        metricsPublic: opts.metricsPublic === true,
      },
    );
    this.http = http.createServer(
      {
        maxHeaderSize: limits.maxHeaderBytes,
        headersTimeout: limits.headersTimeoutMs,
        // Node enforces the header timeout only when it checks its connections (every 30 s by
        // default): checked at a quarter of the timeout, a silent client is cut within 25% of it.
        connectionsCheckingInterval: Math.max(100, Math.min(30_000, Math.floor(limits.headersTimeoutMs / 4))),
        requestTimeout: limits.importTimeoutMs,
        keepAliveTimeout: limits.keepAliveTimeoutMs,
      },
      (req, res) => this.track(this.handleInOrder(req, res)),
    );
    this.http.maxConnections = limits.maxConnections;
    this.http.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    this.http.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => this.onClientError(err, socket));
    this.recovery = new WriteRecovery(engine, (line) => this.log(line, 'info'), opts.recoveryPollMs);
    this.recovery.start();
    ignoreStderrErrors();
  }

  /**
   * Opens the engine (or takes the caller's) and listens; fails, leaving nothing of its own open,
   * on bad options, a locked database or a port in use.
   */
  static async start(opts: ServeOptions): Promise<IngestServer> {
    const host = opts.host ?? DEFAULT_HOST;
    if (!isLoopbackHost(host) && opts.token === undefined) {
      throw new IngestError('USAGE', `binding ${host} (not a loopback address) needs a token: --token-file F`);
    }
    if (opts.token !== undefined) checkTokenText(opts.token, 'the token');
    const limits = { ...DEFAULT_LIMITS, ...opts.limits };
    const ownsEngine = opts.engine === undefined;
    const engine = opts.engine ?? (await Engine.open(dbDirOf(opts), { ...opts.engineOptions, sync: opts.sync === true }));
    if (!ownsEngine) checkCallersEngine(opts, engine);
    const server = new IngestServer(engine, ownsEngine, limits, opts);
    try {
      server.staging.open();
    } catch (err) {
      await server.recovery.stop();
      if (ownsEngine) await engine.close();
      throw err;
    }
    try {
      await server.listen(host, opts.port ?? DEFAULT_PORT);
    } catch (err) {
      server.staging.close();
      await server.recovery.stop();
      if (ownsEngine) await engine.close();
      const code = (err as NodeJS.ErrnoException).code;
      throw new IngestError('IO', `cannot listen on ${host}:${opts.port ?? DEFAULT_PORT}: ${code ?? (err as Error).message}`, {
        cause: err,
      });
    }
    writeServerRecord(engine.dir, { url: server.url, pid: process.pid });
    server.history.start();
    server.serverLog.listening(server.url, engine.dir, opts.version ?? 'unknown');
    return server;
  }

  private listen(host: string, port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(port, host, () => {
        this.http.off('error', reject);
        const a = this.http.address() as AddressInfo;
        this.url = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
        resolve();
      });
    });
  }

  /** A notice of the server's own on the log; a log that cannot be written (a full disk, a closed pipe) never stops the server. */
  private log(line: string, level: 'info' | 'warn' = 'warn'): void {
    try {
      this.serverLog.notice(level, line);
    } catch {
      // Dropped: serving matters more than the log line.
    }
  }

  private counters(): ServerCounters {
    const m = this.memory;
    return {
      connections: this.sockets.size,
      inFlightRequests: this.inFlight.size,
      requests: this.requests,
      errors: this.errors,
      memory: { budgetBytes: m.limitBytes, heldBytes: m.heldBytes, peakHeldBytes: m.peakHeldBytes, refusals: m.refusals },
    };
  }

  private track(p: Promise<void>): void {
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  /** A request Node's parser refused (bad request line, headers too large, ...): a JSON 400/431, then close. */
  private onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
    this.errors++;
    if (!socket.writable || err.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const code = status === 408 ? 'TIMEOUT' : status === 431 ? 'TOO_LARGE' : 'BAD_INPUT';
    this.serverLog.malformed(status, code);
    // A client that half-closes mid-request (a Content-Length it never sent in full) surfaces here, not in the route.
    const message =
      err.code === 'HPE_INVALID_EOF_STATE'
        ? 'the connection ended before the request was complete (a truncated request or body; nothing of it was applied)'
        : `malformed HTTP request (${err.code ?? err.message})`;
    const body = JSON.stringify({ error: { code, message } });
    socket.end(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
    // end() only half-closes: a client that never closes its side (a slow-loris that sent half a
    // request line) would keep the socket, and its connection slot, for as long as it likes.
    // The reply gets CLIENT_ERROR_LINGER_MS to reach the client, then the socket goes.
    const linger = setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS);
    linger.unref();
    socket.once('close', () => clearTimeout(linger));
  }

  // --- requests ------------------------------------------------------------------------------------

  /**
   * Requests of one connection are applied in the order they came: Node hands over a pipelined
   * request while the one before it still runs (a PUT still reading its body, then a DELETE of
   * the same key, was applied DELETE first), and orders only the responses. Each request starts
   * once the one before it on its socket has been answered; other connections are not held up.
   */
  private handleInOrder(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const socket = req.socket;
    const before = this.lastOnSocket.get(socket);
    const mine = before === undefined ? this.handle(req, res) : before.then(() => this.handle(req, res));
    const settled = mine.catch(() => undefined);
    this.lastOnSocket.set(socket, settled);
    return mine;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.requests++;
    const watched = watchRequest(req, res, `${this.idPrefix}-${this.requests}`, (r) => this.requestDone(r));
    this.watched.set(req, watched);
    let timer: NodeJS.Timeout | null = null;
    let ctx: RequestContext | null = null;
    try {
      if (this.draining) throw new HttpError(503, 'UNAVAILABLE', 'the server is shutting down');
      if (this.inFlight.size > this.limits.maxInFlightRequests) {
        throw new HttpError(429, 'BUSY', `${this.inFlight.size} requests in flight, the most this server takes`);
      }
      // The token before anything of the request is read: an unauthenticated client learns
      // nothing about its query (401, not a 400 describing it).
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const rawPath = q < 0 ? url : url.slice(0, q);
      const match = matchPath(this.routes, rawPath);
      watched.route = match.template ?? watched.route;
      const { route, param } = resolveRoute(this.routes, req.method ?? 'GET', match);
      if (!route.public && this.tokenCheck !== null) this.tokenCheck.check(req);
      ctx = this.contextOf(req, res, route, param, q < 0 ? '' : url.slice(q + 1), watched.id);
      timer = this.deadline(ctx, route.isImport ? this.limits.importTimeoutMs : this.limits.requestTimeoutMs);
      await route.handler(ctx);
    } catch (err) {
      this.replyError(req, res, err);
    } finally {
      if (timer !== null) clearTimeout(timer);
      ctx?.memory.releaseAll();
    }
  }

  /** A request answered (or cut off): the history, the metrics and the log hear of it. */
  private requestDone(r: FinishedRequest): void {
    const operation = dataOperationOf(r.route, r.method);
    if (operation !== null) this.history.observe(operation, r.durationMs);
    this.metrics.observeRequest(r);
    this.serverLog.request(r);
  }

  private contextOf(
    req: http.IncomingMessage,
    res: http.ServerResponse,
    route: Route,
    param: RequestContext['param'],
    rawQuery: string,
    requestId: string,
  ): RequestContext & { route: Route } {
    const query = parseQuery(rawQuery, MAX_QUERY_PARAMETERS);
    return {
      requestId,
      req,
      res,
      route,
      param,
      query,
      hex: queryFlag(query, 'hex'),
      engine: this.engine,
      limits: this.limits,
      imports: this.imports,
      staging: this.staging,
      importRegistry: this.importRegistry,
      syncWrites: this.syncWrites,
      memory: new RequestMemory(this.memory),
    };
  }

  /** After `ms`, a 408 if nothing was sent yet, else the connection is cut (the client sees a truncated reply). */
  private deadline(ctx: RequestContext, ms: number): NodeJS.Timeout {
    const timer = setTimeout(() => {
      if (ctx.res.writableEnded) return;
      if (!ctx.res.headersSent) this.replyError(ctx.req, ctx.res, new HttpError(408, 'TIMEOUT', `the request took over ${ms} ms`));
      ctx.req.destroy();
    }, ms);
    timer.unref();
    return timer;
  }

  private replyError(req: http.IncomingMessage, res: http.ServerResponse, err: unknown): void {
    this.errors++;
    const reply = errorReplyOf(err);
    if (reply.status >= 500) {
      const watched = this.watched.get(req);
      this.serverLog.requestFailed(watched?.id ?? '', watched?.route ?? '', reply.status, reply.code, err);
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const body = JSON.stringify({ error: { code: reply.code, message: reply.message } });
    const headers: Record<string, string | number> = {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      ...reply.headers,
    };
    const retryAfter = RETRY_AFTER_SECONDS[reply.status];
    if (retryAfter !== undefined) headers['retry-after'] = retryAfter;
    // A body not read to its end cannot be skipped safely on a kept-alive connection: close it.
    if (!req.complete || this.draining) headers.connection = 'close';
    res.writeHead(reply.status, headers);
    res.end(body);
  }

  // --- shutdown ------------------------------------------------------------------------------------

  /** Drains and stops (idempotent): see the module comment. `reason` goes on the log's draining line (the signal). */
  close(reason?: string): Promise<void> {
    if (this.closePromise === null) this.closePromise = this.closeOnce(reason);
    return this.closePromise;
  }

  private async closeOnce(reason: string | undefined): Promise<void> {
    this.draining = true;
    this.serverLog.draining(reason, this.inFlight.size);
    this.history.stop();
    const closed = new Promise<void>((resolve) => this.http.close(() => resolve()));
    this.http.closeIdleConnections();
    const drained = await this.waitForInFlight(this.limits.drainTimeoutMs);
    if (!drained) this.log(`drain: ${this.inFlight.size} request(s) still running after ${this.limits.drainTimeoutMs} ms; cut off`);
    this.http.closeAllConnections();
    for (const s of this.sockets) s.destroy();
    await closed;
    // Cut-off requests unwind (their imports clean up) before the engine goes.
    await this.waitForInFlight(this.limits.drainTimeoutMs);
    await this.recovery.stop();
    this.staging.close();
    // The record goes while the LOCK is still ours, so it never names a server that is gone.
    removeServerRecord(this.engine.dir);
    if (this.ownsEngine) await this.engine.close();
    this.serverLog.stopped();
  }

  /** True when every in-flight request finished within `ms`. */
  private async waitForInFlight(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | null = null;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    try {
      while (this.inFlight.size > 0) {
        const done = await Promise.race([Promise.allSettled([...this.inFlight]).then(() => true), timeout]);
        if (!done) return false;
      }
      return true;
    } finally {
      if (timer !== null) clearTimeout(timer);
    }
  }
}
