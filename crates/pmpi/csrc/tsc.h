/* Whether the TSC is invariant: the rule of crates/transport/src/clock.rs (`tsc_invariant_from`,
 * where it is documented), in C for the interposer's event clock (shim.c), so that the benchmark
 * clock and the interposer decide the same way on every CPU. crates/pmpi/tests/c_headers.rs
 * feeds this and the Rust function the same CPUID values and compares the answers.
 *
 * The rule: CPUID's highest extended leaf (EAX of leaf 0x80000000) is at least 0x80000007, and
 * that leaf's EDX has bit 8, "Invariant TSC", set. */
#ifndef CPMPI_TSC_H
#define CPMPI_TSC_H

#define CPMPI_CPUID_POWER_LEAF 0x80000007u
#define CPMPI_INVARIANT_TSC_BIT (1u << 8)

static inline int cpmpi_tsc_invariant_from(unsigned max_extended_leaf, unsigned power_edx) {
    return max_extended_leaf >= CPMPI_CPUID_POWER_LEAF && (power_edx & CPMPI_INVARIANT_TSC_BIT) != 0;
}

#if defined(__x86_64__)
#include <cpuid.h>
/* This CPU's answer. */
static inline int cpmpi_tsc_invariant(void) {
    unsigned max = __get_cpuid_max(0x80000000u, 0), a = 0, b = 0, c = 0, d = 0;
    if (max >= CPMPI_CPUID_POWER_LEAF) __cpuid(CPMPI_CPUID_POWER_LEAF, a, b, c, d);
    return cpmpi_tsc_invariant_from(max, d);
}
#endif

#endif
