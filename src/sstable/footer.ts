/**
 * The footer: the fixed-size tail of every table, which locates the metaindex and index blocks.
 *
 * On disk (format_version >= 1, 53 bytes):
 *   u8 checksum type ‖ metaindex handle ‖ index handle ‖ zero padding to 40 bytes
 *   ‖ u32le format_version ‖ u64le magic 0x88e241b785f4cff7
 * Legacy (format_version 0, 48 bytes): handles padded to 40 bytes ‖ u64le magic 0xdb4775248b80fb57,
 * checksum implicitly CRC32C.
 *
 * The footer carries no checksum of its own; a reader validates the magic, that both handles lie
 * inside the file before the footer, and that the padding is zero. RocksDB ignores the padding,
 * but every writer (RocksDB's and ours) zeroes it, so requiring zeros costs nothing and turns a
 * flipped padding byte into a detected corruption instead of a silent one. A damaged footer is a
 * CorruptionError.
 */
import { BlockHandle, ByteSink, putBlockHandle, readBlockHandle, decoded, varintLength } from '../util/coding';
import { CorruptionError, assert } from '../util/errors';
import { ChecksumType } from './checksum';
import { BLOCK_BASED_TABLE_MAGIC, FOOTER_BYTES, FOOTER_HANDLES_BYTES, LEGACY_BLOCK_BASED_TABLE_MAGIC, LEGACY_FOOTER_BYTES } from './format';

export interface Footer {
  checksumType: ChecksumType;
  metaindexHandle: BlockHandle;
  indexHandle: BlockHandle;
  formatVersion: number;
  /** Size of the footer on disk: 53, or 48 for format_version 0. */
  footerBytes: number;
}

export function encodeFooter(f: Omit<Footer, 'footerBytes'>): Buffer {
  assert(f.formatVersion >= 1, 'the writer produces format_version >= 1 footers only');
  const handles = new ByteSink(FOOTER_HANDLES_BYTES);
  putBlockHandle(handles, f.metaindexHandle);
  putBlockHandle(handles, f.indexHandle);
  assert(handles.length <= FOOTER_HANDLES_BYTES, 'two block handles fit in 40 bytes');
  const out = Buffer.alloc(FOOTER_BYTES);
  out[0] = f.checksumType;
  handles.view().copy(out, 1);
  out.writeUInt32LE(f.formatVersion, 1 + FOOTER_HANDLES_BYTES);
  out.writeBigUInt64LE(BLOCK_BASED_TABLE_MAGIC, 1 + FOOTER_HANDLES_BYTES + 4);
  return out;
}

/**
 * Decodes the footer from `tail`, the last min(53, fileSize) bytes of a file of `fileSize`
 * bytes. `fileName` only labels errors.
 */
export function decodeFooter(tail: Buffer, fileSize: number, fileName: string): Footer {
  if (tail.length < LEGACY_FOOTER_BYTES) {
    throw new CorruptionError(
      fileName,
      0,
      `file of ${fileSize} bytes is too short to be an SST (a footer alone is ${LEGACY_FOOTER_BYTES} bytes)`,
    );
  }
  const magic = tail.readBigUInt64LE(tail.length - 8);
  let f: Footer;
  if (magic === BLOCK_BASED_TABLE_MAGIC) {
    if (tail.length < FOOTER_BYTES) throw new CorruptionError(fileName, 0, 'file too short for a format_version >= 1 footer');
    const base = tail.length - FOOTER_BYTES;
    const footerOffset = fileSize - FOOTER_BYTES;
    const checksumType = tail[base];
    if (checksumType > ChecksumType.XXH3)
      throw new CorruptionError(fileName, footerOffset, `unknown checksum type ${checksumType} in footer`);
    const formatVersion = tail.readUInt32LE(base + 1 + FOOTER_HANDLES_BYTES);
    const { metaindexHandle, indexHandle } = decodeHandles(tail, base + 1, fileName, footerOffset);
    requireZeroPadding(tail, decoded.offset, base + 1 + FOOTER_HANDLES_BYTES, fileName, footerOffset);
    f = { checksumType, metaindexHandle, indexHandle, formatVersion, footerBytes: FOOTER_BYTES };
  } else if (magic === LEGACY_BLOCK_BASED_TABLE_MAGIC) {
    const base = tail.length - LEGACY_FOOTER_BYTES;
    const footerOffset = fileSize - LEGACY_FOOTER_BYTES;
    const { metaindexHandle, indexHandle } = decodeHandles(tail, base, fileName, footerOffset);
    requireZeroPadding(tail, decoded.offset, base + FOOTER_HANDLES_BYTES, fileName, footerOffset);
    f = { checksumType: ChecksumType.CRC32c, metaindexHandle, indexHandle, formatVersion: 0, footerBytes: LEGACY_FOOTER_BYTES };
  } else {
    throw new CorruptionError(fileName, fileSize - 8, `bad table magic number 0x${magic.toString(16)} (not a block-based SST file)`);
  }
  const footerOffset = fileSize - f.footerBytes;
  for (const [name, h] of [
    ['metaindex', f.metaindexHandle],
    ['index', f.indexHandle],
  ] as const) {
    if (h.offset + h.size + 5 > footerOffset) {
      throw new CorruptionError(fileName, footerOffset, `${name} handle (${h.offset}, ${h.size}) points past the footer`);
    }
  }
  return f;
}

function decodeHandles(
  buf: Buffer,
  pos: number,
  fileName: string,
  footerOffset: number,
): { metaindexHandle: BlockHandle; indexHandle: BlockHandle } {
  const limit = pos + FOOTER_HANDLES_BYTES;
  try {
    const metaindexHandle = readBlockHandle(buf, pos, limit);
    const indexHandle = readBlockHandle(buf, decoded.offset, limit);
    // Writers encode varints minimally. A non-minimal encoding (a trailing 0x00 continuation
    // group) decodes to the same value, so without this check a flipped high bit in a handle
    // byte could be absorbed by the zero padding and go unnoticed.
    const minimalBytes =
      varintLength(metaindexHandle.offset) +
      varintLength(metaindexHandle.size) +
      varintLength(indexHandle.offset) +
      varintLength(indexHandle.size);
    if (decoded.offset - pos !== minimalBytes) throw new RangeError('block handle varints are not minimally encoded');
    return { metaindexHandle, indexHandle };
  } catch (e) {
    throw new CorruptionError(fileName, footerOffset, `malformed block handle in footer: ${(e as Error).message}`);
  }
}

function requireZeroPadding(buf: Buffer, start: number, end: number, fileName: string, footerOffset: number): void {
  for (let i = start; i < end; i++) {
    if (buf[i] !== 0) throw new CorruptionError(fileName, footerOffset, 'non-zero byte in the footer padding');
  }
}
