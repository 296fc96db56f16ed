/**
 * Byte-level encodings of RocksDB's table format: LEB128 varints, zigzag varints,
 * little-endian fixed-width integers and block handles.
 *
 * Contract: encoders append to a `ByteSink` (a growable buffer with an explicit hard limit);
 * decoders read from a Buffer at an offset and return the value plus the offset after it, and
 * throw a RangeError when the input ends early or a varint runs past its maximum length, so a
 * corrupt block can never make a decoder read outside its buffer. Callers that read blocks turn
 * those RangeErrors into CorruptionErrors naming the file and block.
 *
 * Values up to 2^53 are carried as JS numbers (file offsets and sizes never get near that);
 * 64-bit fields that can use all 64 bits (sequence/type trailers) use BigInt or split halves.
 */

/** Longest encodings, in bytes. */
export const MAX_VARINT32_BYTES = 5;
export const MAX_VARINT64_BYTES = 10;
export const MAX_BLOCK_HANDLE_BYTES = 20;

/** A growable output buffer. Its capacity doubles on demand up to `hardLimitBytes`. */
export class ByteSink {
  buf: Buffer;
  length = 0;
  private readonly hardLimitBytes: number;

  constructor(initialCapacityBytes = 4096, hardLimitBytes = 0x7fffffff) {
    this.buf = Buffer.allocUnsafe(Math.max(16, initialCapacityBytes));
    this.hardLimitBytes = hardLimitBytes;
  }

  reserve(extraBytes: number): void {
    const need = this.length + extraBytes;
    if (need <= this.buf.length) return;
    if (need > this.hardLimitBytes) {
      throw new RangeError(`ByteSink would grow to ${need} bytes, past its limit of ${this.hardLimitBytes}`);
    }
    let cap = this.buf.length * 2;
    while (cap < need) cap *= 2;
    cap = Math.min(cap, this.hardLimitBytes);
    const next = Buffer.allocUnsafe(cap);
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }

  putByte(b: number): void {
    this.reserve(1);
    this.buf[this.length++] = b;
  }

  putBytes(src: Uint8Array, start = 0, end = src.length): void {
    const n = end - start;
    this.reserve(n);
    this.buf.set(src.subarray(start, end), this.length);
    this.length += n;
  }

  putFixed32(v: number): void {
    this.reserve(4);
    this.buf.writeUInt32LE(v >>> 0, this.length);
    this.length += 4;
  }

  putFixed64(v: bigint): void {
    this.reserve(8);
    this.buf.writeBigUInt64LE(v, this.length);
    this.length += 8;
  }

  putVarint32(v: number): void {
    this.reserve(MAX_VARINT32_BYTES);
    this.length = writeVarint(this.buf, this.length, v >>> 0);
  }

  /** Varint of a non-negative safe integer (up to 2^53). */
  putVarint64(v: number): void {
    this.reserve(MAX_VARINT64_BYTES);
    this.length = writeVarint(this.buf, this.length, v);
  }

  /** The bytes written so far, as a view (not a copy). */
  view(): Buffer {
    return this.buf.subarray(0, this.length);
  }

  clear(): void {
    this.length = 0;
  }
}

/** Writes a varint of a non-negative safe integer at `pos`; returns the position after it. */
export function writeVarint(buf: Buffer | Uint8Array, pos: number, v: number): number {
  while (v >= 0x80) {
    buf[pos++] = (v & 0x7f) | 0x80;
    v = v > 0xffffffff ? Math.floor(v / 128) : v >>> 7;
  }
  buf[pos++] = v;
  return pos;
}

export function varintLength(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

export function encodeVarint(v: number): Buffer {
  const b = Buffer.allocUnsafe(varintLength(v));
  writeVarint(b, 0, v);
  return b;
}

/**
 * Decoding result slots. Decoders write here instead of allocating a result object per call,
 * because block iteration decodes several varints per entry on the hot path.
 */
export const decoded = { value: 0, offset: 0 };

/** Reads a varint32 at `pos` into `decoded`; throws RangeError past `limit` or after 5 bytes. */
export function readVarint32(buf: Uint8Array, pos: number, limit: number = buf.length): number {
  let result = 0;
  let shift = 0;
  for (let i = 0; i < MAX_VARINT32_BYTES; i++) {
    if (pos >= limit) throw new RangeError(`varint32 runs past the end of its buffer at ${pos}`);
    const b = buf[pos++];
    result |= (b & 0x7f) << shift;
    if (b < 0x80) {
      decoded.value = result >>> 0;
      decoded.offset = pos;
      return decoded.value;
    }
    shift += 7;
  }
  throw new RangeError(`varint32 longer than 5 bytes at ${pos - MAX_VARINT32_BYTES}`);
}

/** Reads a varint64 (value must fit in 2^53) at `pos` into `decoded`. */
export function readVarint64(buf: Uint8Array, pos: number, limit: number = buf.length): number {
  let result = 0;
  let mul = 1;
  for (let i = 0; i < MAX_VARINT64_BYTES; i++) {
    if (pos >= limit) throw new RangeError(`varint64 runs past the end of its buffer at ${pos}`);
    const b = buf[pos++];
    result += (b & 0x7f) * mul;
    if (b < 0x80) {
      if (result > Number.MAX_SAFE_INTEGER) throw new RangeError(`varint64 at ${pos} exceeds 2^53`);
      decoded.value = result;
      decoded.offset = pos;
      return result;
    }
    mul *= 128;
  }
  throw new RangeError(`varint64 longer than 10 bytes at ${pos - MAX_VARINT64_BYTES}`);
}

/** Zigzag (varsigned64) encoding used by delta-encoded index handles. */
export function zigzagEncode(v: number): number {
  return v >= 0 ? 2 * v : -2 * v - 1;
}
export function zigzagDecode(u: number): number {
  return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
}

/** A reference to a block: offset and size (size excludes the 5-byte trailer). */
export interface BlockHandle {
  offset: number;
  size: number;
}

export function putBlockHandle(sink: ByteSink, h: BlockHandle): void {
  sink.putVarint64(h.offset);
  sink.putVarint64(h.size);
}

export function encodeBlockHandle(h: BlockHandle): Buffer {
  const s = new ByteSink(MAX_BLOCK_HANDLE_BYTES);
  putBlockHandle(s, h);
  return Buffer.from(s.view());
}

/** Decodes a handle at `pos`; `decoded.offset` is left at the byte after it. */
export function readBlockHandle(buf: Uint8Array, pos: number, limit: number = buf.length): BlockHandle {
  const offset = readVarint64(buf, pos, limit);
  const size = readVarint64(buf, decoded.offset, limit);
  return { offset, size };
}

/** Bytewise comparison (RocksDB's default comparator). */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  return Buffer.compare(a, b);
}
