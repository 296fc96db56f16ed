/**
 * What the command line loads at start: every command pays for its modules before it does
 * anything, so the server (fastify), its HTTP client with the upload path, and csv-parse's
 * synchronous parser load only for the commands that use them (cli/commands/serve.ts,
 * serverTarget.ts, sst.ts), and a nightly `ingest import --db` never loads them. The executable
 * (cli/ingest.ts) loads next to nothing itself, so that an import's parse workers start before
 * the command line loads (src/ingest/parse/prestart.ts).
 */
import * as path from 'path';
import { spawnSync } from 'child_process';
import { REPO_ROOT } from '../support/paths';

/** The modules (repository-relative, or package names) loaded once `file` is required. */
function modulesLoadedBy(file: string): string[] {
  const script = `require(${JSON.stringify(path.join(REPO_ROOT, file))});
process.stdout.write(JSON.stringify(Object.keys(require.cache)));`;
  const r = spawnSync(process.execPath, ['-r', path.join(REPO_ROOT, 'test/support/swc-register.js'), '-e', script], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  expect(r.status).toBe(0);
  return (JSON.parse(r.stdout) as string[]).map((p) => path.relative(REPO_ROOT, p));
}

test('the executable loads only what starting parse workers needs, not the command line', () => {
  const loaded = modulesLoadedBy('cli/ingest.ts').filter((p) => !p.startsWith('test/support/') && !p.includes('node_modules'));
  expect(loaded.sort()).toEqual(['cli/ingest.ts', 'src/ingest/parse/prestart.ts', 'src/util/errors.ts', 'src/util/workerBootstrap.ts']);
});

test('loading the command line loads neither the server, its client, fastify nor csv-parse/sync', () => {
  const loaded = modulesLoadedBy('cli/program.ts');
  // What a command does need is there: the import and the engine.
  expect(loaded).toContain('src/ingest/importer.ts');
  expect(loaded).toContain('src/engine/engine.ts');
  for (const lazy of ['src/server/server.ts', 'cli/serverClient.ts', 'cli/commands/importRemote.ts']) expect(loaded).not.toContain(lazy);
  expect(loaded.filter((p) => p.includes('node_modules/fastify/'))).toEqual([]);
  expect(loaded.filter((p) => p.includes('node_modules/csv-parse/dist/cjs/sync'))).toEqual([]);
});
