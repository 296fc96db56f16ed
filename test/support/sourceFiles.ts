/**
 * The repository's TypeScript sources below a folder, repository-relative with forward slashes:
 * what the tests that read the code itself (layering, function length) walk.
 */
import * as fs from 'fs';
import * as path from 'path';
import { REPO_ROOT } from './paths';

export function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) sourceFiles(rel, out);
    else if (rel.endsWith('.ts')) out.push(rel);
  }
  return out;
}
