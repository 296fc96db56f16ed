/**
 * Child process for the crash test: opens the database in argv[2] and writes synced batches
 * forever, numbered from argv[3], printing each batch id once its write has returned (i.e. is
 * acknowledged as durable). The parent kills it with SIGKILL at a random moment.
 *
 * Batch `id` holds keys b<id>-0 .. b<id>-<n-1> (n = 1 + id % 7, values derived from the id and
 * the key index) and sets "last" to the id, all in one atomic batch.
 */
import { Engine } from '../../src/engine/engine';
import { WriteBatch } from '../../src/engine/writeBatch';

export function batchKeys(id: number): number {
  return 1 + (id % 7);
}

export function batchValue(id: number, j: number): Buffer {
  return Buffer.from(`value-${id}-${j}-${'z'.repeat((id * 31 + j * 17) % 200)}`);
}

async function main(): Promise<void> {
  const dir = process.argv[2];
  let id = Number(process.argv[3]);
  const engine = await Engine.open(dir, {
    writeBufferSizeBytes: 16 * 1024,
    maxImmutableMemtables: 1,
    flushSliceEntries: 16,
    table: { blockSizeBytes: 1024 },
  });
  process.stdout.write('open\n');
  for (;;) {
    const b = new WriteBatch();
    const n = batchKeys(id);
    for (let j = 0; j < n; j++) b.put(Buffer.from(`b${id}-${j}`), batchValue(id, j));
    b.put(Buffer.from('last'), Buffer.from(String(id)));
    await engine.write(b, { sync: true });
    process.stdout.write(`${id}\n`);
    id++;
    // Give background flushes event-loop turns, as a real server would.
    if (id % 8 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
}

if (require.main === module) {
  main().catch((err) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  });
}
