/**
 * The console's static route (src/server/routes/console.ts) over HTTP, without a browser: /ui and
 * /ui/ are index.html, assets have their content types, an ETag and `no-cache` (304 when
 * unchanged), HEAD has no body, the files need no token while /v1 still does, no request
 * names a file outside the bundle folder, and a missing bundle says to run `npm run build`.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import { AddressInfo } from 'net';
import * as path from 'path';
import { IngestServer } from '../../../src/server/server';
import { consoleBundleDir, consoleRoute, packageRootOf } from '../../../src/server/routes/console';
import { errorReplyOf } from '../../../src/server/httpErrors';
import type { RequestContext } from '../../../src/server/requestContext';
import { REPO_ROOT } from '../../support/paths';
import { expectError, send, tmpDir } from '../helpers';

const TOKEN = 'static-route-test-token';
let server: IngestServer;
let dir: string;

beforeAll(async () => {
  execFileSync(process.execPath, [path.join(REPO_ROOT, 'scripts', 'build-ui.js')], { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  dir = tmpDir('console-static-');
  server = await IngestServer.start({ dbDir: path.join(dir, 'db'), host: '127.0.0.1', port: 0, token: TOKEN, log: () => undefined });
}, 60_000);

afterAll(async () => {
  await server?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('the bundle folder is dist/ui under the package root, found from the sources', () => {
  expect(packageRootOf(__dirname)).toBe(REPO_ROOT);
  expect(consoleBundleDir()).toBe(path.join(REPO_ROOT, 'dist', 'ui'));
});

test('/ui and /ui/ are index.html with a CSP allowing nothing from elsewhere; assets have their types; no token needed', async () => {
  const index = fs.readFileSync(path.join(consoleBundleDir(), 'index.html'));
  for (const p of ['/ui', '/ui/', '/ui/index.html', '/ui?x=1']) {
    const r = await send(server.url, { path: p });
    expect({ path: p, status: r.status }).toEqual({ path: p, status: 200 });
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.body.equals(index)).toBe(true);
    expect(r.headers['content-security-policy']).toContain("default-src 'none'; script-src 'self'");
  }
  const js = await send(server.url, { path: '/ui/app.js' });
  expect(js.status).toBe(200);
  expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
  expect(js.body.equals(fs.readFileSync(path.join(consoleBundleDir(), 'app.js')))).toBe(true);
  expect(js.headers['cache-control']).toBe('no-cache');
  expect(js.headers['x-content-type-options']).toBe('nosniff');
  expect((await send(server.url, { path: '/ui/app.css' })).headers['content-type']).toBe('text/css; charset=utf-8');
  // The data is not public: the console's own calls carry the token.
  expectError(await send(server.url, { path: '/v1/stats' }), 401, 'UNAUTHORIZED', '');
  // Nothing in the bundle reaches outside this server.
  expect(js.body.toString('utf8')).not.toMatch(/https?:\/\/(?!www\.w3\.org)[a-z]/i);
});

test('an unchanged file is a 304 to its ETag; HEAD has the headers and no body', async () => {
  const first = await send(server.url, { path: '/ui/app.js' });
  const etag = String(first.headers.etag);
  const again = await send(server.url, { path: '/ui/app.js', headers: { 'if-none-match': etag } });
  expect(again.status).toBe(304);
  expect(again.body.length).toBe(0);
  const head = await send(server.url, { method: 'HEAD', path: '/ui/app.js' });
  expect(head.status).toBe(200);
  expect(head.headers['content-length']).toBe(String(first.body.length));
  expect(head.body.length).toBe(0);
  const post = await send(server.url, { method: 'POST', path: '/ui/app.js', body: 'x' });
  expectError(post, 405, 'USAGE', 'POST is not allowed');
});

test('no request names a file outside the bundle folder', async () => {
  for (const p of [
    '/ui/..%2fpackage.json',
    '/ui/%2e%2e%2fpackage.json',
    '/ui/../package.json',
    '/ui/a/b.js',
    '/ui/.hidden',
    '/ui/%00',
    '/ui/%E0%A4%A',
  ]) {
    const r = await send(server.url, { path: p });
    expect({ path: p, status: r.status }).toEqual({ path: p, status: 404 });
    expect(r.body.toString()).not.toContain('"sst-ingest"');
  }
  expectError(await send(server.url, { path: '/ui/nothing.js' }), 404, 'NOT_FOUND', 'no console file nothing.js');
});

test('a missing bundle is a 404 that says to run npm run build', async () => {
  const empty = tmpDir('console-no-bundle-');
  const handler = consoleRoute(() => empty);
  const local = http.createServer((req, res) => {
    const param = (req.url ?? '').replace(/^\/ui\/?/, '');
    handler({ req, res, param } as unknown as RequestContext).catch((err: unknown) => {
      const reply = errorReplyOf(err);
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: reply.code, message: reply.message } }));
    });
  });
  await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(local.address() as AddressInfo).port}`;
    expectError(await send(url, { path: '/ui' }), 404, 'NOT_FOUND', 'the web console is not built');
    expectError(await send(url, { path: '/ui/app.js' }), 404, 'NOT_FOUND', 'run npm run build');
  } finally {
    await new Promise((resolve) => local.close(resolve));
    fs.rmSync(empty, { recursive: true, force: true });
  }
});
