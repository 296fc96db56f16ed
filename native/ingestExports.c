/*
 * ingestExports: the import layer's Node-API glue (C11), registered by addon.c. Its TypeScript
 * face is src/ingest/nativeImport.ts; the algorithms are rowParse.c (the CSV fast path),
 * rowSort.c (the sort buffer's sort and the run gather) and mergeBlocks.c (the merge of runs into
 * data blocks).
 *
 * Exports (all synchronous; they only read and write the caller's typed arrays, nothing is
 * allocated or kept between calls):
 *   parseRows(src, end, stopAt, layout, valueFields, arena, limits, offset, keyLength,
 *       valueLength, source, line, state) -> records taken: the CSV fast path (rowParse.c) into
 *       SortBuffer's arena and columns (src/ingest/sort/sortBuffer.ts)
 *   sortEntries(...), gatherRun(...)  the import's sort buffer: sorting its entries by key and
 *       gathering them into a run file's chunk (rowSort.c)
 *   mergeContextBytes, mergeInit, mergeSetReader, mergeSetOutput, mergeBlocks  the import's merge
 *       of runs into data blocks (mergeBlocks.c; driven by src/ingest/sort/nativeMerge.ts)
 *
 * Layouts:
 *   parseRows' layout: Int32Array [delimiter, quote, comment, fieldCount, keyField, keyType
 *       (0 bytes, 1 int64, 2 uint64), valueDelimiter, fixedBytes, source, valueFormat (0 raw,
 *       1 csv)] (quote and comment -1
 *       for none; LAYOUT_* below, NATIVE_LAYOUT_* in src/ingest/rows/rowEncoder.ts); limits:
 *       Float64Array [arenaStart, memoryLimitBytes, bytesPerEntry]; state: Float64Array
 *       [pos, line, count, used], read and left where the call stopped.
 *   run-file entries (gatherRun writes, the merge reads; src/ingest/sort/runFile.ts):
 *       varint32 keyLength | varint32 valueLength | varint32 source | varint64 line | key | value
 *   the merge context: a caller-owned, 8-byte-aligned Uint8Array of mergeContextBytes(runs) bytes
 *       holding MergeState, its readers and the loser tree (mergeBlocks.h); the shared `io`
 *       Float64Array's slots are MIO_* in mergeBlocks.h (Io in nativeMerge.ts, same order).
 *
 * Errors: arguments of the wrong type or out of range are INVALID_ARGUMENT, thrown before
 * anything is written (gatherRun: what was gathered before a bad entry is in `state`).
 */
#include "napiHelpers.h"

#include "layerExports.h"
#include "mergeBlocks.h"
#include "rowParse.h"
#include "rowSort.h"

/* Gets a column of at least `minimum` elements of `type`; on failure throws and returns 0. */
static int get_column(napi_env env, napi_value value, napi_typedarray_type type, size_t minimum, void** data) {
  size_t elements;
  if (!get_typed(env, value, type, data, &elements)) return 0;
  if (elements < minimum) {
    throw_invalid(env, "a column shorter than the entry count");
    return 0;
  }
  return 1;
}

static int get_u32_column(napi_env env, napi_value value, size_t minimum, uint32_t** data) {
  return get_column(env, value, napi_uint32_array, minimum, (void**)data);
}

static int get_u8_column(napi_env env, napi_value value, size_t minimum, uint8_t** data) {
  return get_column(env, value, napi_uint8_array, minimum, (void**)data);
}

/*
 * sortEntries(arena, offset, keyLength, count, order, high, low, lengthClass, orderScratch,
 * highScratch, lowScratch, classScratch) -> undefined: SortBuffer.sort() (rowSort.c). Every
 * column holds at least `count` slots and every key lies inside the arena, or INVALID_ARGUMENT
 * is thrown before anything is written.
 */
