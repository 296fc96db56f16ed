/**
 * A directory's files as bytes, for "the directory is unchanged byte for byte" checks (refused
 * opens must write nothing).
 */
import * as fs from 'fs';
import * as path from 'path';

/** Every file under `dir`, recursively: relative name -> hex of its bytes. */
export function snapshotDir(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const name of fs.readdirSync(dir, { recursive: true }) as string[]) {
    const p = path.join(dir, name);
    if (fs.statSync(p).isFile()) out.set(name, fs.readFileSync(p).toString('hex'));
  }
  return out;
}
