/*
 * The register functions of the addon's four layers, called once per context by addon.c's
 * module init. Each adds its layer's functions to `exports` and returns napi_ok, or the failing
 * status of napi_define_properties.
 *
 *   sstable_register  sstableExports.c: block read, codecs, checksums (src/sstable/nativeBlockCodec.ts)
 *   ingest_register   ingestExports.c: row parse, sort, run gather, merge (src/ingest/nativeImport.ts)
 *   engine_register   engineExports.c: the memtable skiplist's searches (src/engine/memtable/nativeSkiplist.ts)
 *   util_register     utilExports.c: pages, writeback, thread CPU time (src/util/nativeUtil.ts)
 */
#ifndef SST_INGEST_LAYER_EXPORTS_H
#define SST_INGEST_LAYER_EXPORTS_H

#include "napiHelpers.h"

napi_status sstable_register(napi_env env, napi_value exports);
napi_status ingest_register(napi_env env, napi_value exports);
napi_status engine_register(napi_env env, napi_value exports);
napi_status util_register(napi_env env, napi_value exports);

#endif
