/**
 * Block fetching for one open table file: turns a block handle into the block's contents.
 *
 * On disk every block is its contents followed by a 5-byte trailer:
 *   contents (handle.size bytes) ‖ u8 compression type ‖ u32le checksum over contents + type byte
 * (the checksum function is the footer's checksum type). A handle (offset, size) names the
 * contents only; the trailer follows it.
 *
 * Contract:
 * - readBlock() checks that the handle and its trailer lie inside the file's blocks (before the
 *   footer) and that the block is at most MAX_BLOCK_BYTES, verifies the checksum when asked, and
 *   decompresses by the trailer's type: NoCompression, Snappy, Zlib, LZ4, LZ4HC, ZSTD and
 *   ZSTDNotFinal (src/sstable/compression.ts). Every fault, an undecodable payload included, is
 *   a CorruptionError naming the file and the block offset (and the block kind); another
 *   compression (BZip2, Xpress, unknown) is IngestError NOT_SUPPORTED naming it; a failed read
 *   is IngestError IO.
 * - Two paths with the same checks and the same errors: the native codec
 *   (src/sstable/nativeBlockCodec.ts: read, XXH3 check and LZ4 or Snappy decode in one call) when
 *   it is built and handles the file's checksum type, else JavaScript (readSync,
 *   computeBlockChecksum, lz4-napi, snappy, zstd-napi, node:zlib). A block whose type the native
 *   codec does not decode (Zlib, ZSTD) is read again on the JavaScript path, and the file stays
 *   there from then on (a table has one compression, so its other blocks are the same type).
 *   On the native path data blocks may be decoded into the shared arena
 *   (src/sstable/reader/blockArena.ts; see `dataArena`).
 * - What readBlock() returns is memory of its own (or an arena view no other block shares):
 *   the block cache and iterators keep blocks for as long as they like.
 * - readPropertiesBlock() accepts a properties block whose checksum only matches with its 8
 *   global-seqno value bytes zeroed: ingestion rewrites them in place without updating the
 *   checksum (RocksDB's design; properties blocks are never compressed).
 * - I/O is synchronous; the fetcher owns the file descriptor until close().
 */
import * as fs from 'fs';
import { perf } from '../../base/perfContext';
import { compareByteRanges } from '../../base/keyCompare';
import { BlockHandle, readVarint32, decoded } from '../../util/coding';
import { CorruptionError, IngestError } from '../../util/errors';
import { BLOCK_TRAILER_BYTES, computeBlockChecksum } from '../checksum';
import {
  CompressionType,
  compressionName,
  decompressBlock,
  isReadableCompression,
  LZ4_NAPI_SIZE_BYTES,
  lz4DecompressBlockInPlace,
  READABLE_COMPRESSION_NAMES,
} from '../compression';
import { Footer } from '../footer';
import { Prop } from '../format';
import { isNativeCodecError, NATIVE_CHECKSUM_TYPES, nativeBlockCodec, NativeBlockCodec } from '../nativeBlockCodec';
import { Block, BlockIterator } from './block';
import { BlockArena } from './blockArena';
import { BlockPrefetcher, PrefetchFile } from './blockPrefetcher';

/** Which block a read is for; it only shows in error messages. */
export type BlockKind = 'data' | 'index' | 'filter' | 'metaindex' | 'properties' | 'range_del';

/**
 * Largest block we accept, in bytes (stored or decompressed). Blocks are typically KiBs; this
 * only stops a corrupt handle or size header from asking for an absurd allocation.
 */
export const MAX_BLOCK_BYTES = 1 << 30;
/**
 * Largest read, in bytes, that goes through a fetcher's reusable scratch buffer (so each open
 * table may hold this much); larger blocks (big filters, huge index blocks) get their own.
 */
const READ_SCRATCH_MAX_BYTES = 256 * 1024;
/** LZ4 cannot expand its input by more than this factor; a larger size header is corrupt. */
const LZ4_MAX_EXPANSION = 255;

/**
 * Where this thread's data blocks are decoded when the native codec reads them. One arena for
 * every table: slabs fill faster, and cold blocks of all tables leave the cache together.
 */
