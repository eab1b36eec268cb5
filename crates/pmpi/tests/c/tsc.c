/* csrc/tsc.h's answers, for tests/c_headers.rs to hold against the Rust rule
 * (commperf_transport::clock::tsc_invariant_from): for each line "MAX EDX" (hexadecimal) on
 * stdin, prints 1 or 0; with the argument "live", prints this CPU's answer alone. */
#include <stdio.h>
#include <string.h>

#include "tsc.h"

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "live") == 0) {
#if defined(__x86_64__)
        printf("%d\n", cpmpi_tsc_invariant());
#else
        printf("0\n");
#endif
        return 0;
    }
    unsigned max, edx;
    while (scanf("%x %x", &max, &edx) == 2) printf("%d\n", cpmpi_tsc_invariant_from(max, edx));
    return 0;
}
