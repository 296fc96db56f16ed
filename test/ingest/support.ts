/** Helpers for the ingest tests: in-memory byte sources. */
import { ByteSource } from '../../src/ingest/csv/inputSource';

/** A ByteSource over a Buffer that hands out at most `maxRead` bytes per read (to split records). */
export function memorySource(data: Buffer, maxRead = 1 << 30, name = 'memory'): ByteSource {
  let pos = 0;
  return {
    name,
    totalBytes: data.length,
    async read(buf: Buffer, offset: number, length: number): Promise<number> {
      const n = Math.min(length, maxRead, data.length - pos);
      data.copy(buf, offset, pos, pos + n);
      pos += n;
      return n;
    },
    consumedBytes: () => pos,
    async close() {},
  };
}

import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { TableReader } from '../../src/sstable/reader/tableReader';
import { userKeyOf } from '../../src/base/internalKey';

export interface Entry {
  key: Buffer;
  value: Buffer;
}

/** Every entry of the SSTs in `dir` (final names, in name order), checking files do not overlap. */
export function readOutputSsts(dir: string): { entries: Entry[]; files: string[] } {
  const files = fs
    .readdirSync(dir)
    .filter((f) => /^[0-9]{6}\.sst$/.test(f))
    .sort();
  const entries: Entry[] = [];
  for (const f of files) {
    const reader = TableReader.open(path.join(dir, f));
    const it = reader.newIterator();
    try {
      let firstInFile = true;
      for (it.first(); it.valid(); it.next()) {
        const key = Buffer.from(userKeyOf(it.key()));
        if (entries.length > 0) {
          const c = Buffer.compare(entries[entries.length - 1].key, key);
          if (c >= 0)
            throw new Error(`${f}: key ${key.toString('hex')} not above the previous key${firstInFile ? ' (files overlap)' : ''}`);
        }
        firstInFile = false;
        entries.push({ key, value: Buffer.from(it.value()) });
      }
    } finally {
      it.close();
      reader.close();
    }
  }
  return { entries, files };
}

/** Directories made by tempDir in this test file, removed when its tests are done. */
const tempDirs: string[] = [];
afterAll(() => {
  for (const d of tempDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A fresh directory under the system temp directory, removed after the test file's last test. */
export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}