const dataBlockArena = new BlockArena();

/**
 * Reads `length` bytes at file offset `position` of an open file into `buf[offset, offset +
 * length)`. A short file is a CorruptionError, a failed read IngestError IO.
 */
export function readFileInto(fd: number, path: string, buf: Buffer, offset: number, position: number, length: number): void {
  let done = 0;
  while (done < length) {
    let n: number;
    try {
      n = fs.readSync(fd, buf, offset + done, length - done, position + done);
    } catch (e) {
      throw new IngestError('IO', `cannot read ${length} bytes at offset ${position} of ${path}: ${(e as Error).message}`, { cause: e });
    }
    if (n === 0) throw new CorruptionError(path, position, `file ends ${length - done} bytes early`);
    done += n;
  }
}

/** `length` bytes at `position` of an open file, in a Buffer of their own (the footer's read). */
export function readFileBytes(fd: number, path: string, position: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  readFileInto(fd, path, buf, 0, position, length);
  return buf;
}

export class BlockFetcher implements PrefetchFile {
  readonly path: string;
  /**
   * The arena data blocks should be decoded into (pass it to readBlock), or null on the
   * JavaScript path, which allocates each block itself.
   */
  readonly dataArena: BlockArena | null;
  private fd: number;
  private readonly checksumType: number;
  private readonly formatVersion: number;
  /** Where the blocks end and the footer starts: no handle may reach past it. */
  readonly blocksEndBytes: number;
  /**
   * The native block codec when it is built and handles this file's checksum type, else null;
   * set to null once a block's compression turns out to be one it does not decode.
   */
  private nativeCodec: NativeBlockCodec | null;
  /** Where readRawBlock() reads blocks of up to READ_SCRATCH_MAX_BYTES; grows on demand. */
  private readScratch: Buffer = Buffer.alloc(0);

  /**
   * Takes over `fd` (close() closes it). `useNativeCodec` false keeps this file on the
   * JavaScript path whatever the codec supports (tests compare the two).
   */
  constructor(path: string, fd: number, fileSizeBytes: number, footer: Footer, useNativeCodec: boolean) {
    this.path = path;
    this.fd = fd;
    this.checksumType = footer.checksumType;
    this.formatVersion = footer.formatVersion;
    this.blocksEndBytes = fileSizeBytes - footer.footerBytes;
    const nativeUsable = useNativeCodec && NATIVE_CHECKSUM_TYPES.has(footer.checksumType);
    this.nativeCodec = nativeUsable ? nativeBlockCodec : null;
    this.dataArena = nativeUsable ? dataBlockArena : null;
  }

  get isOpen(): boolean {
    return this.fd >= 0;
  }

  /** Throws IngestError INVALID_ARGUMENT once the file is closed. */
  checkOpen(): void {
    if (this.fd < 0) throw new IngestError('INVALID_ARGUMENT', `table ${this.path} is closed`);
  }

  /** Closes the file descriptor; later reads fail with checkOpen's error. Idempotent. */
  close(): void {
    if (this.fd < 0) return;
    fs.closeSync(this.fd);
    this.fd = -1;
  }

  /**
   * Reads, verifies (if asked) and decompresses one block; returns its contents. With a
   * prefetcher (an iterator's, blockPrefetcher.ts), sequential reads come from its readahead.
   */
  readBlock(handle: BlockHandle, kind: BlockKind, verify: boolean, arena: BlockArena | null = null, prefetcher?: BlockPrefetcher): Buffer {
    // Once, before any path reads (the readahead included): the paths below do not check again.
    this.checkBlockHandle(handle, kind);
    if (prefetcher !== undefined) {
      const bytes = prefetcher.bytesFor(this, handle.offset, handle.size);
      if (bytes !== null) return this.blockFromBytes(bytes, prefetcher.bufferOffset, handle, kind, verify, arena);
    }
    if (this.nativeCodec !== null) return this.readBlockNative(this.nativeCodec, this.fd, handle.offset, handle, kind, verify, arena);
    const buf = this.readRawBlock(handle);
    if (verify && !this.checksumMatches(buf, handle.size)) throw this.checksumError(buf, handle, kind);
    return this.decompress(buf, handle, kind);
  }

