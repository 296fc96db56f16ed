/**
 * Where the repository and its fixtures are, for tests at any depth of test/ (tests mirror src/,
 * so a test's own __dirname says nothing stable about the root).
 */
import * as path from 'path';

/** The repository root: test/support/.. /.. */
export const REPO_ROOT = path.resolve(__dirname, '..', '..');
/** fixtures/: the small CSVs and fixtures/rocksdb-golden. */
export const FIXTURES_DIR = path.join(REPO_ROOT, 'fixtures');
/** SSTs written by RocksDB 7.8, with JSON listings of their contents. */
export const GOLDEN_DIR = path.join(FIXTURES_DIR, 'rocksdb-golden');
