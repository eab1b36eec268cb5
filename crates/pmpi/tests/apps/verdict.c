/* A program that reports on itself as NAS's programs do, for `commperf app`'s verdict tests.
 *
 *   verdict ok            NAS's banner, `Time in seconds =` (its timed section, ~0.2 s) and
 *                         `Verification = SUCCESSFUL`
 *   verdict unsuccessful  the same with `Verification = UNSUCCESSFUL`, and exit status 0
 *   verdict plain         no banner: `took T ms` only
 *   verdict segv          rank 1 raises SIGSEGV after the timed section
 *
 * The timed section is a sleep between two collectives: its time is well below the launch's
 * wall time (mpirun's start-up), which is what the study must not report in its place. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *mode = argc > 1 ? argv[1] : "ok";
    int nas = strcmp(mode, "plain") != 0;
    if (rank == 0 && nas) printf("\n\n NAS Parallel Benchmarks 3.4 -- VT Benchmark\n\n");
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    usleep(200000);
    int token = rank;
    MPI_Allreduce(MPI_IN_PLACE, &token, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 1 && strcmp(mode, "segv") == 0) raise(SIGSEGV);
    if (rank == 0 && nas) {
        printf("\n\n VT Benchmark Completed.\n");
        printf(" Time in seconds =             %12.2f\n", t);
        printf(" Verification    =             %s\n",
               strcmp(mode, "unsuccessful") == 0 ? "UNSUCCESSFUL" : "  SUCCESSFUL");
    }
    if (rank == 0 && !nas) printf("took %.3f ms\n", t * 1e3);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
