/**
 * The layering rule, checked on the sources themselves: every relative import in src/ and cli/
 * goes down this stack, never up (nor sideways into a layer not below):
 *
 *   entry points (cli/, src/index.ts, src/server/)
 *     → src/ingest → src/conflict → src/engine → src/sstwriter → src/sstable → src/base → src/util
 *
 * Inside src/sstable the table format (src/sstable/*.ts) sits below its reader
 * (src/sstable/reader/), so the format never reaches into the reader. A file in no known layer
 * fails the test too: a new folder must be given its place here on purpose.
 *
 * Imports are read with TypeScript's own pre-processor (static imports, `export ... from`,
 * `require(...)` and `import(...)`), so a multi-line import or a type-only import counts.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';
import { REPO_ROOT } from './support/paths';

/** Lowest first. A file belongs to the first layer (from the top) whose prefix it starts with. */
const LAYERS: ReadonlyArray<{ name: string; prefixes: string[] }> = [
  { name: 'util', prefixes: ['src/util/'] },
  { name: 'base', prefixes: ['src/base/'] },
  { name: 'sstable', prefixes: ['src/sstable/'] },
  { name: 'sstable/reader', prefixes: ['src/sstable/reader/'] },
  { name: 'sstwriter', prefixes: ['src/sstwriter/'] },
  { name: 'engine', prefixes: ['src/engine/'] },
  { name: 'conflict', prefixes: ['src/conflict/'] },
  { name: 'ingest', prefixes: ['src/ingest/'] },
  { name: 'entry points', prefixes: ['cli/', 'src/server/', 'src/index.ts'] },
];

/** Index into LAYERS of a repository-relative path, or -1. Longest matching prefix wins. */
function layerOf(file: string): number {
  let best = -1;
  let bestLength = -1;
  LAYERS.forEach((layer, i) => {
    for (const p of layer.prefixes) {
      if (file.startsWith(p) && p.length > bestLength) {
        best = i;
        bestLength = p.length;
      }
    }
  });
  return best;
}

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(path.join(REPO_ROOT, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, e.name);
    if (e.isDirectory()) sourceFiles(rel, out);
    else if (rel.endsWith('.ts')) out.push(rel);
  }
  return out;
}

/** Repository-relative targets of a file's relative imports (without extension). */
function relativeImports(file: string): string[] {
  const text = fs.readFileSync(path.join(REPO_ROOT, file), 'utf8');
  const info = ts.preProcessFile(text, true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => path.posix.normalize(path.posix.join(path.posix.dirname(file), spec)));
}

/** The import's file as it exists: x.ts or x/index.ts. */
function resolveTarget(target: string): string | null {
  for (const candidate of [`${target}.ts`, `${target}/index.ts`, target]) {
    if (fs.existsSync(path.join(REPO_ROOT, candidate)) && candidate.endsWith('.ts')) return candidate;
  }
  return null;
}

const FILES = [...sourceFiles('src'), ...sourceFiles('cli')];

describe('layering', () => {
  it('finds the sources it checks', () => {
    expect(FILES.length).toBeGreaterThan(100);
    expect(FILES).toContain('src/sstable/reader/tableReader.ts');
  });

  it('places every source file in a layer', () => {
    expect(FILES.filter((f) => layerOf(f) < 0)).toEqual([]);
  });

  it('resolves every relative import', () => {
    const unresolved: string[] = [];
    for (const f of FILES) {
      for (const t of relativeImports(f)) if (resolveTarget(t) === null && !t.endsWith('.json')) unresolved.push(`${f} -> ${t}`);
    }
    expect(unresolved).toEqual([]);
  });

  it('has no import that runs up the stack', () => {
    const upward: string[] = [];
    for (const f of FILES) {
      const from = layerOf(f);
      for (const t of relativeImports(f)) {
        const resolved = resolveTarget(t);
        if (resolved === null) continue;
        const to = layerOf(resolved);
        if (to > from) upward.push(`${f} (${LAYERS[from].name}) -> ${resolved} (${LAYERS[to].name})`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('would catch an upward import (the check itself)', () => {
    expect(layerOf('src/sstable/footer.ts')).toBeLessThan(layerOf('src/sstable/reader/block.ts'));
    expect(layerOf('src/engine/engine.ts')).toBeLessThan(layerOf('src/conflict/scan.ts'));
    expect(layerOf('src/ingest/importer.ts')).toBeLessThan(layerOf('cli/ingest.ts'));
    expect(layerOf('src/util/errors.ts')).toBe(0);
  });
});
