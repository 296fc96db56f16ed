/**
 * Keys and values as the engine's public calls take them: a string (its UTF-8 bytes) or any
 * Uint8Array (a Buffer, or a plain Uint8Array seen as a Buffer without a copy).
 *
 * Contract: each public call converts once, at its entry, and the engine works on Buffers from
 * there on; a Buffer passes through as itself (no copy, no allocation), so the byte path costs one
 * type check. What the engine returns (get's value, an iterator's key and value) is always a
 * Buffer: `.toString()` gives the UTF-8 text back. Keys compare as bytes, so string keys sort by
 * their UTF-8 encoding (which is code point order), not by JavaScript's UTF-16 `<`.
 */

/** A key or value given to the engine: a string is written as its UTF-8 bytes. */
export type BytesInput = string | Uint8Array;

/** The bytes of `input`: the Buffer itself, a view of a Uint8Array, or a string's UTF-8 encoding. */
export function toBytes(input: BytesInput): Buffer {
  if (typeof input === 'string') return Buffer.from(input, 'utf8');
  if (Buffer.isBuffer(input)) return input;
  return Buffer.from(input.buffer, input.byteOffset, input.byteLength);
}

/** toBytes for an optional bound. */
export function toBytesOrUndefined(input: BytesInput | undefined): Buffer | undefined {
  return input === undefined ? undefined : toBytes(input);
}
