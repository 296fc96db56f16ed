/**
 * Keys and values as raw bytes in URLs and JSON, never through a lossy text decoding.
 *
 * - A key in a path (`/v1/kv/{key}`) and a query value are percent-encoded bytes (RFC 3986):
 *   `%XX` is the byte 0xXX, any other character stands for its UTF-8 bytes. So `%FF%00` is the
 *   two bytes ff 00, which decodeURIComponent would refuse. In a query, `+` is a space (HTML form
 *   encoding; send a plus as %2B). A `%` not followed by two hex digits is a 400 naming where.
 * - With `?hex=1` the decoded text is itself read as hex digits (an even count), for clients that
 *   would rather not percent-encode.
 * - In JSON (batch operations in, scan entries out) bytes are UTF-8 strings, or with hex=1 hex
 *   strings; output uses `key`/`value` when the bytes are exact UTF-8 and `keyHex`/`valueHex`
 *   otherwise (and always with hex=1), the CLI's `--json` rule (cli/commands/dbText.ts).
 */
import { isUtf8 } from 'buffer';
import { badRequest, tooLarge } from './httpErrors';

const HEX_DIGITS = /^(?:[0-9a-fA-F]{2})*$/;

function hexValue(code: number): number {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  if (code >= 0x41 && code <= 0x46) return code - 0x37;
  if (code >= 0x61 && code <= 0x66) return code - 0x57;
  return -1;
}

/** The bytes `text` percent-encodes; `what` names it in errors ("the key", "query parameter from"). */
export function percentDecode(text: string, what: string, plusIsSpace = false): Buffer {
  if (text.indexOf('%') < 0 && !(plusIsSpace && text.indexOf('+') >= 0)) return Buffer.from(text, 'utf8');
  const out = Buffer.allocUnsafe(Buffer.byteLength(text, 'utf8'));
  let n = 0;
  let literalStart = 0;
  const flushLiteral = (end: number): void => {
    if (end > literalStart) n += out.write(text.slice(literalStart, end), n, 'utf8');
  };
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x25 /* % */) {
      const hi = i + 2 < text.length ? hexValue(text.charCodeAt(i + 1)) : -1;
      const lo = hi >= 0 ? hexValue(text.charCodeAt(i + 2)) : -1;
      if (lo < 0) throw badRequest(`invalid percent-encoding in ${what} at character ${i}: "%" must be followed by two hex digits`);
      flushLiteral(i);
      out[n++] = (hi << 4) | lo;
      i += 2;
      literalStart = i + 1;
    } else if (c === 0x2b /* + */ && plusIsSpace) {
      flushLiteral(i);
      out[n++] = 0x20;
      literalStart = i + 1;
    }
  }
  flushLiteral(text.length);
  return out.subarray(0, n);
}

/** Reads decoded text as hex (hex=1). */
export function hexDecode(bytes: Buffer, what: string): Buffer {
  const text = bytes.toString('latin1');
  if (!HEX_DIGITS.test(text)) throw badRequest(`${what} is not hex (hex=1): expected an even number of digits 0-9a-f`);
  return Buffer.from(text, 'hex');
}

/** A key from a path segment or query value: decoded, hex-read when asked, non-empty and within the limit. */
export function keyOf(encoded: Buffer, hex: boolean, what: string, maxKeyBytes: number): Buffer {
  const key = hex ? hexDecode(encoded, what) : encoded;
  if (key.length === 0) throw badRequest(`${what} is empty`);
  if (key.length > maxKeyBytes) throw tooLarge(`${what} is ${key.length} bytes, over the limit of ${maxKeyBytes}`);
  return key;
}

/** A JSON string field as bytes: UTF-8, or hex with hex=1. */
export function bytesOfJsonString(value: unknown, hex: boolean, what: string): Buffer {
  if (typeof value !== 'string') throw badRequest(`${what} must be a string${hex ? ' of hex digits' : ''}`);
  return hex ? hexDecode(Buffer.from(value, 'latin1'), what) : Buffer.from(value, 'utf8');
}

/** `{key|keyHex: ...}` for output: text only when exact. */
export function jsonBytesField(name: 'key' | 'value' | 'from' | 'to', bytes: Buffer, hex: boolean): Record<string, string> {
  if (!hex && isUtf8(bytes)) return { [name]: bytes.toString('utf8') };
  return { [`${name}Hex`]: bytes.toString('hex') };
}

/**
 * The query of a raw request URL as name → decoded bytes. A repeated name is a 400 (which one
 * would win is not obvious to a client); names are ASCII option names and compared as text.
 */
export function parseQuery(rawQuery: string, maxParameters: number): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  if (rawQuery === '') return out;
  const parts = rawQuery.split('&');
  if (parts.length > maxParameters) throw badRequest(`too many query parameters (${parts.length}; at most ${maxParameters})`);
  for (const part of parts) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    const name = percentDecode(eq < 0 ? part : part.slice(0, eq), 'a query parameter name', true).toString('utf8');
    const value = eq < 0 ? Buffer.alloc(0) : percentDecode(part.slice(eq + 1), `query parameter ${name}`, true);
    if (out.has(name)) throw badRequest(`query parameter ${name} is given twice`);
    out.set(name, value);
  }
  return out;
}
