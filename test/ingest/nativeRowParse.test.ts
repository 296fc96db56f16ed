/**
 * The native CSV fast path (native/rowParse.c, through RowSink.takeSimpleRecords and
 * SortBuffer.parseRows) against the JavaScript one it stands in for: the same inputs go through
 * a RowSink with the bulk path and through the same kind of sink without it, and every entry
 * (key, value, source, line), every bad row, the row count and every spill must agree. The
 * inputs mix what the native path takes with everything it must leave to JavaScript: quotes,
 * empty, CR-led and comment lines, wrong field counts, integer keys out of range or malformed,
 * a full buffer, and a range end (stopAt) inside the window. Both value formats the native path
 * serves run: raw, and csv, whose quoting the native path never has to do (it refuses quotes, and
 * with csv every CR but the line end's), on inputs that mix such records with simple ones.
 */
import { CsvTokenizer, RecordSink } from '../../src/ingest/csv/csvTokenizer';
import { LayoutPlan, RowSink } from '../../src/ingest/parse/rowSink';
import { parseKeySpecText } from '../../src/ingest/rows/keySpec';
import { SortBuffer } from '../../src/ingest/sort/sortBuffer';
import { nativeImport } from '../../src/ingest/nativeImport';
import { mulberry32 } from '../../src/util/random';
import { describeIfNative } from '../support/native';
import { ValueFormat } from '../../src/ingest/rows/valueEncoding';

interface Entry {
  key: string;
  value: string;
  source: number;
  line: number;
}

interface Outcome {
  spills: Entry[][];
  badRows: { line: number; reason: string; text: string }[];
  rows: number;
  bulkTaken: number;
  stoppedAt: number;
}

const LF = 0x0a;
/** Room left in each window after its data: must never be read as input. */
const WINDOW_SLACK_BYTES = 64;

function entriesOf(buffer: SortBuffer): Entry[] {
  const out: Entry[] = [];
  for (let e = 0; e < buffer.count; e++) {
    const o = buffer.offset[e];
    const k = buffer.keyLength[e];
    out.push({
      key: buffer.arena.toString('hex', o, o + k),
      value: buffer.arena.toString('latin1', o + k, o + k + buffer.valueLength[e]),
      source: buffer.source[e],
      line: buffer.line[e],
    });
  }
  return out;
}

interface RunSpec {
  text: string;
  plan: LayoutPlan;
  memoryLimitBytes: number;
  /** Bytes the input arrives in, per tokenize call. */
  chunkBytes: number;
  /** Input offset records must start before (a parse range's end), or Infinity. */
  stopAt: number;
  bulk: boolean;
  /** The input's quote byte (default 0x22); -1: quoting disabled. */
  quote?: number;
}

/** Runs `text` through a tokenizer into a RowSink over a SortBuffer whose window holds the input. */
function run(spec: RunSpec): Outcome {
  const data = Buffer.from(spec.text, 'latin1');
  const windowBytes = data.length + WINDOW_SLACK_BYTES;
  const buffer = new SortBuffer(spec.memoryLimitBytes, windowBytes, 1 << 16);
  const outcome: Outcome = { spills: [], badRows: [], rows: 0, bulkTaken: 0, stoppedAt: 0 };
  const rowSink = new RowSink(
    spec.plan,
    null,
    buffer,
    spec.quote ?? 0x22,
    () => {
      outcome.spills.push(entriesOf(buffer));
      buffer.clear();
    },
    1 << 20,
    1 << 20,
    (row) => {
      throw new Error(`too many bad rows at ${row.line}`);
    },
    (source) => `source ${source}`,
  );
  rowSink.source = 7;
  rowSink.expectHeader = spec.plan.header;
  const sink: RecordSink = spec.bulk
    ? rowSink
    : {
        record: (...args) => rowSink.record(...args),
        badRecord: (...args) => rowSink.badRecord(...args),
      };
  if (spec.bulk) {
    const take = rowSink.takeSimpleRecords.bind(rowSink);
    rowSink.takeSimpleRecords = (...args) => {
      const taken = take(...args);
      outcome.bulkTaken += taken;
      return taken;
    };
  }
  // The window is the start of the arena (as in the import); garbage LFs follow the data.
  buffer.arena.fill(LF, 0, windowBytes);
  const tokenizer = new CsvTokenizer({ delimiter: 0x2c, quote: spec.quote ?? 0x22, comment: 0x23 });
  let start = 0;
  let end = 0;
  for (;;) {
    const take = Math.min(spec.chunkBytes, data.length - end);
    data.copy(buffer.arena, end, end, end + take);
    end += take;
    const eof = end >= data.length;
    start = tokenizer.tokenize(buffer.arena, start, end, eof, sink, spec.stopAt);
    if (eof || start >= spec.stopAt) break;
  }
  outcome.spills.push(entriesOf(buffer));
  outcome.badRows = rowSink.badRows.map((r) => ({ line: r.line, reason: r.reason, text: r.text }));
  outcome.rows = rowSink.rows;
  outcome.stoppedAt = start;
  return outcome;
}

