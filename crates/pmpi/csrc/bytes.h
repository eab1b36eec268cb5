/* Byte counts of the collectives coll.c runs under the knobs, in 64 bits: a block of 2^28
 * doubles is 2 GiB, and a subtree of blocks more, where an int (MPI's count type) wraps.
 * No MPI here, so that tests/c/bytes.c checks the arithmetic without an MPI library. */
#ifndef CPMPI_BYTES_H
#define CPMPI_BYTES_H
#include <limits.h>
#include <stdint.h>

/* `blocks` blocks of `block` bytes; a negative count is none. UINT64_MAX when the product does
 * not fit in 64 bits (never a count any buffer could hold: the caller refuses it). */
static inline uint64_t cpmpi_span_bytes(uint64_t block, int64_t blocks) {
    if (blocks <= 0) return 0;
    uint64_t r;
    if (__builtin_mul_overflow(block, (uint64_t)blocks, &r)) return UINT64_MAX;
    return r;
}

/* Whether `bytes` can be the int count of an MPI_BYTE message (MPI-3's int counts). */
static inline int cpmpi_fits_int(uint64_t bytes) { return bytes <= (uint64_t)INT_MAX; }

/* The bytes of `count` elements of `size` bytes each (a datatype's MPI_Type_size). */
static inline uint64_t cpmpi_type_bytes(int size, int64_t count) {
    if (size <= 0 || count <= 0) return 0;
    return cpmpi_span_bytes((uint64_t)size, count);
}
#endif
