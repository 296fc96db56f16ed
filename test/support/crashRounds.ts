/**
 * The engine crash loop, shared by test/engine/crash.test.ts (32 rounds) and bench/crash.ts (as
 * many as asked): each round starts test/support/crashWriter.ts in a child process over the same
 * database, SIGKILLs it at a random moment (one kill in five during startup: recovery, manifest
 * and WAL creation), reopens the database and checks it holds every batch the child acknowledged
 * and no part of any batch it did not complete: batches are all-or-nothing, and since they are
 * written one after another, the batches present form a prefix of the sequence.
 *
 * A failed check throws an Error naming the round and the batch; the caller sees it as a failure.
 */
import { Engine } from '../../src/engine/engine';
import { batchKeys, batchValue } from './crashWriter';
import { mulberry32 } from '../../src/util/random';
import { runTsChildAndKill } from './killChild';

export interface CrashRoundsOptions {
  /** The database directory (created by the first round). */
  dir: string;
  /** The repository root: the child runs test/support/crashWriter.ts through swc-register.js. */
  root: string;
  rounds: number;
  seed: number;
  /** Called after each verified round. */
  onRound?: (round: number, summary: CrashRoundsSummary) => void;
}

export interface CrashRoundsSummary {
  rounds: number;
  /** Batches the children acknowledged, over all rounds. */
  batchesAcknowledged: number;
  /** Batches present after the last round (each checked whole). */
  batchesPresent: number;
  /** Rounds killed before the child had opened the database. */
  killsDuringStartup: number;
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
        if (v === null || !v.equals(batchValue(id, j)))
          throw new Error(`round ${round}: batch ${id} key ${j} is ${v === null ? 'missing' : 'wrong'}`);
      }
    }
    for (let j = 0; j < batchKeys(next); j++) {
      if (engine.get(Buffer.from(`b${next}-${j}`)) !== null) throw new Error(`round ${round}: batch ${next} is partly present (key ${j})`);
    }
    if (has(next + 1)) throw new Error(`round ${round}: batch ${next + 1} present after missing batch ${next}`);
    for (let i = 1; i < acked.length; i++) {
      if (acked[i] !== acked[i - 1] + 1)
        throw new Error(`round ${round}: acknowledgements out of order (${acked[i - 1]} then ${acked[i]})`);
    }
    for (const id of acked) if (id >= next) throw new Error(`round ${round}: acknowledged batch ${id} lost (present up to ${next - 1})`);
    const last = engine.get(Buffer.from('last'));
    if (next > 1 && (last === null || Number(last.toString()) !== next - 1))
      throw new Error(`round ${round}: "last" is ${last?.toString()}, expected ${next - 1}`);
    return next;
  } finally {
    await engine.close();
  }
}

export async function runCrashRounds(opts: CrashRoundsOptions): Promise<CrashRoundsSummary> {
  const r = mulberry32(opts.seed);
  const summary: CrashRoundsSummary = { rounds: 0, batchesAcknowledged: 0, batchesPresent: 0, killsDuringStartup: 0 };
  let nextId = 1;
  for (let round = 0; round < opts.rounds; round++) {
    const afterOpen = r() >= 0.2;
    if (!afterOpen) summary.killsDuringStartup++;
    const delay = afterOpen ? 20 + Math.floor(r() * 250) : Math.floor(r() * 500);
    const acked = await runTsChildAndKill(opts.root, 'test/support/crashWriter.ts', [opts.dir, String(nextId)], delay, afterOpen);
    summary.batchesAcknowledged += acked.length;
    nextId = await verify(opts.dir, nextId, acked, round);
    summary.rounds = round + 1;
    summary.batchesPresent = nextId - 1;
    opts.onRound?.(round, summary);
  }
  return summary;
}
