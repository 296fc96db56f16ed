#!/usr/bin/env node
/**
 * Builds the native addon (binding.gyp → build/Release/blockcodec.node) with node-gyp.
 * npm runs this as the package's `install` script, so `npm ci` builds it; run it by hand with
 * `npm run build:native` after editing native/.
 *
 * Why it may fail softly: the addon only speeds things up (src/util/nativeAddon.ts loads it, and
 * every caller falls back to JavaScript that computes the same results), so a machine without a C compiler still
 * gets a working tool: this prints a warning and exits 0. With SST_INGEST_REQUIRE_NATIVE=1 (CI sets
 * it) a failed build fails the install instead.
 */
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
const required = process.env.SST_INGEST_REQUIRE_NATIVE === '1';

/** node-gyp as npm provides it to install scripts, else the copy bundled with npm, else PATH. */
function nodeGypCommand() {
  const fromNpm = process.env.npm_config_node_gyp;
  if (fromNpm && fs.existsSync(fromNpm)) return [process.execPath, [fromNpm]];
  const npmDir = path.join(
    path.dirname(process.execPath),
    '..',
    'lib',
    'node_modules',
    'npm',
    'node_modules',
    'node-gyp',
    'bin',
    'node-gyp.js',
  );
  if (fs.existsSync(npmDir)) return [process.execPath, [npmDir]];
  return ['node-gyp', []];
}

/**
 * `--nodedir` when the running node was installed with its own headers (Debian's and NodeSource's
 * packages put them in PREFIX/include/node): node-gyp then builds against exactly this node, and
 * needs no download of the headers from nodejs.org, which fails on a machine without that access.
 * An explicit npm_config_nodedir wins.
 */
function nodeDirArgs() {
  if (process.env.npm_config_nodedir) return [];
  const prefixDir = path.resolve(path.dirname(process.execPath), '..');
  return fs.existsSync(path.join(prefixDir, 'include', 'node', 'node_api.h')) ? [`--nodedir=${prefixDir}`] : [];
}

const [command, prefix] = nodeGypCommand();
const result = spawnSync(command, [...prefix, 'rebuild', ...nodeDirArgs()], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
if (result.status === 0) {
  process.exit(0);
}
const why = result.error ? result.error.message : `node-gyp exited with ${result.status}`;
if (required) {
  console.error(`build-native: the native block codec did not build (${why}) and SST_INGEST_REQUIRE_NATIVE=1`);
  process.exit(1);
}
console.error(`build-native: WARNING: the native block codec did not build (${why}).`);
console.error(
  'build-native: everything works without it, but block reads are about 2x slower. Install python3, make and a C compiler, then run `npm run build:native`.',
);
process.exit(0);
