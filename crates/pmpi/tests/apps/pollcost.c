/* Per-poll cost (scripts/pmpi_bench.sh, docs/results.md): what a polling loop pays for the interposer on calls
 * that complete nothing. hpcc's RandomAccess polls MPI_Testany ~20 million times a second, so a
 * nanosecond per miss is 2 % of its time. One rank posts a receive nobody sends to and polls it
 * with MPI_Test, MPI_Testany (one request) and MPI_Iprobe: three intercepted calls per iteration,
 * none of which completes anything. Prints ns per iteration. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "cost_clock.h"

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 10000000;
    char r[8];
    int flag = 0, index = 0, misses = 0;
    MPI_Request q;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    int cpu = cpu_clock(argc, argv);
    MPI_Irecv(r, 8, MPI_CHAR, 0, 99, MPI_COMM_WORLD, &q);
    for (int i = 0; i < iters / 10; i++) MPI_Test(&q, &flag, MPI_STATUS_IGNORE); /* warm-up */
    double t0 = seconds(cpu);
    for (int i = 0; i < iters; i++) {
        MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
        MPI_Testany(1, &q, &index, &flag, &st);
        MPI_Iprobe(0, 98, MPI_COMM_WORLD, &flag, &st);
        misses += !flag;
    }
    double t1 = seconds(cpu);
    MPI_Cancel(&q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    if (misses != iters) {
        fprintf(stderr, "pollcost: a poll completed something (%d misses of %d)\n", misses, iters);
        return 1;
    }
    printf("%.2f\n", (t1 - t0) / iters * 1e9);
    MPI_Finalize();
    return 0;
}
