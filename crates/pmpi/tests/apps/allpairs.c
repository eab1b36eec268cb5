/* The all-pairs clock check (Liao et al. 1998, §3.2): every pair of ranks exchanges same-size
 * messages both ways in turn (ping-pong, blocking MPI_Send/MPI_Recv), N round trips per size, pair
 * after pair in the same order on every rank. Per size, every ordered pair then carries exactly N
 * messages, and the median net latency of every ordered pair should be the same up to the
 * clocks' error: a rank whose clock offset is off moves its outgoing medians one way and its
 * incoming ones the other, which the monitor's "all-pairs spread" shows.
 * Usage: allpairs [N]   (default 100; sizes 8 and 1024 bytes). Prints nothing. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = argc > 1 ? atoi(argv[1]) : 100;
    static const int sizes[] = {8, 1024};
    static char buf[1024];
    memset(buf, rank, sizeof buf);
    for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (int a = 0; a < size; a++) {
            for (int b = a + 1; b < size; b++) {
                if (rank != a && rank != b) continue;
                int other = rank == a ? b : a;
                for (int i = 0; i < n; i++) {
                    if (rank == a) {
                        MPI_Send(buf, sizes[s], MPI_BYTE, other, s, MPI_COMM_WORLD);
                        MPI_Recv(buf, sizes[s], MPI_BYTE, other, s, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    } else {
                        MPI_Recv(buf, sizes[s], MPI_BYTE, other, s, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                        MPI_Send(buf, sizes[s], MPI_BYTE, other, s, MPI_COMM_WORLD);
                    }
                }
            }
        }
    }
    MPI_Finalize();
    return 0;
}
