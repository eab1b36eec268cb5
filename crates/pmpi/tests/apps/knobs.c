/* Measures what the LogGP knobs of `commperf emulate` must move, between ranks 0 and 1 (other
 * ranks idle), and prints one line of figures (rank 0) for crates/cli/tests/emulate_mpi.rs:
 *   pingpong SIZE ITERS : half the mean round trip of MPI_Send/MPI_Recv, ns  -> "oneway_ns X"
 *   send SIZE ITERS     : mean time of one MPI_Send call on rank 0 (rank 1 receives with
 *                         MPI_Irecv posted early), and of one MPI_Recv on rank 1 whose message
 *                         is already there                                  -> "send_ns X recv_ns Y"
 *   burst N SIZE        : rank 0 posts N MPI_Isends back to back, then MPI_Waitall; time from the
 *                         first Isend's entry to the last one's return, ns  -> "burst_ns X"
 *   coll                : 5 MPI_Allreduce of 8 B and 10 ping-pongs of 100 B (untouched counts)
 *   waitall N SIZE      : rank 0 posts N MPI_Irecvs, then after a barrier rank 1 sends N messages
 *                         back to back; time from the barrier to rank 0's MPI_Waitall return, ns
 *                         (under L: one ΔL, not N: the N messages arrive together) -> "waitall_ns X"
 *   self N SIZE         : rank 0 sends N messages to itself (MPI_Isend, MPI_Recv, MPI_Wait); mean
 *                         time per message, ns (no wire: the knobs' L, g and G do not apply)
 *                                                                           -> "self_ns X"
 *   late KIND N W       : N exchanges between ranks 0 and 1 where rank 1 comes W µs late to each
 *                         (it spins W first); KIND sendrecv, replace (MPI_Sendrecv_replace) or
 *                         ssend (rank 0 MPI_Ssends, rank 1 receives): rank 0's mean per exchange,
 *                         ns (under g < W nothing is paced: the wait for the late partner is no
 *                         wire time)                                       -> "late_ns X"
 * An optional last argument REPS (default 5): the minimum over REPS repetitions of each figure is
 * printed, so that one repetition in a quiet moment of a shared machine is enough. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static char *buf, *rbuf;

static double pingpong(int r, int size, int iters) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_ns();
    for (int i = 0; i < iters; i++) {
        if (r == 0) {
            MPI_Send(buf, size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(rbuf, size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (r == 1) {
            MPI_Recv(rbuf, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        }
    }
    return (now_ns() - t0) / iters / 2;
}

/* Mean MPI_Send time (rank 0) and mean MPI_Recv time for messages already there (rank 1). */
static void send_recv_cost(int r, int size, int iters, double *s, double *rv) {
    MPI_Barrier(MPI_COMM_WORLD);
    double acc = 0;
    for (int i = 0; i < iters; i++) {
        if (r == 0) {
            double t0 = now_ns();
            MPI_Send(buf, size, MPI_CHAR, 1, 2, MPI_COMM_WORLD);
            acc += now_ns() - t0;
            MPI_Recv(rbuf, 0, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (r == 1) {
            /* Wait until the message is surely there, then time the receive alone. */
            int flag = 0;
            while (!flag) MPI_Iprobe(0, 2, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            double t0 = now_ns();
            MPI_Recv(rbuf, size, MPI_CHAR, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            acc += now_ns() - t0;
            MPI_Send(buf, 0, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
        }
    }
    double mine = acc / iters, other = 0;
    /* Rank 1's figure to rank 0. */
    if (r == 1) MPI_Send(&mine, 1, MPI_DOUBLE, 0, 4, MPI_COMM_WORLD);
    if (r == 0) MPI_Recv(&other, 1, MPI_DOUBLE, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    *s = mine;
    *rv = other;
}

static double burst(int r, int n, int size) {
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)n);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = 0;
    if (r == 0) {
        double t0 = now_ns();
        for (int i = 0; i < n; i++) MPI_Isend(buf, size, MPI_CHAR, 1, 5, MPI_COMM_WORLD, &rq[i]);
        t = now_ns() - t0;
        for (int i = 0; i < n; i++) MPI_Wait(&rq[i], MPI_STATUS_IGNORE);
    } else if (r == 1) {
        for (int i = 0; i < n; i++) MPI_Recv(rbuf, size, MPI_CHAR, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    free(rq);
    return t;
}

static double waitall(int r, int n, int size) {
    MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)n);
    double t = 0;
    if (r == 0)
        for (int i = 0; i < n; i++) MPI_Irecv(rbuf + (size_t)i * size, size, MPI_CHAR, 1, 6, MPI_COMM_WORLD, &rq[i]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (r == 0) {
        double t0 = now_ns();
        MPI_Waitall(n, rq, MPI_STATUSES_IGNORE);
        t = now_ns() - t0;
    } else if (r == 1) {
        for (int i = 0; i < n; i++) MPI_Send(buf, size, MPI_CHAR, 0, 6, MPI_COMM_WORLD);
    }
    free(rq);
    return t;
}

static double late(int r, const char *kind, int n, double w_us) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_ns();
    long x = r, y = 0;
    for (int i = 0; i < n && r < 2; i++) {
        if (r == 1) {
            double until = now_ns() + w_us * 1e3;
            while (now_ns() < until) {
            }
        }
        int peer = 1 - r;
        if (strcmp(kind, "sendrecv") == 0) {
            MPI_Sendrecv(&x, 1, MPI_LONG, peer, 8, &y, 1, MPI_LONG, peer, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (strcmp(kind, "replace") == 0) {
            y = r;
            MPI_Sendrecv_replace(&y, 1, MPI_LONG, peer, 8, peer, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (y != peer) {
                fprintf(stderr, "knobs: Sendrecv_replace delivered %ld, not %d\n", y, peer);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        } else if (r == 0) {
            MPI_Ssend(&x, 1, MPI_LONG, 1, 8, MPI_COMM_WORLD);
        } else {
            MPI_Recv(&y, 1, MPI_LONG, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    return (now_ns() - t0) / n;
}

static double minof(double a, double b) { return a < b ? a : b; }

int main(int argc, char **argv) {
    int r, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc < 2 || n < 2) {
        if (r == 0) fprintf(stderr, "usage: knobs pingpong|send|burst|waitall|self|coll … (2+ ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    buf = calloc(1 << 22, 1);
    rbuf = calloc(1 << 22, 1);
    const char *mode = argv[1];
    int a1 = argc > 2 ? atoi(argv[2]) : 0, a2 = argc > 3 ? atoi(argv[3]) : 0;
    int reps = argc > 4 ? atoi(argv[4]) : 5;
    if (reps < 1) reps = 1;
    if (strcmp(mode, "pingpong") == 0) {
        pingpong(r, a1, a2 / 10 + 1); /* warm-up */
        double best = 1e300;
        for (int k = 0; k < reps; k++) best = minof(best, pingpong(r, a1, a2));
        if (r == 0) printf("oneway_ns %.1f\n", best);
    } else if (strcmp(mode, "send") == 0) {
        double s, rv, bs = 1e300, br = 1e300;
        send_recv_cost(r, a1, a2 / 10 + 1, &s, &rv);
        for (int k = 0; k < reps; k++) {
            send_recv_cost(r, a1, a2, &s, &rv);
            bs = minof(bs, s);
            br = minof(br, rv);
        }
        if (r == 0) printf("send_ns %.1f recv_ns %.1f\n", bs, br);
    } else if (strcmp(mode, "burst") == 0) {
        burst(r, a1, a2);
        double best = 1e300;
        for (int k = 0; k < reps; k++) best = minof(best, burst(r, a1, a2));
        if (r == 0) printf("burst_ns %.1f\n", best);
    } else if (strcmp(mode, "waitall") == 0) {
        waitall(r, a1, a2);
        double best = 1e300;
        for (int k = 0; k < reps; k++) best = minof(best, waitall(r, a1, a2));
        if (r == 0) printf("waitall_ns %.1f\n", best);
    } else if (strcmp(mode, "self") == 0) {
        double best = 1e300;
        for (int k = 0; k < reps + 1; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = now_ns();
            if (r == 0) {
                for (int i = 0; i < a1; i++) {
                    MPI_Request q;
                    MPI_Isend(buf, a2, MPI_CHAR, 0, 7, MPI_COMM_WORLD, &q);
                    MPI_Recv(rbuf, a2, MPI_CHAR, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Wait(&q, MPI_STATUS_IGNORE);
                }
            }
            if (k > 0) best = minof(best, (now_ns() - t0) / a1); /* the first is a warm-up */
        }
        if (r == 0) printf("self_ns %.1f\n", best);
    } else if (strcmp(mode, "late") == 0) {
        const char *kind = argc > 2 ? argv[2] : "";
        if (strcmp(kind, "sendrecv") && strcmp(kind, "replace") && strcmp(kind, "ssend")) {
            if (r == 0) fprintf(stderr, "knobs: late KIND: sendrecv, replace or ssend, not %s\n", kind);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        int k = argc > 3 ? atoi(argv[3]) : 0;
        double w = argc > 4 ? atof(argv[4]) : 0;
        if (k < 1) k = 1;
        double t = late(r, kind, k, w);
        if (r == 0) printf("late_ns %.1f\n", t);
    } else if (strcmp(mode, "coll") == 0) {
        double x = r, y;
        for (int i = 0; i < 5; i++) MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        pingpong(r, 100, 10);
        if (r == 0) printf("sum %.0f\n", y);
    } else {
        if (r == 0) fprintf(stderr, "knobs: unknown mode %s\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    free(buf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
