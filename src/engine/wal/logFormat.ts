/**
 * The log format shared by write-ahead logs and manifests (RocksDB's/LevelDB's "log" format).
 *
 * A log is a sequence of 32 KiB blocks. Each block holds physical records, each with a 7-byte
 * header:
 *
 *   u32le masked CRC32C(type byte ‖ payload) ‖ u16le payload length ‖ u8 type ‖ payload
 *
 * A logical record (a write batch, a version edit) that fits the rest of the block is one FULL
 * record; otherwise it is split into FIRST, MIDDLE..., LAST fragments, one per block. A header
 * never straddles a block boundary: when fewer than 7 bytes remain, the writer fills them with
 * zeros and starts the next block. So every block boundary is a place where a reader can pick
 * up the record stream again after damage, which is how the reader tells a torn tail (nothing
 * valid after the damage) from corruption in the middle (valid records after it).
 *
 * The CRC covers the type so a fragment cannot be reinterpreted as another kind, and it is
 * masked (see src/sstable/checksum.ts) because CRCs of data that itself embeds CRCs are weak.
 */
import { crc32c } from '../../util/crc32c';
import { maskCrc } from '../../sstable/checksum';

export const LOG_BLOCK_SIZE_BYTES = 32 * 1024;
export const LOG_HEADER_BYTES = 7;

export enum LogRecordType {
  /** Zeros: block padding or preallocated space, never written as a record. */
  Zero = 0,
  Full = 1,
  First = 2,
  Middle = 3,
  Last = 4,
}

/** Largest payload one physical record can carry (a whole block minus its header). */
export const MAX_FRAGMENT_PAYLOAD_BYTES = LOG_BLOCK_SIZE_BYTES - LOG_HEADER_BYTES;

/**
 * Largest logical record a reader accepts. A bound keeps a corrupt stream of MIDDLE fragments
 * from growing a record without limit; writers refuse larger records with the same bound.
 */
export const MAX_LOGICAL_RECORD_BYTES = 1024 * 1024 * 1024;

const typeByteCrcs: number[] = [0, 1, 2, 3, 4].map((t) => crc32c(Buffer.from([t])));

/** Masked CRC32C of `type ‖ data[start, end)`. */
export function recordChecksum(type: LogRecordType, data: Uint8Array, start: number, end: number): number {
  return maskCrc(crc32c(data.subarray(start, end), typeByteCrcs[type]));
}