static napi_value sort_entries_js(napi_env env, napi_callback_info info) {
  size_t argc = 12;
  napi_value argv[12];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t count;
  if (argc != 12 || napi_get_value_uint32(env, argv[3], &count) != napi_ok) {
    throw_invalid(env, "sortEntries(arena, offset, keyLength, count, order, high, low, lengthClass, orderScratch, highScratch, lowScratch, classScratch)");
    return NULL;
  }
  uint8_t* arena;
  size_t arenaBytes;
  RowSortColumns c;
  uint32_t *offset, *keyLength;
  c.count = count;
  if (!get_bytes(env, argv[0], &arena, &arenaBytes) || !get_u32_column(env, argv[1], count, &offset) ||
      !get_u32_column(env, argv[2], count, &keyLength) || !get_u32_column(env, argv[4], count, &c.order) ||
      !get_u32_column(env, argv[5], count, &c.high) || !get_u32_column(env, argv[6], count, &c.low) ||
      !get_u8_column(env, argv[7], count, &c.lengthClass) || !get_u32_column(env, argv[8], count, &c.orderScratch) ||
      !get_u32_column(env, argv[9], count, &c.highScratch) || !get_u32_column(env, argv[10], count, &c.lowScratch) ||
      !get_u8_column(env, argv[11], count, &c.classScratch))
    return NULL;
  for (uint32_t e = 0; e < count; e++) {
    if ((size_t)offset[e] + keyLength[e] > arenaBytes) {
      throw_invalid(env, "sortEntries: a key outside the arena");
      return NULL;
    }
  }
  c.arena = arena;
  c.offset = offset;
  c.keyLength = keyLength;
  row_sort(&c);
  return NULL;
}

/*
 * gatherRun(arena, order, offset, keyLength, valueLength, source, line, to, out, outEnd,
 * stopAtFill, state) -> undefined: row_gather (rowSort.c) from entry state[0] at out[state[1]..];
 * leaves the next entry's index in state[0] and the fill in state[1]. An entry outside the
 * columns or the arena is INVALID_ARGUMENT (what was gathered before it is in `state`).
 */
static napi_value gather_run_js(napi_env env, napi_callback_info info) {
  size_t argc = 12;
  napi_value argv[12];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t to, outEnd, stopAtFill;
  if (argc != 12 || napi_get_value_uint32(env, argv[7], &to) != napi_ok ||
      napi_get_value_uint32(env, argv[9], &outEnd) != napi_ok || napi_get_value_uint32(env, argv[10], &stopAtFill) != napi_ok) {
    throw_invalid(env, "gatherRun(arena, order, offset, keyLength, valueLength, source, line, to, out, outEnd, stopAtFill, state)");
    return NULL;
  }
  RowGatherColumns c;
  uint8_t *arena, *out;
  size_t outBytes, slots;
  uint32_t *order, *offset, *keyLength, *valueLength, *source, *state;
  double* line;
  if (!get_bytes(env, argv[0], &arena, &c.arenaBytes) || !get_u32_column(env, argv[1], to, &order) ||
      !get_typed(env, argv[6], napi_float64_array, (void**)&line, &slots) || !get_bytes(env, argv[8], &out, &outBytes) ||
      !get_u32_column(env, argv[11], 2, &state))
    return NULL;
  napi_value sized[] = {argv[2], argv[3], argv[4], argv[5]};
  uint32_t** columns[] = {&offset, &keyLength, &valueLength, &source};
  for (int i = 0; i < 4; i++) {
    size_t elements;
    if (!get_typed(env, sized[i], napi_uint32_array, (void**)columns[i], &elements)) return NULL;
    if (elements < slots) slots = elements;
  }
  if (outEnd > outBytes || state[1] > outEnd || state[0] > to || slots > UINT32_MAX) {
    throw_invalid(env, "gatherRun: outEnd, the fill or the first entry out of range");
    return NULL;
  }
  c.arena = arena;
  c.order = order;
  c.offset = offset;
  c.keyLength = keyLength;
  c.valueLength = valueLength;
  c.source = source;
  c.line = line;
  c.columnSlots = (uint32_t)slots;
  size_t fill = state[1];
  int bad = 0;
  state[0] = row_gather(&c, state[0], to, out, &fill, outEnd, stopAtFill, &bad);
  state[1] = (uint32_t)fill;
  if (bad) throw_invalid(env, "gatherRun: an entry outside the columns or the arena");
  return NULL;
}

