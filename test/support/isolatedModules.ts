/**
 * Loads modules in a Jest module registry of their own while one environment variable has a
 * given value, then restores the variable. For comparing a module with a switch read at load
 * time (SST_INGEST_NATIVE_SEARCH, SST_INGEST_NATIVE_SKIPLIST) against itself with the switch
 * flipped, side by side in one test: `load` runs inside jest.isolateModules and requires what
 * it needs (paths relative to the caller's file).
 */
export function loadWithEnv<T>(name: string, value: string, load: () => T): T {
  const saved = process.env[name];
  process.env[name] = value;
  const box: { loaded?: T } = {};
  try {
    jest.isolateModules(() => {
      box.loaded = load();
    });
  } finally {
    if (saved === undefined) delete process.env[name];
    else process.env[name] = saved;
  }
  if (box.loaded === undefined) throw new Error(`modules did not load with ${name}=${value}`);
  return box.loaded;
}