  /** PrefetchFile: file bytes [position, position + length) into buf[0, length). */
  readInto(buf: Buffer, position: number, length: number): void {
    this.checkOpen();
    readFileInto(this.fd, this.path, buf, 0, position, length);
  }

  /** A block (contents and trailer) already in memory at bytes[start..]: the same checks and results as a read. */
  private blockFromBytes(
    bytes: Buffer,
    start: number,
    handle: BlockHandle,
    kind: BlockKind,
    verify: boolean,
    arena: BlockArena | null,
  ): Buffer {
    if (this.nativeCodec !== null) return this.readBlockNative(this.nativeCodec, bytes, start, handle, kind, verify, arena);
    // The JavaScript path decodes in its scratch frame (LZ4 is framed in place there): copy in.
    const length = handle.size + BLOCK_TRAILER_BYTES;
    const frame = this.scratchFrame(length);
    bytes.copy(frame, LZ4_NAPI_SIZE_BYTES, start, start + length);
    perf.blockBytesRead += length;
    const buf = frame.subarray(LZ4_NAPI_SIZE_BYTES, LZ4_NAPI_SIZE_BYTES + length);
    if (verify && !this.checksumMatches(buf, handle.size)) throw this.checksumError(buf, handle, kind);
    return this.decompress(buf, handle, kind);
  }

  /**
   * The properties block's contents, verified if asked. If the checksum fails, retries with the
   * global-seqno value bytes zeroed (see the contract). Always the JavaScript path: the retry
   * needs the raw bytes.
   */
  readPropertiesBlock(handle: BlockHandle, verify: boolean): Buffer {
    this.checkBlockHandle(handle, 'properties');
    const buf = this.readRawBlock(handle);
    if (verify && !this.checksumMatches(buf, handle.size)) {
      const seqnoValueOffset =
        buf[handle.size] === CompressionType.None ? this.findGlobalSeqnoValue(buf.subarray(0, handle.size), handle) : -1;
      if (seqnoValueOffset < 0) throw this.checksumError(buf, handle, 'properties');
      const zeroed = Buffer.from(buf);
      zeroed.fill(0, seqnoValueOffset, seqnoValueOffset + 8);
      if (!this.checksumMatches(zeroed, handle.size)) throw this.checksumError(buf, handle, 'properties');
    }
    return this.decompress(buf, handle, 'properties');
  }

  /**
   * readBlock() in one native call (src/sstable/nativeBlockCodec.ts): the same checks, the same
   * errors; `source` is the file descriptor (position: the handle's offset) or bytes holding the
   * block at `position` (a readahead buffer). The caller checked the handle.
   */
  private readBlockNative(
    codec: NativeBlockCodec,
    source: number | Buffer,
    position: number,
    handle: BlockHandle,
    kind: BlockKind,
    verify: boolean,
    arena: BlockArena | null,
  ): Buffer {
    perf.blockBytesRead += handle.size + BLOCK_TRAILER_BYTES;
    try {
      if (arena !== null) return arena.readBlock(codec, source, position, handle.size, this.checksumType, verify, MAX_BLOCK_BYTES);
      return codec.readBlock(source, position, handle.size, this.checksumType, verify, MAX_BLOCK_BYTES);
    } catch (e) {
      if (isNativeCodecError(e) && e.code === 'UNSUPPORTED_COMPRESSION' && isReadableCompression(e.compressionType ?? -1)) {
        // Zlib or ZSTD: the JavaScript path decodes it (and checks the checksum again itself).
        perf.blockBytesRead -= handle.size + BLOCK_TRAILER_BYTES;
        this.nativeCodec = null;
        return this.readBlock(handle, kind, verify, null);
      }
      throw this.nativeReadError(e, handle, kind);
    }
  }

