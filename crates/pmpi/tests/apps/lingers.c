/* The program the orphan tests kill commperf under (crates/cli/tests/orphans.rs): every rank
 * exchanges a message with its neighbour every 10 ms, about SECONDS seconds long (argv[1], default
 * 30), so that it is mid-run, with MPI's shared memory and the interposer's files in use, at
 * any moment the test strikes. Rank 0 prints "done" at the end. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    double seconds = argc > 1 ? atof(argv[1]) : 30.0;
    char buf[64] = {0};
    struct timespec tick = {0, 10 * 1000 * 1000};
    /* A count, not a clock: the ranks must agree on how many exchanges there are. */
    long ticks = (long)(seconds * 100);
    for (long i = 0; i < ticks; i++) {
        int peer = r ^ 1;
        if (peer < n) {
            MPI_Sendrecv_replace(buf, 64, MPI_BYTE, peer, 0, peer, 0, MPI_COMM_WORLD,
                                 MPI_STATUS_IGNORE);
        }
        nanosleep(&tick, NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (r == 0) printf("done\n");
    MPI_Finalize();
    return 0;
}
