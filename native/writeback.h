/* Starting a file range's writeback without waiting: see writeback.c. */
#ifndef SST_INGEST_WRITEBACK_H
#define SST_INGEST_WRITEBACK_H

#include <stdint.h>

/* 1 when the kernel took the request, 0 when it did not or the platform has no such call. */
int start_writeback(int fd, int64_t offset, int64_t length);

/* 1 when [offset, offset + length) was punched out of the file (its size kept), 0 when refused. */
int punch_hole(int fd, int64_t offset, int64_t length);

#endif
