/* Wavefront pipeline (NAS LU/SP-like): a global nx x ny grid of 64-bit cells on a 2-D process
 * grid of bx x by blocks is swept plane by plane, nz planes per sweep. In plane k a block can
 * only be updated once its north and west neighbours have updated theirs (each cell depends on
 * the cell above and the cell to the left, already updated), so the planes flow diagonally
 * through the ranks as a pipeline of many small messages: per plane, a row of by words to the
 * south and a column of bx words to the east (64 B by default). Each iteration is a forward
 * sweep and a backward one (dependencies on south and east, messages to the north and west),
 * as LU's SSOR does.
 *
 * Verification: after the timed part every rank recomputes the whole grid serially (the same
 * update in row-major order respects the same dependencies) and compares its own block cell by
 * cell; the wrapping sum of all blocks must equal the serial grid's.
 *
 * Messages: per iteration nz messages from each rank to its south and its east neighbour (if
 * any) and nz to its north and its west neighbour (if any); row messages by*8 bytes, column
 * messages bx*8 bytes. Collectives: one MPI_Allreduce at the end. */
#include "nas_common.h"

static inline uint64_t fwd(uint64_t c, uint64_t n, uint64_t w, long k) {
    return c * 3 + n + w * 5 + (uint64_t)k;
}
static inline uint64_t bwd(uint64_t c, uint64_t s, uint64_t e, long k) {
    return c * 7 + s + e * 3 + (uint64_t)k;
}

/* One sweep of plane k over the cells [i0, i1) x [j0, j1) of a grid with row stride `w`,
 * whose halo row/column (index i0-1 / j0-1 forward, i1 / j1 backward) holds the neighbours'
 * values or the boundary value. */
static void sweep(uint64_t *u, long w, long i0, long i1, long j0, long j1, long k, int back) {
    if (!back) {
        for (long i = i0; i < i1; i++)
            for (long j = j0; j < j1; j++)
                u[i * w + j] = fwd(u[i * w + j], u[(i - 1) * w + j], u[i * w + j - 1], k);
    } else {
        for (long i = i1 - 1; i >= i0; i--)
            for (long j = j1 - 1; j >= j0; j--)
                u[i * w + j] = bwd(u[i * w + j], u[(i + 1) * w + j], u[i * w + j + 1], k);
    }
}

