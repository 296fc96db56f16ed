/**
 * Values read back as columns (src/ingest/rows/valueColumns.ts): csv splits exactly what
 * RowEncoder's csv wrote, for randomized fields holding delimiters (one byte and longer, ones
 * that overlap themselves), quotes, CR, LF, empty fields and non-ASCII, whether the fields came
 * from the fast tokenizer (quoted, doubled quotes still in them) or as csv-parse hands them over
 * (already unescaped, side by side); json gives its names and values in the order written; raw
 * is flagged lossy; a value that does not parse gives the problem, not an exception.
 */
import { CsvTokenizer, RecordSink } from '../../../src/ingest/csv/csvTokenizer';
import { KeySpec, parseKeySpecText } from '../../../src/ingest/rows/keySpec';
import { RowEncoder } from '../../../src/ingest/rows/rowEncoder';
import { splitCsvValue, splitJsonValue, splitValue } from '../../../src/ingest/rows/valueColumns';
import { ValueEncoding, ValueFormat, ValueSyntax, valueEncodingOf } from '../../../src/ingest/rows/valueEncoding';
import { mulberry32 } from '../../../src/util/random';

function encoder(fieldCount: number, format: ValueFormat, syntax?: ValueSyntax, columns: string[] | null = null): RowEncoder {
  const keySpec = new KeySpec(parseKeySpecText('1'), columns, fieldCount);
  const valueFields = Array.from({ length: fieldCount - 1 }, (_, i) => i + 1);
  return new RowEncoder({
    columnNames: columns,
    fieldCount,
    keySpec,
    valueFields,
    valueFormat: format,
    delimiter: ',',
    valueSyntax: syntax,
  });
}

/** The value `enc` writes for the CSV line (tokenized by the fast tokenizer, quote "). */
function valueOfLine(enc: RowEncoder, line: string): Buffer {
  const src = Buffer.from(`${line}\n`, 'utf8');
  let value: Buffer | null = null;
  const sink: RecordSink = {
    record(buf, fieldCount, starts, ends, unescape, _line, recordStart, recordEnd) {
      const out = Buffer.alloc(enc.boundBytes(recordEnd - recordStart));
      expect(enc.encode(buf, fieldCount, starts, ends, unescape, 0x22, out, 0)).toBe(true);
      value = Buffer.from(out.subarray(enc.keyBytes, enc.keyBytes + enc.valueBytes));
    },
    badRecord(_line, reason) {
      throw new Error(`bad record: ${reason}`);
    },
  };
  new CsvTokenizer({ delimiter: 0x2c, quote: 0x22, comment: -1 }).tokenize(src, 0, src.length, true, sink);
  if (value === null) throw new Error('no record');
  return value;
}

/** The value `enc` writes for fields handed over as csv-parse does: unescaped, side by side, no delimiters. */
function valueOfFields(enc: RowEncoder, fields: Buffer[]): Buffer {
  const src = Buffer.concat(fields);
  const starts = new Int32Array(fields.length);
  const ends = new Int32Array(fields.length);
  let p = 0;
  fields.forEach((f, i) => {
    starts[i] = p;
    p += f.length;
    ends[i] = p;
  });
  const out = Buffer.alloc(enc.boundBytes(src.length));
  expect(enc.encode(src, fields.length, starts, ends, new Uint8Array(fields.length), 0x22, out, 0)).toBe(true);
  expect(enc.keyBytes + enc.valueBytes).toBeLessThanOrEqual(out.length);
  return Buffer.from(out.subarray(enc.keyBytes, enc.keyBytes + enc.valueBytes));
}

const ALPHABET = ['x', 'y', ' ', ',', '"', "'", '\r', '\n', '|', 'a', 'b', '§', 'é', '€', ';'];

function randomField(rnd: () => number): string {
  return Array.from({ length: Math.floor(rnd() * 8) }, () => ALPHABET[Math.floor(rnd() * ALPHABET.length)]).join('');
}

function quoted(s: string): string {
  return `"${s.split('"').join('""')}"`;
}

