/**
 * Write batches: a group of puts, deletes and range deletes applied atomically, and their
 * encoding, which is what one write-ahead-log record holds.
 *
 * Encoding (RocksDB's WriteBatch layout for the default column family):
 *
 *   u64le base sequence ‖ u32le count ‖ record*count
 *   record := u8 ValueType.Value        ‖ varint32 len ‖ key   ‖ varint32 len ‖ value
 *           | u8 ValueType.Deletion     ‖ varint32 len ‖ key
 *           | u8 ValueType.RangeDeletion‖ varint32 len ‖ start ‖ varint32 len ‖ end
 *
 * Contract: the engine stamps a batch with a base sequence number when it commits it; record i
 * gets sequence base + i, so a batch consumes `count` consecutive sequence numbers and a reader
 * at any snapshot sees either all of a batch or none of it. A decoded batch is validated record
 * by record (lengths inside the buffer, known types, count matches, no trailing bytes); damage is
 * a CorruptionError naming where the batch came from. Keys and values are strings (UTF-8) or
 * bytes (bytesInput.ts).
 */
import { ByteSink, decoded, readVarint32 } from '../util/coding';
import { assertionFailed, CorruptionError, IngestError } from '../util/errors';
import { MAX_ASSIGNABLE_SEQUENCE, ValueType } from '../base/internalKey';
import { MAX_LOGICAL_RECORD_BYTES } from './wal/logFormat';
import { BytesInput, toBytes } from './bytesInput';

export const WRITE_BATCH_HEADER_BYTES = 12;
/** A batch must fit one log record. */
export const MAX_WRITE_BATCH_BYTES = MAX_LOGICAL_RECORD_BYTES;

/** Receives a batch's records in order, with views into the batch buffer and their sequence. */
export interface WriteBatchVisitor {
  put(key: Buffer, value: Buffer, seq: number): void;
  delete(key: Buffer, seq: number): void;
  deleteRange(start: Buffer, end: Buffer, seq: number): void;
}

export interface BatchSource {
  /** File and offset the batch was read from, for error messages. */
  file: string;
  offset: number;
}

const TWO_POW_32 = 2 ** 32;

export class WriteBatch {
  private readonly rep: ByteSink;
  private recordCount = 0;

  constructor(initialCapacityBytes = 256) {
    this.rep = new ByteSink(Math.max(WRITE_BATCH_HEADER_BYTES, initialCapacityBytes), MAX_WRITE_BATCH_BYTES);
    this.clear();
  }

  /** Adopts an encoded batch (copied), validating its structure. */
  static decode(data: Uint8Array, source: BatchSource = { file: '<write batch>', offset: 0 }): WriteBatch {
    const batch = new WriteBatch(data.length);
    batch.rep.clear();
    batch.rep.putBytes(data);
    batch.recordCount = validate(batch.rep.view(), source);
    return batch;
  }

  put(key: BytesInput, value: BytesInput): this {
    this.rep.putByte(ValueType.Value);
    this.putSlice(key);
    this.putSlice(value);
    this.bumpCount();
    return this;
  }

  delete(key: BytesInput): this {
    this.rep.putByte(ValueType.Deletion);
    this.putSlice(key);
    this.bumpCount();
    return this;
  }

  /**
   * Deletes every key in [start, end). An empty range (start == end) deletes nothing and is not
   * recorded; start > end is a caller bug reported as INVALID_ARGUMENT.
   */
  deleteRange(startInput: BytesInput, endInput: BytesInput): this {
    const start = toBytes(startInput);
    const end = toBytes(endInput);
    const c = Buffer.compare(start, end);
    if (c > 0) throw new IngestError('INVALID_ARGUMENT', 'deleteRange: start key is after end key');
    if (c === 0) return this;
    this.rep.putByte(ValueType.RangeDeletion);
    this.putSlice(start);
    this.putSlice(end);
    this.bumpCount();
    return this;
  }

  get count(): number {
    return this.recordCount;
  }

  get byteSize(): number {
    return this.rep.length;
  }

  get sequence(): number {
    const b = this.rep.buf;
    return b.readUInt32LE(4) * TWO_POW_32 + b.readUInt32LE(0);
  }

  /** Stamps the batch's base sequence; the last record gets `seq + count - 1`. */
  setSequence(seq: number): void {
    if (!(Number.isSafeInteger(seq) && seq >= 0)) assertionFailed(`sequence ${seq} must be a safe non-negative integer`);
    if (seq + this.recordCount - 1 > MAX_ASSIGNABLE_SEQUENCE) assertionFailed(`sequence ${seq} + ${this.recordCount} overflows`);
    this.rep.buf.writeUInt32LE(seq % TWO_POW_32, 0);
    this.rep.buf.writeUInt32LE(Math.floor(seq / TWO_POW_32), 4);
  }

  /** The encoding, as a view valid until the batch is next changed. */
  encoded(): Buffer {
    return this.rep.view();
  }

  clear(): void {
    this.rep.clear();
    this.rep.reserve(WRITE_BATCH_HEADER_BYTES);
    this.rep.buf.fill(0, 0, WRITE_BATCH_HEADER_BYTES);
    this.rep.length = WRITE_BATCH_HEADER_BYTES;
    this.recordCount = 0;
  }

