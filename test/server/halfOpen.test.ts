/**
 * Half-open sockets do not lock clients out (issue 41, item 3): connections that send part of a
 * request line and then stay silent, never closing their side, get the 408 after the header
 * timeout and lose their socket soon after, so the connection slots come back and a legitimate
 * client is served.
 */
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import { IngestServer } from '../../src/server/server';
import { send, tmpDir } from './helpers';

const SLOTS = 8;
const HEADERS_TIMEOUT_MS = 500;

/** A client that sends half a request line and never closes its side (allowHalfOpen). */
function silentClient(port: number): Promise<{ socket: net.Socket; replies: () => string }> {
  return new Promise((resolve, reject) => {
    let replies = '';
    const socket = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true }, () => {
      socket.write('GET /v1/kv/some');
      resolve({ socket, replies: () => replies });
    });
    socket.on('data', (d: Buffer) => (replies += d.toString()));
    socket.on('error', () => undefined);
    socket.once('error', reject);
  });
}

/** Connections the server holds besides the one asking (GET /v1/stats). */
async function otherConnections(url: string): Promise<number> {
  const reply = await send(url, { path: '/v1/stats' });
  expect(reply.status).toBe(200);
  return (JSON.parse(reply.body.toString()) as { server: { connections: number } }).server.connections - 1;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('silent half-open connections are cut after the header timeout and their slots come back', async () => {
  const dir = tmpDir('half-open-');
  const server = await IngestServer.start({
    dbDir: path.join(dir, 'db'),
    port: 0,
    log: () => undefined,
    // One slot more than the silent clients take: the stats requests' own.
    limits: { maxConnections: SLOTS + 1, headersTimeoutMs: HEADERS_TIMEOUT_MS },
  });
  const port = Number(new URL(server.url).port);
  const clients: Array<{ socket: net.Socket; replies: () => string }> = [];
  try {
    for (let i = 0; i < SLOTS; i++) clients.push(await silentClient(port));
    await until('the silent clients to hold their slots', async () => (await otherConnections(server.url)) >= SLOTS, 5_000);
    // The header timeout answers each with 408, and the socket goes although the client never closes.
    await until('the half-open sockets to go', async () => (await otherConnections(server.url)) === 0, 20_000);
    for (const c of clients) expect(c.replies()).toMatch(/^HTTP\/1\.1 408 /);
    const reply = await send(server.url, { method: 'PUT', path: '/v1/kv/k', body: 'v' });
    expect(reply.status).toBe(204);
  } finally {
    for (const c of clients) c.socket.destroy();
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 40_000);