describe('csv round trip', () => {
  test('randomized fields through the fast tokenizer, the input syntax and others', () => {
    const rnd = mulberry32(2024);
    const syntaxes: ValueSyntax[] = [
      { delimiter: ',', quote: '"' },
      { delimiter: ';', quote: "'" },
      { delimiter: '||', quote: '"' },
      { delimiter: 'ab', quote: '"' },
      { delimiter: '§', quote: '`' },
    ];
    for (const syntax of syntaxes) {
      const enc = encoder(4, 'csv', syntax);
      for (let i = 0; i < 400; i++) {
        const fields = [randomField(rnd), randomField(rnd), randomField(rnd)];
        // Quote some fields in the input (those that must be, and a few more).
        const line = ['k', ...fields.map((f) => (/[,"\r\n]/.test(f) || rnd() < 0.3 ? quoted(f) : f))].join(',');
        const got = splitCsvValue(valueOfLine(enc, line), syntax);
        expect(got).toEqual(fields.map((f) => Buffer.from(f, 'utf8')));
      }
    }
  });

  test('randomized fields as csv-parse hands them over (unescaped), delimiters of one and more bytes', () => {
    const rnd = mulberry32(77);
    for (const syntax of [
      { delimiter: ',', quote: '"' },
      { delimiter: '||', quote: '"' },
      { delimiter: 'aba', quote: '"' },
    ]) {
      const enc = encoder(5, 'csv', syntax);
      for (let i = 0; i < 400; i++) {
        const fields = Array.from({ length: 4 }, () => Buffer.from(randomField(rnd), 'utf8'));
        const got = splitCsvValue(valueOfFields(enc, [Buffer.from('k'), ...fields]), syntax);
        expect(got).toEqual(fields);
      }
    }
  });

  test('a value the csv encoding did not write is a problem in words, not an exception', () => {
    const syntax = { delimiter: ',', quote: '"' };
    expect(splitCsvValue(Buffer.from('"open'), syntax)).toMatch(/never closed/);
    expect(splitCsvValue(Buffer.from('"a"b,c'), syntax)).toMatch(/after the closing quote at offset 3/);
    expect(splitCsvValue(Buffer.from('a"b'), syntax)).toMatch(/quote inside an unquoted field/);
    expect(splitCsvValue(Buffer.from(''), syntax)).toEqual([Buffer.alloc(0)]);
    expect(splitCsvValue(Buffer.from('a,'), syntax)).toEqual([Buffer.from('a'), Buffer.alloc(0)]);
  });
});

describe('splitValue', () => {
  const csv: ValueEncoding = { format: 'csv', delimiter: ',', quote: '"', columns: ['name', 'city'] };

  test('names: the recorded columns when the counts agree, else positions', () => {
    expect(splitValue(Buffer.from('"Kim, A",Oslo'), csv)).toEqual({
      columns: [
        { name: 'name', value: Buffer.from('Kim, A') },
        { name: 'city', value: Buffer.from('Oslo') },
      ],
      problem: null,
      lossy: false,
    });
    expect(splitValue(Buffer.from('a,b,c'), csv).columns?.map((c) => c.name)).toEqual(['1', '2', '3']);
    expect(splitValue(Buffer.from('"x'), csv)).toMatchObject({ columns: null, problem: expect.stringMatching(/never closed/) });
  });

  test('raw: split at every delimiter and flagged lossy', () => {
    const raw: ValueEncoding = { format: 'raw', delimiter: ',', quote: null, columns: ['name', 'city'] };
    const split = splitValue(Buffer.from('Kim, A,Oslo'), raw);
    expect(split.lossy).toBe(true);
    expect(split.columns?.map((c) => [c.name, c.value.toString()])).toEqual([
      ['1', 'Kim'],
      ['2', ' A'],
      ['3', 'Oslo'],
    ]);
  });

  test('json: its own names and values in the order written, bytes exact', () => {
    const enc = encoder(3, 'json', undefined, ['k', '4', '2']);
    const value = Buffer.concat([Buffer.from('{"4":"x\\u0001\\"y","2":"'), Buffer.from([0xff, 0xc3, 0xa9]), Buffer.from('"}')]);
    expect(splitJsonValue(value)).toEqual({ names: ['4', '2'], fields: [Buffer.from('x\u0001"y'), Buffer.from([0xff, 0xc3, 0xa9])] });
    const written = valueOfLine(enc, 'k,"a,""b""",é');
    const json: ValueEncoding = { format: 'json', delimiter: null, quote: null, columns: ['4', '2'] };
    expect(splitValue(written, json).columns?.map((c) => [c.name, c.value.toString()])).toEqual([
      ['4', 'a,"b"'],
      ['2', 'é'],
    ]);
    expect(splitJsonValue(Buffer.from('{"a":1}'))).toMatch(/not a JSON object of string values/);
  });

  test('no value columns: an empty value is no columns', () => {
    expect(splitValue(Buffer.alloc(0), { ...csv, columns: [] }).columns).toEqual([]);
  });

  test('the encoding an import reports: names, else 1-based input positions; csv syntax, raw delimiter, json neither', () => {
    const bound = { columnNames: ['id', 'name', 'city'], valueFields: [2, 1] };
    expect(valueEncodingOf('csv', { delimiter: ';', quote: "'" }, ',', bound)).toEqual({
      format: 'csv',
      delimiter: ';',
      quote: "'",
      columns: ['city', 'name'],
    });
    expect(valueEncodingOf('raw', undefined, '|', { columnNames: null, valueFields: [1, 2] })).toEqual({
      format: 'raw',
      delimiter: '|',
      quote: null,
      columns: ['2', '3'],
    });
    expect(valueEncodingOf('json', undefined, ',', null)).toEqual({ format: 'json', delimiter: null, quote: null, columns: null });
  });
});
