/**
 * The native addon's generic helpers (native/utilExports.c, loaded by nativeAddon.ts): memory
 * advice for large buffers, file-range hints and the thread CPU clock, or null when the addon is
 * not in use. Each is a hint or a measurement, so a caller without them only skips the hint:
 * the import's sort buffers (src/ingest/sort/sortBuffer.ts), the table writer's early writeback
 * (src/sstwriter/fileSink.ts), the merge's punched runs (src/ingest/sort/runFile.ts) and the
 * conflict scan's CPU meter (src/conflict/checkSstConflicts.ts).
 *
 * Errors: a view that is not a typed array, or a negative fd, offset or length, throws an Error
 * with code INVALID_ARGUMENT; the calls never fail otherwise (false, or -1, instead).
 */
import { nativeFace } from './nativeAddon';

export interface NativeUtil {
  /** madvise(MADV_HUGEPAGE) over the view's 2 MiB-aligned interior; false when not possible. */
  adviseHugePages(view: ArrayBufferView): boolean;
  /**
   * madvise(MADV_DONTNEED) over the whole pages inside the view: their memory goes back to the
   * kernel now (the view stays valid and reads zeros there). For a buffer about to be dropped.
   */
  releasePages(view: ArrayBufferView): boolean;
  /**
   * Starts the writeback of fd's bytes [offset, offset + length) without waiting for it (Linux
   * sync_file_range(SYNC_FILE_RANGE_WRITE)); false where refused or unavailable. A hint: only
   * fsync makes data durable.
   */
  startWriteback(fd: number, offset: number, length: number): boolean;
  /** Punches fd's bytes [offset, offset + length) out of the file, size kept (Linux fallocate PUNCH_HOLE); false where refused. */
  punchHole(fd: number, offset: number, length: number): boolean;
  /**
   * CPU seconds of the calling thread alone (CLOCK_THREAD_CPUTIME_ID), -1 where unavailable:
   * unlike process.cpuUsage(), V8's background compiler and GC threads are not counted.
   */
  threadCpuSeconds(): number;
}

const loaded = nativeFace<NativeUtil>({
  adviseHugePages: true,
  releasePages: true,
  startWriteback: true,
  punchHole: true,
  threadCpuSeconds: true,
});

/** The native helpers, or null (then every caller skips its hint, or uses process.cpuUsage()). */
export const nativeUtil: NativeUtil | null = loaded.face;

/** Why the helpers are or are not in use ("loaded <file>" when they are). */
export const nativeUtilStatus: string = loaded.status;
