/* Exact checks of csrc/bytes.h, the 64-bit byte counts of the emulated collectives (run by
 * tests/c_headers.rs). Prints "ok", or the first wrong value and exits 1. */
#include <stdio.h>
#include <stdlib.h>

#include "bytes.h"

#define EXPECT(GOT, WANT)                                                                        \
    do {                                                                                         \
        unsigned long long g_ = (unsigned long long)(GOT), w_ = (unsigned long long)(WANT);      \
        if (g_ != w_) {                                                                          \
            printf("%s = %llu, want %llu\n", #GOT, g_, w_);                                     \
            return 1;                                                                            \
        }                                                                                        \
    } while (0)

int main(void) {
    /* 2^28 MPI_DOUBLEs: 2 GiB, one past INT_MAX (an int count wrapped it to INT_MIN). */
    EXPECT(cpmpi_type_bytes(8, 1 << 28), 2147483648ull);
    EXPECT(cpmpi_fits_int(cpmpi_type_bytes(8, 1 << 28)), 0);
    EXPECT(cpmpi_fits_int(2147483647ull), 1);
    /* The largest int count of the largest predefined type (MPI_LONG_DOUBLE_COMPLEX, 32). */
    EXPECT(cpmpi_type_bytes(32, 2147483647), 68719476704ull);
    /* A gather's root subtree: 4 ranks' blocks of 2^28 doubles each = 8 GiB. */
    EXPECT(cpmpi_span_bytes(cpmpi_type_bytes(8, 1 << 28), 4), 8589934592ull);
    /* 3 blocks of 768 MiB: 2.25 GiB, past INT_MAX although each block fits. */
    EXPECT(cpmpi_span_bytes(805306368ull, 3), 2415919104ull);
    EXPECT(cpmpi_fits_int(cpmpi_span_bytes(805306368ull, 3)), 0);
    EXPECT(cpmpi_fits_int(cpmpi_span_bytes(805306368ull, 2)), 1);
    /* No count, a negative count, a zero size: nothing. */
    EXPECT(cpmpi_span_bytes(1000, 0), 0);
    EXPECT(cpmpi_span_bytes(1000, -3), 0);
    EXPECT(cpmpi_type_bytes(0, 5), 0);
    /* A product past 64 bits is saturated, never wrapped to a small count. */
    EXPECT(cpmpi_span_bytes(1ull << 40, 1ll << 30), 0xffffffffffffffffull);
    puts("ok");
    return 0;
}
