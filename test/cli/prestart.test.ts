/**
 * The command line starts an import's parse workers before it loads itself (cli/ingest.ts):
 * its guess of how many, which reads only argv, and an `ingest import` that takes them.
 */
import * as fs from 'fs';
import * as path from 'path';
import { prestartCountFor } from '../../cli/ingest';
import {
  discardPrestartedWorkers,
  MAX_PRESTARTED_WORKERS,
  PARALLEL_MIN_INPUT_BYTES,
  prestartCounts,
} from '../../src/ingest/parse/prestart';
import { tempDir } from '../ingest/support';
import { runCli } from '../support/cli';

afterEach(async () => {
  await discardPrestartedWorkers();
});

describe('the command line guess (prestartCountFor)', () => {
  const argv = (...args: string[]): string[] => ['node', 'ingest', ...args];
  let big: string;
  let small: string;
  beforeAll(() => {
    const dir = tempDir('prestart-argv-');
    big = path.join(dir, 'big.csv');
    small = path.join(dir, 'small.csv');
    // Sparse: the size is what counts, and the guess never reads the file.
    fs.writeFileSync(big, '');
    fs.truncateSync(big, PARALLEL_MIN_INPUT_BYTES);
    fs.writeFileSync(small, '1,a\n');
  });

  test('two workers for an import of inputs as large as the parallel parse needs, else none', () => {
    expect(prestartCountFor(argv('import', big, '--db', '/tmp/x', '--key', 'k:int64'))).toBe(2);
    expect(prestartCountFor(argv('import', small, '--db', '/tmp/x'))).toBe(0);
    expect(prestartCountFor(argv('import', small, small, '--output-dir', path.dirname(small)))).toBe(0);
  });

  test('--threads decides when given, in both spellings, bounded', () => {
    expect(prestartCountFor(argv('import', small, '--threads', '3'))).toBe(3);
    expect(prestartCountFor(argv('import', small, '--threads=1'))).toBe(1);
    expect(prestartCountFor(argv('import', big, '--threads', '0'))).toBe(0);
    expect(prestartCountFor(argv('import', big, '--threads', 'many'))).toBe(0);
    expect(prestartCountFor(argv('import', small, '--threads', '1000'))).toBe(MAX_PRESTARTED_WORKERS);
  });

  test('no workers for other commands, help, or an import sent to a server', () => {
    expect(prestartCountFor(argv('check', big, '--db', '/tmp/x'))).toBe(0);
    expect(prestartCountFor(argv('import', big, '--help'))).toBe(0);
    expect(prestartCountFor(argv('import', big, '--server', 'http://127.0.0.1:1'))).toBe(0);
    expect(prestartCountFor(argv('import', big, '--server=http://127.0.0.1:1'))).toBe(0);
    expect(prestartCountFor(argv())).toBe(0);
  });
});

test('ingest import takes the workers it started, and leaves none behind', async () => {
  const dir = tempDir('prestart-cli-');
  const input = path.join(dir, 'in.csv');
  fs.writeFileSync(input, `${Array.from({ length: 3000 }, (_, i) => `${(i * 7919) % 3000},v${i}`).join('\n')}\n`);
  const before = prestartCounts().taken;
  const r = await runCli('import', input, '--columns', 'k,v', '--key', 'k:int64', '--db', path.join(dir, 'db'), '--threads', '2', '--json');
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const summary = JSON.parse(r.stdout) as { import: { parseThreads: number; rowsWritten: number } };
  expect(summary.import.parseThreads).toBe(2);
  expect(summary.import.rowsWritten).toBe(3000);
  expect(prestartCounts()).toEqual({ waiting: 0, taken: before + 2 });
});
