/**
 * `ingest import` end to end: randomized CSVs (quoted fields holding delimiters, quotes and line
 * ends; unicode; CRLF; BOM; empty values) imported in-process and by parse workers, under memory
 * limits small enough to force many runs, must give SSTs whose merged contents equal an
 * in-memory reference built from the generator's own rows (not from any parser): the default csv
 * values, and raw when asked for. Also: typed and composite keys sort naturally, value formats,
 * multiple inputs and .gz.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as zlib from 'zlib';
import { Readable } from 'stream';
import { runImport, ImportOptions } from '../../src/ingest/importer';
import { readOutputSsts, tempDir } from './support';
import { mulberry32 } from '../../src/util/random';

const rng = mulberry32;

interface Table {
  text: string;
  rows: string[][];
}

/** A CSV with unique keys in column 1 and `width` columns, quoting only where needed (or at random). */
function randomTable(seed: number, nRows: number, width: number, delimiter: string): Table {
  const r = rng(seed);
  const atoms = ['a', 'Z', '0', '42', ' ', 'é', '日本', '😀', delimiter, '"', '\n', '\r\n', ''];
  const crlf = r() < 0.5;
  const rows: string[][] = [];
  const seen = new Set<string>();
  const lines: string[] = [];
  while (rows.length < nRows) {
    const row: string[] = [];
    for (let c = 0; c < width; c++) {
      let v = '';
      const len = Math.floor(r() * (c === 0 ? 6 : 4)) + (c === 0 ? 1 : 0);
      for (let k = 0; k < len; k++) v += atoms[Math.floor(r() * atoms.length)];
      row.push(v);
    }
    if (seen.has(row[0])) continue;
    seen.add(row[0]);
    rows.push(row);
    lines.push(
      row
        .map((v) =>
          (v === '' && width === 1) || v.includes(delimiter) || v.includes('"') || v.includes('\n') || v.includes('\r') || r() < 0.1
            ? `"${v.split('"').join('""')}"`
            : v,
        )
        .join(delimiter),
    );
  }
  const eol = crlf ? '\r\n' : '\n';
  return { text: (r() < 0.5 ? '\ufeff' : '') + lines.join(eol) + (r() < 0.7 ? eol : ''), rows };
}

function referenceRaw(rows: string[][], delimiter: string): [string, string][] {
  return rows
    .map((row): [string, string] => [row[0], row.slice(1).join(delimiter)])
    .sort((a, b) => Buffer.compare(Buffer.from(a[0]), Buffer.from(b[0])));
}

