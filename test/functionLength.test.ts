/**
 * Functions in src/ingest stay short enough to read in one screen (issue 36: about 70 lines;
 * this test allows MAX_LINES so a function a few lines over does not fail the build, while a
 * 100-line function does). Counted from a function's first line to its closing brace, with
 * TypeScript's own parser: declarations, methods, constructors, arrow functions and function
 * expressions alike.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';
import { REPO_ROOT } from './support/paths';
import { sourceFiles } from './support/sourceFiles';

const MAX_LINES = 80;
const CHECKED = ['src/ingest'];

/** `file:line name (N lines)` for every function of `text` longer than `maxLines`. */
function longFunctions(file: string, text: string, maxLines: number): string[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (n: ts.Node): void => {
    const isFunction =
      ts.isFunctionDeclaration(n) ||
      ts.isMethodDeclaration(n) ||
      ts.isConstructorDeclaration(n) ||
      ts.isArrowFunction(n) ||
      ts.isFunctionExpression(n);
    if (isFunction && n.body !== undefined) {
      const first = sf.getLineAndCharacterOfPosition(n.getStart()).line;
      const last = sf.getLineAndCharacterOfPosition(n.end).line;
      const lines = last - first + 1;
      const name = n.name !== undefined ? n.name.getText() : '<anonymous>';
      if (lines > maxLines) found.push(`${file}:${first + 1} ${name} (${lines} lines)`);
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return found;
}

test(`functions in ${CHECKED.join(', ')} are at most ${MAX_LINES} lines`, () => {
  const files = CHECKED.flatMap((d) => sourceFiles(d));
  expect(files.length).toBeGreaterThan(30);
  const long = files.flatMap((f) => longFunctions(f, fs.readFileSync(path.join(REPO_ROOT, f), 'utf8'), MAX_LINES));
  expect(long).toEqual([]);
});

test('the count sees a long function (the check itself)', () => {
  const body = Array.from({ length: 90 }, (_, i) => `  const x${i} = ${i};`).join('\n');
  expect(longFunctions('x.ts', `function long(): void {\n${body}\n}\n`, MAX_LINES)).toEqual(['x.ts:1 long (92 lines)']);
  expect(longFunctions('x.ts', 'const f = (): number => 1;\n', MAX_LINES)).toEqual([]);
});
