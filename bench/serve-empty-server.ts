/**
 * An HTTP server with one empty route, for bench/serve.ts: the stack's own limit, without the
 * engine. `node dist/bench/serve-empty-server.js node|fastify` listens on 127.0.0.1 (any port),
 * prints {"url"} once listening, answers every GET with {"status":"ok"} and exits on SIGTERM.
 * Both variants send the same bytes, so their throughput compares the stacks alone.
 */
import * as http from 'http';
import { AddressInfo } from 'net';
import Fastify from 'fastify';

const BODY = JSON.stringify({ status: 'ok' });

async function startNode(): Promise<string> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY) });
    res.end(BODY);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function startFastify(): Promise<string> {
  const app = Fastify({ logger: false });
  app.get('/*', async (_req, reply) => {
    reply.header('content-type', 'application/json');
    return BODY;
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
  return url;
}

async function main(): Promise<void> {
  const kind = process.argv[2];
  if (kind !== 'node' && kind !== 'fastify') throw new Error('usage: serve-empty-server node|fastify');
  const url = kind === 'node' ? await startNode() : await startFastify();
  process.stdout.write(`${JSON.stringify({ url })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
