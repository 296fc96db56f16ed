/**
 * Stored blocks: how a finished block's contents go to disk.
 *
 * On disk every block is `stored bytes ‖ u8 compression type ‖ u32le checksum` (the 5-byte
 * trailer, see src/sstable/checksum.ts). The stored bytes are the contents themselves (type 0), or their
 * compressed payload in RocksDB's framing (type 4 LZ4, 7 ZSTD or 1 Snappy: the table's compression,
 * see src/sstable/compression.ts) when the block may be compressed and that saves more than 1/8 of its size.
 *
 * Contract: `storeBlock` is a pure function of (contents, compressible, settings): the same
 * inputs give the same stored bytes, type and checksum on every thread. That is what lets the
 * table builder compress data blocks on a worker thread (blockCompressionPipeline.ts) and still
 * write exactly the file it would have written inline.
 */
import { BLOCK_TRAILER_BYTES, ChecksumType, computeBlockChecksum } from '../sstable/checksum';
import { CompressionType, compressForBlock } from '../sstable/compression';

/** What decides a block's stored form; fixed for a whole table. */
export interface BlockStorageSettings {
  /** None, LZ4, ZSTD or Snappy (isWritableCompression). */
  compression: CompressionType;
  formatVersion: number;
  checksumType: ChecksumType;
}

export interface StoredBlock {
  /** The bytes written before the trailer: `contents` itself or a new compressed payload. */
  bytes: Buffer;
  /** The trailer's compression type byte. */
  type: CompressionType;
  /** The trailer's checksum (u32). */
  checksum: number;
}

/**
 * The stored form of `contents`; only data and index blocks are `compressible`. With `scratch`
 * the compressed bytes may be a view of it, valid until the scratch is used again (for a caller
 * that copies them out at once).
 */
export function storeBlock(contents: Buffer, compressible: boolean, settings: BlockStorageSettings, scratch?: Buffer): StoredBlock {
  let bytes = contents;
  let type = CompressionType.None;
  if (compressible && settings.compression !== CompressionType.None) {
    const compressed = compressForBlock(settings.compression, contents, settings.formatVersion, scratch);
    if (compressed !== null) {
      bytes = compressed;
      type = settings.compression;
    }
  }
  return { bytes, type, checksum: computeBlockChecksum(settings.checksumType, bytes, 0, bytes.length, type) };
}

/** Writes the 5-byte trailer at `pos` of `dst`; returns the position after it. */
export function writeBlockTrailer(dst: Buffer, pos: number, type: CompressionType, checksum: number): number {
  dst[pos] = type;
  dst.writeUInt32LE(checksum >>> 0, pos + 1);
  return pos + BLOCK_TRAILER_BYTES;
}
