/**
 * A database's whole contents as `keyhex=valuehex` lines in key order, for tests that compare a
 * database after a crash, a resume or a full disk with the one an uninterrupted run left.
 * With `engine` the open engine is read (and left open); otherwise DIR is opened and closed.
 */
import { Engine } from '../../src/engine/engine';

export async function dbContents(dir: string, engine?: Engine): Promise<string[]> {
  const e = engine ?? (await Engine.open(dir, { createIfMissing: false }));
  const out: string[] = [];
  const it = e.newIterator();
  try {
    for (it.first(); it.valid(); it.next()) out.push(`${it.key().toString('hex')}=${it.value().toString('hex')}`);
  } finally {
    it.close();
    if (engine === undefined) await e.close();
  }
  return out;
}
