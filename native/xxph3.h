/* XXPH3-64, the XXH3 preview RocksDB's filters hash keys with: see xxph3.c. */
#ifndef SST_INGEST_XXPH3_H
#define SST_INGEST_XXPH3_H

#include <stddef.h>
#include <stdint.h>

uint64_t xxph3_64(const uint8_t* data, size_t length);

#endif
