/**
 * Crash test: a child process writes synced batches and is killed with SIGKILL at random
 * moments (before, during and after flushes, sometimes before it has even finished opening),
 * 32 times over one database. After every kill the database is reopened and must hold every
 * batch the child acknowledged, and no part of any batch it did not complete: batches are
 * all-or-nothing, and since they are written one after another, the batches present form a
 * prefix of the sequence.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { spawn } from 'child_process';
import { Engine } from '../src/engine/engine';
import { batchKeys, batchValue } from './support/crashWriter';
import { mulberry32 } from '../src/util/random';

const ROOT = path.join(__dirname, '..');
const ROUNDS = 32;

const rng = mulberry32;

/** Runs the writer from `startId` and SIGKILLs it `killAfterMs` after it opened (or after spawn). */
function runAndKill(dir: string, startId: number, killAfterMs: number, afterOpen: boolean): Promise<number[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--require', path.join(ROOT, 'test/support/swc-register.js'), path.join(ROOT, 'test/support/crashWriter.ts'), dir, String(startId)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const acked: number[] = [];
    let pending = '';
    let stderr = '';
    let timer: NodeJS.Timeout | null = null;
    const arm = (): void => {
      if (timer === null) timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    };
    if (!afterOpen) arm();
    child.stdout.on('data', (d: Buffer) => {
      pending += d.toString();
      const lines = pending.split('\n');
      pending = lines.pop() as string;
      for (const line of lines) {
        if (line === 'open') arm();
        else acked.push(Number(line));
      }
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('exit', (code, signal) => {
      if (timer !== null) clearTimeout(timer);
      // Lines the child wrote before dying may still be in the pipe: they were acknowledged.
      for (const line of pending.split('\n')) if (line !== '' && line !== 'open') acked.push(Number(line));
      if (signal !== 'SIGKILL') reject(new Error(`writer exited with ${code}: ${stderr}`));
      else resolve(acked);
    });
  });
}

/** Verifies the database; returns the id after the last batch present. */
async function verify(dir: string, firstId: number, acked: number[], round: number): Promise<number> {
  const engine = await Engine.open(dir);
  try {
    const has = (id: number): boolean => engine.get(Buffer.from(`b${id}-0`)) !== null;
    let next = firstId;
    while (has(next)) next++;
    // A prefix: every batch before `next` is whole, the one at `next` has no key at all.
    for (let id = Math.max(1, next - 40); id < next; id++) {
      for (let j = 0; j < batchKeys(id); j++) {
        const v = engine.get(Buffer.from(`b${id}-${j}`));
        if (v === null || !v.equals(batchValue(id, j))) throw new Error(`round ${round}: batch ${id} key ${j} is ${v === null ? 'missing' : 'wrong'}`);
      }
    }
    for (let j = 0; j < batchKeys(next); j++) {
      if (engine.get(Buffer.from(`b${next}-${j}`)) !== null) throw new Error(`round ${round}: batch ${next} is partly present (key ${j})`);
    }
    if (has(next + 1)) throw new Error(`round ${round}: batch ${next + 1} present after missing batch ${next}`);
    for (const id of acked) if (id >= next) throw new Error(`round ${round}: acknowledged batch ${id} lost (present up to ${next - 1})`);
    const last = engine.get(Buffer.from('last'));
    if (next > 1 && (last === null || Number(last.toString()) !== next - 1)) throw new Error(`round ${round}: "last" is ${last?.toString()}, expected ${next - 1}`);
    return next;
  } finally {
    await engine.close();
  }
}

test(`every acknowledged batch survives ${ROUNDS} SIGKILLs, and no partial batch appears`, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-crash-'));
  const r = rng(20240611);
  try {
    let nextId = 1;
    let totalAcked = 0;
    let earlyKills = 0;
    for (let round = 0; round < ROUNDS; round++) {
      // One kill in five lands during startup (recovery, manifest and WAL creation).
      const afterOpen = r() >= 0.2;
      if (!afterOpen) earlyKills++;
      const delay = afterOpen ? 20 + Math.floor(r() * 250) : Math.floor(r() * 500);
      const acked = await runAndKill(dir, nextId, delay, afterOpen);
      for (let i = 1; i < acked.length; i++) expect(acked[i]).toBe(acked[i - 1] + 1);
      totalAcked += acked.length;
      nextId = await verify(dir, nextId, acked, round);
    }
    // The rounds must actually have written (and flushed) something worth checking.
    expect(totalAcked).toBeGreaterThan(ROUNDS * 5);
    expect(earlyKills).toBeGreaterThan(0);
    // Flushes must have run (recovery then reads tables, not only WALs). Background compaction
    // may have merged them into as little as one file, so only their existence is asserted.
    const tables = fs.readdirSync(dir).filter((f) => f.endsWith('.sst'));
    expect(tables.length).toBeGreaterThanOrEqual(1);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