/* parseRows' layout argument: Int32Array slots. */
enum {
  LAYOUT_DELIMITER,
  LAYOUT_QUOTE,
  LAYOUT_COMMENT,
  LAYOUT_FIELD_COUNT,
  LAYOUT_KEY_FIELD,
  LAYOUT_KEY_TYPE,
  LAYOUT_VALUE_DELIMITER,
  LAYOUT_FIXED_BYTES,
  LAYOUT_SOURCE,
  LAYOUT_VALUE_FORMAT,
  LAYOUT_SLOTS
};

/* Checks parseRows' layout and value fields into `a`; 0 (nothing thrown yet) when out of range. */
static int row_parse_layout(RowParseArgs* a, const int32_t* layout, const int32_t* valueFields, size_t valueFieldCount) {
  for (int i = LAYOUT_DELIMITER; i <= LAYOUT_COMMENT; i++)
    if (layout[i] < (i == LAYOUT_DELIMITER ? 0 : -1) || layout[i] > 255) return 0;
  if (layout[LAYOUT_FIELD_COUNT] < 1 || layout[LAYOUT_FIELD_COUNT] > ROW_PARSE_MAX_FIELDS || layout[LAYOUT_KEY_FIELD] < 0 ||
      layout[LAYOUT_KEY_FIELD] >= layout[LAYOUT_FIELD_COUNT] || layout[LAYOUT_KEY_TYPE] < ROW_PARSE_KEY_BYTES ||
      layout[LAYOUT_KEY_TYPE] > ROW_PARSE_KEY_UINT64 || layout[LAYOUT_VALUE_DELIMITER] < 0 || layout[LAYOUT_VALUE_DELIMITER] > 255 ||
      layout[LAYOUT_FIXED_BYTES] < 0 || layout[LAYOUT_SOURCE] < 0 || layout[LAYOUT_VALUE_FORMAT] < ROW_PARSE_VALUE_RAW ||
      layout[LAYOUT_VALUE_FORMAT] > ROW_PARSE_VALUE_CSV)
    return 0;
  for (size_t i = 0; i < valueFieldCount; i++)
    if (valueFields[i] < 0 || valueFields[i] >= layout[LAYOUT_FIELD_COUNT]) return 0;
  a->delimiter = layout[LAYOUT_DELIMITER];
  a->quote = layout[LAYOUT_QUOTE];
  a->comment = layout[LAYOUT_COMMENT];
  a->fieldCount = (uint32_t)layout[LAYOUT_FIELD_COUNT];
  a->keyField = (uint32_t)layout[LAYOUT_KEY_FIELD];
  a->keyType = layout[LAYOUT_KEY_TYPE];
  a->valueFields = valueFields;
  a->valueFieldCount = (uint32_t)valueFieldCount;
  a->valueDelimiter = (uint8_t)layout[LAYOUT_VALUE_DELIMITER];
  a->fixedBytes = (uint32_t)layout[LAYOUT_FIXED_BYTES];
  a->sourceId = (uint32_t)layout[LAYOUT_SOURCE];
  a->valueFormat = layout[LAYOUT_VALUE_FORMAT];
  return 1;
}

/* Gets parseRows' five sort-buffer columns; a->slots is the shortest one's length. */
static int row_parse_columns(napi_env env, napi_value* argv, RowParseArgs* a) {
  size_t slots;
  if (!get_typed(env, argv[4], napi_float64_array, (void**)&a->line, &slots)) return 0;
  napi_value sized[] = {argv[0], argv[1], argv[2], argv[3]};
  uint32_t** columns[] = {&a->offset, &a->keyLength, &a->valueLength, &a->source};
  for (int i = 0; i < 4; i++) {
    size_t elements;
    if (!get_typed(env, sized[i], napi_uint32_array, (void**)columns[i], &elements)) return 0;
    if (elements < slots) slots = elements;
  }
  a->slots = slots > UINT32_MAX ? UINT32_MAX : (uint32_t)slots;
  return 1;
}

