/**
 * Differential test: the byte tokenizer (fast path) against csv-parse on randomized CSVs, record
 * for record: fields, field counts and start lines, for every dialect option the fast path covers
 * (delimiter, quote or none, comment, skip-lines), with quoted fields holding delimiters, quotes,
 * LF and CRLF, unicode, empty fields, empty and comment lines, a BOM, CRLF line ends, and read
 * buffers small enough that records straddle every kind of chunk boundary. Malformed inputs
 * must fail on the same record in both.
 */
import { parse } from 'csv-parse/sync';
import { CsvDialect, normalizeDialect } from '../../../src/ingest/csv/csvDialect';
import { RecordSink } from '../../../src/ingest/csv/csvTokenizer';
import { readCsvFast, readCsvWithCsvParse } from '../../../src/ingest/csv/csvReader';
import { memorySource } from '../support';
import { mulberry32 } from '../../../src/util/random';

const rng = mulberry32;

interface Rec {
  fields: string[];
  line: number;
}

interface Generated {
  text: string;
  /** Physical line on which each record starts, as the generator laid them out. */
  recordLines: number[];
  /** Line of the first record made malformed on purpose, and how (0, 1: one-line faults; 2: unterminated quote). */
  corruptLine: number;
  corruptKind: number;
  dialect: CsvDialect;
  bom: boolean;
}

function generate(seed: number, corrupt: boolean): Generated {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const delimiter = pick([',', '|', ';', '\t']);
  const quote = pick(['"', '"', "'", '']);
  const comment = pick(['', '', '#']);
  const skipLines = pick([0, 0, 1, 2]);
  const bom = r() < 0.3;
  const crlf = r() < 0.4;
  const eol = (): string => (crlf || r() < 0.1 ? '\r\n' : '\n');
  const atoms = ['a', 'b', 'xyz', '1', '-42', ' ', 'é', '日本', '😀', delimiter, '\n', '\r\n', '\r', '#', 'q'];
  if (quote !== '') atoms.push(quote, quote);
  const lines: string[] = [];
  const recordLines: number[] = [];
  let corruptLine = -1;
  let corruptKind = -1;
  for (let i = 0; i < skipLines; i++) lines.push(`preamble ${i} with ${delimiter} delimiters${eol()}`);
  const nRecords = 1 + Math.floor(r() * 40);
  const width = 1 + Math.floor(r() * 5);
  for (let i = 0; i < nRecords; i++) {
    if (r() < 0.05) {
      lines.push(eol());
      continue;
    }
    if (comment !== '' && r() < 0.08) {
      lines.push(`${comment} a comment ${pick(atoms.filter((a) => !a.includes('\n')))}${eol()}`);
      continue;
    }
    const n = r() < 0.9 ? width : 1 + Math.floor(r() * 5);
    const fields: string[] = [];
    for (let f = 0; f < n; f++) {
      let v = '';
      const len = Math.floor(r() * 4);
      for (let k = 0; k < len; k++) v += pick(atoms);
      const needsQuote =
        v.includes(delimiter) ||
        v.includes('\n') ||
        v.includes('\r') ||
        (quote !== '' && v.includes(quote)) ||
        (f === 0 && comment !== '' && v.startsWith(comment));
      if (quote === '') {
        // Without quoting, a field can hold no delimiter and no line end.
        v = v
          .split(delimiter)
          .join('')
          .replace(/[\r\n]/g, '');
        if (f === 0 && comment !== '' && v.startsWith(comment)) v = `x${v}`;
      } else if (needsQuote || r() < 0.2) {
        v = quote + v.split(quote).join(quote + quote) + quote;
      }
      fields.push(v);
    }
    // A record of one empty unquoted field would be an empty line (no record): quote it or fill it.
    if (n === 1 && fields[0] === '') fields[0] = quote !== '' ? quote + quote : 'z';
    recordLines.push(1 + lines.reduce((a, l) => a + countLf(l), 0));
    let line = fields.join(delimiter);
    if (corrupt && r() < 0.15 && quote !== '') {
      const kind = Math.floor(r() * 3);
      if (corruptLine < 0) {
        corruptLine = recordLines[recordLines.length - 1];
        corruptKind = kind;
      }
      if (kind === 0)
        line = `a${quote}b${delimiter}${line}`; // quote inside an unquoted field
      else if (kind === 1)
        line = `${quote}a${quote}x${delimiter}${line}`; // bytes after a closing quote
      else line = `${line}${delimiter}${quote}never closed`; // unterminated quote
    }
    const last = i === nRecords - 1 && r() < 0.3;
    lines.push(line + (last ? '' : eol()));
  }
  const dialect = normalizeDialect({ delimiter, quote, comment, skipLines });
  return { text: (bom ? '\ufeff' : '') + lines.join(''), recordLines, corruptLine, corruptKind, dialect, bom };
}

function countLf(s: string): number {
  let n = 0;
  for (const c of s) if (c === '\n') n++;
  return n;
}

