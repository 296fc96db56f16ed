/**
 * Automatic readahead for one iterator's data-block reads (RocksDB's BlockPrefetcher with
 * auto_readahead_size, per iterator): once an iterator has read AUTO_READAHEAD_AFTER_READS blocks
 * back to back from the file (each starting where the one before ended), the next miss reads
 * `readaheadBytes` at once into a buffer of the iterator's own, and the blocks after it are taken
 * from that buffer instead of one pread each. The readahead doubles on each refill, from
 * INITIAL_READAHEAD_BYTES up to MAX_READAHEAD_BYTES; a read elsewhere (a seek) starts over.
 *
 * Why: a scan that reads a table from the file (the conflict scan's new SSTs, compaction inputs,
 * a cold range scan) paid one system call per 4 KiB block, about a microsecond each on this
 * machine, as much as verifying and decoding the block. Point lookups and seeks are never
 * sequential, so they never read ahead (no wasted bytes).
 *
 * Contract:
 * - `bytesFor(reader, offset, length)` returns null (read the block yourself) or the buffer that
 *   holds file bytes [offset, offset + length) at `bufferOffset` of it; valid until the next call.
 * - Only blocks the caller could not find in the cache come here: a cache hit is not a read.
 * - Memory: at most MAX_READAHEAD_BYTES (or one larger block) per iterator, held until
 *   `release()` (the iterator's close) or until the reads stop being sequential.
 * - Reads never go past `fileLimitBytes` (the end of the table's blocks) that the reader gives.
 */
import { perf } from '../../base/perfContext';
import { BLOCK_TRAILER_BYTES } from '../checksum';

/** Sequential block reads before the readahead starts (RocksDB: 2). */
export const AUTO_READAHEAD_AFTER_READS = 2;
/** The first readahead, in bytes (RocksDB's initial_auto_readahead_size is 8 KiB). */
export const INITIAL_READAHEAD_BYTES = 16 * 1024;
/** The largest readahead, in bytes (RocksDB's max_auto_readahead_size is 256 KiB). */
export const MAX_READAHEAD_BYTES = 256 * 1024;

/** What the prefetcher needs from the table it reads: its file and where its blocks end. */
export interface PrefetchFile {
  /** End of the file's blocks (the footer's start): no read goes past it. */
  readonly blocksEndBytes: number;
  /** Reads file bytes [position, position + length) into buf[0, length) (throws as block reads do). */
  readInto(buf: Buffer, position: number, length: number): void;
}

export class BlockPrefetcher {
  /** End (file offset) of the last block asked for, trailer included; -1 before any. */
  private lastEndBytes = -1;
  private sequentialReads = 0;
  private readaheadBytes = INITIAL_READAHEAD_BYTES;
  private buffer: Buffer | null = null;
  /** File offset of buffer[0] and how many bytes of it hold file data. */
  private bufferFileOffset = 0;
  private bufferFilledBytes = 0;
  /** Where `bytesFor`'s answer starts in the buffer. */
  bufferOffset = 0;

  /**
   * The buffer holding the block at `offset` of `contentsBytes` (its trailer follows), or null
   * when the reads are not sequential (yet): see the module comment.
   */
  bytesFor(file: PrefetchFile, offset: number, contentsBytes: number): Buffer | null {
    const lengthBytes = contentsBytes + BLOCK_TRAILER_BYTES;
    if (offset !== this.lastEndBytes) {
      this.startOver();
    }
    this.lastEndBytes = offset + lengthBytes;
    if (++this.sequentialReads <= AUTO_READAHEAD_AFTER_READS) return null;
    perf.readaheadBlocks++;
    const buffer = this.buffer;
    if (buffer !== null && offset >= this.bufferFileOffset && offset + lengthBytes <= this.bufferFileOffset + this.bufferFilledBytes) {
      this.bufferOffset = offset - this.bufferFileOffset;
      return buffer;
    }
    return this.refill(file, offset, lengthBytes);
  }

  /** Drops the buffer (the iterator closes). */
  release(): void {
    this.startOver();
    this.lastEndBytes = -1;
  }

  private startOver(): void {
    this.sequentialReads = 0;
    this.readaheadBytes = INITIAL_READAHEAD_BYTES;
    this.buffer = null;
    this.bufferFilledBytes = 0;
  }

  /** Reads [offset, offset + max(lengthBytes, readahead)) clipped to the blocks' end into the buffer. */
  private refill(file: PrefetchFile, offset: number, lengthBytes: number): Buffer {
    const wantBytes = Math.max(lengthBytes, Math.min(this.readaheadBytes, file.blocksEndBytes - offset));
    let buffer = this.buffer;
    if (buffer === null || buffer.length < wantBytes) {
      buffer = Buffer.allocUnsafeSlow(Math.max(wantBytes, Math.min(MAX_READAHEAD_BYTES, 2 * (buffer?.length ?? 0))));
      this.buffer = buffer;
    }
    // Unread on failure: the next call reads again rather than trusting a half-filled buffer.
    this.bufferFilledBytes = 0;
    file.readInto(buffer, offset, wantBytes);
    perf.readaheadReads++;
    this.bufferFileOffset = offset;
    this.bufferFilledBytes = wantBytes;
    this.readaheadBytes = Math.min(MAX_READAHEAD_BYTES, 2 * this.readaheadBytes);
    this.bufferOffset = 0;
    return buffer;
  }
}
