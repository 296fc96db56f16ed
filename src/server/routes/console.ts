/**
 * GET /ui, /ui/ and /ui/{asset}: the web console's static files (docs/console.md), the bundle
 * scripts/build-ui.js writes to dist/ui/ (index.html, app.js, app.css). Public: the files carry
 * no data; every data call the console makes is an ordinary /v1 request with the token.
 *
 * The bundle folder is found from the package root (the folder above this module holding the
 * sst-ingest package.json: src/server/routes/ run from sources, dist/src/server/routes/ when
 * built), so the server serves the same dist/ui either way. /ui and /ui/ are index.html; an
 * asset is one plain file name (letters, digits, '.', '_', '-', starting with a letter or digit:
 * no '/' and no '..', so no path leaves the folder), streamed from disk, never held in memory.
 *
 * Replies: 200 with the content type of its extension, an ETag (size and mtime) and
 * `cache-control: no-cache` (the names are fixed, so the browser revalidates and a rebuilt
 * console is never served stale; unchanged files are a 304), `x-content-type-options: nosniff`;
 * index.html also a Content-Security-Policy allowing nothing from elsewhere (scripts, styles,
 * fetches and images only from this server). A missing bundle is 404 NOT_FOUND saying to run
 * `npm run build`; an unknown asset 404 NOT_FOUND.
 */
import * as fs from 'fs';
import * as path from 'path';
import { HttpError } from '../httpErrors';
import { RequestContext } from '../requestContext';

export const CONSOLE_PATH = '/ui';
export const CONSOLE_PREFIX = '/ui/';

/** One file name inside the bundle folder: no separators, no leading dot (so neither '.' nor '..'). */
const ASSET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Folders walked up from this module looking for the package root (it is three or four above). */
const MAX_LEVELS_UP = 6;
const PACKAGE_NAME = 'sst-ingest';

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

/** Nothing from elsewhere; inline scripts neither (the bundle has none); style attributes are set through the CSSOM only. */
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The package root above `fromDir`, or null. */
export function packageRootOf(fromDir: string): string | null {
  let dir = fromDir;
  for (let level = 0; level < MAX_LEVELS_UP; level++) {
    const file = path.join(dir, 'package.json');
    try {
      const pkg = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: unknown };
      if (pkg.name === PACKAGE_NAME) return dir;
    } catch {
      // No package.json here (or not ours): look further up.
    }
    dir = path.dirname(dir);
  }
  return null;
}

let defaultBundleDir: string | null = null;

/** dist/ui under the package root (cached: the root does not move while the server runs). */
export function consoleBundleDir(): string {
  if (defaultBundleDir === null)
    defaultBundleDir = path.join(packageRootOf(__dirname) ?? path.resolve(__dirname, '..', '..', '..'), 'dist', 'ui');
  return defaultBundleDir;
}

/** The asset a request names: index.html for /ui and /ui/, else the checked file name. */
function assetNameOf(rawPath: string, param: string): string {
  if (rawPath === CONSOLE_PATH || param === '') return 'index.html';
  let name: string;
  try {
    name = decodeURIComponent(param);
  } catch {
    name = '';
  }
  if (!ASSET_NAME.test(name)) throw new HttpError(404, 'NOT_FOUND', `no console file ${param.slice(0, 200)}`);
  return name;
}

async function statFile(file: string): Promise<fs.Stats | null> {
  try {
    const stats = await fs.promises.stat(file);
    return stats.isFile() ? stats : null;
  } catch {
    return null;
  }
}

function headersOf(name: string, etag: string): Record<string, string | number> {
  const headers: Record<string, string | number> = {
    'content-type': CONTENT_TYPES[path.extname(name).toLowerCase()] ?? 'application/octet-stream',
    'cache-control': 'no-cache',
    etag,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
  if (name.endsWith('.html')) {
    headers['content-security-policy'] = CONTENT_SECURITY_POLICY;
    headers['x-frame-options'] = 'DENY';
  }
  return headers;
}

/** Streams `file` as the reply; a read error mid-way cuts the connection (the headers are out). */
function streamFile(ctx: RequestContext, file: string): Promise<void> {
  return new Promise((resolve) => {
    const stream = fs.createReadStream(file);
    stream.on('error', () => {
      ctx.res.destroy();
      resolve();
    });
    ctx.res.on('close', () => {
      stream.destroy();
      resolve();
    });
    stream.pipe(ctx.res);
  });
}

/** The handler for a bundle folder (tests give their own; the server the package's dist/ui). */
export function consoleRoute(bundleDir: () => string = consoleBundleDir): (ctx: RequestContext) => Promise<void> {
  return async (ctx) => {
    const rawPath = (ctx.req.url ?? '').split('?')[0];
    const dir = bundleDir();
    const name = assetNameOf(rawPath, ctx.param);
    const file = path.join(dir, name);
    const stats = await statFile(file);
    if (stats === null) {
      if ((await statFile(path.join(dir, 'index.html'))) === null) {
        throw new HttpError(404, 'NOT_FOUND', `the web console is not built (no ${path.join(dir, 'index.html')}): run npm run build`);
      }
      throw new HttpError(404, 'NOT_FOUND', `no console file ${name}`);
    }
    const etag = `"${stats.size.toString(16)}-${Math.floor(stats.mtimeMs).toString(16)}"`;
    const headers = headersOf(name, etag);
    if (ctx.req.headers['if-none-match'] === etag) {
      ctx.res.writeHead(304, headers);
      ctx.res.end();
      return;
    }
    ctx.res.writeHead(200, { ...headers, 'content-length': stats.size });
    if (ctx.req.method === 'HEAD') {
      ctx.res.end();
      return;
    }
    await streamFile(ctx, file);
  };
}
