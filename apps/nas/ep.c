/* Embarrassingly parallel control (NAS EP-like): the ranks share n independent work items
 * (a contiguous slice each) and communicate once, at the end, to combine their results. The
 * control of the study: its time should not depend on the network at all, only on the CPU.
 *
 * Work item i: its index goes through `work` rounds of an invertible 64-bit mix (xorshift,
 * multiplication by an odd constant, addition of the round number) and then through the
 * inverse rounds, which must give i back; the rank sums the results and their squares
 * (wrapping). EP's Gaussian pairs in miniature: CPU-bound, no memory traffic, independent items.
 *
 * Verification: one MPI_Allreduce combines the sums; the global sum must be n(n-1)/2 and the
 * sum of squares (n-1)n(2n-1)/6 (mod 2^64), whatever the number of ranks: a wrong partition, a
 * wrong computation or a damaged reduction shows. `corrupt=1` flips one bit of rank 1's
 * contribution before the reduction.
 *
 * Messages: none point to point. Collectives: exactly one MPI_Allreduce (3 words), after one
 * MPI_Barrier before the timed part. */
#include "nas_common.h"

#define EP_MUL 0x9e3779b97f4a7c15ULL

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct nas_arg a[] = {
        {"n", 1 << 20, 1, 1L << 40, "work items in all (split among the ranks)"},
        {"work", 64, 1, 1 << 20, "mix rounds per item (and as many inverse rounds)"},
        {"corrupt", 0, 0, 1, "testing: rank 1 flips one bit of its contribution (the run must say WRONG and exit 1)"},
    };
    nas_args(argc, argv, a, 3, rank);
    const long n = a[0].value, work = a[1].value, corrupt = a[2].value;
    /* The inverse of the odd multiplier mod 2^64 (Newton: each step doubles the good bits). */
    uint64_t inv = EP_MUL;
    for (int k = 0; k < 6; k++) inv *= 2 - EP_MUL * inv;
    const long lo = (long)((__int128)n * rank / size), hi = (long)((__int128)n * (rank + 1) / size);

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    uint64_t sum = 0, sq = 0;
    for (long i = lo; i < hi; i++) {
        uint64_t x = (uint64_t)i;
        for (long k = 0; k < work; k++) {
            x ^= x >> 33;
            x *= EP_MUL;
            x += (uint64_t)k;
        }
        for (long k = work - 1; k >= 0; k--) {
            x -= (uint64_t)k;
            x *= inv;
            x ^= x >> 33;
        }
        sum += x;
        sq += x * x;
    }
    if (corrupt && rank == 1) sum ^= 1;
    uint64_t mine[3] = {sum, sq, 0}, all[3];
    MPI_Allreduce(mine, all, 3, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    double secs = MPI_Wtime() - t0;

    const unsigned __int128 N = (unsigned __int128)n;
    const uint64_t want_sum = (uint64_t)(N * (N - 1) / 2);
    const uint64_t want_sq = (uint64_t)((N - 1) * N * (2 * N - 1) / 6);
    /* The checksum line carries the sum; a wrong sum of squares counts as an error. */
    long errors = all[1] != want_sq;
    char params[160];
    snprintf(params, sizeof params, "ranks %d n %ld work %ld", size, n, work);
    int rc = nas_report(rank, "ep", params, secs, all[0], want_sum, errors);
    MPI_Finalize();
    return rc;
}
