#!/usr/bin/env node
/**
 * Bundles the web console (ui/src, Preact + uPlot) with esbuild into dist/ui/: index.html,
 * app.js (one minified script, no source map) and app.css (uPlot's styles and ours). `npm run
 * build` runs it, and so does the browser test before it starts, so `npm test` on a clean
 * checkout needs no build first. The server's GET /ui serves that folder
 * (src/server/routes/console.ts); nothing in it is fetched from anywhere else at run time.
 *
 * The bundle is written to a fresh folder beside dist/ui and moved into place, so a server
 * never serves a half-written bundle; when dist/ui already holds the same bytes (esbuild's output
 * is deterministic) it is left alone, so two test files building at once in parallel Jest workers
 * never pull the folder from under a server that is serving it. Usage: node scripts/build-ui.js [--out DIR]
 */
'use strict';
const fs = require('fs');
const path = require('path');
const esbuild = require('esbuild');

const root = path.resolve(__dirname, '..');
const outFlag = process.argv.indexOf('--out');
const outDir = outFlag >= 0 ? path.resolve(process.argv[outFlag + 1]) : path.join(root, 'dist', 'ui');

/** Tries to move the new bundle into place, at most this many times (another build may be moving its own). */
const INSTALL_ATTEMPTS = 5;

/** True when folders `a` and `b` hold the same file names with the same bytes. */
function sameBundle(a, b) {
  try {
    const names = fs.readdirSync(a).sort();
    const others = fs.readdirSync(b).sort();
    if (names.join('/') !== others.join('/')) return false;
    return names.every((n) => fs.readFileSync(path.join(a, n)).equals(fs.readFileSync(path.join(b, n))));
  } catch {
    return false;
  }
}

/** Moves `tmpDir` to `outDir`, unless that holds the same bundle already (then `tmpDir` goes). */
function install(tmpDir) {
  for (let attempt = 1; ; attempt++) {
    if (sameBundle(tmpDir, outDir)) {
      fs.rmSync(tmpDir, { recursive: true, force: true });
      return;
    }
    try {
      fs.rmSync(outDir, { recursive: true, force: true });
      fs.renameSync(tmpDir, outDir);
      return;
    } catch (err) {
      // ENOTEMPTY/EEXIST: another build put its folder there between the two calls; compare again.
      if (attempt >= INSTALL_ATTEMPTS) throw err;
    }
  }
}

async function main() {
  fs.mkdirSync(path.dirname(outDir), { recursive: true });
  const tmpDir = fs.mkdtempSync(`${outDir}.tmp-`);
  try {
    const result = await esbuild.build({
      absWorkingDir: root,
      entryPoints: ['ui/src/main.tsx'],
      bundle: true,
      minify: true,
      format: 'iife',
      target: 'es2020',
      jsx: 'automatic',
      jsxImportSource: 'preact',
      outfile: path.join(tmpDir, 'app.js'),
      sourcemap: false,
      legalComments: 'none',
      logLevel: 'warning',
      metafile: true,
    });
    fs.copyFileSync(path.join(root, 'ui', 'index.html'), path.join(tmpDir, 'index.html'));
    fs.chmodSync(tmpDir, 0o755); // mkdtemp makes it 0700; the bundle is public
    install(tmpDir);
    const sizes = Object.entries(result.metafile.outputs).map(([f, o]) => `${path.basename(f)} ${(o.bytes / 1024).toFixed(1)} KiB`);
    process.stderr.write(`build-ui: ${path.relative(root, outDir) || outDir}: index.html, ${sizes.join(', ')}\n`);
  } catch (err) {
    fs.rmSync(tmpDir, { recursive: true, force: true });
    throw err;
  }
}

main().catch((err) => {
  process.stderr.write(`build-ui: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