/** csv-parse's view: records with start lines, or the error it raised. */
function viaCsvParse(g: Generated): { records: Rec[]; error: string | null } {
  const records: Rec[] = [];
  try {
    parse(g.text, {
      delimiter: g.dialect.delimiter,
      quote: g.dialect.quote === '' ? false : g.dialect.quote,
      escape: g.dialect.quote === '' ? null : g.dialect.quote,
      comment: g.dialect.comment === '' ? undefined : g.dialect.comment,
      comment_no_infix: true,
      record_delimiter: ['\r\n', '\n'],
      skip_empty_lines: true,
      relax_column_count: true,
      bom: true,
      from_line: g.dialect.skipLines + 1,
      // Collect as they come, so records before an error are kept. csv-parse's own line count is
      // off after a CRLF inside quotes; the generator knows where each record starts.
      on_record: (record: string[]) => {
        records.push({ fields: record, line: g.recordLines[records.length] });
        return record;
      },
    });
    return { records, error: null };
  } catch (e) {
    return { records, error: (e as Error).message };
  }
}

function collector(): { sink: RecordSink; records: Rec[]; bad: { line: number; reason: string }[] } {
  const records: Rec[] = [];
  const bad: { line: number; reason: string }[] = [];
  const sink: RecordSink = {
    record(src, fieldCount, starts, ends, unescape, line) {
      const fields: string[] = [];
      for (let i = 0; i < fieldCount; i++) {
        let b = src.subarray(starts[i], ends[i]);
        if (unescape[i]) {
          const q = quoteByte;
          const out: number[] = [];
          for (let k = 0; k < b.length; k++) {
            out.push(b[k]);
            if (b[k] === q) k++;
          }
          b = Buffer.from(out);
        }
        fields.push(b.toString('utf8'));
      }
      records.push({ fields, line });
    },
    badRecord(line, reason) {
      bad.push({ line, reason });
    },
  };
  return { sink, records, bad };
}
let quoteByte = 0x22;

async function viaFast(g: Generated, readBufferBytes: number): Promise<ReturnType<typeof collector>> {
  quoteByte = g.dialect.quote === '' ? -1 : g.dialect.quote.charCodeAt(0);
  const c = collector();
  await readCsvFast(memorySource(Buffer.from(g.text, 'utf8'), 13), g.dialect, c.sink, { readBufferBytes });
  return c;
}

describe('fast tokenizer vs csv-parse', () => {
  it('agrees record for record on randomized well-formed CSVs', async () => {
    let compared = 0;
    for (let seed = 1; seed <= 400; seed++) {
      const g = generate(seed, false);
      const expected = viaCsvParse(g);
      expect({ seed, error: expected.error }).toEqual({ seed, error: null });
      for (const bufferBytes of [16, 61, 1 << 16]) {
        const got = await viaFast(g, bufferBytes);
        expect({ seed, bufferBytes, bad: got.bad }).toEqual({ seed, bufferBytes, bad: [] });
        expect({ seed, bufferBytes, records: got.records }).toEqual({ seed, bufferBytes, records: expected.records });
        compared += got.records.length;
      }
    }
    expect(compared).toBeGreaterThan(10000);
  });

  it('fails on the same record as csv-parse on malformed CSVs', async () => {
    let failures = 0;
    for (let seed = 1000; seed < 1400; seed++) {
      const g = generate(seed, true);
      const expected = viaCsvParse(g);
      const got = await viaFast(g, 61);
      if (expected.error === null) {
        expect({ seed, bad: got.bad }).toEqual({ seed, bad: [] });
        expect(got.records).toEqual(expected.records);
        continue;
      }
      failures++;
      expect({ seed, corrupted: g.corruptLine > 0 }).toEqual({ seed, corrupted: true });
      // Both fail, and agree on every record before the first malformed one.
      expect({ seed, faults: got.bad.length > 0 }).toEqual({ seed, faults: true });
      const before = (recs: Rec[]): Rec[] => recs.filter((rec) => rec.line < g.corruptLine);
      expect({ seed, before: before(got.records) }).toEqual({ seed, before: before(expected.records) });
      // A one-line fault is reported on its own line.
      if (g.corruptKind !== 2) expect({ seed, line: got.bad[0].line }).toEqual({ seed, line: g.corruptLine });
      else expect(got.bad[0].line).toBeGreaterThanOrEqual(g.corruptLine);
    }
    expect(failures).toBeGreaterThan(50);
  });

  it('csv-parse fallback path reports the same records and lines', async () => {
    for (let seed = 2000; seed < 2100; seed++) {
      const g = generate(seed, false);
      quoteByte = g.dialect.quote === '' ? -1 : g.dialect.quote.charCodeAt(0);
      const c = collector();
      await readCsvWithCsvParse(memorySource(Buffer.from(g.text, 'utf8'), 17), g.dialect, c.sink, { readBufferBytes: 50 });
      expect({ seed, records: c.records }).toEqual({ seed, records: viaCsvParse(g).records });
    }
  });
});
