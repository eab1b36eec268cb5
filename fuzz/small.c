/* The rank-file seeds of commperf's fuzz corpus: a few of each kind of call. */
#include <mpi.h>
int main(int argc, char **argv) {
    int rank, size, buf[256] = {0}, out[256];
    MPI_Comm row;
    MPI_Request rq[2];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = rank ^ 1;
    for (int i = 0; i < 3; i++) {
        if (rank % 2 == 0) {
            MPI_Send(buf, 8, MPI_INT, peer, i, MPI_COMM_WORLD);
            MPI_Recv(buf, 256, MPI_INT, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, 8, MPI_INT, MPI_ANY_SOURCE, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 256, MPI_INT, peer, i, MPI_COMM_WORLD);
        }
    }
    MPI_Irecv(out, 16, MPI_INT, peer, 9, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(buf, 16, MPI_INT, peer, 9, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    MPI_Bcast(buf, 64, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Allreduce(buf, out, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &row);
    MPI_Allreduce(buf, out, 2, MPI_INT, MPI_SUM, row);
    MPI_Comm_free(&row);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
