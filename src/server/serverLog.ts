/**
 * The server's log, through pino: one JSON object per line on stderr (or to ServeOptions.log),
 * human-readable (pino-pretty) when stderr is a terminal. Why pino: it is the logger Node HTTP
 * services use (fastify's own), writes JSON lines with little work per line, takes levels and
 * child fields, and its writer (sonic-boom) batches lines into few writes under load, off the
 * request's path. docs/serve.md "Logs" lists the lines and their fields.
 *
 * Lines (every one has "level" (label), "time" (epoch ms), "pid", "msg"):
 *   request         info   {"id", "method", "route" (the template, never the path), "status",
 *                          "durationMs", "bytesIn", "bytesOut", "aborted"?}: one per request
 *   request failed  error  {"id", "route", "status", "code", "err": {message, stack}}: a 5xx's cause
 *   import accepted info   {"importId", "requestId", "kind", "name", "mode"}
 *   import phase    info   {"importId", "phase"}
 *   import landed | import conflicts | import checked | import planned  info  {"importId",
 *                          "outcome", "counts", "rows", "bytes", "durationMs"}
 *   import failed   warn (4xx cause) or error  {"importId", "outcome", "error": {"code", "message"}, ...}
 *   malformed request  info  {"status", "code"}: a request Node's parser refused (no route, no id)
 *   listening       info   {"url", "db", "version"}; draining (info, {"reason"?, "inFlight"}),
 *                          stopped (info); and the server's own notices (staged imports expired,
 *                          disk space back, a drain cut off) at warn or info.
 * Never logged: the token (no header is logged), keys (routes are templates), values and bodies.
 * Error messages are the ones the client is answered with, cut to MESSAGE_MAX_CHARS.
 *
 * Writing: to stderr asynchronously (sonic-boom), its buffer bounded by BUFFER_MAX_BYTES (lines
 * past it are dropped, never held without bound, never blocking a request); a failed write (a
 * full disk, a closed pipe) is dropped and never stops the server. To ServeOptions.log: each line
 * (without its newline) handed to the function, synchronously; a function that throws loses the
 * line only.
 */
import pino, { Logger } from 'pino';
import type { DestinationStream, Level, LevelWithSilent } from 'pino';
import type { FinishedRequest } from './requestObserver';
import type { ImportEvent } from './importRegistry';
import { roundTo3Decimals } from '../util/rounding';

/**
 * pino's levels, spelled out here so that pino's types stay out of the package's declarations
 * (they need esModuleInterop in a library user's compiler options); the check below keeps the
 * two the same.
 */
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
type SameLevels<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
const levelsMatchPino: SameLevels<LogLevel, LevelWithSilent> = true;
void levelsMatchPino;
export const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
export const DEFAULT_LOG_LEVEL: LogLevel = 'info';

/** The most stderr bytes waiting to be written; past it lines are dropped (a stalled reader must not grow the heap). */
const BUFFER_MAX_BYTES = 16 * 1024 * 1024;
/** Error messages in the log are cut here (they may quote input). */
const MESSAGE_MAX_CHARS = 500;

export interface ServerLogOptions {
  level?: LogLevel;
  /** Every line to this function (tests, a library caller's own log), instead of stderr. */
  sink?: (line: string) => void;
}

/** The level name, or a USAGE error naming the choices (`ingest serve --log-level`). */
export function parseLogLevel(text: string): LogLevel | null {
  return LOG_LEVELS.find((l) => l === text) ?? null;
}

function sinkDestination(sink: (line: string) => void): DestinationStream {
  return {
    write(line: string): void {
      try {
        sink(line.endsWith('\n') ? line.slice(0, -1) : line);
      } catch {
        // The caller's log failed: the line is lost, the server goes on.
      }
    },
  };
}

/**
 * stderr: pretty on a terminal (pino-pretty, loaded only then), JSON lines otherwise. `onDrop`
 * hears of the lines dropped when stderr falls more than BUFFER_MAX_BYTES behind.
 */
