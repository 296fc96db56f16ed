/**
 * A value made on first use: `onFirstUse(make)` returns a getter that calls `make` once, the
 * first time it is called, and returns the same value ever after.
 *
 * Why: a package required at the top of a module is loaded by every thread that loads the
 * module (the main thread and each worker), a few milliseconds each, even when the path that
 * needs it never runs (lz4-napi once the native codec is built, csv-parse for the fast
 * tokenizer's dialects). `onFirstUse(() => require('pkg') as typeof import('pkg'))` defers that
 * to the first call. If `make` throws, nothing is kept and the next call tries again.
 */
export function onFirstUse<T>(make: () => T): () => T {
  let made = false;
  let value: T | undefined;
  return () => {
    if (!made) {
      value = make();
      made = true;
    }
    return value as T;
  };
}
