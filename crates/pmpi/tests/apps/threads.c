/* MPI_THREAD_MULTIPLE under the interposer: on every rank one thread posts N Irecv and N Isend
 * (to the next rank, from the previous), another thread completes all of them with MPI_Wait.
 * A request posted on one thread and completed on another must be recorded once, with nothing
 * left pending: every send matched to its receive. Prints nothing; exits 1 without
 * MPI_THREAD_MULTIPLE. */
#include "two_threads.h"
#include <stdio.h>
#include <stdlib.h>

#define N 100
static MPI_Request reqs[2 * N];
static int rbuf[N], sbuf[N];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t posted_cv = PTHREAD_COND_INITIALIZER;
static int posted = 0;
static int rank, size;

static void *poster(void *arg) {
    (void)arg;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int i = 0; i < N; i++) {
        sbuf[i] = rank * 1000 + i;
        MPI_Irecv(&rbuf[i], 1, MPI_INT, prev, i, MPI_COMM_WORLD, &reqs[2 * i]);
        MPI_Isend(&sbuf[i], 1, MPI_INT, next, i, MPI_COMM_WORLD, &reqs[2 * i + 1]);
        pthread_mutex_lock(&mu);
        posted = 2 * (i + 1);
        pthread_cond_signal(&posted_cv);
        pthread_mutex_unlock(&mu);
    }
    return NULL;
}

static void *completer(void *arg) {
    (void)arg;
    for (int k = 0; k < 2 * N; k++) {
        pthread_mutex_lock(&mu);
        while (posted <= k) pthread_cond_wait(&posted_cv, &mu);
        pthread_mutex_unlock(&mu);
        MPI_Wait(&reqs[k], MPI_STATUS_IGNORE);
    }
    return NULL;
}

int main(int argc, char **argv) {
    init_thread_multiple(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    run_two(poster, NULL, completer, NULL);
    int prev = (rank + size - 1) % size;
    for (int i = 0; i < N; i++)
        if (rbuf[i] != prev * 1000 + i) {
            fprintf(stderr, "rank %d: message %d wrong\n", rank, i);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    MPI_Finalize();
    return 0;
}