  /** Maps a native codec error to the error the JavaScript path throws for the same fault. */
  private nativeReadError(e: unknown, handle: BlockHandle, kind: BlockKind): Error {
    if (!isNativeCodecError(e)) return e instanceof Error ? e : new Error(`${kind} block read failed: ${String(e)}`);
    switch (e.code) {
      case 'SHORT_READ':
        return new CorruptionError(this.path, handle.offset, `${kind} block: ${e.message}`);
      case 'CHECKSUM_MISMATCH':
        return new CorruptionError(
          this.path,
          handle.offset,
          `${kind} block checksum mismatch: stored 0x${(e.stored ?? 0).toString(16)}, computed 0x${(e.computed ?? 0).toString(16)}`,
        );
      case 'LZ4_MALFORMED':
      case 'SNAPPY_MALFORMED':
        return new CorruptionError(this.path, handle.offset, `${kind} block does not decompress: ${e.message}`);
      case 'UNSUPPORTED_COMPRESSION':
        return this.unsupportedCompression(e.compressionType ?? -1, handle, kind);
      case 'IO':
        return new IngestError(
          'IO',
          `cannot read ${handle.size + BLOCK_TRAILER_BYTES} bytes at offset ${handle.offset} of ${this.path}: ${e.message}`,
          { cause: e },
        );
      default:
        return e;
    }
  }

  private unsupportedCompression(type: number, handle: BlockHandle, kind: BlockKind): IngestError {
    return new IngestError(
      'NOT_SUPPORTED',
      `${this.path}: ${kind} block at offset ${handle.offset} uses ${compressionName(type)} compression, which is not supported (only ${READABLE_COMPRESSION_NAMES.join(', ')})`,
    );
  }

  private checksumMatches(buf: Buffer, size: number): boolean {
    const stored = buf.readUInt32LE(size + 1);
    return computeBlockChecksum(this.checksumType, buf, 0, size, buf[size]) === stored;
  }

  private checksumError(buf: Buffer, handle: BlockHandle, kind: BlockKind): CorruptionError {
    const stored = buf.readUInt32LE(handle.size + 1);
    const computed = computeBlockChecksum(this.checksumType, buf, 0, handle.size, buf[handle.size]);
    return new CorruptionError(
      this.path,
      handle.offset,
      `${kind} block checksum mismatch: stored 0x${stored.toString(16)}, computed 0x${computed.toString(16)}`,
    );
  }

  /**
   * The contents of a block from readRawBlock() in memory of their own (blocks outlive the
   * scratch buffer: the cache and iterators keep them). Destroys an LZ4 payload's size header.
   * Snappy, Zlib and ZSTD decode into a new Buffer (decompressBlock).
   */
  private decompress(buf: Buffer, handle: BlockHandle, kind: BlockKind): Buffer {
    const type = buf[handle.size];
    const payload = buf.subarray(0, handle.size);
    switch (type) {
      case CompressionType.None:
        return payload.buffer === this.readScratch.buffer ? Buffer.from(payload) : payload;
      case CompressionType.LZ4:
      case CompressionType.LZ4HC: {
        this.checkLz4SizeHeader(payload, handle, kind);
        try {
          // readRawBlock left LZ4_NAPI_SIZE_BYTES of room before the payload.
          const frame = Buffer.from(buf.buffer, buf.byteOffset - LZ4_NAPI_SIZE_BYTES, LZ4_NAPI_SIZE_BYTES + handle.size);
          return lz4DecompressBlockInPlace(frame, LZ4_NAPI_SIZE_BYTES, frame.length, this.formatVersion);
        } catch (e) {
          throw new CorruptionError(this.path, handle.offset, `${kind} block does not decompress: ${(e as Error).message}`);
        }
      }
      case CompressionType.Snappy:
      case CompressionType.Zlib:
      case CompressionType.ZSTD:
      case CompressionType.ZSTDNotFinal:
        try {
          return decompressBlock(type, payload, MAX_BLOCK_BYTES);
        } catch (e) {
          if (!(e instanceof RangeError)) throw e; // e.g. zstd-napi not loadable: NOT_SUPPORTED
          throw new CorruptionError(this.path, handle.offset, `${kind} block does not decompress: ${(e as Error).message}`);
        }
      default:
        throw this.unsupportedCompression(type, handle, kind);
    }
  }

