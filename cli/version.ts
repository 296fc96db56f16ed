/**
 * The package's version, for `ingest --version`: read from the package.json above this module,
 * which is cli/ in a checkout (run through swc) and dist/cli/ in the built package, so the file
 * is looked for upwards rather than at a fixed relative path.
 */
import * as fs from 'fs';
import * as path from 'path';

/** Directories walked up at most: the package root is one or two above this module. */
const MAX_LEVELS_UP = 4;

export function packageVersion(): string {
  let dir = __dirname;
  for (let level = 0; level < MAX_LEVELS_UP; level++) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'sst-ingest' && typeof pkg.version === 'string') return pkg.version;
    }
    dir = path.dirname(dir);
  }
  return 'unknown';
}