/*
 * parseRows(src, end, stopAt, layout, valueFields, arena, limits, offset, keyLength, valueLength,
 * source, line, state) -> records taken: row_parse (rowParse.c). layout is an Int32Array
 * [delimiter, quote, comment, fieldCount, keyField, keyType, valueDelimiter, fixedBytes, source,
 * valueFormat] (quote and comment -1 for none; valueFormat 0 raw, 1 csv); limits a Float64Array [arenaStart, memoryLimitBytes,
 * bytesPerEntry]; state a Float64Array [pos, line, count, used], read and left where the
 * call stopped. Arguments out of range are INVALID_ARGUMENT before anything is written.
 */
static napi_value parse_rows_js(napi_env env, napi_callback_info info) {
  size_t argc = 13;
  napi_value argv[13];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t end, stopAt;
  if (argc != 13 || napi_get_value_uint32(env, argv[1], &end) != napi_ok || napi_get_value_uint32(env, argv[2], &stopAt) != napi_ok) {
    throw_invalid(env, "parseRows(src, end, stopAt, layout, valueFields, arena, limits, offset, keyLength, valueLength, source, line, state)");
    return NULL;
  }
  RowParseArgs a;
  uint8_t* src;
  size_t srcBytes, layoutSlots, valueFieldCount, limitSlots, stateSlots;
  int32_t *layout, *valueFields;
  double *limits, *state;
  if (!get_bytes(env, argv[0], &src, &srcBytes) || !get_typed(env, argv[3], napi_int32_array, (void**)&layout, &layoutSlots) ||
      !get_typed(env, argv[4], napi_int32_array, (void**)&valueFields, &valueFieldCount) ||
      !get_bytes(env, argv[5], &a.arena, &a.arenaBytes) || !get_typed(env, argv[6], napi_float64_array, (void**)&limits, &limitSlots) ||
      !row_parse_columns(env, argv + 7, &a) || !get_typed(env, argv[12], napi_float64_array, (void**)&state, &stateSlots))
    return NULL;
  if (layoutSlots != LAYOUT_SLOTS || limitSlots != 3 || stateSlots != 4 || !row_parse_layout(&a, layout, valueFields, valueFieldCount)) {
    throw_invalid(env, "parseRows: a layout, limit or state out of range");
    return NULL;
  }
  RowParseState st = {(size_t)state[0], state[1], (uint32_t)state[2], (size_t)state[3]};
  if (end > srcBytes || state[0] < 0 || st.pos > end || limits[0] < 0 || limits[0] > a.arenaBytes || limits[1] < 0 ||
      limits[2] < 1 || limits[2] > UINT32_MAX ||
      state[3] < limits[0] || st.used > a.arenaBytes || state[2] < 0 || st.count > a.slots) {
    throw_invalid(env, "parseRows: a position, limit or count out of range");
    return NULL;
  }
  a.src = src;
  a.end = end;
  a.stopAt = stopAt;
  a.arenaStart = (size_t)limits[0];
  a.memoryLimitBytes = (size_t)limits[1];
  a.bytesPerEntry = (uint32_t)limits[2];
  uint32_t taken = row_parse(&a, &st);
  state[0] = (double)st.pos;
  state[1] = st.line;
  state[2] = st.count;
  state[3] = (double)st.used;
  napi_value result;
  napi_create_uint32(env, taken, &result);
  return result;
}

/* The merge context argument: an 8-byte-aligned Uint8Array holding a checked MergeState. */
static MergeState* get_merge_context(napi_env env, napi_value value) {
  uint8_t* data;
  size_t bytes;
  if (!get_typed(env, value, napi_uint8_array, (void**)&data, &bytes)) return NULL;
  MergeState* s = (MergeState*)data;
  if (((uintptr_t)data & 7) != 0 || !merge_context_ok(s, bytes)) {
    throw_invalid(env, "not a merge context (mergeContextBytes / mergeInit)");
    return NULL;
  }
  return s;
}

/* mergeContextBytes(k) -> number: the context size for k runs. */
static napi_value merge_context_bytes_js(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  uint32_t k;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc != 1 || napi_get_value_uint32(env, argv[0], &k) != napi_ok || k > (1u << 20)) {
    throw_invalid(env, "mergeContextBytes(runs): runs in [0, 2^20]");
    return NULL;
  }
  napi_value result;
  napi_create_double(env, (double)merge_context_bytes(k), &result);
  return result;
}

