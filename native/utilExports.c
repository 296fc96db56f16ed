/*
 * utilExports: the generic helpers' Node-API glue (C11), registered by addon.c: memory advice,
 * file-range hints, the thread CPU clock and whole-file locks, which know nothing of tables or
 * rows. Its TypeScript faces are src/util/nativeUtil.ts and, for the locks, src/util/fileLock.ts;
 * the file-range calls are writeback.c.
 *
 * Exports (all synchronous; the first five are hints or measurements: a false or -1 result means
 * "not done here", never an error, so callers need no fallback beyond skipping the hint):
 *   adviseHugePages(view) -> boolean  madvise(MADV_HUGEPAGE) over the view's 2 MiB-aligned
 *       interior, for a large fresh buffer (the import's sort buffers)
 *   releasePages(view) -> boolean  madvise(MADV_DONTNEED) over the whole pages inside the view:
 *       a large buffer's memory back to the kernel now
 *   startWriteback(fd, offset, length) -> boolean  start a file range's writeback (writeback.c)
 *   punchHole(fd, offset, length) -> boolean  free a file range's blocks and pages (writeback.c)
 *   threadCpuSeconds() -> number  the calling thread's own CPU time (CLOCK_THREAD_CPUTIME_ID)
 *   lockWholeFile(fd) -> number  fcntl(F_SETLK) write lock over the whole file, as RocksDB locks
 *       DIR/LOCK: 0 when taken, else the errno (EAGAIN, EACCES: another process holds a lock)
 *   wholeFileLockHolder(fd) -> number  fcntl(F_GETLK): the pid of a process whose lock conflicts
 *       with a whole-file write lock (0: one whose pid the kernel cannot give), -1 when none
 *       does, -2 when the call fails
 *
 * Unlike the hints above, the two lock calls are the database's exclusion with RocksDB (src/util/
 * fileLock.ts, src/engine/lockFile.ts): their result is never to be ignored. POSIX record locks
 * belong to the process and are all dropped when it closes ANY descriptor of the file, so the
 * caller keeps the one descriptor open while it holds the lock and opens the file nowhere else.
 *
 * Views are typed arrays of any element type; their memory is [data, data + byteLength), and only
 * whole pages (or 2 MiB units) inside it are advised, so a neighbour's memory is never touched.
 * Errors: a view that is not a typed array, a negative fd, offset or length: INVALID_ARGUMENT.
 */
/* clock_gettime() and sysconf() are POSIX, hidden by -std=c11 unless asked for. */
#define _POSIX_C_SOURCE 200809L
/* madvise() and MADV_HUGEPAGE (adviseHugePages) are outside POSIX. */
#define _DEFAULT_SOURCE
#include "napiHelpers.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "layerExports.h"
#include "writeback.h"

/* The memory of a typed array argument (any element type); on failure throws and returns 0. */
static int typed_extent(napi_env env, napi_value value, const char* usage, uintptr_t* start, size_t* byteLength) {
  bool isTyped = false;
  if (napi_is_typedarray(env, value, &isTyped) != napi_ok || !isTyped) {
    throw_invalid(env, usage);
    return 0;
  }
  napi_typedarray_type type;
  size_t elements, byteOffset;
  void* bytes;
  napi_value arrayBuffer;
  napi_get_typedarray_info(env, value, &type, &elements, &bytes, &arrayBuffer, &byteOffset);
  size_t elementBytes = 1;
  switch (type) {
    case napi_int16_array: case napi_uint16_array: elementBytes = 2; break;
    case napi_int32_array: case napi_uint32_array: case napi_float32_array: elementBytes = 4; break;
    case napi_float64_array: case napi_bigint64_array: case napi_biguint64_array: elementBytes = 8; break;
    default: break;
  }
  *start = (uintptr_t)bytes;
  *byteLength = elements * elementBytes;
  return 1;
}