  /** Rejects an LZ4 size header that would make us allocate more than the payload can expand to. */
  private checkLz4SizeHeader(payload: Buffer, handle: BlockHandle, kind: BlockKind): void {
    if (this.formatVersion < 2) return; // never reached: fv < 2 is rejected at open
    let size: number;
    try {
      size = readVarint32(payload, 0);
    } catch (e) {
      throw new CorruptionError(this.path, handle.offset, `${kind} block: bad LZ4 size header: ${(e as Error).message}`);
    }
    const body = payload.length - decoded.offset;
    if (size > MAX_BLOCK_BYTES || size > body * LZ4_MAX_EXPANSION + 16) {
      throw new CorruptionError(
        this.path,
        handle.offset,
        `${kind} block: LZ4 size header ${size} is implausible for ${body} payload bytes`,
      );
    }
  }

  /**
   * Offset of the 8-byte global-seqno value in unverified properties contents, or -1 when the
   * block has none or does not even parse (then the checksum error is the better report).
   */
  private findGlobalSeqnoValue(contents: Buffer, handle: BlockHandle): number {
    try {
      const block = Block.parse(contents, this.path, handle.offset);
      const it = new BlockIterator(block, { order: compareByteRanges });
      it.seekGE(Buffer.from(Prop.GlobalSeqno, 'latin1'));
      if (!it.valid() || it.key().toString('latin1') !== Prop.GlobalSeqno || it.value().length !== 8) return -1;
      return it.value().byteOffset - contents.byteOffset;
    } catch (e) {
      if (e instanceof CorruptionError) return -1;
      throw e;
    }
  }

  /** Before any read: the file is open and the handle (plus trailer) lies inside the file's blocks. */
  private checkBlockHandle(handle: BlockHandle, kind: BlockKind): void {
    this.checkOpen();
    const blocksEnd = this.blocksEndBytes;
    if (handle.size > MAX_BLOCK_BYTES || handle.offset + handle.size + BLOCK_TRAILER_BYTES > blocksEnd) {
      throw new CorruptionError(
        this.path,
        handle.offset,
        `${kind} block handle (${handle.offset}, ${handle.size}) lies outside the file's ${blocksEnd} block bytes`,
      );
    }
  }

  /**
   * Reads a block and its 5-byte trailer, unverified (the caller checked that the handle lies
   * inside the file's blocks: checkBlockHandle). The result is only valid until the next read: blocks up to READ_SCRATCH_MAX_BYTES land
   * in the fetcher's scratch buffer (a fresh 4 KiB+ Buffer per read costs more than the read
   * itself), so decompress() copies what it returns out of it. The LZ4_NAPI_SIZE_BYTES bytes
   * before the result belong to the fetcher too: decompress() frames LZ4 payloads in place there.
   */
  private readRawBlock(handle: BlockHandle): Buffer {
    const length = handle.size + BLOCK_TRAILER_BYTES;
    const frame = this.scratchFrame(length);
    readFileInto(this.fd, this.path, frame, LZ4_NAPI_SIZE_BYTES, handle.offset, length);
    perf.blockBytesRead += length;
    return frame.subarray(LZ4_NAPI_SIZE_BYTES, LZ4_NAPI_SIZE_BYTES + length);
  }

  /** Room for `length` bytes after LZ4_NAPI_SIZE_BYTES of framing room: the scratch buffer, or a Buffer of their own when large. */
  private scratchFrame(length: number): Buffer {
    const frameBytes = LZ4_NAPI_SIZE_BYTES + length;
    if (frameBytes > READ_SCRATCH_MAX_BYTES) return Buffer.allocUnsafe(frameBytes);
    if (this.readScratch.length < frameBytes)
      this.readScratch = Buffer.allocUnsafe(Math.min(READ_SCRATCH_MAX_BYTES, Math.max(frameBytes, 2 * this.readScratch.length)));
    return this.readScratch;
  }
}
