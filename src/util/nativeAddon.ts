/**
 * The native addon (native/*.c, built by `npm ci` through scripts/build-native.js into
 * build/Release/blockcodec.node), loaded once per thread, or null when it is not built or is
 * switched off; and `nativeFace`, which each layer's typed face is made with:
 *   src/util/nativeUtil.ts            pages, writeback, thread CPU time (native/utilExports.c)
 *   src/sstable/nativeBlockCodec.ts   block read, codecs, checksums, block search (native/sstableExports.c)
 *   src/engine/memtable/nativeSkiplist.ts  the memtable skiplist's searches (native/engineExports.c)
 *   src/ingest/nativeImport.ts        row parse, sort, run gather, merge (native/ingestExports.c)
 *
 * Why one loader under four faces: the addon is one compiled module (one file to build, ship and
 * find), but each layer may only see its own functions and those of the layers below it, so a
 * face holds just the functions its layer declares, and none is the addon object itself.
 *
 * Switches: SST_INGEST_NATIVE=0 in the environment disables the addon (for comparisons and for
 * testing the fallbacks); the module is looked up as build/Release/blockcodec.node in the nearest
 * ancestor directory of this file that has one (src/util/ in tests, dist/src/util/ when built).
 * Whether a missing addon is acceptable is the caller's business: every caller has a JavaScript
 * path, and CI (SST_INGEST_REQUIRE_NATIVE=1) fails the build and the tests instead
 * (scripts/build-native.js, test/support/native.ts).
 */
import * as fs from 'fs';
import * as path from 'path';

export const NATIVE_ADDON_RELATIVE_PATH = path.join('build', 'Release', 'blockcodec.node');
/** How many ancestor directories to look through: src/util → root is 2, dist/src/util → 3. */
const MAX_ANCESTORS_SEARCHED = 4;

interface LoadedAddon {
  /** The module's exports, or null. */
  exports: Readonly<Record<string, unknown>> | null;
  /** Where it was loaded from, or null. */
  file: string | null;
  /** Why it is or is not in use. */
  reason: string;
}

function findModule(): string | null {
  let dir = __dirname;
  for (let i = 0; i <= MAX_ANCESTORS_SEARCHED; i++) {
    const candidate = path.join(dir, NATIVE_ADDON_RELATIVE_PATH);
    if (fs.existsSync(candidate)) return candidate;
    dir = path.dirname(dir);
  }
  return null;
}

function load(): LoadedAddon {
  if (process.env.SST_INGEST_NATIVE === '0') return { exports: null, file: null, reason: 'disabled by SST_INGEST_NATIVE=0' };
  const file = findModule();
  if (file === null)
    return { exports: null, file: null, reason: `${NATIVE_ADDON_RELATIVE_PATH} not built (npm ci builds it with node-gyp)` };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const m: unknown = require(file);
    if (typeof m !== 'object' || m === null) return { exports: null, file, reason: `${file} exports no object` };
    return { exports: m as Record<string, unknown>, file, reason: `loaded ${file}` };
  } catch (e) {
    return { exports: null, file, reason: `cannot load ${file}: ${(e as Error).message}` };
  }
}

const loaded = load();

/** Why the addon is or is not in use ("loaded <file>" when it is), for diagnostics and tests. */
export const nativeAddonStatus: string = loaded.reason;

/** A layer's face: its functions, or null, and why. */
export interface NativeFace<T> {
  face: T | null;
  /** "loaded <file>", or why the face is null. */
  status: string;
}

/**
 * The addon's functions named by `names` (a key for every method of T, so the compiler checks
 * the list is complete) as one object of their own, or null when the addon is not in use or
 * lacks any of them (an addon built from older sources): then its layer runs its JavaScript path.
 */
export function nativeFace<T extends object>(names: Readonly<Record<keyof T & string, true>>): NativeFace<T> {
  const m = loaded.exports;
  if (m === null) return { face: null, status: loaded.reason };
  const face: Record<string, unknown> = {};
  const missing: string[] = [];
  for (const name of Object.keys(names)) {
    const f = m[name];
    if (typeof f === 'function') face[name] = f;
    else missing.push(name);
  }
  if (missing.length > 0) return { face: null, status: `${loaded.file} does not export ${missing.join(', ')}` };
  return { face: Object.freeze(face) as T, status: loaded.reason };
}
