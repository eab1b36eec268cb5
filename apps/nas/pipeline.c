/* Isend/Irecv/Waitall pipeline (NAS BT/SP-like): the ranks form a chain 0 - 1 - ... - P-1, as
 * the cells of BT's and SP's line solves do along one dimension. Every iteration is a forward
 * sweep (elimination: blocks flow from rank 0 to rank P-1) and a backward sweep (substitution:
 * blocks flow back from rank P-1 to rank 0). A sweep moves `blocks` blocks of `bs` 64-bit words;
 * each rank receives a block from upstream, transforms it, and forwards it downstream, so the
 * blocks stream through the chain as a software pipeline: at step s of a sweep a rank posts the
 * MPI_Irecv of block s and the MPI_Isend of block s-1 (transformed at the previous step) and
 * completes both with one MPI_Waitall, overlapping what it sends with what it receives.
 *
 * Verification: word k of block b of iteration t starts at rank 0 as v0 = mix(t, b, k). Forward,
 * rank r sends in + (r+1) (rank 0: v0 + 1), so rank r receives v0 + r(r+1)/2; rank P-1 starts
 * the backward sweep by sending 3F, F = v0 + P(P+1)/2, and every other rank sends 3 * in
 * backward, so rank r receives F * 3^(P-1-r). Every received word is checked against that, the errors counted,
 * and the wrapping sum of all received words compared with the sum of the expected ones.
 *
 * Messages: per iteration `blocks` messages of bs*8 bytes from every rank r < P-1 to r+1 (forward)
 * and `blocks` from every rank r > 0 to r-1 (backward): 2*(P-1)*blocks*iters in all. Calls per
 * rank and iteration: MPI_Isend and MPI_Irecv blocks times per neighbour (an end rank has one
 * neighbour, an inner rank two), MPI_Waitall 2*(blocks+1) times (one per pipeline step, also
 * with no request at the chain's ends). Collectives: one MPI_Allreduce at the end. With one
 * rank there is no message at all. */
#include "nas_common.h"

static inline uint64_t start_value(long t, long b, long k, long blocks, long bs) {
    return nas_mix(((uint64_t)t * blocks + b) * bs + k + 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct nas_arg a[] = {
        {"bs", 128, 1, 1 << 22, "words (8 bytes) per block: message size bs*8"},
        {"blocks", 16, 1, 1 << 20, "blocks per sweep (pipeline depth)"},
        {"iters", 200, 1, 10000000, "iterations (a forward and a backward sweep each)"},
        NAS_WARMUP_ARG,
        {"corrupt", 0, 0, 1, "testing: rank 1 flips one bit of the first block it receives (the run must say WRONG and exit 1)"},
    };
    nas_args(argc, argv, a, 5, rank);
    const long warmup = a[3].value;
    const long bs = a[0].value, blocks = a[1].value, iters = a[2].value, corrupt = a[4].value;
    const uint64_t P = (uint64_t)size, r = (uint64_t)rank;
    uint64_t *in[2], *out[2];
    for (int i = 0; i < 2; i++) {
        in[i] = malloc((size_t)bs * sizeof(uint64_t));
        out[i] = malloc((size_t)bs * sizeof(uint64_t));
    }
    /* Backward multiplier seen at this rank: 3^(P-1-r). */
    uint64_t back = 1;
    for (long q = 0; q + 1 + rank < size; q++) back *= 3;
    uint64_t sum = 0, want = 0, errors = 0;
    int flipped = 0;

    nas_warmup(warmup, bs * 8);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long it = 0; it < iters; it++) {
        for (int dir = 0; dir < 2; dir++) {
            /* Forward: upstream is rank-1; backward: rank+1. The tag is the direction: blocks
             * between one pair in one direction arrive in order (MPI's non-overtaking rule). */
            const int up = dir == 0 ? rank - 1 : rank + 1, down = dir == 0 ? rank + 1 : rank - 1;
            const int has_up = up >= 0 && up < size, has_down = down >= 0 && down < size;
            for (long s = 0; s <= blocks; s++) {
                MPI_Request req[2];
                int n = 0;
                if (has_up && s < blocks)
                    MPI_Irecv(in[s % 2], (int)bs, MPI_UINT64_T, up, dir, MPI_COMM_WORLD, &req[n++]);
                if (has_down && s > 0)
                    MPI_Isend(out[(s - 1) % 2], (int)bs, MPI_UINT64_T, down, dir, MPI_COMM_WORLD,
                              &req[n++]);
                MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
                if (s == blocks) break;
                uint64_t *x = in[s % 2], *y = out[s % 2];
                if (has_up) {
                    if (corrupt && rank == 1 && !flipped) {
                        x[0] ^= 1;
                        flipped = 1;
                    }
                    for (long k = 0; k < bs; k++) {
                        uint64_t v0 = start_value(it, s, k, blocks, bs);
                        uint64_t e = dir == 0 ? v0 + r * (r + 1) / 2
                                              : (v0 + P * (P + 1) / 2) * back;
                        errors += x[k] != e;
                        sum += x[k];
                        want += e;
                    }
                }
                if (dir == 0) {
                    for (long k = 0; k < bs; k++)
                        y[k] = (has_up ? x[k] : start_value(it, s, k, blocks, bs)) + r + 1;
                } else {
                    /* The last rank starts the backward sweep from its forward result. */
                    for (long k = 0; k < bs; k++)
                        y[k] = 3 * (has_up ? x[k] : start_value(it, s, k, blocks, bs) + P * (P + 1) / 2);
                }
            }
        }
    }
    double secs = MPI_Wtime() - t0;

    uint64_t mine[3] = {sum, want, errors}, all[3];
    MPI_Allreduce(mine, all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    char params[200];
    snprintf(params, sizeof params,
             "ranks %d chain bs %ld blocks %ld iters %ld message %ld B", size, bs, blocks, iters,
             bs * 8);
    int rc = nas_report(rank, "pipeline", params, secs, all[0], all[1], (long)all[2]);
    for (int i = 0; i < 2; i++) {
        free(in[i]);
        free(out[i]);
    }
    MPI_Finalize();
    return rc;
}
