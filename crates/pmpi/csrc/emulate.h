/* The LogGP knobs' hooks (emulate.c), called by the wrappers of shim.c and families.c only
 * while `cpmpi_emu_on` (some knob > 0; it never changes after MPI_Init). World ranks, the shim's
 * communicator ids and times in emulate.c's ticks (cpmpi_emu_now). */
#ifndef CPMPI_EMULATE_H
#define CPMPI_EMULATE_H
#include <mpi.h>
#include <stdint.h>

extern int cpmpi_emu_on;
/* The interposer's own allocation failed (shim.c): says so on stderr once per process, naming
 * `what`; the caller leaves that item out (uncounted, unemulated, run natively) and the
 * program goes on: never an abort for the interposer's own failure. */
__attribute__((visibility("hidden"))) void cpmpi_oom(const char *what);
/* L's side band runs (L set, or the emulator engaged): receives need their entry time. */
extern int cpmpi_emu_l;
/* g is set: g's slot is taken from the end of each injection (cpmpi_emu_send_post), so a send
 * whose call also waits for its receiver (a blocking send in rendezvous, Ssend, Sendrecv) must
 * be run as its non-blocking form, the slot taken between the injection and the wait. */
extern int cpmpi_emu_g;
/* Reads COMMPERF_EMULATE (collective over MPI_COMM_WORLD when L is set); -1: refused, the
 * reason printed. */
int cpmpi_emu_init(int rank, int size, int use_tsc, uint64_t tsc_mult);
/* Sender: o, then g's pacing, then G's wire time, then the L stamp; just before PMPI. */
void cpmpi_emu_send_pre(int dst_world, uint32_t comm, int tag, uint64_t bytes);
/* Sender: right after the injection (PMPI returned): g's next slot. */
void cpmpi_emu_send_post(int dst_world);
/* Under g: a Sendrecv as Irecv, Isend, g's slot, Waitall (the shim's MPI_Sendrecv(_replace)
 * and coll.c's exchanges), so the wait for the partner is not counted as wire time. The send's
 * o, G and L stamp (cpmpi_emu_send_pre) and the receive's hooks are the caller's. */
int cpmpi_emu_paced_sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                             void *rbuf, int rcount, MPI_Datatype rtype, int src, int rtag,
                             MPI_Comm comm, MPI_Status *st, int dest_world);
/* Receiver: a receive completed (status known): L's hold, then o. */
void cpmpi_emu_recv(int src_world, uint32_t comm, int tag, uint64_t bytes, uint64_t t_enter);
/* Around the cpmpi_emu_recv calls for the messages one call completed together (Waitall,
 * Testall, Waitsome, Testsome): 1 before the first, 0 after the last. */
void cpmpi_emu_batch(int begin);
uint64_t cpmpi_emu_now(void);
/* A collective call completed (this rank's bytes); emulated or native, as coll.c says. */
void cpmpi_emu_coll(uint64_t bytes);
/* Set by coll.c while it sends and receives a collective's messages: the hooks above then count
 * them as the collective's, not as the program's own point-to-point traffic. */
extern __thread int cpmpi_emu_in_coll;
void cpmpi_emu_untracked(void);
/* A communication call no knob applies to (the collectives the charges below do not model,
 * nonblocking or persistent: alltoallv/w in place; the large-count collectives): counted, so
 * the report names what the knobs left. */
void cpmpi_emu_other(uint64_t bytes);

/* Requests whose completion (the Wait/Test family) the knobs act on, per thread, by handle:
 * - EMU_RQ_RECV: an Irecv (Imrecv, a persistent or partitioned receive): delivered under the
 *   knobs (cpmpi_emu_recv) with the status's source, tag and size;
 * - EMU_RQ_SENDRECV: an MPI_Isendrecv(_replace)'s receive half: the same, with the posted source
 *   (comm rank), tag and size standing where the status contradicts them (MPICH 4.0);
 * - EMU_RQ_DUE: a charged operation (a collective the library runs, a request-based one-sided
 *   transfer): its completion is not returned before `due` (cpmpi_emu_hold). */
enum { EMU_RQ_RECV = 1, EMU_RQ_SENDRECV, EMU_RQ_DUE };
typedef struct {
    uint64_t key, comm;
    uint64_t due;   /* EMU_RQ_DUE: ticks; EMU_RQ_SENDRECV: the posted size */
    int32_t src, tag; /* EMU_RQ_SENDRECV: as posted */
    int32_t kind;     /* EMU_RQ_*; EMU_RQ_DUE: what it charges (EMU_DUE_*) */
    int32_t what;
} cpmpi_emu_req;
enum { EMU_DUE_COLL = 1, EMU_DUE_RMA };
void cpmpi_emu_track(uint64_t key, uint64_t comm);
void cpmpi_emu_track_sendrecv(uint64_t key, uint64_t comm, int src, int tag, uint64_t bytes);
int cpmpi_emu_untrack(uint64_t key, cpmpi_emu_req *out);
/* A completion of a charged request (EMU_RQ_DUE): held until its due time. */
void cpmpi_emu_hold(const cpmpi_emu_req *r);

/* A collective the library runs itself was started (nonblocking, or a persistent one's
 * MPI_Start; request `key`), this rank's part of coll.c's algorithm in `p` (coll.h): o per
 * message it sends and receives, spun now; its completion due after Δg between its sends, ΔG
 * per wire byte and ΔL per round in which it receives. */
void cpmpi_emu_coll_start(uint64_t key, uint32_t sends, uint32_t recvs, uint32_t rounds, uint64_t wire_bytes,
                          int persistent);
/* MPI_Isendrecv(_replace) was started: counted (its halves go through the point-to-point hooks). */
void cpmpi_emu_isendrecv(void);

/* One-sided, at the origin, before the transfer is handed to PMPI: o and g's pacing, as a
 * send's (none for a transfer to the own process, a copy, as a message to oneself). */
void cpmpi_emu_rma_pre(int target_world);
/* After it: a transfer to window rank `target` of `win` moving `bytes` (origin data out plus
 * result data back; `target_world` its world rank), `round_trip` when data comes back (a get, a fetching atomic). It completes
 * at the origin's wire time (ΔG·bytes, serialised with its earlier transfers) + ΔL (2ΔL for a
 * round trip): the synchronisation that completes it is held until then. `req_key` (request-
 * based forms, else 0): the request's completion is due when the origin's part is done: the
 * data gone (a put, an accumulate: the wire time) or back (a round trip). */
void cpmpi_emu_rma(MPI_Win win, int target, int target_world, uint64_t bytes, int round_trip, uint64_t req_key);
/* A synchronisation that completes the origin's transfers to `target` (-1: to every rank) of
 * `win`: held until they are all due, then forgotten. */
void cpmpi_emu_rma_sync(MPI_Win win, int target);
/* MPI_Win_free: the window's charges are forgotten (its handle may be reused). */
void cpmpi_emu_rma_forget(MPI_Win win);
void cpmpi_emu_finalize(void);
#endif
