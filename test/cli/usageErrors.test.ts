/**
 * The command line's answers to the mistakes a new user makes (issue 37's smaller points): a
 * directory or the same file given as input, a wrong --delimiter, a pipe closed by its reader,
 * and `--version`. Each answer names the input or option, and exits as the README says.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { spawn } from 'child_process';
import { runCli } from '../support/cli';
import { REPO_ROOT } from '../support/paths';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'usage-errors-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

test('a directory given as input is named as such, exit 2, and no database is made', async () => {
  const input = path.join(dir, 'inputs');
  fs.mkdirSync(input);
  const db = path.join(dir, 'db');
  const r = await runCli('import', input, '--db', db);
  expect(r.code).toBe(2);
  expect(r.stderr).toBe(`error: input ${input} is a directory: give the CSV files in it\n`);
  expect(fs.existsSync(db)).toBe(false);
  const out = await runCli('import', input, '--output-dir', path.join(dir, 'out'));
  expect(out.code).toBe(2);
  expect(out.stderr).toContain('is a directory');
});

test('the same file given twice, under one path or two, is refused before it is read', async () => {
  const csv = path.join(dir, 'a.csv');
  fs.writeFileSync(csv, 'k,v\na,1\n');
  const twice = await runCli('import', csv, csv, '--header', '--db', path.join(dir, 'db'));
  expect(twice.code).toBe(2);
  expect(twice.stderr).toBe(`error: input ${csv} is given twice\n`);
  // Not normalized: the same file under another spelling.
  const other = `${dir}/x/../a.csv`;
  fs.mkdirSync(path.join(dir, 'x'));
  const aliased = await runCli('import', csv, other, '--header', '--output-dir', path.join(dir, 'out'));
  expect(aliased.code).toBe(2);
  expect(aliased.stderr).toBe(`error: inputs ${csv} and ${other} are the same file\n`);
});

test('a header that parsed as one column says so, and names the delimiter it holds', async () => {
  const csv = path.join(dir, 'pipes.csv');
  fs.writeFileSync(csv, 'id|name|qty\n1|a|2\n');
  const r = await runCli('import', csv, '--header', '--key', 'id', '--output-dir', path.join(dir, 'out'));
  expect(r.code).toBe(2);
  expect(r.stderr).toBe(
    'error: --key column "id" is not among the columns: id|name|qty ' +
      `(the header parsed as one column "id|name|qty" with --delimiter ","; it holds "|": try --delimiter '|')\n`,
  );
  // A real one-column file whose key is missing gets the hint without a suggestion.
  fs.writeFileSync(csv, 'id\n1\n');
  const plain = await runCli('import', csv, '--header', '--key', 'name', '--output-dir', path.join(dir, 'out2'));
  expect(plain.stderr).toBe(
    'error: --key column "name" is not among the columns: id (the header parsed as one column "id" with --delimiter ",")\n',
  );
});

test('--version prints the package version', async () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
  const r = await runCli('--version');
  expect(r).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: '' });
});

test('a reader that closes the pipe early ends the command quietly, exit 0', async () => {
  const csv = path.join(dir, 'many.csv');
  fs.writeFileSync(csv, Array.from({ length: 20_000 }, (_, i) => `key${String(i).padStart(6, '0')},${'v'.repeat(50)}`).join('\n'));
  const sst = path.join(dir, 'many.sst');
  expect((await runCli('sst', 'write', csv, '--output', sst)).code).toBe(0);
  const child = spawn(
    process.execPath,
    ['-r', path.join(REPO_ROOT, 'test/support/swc-register.js'), path.join(REPO_ROOT, 'cli/ingest.ts'), 'sst', 'dump', sst],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // Like `| head -1`: read the first chunk, then close the pipe.
  child.stdout.once('data', () => child.stdout.destroy());
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
}, 30_000);

test('--db naming a file, not a directory, is exit 2 naming it, for a write and for an import', async () => {
  const file = path.join(dir, 'not-a-db');
  fs.writeFileSync(file, 'x');
  const put = await runCli('put', '--db', file, 'k', 'v');
  expect(put).toEqual({ code: 2, stdout: '', stderr: `error: database path ${file} is not a directory\n` });
  const csv = path.join(dir, 'a.csv');
  fs.writeFileSync(csv, 'k,v\na,1\n');
  const imported = await runCli('import', csv, '--header', '--db', file);
  expect(imported.code).toBe(2);
  expect(imported.stderr).toBe(`error: database path ${file} is not a directory\n`);
  expect(fs.readFileSync(file, 'utf8')).toBe('x');
});
