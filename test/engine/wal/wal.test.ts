import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { LogWriter } from '../../../src/engine/wal/logWriter';
import { LogReader } from '../../../src/engine/wal/logReader';
import { LOG_BLOCK_SIZE_BYTES, LOG_HEADER_BYTES } from '../../../src/engine/wal/logFormat';
import { WriteBatch, WriteBatchVisitor, batchHeader } from '../../../src/engine/writeBatch';
import { CorruptionError, IngestError } from '../../../src/util/errors';
import { mulberry32 } from '../../../src/util/random';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-wal-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

const rng = mulberry32;

function payload(n: number, tag: number): Buffer {
  const b = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + tag * 7) & 0xff;
  return b;
}

function writeLog(file: string, records: Buffer[]): number[] {
  const w = LogWriter.create(file);
  const offsets = records.map((r) => w.addRecord(r));
  w.close();
  return offsets;
}

function readAll(file: string): { records: Buffer[]; offsets: number[]; reader: LogReader } {
  const records: Buffer[] = [];
  const offsets: number[] = [];
  const reader = LogReader.forEachRecord(file, (r, off) => {
    records.push(Buffer.from(r));
    offsets.push(off);
  });
  return { records, offsets, reader };
}

describe('log writer and reader', () => {
  test('round-trips records of every shape: empty, block-filling, padded, multi-block', () => {
    const room = LOG_BLOCK_SIZE_BYTES - LOG_HEADER_BYTES;
    const sizes = [0, 1, 100, room, room - 3, 5, room - LOG_HEADER_BYTES - 2, 0, 3 * LOG_BLOCK_SIZE_BYTES + 17, 2, 200_000, 0];
    const records = sizes.map((n, i) => payload(n, i));
    const file = path.join(dir, 'a.log');
    const offsets = writeLog(file, records);
    const got = readAll(file);
    expect(got.records.length).toBe(records.length);
    got.records.forEach((r, i) => expect(r.equals(records[i])).toBe(true));
    expect(got.offsets).toEqual(offsets);
    expect(got.reader.droppedTail).toBeNull();
    // No header straddles a block boundary.
    for (const off of offsets) expect(LOG_BLOCK_SIZE_BYTES - (off % LOG_BLOCK_SIZE_BYTES)).toBeGreaterThanOrEqual(LOG_HEADER_BYTES);
  });

  test('round-trips 2000 random records', () => {
    const r = rng(7);
    const records: Buffer[] = [];
    for (let i = 0; i < 2000; i++) records.push(payload(Math.floor(r() ** 3 * 70_000), i));
    const file = path.join(dir, 'b.log');
    writeLog(file, records);
    const got = readAll(file);
    expect(got.records.length).toBe(records.length);
    got.records.forEach((rec, i) => expect(rec.equals(records[i])).toBe(true));
  });

  test('a file truncated anywhere inside its last record loses only that record', () => {
    const records = [payload(10, 1), payload(40_000, 2), payload(30, 3), payload(70_000, 4)];
    const file = path.join(dir, 'c.log');
    const offsets = writeLog(file, records);
    const full = fs.readFileSync(file);
    const lastStart = offsets[3];
    const cuts = [lastStart + 1, lastStart + 6, lastStart + 7, lastStart + 100, lastStart + LOG_BLOCK_SIZE_BYTES, full.length - 1];
    for (const cut of cuts) {
      fs.writeFileSync(file, full.subarray(0, cut));
      const got = readAll(file);
      expect(got.records.length).toBe(3);
      got.records.forEach((rec, i) => expect(rec.equals(records[i])).toBe(true));
      expect(got.reader.droppedTail?.offset).toBe(lastStart);
    }
  });

  test('a checksum failure in the last record with nothing after it is a dropped tail', () => {
    const records = [payload(100, 1), payload(50, 2)];
    const file = path.join(dir, 'd.log');
    const offsets = writeLog(file, records);
    const buf = fs.readFileSync(file);
    buf[offsets[1] + LOG_HEADER_BYTES + 10] ^= 0x40;
    fs.writeFileSync(file, buf);
    const got = readAll(file);
    expect(got.records.length).toBe(1);
    expect(got.reader.droppedTail).toMatchObject({ offset: offsets[1], reason: 'checksum mismatch' });
  });

  test('zero-filled space after the last record (preallocation) is dropped, not an error', () => {
    const file = path.join(dir, 'e.log');
    writeLog(file, [payload(100, 1)]);
    fs.appendFileSync(file, Buffer.alloc(2 * LOG_BLOCK_SIZE_BYTES + 100));
    const got = readAll(file);
    expect(got.records.length).toBe(1);
    expect(got.reader.droppedTail).not.toBeNull();
  });

  test('a corrupt record with intact records after it is a CorruptionError naming file and offset', () => {
    const records = [payload(100, 1), payload(200, 2), payload(300, 3)];
    const file = path.join(dir, 'f.log');
    const offsets = writeLog(file, records);
    const buf = fs.readFileSync(file);
    buf[offsets[1] + LOG_HEADER_BYTES + 5] ^= 1;
    fs.writeFileSync(file, buf);
    let err: unknown;
    try {
      readAll(file);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CorruptionError);
    expect((err as CorruptionError).file).toBe(file);
    expect((err as CorruptionError).offset).toBe(offsets[1]);
    expect((err as Error).message).toContain(file);
  });

  test('damage in a middle fragment of a multi-block record is found via the next block', () => {
    const records = [payload(100_000, 1), payload(10, 2)];
    const file = path.join(dir, 'g.log');
    const offsets = writeLog(file, records);
    const buf = fs.readFileSync(file);
    // The second block starts with a MIDDLE fragment of record 0; corrupt its header's length.
    buf[LOG_BLOCK_SIZE_BYTES + 5] ^= 0xff;
    fs.writeFileSync(file, buf);
    expect(() => readAll(file)).toThrow(CorruptionError);
    try {
      readAll(file);
    } catch (e) {
      expect((e as CorruptionError).offset).toBe(offsets[0]);
    }
  });

  test('a bad length field in a middle record cannot hide the records after it', () => {
    const records: Buffer[] = [];
    for (let i = 0; i < 20; i++) records.push(payload(5000, i));
    const file = path.join(dir, 'h.log');
    const offsets = writeLog(file, records);
    const buf = fs.readFileSync(file);
    buf.writeUInt16LE(60_000, offsets[2] + 4);
    fs.writeFileSync(file, buf);
    expect(() => readAll(file)).toThrow(/corruption in .*h\.log at offset/);
  });

  test('sync option fdatasyncs every record; without it none', () => {
    const w1 = LogWriter.create(path.join(dir, 's1.log'), { sync: true });
    w1.addRecord(payload(10, 1));
    w1.addRecord(payload(100_000, 2));
    expect(w1.syncCount).toBe(2);
    w1.close();
    const w2 = LogWriter.create(path.join(dir, 's2.log'));
    w2.addRecord(payload(10, 1));
    expect(w2.syncCount).toBe(0);
    w2.sync();
    expect(w2.syncCount).toBe(1);
    w2.close();
  });

  test('create refuses to overwrite an existing log', () => {
    const file = path.join(dir, 'x.log');
    writeLog(file, [payload(1, 1)]);
    expect(() => LogWriter.create(file)).toThrow(IngestError);
  });
});

