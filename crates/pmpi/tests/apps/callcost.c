/* Per-intercepted-call cost (scripts/pmpi_bench.sh, docs/results.md): one rank sends to itself, so the loop has
 * no second process and no cross-core jitter: MPI_Isend + MPI_Recv + MPI_Wait, three intercepted
 * calls, two messages recorded (the send at its Wait, the receive). Prints ns per iteration. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "cost_clock.h"

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 1000000;
    char s[8], r[8];
    MPI_Request q;
    MPI_Init(&argc, &argv);
    int cpu = cpu_clock(argc, argv);
    for (int i = 0; i < iters / 10; i++) { /* warm-up */
        MPI_Isend(s, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &q);
        MPI_Recv(r, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    double t0 = seconds(cpu);
    for (int i = 0; i < iters; i++) {
        MPI_Isend(s, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &q);
        MPI_Recv(r, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    double t1 = seconds(cpu);
    printf("%.2f\n", (t1 - t0) / iters * 1e9);
    MPI_Finalize();
    return 0;
}