/* The [start, end) of the whole `alignBytes`-aligned units inside [bytes, bytes + byteLength); start >= end: none. */
static void aligned_interior(uintptr_t bytes, size_t byteLength, uintptr_t alignBytes, uintptr_t* start, uintptr_t* end) {
  *start = (bytes + alignBytes - 1) & ~(alignBytes - 1);
  *end = (bytes + byteLength) & ~(alignBytes - 1);
}

/*
 * madvise(advice) over the whole `alignBytes` units inside the one typed-array argument's memory
 * (advice only where the platform has it: `available`); the JavaScript result is whether it took.
 */
static napi_value madvise_interior_js(napi_env env, napi_callback_info info, const char* usage, uintptr_t alignBytes, int advice,
                                      bool available) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uintptr_t bytes;
  size_t byteLength;
  if (argc != 1 || !typed_extent(env, argv[0], usage, &bytes, &byteLength)) return NULL;
  uintptr_t start, end;
  aligned_interior(bytes, byteLength, alignBytes, &start, &end);
  bool done = available && end > start && madvise((void*)start, end - start, advice) == 0;
  napi_value result;
  napi_get_boolean(env, done, &result);
  return result;
}

/*
 * adviseHugePages(view) -> boolean: madvise(MADV_HUGEPAGE) over the 2 MiB-aligned interior of
 * the view's memory, before it is first touched. Why: a fresh large buffer is faulted in one
 * 4 KiB page at a time, and on this product's VMs a fault costs microseconds of system time;
 * with transparent huge pages in "madvise" mode (the common default) a region so advised is
 * faulted 2 MiB at a time. False when the platform has no MADV_HUGEPAGE or the view is too small.
 * Advice only: the memory's contents and lifetime are unchanged.
 */
static napi_value advise_huge_pages_js(napi_env env, napi_callback_info info) {
#ifdef MADV_HUGEPAGE
  return madvise_interior_js(env, info, "adviseHugePages(typedArray)", (uintptr_t)2 << 20, MADV_HUGEPAGE, true);
#else
  return madvise_interior_js(env, info, "adviseHugePages(typedArray)", (uintptr_t)2 << 20, 0, false);
#endif
}

/*
 * releasePages(view) -> boolean: madvise(MADV_DONTNEED) over the whole pages inside the view's
 * memory, which the caller will not read again: their memory goes back to the kernel now
 * instead of whenever the garbage collector frees the buffer (a parse worker's sort buffer,
 * before the worker goes on to merge). The view stays valid; the released pages read as zeros.
 */
static napi_value release_pages_js(napi_env env, napi_callback_info info) {
  return madvise_interior_js(env, info, "releasePages(typedArray)", (uintptr_t)sysconf(_SC_PAGESIZE), MADV_DONTNEED, true);
}

/* (fd, offset, length) -> boolean calls on a file range: startWriteback and punchHole. */
static napi_value file_range_call(napi_env env, napi_callback_info info, const char* usage, int (*call)(int, int64_t, int64_t)) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t fd;
  int64_t offset, length;
  if (argc != 3 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_value_int64(env, argv[1], &offset) != napi_ok ||
      napi_get_value_int64(env, argv[2], &length) != napi_ok || fd < 0 || offset < 0 || length < 0) {
    throw_invalid(env, usage);
    return NULL;
  }
  napi_value result;
  napi_get_boolean(env, call(fd, offset, length) != 0, &result);
  return result;
}

/*
 * startWriteback(fd, offset, length) -> boolean: sync_file_range(SYNC_FILE_RANGE_WRITE) over
 * the range (writeback.c); false where the kernel refused or the platform has none. A hint only.
 */
static napi_value start_writeback_js(napi_env env, napi_callback_info info) {
  return file_range_call(env, info, "startWriteback(fd, offset, length)", start_writeback);
}

/* punchHole(fd, offset, length) -> boolean: punch_hole (writeback.c). */
static napi_value punch_hole_js(napi_env env, napi_callback_info info) {
  return file_range_call(env, info, "punchHole(fd, offset, length)", punch_hole);
}

