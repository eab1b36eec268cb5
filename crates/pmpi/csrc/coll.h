/* Collectives under the LogGP knobs (coll.c): while `cpmpi_coll_on` (a knob is set and
 * COMMPERF_EMULATE_COLL is not "off"), the shim's collective wrappers call these instead of the
 * library's collective. Each returns an MPI error code, or CPMPI_COLL_NATIVE when it did not
 * handle the call (the caller then runs the native collective, counted as untouched). */
#ifndef CPMPI_COLL_H
#define CPMPI_COLL_H
#include <mpi.h>
#include <stdint.h>

#define CPMPI_COLL_NATIVE (-4242)

extern int cpmpi_coll_on;
/* Reads COMMPERF_EMULATE_COLL (unset or "p2p": on; "off": native); -1: refused (printed). */
int cpmpi_coll_init(int rank);
void cpmpi_coll_finalize(void);
/* Set by a successful emulated collective, read and cleared by the shim's count. */
int cpmpi_coll_take_emulated(void);

int cpmpi_coll_barrier(MPI_Comm comm);
int cpmpi_coll_bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm);
int cpmpi_coll_reduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);
int cpmpi_coll_allreduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int cpmpi_coll_allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, MPI_Comm comm);
int cpmpi_coll_alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, MPI_Comm comm);
int cpmpi_coll_gather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, int root,
                      MPI_Comm comm);
int cpmpi_coll_scatter(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, int root,
                       MPI_Comm comm);
int cpmpi_coll_allgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int *rcs, const int *displs,
                          MPI_Datatype rt, MPI_Comm comm);
int cpmpi_coll_alltoallv(const void *s, const int *scs, const int *sd, MPI_Datatype st, void *r, const int *rcs,
                         const int *rd, MPI_Datatype rt, MPI_Comm comm);
int cpmpi_coll_alltoallw(const void *s, const int *scs, const int *sd, const MPI_Datatype *sts, void *r,
                         const int *rcs, const int *rd, const MPI_Datatype *rts, MPI_Comm comm);
int cpmpi_coll_gatherv(const void *s, int sc, MPI_Datatype st, void *r, const int *rcs, const int *displs,
                       MPI_Datatype rt, int root, MPI_Comm comm);
int cpmpi_coll_scatterv(const void *s, const int *scs, const int *displs, MPI_Datatype st, void *r, int rc,
                        MPI_Datatype rt, int root, MPI_Comm comm);
int cpmpi_coll_reduce_scatter(const void *s, void *r, const int *rcs, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int cpmpi_coll_reduce_scatter_block(const void *s, void *r, int rc, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int cpmpi_coll_scan(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);
int cpmpi_coll_exscan(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

/* Neighbourhood collectives (coll_neighbor.c): one message to each out-neighbour and from each
 * in-neighbour, on the private duplicate. */
int cpmpi_coll_neighbor_allgather(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                                  MPI_Comm comm);
int cpmpi_coll_neighbor_allgatherv(const void *s, int sc, MPI_Datatype st, void *r, const int rcs[],
                                   const int displs[], MPI_Datatype rt, MPI_Comm comm);
int cpmpi_coll_neighbor_alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt,
                                 MPI_Comm comm);
int cpmpi_coll_neighbor_alltoallv(const void *s, const int scs[], const int sd[], MPI_Datatype st, void *r,
                                  const int rcs[], const int rd[], MPI_Datatype rt, MPI_Comm comm);
int cpmpi_coll_neighbor_alltoallw(const void *s, const int scs[], const MPI_Aint sd[], const MPI_Datatype sts[],
                                  void *r, const int rcs[], const MPI_Aint rd[], const MPI_Datatype rts[],
                                  MPI_Comm comm);
/* This rank's neighbours in `comm`'s topology as ranks of `comm`, in the standard's order
 * (MPI_PROC_NULL where there is none), into malloc'd *in and *out, to be freed (families.c). */
void cpmpi_neighbor_lists(MPI_Comm comm, int *nin, int **in, int *nout, int **out);

/* A collective the library runs itself (nonblocking, persistent) is charged the knobs for this
 * rank's part of the algorithm coll.c would run it with (cpmpi_emu_coll_start): the messages it
 * sends and receives, the rounds in which it receives (each waits for a message: one ΔL each),
 * and its wire bytes (the larger of the bytes it sends and receives, self excluded). */
enum { CPMPI_ALG_BARRIER, CPMPI_ALG_BCAST, CPMPI_ALG_REDUCE, CPMPI_ALG_ALLREDUCE, CPMPI_ALG_ALLGATHER,
       CPMPI_ALG_ALLTOALL, CPMPI_ALG_GATHER, CPMPI_ALG_SCATTER, CPMPI_ALG_REDUCE_SCATTER, CPMPI_ALG_SCAN,
       CPMPI_ALG_EXSCAN,
       /* per-rank blocks: cpmpi_coll_part_v (alltoallv also for alltoallw) */
       CPMPI_ALG_ALLGATHERV, CPMPI_ALG_ALLTOALLV, CPMPI_ALG_GATHERV, CPMPI_ALG_SCATTERV,
       CPMPI_ALG_REDUCE_SCATTERV };
typedef struct {
    uint32_t sends, recvs, rounds;
    uint64_t wire_bytes;
} cpmpi_coll_part;
/* Rank `rank`'s part in algorithm `alg` over `n` ranks (root: bcast, reduce, gather, scatter);
 * `block`: the bytes of one message of the pattern (bcast/reduce/allreduce/scan/exscan: the buffer; the
 * others: one rank's block). */
void cpmpi_coll_part_of(int alg, int n, int rank, int root, uint64_t block, cpmpi_coll_part *p);
/* The same for the v and w forms and reduce-scatter, from the bytes of each rank's block
 * (`blk`, n entries, by real rank: allgatherv, gatherv and scatterv its block, reduce-scatter
 * its result block, alltoallv this rank's sends to each) and, for alltoallv, its receives from
 * each (`rblk`). A gatherv's or scatterv's rank other than the root knows its own block only:
 * its caller passes the others as 0. */
void cpmpi_coll_part_v(int alg, int n, int rank, int root, const uint64_t *blk, const uint64_t *rblk,
                       cpmpi_coll_part *p);

/* The shim's hook: EMU is the coll.c call, NATIVE the library's collective. */
#define CPMPI_COLL(EMU, NATIVE)                                                                   \
    ({                                                                                            \
        int cr_ = CPMPI_COLL_NATIVE;                                                              \
        if (__builtin_expect(cpmpi_coll_on, 0)) cr_ = (EMU);                                      \
        if (cr_ == CPMPI_COLL_NATIVE) cr_ = (NATIVE);                                             \
        cr_;                                                                                      \
    })
#endif
