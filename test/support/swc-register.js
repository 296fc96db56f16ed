/**
 * A require hook that lets a plain `node` child process load the project's TypeScript sources,
 * for tests that must run engine code in a separate process (crash and lock tests spawn one and
 * kill it). It transpiles each .ts file with @swc/core (already a dev dependency, via
 * @swc/jest), the same settings Jest uses; there is no type checking here.
 *
 * Usage: node --require ./test/support/swc-register.js path/to/child.ts
 *
 * Cache: the output of each file is kept in <tmp>/sst-ingest-swc-cache/, named by a hash of the
 * file's path and contents, so the many child processes of the crash tests compile each module
 * once instead of once per process (written to a temp name and renamed: concurrent children
 * never read half a file).
 */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const crypto = require('crypto');
const Module = require('module');
const { transformSync } = require('@swc/core');

const CACHE_DIR = path.join(os.tmpdir(), 'sst-ingest-swc-cache');

Module._extensions['.ts'] = function compileTypeScript(module, filename) {
  const source = fs.readFileSync(filename, 'utf8');
  const cached = path.join(CACHE_DIR, `${crypto.createHash('sha1').update(filename).update('\0').update(source).digest('hex')}.js`);
  let hit = null;
  try {
    hit = fs.readFileSync(cached, 'utf8');
  } catch {
    // Not compiled yet.
  }
  if (hit !== null) {
    module._compile(hit, filename);
    return;
  }
  const { code } = transformSync(source, {
    filename,
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
  });
  try {
    fs.mkdirSync(CACHE_DIR, { recursive: true });
    const temp = `${cached}.${process.pid}.${Math.random().toString(16).slice(2)}.tmp`;
    fs.writeFileSync(temp, code);
    fs.renameSync(temp, cached);
  } catch {
    // No cache: compile again next time.
  }
  module._compile(code, filename);
};
