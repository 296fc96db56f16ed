/*
 * writeback: start the kernel writing a file's recent bytes to disk without waiting for it
 * (Linux sync_file_range with SYNC_FILE_RANGE_WRITE, what RocksDB's bytes_per_sync does).
 *
 * Why: a table file is written in 1 MiB chunks and fsynced once at the end; with nothing written
 * back before, that fsync waits for the whole file (about 50 ms for a 37 MB table here). Started
 * as the file grows, the writeback runs while the writer computes the next blocks, and the final
 * fsync waits only for the tail. Only a hint: durability still comes from that fsync alone.
 *
 * punch_hole frees a file range's blocks and page cache at once (fallocate PUNCH_HOLE, size
 * kept): the merge gives back the run bytes it has consumed, so the SSTs it writes reuse those
 * pages (see RunReadRegion in src/ingest/sort/runFile.ts for when that is safe and why it pays).
 */
#define _GNU_SOURCE
#include "writeback.h"

#include <fcntl.h>

int start_writeback(int fd, int64_t offset, int64_t length) {
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
  return sync_file_range(fd, (off_t)offset, (off_t)length, SYNC_FILE_RANGE_WRITE) == 0;
#else
  (void)fd;
  (void)offset;
  (void)length;
  return 0;
#endif
}

int punch_hole(int fd, int64_t offset, int64_t length) {
#if defined(__linux__) && defined(FALLOC_FL_PUNCH_HOLE)
  return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)length) == 0;
#else
  (void)fd;
  (void)offset;
  (void)length;
  return 0;
#endif
}
