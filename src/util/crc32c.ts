/**
 * CRC32C (Castagnoli), unmasked, from @node-rs/crc32 (hardware CRC instructions), loaded at the
 * first call (onFirstUse). Why lazy: the import's parse and merge workers load the checksum
 * module for XXH3, RocksDB's default, and never compute a CRC32C; loading the native package
 * costs 5-11 ms per thread on the import's critical path.
 *
 * Contract: crc32c(data, initial) is the CRC32C of `data` continuing from `initial` (the CRC of
 * the bytes before it; 0 for none), as @node-rs/crc32's crc32c.
 */
import { onFirstUse } from './onFirstUse';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const crc32Package = onFirstUse(() => require('@node-rs/crc32') as typeof import('@node-rs/crc32'));

export function crc32c(data: Uint8Array, initial = 0): number {
  return crc32Package().crc32c(data, initial);
}
