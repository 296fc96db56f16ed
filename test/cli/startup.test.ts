/**
 * What the command line loads at start: every command pays for its modules before it does
 * anything, so the server (fastify), its HTTP client with the upload path, and csv-parse's
 * synchronous parser load only for the commands that use them (cli/commands/serve.ts,
 * serverTarget.ts, sst.ts), and a nightly `ingest import --db` never loads them.
 */
import * as path from 'path';
import { spawnSync } from 'child_process';
import { REPO_ROOT } from '../support/paths';

/** The modules (repository-relative, or package names) loaded once cli/ingest.ts is required. */
function modulesLoadedByTheCli(): string[] {
  const script = `require(${JSON.stringify(path.join(REPO_ROOT, 'cli/ingest.ts'))});
process.stdout.write(JSON.stringify(Object.keys(require.cache)));`;
  const r = spawnSync(process.execPath, ['-r', path.join(REPO_ROOT, 'test/support/swc-register.js'), '-e', script], {
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  expect(r.status).toBe(0);
  return (JSON.parse(r.stdout) as string[]).map((p) => path.relative(REPO_ROOT, p));
}

test('loading the command line loads neither the server, its client, fastify nor csv-parse/sync', () => {
  const loaded = modulesLoadedByTheCli();
  // What a command does need is there: the import and the engine.
  expect(loaded).toContain('src/ingest/importer.ts');
  expect(loaded).toContain('src/engine/engine.ts');
  for (const lazy of ['src/server/server.ts', 'src/server/client.ts', 'cli/commands/importRemote.ts']) expect(loaded).not.toContain(lazy);
  expect(loaded.filter((p) => p.includes('node_modules/fastify/'))).toEqual([]);
  expect(loaded.filter((p) => p.includes('node_modules/csv-parse/dist/cjs/sync'))).toEqual([]);
});
