/**
 * The true space amplification of a database, for the space policy's tests: its table bytes over
 * those of a fully compacted copy of it (made beside it in `scratchDir`, then removed).
 */
import * as fs from 'fs';
import * as path from 'path';
import { Engine } from '../../src/engine/engine';

/** Bytes of the .sst files in `dir`. */
export function tableBytes(dir: string): number {
  return fs
    .readdirSync(dir)
    .filter((n) => n.endsWith('.sst'))
    .reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
}

export async function trueSpaceAmplification(db: string, scratchDir: string): Promise<number> {
  const copy = fs.mkdtempSync(path.join(scratchDir, 'compacted-'));
  try {
    fs.cpSync(db, copy, { recursive: true });
    fs.rmSync(path.join(copy, 'LOCK'), { force: true });
    const e = await Engine.open(copy, { createIfMissing: false });
    try {
      await e.compactRange();
    } finally {
      await e.close();
    }
    return tableBytes(db) / tableBytes(copy);
  } finally {
    fs.rmSync(copy, { recursive: true, force: true });
  }
}
