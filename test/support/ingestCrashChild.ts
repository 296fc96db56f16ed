/**
 * Child process for the ingestion crash test: opens the database in argv[2] and runs numbered
 * steps forever from argv[4], writing its SSTs under argv[3], printing each step's number once
 * the step has returned (is acknowledged). The parent kills it with SIGKILL at a random moment.
 *
 * Steps (deterministic in the step number, so the parent can replay them as a model):
 * - every third step is a synced put of one key;
 * - the others write 1-3 adjacent SSTs over a slice of the key space r00..r99 and ingest them in
 *   one call, every other one of those with replaceRange over the whole slice. Keys overlap
 *   earlier steps, so files go to every level, need sequence numbers, and often force a memtable
 *   flush first.
 */
import * as fs from 'fs';
import * as path from 'path';
import { Engine } from '../../src/engine/engine';
import { SstFileWriter } from '../../src/sstwriter/sstFileWriter';

export const KEY_SPACE = 100;
const KEYS_PER_FILE = 6;

export interface PutStep {
  kind: 'put';
  key: string;
  value: string;
}

export interface IngestStep {
  kind: 'ingest';
  /** Per file: its keys (ascending) with values. */
  files: Array<Array<[string, string]>>;
  replaceRange: [string, string] | null;
}

export type Step = PutStep | IngestStep;

export function keyName(i: number): string {
  return `r${String(i).padStart(2, '0')}`;
}

export function stepPlan(step: number): Step {
  if (step % 3 === 0) return { kind: 'put', key: keyName((step * 37) % KEY_SPACE), value: `put${step}` };
  const fileCount = 1 + (step % 3);
  const start = (step * 53) % (KEY_SPACE - fileCount * KEYS_PER_FILE);
  const files: Array<Array<[string, string]>> = [];
  for (let f = 0; f < fileCount; f++) {
    const entries: Array<[string, string]> = [];
    for (let j = 0; j < KEYS_PER_FILE; j++) {
      const k = start + f * KEYS_PER_FILE + j;
      // Skip some keys so that replaceRange visibly deletes old ones.
      if ((k + step) % 3 !== 0) entries.push([keyName(k), `ing${step}-${f}`]);
    }
    if (entries.length === 0) entries.push([keyName(start + f * KEYS_PER_FILE), `ing${step}-${f}`]);
    files.push(entries);
  }
  const replaceRange: [string, string] | null = step % 2 === 0 ? [keyName(start), keyName(start + fileCount * KEYS_PER_FILE)] : null;
  return { kind: 'ingest', files, replaceRange };
}

/** The database contents after steps 1..last, as the model says. */
export function modelAfter(last: number): Map<string, string> {
  const m = new Map<string, string>();
  for (let s = 1; s <= last; s++) {
    const p = stepPlan(s);
    if (p.kind === 'put') {
      m.set(p.key, p.value);
      continue;
    }
    if (p.replaceRange !== null) {
      const [lo, hi] = p.replaceRange;
      for (const k of [...m.keys()]) if (k >= lo && k < hi) m.delete(k);
    }
    for (const file of p.files) for (const [k, v] of file) m.set(k, v);
  }
  return m;
}

async function main(): Promise<void> {
  const dir = process.argv[2];
  const staging = process.argv[3];
  let step = Number(process.argv[4]);
  const engine = await Engine.open(dir, { writeBufferSizeBytes: 16 * 1024, maxImmutableMemtables: 1, table: { blockSizeBytes: 512 } });
  process.stdout.write('open\n');
  for (; ; step++) {
    const p = stepPlan(step);
    if (p.kind === 'put') {
      await engine.put(Buffer.from(p.key), Buffer.from(p.value), { sync: true });
    } else {
      const paths = p.files.map((entries, f) => {
        const file = path.join(staging, `s${step}-${f}.sst`);
        const w = new SstFileWriter(file, { backgroundCompression: false, blockSizeBytes: 128 });
        for (const [k, v] of entries) w.put(Buffer.from(k), Buffer.from(v));
        w.finish();
        return file;
      });
      const replaceRange =
        p.replaceRange === null ? undefined : { start: Buffer.from(p.replaceRange[0]), end: Buffer.from(p.replaceRange[1]) };
      await engine.ingestExternalFiles(paths, { replaceRange });
      for (const file of paths) fs.rmSync(file);
    }
    process.stdout.write(`${step}\n`);
  }
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  });
}