function plan(key: string, value: string | undefined, header: boolean, valueFormat: ValueFormat = 'raw'): LayoutPlan {
  return { keyRefs: parseKeySpecText(key), valueSpec: value, valueFormat, columns: null, header, delimiter: ',' };
}

const INT_TEXTS = [
  '0',
  '123',
  '-5',
  '+7',
  '-0',
  '007',
  '9223372036854775807',
  '9223372036854775808',
  '-9223372036854775808',
  '-9223372036854775809',
  '18446744073709551615',
  '18446744073709551616',
  '99999999999999999999',
  '000000000000000000001',
  '0000000000000000000001',
  '',
  '12a',
  '+',
  '-',
  ' 1',
];

/** A random input of `lines` lines over `fields` columns: mostly simple records, with every kind the native path leaves. */
function randomText(seed: number, lines: number, fields: number, header: boolean): string {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const out: string[] = header ? [Array.from({ length: fields }, (_, i) => `c${i}`).join(',')] : [];
  for (let i = 0; i < lines; i++) {
    const r = rnd();
    const row = Array.from({ length: fields }, (_, f) => (f < 2 ? pick(INT_TEXTS.slice(0, 11)) : `v${Math.floor(rnd() * 1e6)}`));
    if (r < 0.04) out.push('');
    else if (r < 0.06) out.push('\r');
    else if (r < 0.08) out.push(`#comment,${i}`);
    else if (r < 0.12) out.push(row.map((v, f) => (f === fields - 1 ? `"q,${v}"` : v)).join(','));
    else if (r < 0.15) out.push(row.slice(1).join(','));
    else if (r < 0.18) out.push([...row, 'extra'].join(','));
    else if (r < 0.26) out.push([pick(INT_TEXTS), pick(INT_TEXTS), ...row.slice(2)].join(','));
    else if (r < 0.3) out.push(`${row.join(',')}\r`);
    else out.push(row.join(','));
  }
  return `${out.join('\n')}${rnd() < 0.5 ? '\n' : ''}`;
}

/** Runs `spec` by the JavaScript path and by the native one, and checks they agree on every entry, bad row and position. */
function runBothWays(spec: Omit<RunSpec, 'bulk'>): { js: Outcome; native: Outcome } {
  const js = run({ ...spec, bulk: false });
  const native = run({ ...spec, bulk: true });
  expect(native.spills).toEqual(js.spills);
  expect(native.badRows).toEqual(js.badRows);
  expect(native.rows).toBe(js.rows);
  expect(native.stoppedAt).toBe(js.stoppedAt);
  return { js, native };
}

