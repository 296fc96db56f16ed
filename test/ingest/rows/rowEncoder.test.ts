/**
 * Row encoding (src/ingest/rows/rowEncoder.ts), on records as the CSV tokenizer hands them over:
 * the key bytes of each documented key encoding, the `csv`, `raw` and `json` value formats of
 * docs/import.md ("Values"), the value columns `--value` selects, the errors of a record the
 * encoder refuses, and that an encoding never writes past the bound its caller reserved.
 */
import { CsvTokenizer, RecordSink } from '../../../src/ingest/csv/csvTokenizer';
import { KeySpec, parseKeySpecText } from '../../../src/ingest/rows/keySpec';
import { RowEncoder, ValueFormat, resolveValueColumns } from '../../../src/ingest/rows/rowEncoder';
import { ValueSyntax } from '../../../src/ingest/rows/valueEncoding';
import { IngestError } from '../../../src/util/errors';
import { mulberry32 } from '../../../src/util/random';

const COMMA = 0x2c;
const QUOTE = 0x22;

/** One record as the tokenizer reports it (arrays copied: the tokenizer reuses its own). */
interface Tokenized {
  src: Buffer;
  fieldCount: number;
  starts: Int32Array;
  ends: Int32Array;
  unescape: Uint8Array;
  recordBytes: number;
}

function tokenize(line: string): Tokenized {
  const src = Buffer.from(`${line}\n`, 'utf8');
  const got: Tokenized[] = [];
  const sink: RecordSink = {
    record(buf, fieldCount, starts, ends, unescape, _line, recordStart, recordEnd) {
      got.push({
        src: buf,
        fieldCount,
        starts: Int32Array.from(starts.subarray(0, fieldCount)),
        ends: Int32Array.from(ends.subarray(0, fieldCount)),
        unescape: Uint8Array.from(unescape.subarray(0, fieldCount)),
        recordBytes: recordEnd - recordStart,
      });
    },
    badRecord(_line, reason) {
      throw new Error(`bad record: ${reason}`);
    },
  };
  new CsvTokenizer({ delimiter: COMMA, quote: QUOTE, comment: -1 }).tokenize(src, 0, src.length, true, sink);
  expect(got).toHaveLength(1);
  return got[0];
}

interface EncoderSetup {
  key: string;
  columns: string[] | null;
  fieldCount: number;
  value?: string;
  format?: ValueFormat;
  valueSyntax?: ValueSyntax;
}

function encoderFor(setup: EncoderSetup): RowEncoder {
  const keySpec = new KeySpec(parseKeySpecText(setup.key), setup.columns, setup.fieldCount);
  return new RowEncoder({
    columnNames: setup.columns,
    fieldCount: setup.fieldCount,
    keySpec,
    valueFields: resolveValueColumns(setup.value, setup.columns, setup.fieldCount, keySpec.fieldIndexes),
    valueFormat: setup.format ?? 'raw',
    delimiter: ',',
    valueSyntax: setup.valueSyntax,
  });
}

const GUARD = 0xa5;

/**
 * Encodes a CSV line at an offset into a guarded buffer: the key and value it wrote, and a check
 * that nothing before the offset or past the reserved bound was touched.
 */
function encodeLine(enc: RowEncoder, line: string): { key: Buffer; value: Buffer } {
  const t = tokenize(line);
  const pos = 5;
  const bound = enc.boundBytes(t.recordBytes);
  const out = Buffer.alloc(pos + bound + 16, GUARD);
  const ok = enc.encode(t.src, t.fieldCount, t.starts, t.ends, t.unescape, QUOTE, out, pos);
  if (!ok) throw new Error(`refused: ${enc.error}`);
  expect(enc.keyBytes + enc.valueBytes).toBeLessThanOrEqual(bound);
  expect(out.subarray(0, pos).every((b) => b === GUARD)).toBe(true);
  expect(out.subarray(pos + bound).every((b) => b === GUARD)).toBe(true);
  return {
    key: Buffer.from(out.subarray(pos, pos + enc.keyBytes)),
    value: Buffer.from(out.subarray(pos + enc.keyBytes, pos + enc.keyBytes + enc.valueBytes)),
  };
}

