/* Allreduce-heavy iteration (NAS CG-like): a vector of m 64-bit words per rank on a periodic
 * ring of ranks; every iteration exchanges a halo of hw words with both ring neighbours
 * (Isend/Irecv), applies a banded operator (y_i = x_{i-hw} + ... + x_{i+hw}, CG's sparse
 * matrix-vector product in miniature), and reduces `dots` small scalars with MPI_Allreduce of
 * 8 bytes each (CG's two dot products per iteration), then continues with x = y.
 *
 * Verification: the data are 64-bit integers (wrapping arithmetic), and on a periodic vector
 * the operator multiplies the global sum by exactly 2*hw+1. Every allreduce is checked against
 * that (the odd ones reduce sum(y), which must be (2*hw+1)*S; the even ones sum(x), which
 * must be S), and the final sum against (2*hw+1)^iters times the first. A halo that went
 * wrong breaks the invariant, a dot product that went wrong is counted as an error.
 *
 * Messages: per iteration one message of hw*8 bytes from each rank to its left and one to its
 * right neighbour (with 2 ranks, two to the same one). Collectives: 2 + iters*dots
 * MPI_Allreduce (initial and final sums, and the dots). */
#include "nas_common.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct nas_arg a[] = {
        {"m", 4096, 1, 1 << 26, "vector words per rank (compute per iteration)"},
        {"hw", 4, 1, 4096, "halo width in words: neighbour message size hw*8"},
        {"iters", 20000, 1, 10000000, "iterations"},
        {"dots", 2, 1, 64, "8-byte MPI_Allreduce per iteration"},
        NAS_WARMUP_ARG,
        {"corrupt", 0, 0, 1, "testing: rank 1 flips one bit of the first message it receives (the run must say WRONG and exit 1)"},
    };
    nas_args(argc, argv, a, 6, rank);
    const long warmup = a[4].value;
    const long corrupt = a[5].value;
    const long m = a[0].value, hw = a[1].value, iters = a[2].value, dots = a[3].value;
    if (hw > m) {
        if (rank == 0) fprintf(stderr, "%s: argument hw: %ld exceeds m = %ld\n", argv[0], hw, m);
        MPI_Finalize();
        return 2;
    }
    const int left = (rank - 1 + size) % size, right = (rank + 1) % size;
    uint64_t *x = calloc((size_t)(m + 2 * hw), sizeof *x), *y = calloc((size_t)(m + 2 * hw), sizeof *y);
    uint64_t local = 0, s = 0, errors = 0;
    for (long i = 0; i < m; i++) {
        x[hw + i] = nas_mix((uint64_t)rank * m + i + 1);
        local += x[hw + i];
    }
    MPI_Allreduce(&local, &s, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    const uint64_t s0 = s, band = (uint64_t)(2 * hw + 1);

    nas_warmup(warmup, hw * 8);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long it = 0; it < iters; it++) {
        MPI_Request req[4];
        /* Tag 0 travels left (lands in the right halo), tag 1 travels right. */
        MPI_Irecv(x + hw + m, (int)hw, MPI_UINT64_T, right, 0, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(x, (int)hw, MPI_UINT64_T, left, 1, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(x + hw, (int)hw, MPI_UINT64_T, left, 0, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(x + m, (int)hw, MPI_UINT64_T, right, 1, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        if (corrupt && rank == 1 && it == 0) x[0] ^= 1;
        uint64_t sy = 0, sx = 0, win = 0;
        for (long d = 0; d < 2 * hw + 1; d++) win += x[d];
        for (long i = 0; i < m; i++) {
            y[hw + i] = win;
            sy += win;
            sx += x[hw + i];
            win += x[i + 2 * hw + 1] - x[i];
        }
        for (long d = 0; d < dots; d++) {
            uint64_t mine = d % 2 == 0 ? sy : sx, all;
            MPI_Allreduce(&mine, &all, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
            errors += all != (d % 2 == 0 ? band * s : s);
        }
        s *= band;
        uint64_t *t = x;
        x = y;
        y = t;
    }
    double secs = MPI_Wtime() - t0;

    local = 0;
    for (long i = 0; i < m; i++) local += x[hw + i];
    uint64_t mine[2] = {local, errors}, all[2];
    MPI_Allreduce(mine, all, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    uint64_t expected = s0;
    for (long it = 0; it < iters; it++) expected *= band;
    char params[200];
    snprintf(params, sizeof params, "ranks %d m %ld hw %ld iters %ld dots %ld message %ld B",
             size, m, hw, iters, dots, hw * 8);
    int rc = nas_report(rank, "cg", params, secs, all[0], expected, (long)all[1]);
    MPI_Finalize();
    return rc;
}