  /** Visits the records in order with their sequence numbers (base + index). */
  forEach(visitor: WriteBatchVisitor): void {
    iterateRecords(this.rep.view(), this.sequence, visitor, { file: '<write batch>', offset: 0 });
  }

  private putSlice(input: BytesInput): void {
    const s = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
    this.rep.putVarint32(s.length);
    this.rep.putBytes(s);
  }

  private bumpCount(): void {
    this.recordCount++;
    this.rep.buf.writeUInt32LE(this.recordCount, 8);
  }
}

/** RocksDB's kTypeLogData: an application blob in the WAL, outside the batch's count. */
const WAL_LOG_DATA = 0x03;
/** RocksDB WAL record types this engine refuses, by what they are (db/dbformat.h). */
const UNSUPPORTED_WAL_RECORDS: ReadonlyMap<number, string> = new Map([
  [0x02, 'merge operand'],
  [0x04, 'column family (non-default) deletion'],
  [0x05, 'column family (non-default) put'],
  [0x06, 'column family (non-default) merge'],
  [0x08, 'column family (non-default) single deletion'],
  [0x09, 'transaction prepare (2PC)'],
  [0x0a, 'transaction prepare (2PC)'],
  [0x0b, 'transaction commit (2PC)'],
  [0x0c, 'transaction rollback (2PC)'],
  [0x0d, 'transaction no-op (2PC)'],
  [0x0e, 'column family (non-default) range deletion'],
  [0x10, 'column family (non-default) blob index'],
  [0x11, 'blob index (blob files)'],
  [0x12, 'transaction prepare (2PC)'],
  [0x13, 'transaction prepare (2PC)'],
  [0x14, 'deletion with user-defined timestamp'],
  [0x15, 'transaction commit with timestamp (2PC)'],
  [0x16, 'wide-column entity'],
  [0x17, 'column family (non-default) wide-column entity'],
]);

/** Base sequence and count of an encoded batch without decoding it. */
export function batchHeader(data: Uint8Array, source: BatchSource): { sequence: number; count: number } {
  if (data.length < WRITE_BATCH_HEADER_BYTES) {
    throw new CorruptionError(source.file, source.offset, `write batch of ${data.length} bytes is shorter than its header`);
  }
  const b = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return { sequence: b.readUInt32LE(4) * TWO_POW_32 + b.readUInt32LE(0), count: b.readUInt32LE(8) };
}

/**
 * Visits the records of an encoded batch (views into `data`), validating as it goes. Throws a
 * CorruptionError naming `source` on any structural damage.
 */
export function iterateRecords(data: Buffer, baseSeq: number, visitor: WriteBatchVisitor | null, source: BatchSource): number {
  const { count } = batchHeader(data, source);
  let pos = WRITE_BATCH_HEADER_BYTES;
  let seen = 0;
  const fail = (reason: string): never => {
    throw new CorruptionError(source.file, source.offset, `write batch record ${seen}: ${reason}`);
  };
  const slice = (): Buffer => {
    let len: number;
    try {
      len = readVarint32(data, pos);
    } catch (err) {
      return fail((err as Error).message);
    }
    pos = decoded.offset;
    if (pos + len > data.length) fail(`length ${len} runs past the batch end`);
    const s = data.subarray(pos, pos + len);
    pos += len;
    return s;
  };
  while (pos < data.length) {
    const type = data[pos++];
    const seq = baseSeq + seen;
    switch (type) {
      case ValueType.Value: {
        const key = slice();
        const value = slice();
        if (visitor !== null) visitor.put(key, value, seq);
        break;
      }
      case ValueType.Deletion: {
        const key = slice();
        if (visitor !== null) visitor.delete(key, seq);
        break;
      }
      case ValueType.RangeDeletion: {
        const start = slice();
        const end = slice();
        if (Buffer.compare(start, end) >= 0) fail('range deletion with start >= end');
        if (visitor !== null) visitor.deleteRange(start, end, seq);
        break;
      }
      case ValueType.SingleDeletion: {
        // RocksDB's SingleDelete: reads as a deletion of the key's one put, which a Delete is too.
        const key = slice();
        if (visitor !== null) visitor.delete(key, seq);
        break;
      }
      case WAL_LOG_DATA:
        slice(); // a RocksDB PutLogData blob: not a record, no sequence number
        continue;
      default:
        if (UNSUPPORTED_WAL_RECORDS.has(type)) {
          throw new IngestError(
            'NOT_SUPPORTED',
            `${source.file} at offset ${source.offset}: write batch record ${seen} is a ${UNSUPPORTED_WAL_RECORDS.get(type)} record (type 0x${type.toString(16)}), which this engine cannot replay: not supported, nothing was changed`,
          );
        }
        fail(`unknown record type 0x${type.toString(16)}`);
    }
    seen++;
    if (seen > count) fail(`more records than the header's count of ${count}`);
  }
  if (seen !== count) fail(`header says ${count} records but the batch holds ${seen}`);
  return count;
}

function validate(data: Buffer, source: BatchSource): number {
  const { sequence } = batchHeader(data, source);
  return iterateRecords(data, sequence, null, source);
}
