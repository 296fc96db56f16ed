/**
 * docs/library.md, the library guide, kept true: every ```ts block in it is a complete program
 * that imports the package as an application does (`from 'sst-ingest'`), and the ```text block
 * right after it is exactly what it prints. Each block is
 * - wrapped for CommonJS: its imports stay at the top, the rest (top-level await) goes into an
 *   async main(), the lines of the block otherwise unchanged;
 * - type-checked with the TypeScript compiler API under `strict`, `sst-ingest` resolving to
 *   src/index.ts (the declarations the package ships are compiled from it);
 * - run in a fresh directory by a child `node` (sources through test/support/swc-register.js, the
 *   package through a node_modules/sst-ingest there that requires src/index.ts), and must exit 0
 *   printing the text block.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as ts from 'typescript';
import { REPO_ROOT } from '../support/paths';

const GUIDE = path.join(REPO_ROOT, 'docs', 'library.md');
const PACKAGE_ENTRY = path.join(REPO_ROOT, 'src', 'index.ts');
const SWC_REGISTER = path.join(REPO_ROOT, 'test', 'support', 'swc-register.js');
const RUN_TIMEOUT_MS = 90_000;

interface Fence {
  lang: string;
  text: string;
  /** 1-based line of the opening fence in the guide. */
  line: number;
}

interface Example {
  code: string;
  expected: string;
  line: number;
}

function fencesOf(markdown: string): Fence[] {
  const lines = markdown.split('\n');
  const out: Fence[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*$/.exec(lines[i]);
    if (open === null) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i]);
    if (i === lines.length) throw new Error(`docs/library.md line ${start + 1}: a fence that never closes`);
    out.push({ lang: open[1], text: body.join('\n'), line: start + 1 });
  }
  return out;
}

/** Each ts block with the text block that follows it (the next fence must be one). */
function examplesOf(markdown: string): Example[] {
  const fences = fencesOf(markdown);
  const out: Example[] = [];
  fences.forEach((f, i) => {
    if (f.lang !== 'ts') return;
    const next = fences[i + 1];
    if (next === undefined || next.lang !== 'text') {
      throw new Error(`docs/library.md line ${f.line}: a ts example must be followed by a text block with what it prints`);
    }
    out.push({ code: f.text, expected: next.text, line: f.line });
  });
  return out;
}

/** The block as a CommonJS module: imports first, everything else inside an async main(). */
function wrapped(code: string): string {
  const source = ts.createSourceFile('example.ts', code, ts.ScriptTarget.ES2022, true);
  const imports = source.statements.filter(ts.isImportDeclaration);
  const rest = source.statements.filter((s) => !ts.isImportDeclaration(s));
  const bodyStart = rest.length === 0 ? code.length : rest[0].getFullStart();
  return [
    ...imports.map((s) => s.getText(source)),
    'async function main(): Promise<void> {',
    code.slice(bodyStart).replace(/^\n+/, ''),
    '}',
    'main().catch((err: unknown) => {',
    '  console.error(err);',
    '  process.exit(1);',
    '});',
    '',
  ].join('\n');
}

function typeErrors(files: string[]): string[] {
  const options: ts.CompilerOptions = {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.CommonJS,
    moduleResolution: ts.ModuleResolutionKind.Node10,
    lib: ['lib.es2022.d.ts'],
    types: ['node'],
    typeRoots: [path.join(REPO_ROOT, 'node_modules', '@types')],
    esModuleInterop: true,
    skipLibCheck: true,
    noEmit: true,
    baseUrl: REPO_ROOT,
    paths: { 'sst-ingest': [PACKAGE_ENTRY] },
  };
  const program = ts.createProgram(files, options);
  const out: string[] = [];
  for (const file of files) {
    const sf = program.getSourceFile(file);
    if (sf === undefined) throw new Error(`${file} was not read`);
    for (const d of ts.getPreEmitDiagnostics(program, sf)) {
      const where = d.file !== undefined && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : null;
      out.push(`${file}${where === null ? '' : `:${where.line + 1}`}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
    }
  }
  return out;
}

describe('docs/library.md', () => {
  const examples = examplesOf(fs.readFileSync(GUIDE, 'utf8'));
  let root: string;
  const files: string[] = [];

  beforeAll(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'library-guide-'));
    const pkg = path.join(root, 'node_modules', 'sst-ingest');
    fs.mkdirSync(pkg, { recursive: true });
    fs.writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: 'sst-ingest', main: 'index.js' }));
    fs.writeFileSync(path.join(pkg, 'index.js'), `module.exports = require(${JSON.stringify(PACKAGE_ENTRY)});\n`);
    examples.forEach((e, i) => {
      const dir = path.join(root, `example-${i + 1}-line-${e.line}`);
      fs.mkdirSync(dir);
      const file = path.join(dir, 'main.ts');
      fs.writeFileSync(file, wrapped(e.code));
      files.push(file);
    });
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('has examples, each with the output it prints, and README points to it', () => {
    expect(examples.length).toBeGreaterThanOrEqual(8);
    for (const e of examples) {
      expect(e.code).toMatch(/from 'sst-ingest'/);
      expect(e.expected.length).toBeGreaterThan(0);
    }
    expect(fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8').includes('(docs/library.md)')).toBe(true);
  });

  it('type-checks every example under strict against the package root', () => {
    expect(typeErrors(files)).toEqual([]);
  });

  it('runs every example: exit 0, printing exactly its text block', () => {
    examples.forEach((e, i) => {
      const file = files[i];
      let stdout: string;
      try {
        stdout = execFileSync(process.execPath, ['--require', SWC_REGISTER, file], {
          cwd: path.dirname(file),
          encoding: 'utf8',
          timeout: RUN_TIMEOUT_MS,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
      } catch (err) {
        const failed = err as { status?: number; stdout?: string; stderr?: string };
        throw new Error(
          `the example at docs/library.md line ${e.line} failed (exit ${failed.status}):\n${failed.stdout ?? ''}${failed.stderr ?? ''}`,
        );
      }
      expect({ line: e.line, stdout: stdout.trimEnd() }).toEqual({ line: e.line, stdout: e.expected.trimEnd() });
    });
  });
});
