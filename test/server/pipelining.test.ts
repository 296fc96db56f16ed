/**
 * Pipelined requests on one keep-alive connection are applied in the order they were sent
 * (issue 41, item 2): a PUT followed at once by a DELETE of the same key leaves the key deleted,
 * with increasing sequence numbers, and a PUT followed by a GET reads the new value.
 */
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import { IngestServer } from '../../src/server/server';
import { tmpDir } from './helpers';

const TRIES = 20;

/** Sends `raw` on one connection and resolves with everything the server answered once `responses` are complete. */
function pipelined(port: number, raw: string, responses: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = net.connect({ host: '127.0.0.1', port }, () => socket.write(raw));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no ${responses} responses in time: ${text}`));
    }, 10_000);
    socket.on('data', (d: Buffer) => {
      text += d.toString();
      if ((text.match(/^HTTP\/1\.1 /gm) ?? []).length >= responses && /\r\n\r\n[^]*$/.test(text)) {
        const last = text.lastIndexOf('HTTP/1.1 ');
        const head = text.slice(last);
        const length = /content-length: (\d+)/i.exec(head);
        const bodyStart = head.indexOf('\r\n\r\n') + 4;
        if (bodyStart >= 4 && head.length - bodyStart >= Number(length?.[1] ?? 0)) {
          clearTimeout(timer);
          socket.destroy();
          resolve(text);
        }
      }
    });
    socket.on('error', reject);
  });
}

function statuses(text: string): number[] {
  return [...text.matchAll(/^HTTP\/1\.1 (\d+)/gm)].map((m) => Number(m[1]));
}

test('a pipelined PUT then DELETE of one key is applied in that order, every time', async () => {
  const dir = tmpDir('pipelining-');
  const server = await IngestServer.start({ dbDir: path.join(dir, 'db'), port: 0, log: () => undefined });
  const port = Number(new URL(server.url).port);
  try {
    for (let i = 0; i < TRIES; i++) {
      const key = `k${i}`;
      const text = await pipelined(
        port,
        `PUT /v1/kv/${key} HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nv${i % 10}` + `DELETE /v1/kv/${key} HTTP/1.1\r\nHost: t\r\n\r\n`,
        2,
      );
      expect(statuses(text)).toEqual([204, 204]);
      const sequences = [...text.matchAll(/^ingest-sequence: (\d+)/gim)].map((m) => Number(m[1]));
      expect(sequences).toHaveLength(2);
      expect(sequences[1]).toBeGreaterThan(sequences[0]);
      expect(server.engine.get(Buffer.from(key))).toBeNull();
    }
    // And a PUT then a GET reads what the PUT wrote.
    await server.engine.put(Buffer.from('g'), Buffer.from('old'));
    const text = await pipelined(
      port,
      'PUT /v1/kv/g HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nnew' + 'GET /v1/kv/g HTTP/1.1\r\nHost: t\r\n\r\n',
      2,
    );
    expect(statuses(text)).toEqual([204, 200]);
    expect(text.endsWith('\r\n\r\nnew')).toBe(true);
  } finally {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
