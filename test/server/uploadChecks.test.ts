/**
 * POST /v1/imports/sst refusals that must name the upload, not the server (issue 41):
 * - an SST the conflict check cannot take (a point deletion, a range deletion: the check handles
 *   put-only SSTs) is a 422 whose message holds no path of the server's (its database directory,
 *   the request's scratch directory inside it), and nothing is ingested;
 * - a key over ServerLimits.maxKeyBytes (or a value over maxValueBytes) in an uploaded SST is a
 *   413 TOO_LARGE naming the upload and the size, as PUT /v1/kv refuses them, and nothing is
 *   ingested.
 */
import * as fs from 'fs';
import * as path from 'path';
import { IngestServer } from '../../src/server/server';
import { ServerLimits } from '../../src/server/limits';
import { SstFileWriter } from '../../src/sstwriter/sstFileWriter';
import { expectError, multipartOf, scanAll, send, tmpDir, writeSst } from './helpers';

let root: string;
beforeAll(() => {
  root = tmpDir('server-upload-checks-');
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

async function withServer(name: string, limits: Partial<ServerLimits>, fn: (s: IngestServer) => Promise<void>): Promise<void> {
  const server = await IngestServer.start({ dbDir: path.join(root, name), port: 0, limits, log: () => undefined });
  try {
    await fn(server);
  } finally {
    await server.close();
  }
}

/** An SST that `build` fills (keys in order), as bytes. */
function sstWith(file: string, build: (w: SstFileWriter) => void): Buffer {
  const w = new SstFileWriter(file, { backgroundCompression: false });
  build(w);
  w.finish();
  return fs.readFileSync(file);
}

function upload(url: string, name: string, body: Buffer): ReturnType<typeof send> {
  return send(url, { method: 'POST', path: `/v1/imports/sst?name=${name}`, headers: { 'content-type': 'application/octet-stream' }, body });
}

test('an SST the conflict check cannot take is a 422 naming the upload and no server path; nothing is ingested', async () => {
  await withServer('deletes', {}, async (s) => {
    const files = path.join(root, 'delete-files');
    fs.mkdirSync(files);
    expect((await send(s.url, { method: 'PUT', path: '/v1/kv/k1', body: 'kept' })).status).toBe(204);
    const before = await scanAll(s.url);
    const cases: Array<[string, Buffer]> = [
      [
        'point-delete.sst',
        sstWith(path.join(files, 'a.sst'), (w) => {
          w.put(Buffer.from('k0'), Buffer.from('v'));
          w.delete(Buffer.from('k1'));
        }),
      ],
      [
        'range-delete.sst',
        sstWith(path.join(files, 'b.sst'), (w) => {
          w.put(Buffer.from('k5'), Buffer.from('v'));
          w.deleteRange(Buffer.from('k0'), Buffer.from('k2'));
        }),
      ],
    ];
    for (const [name, body] of cases) {
      for (const mode of ['import', 'check', 'plan']) {
        const reply = await send(s.url, {
          method: 'POST',
          path: `/v1/imports/sst?name=${name}&mode=${mode}`,
          headers: { 'content-type': 'application/octet-stream' },
          body,
        });
        const err = expectError(reply, 422, 'NOT_SUPPORTED', `${name}: the conflict check reads put-only SSTs`);
        expect({ name, mode, message: err.message }).toEqual({ name, mode, message: expect.not.stringContaining(root) });
        expect(err.message).not.toContain(s.engine.dir);
        expect(err.message).not.toContain('.import-tmp');
      }
    }
    // A multipart upload with the file beside a good one: the same, naming the part.
    const both = multipartOf([
      { name: 'good.sst', data: writeSst(path.join(files, 'g.sst'), [['g1', 'x']]) },
      { name: 'point-delete.sst', data: cases[0][1] },
    ]);
    const multi = await send(s.url, {
      method: 'POST',
      path: '/v1/imports/sst',
      headers: { 'content-type': both.contentType },
      body: both.body,
    });
    const err = expectError(multi, 422, 'NOT_SUPPORTED', 'point-delete.sst');
    expect(err.message).not.toContain(s.engine.dir);
    expect(await scanAll(s.url)).toEqual(before);
  });
});

test('an uploaded SST with a key over maxKeyBytes or a value over maxValueBytes is a 413 naming the upload and the size; nothing is ingested', async () => {
  const maxKeyBytes = 8 * 1024;
  const maxValueBytes = 64 * 1024;
  await withServer('sizes', { maxKeyBytes, maxValueBytes }, async (s) => {
    const files = path.join(root, 'size-files');
    fs.mkdirSync(files);
    const bigKey = Buffer.alloc(1024 * 1024, 0x6b); // 1 MiB of 'k', between two small keys
    const longKey = sstWith(path.join(files, 'a.sst'), (w) => {
      w.put(Buffer.from('a'), Buffer.from('1'));
      w.put(bigKey, Buffer.from('2'));
      w.put(Buffer.from('z'), Buffer.from('3'));
    });
    const longValue = sstWith(path.join(files, 'b.sst'), (w) => {
      w.put(Buffer.from('a'), Buffer.from('1'));
      w.put(Buffer.from('m'), Buffer.alloc(maxValueBytes + 1, 0x76));
      w.put(Buffer.from('z'), Buffer.from('3'));
    });
    const longTombstone = sstWith(path.join(files, 'c.sst'), (w) => {
      w.put(Buffer.from('a'), Buffer.from('1'));
      w.deleteRange(Buffer.from('b'), Buffer.concat([Buffer.from('c'), Buffer.alloc(maxKeyBytes)]));
    });
    const atLimit = sstWith(path.join(files, 'd.sst'), (w) => {
      w.put(Buffer.alloc(maxKeyBytes, 0x61), Buffer.alloc(maxValueBytes, 0x76));
    });
    const before = await scanAll(s.url);
    expectError(
      await upload(s.url, 'long-key.sst', longKey),
      413,
      'TOO_LARGE',
      `upload long-key.sst holds a key of ${bigKey.length} bytes, over the limit of ${maxKeyBytes}`,
    );
    expectError(
      await upload(s.url, 'long-value.sst', longValue),
      413,
      'TOO_LARGE',
      `upload long-value.sst holds a value of ${maxValueBytes + 1} bytes, over the limit of ${maxValueBytes}`,
    );
    expectError(
      await upload(s.url, 'long-tombstone.sst', longTombstone),
      413,
      'TOO_LARGE',
      `upload long-tombstone.sst holds a key of ${maxKeyBytes + 1} bytes, over the limit of ${maxKeyBytes}`,
    );
    const mp = multipartOf([
      { name: 'fine.sst', data: atLimit },
      { name: 'long-key.sst', data: longKey },
    ]);
    const multi = await send(s.url, {
      method: 'POST',
      path: '/v1/imports/sst',
      headers: { 'content-type': mp.contentType },
      body: mp.body,
    });
    expectError(multi, 413, 'TOO_LARGE', 'upload long-key.sst holds a key of');
    expect(await scanAll(s.url)).toEqual(before);
    // At the limits it lands.
    expect((await upload(s.url, 'fine.sst', atLimit)).status).toBe(200);
    expect((await send(s.url, { path: `/v1/kv/${'a'.repeat(maxKeyBytes)}` })).body.length).toBe(maxValueBytes);
  });
});
