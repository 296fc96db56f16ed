/**
 * The engine crash loop at length: the same rounds as test/engine/crash.test.ts (a child writing
 * synced batches, SIGKILLed at a random moment, one kill in five during startup; every reopen
 * must hold every acknowledged batch and no partial batch), but as many as asked, 300 by default
 * against the suite's 32. Not a speed benchmark: it prints what it verified and exits 1 on the
 * first violation, naming the round and the batch.
 *
 * The child runs from the TypeScript sources through test/support/swc-register.js (a dev
 * dependency), so run it from a checkout after `npm ci`.
 *
 * Usage: npm run bench:crash [-- --rounds N (300)] [--seed S] [--keep DIR]
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { runCrashRounds } from '../test/support/crashRounds';
import { ArgReader } from './support/args';

interface Args {
  rounds: number;
  seed: number;
  keepDir: string | null;
}

function parseArgs(argv: readonly string[]): Args {
  const a: Args = { rounds: 300, seed: 20241130, keepDir: null };
  const r = new ArgReader(argv);
  for (let flag = r.nextFlag(); flag !== null; flag = r.nextFlag()) {
    switch (flag) {
      case '--rounds':
        a.rounds = r.positiveInteger();
        break;
      case '--seed':
        a.seed = r.positiveInteger();
        break;
      case '--keep':
        a.keepDir = r.value();
        break;
      default:
        throw new Error(`unknown argument ${flag} (expected --rounds N, --seed S, --keep DIR)`);
    }
  }
  return a;
}

/** The repository root: this file runs from bench/ (ts) or dist/bench/ (js). */
function repositoryRoot(): string {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'test', 'support', 'crashWriter.ts'))) return dir;
  }
  throw new Error('bench:crash runs from a checkout: test/support/crashWriter.ts not found above ' + __dirname);
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const dir = args.keepDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'engine-crash-bench-'));
  const start = process.hrtime.bigint();
  try {
    const summary = await runCrashRounds({
      dir,
      root: repositoryRoot(),
      rounds: args.rounds,
      seed: args.seed,
      onRound: (round, s) => {
        if ((round + 1) % 50 === 0)
          console.log(`  ${round + 1} rounds: ${s.batchesAcknowledged} batches acknowledged, ${s.batchesPresent} present and whole`);
      },
    });
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    const tables = fs.readdirSync(dir).filter((f) => f.endsWith('.sst')).length;
    console.log(
      `crash loop: ${summary.rounds} SIGKILLs (${summary.killsDuringStartup} during startup), seed ${args.seed}: ` +
        `every one of ${summary.batchesAcknowledged} acknowledged batches survived; ${summary.batchesPresent} batches present, ` +
        `each whole, none partial; ${tables} table files at the end; ${seconds.toFixed(0)} s`,
    );
  } finally {
    if (args.keepDir === null) fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
