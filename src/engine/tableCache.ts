/**
 * The table cache: a bounded set of open TableReaders, keyed by file number.
 *
 * Opening a table reads its footer, index, filter and properties, so readers are kept open
 * between reads. At most `maxOpenFiles` readers stay open while unused; the least recently
 * released is closed first. A reader in use (between `acquire` and `release`) is never closed:
 * the cache may briefly hold more than the bound when that many are in use at once, as
 * RocksDB's table cache does.
 *
 * Contract: `acquire` returns a handle whose `release()` must be called exactly once.
 * `evict(fileNumber)` is called when a file leaves the database; its reader closes now if idle,
 * else at its last release. Data blocks are shared through one BlockCache.
 *
 * Range tombstones: `handle.fileTombstones(file)` is the table's fragmented tombstones clipped to
 * the file's bounds (rangedel/tombstoneBoundaries.ts clipRangeOfFile: a file's tombstones count
 * only within its own key range; RocksDB-written files store whole fragments reaching past it).
 * Fragmenting and clipping happen once per open reader and are kept with it; a table without
 * tombstones answers with the shared empty list, allocating and comparing nothing.
 */
import { assert, assertionFailed } from '../util/errors';
import { BlockCache } from '../sstable/reader/blockCache';
import { TableReader } from '../sstable/reader/tableReader';
import { tableFileName } from './fileNames';
import { FileMetaData } from './versionEdit';
import { FragmentedTombstoneList } from '../base/fragmenter';
import { clipFragments } from './rangedel/tombstoneIndex';
import { clipRangeOfFile } from './rangedel/tombstoneBoundaries';

export interface TableHandle {
  readonly reader: TableReader;
  /** The table's range tombstones clipped to `file`'s bounds (file must be this handle's file). */
  fileTombstones(file: FileMetaData): FragmentedTombstoneList;
  release(): void;
}

class Entry implements TableHandle {
  refs = 0;
  evicted = false;
  /** When the entry last became idle (TableCache's release clock), for LRU eviction. */
  lastReleaseTick = 0;
  private clipped: FragmentedTombstoneList | null = null;
  constructor(
    readonly fileNumber: number,
    readonly reader: TableReader,
    private readonly cache: TableCache,
  ) {}
  fileTombstones(file: FileMetaData): FragmentedTombstoneList {
    if (this.clipped === null) {
      if (file.fileNumber !== this.fileNumber) assertionFailed(`tombstones of file ${file.fileNumber} asked of table ${this.fileNumber}`);
      const all = this.reader.fragmentedRangeTombstones();
      if (all.count === 0) {
        this.clipped = all;
      } else {
        // A file's bounds never change (a move keeps them), so the clip is computed once.
        const { lower, upper } = clipRangeOfFile(file.smallest, file.largest);
        this.clipped = clipFragments(all, lower, upper);
      }
    }
    return this.clipped;
  }
  release(): void {
    this.cache.releaseEntry(this);
  }
}

export interface TableCacheOptions {
  maxOpenFiles: number;
  blockCache: BlockCache | undefined;
}

export class TableCache {
  private readonly dir: string;
  private readonly maxOpenFiles: number;
  /** The block cache every reader of this cache shares (undefined: none). */
  readonly blockCache: BlockCache | undefined;
  /** Open readers by file number. */
  private readonly entries = new Map<number, Entry>();
  private idleCount = 0;
  /**
   * Counts releases, so idle entries order by lastReleaseTick. A clock rather than re-inserting
   * into `entries` on every release: that Map churn cost ~10% of a cached point lookup.
   */
  private releaseTick = 0;

  constructor(dir: string, opts: TableCacheOptions) {
    assert(opts.maxOpenFiles >= 1, `maxOpenFiles must be >= 1, got ${opts.maxOpenFiles}`);
    this.dir = dir;
    this.maxOpenFiles = opts.maxOpenFiles;
    this.blockCache = opts.blockCache;
  }

  acquire(file: FileMetaData): TableHandle {
    let e = this.entries.get(file.fileNumber);
    if (e === undefined) {
      // An ingested file's keys are read with the sequence number the manifest records for it:
      // RocksDB's rule, the file's largest seqno (the reader applies it to external files only).
      const reader = TableReader.open(tableFileName(this.dir, file.fileNumber), {
        blockCache: this.blockCache,
        fileNumber: file.fileNumber,
        globalSeqno: file.globalSeqno ?? file.largestSeq,
      });
      e = new Entry(file.fileNumber, reader, this);
      this.entries.set(file.fileNumber, e);
    } else if (e.refs === 0) {
      this.idleCount--;
    }
    e.refs++;
    return e;
  }

  releaseEntry(e: Entry): void {
    if (e.refs <= 0) assertionFailed(`table ${e.fileNumber} released more often than acquired`);
    if (--e.refs > 0) return;
    if (e.evicted) {
      e.reader.close();
      return;
    }
    e.lastReleaseTick = ++this.releaseTick;
    this.idleCount++;
    if (this.entries.size > this.maxOpenFiles) this.trim();
  }

  /** Forgets a file that left the database. */
  evict(fileNumber: number): void {
    const e = this.entries.get(fileNumber);
    if (e === undefined) return;
    this.entries.delete(fileNumber);
    e.evicted = true;
    if (e.refs === 0) {
      this.idleCount--;
      e.reader.close();
    }
  }

  get openCount(): number {
    return this.entries.size;
  }

  /** Closes every idle reader; readers in use close at their release. */
  close(): void {
    for (const fileNumber of [...this.entries.keys()]) this.evict(fileNumber);
  }

  /** Closes least recently released idle readers until at most maxOpenFiles are open (or none is idle). */
  private trim(): void {
    // A scan per eviction: only runs when a newly opened table pushes the count over the bound.
    while (this.entries.size > this.maxOpenFiles && this.idleCount > 0) {
      let victim: Entry | null = null;
      for (const e of this.entries.values()) {
        if (e.refs === 0 && (victim === null || e.lastReleaseTick < victim.lastReleaseTick)) victim = e;
      }
      if (victim === null) break;
      this.evict(victim.fileNumber);
    }
  }
}
