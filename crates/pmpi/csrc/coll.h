/* Collectives under the LogGP knobs (coll.c): while `cpmpi_coll_on` (a knob is set and
 * COMMPERF_EMULATE_COLL is not "off"), the shim's collective wrappers call these instead of the
 * library's collective. Each returns an MPI error code, or CPMPI_COLL_NATIVE when it did not
 * handle the call (the caller then runs the native collective, counted as untouched). */
#ifndef CPMPI_COLL_H
#define CPMPI_COLL_H
#include <mpi.h>

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

/* The shim's hook: EMU is the coll.c call, NATIVE the library's collective. */
#define CPMPI_COLL(EMU, NATIVE)                                                                   \
    ({                                                                                            \
        int cr_ = CPMPI_COLL_NATIVE;                                                              \
        if (__builtin_expect(cpmpi_coll_on, 0)) cr_ = (EMU);                                      \
        if (cr_ == CPMPI_COLL_NATIVE) cr_ = (NATIVE);                                             \
        cr_;                                                                                      \
    })
#endif
