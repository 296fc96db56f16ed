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
 * - columns (`get`/`scan --as-columns`, a value split by src/ingest/rows/valueColumns.ts): JSON
 *   `"columns": {"name": "text", ...}`, or `"columnsHex": {"name": "hex", ...}` when a column is
 *   not UTF-8 (always with `--hex`), and `"lossy"` (raw values: split at every delimiter); a value
 *   that does not split gives `"columns": null`, `"error"` and the value's own field. Human
 *   output: one `name=value` line per column, each value shown as `displayValue` shows values.
 * - U+FFFD: Node decodes the command line as UTF-8 and turns every byte that is not valid UTF-8
 *   (0xff, say) into U+FFFD, the replacement character, before we see it; the bytes the user
 *   meant are lost. A key or value given as text that holds U+FFFD is therefore refused (USAGE,
 *   exit 2) with a pointer to --hex, rather than written or looked up as the bytes EF BF BD.
 *   (A U+FFFD typed on purpose cannot be told apart; --hex efbfbd says it.)
 * Bad hex or a key the spec cannot encode is a usage error (IngestError 'USAGE' / 'BAD_INPUT',
 * exit code 2) naming the argument. The key spec comes parsed (one KeySpec per command run, the
 * same object the import uses); `DbTextCodec.forOptions` parses a command's --key text.
 */
import { isUtf8 } from 'buffer';
import { IngestError } from '../../src/util/errors';
import { KeySpec } from '../../src/ingest/rows/keySpec';
import { ValueColumns } from '../../src/ingest/rows/valueColumns';

export interface DbTextOptions {
  /** Keys (unless `keySpec` is given) and values in hex. */
  hex?: boolean;
  /** The `--key` spec, parsed (KeySpec.parse of e.g. `id:int64` or `sym,ts:int64`). */
  keySpec?: KeySpec;
}

const HEX_TEXT = /^(?:0x)?((?:[0-9a-fA-F]{2})*)$/;
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\x00-\x1f\x7f]/;
const REPLACEMENT_CHARACTER = '\ufffd';

/** The bytes of `text` read as hex; `what` names the argument in the error. */
export function parseHexArgument(text: string, what: string): Buffer {
  const m = HEX_TEXT.exec(text);
  if (m === null)
    throw new IngestError('USAGE', `${what} "${text}" is not hex: expected an even number of digits 0-9a-f, optionally after 0x`);
  return Buffer.from(m[1], 'hex');
}

/**
 * Refuses an argument given as text that holds U+FFFD: what Node makes of a byte that is not
 * valid UTF-8 on the command line (see the module comment). `what` names the argument.
 */
export function refuseReplacementCharacter(text: string, what: string): void {
  const at = text.indexOf(REPLACEMENT_CHARACTER);
  if (at < 0) return;
  throw new IngestError(
    'USAGE',
    `${what} ${JSON.stringify(text)} holds U+FFFD (at character ${at}), which is what a byte that is not valid UTF-8 (such as 0xff) becomes on the command line: the bytes meant cannot be known. Use --hex and give it as hex digits (ff00 for the bytes ff 00; efbfbd for U+FFFD itself)`,
  );
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
export type ColumnFields =
  | { columns: Record<string, string>; lossy: boolean }
  | { columnsHex: Record<string, string>; lossy: boolean }
  | ({ columns: null; lossy: boolean; error: string } & ValueFields);

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
    if (this.spec !== null || !this.hex) refuseReplacementCharacter(text, what);
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
    if (!this.hex) refuseReplacementCharacter(text, 'value');
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

  /** A value split into columns, as JSON fields (see the module comment). */
  columnFields(value: Buffer, split: ValueColumns): ColumnFields {
    const { columns, lossy } = split;
    if (columns === null) return { columns: null, lossy, error: split.problem ?? 'not split', ...this.valueFields(value) };
    if (!this.hex && columns.every((c) => isUtf8(c.value)))
      return { columns: Object.fromEntries(columns.map((c) => [c.name, c.value.toString('utf8')])), lossy };
    return { columnsHex: Object.fromEntries(columns.map((c) => [c.name, c.value.toString('hex')])), lossy };
  }

  /** A value split into columns, for people: `name=value` per column. */
  columnLines(value: Buffer, split: ValueColumns): string[] {
    if (split.columns === null) return [`${this.displayValue(value)} (not split into columns: ${split.problem ?? 'not split'})`];
    return split.columns.map((c) => `${c.name}=${this.displayValue(c.value)}`);
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