describeIfNative('native CSV fast path against the JavaScript one', () => {
  const layouts: [string, string | undefined][] = [
    ['1:int64', undefined],
    ['2:uint64', undefined],
    ['3:bytes', undefined],
    ['1:int64', '4,3,5'],
    ['2:int64', '1'],
  ];

  it.each(layouts)('agrees entry for entry with key %s, value %s', (key, value) => {
    for (let seed = 1; seed <= 6; seed++) {
      const header = seed % 2 === 0;
      const text = randomText(seed * 7919, 3000, 5, header);
      for (const chunkBytes of [1 << 20, 977]) {
        const spec = { text, plan: plan(key, value, header), memoryLimitBytes: 1 << 20, chunkBytes, stopAt: Infinity };
        const { js, native } = runBothWays(spec);
        expect(js.bulkTaken).toBe(0);
        expect(native.bulkTaken).toBeGreaterThan(js.rows / 2);
      }
    }
  });

  // Records longer than 16 bytes go through split_fields' 16-byte compares: delimiters at every
  // offset of a block, a quote deep inside a record, and records over the 256-field bound.
  it.each([17, 40, 300])('agrees entry for entry on records of %s fields', (fields) => {
    for (let seed = 1; seed <= 3; seed++) {
      // Every seventh record also quotes its fifth field (no delimiter inside, so only the quote
      // itself tells the native path to leave the record).
      const text = randomText(seed * 104729, 600, fields, false)
        .split('\n')
        .map((line, i) =>
          i % 7 === 3
            ? line
                .split(',')
                .map((f, k) => (k === 4 ? `"${f}"` : f))
                .join(',')
            : line,
        )
        .join('\n');
      const spec = { text, plan: plan('1:int64', undefined, false), memoryLimitBytes: 4 << 20, chunkBytes: 1 << 20, stopAt: Infinity };
      const { js, native } = runBothWays(spec);
      // Over the bound every record goes to JavaScript; under it most go native.
      if (fields > 256) expect(native.bulkTaken).toBe(0);
      else expect(native.bulkTaken).toBeGreaterThan(js.rows / 2);
    }
  });

  it('spills at the same entries when the buffer fills mid-window', () => {
    const text = randomText(42, 100000, 5, false);
    const spec = { text, plan: plan('1:int64', undefined, false), memoryLimitBytes: 1 << 20, chunkBytes: 1 << 20, stopAt: Infinity };
    const js = run({ ...spec, bulk: false });
    const native = run({ ...spec, bulk: true });
    expect(js.spills.length).toBeGreaterThan(2);
    expect(native.spills).toEqual(js.spills);
    expect(native.badRows).toEqual(js.badRows);
  });

  it('stops at the same record for a range end inside the window', () => {
    const text = randomText(5, 2000, 5, false);
    const stopAt = Math.floor(text.length / 3);
    const spec = { text, plan: plan('1:int64', undefined, false), memoryLimitBytes: 1 << 20, chunkBytes: 1 << 20, stopAt };
    const js = run({ ...spec, bulk: false });
    const native = run({ ...spec, bulk: true });
    expect(native.stoppedAt).toBe(js.stoppedAt);
    expect(native.stoppedAt).toBeGreaterThanOrEqual(stopAt);
    expect(native.spills).toEqual(js.spills);
    expect(native.rows).toBeGreaterThan(0);
  });

  it('encodes integer keys exactly as the JavaScript parser, refusing the same texts', () => {
    // A header binds the layout, so no data record has to go to JavaScript for that.
    const text = ['a,b,c', ...INT_TEXTS.map((t, i) => `${t},${t},row${i}`)].join('\n') + '\n';
    for (const key of ['1:int64', '2:uint64']) {
      const spec = { text, plan: plan(key, '3', true), memoryLimitBytes: 1 << 20, chunkBytes: 1 << 20, stopAt: Infinity };
      const js = run({ ...spec, bulk: false });
      const native = run({ ...spec, bulk: true });
      expect(native.spills).toEqual(js.spills);
      expect(native.badRows).toEqual(js.badRows);
      expect(js.badRows.length).toBeGreaterThan(5);
      // Every record here is simple: the native path must take each one the encoder takes (a
      // refusal of its own would fall back to JavaScript unseen, so count them).
      expect(native.bulkTaken).toBe(js.rows);
    }
  });

  it('refuses arguments out of range before writing anything', () => {
    const codec = nativeImport!;
    const buffer = new SortBuffer(1 << 20, 1 << 10, 1 << 10);
    const src = Buffer.from('1,a\n');
    const layout = Int32Array.of(0x2c, -1, -1, 2, 0, 1, 0x2c, 2, 0, 0);
    const call = (l: Int32Array, valueFields: Int32Array, state: Float64Array): number =>
      codec.parseRows(
        src,
        src.length,
        src.length,
        l,
        valueFields,
        buffer.arena,
        Float64Array.of(2048, 1 << 20, 50),
        buffer.offset,
        buffer.keyLength,
        buffer.valueLength,
        buffer.source,
        buffer.line,
        state,
      );
    expect(call(layout, Int32Array.of(1), Float64Array.of(0, 1, 0, 2048))).toBe(1);
    expect(buffer.keyLength[0]).toBe(8);
    const badKeyField = Int32Array.from(layout);
    badKeyField[4] = 2;
    expect(() => call(badKeyField, Int32Array.of(1), Float64Array.of(0, 1, 0, 2048))).toThrow(/out of range/);
    expect(() => call(layout, Int32Array.of(2), Float64Array.of(0, 1, 0, 2048))).toThrow(/out of range/);
    const badValueFormat = Int32Array.from(layout);
    badValueFormat[9] = 2;
    expect(() => call(badValueFormat, Int32Array.of(1), Float64Array.of(0, 1, 0, 2048))).toThrow(/out of range/);
    expect(() => call(layout.subarray(0, 9), Int32Array.of(1), Float64Array.of(0, 1, 0, 2048))).toThrow(/out of range/);
    expect(() => call(layout, Int32Array.of(1), Float64Array.of(5, 1, 0, 2048))).toThrow(/out of range/);
    expect(() => call(layout, Int32Array.of(1), Float64Array.of(0, 1, 0, 1))).toThrow(/out of range/);
  });

  /** Fields csv must quote (or the native path must leave to JavaScript) among plain ones; `quoting` false: the input quotes nothing. */
  function csvText(seed: number, lines: number, quoting: boolean): string {
    const rnd = mulberry32(seed);
    const special = quoting
      ? ['', 'a\rb', '"x,y"', '"say ""hi"""', '"two\nlines"', '"cr\r\nlf"', '"plain"', 'ünï', '\r']
      : ['', 'a\rb', 'say "hi"', '"', 'ünï', '\r'];
    const out: string[] = [];
    for (let i = 0; i < lines; i++) {
      const fields = [
        String(i),
        String((i * 7) % 1000),
        ...Array.from({ length: 3 }, () => (rnd() < 0.85 ? `v${Math.floor(rnd() * 1e6)}` : special[Math.floor(rnd() * special.length)])),
      ];
      const r = rnd();
      out.push(`${fields.join(',')}${r < 0.1 ? '\r\r\n' : r < 0.3 ? '\r\n' : '\n'}`);
    }
    return out.join('');
  }

  it.each(layouts)('csv: agrees entry for entry with key %s, value %s, quoting what needs it', (key, value) => {
    for (let seed = 1; seed <= 4; seed++) {
      const text = csvText(seed * 31337, 3000, true);
      const spec = { text, plan: plan(key, value, false, 'csv'), memoryLimitBytes: 1 << 20, chunkBytes: 977, stopAt: Infinity };
      const { js, native } = runBothWays(spec);
      expect(native.bulkTaken).toBeGreaterThan(js.rows / 4);
      // JavaScript quoted fields here, and the native path took none of those records.
      const values = js.spills.flat().map((e) => e.value);
      if (value === undefined) {
        expect(values.some((v) => v.includes('"x,y"'))).toBe(true);
        expect(values.some((v) => v.includes('"a\rb"'))).toBe(true);
      }
    }
  });

  it("csv with quoting disabled: records holding csv's quote go to JavaScript, which quotes them", () => {
    const text = csvText(99, 4000, false);
    const spec = {
      text,
      plan: plan('1:int64', undefined, false, 'csv'),
      memoryLimitBytes: 1 << 20,
      chunkBytes: 1 << 20,
      stopAt: Infinity,
      quote: -1,
    };
    const { js, native } = runBothWays(spec);
    expect(native.bulkTaken).toBeGreaterThan(js.rows / 4);
    expect(js.spills.flat().some((e) => e.value.includes('"say ""hi"""'))).toBe(true);
  });

  it("csv spills at the same entries as JavaScript: the native bound is csv's (2 bytes per record byte)", () => {
    const text = csvText(7, 60000, true);
    const spec = { text, plan: plan('1:int64', undefined, false, 'csv'), memoryLimitBytes: 1 << 20, chunkBytes: 1 << 20, stopAt: Infinity };
    const js = run({ ...spec, bulk: false });
    const native = run({ ...spec, bulk: true });
    expect(js.spills.length).toBeGreaterThan(2);
    expect(native.spills).toEqual(js.spills);
  });
});
