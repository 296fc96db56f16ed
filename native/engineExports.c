/*
 * engineExports: the engine layer's Node-API glue (C11), registered by addon.c. Its TypeScript
 * face is src/engine/memtable/nativeSkiplist.ts; the algorithms are skiplistSearch.c.
 *
 * Exports (synchronous; no state kept between calls):
 *   skiplistLastBefore(arena, heightInUse, target, targetStart, targetLength, counters) -> node
 *       the last node whose key is < target[targetStart, +targetLength) (0: the head), or -2
 *       (SKIPLIST_BAD_NODE) when a node it visits does not lie in the arena
 *   skiplistFindSplice(arena, heightInUse, keyStart, keyLength, prev, counters) -> 0 | -2 | -3
 *       the predecessors at every level of the key stored at arena[keyStart, +keyLength), into
 *       prev (a Uint32Array of at least 12); -3 (SKIPLIST_KEY_PRESENT) when that key is there
 * Both add their key comparisons to counters[0] (a Float64Array), for perf.keyComparisons.
 * A wrong argument (a range outside its buffer, a short prev) throws INVALID_ARGUMENT.
 */
#include "napiHelpers.h"

#include "layerExports.h"
#include "skiplistSearch.h"

/* The arguments both calls share: the arena, its height in use and the counters. */
static int get_arena(napi_env env, napi_value arenaValue, napi_value heightValue, napi_value countersValue, SkiplistArena* arena,
                     uint32_t* heightInUse) {
  uint8_t* bytes;
  size_t countersLength;
  double* counters;
  if (!get_bytes(env, arenaValue, &bytes, &arena->arenaBytes) ||
      !get_typed(env, countersValue, napi_float64_array, (void**)&counters, &countersLength))
    return 0;
  if (napi_get_value_uint32(env, heightValue, heightInUse) != napi_ok || countersLength < 1) {
    throw_invalid(env, "skiplist search: heightInUse must be a uint32 and counters a Float64Array of at least 1");
    return 0;
  }
  arena->arena = bytes;
  arena->comparisons = counters;
  return 1;
}

static napi_value skiplist_last_before_js(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc != 6) {
    throw_invalid(env, "skiplistLastBefore(arena, heightInUse, target, targetStart, targetLength, counters)");
    return NULL;
  }
  SkiplistArena arena;
  uint32_t heightInUse;
  uint8_t* target;
  size_t targetBytes, targetStart, targetEnd;
  uint32_t targetLength;
  if (!get_arena(env, argv[0], argv[1], argv[5], &arena, &heightInUse) || !get_bytes(env, argv[2], &target, &targetBytes) ||
      !get_index(env, argv[3], targetBytes, &targetStart))
    return NULL;
  if (napi_get_value_uint32(env, argv[4], &targetLength) != napi_ok || (targetEnd = targetStart + targetLength) > targetBytes) {
    throw_invalid(env, "skiplistLastBefore: the target range lies outside its buffer");
    return NULL;
  }
  napi_value result;
  napi_create_int64(env, skiplist_last_before(&arena, heightInUse, target + targetStart, targetLength), &result);
  return result;
}

static napi_value skiplist_find_splice_js(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc != 6) {
    throw_invalid(env, "skiplistFindSplice(arena, heightInUse, keyStart, keyLength, prev, counters)");
    return NULL;
  }
  SkiplistArena arena;
  uint32_t heightInUse, keyLength;
  size_t keyStart, prevLength;
  uint32_t* prev;
  if (!get_arena(env, argv[0], argv[1], argv[5], &arena, &heightInUse) || !get_index(env, argv[2], arena.arenaBytes, &keyStart) ||
      !get_typed(env, argv[4], napi_uint32_array, (void**)&prev, &prevLength))
    return NULL;
  if (napi_get_value_uint32(env, argv[3], &keyLength) != napi_ok || keyStart + keyLength > arena.arenaBytes ||
      prevLength < SKIPLIST_MAX_HEIGHT) {
    throw_invalid(env, "skiplistFindSplice: the key lies outside the arena, or prev is shorter than the maximum height");
    return NULL;
  }
  napi_value result;
  napi_create_int64(env, skiplist_find_splice(&arena, heightInUse, arena.arena + keyStart, keyLength, prev), &result);
  return result;
}

napi_status engine_register(napi_env env, napi_value exports) {
  napi_property_descriptor properties[] = {
      NAPI_EXPORT_FUNCTION("skiplistLastBefore", skiplist_last_before_js),
      NAPI_EXPORT_FUNCTION("skiplistFindSplice", skiplist_find_splice_js),
  };
  return napi_define_properties(env, exports, sizeof properties / sizeof properties[0], properties);
}
