/**
 * inspectExternalFiles (src/engine/ingest/inspectFiles.ts) reports the sizes of a verified file's
 * largest key (range tombstone bounds included) and value, the same inline and from the worker
 * thread (the server's SST uploads check them against its limits); null when not verified.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { inspectExternalFiles, shutdownInspectionWorker } from '../../../src/engine/ingest/inspectFiles';
import { SstFileWriter } from '../../../src/sstwriter/sstFileWriter';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'inspect-sizes-'));
});
afterAll(async () => {
  await shutdownInspectionWorker();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('largest key and value sizes, inline and in the worker; null without verification', async () => {
  const points = path.join(dir, 'points.sst');
  let w = new SstFileWriter(points, { backgroundCompression: false });
  w.put(Buffer.from('a'), Buffer.alloc(3000, 1));
  w.put(Buffer.alloc(5000, 0x62), Buffer.from('v'));
  w.put(Buffer.from('c'), Buffer.alloc(10));
  w.finish();
  const tombstone = path.join(dir, 'tombstone.sst');
  w = new SstFileWriter(tombstone, { backgroundCompression: false });
  w.put(Buffer.from('a'), Buffer.from('1'));
  w.deleteRange(Buffer.from('b'), Buffer.alloc(7000, 0x63));
  w.finish();
  const want = [
    { largestKeyBytes: 5000, largestValueBytes: 3000 },
    { largestKeyBytes: 7000, largestValueBytes: 1 },
  ];
  for (const verifyInWorker of [false, true]) {
    const infos = await inspectExternalFiles([points, tombstone], { verifyChecksums: true, verifyInWorker });
    expect({
      verifyInWorker,
      sizes: infos.map((i) => ({ largestKeyBytes: i.largestKeyBytes, largestValueBytes: i.largestValueBytes })),
    }).toEqual({
      verifyInWorker,
      sizes: want,
    });
  }
  const unverified = await inspectExternalFiles([points], { verifyChecksums: false });
  expect([unverified[0].largestKeyBytes, unverified[0].largestValueBytes]).toEqual([null, null]);
});
