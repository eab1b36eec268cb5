/* What the NAS-pattern skeletons share: `name=value` arguments (unknown or malformed ones are
 * refused, naming the argument, exit 2), the run's report line, and the exit status: every
 * program verifies that the data it moved arrived intact and exits 1 when it did not, so a
 * broken run (a knob that corrupts or drops a message, a wrong decomposition) is detectable
 * from its exit status and its checksum, not only from its time. */
#ifndef NAS_COMMON_H
#define NAS_COMMON_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nas_arg {
    const char *name;
    long value;
    long min;
    long max;
    const char *help;
};

static void nas_usage(const char *prog, const struct nas_arg *a, int n) {
    fprintf(stderr, "usage: %s", prog);
    for (int i = 0; i < n; i++) fprintf(stderr, " [%s=N]", a[i].name);
    fprintf(stderr, "\n");
    for (int i = 0; i < n; i++)
        fprintf(stderr, "  %-8s %s (default %ld, %ld..%ld)\n", a[i].name, a[i].help, a[i].value,
                a[i].min, a[i].max);
}

/* Parses argv into `a`; on a bad argument rank 0 says which and every rank exits 2. */
static void nas_args(int argc, char **argv, struct nas_arg *a, int n, int rank) {
    for (int k = 1; k < argc; k++) {
        const char *eq = strchr(argv[k], '=');
        int found = 0;
        for (int i = 0; eq && i < n; i++) {
            if (strlen(a[i].name) == (size_t)(eq - argv[k]) &&
                strncmp(a[i].name, argv[k], (size_t)(eq - argv[k])) == 0) {
                char *end;
                long v = strtol(eq + 1, &end, 10);
                if (*(eq + 1) == 0 || *end != 0 || v < a[i].min || v > a[i].max) {
                    if (rank == 0)
                        fprintf(stderr, "%s: argument %s: %s is not a whole number in %ld..%ld\n",
                                argv[0], a[i].name, eq + 1, a[i].min, a[i].max);
                    MPI_Finalize();
                    exit(2);
                }
                a[i].value = v;
                found = 1;
            }
        }
        if (!found) {
            if (rank == 0) {
                fprintf(stderr, "%s: unknown argument %s\n", argv[0], argv[k]);
                nas_usage(argv[0], a, n);
            }
            MPI_Finalize();
            exit(2);
        }
    }
}

/* Wrapping 64-bit mix: the programs' data are integers so that every check is exact. */
static inline uint64_t nas_mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* Rank 0 prints one line: pattern, parameters, wall time, checksum and verdict; every rank
 * returns the exit status (0 when the data verified, 1 when not). `errors` and `checksum` are
 * already global (reduced by the caller). */
static int nas_report(int rank, const char *pattern, const char *params, double seconds,
                      uint64_t checksum, uint64_t expected, long errors) {
    int good = errors == 0 && checksum == expected;
    if (rank == 0) {
        printf("%s: %s time %.6f s checksum %016llx expected %016llx errors %ld %s\n", pattern,
               params, seconds, (unsigned long long)checksum, (unsigned long long)expected,
               errors, good ? "OK" : "WRONG");
        fflush(stdout);
    }
    return good ? 0 : 1;
}

#endif