describe('keys', () => {
  test('one bytes column: the field as it is, quotes removed and doubled quotes undone', () => {
    const enc = encoderFor({ key: '2', columns: null, fieldCount: 3 });
    expect(encodeLine(enc, 'x,plain key,y').key.toString()).toBe('plain key');
    expect(encodeLine(enc, 'x,"a ""quoted"", key",y').key.toString()).toBe('a "quoted", key');
  });

  test('int64: big-endian with the sign bit flipped; uint64: big-endian', () => {
    const signed = encoderFor({ key: 'id:int64', columns: ['id', 'v'], fieldCount: 2 });
    expect(encodeLine(signed, '-1,a').key.toString('hex')).toBe('7fffffffffffffff');
    expect(encodeLine(signed, '0,a').key.toString('hex')).toBe('8000000000000000');
    expect(encodeLine(signed, '+258,a').key.toString('hex')).toBe('8000000000000102');
    expect(encodeLine(signed, '-9223372036854775808,a').key.toString('hex')).toBe('0000000000000000');
    const unsigned = encoderFor({ key: 'id:uint64', columns: ['id', 'v'], fieldCount: 2 });
    expect(encodeLine(unsigned, '18446744073709551615,a').key.toString('hex')).toBe('ffffffffffffffff');
    expect(encodeLine(unsigned, '258,a').key.toString('hex')).toBe('0000000000000102');
  });

  test('a tuple: bytes components escape 0x00 as 00 ff and end with 00 01; integers are their 8 bytes', () => {
    const enc = encoderFor({ key: 'name,n:int64', columns: ['name', 'n', 'v'], fieldCount: 3 });
    const { key } = encodeLine(enc, 'a\u0000b,1,v');
    expect(key.toString('hex')).toBe('6100ff62' + '0001' + '8000000000000001');
  });
});

describe('values', () => {
  test('raw: the value fields joined by the delimiter, unquoted, not re-quoted', () => {
    const enc = encoderFor({ key: '1', columns: null, fieldCount: 4 });
    expect(encodeLine(enc, 'k,one,two,three').value.toString()).toBe('one,two,three');
    expect(encodeLine(enc, 'k,"say ""hi""",,last').value.toString()).toBe('say "hi",,last');
    // A value field holding the delimiter is not re-quoted: raw is lossless only when none does.
    expect(encodeLine(enc, 'k,"a,b",c,d').value.toString()).toBe('a,b,c,d');
    expect(encodeLine(enc, 'k,a,"b,c",d').value.toString()).toBe('a,b,c,d');
  });

  test('raw: --value picks columns by name or position, in the order given', () => {
    const columns = ['id', 'name', 'price', 'note'];
    const enc = encoderFor({ key: 'id', columns, fieldCount: 4, value: 'note,2' });
    const { value } = encodeLine(enc, '7,widget,9.99,"on sale, today"');
    expect(value.toString()).toBe('on sale, today,widget');
  });

  test('csv: byte-identical to raw on rows whose value fields need no quoting', () => {
    const raw = encoderFor({ key: '1', columns: null, fieldCount: 5 });
    const csv = encoderFor({ key: '1', columns: null, fieldCount: 5, format: 'csv' });
    for (const line of ['k,one,two,three,4', 'k,"quoted",,"a;b",x', 'k,ünï,"",tab\there,"a b"']) {
      expect(encodeLine(csv, line).value).toEqual(encodeLine(raw, line).value);
    }
  });

  test('csv: a field holding the delimiter, the quote, CR or LF is quoted, its quotes doubled; the others copied', () => {
    const enc = encoderFor({ key: '1', columns: null, fieldCount: 4, format: 'csv' });
    expect(encodeLine(enc, 'k,"Kim, A",open,v1').value.toString()).toBe('"Kim, A",open,v1');
    expect(encodeLine(enc, 'k,"say ""hi""",,last').value.toString()).toBe('"say ""hi""",,last');
    expect(encodeLine(enc, 'k,"two\nlines","cr\rin",a\rb').value.toString()).toBe('"two\nlines","cr\rin","a\rb"');
    expect(encodeLine(enc, 'k,"""",x,""').value.toString()).toBe('"""",x,');
  });

  test("csv: the database's delimiter and quote when they are not the input's", () => {
    // Values joined by ; and quoted with ': the input's " is plain data there.
    const enc = encoderFor({ key: '1', columns: null, fieldCount: 4, format: 'csv', valueSyntax: { delimiter: ';', quote: "'" } });
    expect(encodeLine(enc, 'k,a,b,c').value.toString()).toBe('a;b;c');
    expect(encodeLine(enc, `k,"x;y","say ""hi""",it's`).value.toString()).toBe(`'x;y';say "hi";'it''s'`);
  });

  test('csv: a delimiter of 2+ bytes also quotes a field that a delimiter would start in and the next one finish', () => {
    const bars = encoderFor({ key: '1', columns: null, fieldCount: 4, format: 'csv', valueSyntax: { delimiter: '||', quote: '"' } });
    // "a|" then "||" reads "a|||b": the first "||" is inside, so "a|" is quoted; "|b" is not.
    expect(encodeLine(bars, 'k,a|,|b,c').value.toString()).toBe('"a|"|||b||c');
    expect(encodeLine(bars, 'k,a||b,x,y').value.toString()).toBe('"a||b"||x||y');
    const ab = encoderFor({ key: '1', columns: null, fieldCount: 3, format: 'csv', valueSyntax: { delimiter: 'ab', quote: '"' } });
    // "xa" then "ab" is "xaab": the first "ab" is where the field ends, so no quotes.
    expect(encodeLine(ab, 'k,xa,b').value.toString()).toBe('xaabb');
    expect(encodeLine(ab, 'k,xab,b').value.toString()).toBe('"xab"abb');
  });

  test('json: every value field a JSON string named by its column, escapes included, UTF-8 kept', () => {
    const enc = encoderFor({ key: 'id:int64', columns: ['id', 'name', 'note'], fieldCount: 3, format: 'json' });
    const { value } = encodeLine(enc, '1,"Zoë ""Z"" \\ back","tab\there\u0001"');
    expect(value.toString('utf8')).toBe('{"name":"Zoë \\"Z\\" \\\\ back","note":"tab\\there\\u0001"}');
    expect(JSON.parse(value.toString('utf8'))).toEqual({ name: 'Zoë "Z" \\ back', note: 'tab\there\u0001' });
  });

  test('json: without column names the fields are named by their 1-based positions', () => {
    const enc = encoderFor({ key: '2', columns: null, fieldCount: 3, format: 'json' });
    expect(JSON.parse(encodeLine(enc, 'a,key,c').value.toString())).toEqual({ '1': 'a', '3': 'c' });
    const none = encoderFor({ key: '1', columns: null, fieldCount: 1, format: 'json' });
    expect(encodeLine(none, 'only').value.toString()).toBe('{}');
  });

  test('json round-trips random fields, control bytes and quotes included, within the bound', () => {
    const r = mulberry32(31);
    const enc = encoderFor({ key: '1', columns: ['k', 'a', 'b'], fieldCount: 3, format: 'json' });
    const alphabet = ['x', ' ', '"', '\\', '\t', '\r', '\n', '\u0001', '\u001f', ',', 'é', '€'];
    for (let i = 0; i < 300; i++) {
      const field = (): string => Array.from({ length: Math.floor(r() * 12) }, () => alphabet[Math.floor(r() * alphabet.length)]).join('');
      const a = field();
      const b = field();
      const quoted = (s: string): string => `"${s.split('"').join('""')}"`;
      const { value } = encodeLine(enc, `k${i},${quoted(a)},${quoted(b)}`);
      expect(JSON.parse(value.toString('utf8'))).toEqual({ a, b });
    }
  });
});