/*
 * mergeInit(ctx, runs, blockSizeBytes, deviationLimitBytes, restartInterval, hashKeys,
 * targetFileSizeBytes, low, high) -> undefined. low / high are Uint8Arrays or null; they, like
 * every buffer given later, must stay alive (the driver holds them) while ctx is in use.
 */
static napi_value merge_init_js(napi_env env, napi_callback_info info) {
  size_t argc = 9;
  napi_value argv[9];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t k, blockSize, deviation, restartInterval;
  bool hashKeys;
  double target;
  uint8_t* data;
  size_t bytes;
  if (argc != 9 || napi_get_value_uint32(env, argv[1], &k) != napi_ok || napi_get_value_uint32(env, argv[2], &blockSize) != napi_ok ||
      napi_get_value_uint32(env, argv[3], &deviation) != napi_ok || napi_get_value_uint32(env, argv[4], &restartInterval) != napi_ok ||
      napi_get_value_bool(env, argv[5], &hashKeys) != napi_ok || napi_get_value_double(env, argv[6], &target) != napi_ok ||
      restartInterval == 0 || blockSize == 0) {
    throw_invalid(env, "mergeInit(ctx, runs, blockSizeBytes, deviationLimitBytes, restartInterval, hashKeys, targetFileSizeBytes, low, high)");
    return NULL;
  }
  if (!get_typed(env, argv[0], napi_uint8_array, (void**)&data, &bytes)) return NULL;
  if (((uintptr_t)data & 7) != 0 || bytes < merge_context_bytes(k)) {
    throw_invalid(env, "mergeInit: the context is unaligned or smaller than mergeContextBytes(runs)");
    return NULL;
  }
  MergeState* s = (MergeState*)data;
  merge_context_init(s, k);
  s->blockSizeBytes = blockSize;
  s->deviationLimitBytes = deviation;
  s->restartInterval = restartInterval;
  s->hashKeys = hashKeys;
  s->targetFileSizeBytes = target;
  napi_valuetype type;
  for (int b = 0; b < 2; b++) {
    napi_typeof(env, argv[7 + b], &type);
    if (type == napi_null) continue;
    uint8_t* key;
    size_t keyBytes;
    if (!get_bytes(env, argv[7 + b], &key, &keyBytes)) return NULL;
    if (b == 0) {
      s->low = key;
      s->lowBytes = (uint32_t)keyBytes;
      s->hasLow = 1;
    } else {
      s->high = key;
      s->highBytes = (uint32_t)keyBytes;
      s->hasHigh = 1;
    }
  }
  return NULL;
}

/* mergeSetReader(ctx, i, buf, pos, limit, eof) -> undefined: run i's read buffer and its valid bytes [pos, limit). */
static napi_value merge_set_reader_js(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  uint32_t i, pos, limit;
  bool eof;
  uint8_t* buf;
  size_t bytes;
  if (argc != 6 || napi_get_value_uint32(env, argv[1], &i) != napi_ok || napi_get_value_uint32(env, argv[3], &pos) != napi_ok ||
      napi_get_value_uint32(env, argv[4], &limit) != napi_ok || napi_get_value_bool(env, argv[5], &eof) != napi_ok) {
    throw_invalid(env, "mergeSetReader(ctx, i, buf, pos, limit, eof)");
    return NULL;
  }
  MergeState* s = get_merge_context(env, argv[0]);
  if (s == NULL || !get_bytes(env, argv[2], &buf, &bytes)) return NULL;
  if (i >= s->k || pos > limit || limit > bytes) {
    throw_invalid(env, "mergeSetReader: reader index or [pos, limit) out of range");
    return NULL;
  }
  MergeReader* r = merge_readers(s) + i;
  r->buf = buf;
  r->pos = pos;
  r->limit = limit;
  r->eof = eof;
  return NULL;
}

