/**
 * The log writer's buffering of unsynced records: when they reach the file, and that synced
 * writers and sync() still make records durable before returning.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { LogReader } from '../../../src/engine/wal/logReader';
import { LogWriter, WRITE_BUFFER_BYTES } from '../../../src/engine/wal/logWriter';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'logwriter-buffer-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

function payload(n: number, tag: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (i * 13 + tag) & 0xff;
  return b;
}

function records(file: string): Buffer[] {
  const out: Buffer[] = [];
  LogReader.forEachRecord(file, (r) => out.push(Buffer.from(r)));
  return out;
}

const endOfTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('unsynced log records', () => {
  test('wait in memory until the end of the event-loop turn, then read back in order', async () => {
    const file = path.join(dir, 'a.log');
    const w = LogWriter.create(file);
    const written = [payload(100, 1), payload(0, 2), payload(5000, 3)];
    const offsets = written.map((r) => w.addRecord(r));
    expect(fs.statSync(file).size).toBe(0);
    expect(w.sizeBytes).toBeGreaterThan(5100);
    await endOfTurn();
    expect(fs.statSync(file).size).toBe(w.sizeBytes);
    expect(records(file)).toEqual(written);
    expect(offsets[0]).toBe(0);
    w.close();
  });

  test('go out at once when a synchronous run of writes fills the buffer', () => {
    const file = path.join(dir, 'b.log');
    const w = LogWriter.create(file);
    const written: Buffer[] = [];
    for (let i = 0; fs.statSync(file).size === 0; i++) {
      expect(i * 1000).toBeLessThan(2 * WRITE_BUFFER_BYTES);
      written.push(payload(1000, i));
      w.addRecord(written[i]);
    }
    // Everything but the record that overflowed the buffer is in the file.
    expect(records(file)).toEqual(written.slice(0, -1));
    w.close();
    expect(records(file)).toEqual(written);
  });

  test('records at least as big as the buffer are written directly, after the buffered ones', () => {
    const file = path.join(dir, 'c.log');
    const w = LogWriter.create(file);
    const written = [payload(10, 1), payload(WRITE_BUFFER_BYTES + 10, 2)];
    for (const r of written) w.addRecord(r);
    expect(records(file)).toEqual(written);
    w.close();
  });

  test('sync() writes and fdatasyncs the buffered records; a sync writer writes each record', () => {
    const file = path.join(dir, 'd.log');
    const w = LogWriter.create(file);
    w.addRecord(payload(10, 1));
    w.sync();
    expect(w.syncCount).toBe(1);
    expect(records(file)).toEqual([payload(10, 1)]);
    w.close();

    const syncFile = path.join(dir, 'e.log');
    const s = LogWriter.create(syncFile, { sync: true });
    s.addRecord(payload(20, 2));
    expect(records(syncFile)).toEqual([payload(20, 2)]);
    expect(s.syncCount).toBe(1);
    s.close();
  });
});
