/* All-to-all transpose (NAS FT-like): each rank holds P blocks of `elems` 64-bit words, one for
 * every rank, and every iteration sends block q to rank q: a distributed matrix transpose of
 * large blocks (64 KiB by default), with local work between (filling the blocks for the next
 * step and checking the ones received, FT's local FFTs in miniature).
 *
 * p2p=0: one MPI_Alltoall per iteration, as FT does. p2p=1: the same exchange as Irecv/Isend
 * pairs with every other rank, because point-to-point is what the emulation knobs act on
 * (an MPI_Alltoall runs inside the MPI library, below the interposed calls).
 *
 * Verification: element k of the block rank r sends to q at iteration t is a known function of
 * (r, q, t, k); every received element is checked, the errors counted, and the wrapping sum of
 * everything received compared with the sum of what should have arrived.
 *
 * Messages (p2p=1): per iteration one message of elems*8 bytes from every rank to every other.
 * Collectives: one MPI_Alltoall per iteration (p2p=0), and one MPI_Allreduce at the end. */
#include "nas_common.h"

static inline uint64_t value(long r, long q, long t, long k, long size, long iters, long elems) {
    return nas_mix((((uint64_t)r * size + q) * iters + t) * elems + k + 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct nas_arg a[] = {
        {"elems", 8192, 1, 1 << 24, "words (8 bytes) per block: message size elems*8"},
        {"iters", 1000, 1, 1000000, "iterations (one transpose each)"},
        {"p2p", 0, 0, 1, "1: Isend/Irecv pairs instead of MPI_Alltoall"},
        NAS_WARMUP_ARG,
        {"corrupt", 0, 0, 1, "testing: rank 1 flips one bit of the first message it receives (the run must say WRONG and exit 1)"},
    };
    nas_args(argc, argv, a, 5, rank);
    const long warmup = a[3].value;
    const long corrupt = a[4].value;
    const long elems = a[0].value, iters = a[1].value, p2p = a[2].value;
    uint64_t *s = malloc((size_t)(size * elems) * sizeof *s);
    uint64_t *r = malloc((size_t)(size * elems) * sizeof *r);
    MPI_Request *req = malloc((size_t)(2 * size) * sizeof *req);
    uint64_t got = 0, want = 0, errors = 0;

    nas_warmup(warmup, elems * 8);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long t = 0; t < iters; t++) {
        for (long q = 0; q < size; q++)
            for (long k = 0; k < elems; k++)
                s[q * elems + k] = value(rank, q, t, k, size, iters, elems);
        if (p2p) {
            int nreq = 0;
            for (int q = 0; q < size; q++) {
                if (q == rank) continue;
                MPI_Irecv(r + q * elems, (int)elems, MPI_UINT64_T, q, (int)(t & 0x7fff),
                          MPI_COMM_WORLD, &req[nreq++]);
            }
            for (int q = 0; q < size; q++) {
                if (q == rank) continue;
                MPI_Isend(s + q * elems, (int)elems, MPI_UINT64_T, q, (int)(t & 0x7fff),
                          MPI_COMM_WORLD, &req[nreq++]);
            }
            memcpy(r + rank * elems, s + rank * elems, (size_t)elems * sizeof *s);
            MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        } else {
            MPI_Alltoall(s, (int)elems, MPI_UINT64_T, r, (int)elems, MPI_UINT64_T,
                         MPI_COMM_WORLD);
        }
        if (corrupt && rank == 1 && t == 0) r[0] ^= 1;
        for (long q = 0; q < size; q++)
            for (long k = 0; k < elems; k++) {
                uint64_t x = r[q * elems + k], e = value(q, rank, t, k, size, iters, elems);
                got += x;
                want += e;
                errors += x != e;
            }
    }
    double secs = MPI_Wtime() - t0;

    uint64_t mine[3] = {got, want, errors}, all[3];
    MPI_Allreduce(mine, all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    char params[160];
    snprintf(params, sizeof params, "ranks %d %s elems %ld iters %ld message %ld B", size,
             p2p ? "isend-irecv" : "alltoall", elems, iters, elems * 8);
    int rc = nas_report(rank, "transpose", params, secs, all[0], all[1], (long)all[2]);
    MPI_Finalize();
    return rc;
}
