/* The clock of the cost benchmarks (callcost.c, pollcost.c). `cpu` (their second argument) times
 * the calling thread's CPU time instead of the wall clock: on a shared machine a descheduled rank
 * then adds nothing, and the interposer's writer thread (another thread) is not counted. */
#include <mpi.h>
#include <string.h>
#include <time.h>

static double seconds(int cpu) {
    struct timespec ts;
    if (!cpu) return MPI_Wtime();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cpu_clock(int argc, char **argv) { return argc > 2 && strcmp(argv[2], "cpu") == 0; }