/** The default csv values: as raw, but a field holding the delimiter, a quote, CR or LF quoted, its quotes doubled. */
function referenceCsv(rows: string[][], delimiter: string): [string, string][] {
  const field = (v: string): string => (v.includes(delimiter) || /["\r\n]/.test(v) ? `"${v.split('"').join('""')}"` : v);
  return referenceRaw(
    rows.map((row) => [row[0], ...row.slice(1).map(field)]),
    delimiter,
  );
}

function contents(dir: string): [string, string][] {
  return readOutputSsts(dir).entries.map((e) => [e.key.toString('utf8'), e.value.toString('utf8')]);
}

async function importTo(dir: string, opts: Partial<ImportOptions> & { inputs: string[] }) {
  return runImport({ outputDir: path.join(dir, 'out'), tmpDir: path.join(dir, 'tmp'), writeSummaryFile: false, ...opts });
}

describe('import of randomized CSVs equals an in-memory reference', () => {
  it('in-process, many runs under a small memory limit', async () => {
    const dir = tempDir('ingest-import-');
    const t = randomTable(7, 40000, 4, ',');
    fs.writeFileSync(path.join(dir, 'in.csv'), t.text);
    const s = await importTo(dir, {
      inputs: [path.join(dir, 'in.csv')],
      memoryLimitBytes: 4 << 20,
      parseThreads: 0,
      targetFileSizeBytes: 256 << 10,
    });
    expect(s.runs).toBeGreaterThan(1);
    expect(s.rowsRead).toBe(40000);
    expect(s.outputFiles.length).toBeGreaterThan(1);
    expect(contents(path.join(dir, 'out'))).toEqual(referenceCsv(t.rows, ','));
    // The temp directory holds nothing afterwards.
    expect(fs.readdirSync(path.join(dir, 'tmp'))).toEqual([]);
    // Summary key ranges match the files and do not overlap.
    for (let i = 1; i < s.outputFiles.length; i++)
      expect(
        Buffer.compare(Buffer.from(s.outputFiles[i - 1].largestKeyHex, 'hex'), Buffer.from(s.outputFiles[i].smallestKeyHex, 'hex')),
      ).toBeLessThan(0);
  });

  it.each([
    ['fast', '|'],
    ['csv-parse', ';'],
  ] as const)('parser %s, delimiter %s', async (parser, delimiter) => {
    const dir = tempDir('ingest-import-');
    const t = randomTable(11, 3000, 3, delimiter);
    fs.writeFileSync(path.join(dir, 'in.csv'), t.text);
    await importTo(dir, { inputs: [path.join(dir, 'in.csv')], dialect: { delimiter }, parser, parseThreads: 0, memoryLimitBytes: 4 << 20 });
    expect(contents(path.join(dir, 'out'))).toEqual(referenceCsv(t.rows, delimiter));
    const raw = tempDir('ingest-import-');
    await importTo(raw, { inputs: [path.join(dir, 'in.csv')], dialect: { delimiter }, parser, parseThreads: 0, valueFormat: 'raw' });
    expect(contents(path.join(raw, 'out'))).toEqual(referenceRaw(t.rows, delimiter));
  });

  it('parse workers over byte ranges, with range guesses landing inside quoted line ends', async () => {
    const dir = tempDir('ingest-import-');
    // Many LFs inside quoted fields, so some range starts guessed at "the next LF" are wrong.
    const r = rng(3);
    const rows: string[][] = [];
    const lines: string[] = [];
    for (let i = 0; i < 6000; i++) {
      const key = `k${String(Math.floor(r() * 1e9)).padStart(9, '0')}-${i}`;
      const multi = Array.from({ length: Math.floor(r() * 6) }, () => 'x'.repeat(Math.floor(r() * 30))).join('\n');
      rows.push([key, multi, String(i)]);
      lines.push(`${key},"${multi}",${i}`);
    }
    fs.writeFileSync(path.join(dir, 'in.csv'), `${lines.join('\n')}\n`);
    const inProcess = tempDir('ingest-import-');
    await importTo(inProcess, { inputs: [path.join(dir, 'in.csv')], parseThreads: 0 });
    const s = await importTo(dir, {
      inputs: [path.join(dir, 'in.csv')],
      parseThreads: 2,
      mergeThreads: 2,
      parseTaskBytes: 4096,
      memoryLimitBytes: 16 << 20,
      targetFileSizeBytes: 64 << 10,
    });
    expect(s.parseThreads).toBe(2);
    expect(s.mergeThreads).toBe(2);
    expect(s.outputFiles.length).toBeGreaterThan(2);
    expect(s.parseRanges).toBeGreaterThan(20);
    expect(s.parseRangesRetried).toBeGreaterThan(0);
    expect(s.rowsRead).toBe(6000);
    const expected = referenceCsv(rows, ',');
    expect(contents(path.join(dir, 'out'))).toEqual(expected);
    expect(contents(path.join(inProcess, 'out'))).toEqual(expected);
  });

  // The parallel parse probes each file's first bytes for the header and first record on the
  // main thread, starting with a small read that grows: here both lie past several growths.
  it('parse workers bind a header and first record that lie far past the first probe read', async () => {
    const dir = tempDir('ingest-import-');
    const wide = 'w'.repeat(300 << 10);
    const lines = [`id,"${wide}"`, `1,"${wide}"`];
    for (let i = 2; i < 3000; i++) lines.push(`${i},v${i}`);
    fs.writeFileSync(path.join(dir, 'in.csv'), `${lines.join('\n')}\n`);
    const s = await importTo(dir, {
      inputs: [path.join(dir, 'in.csv')],
      header: true,
      key: 'id:int64',
      parseThreads: 2,
      parseTaskBytes: 4096,
    });
    expect(s.parseThreads).toBe(2);
    expect(s.rowsRead).toBe(2999);
    const entries = readOutputSsts(path.join(dir, 'out')).entries;
    expect(entries.length).toBe(2999);
    expect(entries[0].value.toString()).toBe(wide);
    expect(entries[2998].value.toString()).toBe('v2999');
  });
});

describe('keys and values', () => {
  it('int64 keys sort numerically, negative ones first', async () => {
    const dir = tempDir('ingest-import-');
    const values = ['5', '-1', '0', '9223372036854775807', '-9223372036854775808', '+17', '-300', '1000000000000'];
    fs.writeFileSync(path.join(dir, 'in.csv'), `id,v\n${values.map((v, i) => `${v},${i}`).join('\n')}\n`);
    const s = await importTo(dir, { inputs: [path.join(dir, 'in.csv')], header: true, key: 'id:int64' });
    const got = readOutputSsts(path.join(dir, 'out')).entries.map((e) => e.key.readBigUInt64BE(0) - (1n << 63n));
    expect(got).toEqual(values.map((v) => BigInt(v)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(s.outputFiles[0].smallestKey).toBe('-9223372036854775808');
    expect(s.outputFiles[0].largestKey).toBe('9223372036854775807');
  });

  it('composite (bytes, int64) keys sort by tuple; json values name the columns', async () => {
    const dir = tempDir('ingest-import-');
    const rows = [
      ['b', '1', 'x'],
      ['a', '10', 'y"q'],
      ['a', '-2', 'z'],
      ['a\u0000', '0', 'w'],
      ['ab', '-5', ''],
    ];
    fs.writeFileSync(
      path.join(dir, 'in.csv'),
      `name,n,v\n${rows.map((r) => r.map((f) => `"${f.replace(/"/g, '""')}"`).join(',')).join('\n')}\n`,
    );
    const s = await importTo(dir, { inputs: [path.join(dir, 'in.csv')], header: true, key: 'name,n:int64', valueFormat: 'json' });
    const { entries } = readOutputSsts(path.join(dir, 'out'));
    expect(entries.map((e) => JSON.parse(e.value.toString()))).toEqual([{ v: 'z' }, { v: 'y"q' }, { v: 'w' }, { v: '' }, { v: 'x' }]);
    expect(s.outputFiles[0].smallestKey).toBe('a,-2');
  });

  it('--value picks and orders columns; positions name json fields without a header', async () => {
    const dir = tempDir('ingest-import-');
    fs.writeFileSync(path.join(dir, 'in.csv'), 'k1,a,b,c\nk0,d,e,f\n');
    await importTo(dir, { inputs: [path.join(dir, 'in.csv')], value: '4,2', valueFormat: 'json' });
    expect(contents(path.join(dir, 'out'))).toEqual([
      ['k0', '{"4":"f","2":"d"}'],
      ['k1', '{"4":"c","2":"a"}'],
    ]);
  });

  it('several inputs, one gzipped, each with a header, land as one sorted set', async () => {
    const dir = tempDir('ingest-import-');
    fs.writeFileSync(path.join(dir, 'a.csv'), 'k,v\nb,1\nd,2\n');
    fs.writeFileSync(path.join(dir, 'b.csv.gz'), zlib.gzipSync('k,v\na,3\nc,4\n'));
    const s = await importTo(dir, { inputs: [path.join(dir, 'a.csv'), path.join(dir, 'b.csv.gz')], header: true });
    expect(contents(path.join(dir, 'out'))).toEqual([
      ['a', '3'],
      ['b', '1'],
      ['c', '4'],
      ['d', '2'],
    ]);
    expect(s.rowsWritten).toBe(4);
  });

  it('dialects the fast path does not cover go through csv-parse: a backslash escape, a multi-byte delimiter', async () => {
    const dir = tempDir('ingest-import-');
    fs.writeFileSync(path.join(dir, 'in.csv'), 'k1,"say \\"hi\\"",x\nk0,"a\\\\b",y\n');
    const s = await importTo(dir, { inputs: [path.join(dir, 'in.csv')], dialect: { escape: '\\' } });
    expect(s.parser).toBe('csv-parse');
    expect(s.parserReason).toBe('the escape differs from the quote');
    expect(contents(path.join(dir, 'out'))).toEqual([
      ['k0', 'a\\b,y'],
      // csv writes quotes doubled, whatever the input's escape.
      ['k1', '"say ""hi""",x'],
    ]);
    const dir2 = tempDir('ingest-import-');
    fs.writeFileSync(path.join(dir2, 'in.csv'), 'k1§v1§w\nk0§v0§w\n');
    await importTo(dir2, { inputs: [path.join(dir2, 'in.csv')], dialect: { delimiter: '§' } });
    expect(contents(path.join(dir2, 'out'))).toEqual([
      ['k0', 'v0§w'],
      ['k1', 'v1§w'],
    ]);
  });

  it('reads stdin when the input is -', async () => {
    const dir = tempDir('ingest-import-');
    const saved = Object.getOwnPropertyDescriptor(process, 'stdin');
    Object.defineProperty(process, 'stdin', {
      value: Readable.from([Buffer.from('k,v\nb,'), Buffer.from('2\na,1\n')]),
      configurable: true,
    });
    try {
      const s = await importTo(dir, { inputs: ['-'], header: true });
      expect(s.inputs).toEqual([{ path: 'stdin', bytes: null }]);
    } finally {
      if (saved !== undefined) Object.defineProperty(process, 'stdin', saved);
    }
    expect(contents(path.join(dir, 'out'))).toEqual([
      ['a', '1'],
      ['b', '2'],
    ]);
  });

  it('skip-lines, comments, BOM, CRLF and empty lines', async () => {
    const dir = tempDir('ingest-import-');
    fs.writeFileSync(path.join(dir, 'in.csv'), '\ufeffexported by "tool\r\n\r\nk;v\r\n# note\r\n\r\nx;1\r\ny;"2;\r\n3"\r\n');
    await importTo(dir, { inputs: [path.join(dir, 'in.csv')], dialect: { delimiter: ';', comment: '#', skipLines: 2 }, header: true });
    expect(contents(path.join(dir, 'out'))).toEqual([
      ['x', '1'],
      ['y', '"2;\r\n3"'],
    ]);
  });
});
