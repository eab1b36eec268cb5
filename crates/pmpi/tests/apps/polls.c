/* What a poll records (crates/cli/tests/monitor_mpi.rs, `polls_*`): 2 ranks.
 * Rank 1 sleeps 30 ms between its sends, so rank 0's polls miss many times before each hit.
 *   message 1 (8 B, tag 1): rank 0 MPI_Irecv, then MPI_Test until it completes
 *   message 2 (8 B, tag 2): rank 0 MPI_Iprobe until it finds it, then MPI_Recv
 *   message 3 (8 B, tag 3): rank 0 MPI_Irecv, then MPI_Testany (one request) until it completes
 *   message 4 (8 B, tag 4): rank 0 MPI_Irecv, then MPI_Wait (blocks ~30 ms)
 * Rank 0 prints how many polls missed ("misses N"): none of them may leave an event. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int r, flag = 0, idx;
    long misses = 0;
    double v = 1.0;
    MPI_Request q;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    if (r == 1) {
        for (int tag = 1; tag <= 4; tag++) {
            usleep(30000);
            MPI_Send(&v, 1, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD);
        }
    } else if (r == 0) {
        MPI_Irecv(&v, 1, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD, &q);
        for (flag = 0; !flag; misses += !flag) MPI_Test(&q, &flag, &st);
        for (flag = 0; !flag; misses += !flag) MPI_Iprobe(1, 2, MPI_COMM_WORLD, &flag, &st);
        MPI_Recv(&v, 1, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Irecv(&v, 1, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD, &q);
        for (flag = 0; !flag; misses += !flag) MPI_Testany(1, &q, &idx, &flag, &st);
        MPI_Irecv(&v, 1, MPI_DOUBLE, 1, 4, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        printf("misses %ld\n", misses);
    }
    MPI_Finalize();
    return 0;
}
