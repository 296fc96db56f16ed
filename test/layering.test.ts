/**
 * The layering rule, checked on the sources themselves: every relative import in src/ and cli/
 * goes down this stack, never up (nor sideways into a layer not below):
 *
 *   cli/ and the library's root (src/index.ts) → src/server
 *     → src/ingest → src/conflict → src/engine → src/sstwriter → src/sstable → src/base → src/util
 *
 * and no file imports itself back through any chain of imports (a cycle between files, type-only
 * imports included: a type cycle is still two modules that cannot be read or moved apart), nor
 * does a folder import a sibling folder that imports it back (src/ingest/rows and
 * src/ingest/sort, say). A parent folder and its subfolders may import each other: the parent
 * holds both the module that composes the subfolders and the small types they share.
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
import { sourceFiles } from './support/sourceFiles';

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
  { name: 'server', prefixes: ['src/server/'] },
  { name: 'cli and library root', prefixes: ['cli/', 'src/index.ts'] },
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

/** Each file's resolved relative imports. */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const f of files) {
    graph.set(
      f,
      relativeImports(f)
        .map(resolveTarget)
        .filter((t): t is string => t !== null),
    );
  }
  return graph;
}

/**
 * The strongly connected components of more than one node, or of one node that imports itself
 * (Tarjan's algorithm, iterative so a deep chain cannot overflow the stack): each is a cycle.
 */
function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let next = 0;
  for (const root of graph.keys()) {
    if (index.has(root)) continue;
    const work: Array<{ node: string; edge: number }> = [{ node: root, edge: 0 }];
    index.set(root, next);
    low.set(root, next++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const edges = graph.get(frame.node) ?? [];
      if (frame.edge < edges.length) {
        const to = edges[frame.edge++];
        if (!index.has(to)) {
          index.set(to, next);
          low.set(to, next++);
          stack.push(to);
          onStack.add(to);
          work.push({ node: to, edge: 0 });
        } else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node) as number, index.get(to) as number));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].node;
        low.set(parent, Math.min(low.get(parent) as number, low.get(frame.node) as number));
      }
      if (low.get(frame.node) !== index.get(frame.node)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.node);
      if (component.length > 1 || edges.includes(frame.node)) cycles.push(component.sort());
    }
  }
  return cycles;
}

/** Pairs of sibling folders (same parent) that import each other, with one import each way. */
function siblingFolderCycles(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const edges = new Map<string, string>();
  for (const [from, targets] of graph) {
    for (const to of targets) {
      const a = path.posix.dirname(from);
      const b = path.posix.dirname(to);
      if (a !== b && path.posix.dirname(a) === path.posix.dirname(b)) edges.set(`${a} -> ${b}`, `${from} -> ${to}`);
    }
  }
  const found: string[] = [];
  for (const [pair, example] of edges) {
    const [a, b] = pair.split(' -> ');
    const back = edges.get(`${b} -> ${a}`);
    if (back !== undefined && a < b) found.push(`${a} <-> ${b}: ${example}; ${back}`);
  }
  return found;
}

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

  it('has no import cycle between files, type-only imports included', () => {
    expect(importCycles(importGraph(FILES))).toEqual([]);
  });

  it('has no pair of sibling folders that import each other', () => {
    expect(siblingFolderCycles(importGraph(FILES))).toEqual([]);
  });

  it('would catch a cycle (the check itself)', () => {
    const graph = new Map<string, string[]>([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts', 'd.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', []],
      ['e.ts', ['e.ts']],
    ]);
    expect(importCycles(graph)).toEqual([['a.ts', 'b.ts', 'c.ts'], ['e.ts']]);
    expect(
      importCycles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', []],
        ]),
      ),
    ).toEqual([]);
    // A type-only import is an edge too: TypeScript's pre-processor reports it.
    const info = ts.preProcessFile("import type { X } from './x';\nexport type { Y } from './y';", true, true);
    expect(info.importedFiles.map((f) => f.fileName)).toEqual(['./x', './y']);
    expect(
      siblingFolderCycles(
        new Map([
          ['p/a/x.ts', ['p/b/y.ts']],
          ['p/b/y.ts', ['p/a/z.ts']],
          ['p/a/z.ts', []],
        ]),
      ),
    ).toHaveLength(1);
  });

  it('would catch an upward import (the check itself)', () => {
    expect(layerOf('src/sstable/footer.ts')).toBeLessThan(layerOf('src/sstable/reader/block.ts'));
    expect(layerOf('src/engine/engine.ts')).toBeLessThan(layerOf('src/conflict/scan.ts'));
    expect(layerOf('src/ingest/importer.ts')).toBeLessThan(layerOf('src/server/server.ts'));
    expect(layerOf('src/server/server.ts')).toBeLessThan(layerOf('cli/ingest.ts'));
    expect(layerOf('src/server/server.ts')).toBeLessThan(layerOf('src/index.ts'));
    expect(layerOf('src/util/errors.ts')).toBe(0);
  });
});
