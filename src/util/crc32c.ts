/**
 * CRC32C (Castagnoli), unmasked, from @node-rs/crc32 (hardware CRC instructions), loaded at the
 * first call. Why lazy: the import's parse and merge workers load the checksum module for XXH3,
 * RocksDB's default, and never compute a CRC32C; loading the native package costs 5-11 ms per
 * thread on the import's critical path.
 *
 * Contract: crc32c(data, initial) is the CRC32C of `data` continuing from `initial` (the CRC of
 * the bytes before it; 0 for none), as @node-rs/crc32's crc32c.
 */
import type { crc32c as Crc32cFunction } from '@node-rs/crc32';

let impl: typeof Crc32cFunction | null = null;

export function crc32c(data: Uint8Array, initial = 0): number {
  if (impl === null) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    impl = (require('@node-rs/crc32') as { crc32c: typeof Crc32cFunction }).crc32c;
  }
  return impl(data, initial);
}
