/*
 * napiHelpers: the argument checks and coded errors every layer's Node-API glue shares
 * (sstableExports.c, ingestExports.c, utilExports.c; see napiHelpers.c).
 *
 * Contract: a helper that fails has thrown a JavaScript Error (with a `code`) and returns 0;
 * the caller then returns NULL to JavaScript at once, without touching its outputs.
 */
#ifndef SST_INGEST_NAPI_HELPERS_H
#define SST_INGEST_NAPI_HELPERS_H

#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>

#include <stddef.h>
#include <stdint.h>

/* A property descriptor for the function `fn` exported as `name` (for each layer's register). */
#define NAPI_EXPORT_FUNCTION(name, fn) {(name), NULL, (fn), NULL, NULL, NULL, napi_default, NULL}

/*
 * Throws Error(message) with .code = code and, for each detail name that is not NULL, that
 * property set to its number (SHORT_READ's missingBytes, CHECKSUM_MISMATCH's stored/computed...).
 */
void throw_coded(napi_env env, const char* code, const char* message, const char* detailName, double detail,
                 const char* detail2Name, double detail2);

/* Throws an INVALID_ARGUMENT error: an argument of the wrong type or out of range. */
void throw_invalid(napi_env env, const char* message);

/* A Buffer/Uint8Array argument's bytes and length; on failure throws and returns 0. */
int get_bytes(napi_env env, napi_value value, uint8_t** data, size_t* length);

/* A uint32 argument that is an index in [0, length] of a buffer; on failure throws and returns 0. */
int get_index(napi_env env, napi_value value, size_t length, size_t* index);

/* A typed array argument of exactly `type`: its data and element count; on failure throws and returns 0. */
int get_typed(napi_env env, napi_value value, napi_typedarray_type type, void** data, size_t* elements);

#endif
