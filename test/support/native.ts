/**
 * One gate for every suite that tests the native addon (native/*.c): `describeIfNative` runs the
 * suite when all four of the addon's faces are in use (src/util/nativeUtil.ts,
 * src/sstable/nativeBlockCodec.ts, src/engine/memtable/nativeSkiplist.ts, src/ingest/nativeImport.ts). When they are not:
 * - under SST_INGEST_REQUIRE_NATIVE=1 (set by .ci/run) the suite is one failing test that says
 *   why, so a CI machine whose build silently fell back to JavaScript cannot pass;
 * - otherwise it is skipped, with the reason in its name and on the console, so a machine
 *   without a C compiler still runs the rest (every native function has a JavaScript path the
 *   other suites cover).
 */
import { nativeUtil, nativeUtilStatus } from '../../src/util/nativeUtil';
import { nativeBlockCodec, nativeBlockCodecStatus } from '../../src/sstable/nativeBlockCodec';
import { nativeImport, nativeImportStatus } from '../../src/ingest/nativeImport';
import { nativeSkiplist, nativeSkiplistStatus } from '../../src/engine/memtable/nativeSkiplist';

/** Whether this run demands the native addon (CI). */
export const nativeRequired = process.env.SST_INGEST_REQUIRE_NATIVE === '1';

/** Why the addon is not (wholly) in use, or null when every face loaded. */
export function nativeMissingReason(): string | null {
  const faces: Array<[string, object | null, string]> = [
    ['src/util/nativeUtil.ts', nativeUtil, nativeUtilStatus],
    ['src/sstable/nativeBlockCodec.ts', nativeBlockCodec, nativeBlockCodecStatus],
    ['src/engine/memtable/nativeSkiplist.ts', nativeSkiplist, nativeSkiplistStatus],
    ['src/ingest/nativeImport.ts', nativeImport, nativeImportStatus],
  ];
  const missing = faces.filter(([, face]) => face === null);
  if (missing.length === 0) return null;
  // One addon behind all four: when none loaded, they all say the same.
  if (missing.length === faces.length && missing.every(([, , status]) => status === missing[0][2])) return missing[0][2];
  return missing.map(([name, , status]) => `${name}: ${status}`).join('; ');
}

/** The test a suite is reduced to when SST_INGEST_REQUIRE_NATIVE=1 and the addon is missing. */
function failWithoutNative(reason: string): () => void {
  return () => {
    it('has the native addon it tests', () => {
      throw new Error(`SST_INGEST_REQUIRE_NATIVE=1 but the native addon is not in use (${reason})`);
    });
  };
}

/** As describeIfRocksdb (rocksdbTools.ts): the reason on the console, and in the suite's name. */
function skippedName(name: string, reason: string): string {
  console.warn(`${name}: skipped, the native addon is not in use (${reason}); SST_INGEST_REQUIRE_NATIVE=1 makes this a failure`);
  return `${name} [skipped: native addon not in use]`;
}

/** `describe` for a suite that needs the native addon: runs it, fails it (required) or skips it, as above. */
export function describeIfNative(name: string, fn: () => void): void {
  const reason = nativeMissingReason();
  if (reason === null) describe(name, fn);
  else if (nativeRequired) describe(name, failWithoutNative(reason));
  else describe.skip(skippedName(name, reason), fn);
}

/** `describe.each(cases)` gated the same way: describeIfNative.each([false, true])('name %s', (c) => ...). */
describeIfNative.each = function each<T>(cases: readonly T[]): (name: string, fn: (c: T) => void) => void {
  return (name, fn) => {
    const reason = nativeMissingReason();
    if (reason === null) describe.each(cases)(name, fn);
    else if (nativeRequired) describe.each(cases)(name, failWithoutNative(reason));
    else describe.skip.each(cases)(skippedName(name, reason), fn);
  };
};
