/* The program `commperf emulate sweep`'s test sweeps (crates/cli/tests/emulate_sweep.rs):
 * ITERS ping-pongs of 64 B between ranks 0 and 1, nothing else, so that the time each knob adds
 * is known exactly (2 · ITERS messages on the critical path). It exits 3 when it runs under a
 * non-zero o knob (read from the interposer's COMMPERF_EMULATE), so the test sees a setting fail
 * while the sweep keeps the others. Rank 0 prints the loop's own time ("loop seconds S"), which
 * the launch's start-up and other work on the machine do not blur. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    const char *e = getenv("COMMPERF_EMULATE");
    const char *o = e ? strstr(e, "o=") : NULL;
    if (o && atof(o + 2) > 0) {
        MPI_Finalize();
        return 3;
    }
    int iters = argc > 1 ? atoi(argv[1]) : 100;
    char buf[64] = {0};
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (r == 0) {
            MPI_Send(buf, 64, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, 64, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (r == 1) {
            MPI_Recv(buf, 64, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 64, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    if (r == 0) printf("loop seconds %.6f\n", MPI_Wtime() - t0);
    MPI_Finalize();
    return 0;
}
