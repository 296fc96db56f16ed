/**
 * What the server records of each request it answers, once the response is done (or cut off):
 * the metrics (metrics.ts), the request log line (serverLog.ts) and the console's history
 * (historySampler.ts) read it.
 *
 * Contract: watchRequest is called when the server starts handling a request; `done` is called
 * exactly once (its throw is swallowed: recording never fails a request), when the response closes (finished, or its connection gone: `aborted`). `route`
 * is the route template (routes.ts matchPath), set once the path is resolved; a path no
 * route has stays UNMATCHED_ROUTE: never the raw path, which holds keys and is unbounded.
 * bytesIn and bytesOut are the connection's bytes (request line, headers and body; status line,
 * headers and body) read and written since the connection's previous request ended: exact for a
 * client that waits for each answer, and for pipelined requests each one counts what the
 * connection read while it was handled. The per-socket marks live in a WeakMap: nothing is held
 * for a closed connection.
 */
import type { IncomingMessage, ServerResponse } from 'http';
import type { Socket } from 'net';

export const UNMATCHED_ROUTE = 'unmatched';

export interface FinishedRequest {
  id: string;
  method: string;
  route: string;
  status: number;
  durationMs: number;
  bytesIn: number;
  bytesOut: number;
  /** The response did not finish (the client went away, or the server cut the connection). */
  aborted: boolean;
}

export interface WatchedRequest {
  readonly id: string;
  route: string;
}

/** Each connection's byte counts when its last request ended. */
const marks = new WeakMap<Socket, { read: number; written: number }>();

export function watchRequest(req: IncomingMessage, res: ServerResponse, id: string, done: (r: FinishedRequest) => void): WatchedRequest {
  const startNs = process.hrtime.bigint();
  const watched: WatchedRequest = { id, route: UNMATCHED_ROUTE };
  // Taken now: Node detaches the socket from the request and response once they are done.
  const socket: Socket | null = req.socket;
  res.once('close', () => {
    try {
      observe();
    } catch {
      // What is recorded of a request (metrics, log, history) never takes the server down.
    }
  });
  const observe = (): void => {
    const mark = (socket === null ? undefined : marks.get(socket)) ?? { read: 0, written: 0 };
    const read = socket?.bytesRead ?? mark.read;
    const written = socket?.bytesWritten ?? mark.written;
    if (socket !== null) marks.set(socket, { read, written });
    done({
      id,
      method: req.method ?? 'GET',
      route: watched.route,
      status: res.statusCode,
      durationMs: Number(process.hrtime.bigint() - startNs) / 1e6,
      bytesIn: Math.max(0, read - mark.read),
      bytesOut: Math.max(0, written - mark.written),
      aborted: !res.writableFinished,
    });
  };
  return watched;
}