describe('refused records and columns', () => {
  test('a record with the wrong number of fields, or a typed key that does not parse', () => {
    const enc = encoderFor({ key: 'id:int64', columns: ['id', 'v', 'w'], fieldCount: 3 });
    const short = tokenize('1,a');
    const out = Buffer.alloc(64);
    expect(enc.encode(short.src, short.fieldCount, short.starts, short.ends, short.unescape, QUOTE, out, 0)).toBe(false);
    expect(enc.error).toBe('expected 3 fields, got 2');
    const bad = tokenize('12x,a,b');
    expect(enc.encode(bad.src, bad.fieldCount, bad.starts, bad.ends, bad.unescape, QUOTE, out, 0)).toBe(false);
    expect(enc.error).toBe('key column id is not a valid int64: "12x"');
  });

  test('--value columns: all but the key by default, and usage errors naming the column', () => {
    expect(resolveValueColumns(undefined, null, 4, [1])).toEqual([0, 2, 3]);
    expect(resolveValueColumns('', null, 4, [1])).toEqual([]);
    expect(resolveValueColumns('3,1', ['a', 'b', 'c'], 3, [0])).toEqual([2, 0]);
    const usage = (f: () => unknown, message: RegExp): void => {
      let err: unknown;
      try {
        f();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(IngestError);
      expect((err as IngestError).code).toBe('USAGE');
      expect((err as IngestError).message).toMatch(message);
    };
    usage(() => resolveValueColumns('5', null, 4, [0]), /--value column 5 is outside 1\.\.4/);
    usage(() => resolveValueColumns('0', null, 4, [0]), /--value column 0 is outside 1\.\.4/);
    usage(() => resolveValueColumns('price', null, 4, [0]), /names column "price" but the input has no header/);
    usage(() => resolveValueColumns('price', ['id', 'name'], 2, [0]), /"price" is not among the columns: id, name/);
  });
});
