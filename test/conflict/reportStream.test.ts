/**
 * The streamed NDJSON conflict report (src/conflict/reportStream.ts, and checkSstConflicts'
 * reportSink): every listed conflict a line in key order, the summary last, exact counts, the
 * collector's list kept small however many conflicts are listed, and the file complete or absent.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { Engine } from '../../src/engine/engine';
import { SstFileWriter } from '../../src/sstwriter/sstFileWriter';
import { STREAM_BATCH_CONFLICTS, checkSstConflicts, checkSstConflictsSliced } from '../../src/conflict/checkSstConflicts';
import { SCAN_KEYS_PER_YIELD } from '../../src/conflict/scan';
import { ConflictReport, ReportedConflict } from '../../src/conflict/report';
import {
  ConflictReportFile,
  MAX_REPORTED_ALL,
  NdjsonReportWriter,
  REPORT_STREAM_BUFFER_BYTES,
  writeConflictReportNdjson,
} from '../../src/conflict/reportStream';

let root: string;
beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'report-stream-'));
});
afterAll(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

function keyOf(i: number): string {
  return `key${String(i).padStart(7, '0')}`;
}

/** Writes keys [from, to) with value `${prefix}${i}` as SSTs of `perFile` keys each. */
function writeSsts(dir: string, from: number, to: number, prefix: string, perFile: number): string[] {
  fs.mkdirSync(dir, { recursive: true });
  const paths: string[] = [];
  for (let start = from; start < to; start += perFile) {
    const p = path.join(dir, `${String(paths.length).padStart(4, '0')}.sst`);
    const w = new SstFileWriter(p, { backgroundCompression: false });
    for (let i = start; i < Math.min(to, start + perFile); i++) w.put(Buffer.from(keyOf(i)), Buffer.from(`${prefix}${i}`));
    w.finish();
    paths.push(p);
  }
  return paths;
}

/** The lines of an NDJSON report, parsed (each must parse). */
function linesOf(file: string): Array<Record<string, unknown>> {
  const text = fs.readFileSync(file, 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('100k conflicts streamed', () => {
  const total = 100_000;
  let engine: Engine;
  let fresh: string[];
  beforeAll(async () => {
    engine = await Engine.open(path.join(root, 'db'));
    await engine.ingestExternalFiles(writeSsts(path.join(root, 'old'), 0, total, 'old value ', total));
    fresh = writeSsts(path.join(root, 'new'), 0, total, 'new value ', 25_000);
  }, 60_000);
  afterAll(async () => {
    await engine.close();
  });

  test('every line parses, in key order, the count is exact, the summary is last; the collector held a batch at most', () => {
    const file = path.join(root, 'all.ndjson');
    const reportFile = new ConflictReportFile(file, 'ndjson');
    let report: ConflictReport;
    try {
      report = checkSstConflicts(engine, fresh, { maxReported: MAX_REPORTED_ALL, reportSink: reportFile.sink() });
      reportFile.complete(report);
    } finally {
      reportFile.abandon();
    }
    const s = report.summary;
    expect(s).toMatchObject({ sstKeys: total, conflicts: total, conflictsReported: total, maxReported: MAX_REPORTED_ALL });
    // What bounds memory: the listed conflicts went out a batch at a time, never all held.
    expect(s.conflictsHeldMax).toBeGreaterThan(0);
    expect(s.conflictsHeldMax).toBeLessThanOrEqual(STREAM_BATCH_CONFLICTS + SCAN_KEYS_PER_YIELD);
    expect(report.conflicts).toHaveLength(1); // the first, for messages
    expect(report.conflicts[0].key).toBe(keyOf(0));

    const lines = linesOf(file);
    expect(lines).toHaveLength(total + 1);
    const last = lines[total];
    expect(last).toMatchObject({ type: 'summary', format: 'sst-ingest.conflict-report', version: 1, db: engine.dir, sstFiles: fresh });
    expect(last.summary).toMatchObject({ conflicts: total, conflictsReported: total });
    for (let i = 0; i < total; i++) {
      const line = lines[i] as unknown as ReportedConflict & { type: string };
      if (line.type !== 'conflict' || line.key !== keyOf(i) || line.newValue.data !== `new value ${i}`) {
        throw new Error(`line ${i + 1}: ${JSON.stringify(line)}`);
      }
    }
    expect(fs.readdirSync(root).filter((n) => n.endsWith('.tmp'))).toEqual([]);
  }, 60_000);

  test('a JSON report (no sink) holds every listed conflict: the figure the stream keeps small', () => {
    const report = checkSstConflicts(engine, fresh, { maxReported: 5000 });
    expect(report.summary).toMatchObject({ conflicts: total, conflictsReported: 5000, conflictsHeldMax: 5000 });
    expect(report.conflicts).toHaveLength(5000);
  }, 60_000);
});

describe('streaming keeps what the JSON report says', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await Engine.open(path.join(root, 'db-small'));
    // Puts (not an ingestion): each key has its own sequence number, which get cannot see.
    for (let i = 0; i < 3000; i += 2) await engine.put(Buffer.from(keyOf(i)), Buffer.from(`old ${i}`));
    await engine.flush();
  }, 60_000);
  afterAll(async () => {
    await engine.close();
  });

  test.each(['seek', 'get', 'auto'] as const)(
    'strategy %s: the lines are the JSON report entries, sequence numbers included',
    async (strategy) => {
      const paths = writeSsts(path.join(root, `small-${strategy}`), 0, 3000, 'new ', 700);
      const json = checkSstConflicts(engine, paths, { strategy, maxReported: 1200 });
      const file = path.join(root, `small-${strategy}.ndjson`);
      const reportFile = new ConflictReportFile(file, 'ndjson');
      const streamed = await checkSstConflictsSliced(engine, paths, {
        strategy,
        maxReported: 1200,
        reportSink: reportFile.sink(),
        sliceMs: 1,
      });
      reportFile.complete(streamed);
      const lines = linesOf(file);
      expect(lines.slice(0, -1)).toEqual(json.conflicts.map((c) => ({ type: 'conflict', ...c })));
      expect(json.conflicts.every((c) => c.existingSeq > 0)).toBe(true);
      expect(streamed.summary).toMatchObject({ conflicts: 1500, conflictsReported: 1200, maxReported: 1200 });
      expect(lines[lines.length - 1]).toMatchObject({ type: 'summary', summary: { conflictsReported: 1200 } });
    },
  );
});

