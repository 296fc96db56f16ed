/**
 * The published package, as an application gets it: `npm pack` (which builds dist/ and its type
 * declarations through prepack), then `npm install <tarball>` into a fresh directory outside the
 * repository, then two consumers run there against `require('sst-ingest')`:
 * - fixtures/consumer.ts, type-checked under `strict` against the package's own declarations and
 *   run: it imports a CSV into an engine it keeps writing to, and writes and reads an SST;
 * - fixtures/consumer.js, plain JavaScript: batches, range deletions, bounded iterators, errors.
 * The install uses the npm cache that `npm ci` filled (--prefer-offline) and skips install scripts,
 * so the native block codec is not built there: the package must work on its JavaScript codecs.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { REPO_ROOT } from '../support/paths';

const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';
/** pack builds the whole of dist/ with tsc; install unpacks the dependencies. */
const STEP_TIMEOUT_MS = 240_000;

function run(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, encoding: 'utf8', timeout: STEP_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** What a failing command printed on both streams (tsc reports type errors on stdout). */
function failureOutput(cmd: string, args: string[], cwd: string): string {
  try {
    run(cmd, args, cwd);
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    return `${err.stdout ?? ''}${err.stderr ?? ''}`;
  }
  throw new Error(`${cmd} ${args.join(' ')} succeeded`);
}

describe('the npm tarball', () => {
  let work: string;
  let app: string;

  beforeAll(() => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'sst-ingest-pack-'));
    // Build first, then pack without scripts: prepack's build output would mix into --json.
    run(NPM, ['run', '--silent', 'build'], REPO_ROOT);
    const packed = JSON.parse(run(NPM, ['pack', '--json', '--ignore-scripts', '--pack-destination', work], REPO_ROOT)) as Array<{
      filename: string;
    }>;
    const tarball = path.join(work, packed[0].filename);
    app = path.join(work, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'consumer-app', version: '1.0.0', private: true }));
    run(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball], app);
    for (const f of ['consumer.ts', 'consumer.js']) fs.copyFileSync(path.join(__dirname, 'fixtures', f), path.join(app, f));
  }, 2 * STEP_TIMEOUT_MS);

  afterAll(() => {
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('ships the compiled library, its declarations, the CLI and the web console, and nothing of the tests', () => {
    const pkg = path.join(app, 'node_modules', 'sst-ingest');
    for (const f of [
      'dist/src/index.js',
      'dist/src/index.d.ts',
      'dist/cli/ingest.js',
      'dist/src/ingest/parse/parseWorker.js',
      // The web console's bundle (scripts/build-ui.js, run by `npm run build`), served by `ingest serve` at /ui.
      'dist/ui/index.html',
      'dist/ui/app.js',
      'dist/ui/app.css',
      'package.json',
    ]) {
      expect(fs.existsSync(path.join(pkg, f))).toBe(true);
    }
    expect(fs.existsSync(path.join(pkg, 'test'))).toBe(false);
    expect(fs.existsSync(path.join(pkg, 'dist', 'test'))).toBe(false);
  });

  it('type-checks a strict TypeScript consumer against the declarations, which then runs', () => {
    fs.writeFileSync(
      path.join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          target: 'ES2022',
          module: 'commonjs',
          moduleResolution: 'node',
          outDir: 'out',
          types: ['node'],
          typeRoots: [path.join(REPO_ROOT, 'node_modules', '@types')],
        },
        files: ['consumer.ts'],
      }),
    );
    run(process.execPath, [path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], app);
    fs.writeFileSync(path.join(app, 'data.csv'), 'id,v\nk1,one\nk2,two\nk3,three\n');
    const out = run(
      process.execPath,
      ['out/consumer.js', path.join(app, 'db-ts'), path.join(app, 'data.csv'), path.join(app, 'one.sst')],
      app,
    );
    expect(JSON.parse(out.trim())).toEqual({ landed: true, rows: 3, imported: 'two', writes: true, entries: 1, code: 'USAGE' });
  });

  it('a type error in the consumer fails the check (the declarations are really used)', () => {
    const bad = fs.readFileSync(path.join(app, 'consumer.ts'), 'utf8').replace("onConflict: 'abort'", "onConflict: 'sometimes'");
    fs.writeFileSync(path.join(app, 'bad.ts'), bad);
    const tsc = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const args = [tsc, '--noEmit', '--strict', '--types', 'node', '--typeRoots', path.join(REPO_ROOT, 'node_modules', '@types'), 'bad.ts'];
    expect(failureOutput(process.execPath, args, app)).toMatch(/bad\.ts.*'"sometimes"' is not assignable/s);
  });

  it('runs a plain JavaScript consumer', () => {
    const out = run(process.execPath, ['consumer.js', path.join(app, 'db-js')], app);
    expect(JSON.parse(out.trim())).toEqual({ seq: 1, keys: ['a'], exit: 3 });
  });
});
