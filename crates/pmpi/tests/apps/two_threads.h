/* Shared by the MPI_THREAD_MULTIPLE test programs (threads.c, commthreads.c): the thread level
 * they need, and their two threads run to the end. */
#ifndef COMMPERF_TWO_THREADS_H
#define COMMPERF_TWO_THREADS_H
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

/* MPI_Init_thread asking for MPI_THREAD_MULTIPLE; without it the run stops (exit code 1). */
static void init_thread_multiple(int *argc, char ***argv) {
    int provided;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "no MPI_THREAD_MULTIPLE\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Runs a(x) and b(y) on two threads at once and waits for both. */
static void run_two(void *(*a)(void *), void *x, void *(*b)(void *), void *y) {
    pthread_t ta, tb;
    pthread_create(&ta, NULL, a, x);
    pthread_create(&tb, NULL, b, y);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
}
#endif
