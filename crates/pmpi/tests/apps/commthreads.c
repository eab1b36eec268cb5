/* MPI_THREAD_MULTIPLE with communicators made, used and freed on two threads at once: the
 * interposer's communicator table (csrc/shim.c group_lookup) under contention, evicting
 * (more live communicators than its 256 slots) while the other thread reads its last entry.
 * Each of 2 threads per rank keeps LIVE duplicates of MPI_COMM_SELF (local: no other rank
 * takes part) and goes ROUNDS times through them in turn, one MPI_Sendrecv with itself on
 * each, every fourth freed and made anew first. Per rank: 2*ROUNDS*LIVE MPI_Sendrecv of 4
 * bytes (1200), 2*(LIVE + ROUNDS*LIVE/4) MPI_Comm_dup (700) and as many MPI_Comm_free.
 * Prints nothing; exits 1 without
 * MPI_THREAD_MULTIPLE, 2 on a wrong value. Run by scripts/sanitize.sh (ThreadSanitizer,
 * AddressSanitizer) and crates/cli/tests/monitor_mpi.rs. */
#include "two_threads.h"
#include <stdio.h>

#define LIVE 200
#define ROUNDS 3

static int bad = 0;

static void *worker(void *arg) {
    int t = (int)(long)arg;
    MPI_Comm live[LIVE];
    for (int i = 0; i < LIVE; i++) MPI_Comm_dup(MPI_COMM_SELF, &live[i]);
    for (int i = 0; i < ROUNDS * LIVE; i++) {
        int k = i % LIVE;
        if (k % 4 == 0) {
            MPI_Comm_free(&live[k]);
            MPI_Comm_dup(MPI_COMM_SELF, &live[k]);
        }
        int x = i * 2 + t, y = -1;
        MPI_Sendrecv(&x, 1, MPI_INT, 0, t, &y, 1, MPI_INT, 0, t, live[k], MPI_STATUS_IGNORE);
        if (y != x) __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
    }
    for (int i = 0; i < LIVE; i++) MPI_Comm_free(&live[i]);
    return NULL;
}

int main(int argc, char **argv) {
    init_thread_multiple(&argc, &argv);
    run_two(worker, (void *)0L, worker, (void *)1L);
    if (bad) {
        fprintf(stderr, "a self Sendrecv delivered a wrong value\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
