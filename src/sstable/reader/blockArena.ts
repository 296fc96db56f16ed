/**
 * The data-block arena: decoded data blocks carved out of shared slabs instead of one Buffer each.
 *
 * Why: a Buffer of 4 KiB or more is its own ArrayBuffer, and allocating one costs about 1 µs (the
 * backing store's malloc, plus lock contention with the garbage collector's thread freeing old
 * ones), as much as reading, verifying and decoding the block. Here a 64 KiB slab is allocated
 * once and each block is a view of part of it, decoded in place by the native codec.
 *
 * Contract:
 * - `readBlock` returns the block's contents as a view no other block shares. Slabs are never
 *   written again once a view is handed out (allocation only moves forward; a full slab is
 *   replaced, not reused), so a view stays valid for as long as anything references it: the
 *   garbage collector frees a slab when its last view dies. No explicit freeing, no use-after-free.
 * - Blocks larger than a quarter of a slab get memory of their own, so a slab wastes at most a
 *   quarter of its bytes to a block that does not fit.
 * - Memory: a slab lives while any of its views does. Cold blocks leave the block cache roughly in
 *   the order they were read, so their slabs die together; a block the cache hits is moved out of
 *   its slab (Block.leaveArena) so that long-lived hot blocks never pin a slab. Measured: after
 *   1M random gets through an 8 MiB cache, 123 of 37,442 slabs were alive after a GC (7.7 MiB);
 *   test/sstable/nativeBlockCodec.test.ts checks the same bound on a small cache.
 *
 * Only data blocks use the arena: index, filter and other meta blocks live as long as their
 * table reader and get memory of their own.
 */
import { assert } from '../../util/errors';
import { NativeBlockCodec } from '../nativeBlockCodec';

/** Slab size, in bytes: 16 blocks of 4 KiB, so one slab allocation serves 16 block reads. */
export const ARENA_SLAB_BYTES = 64 * 1024;
/** Larger decoded blocks get memory of their own. */
const MAX_ARENA_BLOCK_BYTES = ARENA_SLAB_BYTES / 4;
/** Views start on 8-byte boundaries (cheap, and keeps any aligned reads aligned). */
const ALIGNMENT_BYTES = 8;

export class BlockArena {
  private slab: Buffer;
  private usedBytes = 0;

  constructor(private readonly slabBytes: number = ARENA_SLAB_BYTES) {
    assert(slabBytes >= 4 * ALIGNMENT_BYTES, `arena slab of ${slabBytes} bytes is too small`);
    this.slab = Buffer.allocUnsafeSlow(slabBytes);
  }

  /**
   * codec.readBlock(source, position, blockBytes, checksumType, verify, maxDecodedBytes) with the
   * contents decoded into the arena; `source` is a file descriptor or bytes holding the block.
   * Errors are the codec's, thrown unchanged.
   */
  readBlock(
    codec: NativeBlockCodec,
    source: number | Uint8Array,
    position: number,
    blockBytes: number,
    checksumType: number,
    verify: boolean,
    maxDecodedBytes: number,
  ): Buffer {
    let decodedBytes = codec.readBlock(source, position, blockBytes, checksumType, verify, maxDecodedBytes, this.slab, this.usedBytes);
    if (decodedBytes < 0) {
      // Did not fit in what is left of the slab: -decodedBytes bytes are needed.
      if (-decodedBytes > Math.min(MAX_ARENA_BLOCK_BYTES, this.slabBytes / 4)) {
        return codec.readBlock(source, position, blockBytes, checksumType, verify, maxDecodedBytes);
      }
      this.slab = Buffer.allocUnsafeSlow(this.slabBytes);
      this.usedBytes = 0;
      decodedBytes = codec.readBlock(source, position, blockBytes, checksumType, verify, maxDecodedBytes, this.slab, 0);
      assert(decodedBytes >= 0, `a block of ${-decodedBytes} bytes does not fit an empty ${this.slabBytes}-byte slab`);
    }
    const start = this.usedBytes;
    this.usedBytes = Math.min(this.slabBytes, (start + decodedBytes + ALIGNMENT_BYTES - 1) & ~(ALIGNMENT_BYTES - 1));
    return this.slab.subarray(start, start + decodedBytes);
  }
}
