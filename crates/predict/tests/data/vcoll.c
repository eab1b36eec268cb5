#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, n; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n);
  int counts[4] = {100, 200, 300, 400}, disps[4] = {0, 100, 300, 600};
  char *sb = calloc(1, 1 << 20), *rb = calloc(1, 1 << 20);
  MPI_Datatype z = MPI_C_DOUBLE_COMPLEX;
  MPI_Allgatherv(sb, counts[r], z, rb, counts, disps, z, MPI_COMM_WORLD);
  MPI_Gatherv(sb, counts[r], z, rb, counts, disps, z, 1, MPI_COMM_WORLD);
  MPI_Scatterv(sb, counts, disps, z, rb, counts[r], z, 2, MPI_COMM_WORLD);
  int sc[4], rc[4], sd[4], rd[4];
  for (int j = 0; j < 4; j++) { sc[j] = 10 + r + 2 * j; rc[j] = 10 + j + 2 * r; sd[j] = 64 * j; rd[j] = 64 * j; }
  MPI_Alltoallv(sb, sc, sd, z, rb, rc, rd, z, MPI_COMM_WORLD);
  MPI_Reduce_scatter(sb, rb, counts, MPI_C_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allgather(sb, 50, z, rb, 50, z, MPI_COMM_WORLD);
  MPI_Bcast(sb, 64, MPI_LONG_DOUBLE, 3, MPI_COMM_WORLD);
  MPI_Finalize();
}
