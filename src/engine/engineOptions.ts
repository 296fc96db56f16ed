/**
 * The options of an engine (Engine.open, src/engine/engine.ts; applied at recovery by open.ts):
 * a file of its own so that the recovery and the engine it builds both read the one type
 * without importing each other. Defaults are stated beside each field and applied by open.ts.
 */
import { TableBuilderOptions } from '../sstwriter/tableBuilder';
import { BlockCache } from '../sstable/reader/blockCache';
import { CompactionOptions } from './compaction/compactionOptions';

/** The table options an engine lets a user choose for the files it writes. */
export type EngineTableOptions = Partial<
  Pick<
    TableBuilderOptions,
    'formatVersion' | 'checksumType' | 'compression' | 'blockSizeBytes' | 'blockRestartInterval' | 'bloomBitsPerKey'
  >
>;

export interface EngineOptions extends CompactionOptions {
  /**
   * Open for reading only, as RocksDB's OpenForReadOnly (default false): no LOCK is taken and
   * nothing in the directory is written, created or deleted (the WALs are replayed into memory;
   * no new WAL, MANIFEST or OPTIONS file); every write, flush, compaction and ingestion fails
   * with NOT_SUPPORTED. The database must exist (createIfMissing and errorIfExists do not
   * apply). Reads see the database as of the open; a writer that has it open meanwhile may
   * delete files under it (a read then fails with an I/O error), as with RocksDB.
   */
  readOnly?: boolean;
  /** Create the database if the directory holds none (default true). */
  createIfMissing?: boolean;
  /** Refuse to open an existing database (default false). */
  errorIfExists?: boolean;
  /**
   * Memtable size at which it becomes immutable and is flushed (default 64 MiB). Each memtable
   * also holds a Bloom filter of its keys, 1/64 of this size (1 MiB at the default), not
   * counted toward it (see memtableFilter).
   */
  writeBufferSizeBytes?: number;
  /**
   * Keep a Bloom filter of each memtable's keys, so a get skips the memtables that do not hold
   * its key (default true; RocksDB's memtable_whole_key_filtering, which RocksDB leaves off).
   * It made gets from three full memtables 2.9x cheaper and costs about 5% of a random put
   * (docs/engine-reads.md); false saves that and 1/64 of the write buffer per memtable.
   */
  memtableFilter?: boolean;
  /** Unflushed immutable memtables past which writers wait (default 2). */
  maxImmutableMemtables?: number;
  /** Default for WriteOptions.sync (default false). */
  sync?: boolean;
  /** Shared data-block cache; default a new cache of blockCacheSizeBytes. */
  blockCache?: BlockCache;
  /** Size of the default block cache (default 32 MiB). */
  blockCacheSizeBytes?: number;
  /** Table readers kept open (default 1000). */
  maxOpenFiles?: number;
  maxManifestFileSizeBytes?: number;
  /** Options for flushed tables (defaults: the table builder's, i.e. format 5, LZ4, 10 bits/key Bloom). */
  table?: EngineTableOptions;
  /** Entries a background flush writes between returns to the event loop (default 4096). */
  flushSliceEntries?: number;
  /**
   * How long a write into a span latched by an ingestion, or an ingestion over a span another
   * holds, may wait before it fails with LATCH_TIMEOUT (default 60 s; see spanLatches.ts).
   */
  latchWaitTimeoutMs?: number;
}