function stderrDestination(onDrop: (lines: number) => void): { stream: DestinationStream; flush: () => void; pretty: boolean } {
  if (process.stderr.isTTY === true) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const pretty = require('pino-pretty') as typeof import('pino-pretty');
    const stream = pretty({
      destination: 2,
      sync: true,
      colorize: true,
      singleLine: true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
    });
    return { stream, flush: () => undefined, pretty: true };
  }
  const boom = pino.destination({ dest: 2, sync: false, maxLength: BUFFER_MAX_BYTES });
  // A failed write (ENOSPC, EPIPE) is dropped: sonic-boom retries the buffer with the next line.
  boom.on('error', () => undefined);
  boom.on('drop', (data: unknown) => onDrop(typeof data === 'string' ? linesIn(data) : 1));
  return {
    stream: boom,
    flush: () => {
      try {
        boom.flushSync();
      } catch {
        // Nothing more can be written: the lines are lost, the server stops as it would.
      }
    },
    pretty: false,
  };
}

/** Lines in a dropped chunk of JSON lines (each ends with a newline). */
function linesIn(text: string): number {
  let lines = 0;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) lines++;
  return Math.max(1, lines);
}

function shortMessage(message: string): string {
  return message.length <= MESSAGE_MAX_CHARS ? message : `${message.slice(0, MESSAGE_MAX_CHARS)}...`;
}

export class ServerLog {
  private readonly logger: Logger;
  private readonly flushStream: () => void;
  /** Lines stderr did not take in time (its buffer is bounded): GET /metrics' ingest_log_lines_dropped_total. */
  droppedLines = 0;

  constructor(opts: ServerLogOptions = {}) {
    const destination =
      opts.sink !== undefined
        ? { stream: sinkDestination(opts.sink), flush: () => undefined, pretty: false }
        : stderrDestination((lines) => (this.droppedLines += lines));
    this.flushStream = destination.flush;
    this.logger = pino(
      {
        level: opts.level ?? DEFAULT_LOG_LEVEL,
        base: { pid: process.pid },
        // Level names in JSON ("level":"info"): what an operator greps for; pino-pretty reads the numbers.
        formatters: destination.pretty ? {} : { level: (label) => ({ level: label }) },
      },
      destination.stream,
    );
  }

  /** One line per answered request (requestObserver.ts). */
  request(r: FinishedRequest): void {
    if (!this.logger.isLevelEnabled('info')) return;
    const fields = {
      id: r.id,
      method: r.method,
      route: r.route,
      status: r.status,
      durationMs: roundTo3Decimals(r.durationMs),
      bytesIn: r.bytesIn,
      bytesOut: r.bytesOut,
    };
    this.logger.info(r.aborted ? { ...fields, aborted: true } : fields, 'request');
  }

  /** A 5xx answer's cause, with its stack (the client gets only the message, or none for a bug). */
  requestFailed(id: string, route: string, status: number, code: string, err: unknown): void {
    const error = err instanceof Error ? { message: shortMessage(err.message), stack: err.stack } : { message: shortMessage(String(err)) };
    this.logger.error({ id, route, status, code, err: error }, 'request failed');
  }

  /** A request Node's HTTP parser refused before it had a route (bad request line, headers too large). */
  malformed(status: number, code: string): void {
    this.logger.info({ status, code }, 'malformed request');
  }

  /** An import's lifecycle event (importRegistry.ts). */
  importEvent(e: ImportEvent): void {
    switch (e.event) {
      case 'accepted':
        this.logger.info({ importId: e.id, requestId: e.requestId, kind: e.kind, name: e.name, mode: e.mode }, 'import accepted');
        return;
      case 'phase':
        this.logger.info({ importId: e.id, phase: e.phase }, 'import phase');
        return;
      case 'finished': {
        const fields = { importId: e.id, outcome: e.outcome, counts: e.counts, rows: e.rows, bytes: e.bytes, durationMs: e.durationMs };
        if (e.error === null) {
          this.logger.info(fields, `import ${e.outcome}`);
          return;
        }
        const error = { code: e.error.code, message: shortMessage(e.error.message) };
        const level: Level = (e.status ?? 500) >= 500 ? 'error' : 'warn';
        this.logger[level]({ ...fields, error }, 'import failed');
        return;
      }
    }
  }

  listening(url: string, db: string, version: string): void {
    this.logger.info({ url, db, version }, 'listening');
  }

  draining(reason: string | undefined, inFlight: number): void {
    this.logger.info({ reason, inFlight }, 'draining');
  }

  stopped(): void {
    this.logger.info('stopped');
    this.flushStream();
  }

  /** The server's own notices (staged imports expired, disk space back, a drain cut off). */
  notice(level: 'info' | 'warn', message: string): void {
    this.logger[level](message);
  }
}
