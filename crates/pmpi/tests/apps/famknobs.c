/* Times, on rank 0 of 2, one operation of each family the LogGP knobs charge while the library
 * runs it (crates/cli/tests/emulate_mpi.rs runs it without knobs and under a large L), and
 * prints one line of figures, each the minimum over REPS (default 5) repetitions, in ns:
 *   ialltoall_ns    MPI_Ialltoall (1 double per rank) to its MPI_Wait
 *   iallreduce_ns   MPI_Iallreduce (1 double) to the MPI_Test that finds it done
 *   put_fence_ns    MPI_Put 64 B to rank 1 to the closing MPI_Win_fence
 *   get_fence_ns    MPI_Get 32 B from rank 1 to the closing MPI_Win_fence
 *   put_unlock_ns   MPI_Put 16 B to rank 1 inside MPI_Win_lock to MPI_Win_unlock
 *   rget_wait_ns    MPI_Rget 8 B from rank 1 (inside lock_all) to its MPI_Wait
 *   pcoll_ns        (MPI 4.0) MPI_Start of an MPI_Allreduce_init (1 double) to its MPI_Wait
 *   isendrecv_ns    (MPI 4.0) MPI_Isendrecv 40 B with rank 1 to its MPI_Wait, rank 1 answering
 *                   with MPI_Recv then MPI_Send (the exchange's receive waits for the answer)
 * Each repetition starts after an MPI_Barrier; the one-sided ones within one window. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void keep_min(double *best, double t) {
    if (*best < 0 || t < *best) *best = t;
}

int main(int argc, char **argv) {
    int r, n, flag;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n != 2) {
        if (r == 0) fprintf(stderr, "famknobs: run on 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int reps = argc > 1 ? atoi(argv[1]) : 5;
    int peer = 1 - r;
    double a2a = -1, ared = -1, putf = -1, getf = -1, putu = -1, rgetw = -1;
    double s[2] = {1, 2}, d[2], x = r + 1, y;
    static char sbuf[256], rbuf[256];
    char *base;
    MPI_Win win;
    MPI_Request rq;
    MPI_Win_allocate(1024, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    for (int i = 0; i < reps; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_ns();
        MPI_Ialltoall(s, 1, MPI_DOUBLE, d, 1, MPI_DOUBLE, MPI_COMM_WORLD, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        keep_min(&a2a, now_ns() - t0);

        MPI_Barrier(MPI_COMM_WORLD);
        t0 = now_ns();
        MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &rq);
        do MPI_Test(&rq, &flag, MPI_STATUS_IGNORE); while (!flag);
        keep_min(&ared, now_ns() - t0);
        if (y != 3.0) MPI_Abort(MPI_COMM_WORLD, 3);

        MPI_Win_fence(0, win);
        t0 = now_ns();
        MPI_Put(sbuf, 64, MPI_CHAR, peer, 0, 64, MPI_CHAR, win);
        MPI_Win_fence(0, win);
        keep_min(&putf, now_ns() - t0);
        t0 = now_ns();
        MPI_Get(rbuf, 32, MPI_CHAR, peer, 0, 32, MPI_CHAR, win);
        MPI_Win_fence(0, win);
        keep_min(&getf, now_ns() - t0);

        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win);
        t0 = now_ns();
        MPI_Put(sbuf, 16, MPI_CHAR, peer, 128, 16, MPI_CHAR, win);
        MPI_Win_unlock(peer, win);
        keep_min(&putu, now_ns() - t0);

        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock_all(0, win);
        t0 = now_ns();
        MPI_Rget(rbuf, 8, MPI_CHAR, peer, 256, 8, MPI_CHAR, win, &rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        keep_min(&rgetw, now_ns() - t0);
        MPI_Win_unlock_all(win);
    }
    MPI_Win_free(&win);
    if (r == 0)
        printf("ialltoall_ns %.0f iallreduce_ns %.0f put_fence_ns %.0f get_fence_ns %.0f put_unlock_ns %.0f "
               "rget_wait_ns %.0f",
               a2a, ared, putf, getf, putu, rgetw);
#if MPI_VERSION >= 4
    double pc = -1, isr = -1;
    MPI_Allreduce_init(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq);
    for (int i = 0; i < reps; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_ns();
        MPI_Start(&rq);
        MPI_Wait(&rq, MPI_STATUS_IGNORE);
        keep_min(&pc, now_ns() - t0);
    }
    MPI_Request_free(&rq);
    for (int i = 0; i < reps; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (r == 0) {
            double t0 = now_ns();
            MPI_Isendrecv(sbuf, 40, MPI_CHAR, 1, 7, rbuf, 40, MPI_CHAR, 1, 8, MPI_COMM_WORLD, &rq);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            keep_min(&isr, now_ns() - t0);
        } else {
            MPI_Recv(rbuf, 40, MPI_CHAR, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, 40, MPI_CHAR, 0, 8, MPI_COMM_WORLD);
        }
    }
    if (r == 0) printf(" pcoll_ns %.0f isendrecv_ns %.0f", pc, isr);
#endif
    if (r == 0) printf("\n");
    MPI_Finalize();
    return 0;
}
