/**
 * Value encodings as a script sees them (issue 37, item 6): `ingest import --db` writes csv by
 * default and records it in DIR/VALUE-ENCODING before ingesting; `get|scan --as-columns` reads
 * randomized fields (delimiters, quotes, CR, LF, empty, non-ASCII) back exactly, also from a
 * later import with another input delimiter; a database written before encodings were recorded
 * keeps raw, and an explicit --value-format that differs from the record is exit 2 naming both;
 * a kill right after the record (before the ingestion) or right after the ingestion leaves the
 * record there and the next run finishes the import; csv SSTs are the same with the native fast
 * path as without it.
 */
import * as fs from 'fs';
import * as path from 'path';
import { runCli } from '../support/cli';
import { runCliChild } from '../support/cliChild';
import { readOutputSsts, tempDir } from '../ingest/support';
import { describeIfNative } from '../support/native';
import { mulberry32 } from '../../src/util/random';
import { VALUE_ENCODING_FILE_NAME } from '../../src/ingest/valueEncodingFile';

jest.setTimeout(60_000);

const HEADER = 'key,name,city,note';
const ALPHABET = ['a', 'b', 'Z', ' ', ',', ';', '"', '\r', '\n', '\r\n', 'é', '€', '|', "'"];

interface Row {
  key: string;
  fields: string[];
}

function randomRows(seed: number, count: number): Row[] {
  const rnd = mulberry32(seed);
  const field = (): string =>
    rnd() < 0.15 ? '' : Array.from({ length: 1 + Math.floor(rnd() * 7) }, () => ALPHABET[Math.floor(rnd() * ALPHABET.length)]).join('');
  return Array.from({ length: count }, (_, i) => ({ key: `k${String(i).padStart(4, '0')}`, fields: [field(), field(), field()] }));
}

