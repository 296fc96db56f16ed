/**
 * `ingest sst write | dump | verify` end to end through the CLI entry point (in-process), checking
 * exit codes and the stable JSON shapes scripts depend on.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { runCli } from '../support/cli';

const run = runCli;

describe('ingest sst', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-sst-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  function writeCsv(name: string, text: string): string {
    const p = path.join(dir, name);
    fs.writeFileSync(p, text);
    return p;
  }

  it.each([
    ['lz4', '5'],
    ['none', '2'],
    ['lz4', '4'],
  ])('writes a CSV sorted by key (compression %s, format_version %s) and dumps it back as JSON', async (compression, fv) => {
    const rows: string[] = [];
    for (let i = 0; i < 500; i++) rows.push(`key${(i * 7919) % 500},"v|${i}, with comma",x${i}`);
    const csv = writeCsv('in.csv', `k,v,w\n${rows.join('\n')}\n`);
    const sst = path.join(dir, 'out.sst');
    const w = await run('sst', 'write', csv, '-o', sst, '--header', '--compression', compression, '--format-version', fv, '--json');
    expect(w.code).toBe(0);
    expect(JSON.parse(w.stdout)).toMatchObject({ entries: 500, file: sst });

    const d = await run('sst', 'dump', sst, '--json');
    expect(d.code).toBe(0);
    const dump = JSON.parse(d.stdout) as {
      entries: { keyHex: string; seq: number; type: string; valueHex: string }[];
      rangeTombstones: unknown[];
      properties: { numEntries: number };
    };
    const expected = [];
    for (let i = 0; i < 500; i++) expected.push({ key: `key${(i * 7919) % 500}`, value: `v|${i}, with comma,x${i}` });
    expected.sort((a, b) => Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)));
    expect(
      dump.entries.map((e) => ({ key: Buffer.from(e.keyHex, 'hex').toString(), value: Buffer.from(e.valueHex, 'hex').toString() })),
    ).toEqual(expected);
    expect(dump.entries.every((e) => e.seq === 0 && e.type === 'put')).toBe(true);
    expect(dump.rangeTombstones).toEqual([]);
    expect(dump.properties.numEntries).toBe(500);

    const v = await run('sst', 'verify', sst);
    expect(v.code).toBe(0);
    expect(v.stdout).toContain('OK');
  });

  it('rejects a duplicate key with exit code 2, naming both lines, and leaves no file', async () => {
    const csv = writeCsv('dup.csv', 'a,1\nb,2\na,3\n');
    const sst = path.join(dir, 'dup.sst');
    const r = await run('sst', 'write', csv, '-o', sst);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/duplicate key "a" on lines 1 and 3/);
    expect(fs.readdirSync(dir)).toEqual(['dup.csv']);
  });

  it('maps usage errors to exit code 2', async () => {
    const csv = writeCsv('a.csv', 'a,1\n');
    expect((await run('sst', 'write', csv, '-o', path.join(dir, 'x.sst'), '--format-version', '7')).code).toBe(2);
    expect((await run('sst', 'write', csv, '-o', path.join(dir, 'x.sst'), '--compression', 'bzip2')).code).toBe(2);
    expect((await run('sst', 'nosuchcommand')).code).toBe(2);
  });

  it('verify fails with exit code 1 and a corruption message naming the file when a block byte is flipped', async () => {
    const csv = writeCsv('c.csv', Array.from({ length: 200 }, (_, i) => `k${String(i).padStart(4, '0')},value${i}`).join('\n'));
    const sst = path.join(dir, 'c.sst');
    expect((await run('sst', 'write', csv, '-o', sst, '--compression', 'none')).code).toBe(0);
    const bytes = fs.readFileSync(sst);
    bytes[100] ^= 0x01; // inside the first data block
    fs.writeFileSync(sst, bytes);
    const v = await run('sst', 'verify', sst);
    expect(v.code).toBe(1);
    expect(v.stderr).toContain('corruption in');
    expect(v.stderr).toContain(sst);
    const d = await run('sst', 'dump', sst, '--json');
    expect(d.code).toBe(1);
    // No dump: the failure document alone.
    expect(JSON.parse(d.stdout)).toEqual({ error: { code: 'CORRUPTION', message: expect.stringContaining(sst), exitCode: 1 } });
  });

  it('verify rejects a file that is not an SST', async () => {
    const p = writeCsv('not.sst', 'hello world, this is not a table file at all, it is just text padded out to be long enough....');
    const v = await run('sst', 'verify', p);
    expect(v.code).toBe(1);
    expect(v.stderr).toMatch(/bad table magic number/);
  });
});
