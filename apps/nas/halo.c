/* Halo exchange (NAS MG/BT-like 2-D stencil): each rank holds an n x n tile of a periodic
 * global grid on a 2-D process grid and, every iteration, exchanges its four edges with its
 * four neighbours (north/south rows, west/east columns: medium messages of n * 8 bytes) with
 * Isend/Irecv, then computes a 5-point stencil over the tile (the compute between exchanges).
 *
 * Verification: the data are 64-bit integers and the stencil sums the cell and its four
 * neighbours (wrapping), so on a periodic grid the global sum is multiplied by exactly 5 per
 * iteration: the final global sum must be 5^iters times the initial one. A halo that did not
 * arrive, or arrived wrong or from the wrong neighbour, breaks it.
 *
 * Messages: per iteration one message from each rank to each of its four neighbours (on a
 * 2 x 2 grid the north and south neighbour are the same rank, as are west and east: two
 * messages per iteration to each). Collectives: two MPI_Allreduce (initial and final sums). */
#include "nas_common.h"

enum { NORTH, SOUTH, WEST, EAST };

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct nas_arg a[] = {
        {"n", 256, 2, 8192, "tile edge per rank (cells of 8 bytes): message size n*8"},
        {"iters", 1500, 1, 1000000, "iterations (exchange + stencil)"},
        NAS_WARMUP_ARG,
        {"corrupt", 0, 0, 1, "testing: rank 1 flips one bit of the first message it receives (the run must say WRONG and exit 1)"},
    };
    nas_args(argc, argv, a, 4, rank);
    const long warmup = a[2].value;
    const long corrupt = a[3].value;
    const long n = a[0].value, iters = a[1].value;
    const long w = n + 2; /* tile with its halo ring */

    int dims[2] = {0, 0}, periods[2] = {1, 1}, coords[2];
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Cart_coords(cart, rank, 2, coords);
    int nb[4];
    MPI_Cart_shift(cart, 0, 1, &nb[NORTH], &nb[SOUTH]);
    MPI_Cart_shift(cart, 1, 1, &nb[WEST], &nb[EAST]);

    uint64_t *u = calloc((size_t)(w * w), sizeof *u), *v = calloc((size_t)(w * w), sizeof *v);
    uint64_t *sbuf[4], *rbuf[4];
    for (int d = 0; d < 4; d++) {
        sbuf[d] = malloc((size_t)n * sizeof(uint64_t));
        rbuf[d] = malloc((size_t)n * sizeof(uint64_t));
    }
    const uint64_t gy = (uint64_t)dims[1] * (uint64_t)n;
    uint64_t local = 0, total0 = 0, total = 0;
    for (long i = 1; i <= n; i++)
        for (long j = 1; j <= n; j++) {
            uint64_t gi = (uint64_t)coords[0] * n + (i - 1), gj = (uint64_t)coords[1] * n + (j - 1);
            u[i * w + j] = nas_mix(gi * gy + gj + 1);
            local += u[i * w + j];
        }
    MPI_Allreduce(&local, &total0, 1, MPI_UINT64_T, MPI_SUM, cart);

    nas_warmup(warmup, n * 8);
    MPI_Barrier(cart);
    double t0 = MPI_Wtime();
    for (long it = 0; it < iters; it++) {
        /* Edges: a message carries the tag of the direction it travels, so that a neighbour
         * that is both north and south (2 x 2 grid) still tells the two apart. */
        for (long k = 0; k < n; k++) {
            sbuf[NORTH][k] = u[1 * w + 1 + k];
            sbuf[SOUTH][k] = u[n * w + 1 + k];
            sbuf[WEST][k] = u[(1 + k) * w + 1];
            sbuf[EAST][k] = u[(1 + k) * w + n];
        }
        MPI_Request req[8];
        /* What travels south arrives from the north neighbour, and so on. */
        const int from[4] = {SOUTH, NORTH, EAST, WEST};
        for (int d = 0; d < 4; d++)
            MPI_Irecv(rbuf[d], (int)n, MPI_UINT64_T, nb[from[d]], d, cart, &req[d]);
        for (int d = 0; d < 4; d++)
            MPI_Isend(sbuf[d], (int)n, MPI_UINT64_T, nb[d], d, cart, &req[4 + d]);
        MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
        if (corrupt && rank == 1 && it == 0) rbuf[NORTH][0] ^= 1;
        /* rbuf[NORTH] travelled north: it is the south halo row; and so on. */
        for (long k = 0; k < n; k++) {
            u[(n + 1) * w + 1 + k] = rbuf[NORTH][k];
            u[0 * w + 1 + k] = rbuf[SOUTH][k];
            u[(1 + k) * w + n + 1] = rbuf[WEST][k];
            u[(1 + k) * w + 0] = rbuf[EAST][k];
        }
        for (long i = 1; i <= n; i++)
            for (long j = 1; j <= n; j++)
                v[i * w + j] = u[i * w + j] + u[(i - 1) * w + j] + u[(i + 1) * w + j] +
                               u[i * w + j - 1] + u[i * w + j + 1];
        uint64_t *t = u;
        u = v;
        v = t;
    }
    double secs = MPI_Wtime() - t0;

    local = 0;
    for (long i = 1; i <= n; i++)
        for (long j = 1; j <= n; j++) local += u[i * w + j];
    MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, cart);
    uint64_t expected = total0;
    for (long it = 0; it < iters; it++) expected *= 5;
    char params[160];
    snprintf(params, sizeof params, "ranks %d grid %dx%d n %ld iters %ld message %ld B", size,
             dims[0], dims[1], n, iters, n * 8);
    int rc = nas_report(rank, "halo", params, secs, total, expected, 0);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return rc;
}