describe('write batch', () => {
  interface Rec {
    op: string;
    a: string;
    b?: string;
    seq: number;
  }
  const collect = (): { visitor: WriteBatchVisitor; out: Rec[] } => {
    const out: Rec[] = [];
    return {
      out,
      visitor: {
        put: (k, v, seq) => out.push({ op: 'put', a: k.toString(), b: v.toString(), seq }),
        delete: (k, seq) => out.push({ op: 'del', a: k.toString(), seq }),
        deleteRange: (s, e, seq) => out.push({ op: 'range', a: s.toString(), b: e.toString(), seq }),
      },
    };
  };

  test('records get consecutive sequence numbers from the base, and survive encode/decode', () => {
    const b = new WriteBatch();
    b.put(Buffer.from('k1'), Buffer.from('v1')).delete(Buffer.from('k2')).deleteRange(Buffer.from('a'), Buffer.from('c'));
    b.put(Buffer.from('k1'), Buffer.from('v2'));
    expect(b.count).toBe(4);
    b.setSequence(2 ** 40 + 5);
    const decoded = WriteBatch.decode(b.encoded());
    expect(decoded.sequence).toBe(2 ** 40 + 5);
    expect(batchHeader(b.encoded(), { file: 'x', offset: 0 })).toEqual({ sequence: 2 ** 40 + 5, count: 4 });
    const { visitor, out } = collect();
    decoded.forEach(visitor);
    const s = 2 ** 40 + 5;
    expect(out).toEqual([
      { op: 'put', a: 'k1', b: 'v1', seq: s },
      { op: 'del', a: 'k2', seq: s + 1 },
      { op: 'range', a: 'a', b: 'c', seq: s + 2 },
      { op: 'put', a: 'k1', b: 'v2', seq: s + 3 },
    ]);
  });

  test('deleteRange: empty range is a no-op, inverted range is INVALID_ARGUMENT', () => {
    const b = new WriteBatch();
    b.deleteRange(Buffer.from('b'), Buffer.from('b'));
    expect(b.count).toBe(0);
    expect(() => b.deleteRange(Buffer.from('c'), Buffer.from('b'))).toThrow(/start key is after end key/);
  });

  test('damaged encodings are CorruptionErrors naming their source', () => {
    const b = new WriteBatch();
    b.put(Buffer.from('key'), Buffer.from('value'));
    b.delete(Buffer.from('gone'));
    const enc = Buffer.from(b.encoded());
    const src = { file: '000007.log', offset: 1234 };
    expect(() => WriteBatch.decode(enc.subarray(0, enc.length - 1), src)).toThrow(/000007\.log at offset 1234/);
    const badCount = Buffer.from(enc);
    badCount.writeUInt32LE(3, 8);
    expect(() => WriteBatch.decode(badCount, src)).toThrow(/header says 3 records but the batch holds 2/);
    const badType = Buffer.from(enc);
    badType[12] = 0x42;
    expect(() => WriteBatch.decode(badType, src)).toThrow(/unknown record type 0x42/);
    expect(() => WriteBatch.decode(enc.subarray(0, 5), src)).toThrow(CorruptionError);
  });

  test('clear() resets to an empty batch that can be reused', () => {
    const b = new WriteBatch();
    b.put(Buffer.from('a'), Buffer.from('1'));
    b.setSequence(9);
    b.clear();
    expect(b.count).toBe(0);
    expect(b.byteSize).toBe(12);
    expect(b.sequence).toBe(0);
    b.put(Buffer.from('z'), Buffer.alloc(10_000, 1));
    const { visitor, out } = collect();
    WriteBatch.decode(b.encoded()).forEach(visitor);
    expect(out.length).toBe(1);
    expect(out[0].b?.length).toBe(10_000);
  });
});
