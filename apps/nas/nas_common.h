/* What the NAS-pattern skeletons share: `name=value` arguments (unknown or malformed ones are
 * refused, naming the argument, exit 2), the run's report line, and the exit status: every
 * program verifies that the data it moved arrived intact and exits 1 when it did not, so a
 * broken run (a knob that corrupts or drops a message, a wrong decomposition) is detectable
 * from its exit status and its checksum, not only from its time. Every communicating program
 * takes `warmup=N`: N untimed rounds of messages before the barrier that starts its timed loop
 * (nas_warmup; default 0, `commperf app` runs 2). */
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

/* The tag of the warm-up's messages: above every tag a program uses, within MPI's guaranteed
 * MPI_TAG_UB (at least 32767). */
#define NAS_WARMUP_TAG 32000

/* Messages in flight per peer in a warm-up round, and the bound on their buffers. */
#define NAS_WARMUP_BURST 64
#define NAS_WARMUP_MAX_BYTES (4L << 20)

/* The `warmup` argument every communicating program takes: rounds of the untimed warm-up. */
#define NAS_WARMUP_ARG \
    {"warmup", 0, 0, 100000, \
     "untimed warm-up rounds before the timed loop: each sends 64 of the largest message to " \
     "every other rank at once, to posted receives and then ahead of them, and reduces 8 bytes"}

/* An untimed warm-up before the barrier that starts the timed loop, for the reason NAS runs an
 * untimed first iteration: an MPI library's first messages between two ranks touch its
 * shared-memory cells for the first time. MPICH 4.0's shared memory took 117 minor page faults
 * per rank in the first 20 iterations of pipeline (640 messages of 1 KiB; 0.67 ms, against
 * 0.22 ms after 10 untimed iterations, on a 2-vCPU VM); Open MPI's took 3 either way. Those are
 * a cost of the run's start, not of its steady state, and a timed loop of a millisecond is half
 * start-up without this. The cells are used in turn by messages in flight, so a round posts
 * NAS_WARMUP_BURST receives and sends of `bytes` (the program's largest message) to every other
 * rank at once (ranks paired by shifts; one exchange at a time, as a ping-pong, warmed one cell
 * and left 0.47 ms), then the same sends again ahead of their receives (posted after a barrier),
 * and then reduces 8 bytes. The second burst is for messages that arrive before their receive:
 * MPICH 4.0 holds them apart, and the first time more than a few dozen wait at once (wavefront's
 * stream of blocking sends, its sender 40 planes ahead) both ranks stalled 60-70 us, once per
 * direction: 0.14 ms of a 0.45 ms loop, in every run, gone with this burst. Its messages and
 * collectives are the run's too: a monitor counts them, before the barrier. */
static inline void nas_warmup(long rounds, long bytes) {
    if (rounds <= 0) return;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const long n = bytes > 0 ? bytes : 1;
    /* A receive buffer per message in flight (MPI forbids receives into one buffer at once),
     * their total bounded. */
    long burst = NAS_WARMUP_MAX_BYTES / n;
    if (burst > NAS_WARMUP_BURST) burst = NAS_WARMUP_BURST;
    if (burst < 1) burst = 1;
    char *out = calloc((size_t)n, 1), *in = malloc((size_t)(n * burst));
    MPI_Request *q = malloc(sizeof *q * (size_t)(2 * burst));
    if (!out || !in || !q) {
        fprintf(stderr, "warm-up: cannot allocate %ld bytes\n", n * (burst + 1));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (long i = 0; i < rounds; i++) {
        for (int k = 1; k < size; k++) {
            const int from = (rank - k + size) % size, to = (rank + k) % size;
            for (long b = 0; b < burst; b++)
                MPI_Irecv(in + b * n, (int)n, MPI_BYTE, from, NAS_WARMUP_TAG, MPI_COMM_WORLD, &q[b]);
            for (long b = 0; b < burst; b++)
                MPI_Isend(out, (int)n, MPI_BYTE, to, NAS_WARMUP_TAG, MPI_COMM_WORLD, &q[burst + b]);
            MPI_Waitall((int)(2 * burst), q, MPI_STATUSES_IGNORE);
            for (long b = 0; b < burst; b++)
                MPI_Isend(out, (int)n, MPI_BYTE, to, NAS_WARMUP_TAG, MPI_COMM_WORLD, &q[burst + b]);
            MPI_Barrier(MPI_COMM_WORLD);
            for (long b = 0; b < burst; b++)
                MPI_Irecv(in + b * n, (int)n, MPI_BYTE, from, NAS_WARMUP_TAG, MPI_COMM_WORLD, &q[b]);
            MPI_Waitall((int)(2 * burst), q, MPI_STATUSES_IGNORE);
        }
        uint64_t x = 1, y;
        MPI_Allreduce(&x, &y, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    }
    free(q);
    free(out);
    free(in);
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
