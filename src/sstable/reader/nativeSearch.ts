/**
 * The native block search's wire: the one Float64Array through which BlockIterator.seekGE and
 * native/blockSearch.c exchange a search's inputs and its answer, so a search is one crossing
 * with four arguments (block bytes, target, key buffer, this array) instead of a dozen numbers.
 *
 * Layout (indices of BlockSearchIo; must match the IO_* enum in native/sstableExports.c):
 *   in:  0 entriesEnd, 1 numRestarts, 2 order (0 bytewise, 1 internal), 3 value format
 *        (BlockValueFormat), 4 minimum key bytes (8 for internal keys), 5 global seqno or -1
 *   in/out: 6 comparisons (the search adds the ones it made)
 *   out: 8 entry offset, 9 key length, 10 shared bytes, 11 value start, 12 value end,
 *        13 restart index, 14 handle offset, 15 handle size
 *
 * Why one shared array: the event loop runs one search at a time, and a worker thread loads its
 * own copy of this module, so one array per thread is never used by two searches at once.
 *
 * `nativeSearch` is null without the addon, or when SST_INGEST_NATIVE_SEARCH=0 (to measure the
 * JavaScript search, and to test it alone); callers then search in JavaScript.
 */
import { nativeBlockCodec, NativeBlockCodec } from '../nativeBlockCodec';

export const enum BlockSearchIo {
  EntriesEnd = 0,
  NumRestarts = 1,
  Order = 2,
  ValueFormat = 3,
  MinKeyBytes = 4,
  GlobalSeqno = 5,
  Comparisons = 6,
  EntryOffset = 8,
  KeyLength = 9,
  SharedBytes = 10,
  ValueStart = 11,
  ValueEnd = 12,
  RestartIndex = 13,
  HandleOffset = 14,
  HandleSize = 15,
  Length = 16,
}

/** blockSeekGE's answers besides an entry offset. */
export const SEARCH_PAST_END = -1;
export const SEARCH_DECLINED = -2;

/** Key orders the native search knows. */
export const enum SearchOrder {
  Bytewise = 0,
  Internal = 1,
}

export const searchIo = new Float64Array(BlockSearchIo.Length);

export const nativeSearch: Pick<NativeBlockCodec, 'blockSeekGE' | 'bloomMayMatch'> | null =
  process.env.SST_INGEST_NATIVE_SEARCH === '0' ? null : nativeBlockCodec;