/*
 * mergeSetOutput(ctx, block, restarts, hashLo, hashHi, keys) -> undefined: where blocks, restart
 * offsets, key hashes and the three internal-key slots (keys: 3 equal slots) go. The entry
 * capacity is the shortest of restarts - 1, hashLo and hashHi. Contents already written (an open
 * block) must have been copied over by the caller.
 */
static napi_value merge_set_output_js(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc != 6) {
    throw_invalid(env, "mergeSetOutput(ctx, block, restarts, hashLo, hashHi, keys)");
    return NULL;
  }
  MergeState* s = get_merge_context(env, argv[0]);
  uint8_t *block, *keys;
  size_t blockBytes, keysBytes, restarts, lo, hi;
  uint32_t *restartData, *loData, *hiData;
  if (s == NULL || !get_bytes(env, argv[1], &block, &blockBytes) ||
      !get_typed(env, argv[2], napi_uint32_array, (void**)&restartData, &restarts) ||
      !get_typed(env, argv[3], napi_uint32_array, (void**)&loData, &lo) || !get_typed(env, argv[4], napi_uint32_array, (void**)&hiData, &hi) ||
      !get_bytes(env, argv[5], &keys, &keysBytes))
    return NULL;
  size_t entries = restarts > 0 ? restarts - 1 : 0;
  if (lo < entries) entries = lo;
  if (hi < entries) entries = hi;
  size_t slot = keysBytes / 3;
  if (entries < 1 || blockBytes > UINT32_MAX || slot > UINT32_MAX || entries > UINT32_MAX || slot < 8 ||
      (size_t)s->entriesBytes + 4 * ((size_t)s->restartCount + 1) > blockBytes || s->blockEntries > entries ||
      (size_t)s->lastKeyBytes > slot || (size_t)s->firstKeyBytes > slot) {
    throw_invalid(env, "mergeSetOutput: an output smaller than what it already holds, or empty");
    return NULL;
  }
  s->block = block;
  s->blockCapacity = (uint32_t)blockBytes;
  s->restarts = restartData;
  s->hashLo = loData;
  s->hashHi = hiData;
  s->entryCapacity = (uint32_t)entries;
  s->keys = keys;
  s->keySlotBytes = (uint32_t)slot;
  return NULL;
}

/* mergeBlocks(ctx, io) -> code: merge_blocks (mergeBlocks.c); io is a Float64Array of MIO_SLOTS. */
static napi_value merge_blocks_js(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  double* io;
  size_t slots;
  if (argc != 2) {
    throw_invalid(env, "mergeBlocks(ctx, io)");
    return NULL;
  }
  MergeState* s = get_merge_context(env, argv[0]);
  if (s == NULL || !get_typed(env, argv[1], napi_float64_array, (void**)&io, &slots)) return NULL;
  if (slots < MIO_SLOTS || s->block == NULL) {
    throw_invalid(env, "mergeBlocks: io too short, or no output set");
    return NULL;
  }
  /* Every reader is lent a buffer before the first call; later calls only replace them. */
  MergeReader* rs = merge_readers(s);
  for (uint32_t i = 0; !s->started && i < s->k; i++) {
    if (rs[i].buf == NULL) {
      throw_invalid(env, "mergeBlocks: a reader without a buffer");
      return NULL;
    }
  }
  napi_value result;
  napi_create_int32(env, merge_blocks(s, io), &result);
  return result;
}

napi_status ingest_register(napi_env env, napi_value exports) {
  napi_property_descriptor properties[] = {
      NAPI_EXPORT_FUNCTION("parseRows", parse_rows_js),
      NAPI_EXPORT_FUNCTION("sortEntries", sort_entries_js),
      NAPI_EXPORT_FUNCTION("gatherRun", gather_run_js),
      NAPI_EXPORT_FUNCTION("mergeContextBytes", merge_context_bytes_js),
      NAPI_EXPORT_FUNCTION("mergeInit", merge_init_js),
      NAPI_EXPORT_FUNCTION("mergeSetReader", merge_set_reader_js),
      NAPI_EXPORT_FUNCTION("mergeSetOutput", merge_set_output_js),
      NAPI_EXPORT_FUNCTION("mergeBlocks", merge_blocks_js),
  };
  return napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties);
}
