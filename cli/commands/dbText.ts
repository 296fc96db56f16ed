/**
 * How the database commands (cli/commands/db.ts) read keys and values from the command line and
 * print them back: one codec per invocation, chosen by `--hex` and `--key SPEC`. With `--server`
 * the same codec formats what the server sent (in hex on the wire), so both modes print alike.
 *
 * Contract:
 * - keys: with `--key SPEC` they are typed as text and encoded through the import key spec
 *   (src/ingest/rows/keySpec.ts), so `--key id:int64` takes `42` and prints `42`; else with `--hex`
 *   they are hex digits (an optional `0x`, an even count); else their UTF-8 bytes.
 * - values: hex with `--hex`, else UTF-8 bytes.
 * - JSON never loses a byte: a key or value that cannot be shown exactly as text (not valid
 *   UTF-8, or a key the spec did not make) is printed as a `keyHex` / `valueHex` field (lowercase
 *   hex, no `0x`) instead of `key` / `value`. With `--hex` the hex fields are always used.
 * - human output shows text when it is printable and exact, else `0x`-prefixed hex; it is for
 *   people, and scripts should use `--json`.
 * Bad hex or a key the spec cannot encode is a usage error (IngestError 'USAGE' / 'BAD_INPUT',
 * exit code 2) naming the argument. The key spec comes parsed (one KeySpec per command run, the
 * same object the import uses); `DbTextCodec.forOptions` parses a command's --key text.
 */
import { isUtf8 } from 'buffer';
import { IngestError } from '../../src/util/errors';
import { KeySpec } from '../../src/ingest/rows/keySpec';

export interface DbTextOptions {
  /** Keys (unless `keySpec` is given) and values in hex. */
  hex?: boolean;
  /** The `--key` spec, parsed (KeySpec.parse of e.g. `id:int64` or `sym,ts:int64`). */
  keySpec?: KeySpec;
}

const HEX_TEXT = /^(?:0x)?((?:[0-9a-fA-F]{2})*)$/;
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\x00-\x1f\x7f]/;

/** The bytes of `text` read as hex; `what` names the argument in the error. */
export function parseHexArgument(text: string, what: string): Buffer {
  const m = HEX_TEXT.exec(text);
  if (m === null)
    throw new IngestError('USAGE', `${what} "${text}" is not hex: expected an even number of digits 0-9a-f, optionally after 0x`);
  return Buffer.from(m[1], 'hex');
}

/** Text for people: the bytes as UTF-8 when that is exact and printable, else 0x-prefixed hex. */
export function displayBytes(b: Buffer): string {
  if (isUtf8(b)) {
    const s = b.toString('utf8');
    if (!CONTROL_CHARS.test(s)) return s;
  }
  return `0x${b.toString('hex')}`;
}

export type KeyFields = { key: string } | { keyHex: string };
export type ValueFields = { value: string } | { valueHex: string };

export class DbTextCodec {
  private readonly hex: boolean;
  private readonly spec: KeySpec | null;

  constructor(opts: DbTextOptions) {
    this.hex = opts.hex === true;
    this.spec = opts.keySpec ?? null;
  }

  /** The codec of a command's `--hex` and `--key SPEC` options (the spec text parsed here). */
  static forOptions(o: { hex?: boolean; key?: string }): DbTextCodec {
    return new DbTextCodec({ hex: o.hex, keySpec: o.key === undefined ? undefined : KeySpec.parse(o.key) });
  }

  /** A key argument (`what` is its name for messages: "key", "--from", ...). */
  parseKey(text: string, what: string): Buffer {
    if (this.spec !== null) {
      try {
        return this.spec.encodeText(text);
      } catch (err) {
        if (err instanceof IngestError) throw new IngestError('BAD_INPUT', `${what} "${text}": ${err.message}`);
        throw err;
      }
    }
    return this.hex ? parseHexArgument(text, what) : Buffer.from(text, 'utf8');
  }

  parseValue(text: string): Buffer {
    return this.hex ? parseHexArgument(text, 'value') : Buffer.from(text, 'utf8');
  }

  /** The key as JSON fields: `key` when text shows it exactly, else `keyHex`. */
  keyFields(key: Buffer): KeyFields {
    if (this.spec !== null) {
      const text = this.specText(key);
      return text === null ? { keyHex: key.toString('hex') } : { key: text };
    }
    if (!this.hex && isUtf8(key)) return { key: key.toString('utf8') };
    return { keyHex: key.toString('hex') };
  }

  valueFields(value: Buffer): ValueFields {
    if (!this.hex && isUtf8(value)) return { value: value.toString('utf8') };
    return { valueHex: value.toString('hex') };
  }

  displayKey(key: Buffer): string {
    if (this.spec !== null) return this.specText(key) ?? `0x${key.toString('hex')}`;
    return this.hex ? `0x${key.toString('hex')}` : displayBytes(key);
  }

  displayValue(value: Buffer): string {
    return this.hex ? `0x${value.toString('hex')}` : displayBytes(value);
  }

  /**
   * The key as text `--key SPEC` reads back to the same bytes (`a,5`, or a JSON array when a
   * component holds a comma), or null when there is none: a key the spec did not make, or a
   * bytes component that is not printable text.
   */
  private specText(key: Buffer): string | null {
    const spec = this.spec as KeySpec;
    let parts: string[];
    try {
      parts = spec.decode(key);
    } catch {
      return null;
    }
    const text = !spec.isComposite
      ? parts[0]
      : parts.some((p) => p.includes(',')) || parts[0].startsWith('[')
        ? JSON.stringify(parts)
        : parts.join(',');
    try {
      // decode() shows unprintable bytes as 0x-hex; only an exact round trip is the key.
      return spec.encodeText(text).equals(key) ? text : null;
    } catch {
      return null;
    }
  }
}
