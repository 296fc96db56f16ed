/**
 * Parse workers started ahead of their import (src/ingest/parse/prestart.ts): an import takes
 * those of its niceness and gives the same output as with workers it starts itself; workers it
 * does not take are terminated; the count is bounded. The command line's side is in
 * test/cli/prestart.test.ts.
 */
import * as fs from 'fs';
import * as path from 'path';
import { runImport, ImportOptions, ImportSummary } from '../../../src/ingest/importer';
import {
  discardPrestartedWorkers,
  MAX_PRESTARTED_WORKERS,
  prestartCounts,
  prestartParseWorkers,
  takePrestartedWorkers,
} from '../../../src/ingest/parse/prestart';
import { readOutputSsts, tempDir } from '../support';

afterEach(async () => {
  await discardPrestartedWorkers();
});

/** A CSV of `rows` rows with unique keys in an order that needs sorting. */
function writeCsv(file: string, rows: number): void {
  const lines: string[] = [];
  for (let i = 0; i < rows; i++) lines.push(`${(i * 7919) % rows},value-${i}-${'x'.repeat(i % 40)}`);
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

async function importTo(dir: string, input: string, extra: Partial<ImportOptions> = {}): Promise<ImportSummary> {
  return runImport({
    inputs: [input],
    key: 'k:int64',
    columns: ['k', 'v'],
    outputDir: path.join(dir, 'out'),
    tmpDir: path.join(dir, 'tmp'),
    writeSummaryFile: false,
    parseThreads: 2,
    parseTaskBytes: 16 << 10,
    ...extra,
  });
}

function entriesOf(dir: string): string[] {
  return readOutputSsts(path.join(dir, 'out')).entries.map((e) => `${e.key.toString('hex')}=${e.value.toString('utf8')}`);
}

describe('prestarted parse workers', () => {
  test('an import takes them and writes what it writes with workers of its own', async () => {
    const dir = tempDir('prestart-');
    const input = path.join(dir, 'in.csv');
    writeCsv(input, 5000);
    const fresh = await importTo(path.join(dir, 'fresh'), input);
    const before = prestartCounts().taken;
    prestartParseWorkers(2, 0);
    expect(prestartCounts().waiting).toBe(2);
    const early = await importTo(path.join(dir, 'early'), input);
    expect(prestartCounts()).toEqual({ waiting: 0, taken: before + 2 });
    expect(early.parseThreads).toBe(2);
    expect(early.parseRanges).toBe(fresh.parseRanges);
    expect(early.parseRanges).toBeGreaterThan(4);
    expect(early.rowsWritten).toBe(5000);
    const entries = entriesOf(path.join(dir, 'early'));
    expect(entries.length).toBe(5000);
    expect(entries).toEqual(entriesOf(path.join(dir, 'fresh')));
  });

  test('workers of another niceness are not taken, and the import terminates them', async () => {
    const dir = tempDir('prestart-');
    const input = path.join(dir, 'in.csv');
    writeCsv(input, 2000);
    const before = prestartCounts().taken;
    prestartParseWorkers(1, 5);
    const s = await importTo(dir, input);
    expect(s.rowsWritten).toBe(2000);
    expect(prestartCounts()).toEqual({ waiting: 0, taken: before });
  });

  test('an import with fewer threads takes what it needs; the rest are terminated', async () => {
    const dir = tempDir('prestart-');
    const input = path.join(dir, 'in.csv');
    writeCsv(input, 2000);
    const before = prestartCounts().taken;
    prestartParseWorkers(3, 0);
    const s = await importTo(dir, input, { parseThreads: 1 });
    expect(s.parseThreads).toBe(1);
    expect(s.rowsWritten).toBe(2000);
    expect(prestartCounts()).toEqual({ waiting: 0, taken: before + 1 });
  });

  test('taking is by niceness and count; the number waiting is bounded', async () => {
    prestartParseWorkers(2, 0);
    prestartParseWorkers(2, 0); // already two waiting: none more
    expect(prestartCounts().waiting).toBe(2);
    expect(takePrestartedWorkers(5, 3)).toEqual([]);
    const taken = takePrestartedWorkers(1, 0);
    expect(taken.length).toBe(1);
    expect(prestartCounts().waiting).toBe(1);
    await taken[0].terminate();
    expect(() => prestartParseWorkers(MAX_PRESTARTED_WORKERS + 1, 0)).toThrow(/cannot prestart/);
    expect(() => prestartParseWorkers(-1, 0)).toThrow(/cannot prestart/);
  });
});
