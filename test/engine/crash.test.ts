/**
 * Crash test: a child process writes synced batches and is killed with SIGKILL at random
 * moments (before, during and after flushes, sometimes before it has even finished opening),
 * 32 times over one database. After every kill the database is reopened and must hold every
 * batch the child acknowledged, and no part of any batch it did not complete (the loop and its
 * checks: test/support/crashRounds.ts; `npm run bench:crash` runs more rounds).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { runCrashRounds } from '../support/crashRounds';
import { REPO_ROOT } from '../support/paths';

const ROOT = REPO_ROOT;
const ROUNDS = 32;

test(`every acknowledged batch survives ${ROUNDS} SIGKILLs, and no partial batch appears`, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-crash-'));
  try {
    const summary = await runCrashRounds({ dir, root: ROOT, rounds: ROUNDS, seed: 20240611 });
    expect(summary.rounds).toBe(ROUNDS);
    // The rounds must actually have written (and flushed) something worth checking.
    expect(summary.batchesAcknowledged).toBeGreaterThan(ROUNDS * 5);
    expect(summary.batchesPresent).toBeGreaterThanOrEqual(summary.batchesAcknowledged);
    expect(summary.killsDuringStartup).toBeGreaterThan(0);
    // Flushes must have run (recovery then reads tables, not only WALs). Background compaction
    // may have merged them into as little as one file, so only their existence is asserted.
    const tables = fs.readdirSync(dir).filter((f) => f.endsWith('.sst'));
    expect(tables.length).toBeGreaterThanOrEqual(1);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
