/**
 * The `ingest import` command on the fixtures: the trades CSV (pipe-delimited, key t_id:int64),
 * the quoting edge cases, and the bad-rows file, through the commander command as a user runs it.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Command } from 'commander';
import { registerImportCommand } from '../../cli/commands/import';
import { parseByteSize } from '../../cli/commands/importOptions';
import { ImportSummary } from '../../src/ingest/importer';
import { exitCodeFor } from '../../src/util/errors';
import { readOutputSsts, tempDir } from '../ingest/support';
import { FIXTURES_DIR } from '../support/paths';

const FIXTURES = FIXTURES_DIR;

/** Runs `ingest import ...args`; returns stdout and the exit code main() would give. */
async function cli(args: string[]): Promise<{ stdout: string; code: number; error: string }> {
  const program = new Command().exitOverride();
  registerImportCommand(program);
  let stdout = '';
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout += chunk.toString();
    return true;
  });
  try {
    await program.parseAsync(['node', 'ingest', 'import', ...args]);
    return { stdout, code: 0, error: '' };
  } catch (e) {
    return { stdout, code: exitCodeFor(e), error: (e as Error).message };
  } finally {
    spy.mockRestore();
  }
}

describe('ingest import (CLI) on the fixtures', () => {
  it('trades.csv: t_id:int64 keys in numeric order, raw values, --json summary', async () => {
    const dir = tempDir('ingest-cli-');
    const out = path.join(dir, 'out');
    const input = path.join(FIXTURES, 'trades.csv');
    const r = await cli([
      input,
      '--delimiter',
      '|',
      '--header',
      '--key',
      't_id:int64',
      '--output-dir',
      out,
      '--tmp-dir',
      path.join(dir, 'tmp'),
      '--target-file-size',
      '256KiB',
      '--json',
    ]);
    expect(r.error).toBe('');
    const summary = JSON.parse(r.stdout) as ImportSummary;
    expect(summary.rowsRead).toBe(10000);
    expect(summary.rowsWritten).toBe(10000);
    expect(summary.outputFiles.length).toBeGreaterThan(1);
    expect(JSON.parse(fs.readFileSync(path.join(out, 'import-summary.json'), 'utf8')).rowsWritten).toBe(10000);

    // Reference: the fixture has no quotes, so splitting lines is an independent parse.
    const lines = fs.readFileSync(input, 'utf8').trim().split('\n').slice(1);
    const expected = lines
      .map((l) => {
        const bar = l.indexOf('|');
        return [BigInt(l.slice(0, bar)), l.slice(bar + 1)] as const;
      })
      .sort((a, b) => (a[0] < b[0] ? -1 : 1));
    const got = readOutputSsts(out).entries.map((e) => [e.key.readBigUInt64BE(0) - (1n << 63n), e.value.toString()] as const);
    expect(got).toEqual(expected);
    expect(summary.outputFiles[0].smallestKey).toBe(String(expected[0][0]));
    expect(summary.outputFiles[summary.outputFiles.length - 1].largestKey).toBe(String(expected[expected.length - 1][0]));
  });

  it('quoting.csv: every edge case decodes to the intended field', async () => {
    const dir = tempDir('ingest-cli-');
    const out = path.join(dir, 'out');
    const r = await cli([
      path.join(FIXTURES, 'quoting.csv'),
      '--header',
      '--key',
      'id',
      '--value-format',
      'json',
      '--output-dir',
      out,
      '--quiet',
    ]);
    expect(r).toEqual({ stdout: '', code: 0, error: '' });
    const got = Object.fromEntries(
      readOutputSsts(out).entries.map((e) => [e.key.toString(), JSON.parse(e.value.toString()) as { text: string; note: string }]),
    );
    expect(got).toEqual({
      q01: { text: 'plain', note: 'simple' },
      q02: { text: 'has, comma', note: 'quoted delimiter' },
      q03: { text: 'say "hi"', note: 'doubled quotes' },
      q04: { text: 'line one\nline two', note: 'LF inside quotes' },
      q05: { text: 'crlf one\r\ncrlf two', note: 'CRLF inside quotes' },
      q06: { text: '', note: 'empty field' },
      q07: { text: '', note: 'empty quoted field' },
      q08: { text: '  padded  ', note: 'spaces kept' },
      q09: { text: '日本語 — é 😀', note: 'unicode' },
      q10: { text: '"', note: 'just a quote' },
      q11: { text: 'a,"b",\nc', note: 'everything at once' },
      q12: { text: 'trailing empty', note: '' },
      q13: { text: 'quoted key', note: 'quoted note' },
      q14: { text: '#not a comment', note: 'hash inside' },
    });
  });

  it('bad_rows.csv: exit code 2 naming the line; --max-bad-rows and --rejects go on', async () => {
    const dir = tempDir('ingest-cli-');
    const input = path.join(FIXTURES, 'bad_rows.csv');
    const failed = await cli([input, '--header', '--key', 'id:int64', '--output-dir', path.join(dir, 'out1'), '--quiet']);
    expect(failed.code).toBe(2);
    expect(failed.error).toContain(`${input} line 3: expected 3 fields, got 2`);
    const ok = await cli([
      input,
      '--header',
      '--key',
      'id:int64',
      '--output-dir',
      path.join(dir, 'out2'),
      '--max-bad-rows',
      '5',
      '--rejects',
      path.join(dir, 'rejects.jsonl'),
      '--json',
    ]);
    expect(ok.code).toBe(0);
    expect((JSON.parse(ok.stdout) as ImportSummary).badRows).toBe(5);
    expect(fs.readFileSync(path.join(dir, 'rejects.jsonl'), 'utf8').trim().split('\n')).toHaveLength(5);
  });

  it('sizes parse with binary and decimal units', () => {
    expect(parseByteSize('256MiB', 'x')).toBe(256 << 20);
    expect(parseByteSize('64M', 'x')).toBe(64 << 20);
    expect(parseByteSize('1GB', 'x')).toBe(1e9);
    expect(parseByteSize('4096', 'x')).toBe(4096);
    expect(() => parseByteSize('lots', '--memory-limit')).toThrow(/--memory-limit must be a size/);
  });
});
