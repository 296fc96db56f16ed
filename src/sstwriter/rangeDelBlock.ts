/**
 * Range-deletion block (`rocksdb.range_del`): the table's range tombstones.
 *
 * On disk: an ordinary block (blockBuilder.ts) with restart interval 1, never compressed. Each
 * entry is `start_user_key ‖ u64le(seq << 8 | 0x0F) → end_user_key`; a tombstone deletes user
 * keys in [start, end) whose sequence number is below `seq`.
 *
 * Contract: entries are stored in the order they are added, as RocksDB's SstFileWriter does;
 * readers fragment overlapping or unsorted tombstones themselves, so no order is enforced here.
 * Callers should add tombstones in start-key order when they can (that is what RocksDB's own
 * flushes produce). Each tombstone must satisfy start < end (the caller validates user input).
 */
import { BlockBuilder } from './blockBuilder';
import { TRAILER_BYTES, ValueType, writeTrailer } from '../base/internalKey';

export class RangeDelBlockBuilder {
  private readonly block = new BlockBuilder({ restartInterval: 1, initialCapacityBytes: 256 });
  private keyScratch = Buffer.allocUnsafe(64);

  /** Adds tombstone [startUserKey, endUserKey) at sequence `seq`; returns the internal-key length. */
  add(startUserKey: Uint8Array, endUserKey: Uint8Array, seq: number): number {
    const keyBytes = startUserKey.length + TRAILER_BYTES;
    if (keyBytes > this.keyScratch.length) this.keyScratch = Buffer.allocUnsafe(Math.max(keyBytes, 2 * this.keyScratch.length));
    this.keyScratch.set(startUserKey, 0);
    writeTrailer(this.keyScratch, startUserKey.length, seq, ValueType.RangeDeletion);
    this.block.add(this.keyScratch.subarray(0, keyBytes), endUserKey);
    return keyBytes;
  }

  empty(): boolean {
    return this.block.empty();
  }

  numEntries(): number {
    return this.block.numEntries();
  }

  /** The block contents (a view valid while this builder lives). */
  finish(): Buffer {
    return this.block.finish();
  }
}
