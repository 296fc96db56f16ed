/**
 * The CSV tokenizer's fast path (records without quotes) on the cases it hands back to the general
 * path: wide records that grow its field arrays, quoted, empty, CR-led and comment lines, and
 * heavily quoted input on which it stops trying; and the general path's record that ends at eof
 * with an empty field past its field arrays. Input is fed through windows of a larger buffer,
 * as the import does, in chunks from one byte up.
 */
import { CsvTokenizer, RecordSink } from '../../../src/ingest/csv/csvTokenizer';

describe('CsvTokenizer fast path', () => {
  interface Rec {
    fields: string[];
    line: number;
    raw: string;
  }
  function tokenizeAll(text: string, quote: number, chunk: number): Rec[] {
    const recs: Rec[] = [];
    const sink: RecordSink = {
      record(src, fieldCount, starts, ends, unescape, line, recordStart, recordEnd) {
        const fields: string[] = [];
        for (let i = 0; i < fieldCount; i++) {
          let f = src.toString('latin1', starts[i], ends[i]);
          if (unescape[i] !== 0) f = f.split('""').join('"');
          fields.push(f);
        }
        recs.push({ fields, line, raw: src.toString('latin1', recordStart, recordEnd) });
      },
      badRecord(line, reason) {
        throw new Error(`bad record at line ${line}: ${reason}`);
      },
    };
    // Feed the text through a window that is a slice of a larger buffer (as the import does),
    // with garbage after the window that must not be read as input.
    const data = Buffer.from(text, 'latin1');
    const arena = Buffer.alloc(data.length + 64, 0x0a);
    const t = new CsvTokenizer({ delimiter: 0x2c, quote, comment: 0x23 });
    let start = 0;
    let end = 0;
    while (start < data.length || end < data.length) {
      const take = Math.min(chunk, data.length - end);
      data.copy(arena, end, end, end + take);
      end += take;
      const eof = end >= data.length;
      start = t.tokenize(arena, start, end, eof, sink);
      if (eof) break;
    }
    return recs;
  }

  it('splits wide unquoted records, growing its field arrays', () => {
    const wide = Array.from({ length: 300 }, (_, i) => `f${i}`);
    const text = `a,b\n${wide.join(',')}\n${wide.slice(0, 100).join(',')},\r\nx\n`;
    for (const chunk of [7, 1 << 20]) {
      const recs = tokenizeAll(text, 0x22, chunk);
      expect(recs.map((r) => r.fields.length)).toEqual([2, 300, 101, 1]);
      expect(recs[1].fields).toEqual(wide);
      expect(recs[2].fields[100]).toBe(''); // the CR before the LF belongs to the line end
      expect(recs.map((r) => r.line)).toEqual([1, 2, 3, 4]);
    }
  });

  it('hands quoted, empty, CR-led and comment lines to the general path and resumes after them', () => {
    const lines = ['x,1', '"q,1",2', '', '\r', '#c,1', 'y,"2"', 'z,3\r', '\rw,4', 'last,5'];
    const text = `${lines.join('\n')}`;
    for (const chunk of [1, 3, 1 << 20]) {
      const recs = tokenizeAll(text, 0x22, chunk);
      expect(recs.map((r) => r.fields)).toEqual([
        ['x', '1'],
        ['q,1', '2'],
        ['y', '2'],
        ['z', '3'],
        ['\rw', '4'],
        ['last', '5'],
      ]);
      expect(recs.map((r) => r.line)).toEqual([1, 2, 6, 7, 8, 9]);
      expect(recs[3].raw).toBe('z,3');
    }
  });

  it('stops trying the fast path on heavily quoted input but still parses it', () => {
    const rows = Array.from({ length: 200 }, (_, i) => (i % 50 === 49 ? `plain${i},${i}` : `"q${i}",${i}`));
    const recs = tokenizeAll(`${rows.join('\n')}\n`, 0x22, 1 << 20);
    expect(recs.map((r) => r.fields[0])).toEqual(rows.map((_, i) => (i % 50 === 49 ? `plain${i}` : `q${i}`)));
  });

  it('grows its field arrays for the empty last field of a record ending at eof', () => {
    // The quoted field fills the first 64 slots; the delimiter after it at eof adds a 65th, empty.
    const first = Array.from({ length: 63 }, (_, i) => `f${i}`);
    for (const ending of ['"q",', 'q,']) {
      for (const chunk of [1, 1 << 20]) {
        const recs = tokenizeAll(`${first.join(',')},${ending}`, 0x22, chunk);
        expect(recs.map((r) => r.fields)).toEqual([[...first, 'q', '']]);
      }
    }
  });
});
