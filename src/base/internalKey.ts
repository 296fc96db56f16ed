/**
 * Internal keys: what data blocks, index separators and range-deletion blocks store.
 *
 * On disk: `user_key ‖ u64le((sequence << 8) | type)`. Order (the internal-key comparator):
 * user key ascending (bytewise), then sequence descending, then type descending, so the newest
 * version of a key comes first and a seek to (key, MAX_SEQUENCE_NUMBER, seek type) lands on it.
 *
 * Sequence numbers are 56 bits. JS numbers hold every sequence a database reaches (< 2^53)
 * exactly; the one larger value in use, kMaxSequenceNumber (2^56-1), is carried as the
 * constant MAX_SEQUENCE_NUMBER and encoded/decoded specially, so it round-trips.
 */
import { assertionFailed } from '../util/errors';

export enum ValueType {
  Deletion = 0x00,
  Value = 0x01,
  Merge = 0x02,
  SingleDeletion = 0x07,
  RangeDeletion = 0x0f,
  /** Used as the type of seek keys and shortened index separators ("kValueTypeForSeek"). */
  Seek = 0x16,
}

/** kMaxSequenceNumber = 2^56 - 1 (as a JS number it rounds to 2^56; see module comment). */
export const MAX_SEQUENCE_NUMBER = 2 ** 56 - 1;
/** Largest sequence number a database may assign; keeps arithmetic exact. */
export const MAX_ASSIGNABLE_SEQUENCE = Number.MAX_SAFE_INTEGER;

export const TRAILER_BYTES = 8;
const TWO_POW_24 = 2 ** 24;

export function isKnownValueType(t: number): boolean {
  return t === 0x00 || t === 0x01 || t === 0x02 || t === 0x07 || t === 0x0f || t === 0x16 || t === 0x11 || t === 0x14;
}

/** Writes the 8-byte trailer of (seq, type) at `pos`. */
export function writeTrailer(buf: Uint8Array, pos: number, seq: number, type: number): void {
  let low: number;
  let high: number;
  if (seq >= MAX_SEQUENCE_NUMBER) {
    low = 0xffffff00 | type;
    high = 0xffffffff;
  } else {
    if (!(seq >= 0 && Number.isInteger(seq))) assertionFailed(`sequence number ${seq} must be a non-negative integer`);
    low = ((seq % TWO_POW_24) * 256 + type) >>> 0;
    high = Math.floor(seq / TWO_POW_24) >>> 0;
  }
  buf[pos] = low & 0xff;
  buf[pos + 1] = (low >>> 8) & 0xff;
  buf[pos + 2] = (low >>> 16) & 0xff;
  buf[pos + 3] = low >>> 24;
  buf[pos + 4] = high & 0xff;
  buf[pos + 5] = (high >>> 8) & 0xff;
  buf[pos + 6] = (high >>> 16) & 0xff;
  buf[pos + 7] = high >>> 24;
}

/** Builds an internal key from a user key, sequence number and type. */
export function makeInternalKey(userKey: Uint8Array, seq: number, type: number): Buffer {
  const out = Buffer.allocUnsafe(userKey.length + TRAILER_BYTES);
  out.set(userKey, 0);
  writeTrailer(out, userKey.length, seq, type);
  return out;
}

function readU32(buf: Uint8Array, pos: number): number {
  return (buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)) + buf[pos + 3] * 0x1000000;
}

/** Sequence number of an internal key (`MAX_SEQUENCE_NUMBER` for the all-ones sentinel). */
export function sequenceOf(ikey: Uint8Array): number {
  const p = ikey.length - TRAILER_BYTES;
  const low = readU32(ikey, p);
  const high = readU32(ikey, p + 4);
  if (high >= 0x20000000) return high === 0xffffffff && low >>> 8 === 0xffffff ? MAX_SEQUENCE_NUMBER : high * TWO_POW_24 + (low >>> 8);
  return high * TWO_POW_24 + (low >>> 8);
}

export function typeOf(ikey: Uint8Array): number {
  return ikey[ikey.length - TRAILER_BYTES];
}

/** The user key of an internal key, as a view. */
export function userKeyOf(ikey: Buffer): Buffer {
  if (ikey.length < TRAILER_BYTES) assertionFailed(`internal key of ${ikey.length} bytes is shorter than its 8-byte trailer`);
  return ikey.subarray(0, ikey.length - TRAILER_BYTES);
}

/**
 * Compares two internal keys. Counts nothing itself; callers that keep perf counters count
 * calls. Works on any Uint8Array without allocating.
 */
export function compareInternalKeys(a: Uint8Array, b: Uint8Array): number {
  const al = a.length - TRAILER_BYTES;
  const bl = b.length - TRAILER_BYTES;
  const c = Buffer.compare(a.subarray(0, al), b.subarray(0, bl));
  if (c !== 0) return c;
  // Trailers descending: compare the high then low u32 halves in reverse.
  const ah = readU32(a, al + 4);
  const bh = readU32(b, bl + 4);
  if (ah !== bh) return ah > bh ? -1 : 1;
  const alow = readU32(a, al);
  const blow = readU32(b, bl);
  if (alow !== blow) return alow > blow ? -1 : 1;
  return 0;
}

/** Human-readable form for error messages: printable ASCII as is, else hex. */
export function formatKey(key: Uint8Array): string {
  for (let i = 0; i < key.length; i++) {
    const c = key[i];
    if (c < 0x20 || c > 0x7e) return `0x${Buffer.from(key).toString('hex')}`;
  }
  return JSON.stringify(Buffer.from(key).toString('latin1'));
}

/**
 * Builds seek keys (userKey, seq, Seek) — the first internal key of `userKey` visible at `seq` —
 * in one reused buffer, so point lookups and seeks allocate nothing. The returned view is valid
 * until the next build(): seek targets are only read during the seek that receives them.
 */
export class SeekKeyBuilder {
  private buf: Buffer = Buffer.allocUnsafe(64);

  build(userKey: Uint8Array, seq: number): Buffer {
    const n = userKey.length + TRAILER_BYTES;
    if (this.buf.length < n) this.buf = Buffer.allocUnsafe(Math.max(n, 2 * this.buf.length));
    const buf = this.buf;
    // A byte loop beats Buffer#set for the short keys lookups use.
    for (let i = 0; i < userKey.length; i++) buf[i] = userKey[i];
    writeTrailer(buf, userKey.length, seq, ValueType.Seek);
    return buf.subarray(0, n);
  }
}