/** A CSV line: fields quoted when they must be (delimiter, quote, CR, LF), and every fifth plain one too. */
function csvLine(values: string[], delimiter: string): string {
  return values
    .map((v, i) => (v.includes(delimiter) || /["\r\n]/.test(v) || i % 5 === 4 ? `"${v.split('"').join('""')}"` : v))
    .join(delimiter);
}

function writeCsv(file: string, rows: Row[], delimiter = ','): void {
  const lines = [HEADER.split(',').join(delimiter), ...rows.map((r) => csvLine([r.key, ...r.fields], delimiter))];
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

interface ScanLine {
  key: string;
  columns: Record<string, string> | null;
  lossy: boolean;
}

async function scanColumns(db: string): Promise<Map<string, Record<string, string>>> {
  const r = await runCli('scan', '--db', db, '--as-columns', '--json');
  expect(r.code).toBe(0);
  const out = new Map<string, Record<string, string>>();
  for (const line of r.stdout.split('\n').filter((l) => l !== '')) {
    const doc = JSON.parse(line) as ScanLine;
    expect(doc.lossy).toBe(false);
    expect(doc.columns).not.toBeNull();
    out.set(doc.key, doc.columns as Record<string, string>);
  }
  return out;
}

function recordOf(db: string): Record<string, unknown> {
  return JSON.parse(fs.readFileSync(path.join(db, VALUE_ENCODING_FILE_NAME), 'utf8')) as Record<string, unknown>;
}

async function importOk(...args: string[]): Promise<void> {
  const r = await runCli('import', ...args, '--quiet');
  if (r.code !== 0) throw new Error(`import failed (${r.code}): ${r.stderr}`);
}

let root = '';
beforeEach(() => {
  root = tempDir('value-encoding-');
});

test('csv by default: recorded, and every randomized field reads back as its column', async () => {
  const db = path.join(root, 'db');
  const rows = [{ key: 'fixed', fields: ['Kim, A', 'open', 'say "hi"'] }, ...randomRows(7, 300)];
  writeCsv(path.join(root, 'a.csv'), rows);
  await importOk(path.join(root, 'a.csv'), '--db', db, '--header');
  expect(recordOf(db)).toEqual({ version: 1, format: 'csv', delimiter: ',', quote: '"', columns: ['name', 'city', 'note'] });

  // A second import with another input delimiter (and the csv-parse parser) writes the database's syntax.
  const more = randomRows(8, 100).map((r) => ({ ...r, key: `m${r.key}` }));
  writeCsv(path.join(root, 'b.csv'), more, ';');
  await importOk(path.join(root, 'b.csv'), '--db', db, '--header', '--delimiter', ';', '--parser', 'csv-parse');

  const got = await scanColumns(db);
  expect(got.size).toBe(rows.length + more.length);
  for (const r of [...rows, ...more]) expect(got.get(r.key)).toEqual({ name: r.fields[0], city: r.fields[1], note: r.fields[2] });

  // The stored bytes: quoted only where needed; text output one name=value per column.
  const plain = await runCli('get', 'fixed', '--db', db);
  expect(plain.stdout).toBe('"Kim, A",open,"say ""hi"""\n');
  const text = await runCli('get', 'fixed', '--db', db, '--as-columns');
  expect(text).toMatchObject({ code: 0, stdout: 'name=Kim, A\ncity=open\nnote=say "hi"\n' });
  const json = await runCli('get', 'fixed', '--db', db, '--as-columns', '--json');
  expect(JSON.parse(json.stdout)).toEqual({
    key: 'fixed',
    found: true,
    columns: { name: 'Kim, A', city: 'open', note: 'say "hi"' },
    lossy: false,
  });
  const scanned = await runCli('scan', '--db', db, '--as-columns', '--from', 'fixed', '--limit', '1');
  expect(scanned.stdout).toBe('fixed :\n  name=Kim, A\n  city=open\n  note=say "hi"\n');
});

test('a database from before the record keeps raw; a --value-format other than the recorded one is exit 2', async () => {
  const db = path.join(root, 'db');
  writeCsv(path.join(root, 'old.csv'), [{ key: 'a', fields: ['Kim, A', 'x', 'y'] }]);
  writeCsv(path.join(root, 'new.csv'), [{ key: 'b', fields: ['Lee, B', 'x', 'y'] }]);
  // An older version: raw values, no record.
  await importOk(path.join(root, 'old.csv'), '--db', db, '--header', '--value-format', 'raw');
  fs.rmSync(path.join(db, VALUE_ENCODING_FILE_NAME));

  await importOk(path.join(root, 'new.csv'), '--db', db, '--header');
  expect(recordOf(db)).toMatchObject({ format: 'raw', delimiter: ',', quote: null });
  expect((await runCli('get', 'b', '--db', db)).stdout).toBe('Lee, B,x,y\n');

  const json = await runCli('import', path.join(root, 'new.csv'), '--db', db, '--header', '--value-format', 'json', '--quiet');
  expect(json.code).toBe(2);
  expect(json.stderr).toMatch(/--value-format json differs from the value format raw that the database at .* records/);

  // raw splits at every delimiter, and says it is lossy.
  const got = await runCli('get', 'b', '--db', db, '--as-columns', '--json');
  expect(JSON.parse(got.stdout)).toEqual({ key: 'b', found: true, columns: { '1': 'Lee', '2': ' B', '3': 'x', '4': 'y' }, lossy: true });
  expect(got.stderr).toMatch(/lossy/);
});

test('into a csv database an explicit raw is refused, nothing ingested; --as-columns needs a record and no --server', async () => {
  const db = path.join(root, 'db');
  writeCsv(path.join(root, 'a.csv'), [{ key: 'a', fields: ['1', '2', '3'] }]);
  writeCsv(path.join(root, 'b.csv'), [{ key: 'b', fields: ['1', '2', '3'] }]);
  await importOk(path.join(root, 'a.csv'), '--db', db, '--header');
  const raw = await runCli('import', path.join(root, 'b.csv'), '--db', db, '--header', '--value-format', 'raw', '--quiet');
  expect(raw.code).toBe(2);
  expect(raw.stderr).toMatch(/--value-format raw differs from the value format csv/);
  expect((await runCli('get', 'b', '--db', db)).code).toBe(1);

  fs.rmSync(path.join(db, VALUE_ENCODING_FILE_NAME));
  const none = await runCli('get', 'a', '--db', db, '--as-columns');
  expect(none.code).toBe(2);
  expect(none.stderr).toMatch(/records no value encoding/);
  const remote = await runCli('scan', '--server', 'http://127.0.0.1:1', '--as-columns');
  expect(remote.code).toBe(2);
  expect(remote.stderr).toMatch(/does not go with --server/);
});

test.each([['import.valueEncodingRecorded:1'], ['import.afterIngest:1']])(
  'killed at %s: the record is there, and the same command finishes the import in its format',
  async (crashAt) => {
    const db = path.join(root, 'db');
    const rows = randomRows(21, 50);
    const input = path.join(root, 'a.csv');
    writeCsv(input, rows);
    const args = ['import', input, '--db', db, '--header', '--quiet'];
    const killed = await runCliChild(args, { SST_INGEST_CRASH_AT: crashAt });
    expect(killed.signal).toBe('SIGKILL');
    expect(recordOf(db)).toMatchObject({ format: 'csv' });
    const again = await runCli(...args);
    expect(again.code).toBe(0);
    const got = await scanColumns(db);
    expect(got.size).toBe(rows.length);
    for (const r of rows) expect(got.get(r.key)).toEqual({ name: r.fields[0], city: r.fields[1], note: r.fields[2] });
  },
);

describeIfNative('the native fast path', () => {
  test('csv SSTs of mixed quoted and unquoted records are the same with the native path and without it', async () => {
    const lines = [HEADER];
    const rnd = mulberry32(5);
    const rows = randomRows(31, 4000);
    // Mostly plain records (the native path's), some with fields csv must quote (JavaScript's).
    for (const r of rows)
      lines.push(rnd() < 0.7 ? [r.key, `v${r.key}`, 'open', `n${r.key.length}`].join(',') : csvLine([r.key, ...r.fields], ','));
    const input = path.join(root, 'mixed.csv');
    fs.writeFileSync(input, `${lines.join('\n')}\n`);
    const args = ['import', input, '--header', '--threads', '0', '--quiet'];
    await importOk(...args.slice(1), '--output-dir', path.join(root, 'native'));
    const js = await runCliChild([...args, '--output-dir', path.join(root, 'js')], { SST_INGEST_NATIVE: '0' });
    expect(js.code).toBe(0);
    const entriesOf = (dir: string): [string, string][] =>
      readOutputSsts(dir).entries.map((e) => [e.key.toString('hex'), e.value.toString('hex')]);
    const native = entriesOf(path.join(root, 'native'));
    expect(native).toHaveLength(rows.length);
    expect(entriesOf(path.join(root, 'js'))).toEqual(native);
    expect(native.some(([, v]) => Buffer.from(v, 'hex').toString().startsWith('"'))).toBe(true);
  });
});

test('--server imports settle the encoding against the server database and the upload records it there', async () => {
  const root = tempDir('value-encoding-server-');
  const { IngestServer } = await import('../../src/server/server');
  const db = path.join(root, 'served');
  const server = await IngestServer.start({ dbDir: db, port: 0, log: () => undefined });
  try {
    const csv = path.join(root, 'rows.csv');
    fs.writeFileSync(csv, `${HEADER}\nk1,"Kim, A",Oslo,x\nk2,Bo,"Rome",y\n`);
    const first = await runCli('import', csv, '--header', '--key', 'key', '--server', server.url, '--quiet');
    expect(first.code).toBe(0);
    // The server's database records what the client wrote: csv, the value columns.
    expect(JSON.parse(fs.readFileSync(path.join(db, VALUE_ENCODING_FILE_NAME), 'utf8'))).toMatchObject({
      format: 'csv',
      delimiter: ',',
      columns: ['name', 'city', 'note'],
    });
    const got = await runCli('get', 'k1', '--server', server.url);
    expect(got.stdout).toBe('"Kim, A",Oslo,x\n');
    // A client asking for another format is refused before it uploads anything, naming both.
    const raw = await runCli('import', csv, '--header', '--key', 'key', '--server', server.url, '--value-format', 'raw', '--quiet');
    expect(raw.code).toBe(2);
    expect(raw.stderr).toMatch(/--value-format raw differs from the value format csv/);
    // An upload naming another encoding is refused by the server itself (400), nothing ingested.
    const { send, multipartOf, writeSst } = await import('../server/helpers');
    const upload = multipartOf([{ name: 'z.sst', data: writeSst(path.join(root, 'z.sst'), [['z1', '{"name":"x"}']]) }]);
    const refused = await send(server.url, {
      method: 'POST',
      path: '/v1/imports/sst',
      headers: {
        'content-type': upload.contentType,
        'ingest-value-encoding': '{"version":1,"format":"json","delimiter":null,"quote":null,"columns":null}',
      },
      body: upload.body,
    });
    expect(refused.status).toBe(400);
    expect((await runCli('get', 'z1', '--server', server.url)).code).toBe(1);
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
});
