/**
 * The server's memory budget (issue 41, item 5): bodies held in memory by every request together
 * are charged against one limit; stalled bodies cannot add up past it: a request that finds no
 * room waits briefly, then gets 503 with Retry-After, while requests that fit (and reads) go on;
 * the memory comes back when the stalled requests go.
 */
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import { IngestServer } from '../../src/server/server';
import { ServerMemoryBudget } from '../../src/server/memoryBudget';
import { send, tmpDir } from './helpers';

const MiB = 1 << 20;

describe('ServerMemoryBudget', () => {
  test('reserves while there is room, queues first come first served, refuses after the wait, releases', async () => {
    const b = new ServerMemoryBudget(10, 50);
    expect(b.tryReserve(6)).toBe(true);
    await expect(b.reserve(20, 'huge')).rejects.toMatchObject({ status: 503, code: 'UNAVAILABLE' });
    const waiting = b.reserve(5, 'second');
    // A smaller request does not jump the queue.
    expect(b.tryReserve(1)).toBe(false);
    b.release(6);
    await waiting;
    expect(b.heldBytes).toBe(5);
    const refused = b.reserve(8, 'third');
    await expect(refused).rejects.toThrow(/memory budget .* has no room/);
    expect(b.refusals).toBe(2);
    expect(b.peakHeldBytes).toBe(6);
  });
});

/** A PUT whose headers promise `bytes` and whose body stalls after 1 KiB; resolves with what the server answered, if anything. */
function stalledPut(url: string, key: string, bytes: number): { socket: net.Socket; answer: Promise<string> } {
  const u = new URL(url);
  const socket = net.connect(Number(u.port), u.hostname);
  socket.write(`PUT /v1/kv/${key} HTTP/1.1\r\nHost: x\r\nContent-Length: ${bytes}\r\n\r\n`);
  socket.write(Buffer.alloc(1024, 0x61));
  let text = '';
  const answer = new Promise<string>((resolve) => {
    socket.on('data', (d: Buffer) => (text += d.toString()));
    socket.on('close', () => resolve(text));
    socket.on('error', () => resolve(text));
  });
  return { socket, answer };
}

async function heldBytes(url: string): Promise<number> {
  return (JSON.parse((await send(url, { path: '/v1/stats' })).body.toString()) as { server: { memory: { heldBytes: number } } }).server
    .memory.heldBytes;
}

async function waitUntil(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

test('stalled bodies fill the budget: the next body gets 503 with Retry-After, small requests and reads go on, memory comes back', async () => {
  const root = tmpDir('server-memory-');
  const server = await IngestServer.start({
    dbDir: path.join(root, 'db'),
    port: 0,
    log: () => undefined,
    limits: { memoryBudgetBytes: 8 * MiB, memoryWaitMs: 200 },
  });
  const stalled: Array<{ socket: net.Socket; answer: Promise<string> }> = [];
  try {
    expect((await send(server.url, { method: 'PUT', path: '/v1/kv/a', body: 'first' })).status).toBe(204);
    for (let i = 0; i < 2; i++) stalled.push(stalledPut(server.url, `big${i}`, 3 * MiB));
    await waitUntil('6 MiB held', async () => (await heldBytes(server.url)) >= 6 * MiB);
    // A third stalled body does not fit: refused after the wait, with Retry-After, before its body is read.
    const third = stalledPut(server.url, 'big2', 3 * MiB);
    stalled.push(third);
    const answer = await third.answer;
    expect(answer).toMatch(/^HTTP\/1\.1 503/);
    expect(answer).toMatch(/retry-after: 1/i);
    expect(answer).toContain("the server's memory budget (8.0 MiB) has no room");
    // What fits goes on, and reads need no budget.
    expect((await send(server.url, { method: 'PUT', path: '/v1/kv/b', body: 'small' })).status).toBe(204);
    expect((await send(server.url, { path: '/v1/kv/a' })).body.toString()).toBe('first');
    // A chunked batch larger than the room left is refused mid-body.
    const chunked = await send(server.url, {
      method: 'POST',
      path: '/v1/batch',
      headers: { 'transfer-encoding': 'chunked' },
      body: JSON.stringify([{ op: 'put', key: 'c', value: 'x'.repeat(3 * MiB) }]),
    });
    expect(chunked.status).toBe(503);
    // The stalled clients go: their memory comes back, and a large body fits again.
    for (const s of stalled) s.socket.destroy();
    await waitUntil('memory released', async () => (await heldBytes(server.url)) === 0);
    expect((await send(server.url, { method: 'PUT', path: '/v1/kv/big', body: 'y'.repeat(3 * MiB) })).status).toBe(204);
    const stats = JSON.parse((await send(server.url, { path: '/v1/stats' })).body.toString()) as {
      server: { memory: { budgetBytes: number; peakHeldBytes: number; refusals: number } };
    };
    expect(stats.server.memory).toMatchObject({ budgetBytes: 8 * MiB, refusals: 2 });
    expect(stats.server.memory.peakHeldBytes).toBeLessThanOrEqual(8 * MiB);
  } finally {
    for (const s of stalled) s.socket.destroy();
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}, 30_000);