/* The boundary values a sweep of plane k sees beyond the global grid. */
static void boundary(uint64_t *u, long w, long rows, long cols, long k, long it) {
    for (long j = 0; j < cols + 2; j++) {
        u[0 * w + j] = (uint64_t)(k + 1);
        u[(rows + 1) * w + j] = (uint64_t)(k + 2);
    }
    for (long i = 0; i < rows + 2; i++) {
        u[i * w + 0] = (uint64_t)(it + 7);
        u[i * w + cols + 1] = (uint64_t)(it + 9);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct nas_arg a[] = {
        {"bx", 8, 1, 4096, "block rows per rank: east/west message size bx*8"},
        {"by", 8, 1, 4096, "block columns per rank: north/south message size by*8"},
        {"nz", 100, 1, 1000000, "planes per sweep (messages per neighbour per sweep)"},
        {"iters", 1000, 1, 1000000, "iterations (a forward and a backward sweep each)"},
        NAS_WARMUP_ARG,
        {"corrupt", 0, 0, 1, "testing: rank 1 flips one bit of the first message it receives (the run must say WRONG and exit 1)"},
    };
    nas_args(argc, argv, a, 6, rank);
    const long warmup = a[4].value;
    const long corrupt = a[5].value;
    const long bx = a[0].value, by = a[1].value, nz = a[2].value, iters = a[3].value;
    int dims[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    const int cx = rank / dims[1], cy = rank % dims[1];
    const int north = cx > 0 ? rank - dims[1] : -1, south = cx < dims[0] - 1 ? rank + dims[1] : -1;
    const int west = cy > 0 ? rank - 1 : -1, east = cy < dims[1] - 1 ? rank + 1 : -1;
    const long w = by + 2;
    uint64_t *u = calloc((size_t)((bx + 2) * w), sizeof *u);
    uint64_t *col = malloc((size_t)bx * sizeof *col), *row = malloc((size_t)by * sizeof *row);
    const long gx = (long)dims[0] * bx, gy = (long)dims[1] * by;
    for (long i = 1; i <= bx; i++)
        for (long j = 1; j <= by; j++)
            u[i * w + j] = nas_mix((uint64_t)((cx * bx + i - 1) * gy + cy * by + j - 1) + 1);

    nas_warmup(warmup, (bx > by ? bx : by) * 8);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long it = 0; it < iters; it++) {
        for (int back = 0; back < 2; back++) {
            /* Forward: from the north and west, to the south and east; backward mirrored. */
            const int up = back ? south : north, left = back ? east : west;
            const int down = back ? north : south, right = back ? west : east;
            const long hr = back ? bx + 1 : 0, hc = back ? by + 1 : 0; /* halo row, column */
            const long er = back ? 1 : bx, ec = back ? 1 : by;          /* edge sent on */
            for (long k = 0; k < nz; k++) {
                boundary(u, w, bx, by, k, it);
                const int tag = (int)((back * nz + k) & 0x7fff);
                if (up >= 0) MPI_Recv(u + hr * w + 1, (int)by, MPI_UINT64_T, up, tag,
                                      MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                if (left >= 0) {
                    MPI_Recv(col, (int)bx, MPI_UINT64_T, left, tag, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
                    for (long i = 0; i < bx; i++) u[(i + 1) * w + hc] = col[i];
                }
                if (corrupt && rank == 1 && it == 0 && back == 0 && k == 0) u[1 * w + hc] ^= 1;
                sweep(u, w, 1, bx + 1, 1, by + 1, k, back);
                if (down >= 0) {
                    memcpy(row, u + er * w + 1, (size_t)by * sizeof *row);
                    MPI_Send(row, (int)by, MPI_UINT64_T, down, tag, MPI_COMM_WORLD);
                }
                if (right >= 0) {
                    for (long i = 0; i < bx; i++) col[i] = u[(i + 1) * w + ec];
                    MPI_Send(col, (int)bx, MPI_UINT64_T, right, tag, MPI_COMM_WORLD);
                }
            }
        }
    }
    double secs = MPI_Wtime() - t0;

    /* The serial grid, swept the same way, and this rank's block compared with it. */
    const long sw = gy + 2;
    uint64_t *g = calloc((size_t)((gx + 2) * sw), sizeof *g);
    for (long i = 1; i <= gx; i++)
        for (long j = 1; j <= gy; j++) g[i * sw + j] = nas_mix((uint64_t)((i - 1) * gy + j - 1) + 1);
    for (long it = 0; it < iters; it++)
        for (int back = 0; back < 2; back++)
            for (long k = 0; k < nz; k++) {
                boundary(g, sw, gx, gy, k, it);
                sweep(g, sw, 1, gx + 1, 1, gy + 1, k, back);
            }
    uint64_t want = 0, mine[2] = {0, 0}, all[2];
    for (long i = 1; i <= gx; i++)
        for (long j = 1; j <= gy; j++) want += g[i * sw + j];
    for (long i = 1; i <= bx; i++)
        for (long j = 1; j <= by; j++) {
            uint64_t x = u[i * w + j];
            mine[0] += x;
            mine[1] += x != g[(cx * bx + i) * sw + cy * by + j];
        }
    MPI_Allreduce(mine, all, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    char params[200];
    snprintf(params, sizeof params,
             "ranks %d grid %dx%d bx %ld by %ld nz %ld iters %ld messages %ld/%ld B", size,
             dims[0], dims[1], bx, by, nz, iters, by * 8, bx * 8);
    int rc = nas_report(rank, "wavefront", params, secs, all[0], want, (long)all[1]);
    MPI_Finalize();
    return rc;
}
