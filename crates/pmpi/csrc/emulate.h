/* The LogGP knobs' hooks (emulate.c), called by the point-to-point wrappers of shim.c only
 * while `cpmpi_emu_on` (some knob > 0; it never changes after MPI_Init). World ranks, the shim's
 * communicator ids and times in emulate.c's ticks (cpmpi_emu_now). */
#ifndef CPMPI_EMULATE_H
#define CPMPI_EMULATE_H
#include <mpi.h>
#include <stdint.h>

extern int cpmpi_emu_on;
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
/* A communication call no knob applies to (nonblocking or persistent collective, one-sided
 * transfer, MPI_Isendrecv): counted, so the report names what the knobs left. */
void cpmpi_emu_other(uint64_t bytes);
/* Irecv requests, so a completion knows it finished a receive (and on which communicator). */
void cpmpi_emu_track(uint64_t key, uint64_t comm);
int cpmpi_emu_untrack(uint64_t key, uint64_t *comm);
void cpmpi_emu_finalize(void);
#endif