describe('the file is complete or absent', () => {
  const conflict: ReportedConflict = {
    key: 'k',
    keyHex: '6b',
    existingValue: { encoding: 'utf8', data: 'a', sizeBytes: 1, truncated: false },
    newValue: { encoding: 'utf8', data: 'b', sizeBytes: 1, truncated: false },
    existingSeq: 7,
    source: null,
    sstFile: '/x/000001.sst',
  };

  test('an abandoned report leaves neither the file nor its temporary', () => {
    const dir = fs.mkdtempSync(path.join(root, 'abandon-'));
    const file = path.join(dir, 'r.ndjson');
    const reportFile = new ConflictReportFile(file, 'ndjson');
    const sink = reportFile.sink();
    expect(sink).toBeDefined();
    for (let i = 0; i < 5000; i++) sink?.write(conflict); // past one buffer: some of it is on disk
    expect(fs.readdirSync(dir)).toHaveLength(1);
    expect(fs.readdirSync(dir)[0]).toMatch(/^r\.ndjson\.[0-9a-f]+\.tmp$/);
    reportFile.abandon();
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  test('a line longer than the buffer is written whole; a report from memory is written as lines', () => {
    const dir = fs.mkdtempSync(path.join(root, 'long-'));
    const file = path.join(dir, 'r.ndjson');
    const longKey = 'x'.repeat(REPORT_STREAM_BUFFER_BYTES * 2);
    const writer = NdjsonReportWriter.open(file);
    writer.write(conflict);
    writer.write({ ...conflict, key: longKey });
    writer.write(conflict);
    const report = { conflicts: [], format: 'sst-ingest.conflict-report', version: 1, db: 'd', snapshotSequence: 3, sstFiles: [] };
    writer.finish(report as unknown as ConflictReport);
    const lines = linesOf(file);
    expect(lines.map((l) => (l.key as string | undefined)?.length)).toEqual([1, longKey.length, 1, undefined]);
    expect(lines[3]).toEqual({
      type: 'summary',
      format: 'sst-ingest.conflict-report',
      version: 1,
      db: 'd',
      snapshotSequence: 3,
      sstFiles: [],
    });

    writeConflictReportNdjson(file, { ...report, conflicts: [conflict, conflict] } as unknown as ConflictReport);
    expect(linesOf(file).map((l) => l.type)).toEqual(['conflict', 'conflict', 'summary']);
    expect(fs.readdirSync(dir)).toEqual(['r.ndjson']);
  });

  test('a directory that cannot be written is an IO error naming the report', () => {
    expect(() => NdjsonReportWriter.open(path.join(root, 'no-such-dir', 'r.ndjson'))).toThrow(
      /cannot write the conflict report .*r\.ndjson/,
    );
  });
});
