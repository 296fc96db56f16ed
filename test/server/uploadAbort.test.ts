/**
 * An aborted multipart SST upload releases its descriptors and its partial files at once (issue
 * 41, item 5): a client that sends half of an upload and then disconnects (a Ctrl-C during
 * `ingest import --server`) leaves no open file behind, so the server's descriptors return to
 * where they were, and no scratch directory stays in the database.
 */
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import { IngestServer } from '../../src/server/server';
import { multipartOf, tmpDir } from './helpers';

const ABORTS = 20;

function openDescriptors(): number {
  return fs.readdirSync('/proc/self/fd').length;
}

/** Sends the headers and the first half of a multipart body, waits until the server has read some, then disconnects. */
function abortedUpload(port: number, body: Buffer, contentType: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.write(`POST /v1/imports/sst HTTP/1.1\r\nHost: t\r\nContent-Type: ${contentType}\r\nContent-Length: ${body.length}\r\n\r\n`);
      socket.write(body.subarray(0, body.length >> 1));
      setTimeout(() => {
        socket.destroy();
        resolve();
      }, 100);
    });
    socket.on('error', reject);
  });
}

async function until(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test(`${ABORTS} aborted multipart uploads leave no descriptor and no file behind`, async () => {
  const dir = tmpDir('upload-abort-');
  const server = await IngestServer.start({ dbDir: path.join(dir, 'db'), port: 0, log: () => undefined });
  const port = Number(new URL(server.url).port);
  try {
    const { body, contentType } = multipartOf([
      { name: 'a.sst', data: Buffer.alloc(2 << 20, 7) },
      { name: 'b.sst', data: Buffer.alloc(2 << 20, 9) },
    ]);
    const before = openDescriptors();
    for (let i = 0; i < ABORTS; i++) await abortedUpload(port, body, contentType);
    const scratch = (): string[] => fs.readdirSync(path.join(dir, 'db')).filter((f) => f.startsWith('.import-tmp'));
    await until('the aborted uploads to be cleaned up', () => openDescriptors() <= before + 2 && scratch().length === 0, 10_000);
    expect(scratch()).toEqual([]);
    expect(openDescriptors()).toBeLessThanOrEqual(before + 2);
  } finally {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