/*
 * threadCpuSeconds() -> number: CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), in
 * seconds, or -1 where the clock is unavailable. process.cpuUsage() counts every thread of the
 * process, so V8's background compiler and GC helpers, working for whatever ran before, are
 * charged to the code being measured; a thread's own clock is not.
 */
static napi_value thread_cpu_seconds_js(napi_env env, napi_callback_info info) {
  struct timespec ts;
  double seconds = -1;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) seconds = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
  napi_value result;
  napi_create_double(env, seconds, &result);
  return result;
}

/* The one int32 fd argument of the lock calls; on failure throws INVALID_ARGUMENT and returns 0. */
static int fd_argument(napi_env env, napi_callback_info info, const char* usage, int32_t* fd) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc != 1 || napi_get_value_int32(env, argv[0], fd) != napi_ok || *fd < 0) {
    throw_invalid(env, usage);
    return 0;
  }
  return 1;
}

/* A write lock over the whole file (l_len 0: to the end, however it grows), as RocksDB's LockFile takes. */
static void whole_file_write_lock(struct flock* lock) {
  memset(lock, 0, sizeof *lock);
  lock->l_type = F_WRLCK;
  lock->l_whence = SEEK_SET;
  lock->l_start = 0;
  lock->l_len = 0;
}

/*
 * lockWholeFile(fd) -> number: fcntl(fd, F_SETLK) with a write lock over the whole file, without
 * waiting. 0 when the lock is taken (or already this process's), else errno: EAGAIN or EACCES
 * when another process holds a conflicting lock, EBADF when fd is not open for writing.
 */
static napi_value lock_whole_file_js(napi_env env, napi_callback_info info) {
  int32_t fd;
  if (!fd_argument(env, info, "lockWholeFile(fd)", &fd)) return NULL;
  struct flock lock;
  whole_file_write_lock(&lock);
  int result = 0;
  while (fcntl(fd, F_SETLK, &lock) != 0) {
    if (errno == EINTR) continue;
    result = errno;
    break;
  }
  napi_value out;
  napi_create_int32(env, result, &out);
  return out;
}

/*
 * wholeFileLockHolder(fd) -> number: fcntl(fd, F_GETLK) for a whole-file write lock: the pid of a
 * process holding a lock that conflicts with it, 0 when one is held but the kernel cannot name
 * its holder (across pid namespaces), -1 when none conflicts, -2 when the call fails. The calling
 * process's own locks never conflict.
 */
static napi_value whole_file_lock_holder_js(napi_env env, napi_callback_info info) {
  int32_t fd;
  if (!fd_argument(env, info, "wholeFileLockHolder(fd)", &fd)) return NULL;
  struct flock lock;
  whole_file_write_lock(&lock);
  int32_t holder = -2;
  if (fcntl(fd, F_GETLK, &lock) == 0) holder = lock.l_type == F_UNLCK ? -1 : (int32_t)lock.l_pid;
  napi_value out;
  napi_create_int32(env, holder, &out);
  return out;
}

napi_status util_register(napi_env env, napi_value exports) {
  napi_property_descriptor properties[] = {
      NAPI_EXPORT_FUNCTION("adviseHugePages", advise_huge_pages_js),
      NAPI_EXPORT_FUNCTION("releasePages", release_pages_js),
      NAPI_EXPORT_FUNCTION("startWriteback", start_writeback_js),
      NAPI_EXPORT_FUNCTION("punchHole", punch_hole_js),
      NAPI_EXPORT_FUNCTION("threadCpuSeconds", thread_cpu_seconds_js),
      NAPI_EXPORT_FUNCTION("lockWholeFile", lock_whole_file_js),
      NAPI_EXPORT_FUNCTION("wholeFileLockHolder", whole_file_lock_holder_js),
  };
  return napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties);
}
