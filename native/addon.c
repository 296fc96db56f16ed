/*
 * addon: the one compiled module, build/Release/blockcodec.node (binding.gyp), whose init adds
 * each layer's functions to its exports (C11, Node-API).
 *
 * Why one module for four layers: one file to build, ship and find, and one dlopen per thread;
 * the layers stay apart in the sources instead: sstableExports.c (table format), ingestExports.c
 * (import), engineExports.c (the memtable's searches) and utilExports.c (generic helpers), each
 * with a TypeScript face of its own in the same layer (layerExports.h lists them), all loaded
 * through src/util/nativeAddon.ts.
 *
 * Contract: the module is context-aware (NAPI_MODULE_INIT), so every worker thread loads it for
 * itself; it keeps no state across calls but readBlock's per-thread scratch buffer. A layer whose
 * registration fails stops the init there (an exception napi left pending fails the require);
 * the TypeScript faces check every function they use, so a module missing some is reported as
 * such (nativeAddon.ts) instead of failing a caller later.
 */
#include "napiHelpers.h"

#include "layerExports.h"

NAPI_MODULE_INIT() {
  if (sstable_register(env, exports) != napi_ok || ingest_register(env, exports) != napi_ok ||
      engine_register(env, exports) != napi_ok || util_register(env, exports) != napi_ok)
    return NULL;
  return exports;
}
