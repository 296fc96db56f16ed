/**
 * A require hook that lets a plain `node` child process load the project's TypeScript sources,
 * for tests that must run engine code in a separate process (crash and lock tests spawn one and
 * kill it). It transpiles each .ts file with @swc/core (already a dev dependency, via
 * @swc/jest), the same settings Jest uses; there is no type checking here.
 *
 * Usage: node --require ./test/support/swc-register.js path/to/child.ts
 */
'use strict';
const fs = require('fs');
const Module = require('module');
const { transformSync } = require('@swc/core');

Module._extensions['.ts'] = function compileTypeScript(module, filename) {
  const source = fs.readFileSync(filename, 'utf8');
  const { code } = transformSync(source, {
    filename,
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
    sourceMaps: 'inline',
  });
  module._compile(code, filename);
};
