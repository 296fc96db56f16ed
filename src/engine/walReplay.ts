/**
 * WAL replay: rebuilds memtables from the write-ahead logs a crash or a close left behind.
 *
 * Contract: the logs are read oldest first; each record is one write batch, validated whole
 * before any of it is applied, so a batch is replayed entirely or (torn tail) not at all.
 * Batches must follow each other in sequence order across all logs; a step back is corruption.
 * A memtable that reaches `writeBufferSizeBytes` is sealed and replay continues in a new one, so
 * memory stays bounded; the caller decides what to do with more than one (the engine flushes
 * them all at open, so that a WAL is only ever retired whole).
 */
import { CorruptionError, assert } from '../util/errors';
import { ValueType } from '../base/internalKey';
import { DroppedTail, LogReader } from './wal/logReader';
import { WriteBatchVisitor, batchHeader, iterateRecords } from './writeBatch';
import { Memtable, MemtableOptions } from './memtable/memtable';
import { logFileName } from './fileNames';

/** Applies a batch's records to a memtable. */
export class MemtableInserter implements WriteBatchVisitor {
  mem: Memtable | null = null;
  put(key: Buffer, value: Buffer, seq: number): void {
    (this.mem as Memtable).add(seq, ValueType.Value, key, value);
  }
  delete(key: Buffer, seq: number): void {
    (this.mem as Memtable).add(seq, ValueType.Deletion, key, EMPTY);
  }
  deleteRange(start: Buffer, end: Buffer, seq: number): void {
    (this.mem as Memtable).add(seq, ValueType.RangeDeletion, start, end);
  }
}

const EMPTY = Buffer.alloc(0);

export interface ReplayOptions {
  writeBufferSizeBytes: number;
  /** How the engine makes its memtables (arena size, filter). */
  memtable: MemtableOptions;
  /** The manifest's last sequence number; the result is at least this. */
  lastSequence: number;
}

export interface ReplayResult {
  /** Oldest first; the last one may be partly full (or empty). Never empty itself. */
  memtables: Memtable[];
  lastSequence: number;
  batches: number;
  droppedTails: Array<{ logNumber: number } & DroppedTail>;
}

export function replayLogs(dir: string, logNumbers: readonly number[], opts: ReplayOptions): ReplayResult {
  const memtables = [new Memtable(opts.memtable)];
  const inserter = new MemtableInserter();
  const result: ReplayResult = { memtables, lastSequence: opts.lastSequence, batches: 0, droppedTails: [] };
  let previousBatchLastSeq = -1;
  for (const logNumber of logNumbers) {
    const file = logFileName(dir, logNumber);
    const reader = LogReader.forEachRecord(file, (record, offset) => {
      const source = { file, offset };
      const { sequence, count } = batchHeader(record, source);
      iterateRecords(record, sequence, null, source);
      if (count === 0) return;
      if (sequence <= previousBatchLastSeq) {
        throw new CorruptionError(
          file,
          offset,
          `batch sequence ${sequence} does not follow the previous batch's last sequence ${previousBatchLastSeq}`,
        );
      }
      let mem = memtables[memtables.length - 1];
      if (mem.approximateMemoryUsageBytes >= opts.writeBufferSizeBytes) {
        mem = new Memtable(opts.memtable);
        memtables.push(mem);
      }
      inserter.mem = mem;
      iterateRecords(record, sequence, inserter, source);
      previousBatchLastSeq = sequence + count - 1;
      result.lastSequence = Math.max(result.lastSequence, previousBatchLastSeq);
      result.batches++;
    });
    if (reader.droppedTail !== null) result.droppedTails.push({ logNumber, ...reader.droppedTail });
  }
  assert(memtables.length > 0, 'replay yields at least one memtable');
  return result;
}
