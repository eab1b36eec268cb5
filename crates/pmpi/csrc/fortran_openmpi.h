/* Open MPI's Fortran bindings (mpif.h, `use mpi`) call PMPI_* directly, so a C-only interposer
 * would see nothing of a Fortran program. These wrap the Fortran symbols (gfortran's mpi_x_) and
 * call Open MPI's pmpi_x_, which then calls PMPI_X: every call is seen exactly once. Handles are
 * converted with the *_f2c functions only to describe the call; the call itself is passed on
 * untouched, so Fortran-only sentinels (MPI_BOTTOM, MPI_STATUS_IGNORE) keep their meaning.
 * Included only in the Open MPI build: MPICH's Fortran calls the C MPI_* symbols. */

typedef MPI_Fint F;
#define FSTAT ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))

extern void pmpi_init_(F *);
extern void pmpi_init_thread_(F *, F *, F *);
extern void pmpi_finalize_(F *);
extern void pmpi_send_(const void *, F *, F *, F *, F *, F *, F *);
extern void pmpi_ssend_(const void *, F *, F *, F *, F *, F *, F *);
extern void pmpi_bsend_(const void *, F *, F *, F *, F *, F *, F *);
extern void pmpi_rsend_(const void *, F *, F *, F *, F *, F *, F *);
extern void pmpi_isend_(const void *, F *, F *, F *, F *, F *, F *, F *);
extern void pmpi_issend_(const void *, F *, F *, F *, F *, F *, F *, F *);
extern void pmpi_ibsend_(const void *, F *, F *, F *, F *, F *, F *, F *);
extern void pmpi_irsend_(const void *, F *, F *, F *, F *, F *, F *, F *);
extern void pmpi_irecv_(void *, F *, F *, F *, F *, F *, F *, F *);
extern void pmpi_recv_(void *, F *, F *, F *, F *, F *, F *, F *);
extern void pmpi_wait_(F *, F *, F *);
extern void pmpi_test_(F *, F *, F *, F *);
extern void pmpi_waitall_(F *, F *, F *, F *);
extern void pmpi_testall_(F *, F *, F *, F *, F *);
extern void pmpi_waitany_(F *, F *, F *, F *, F *);
extern void pmpi_waitsome_(F *, F *, F *, F *, F *, F *);
extern void pmpi_testany_(F *, F *, F *, F *, F *, F *);
extern void pmpi_send_init_(const void *, F *, F *, F *, F *, F *, F *, F *);
extern void pmpi_ssend_init_(const void *, F *, F *, F *, F *, F *, F *, F *);
extern void pmpi_bsend_init_(const void *, F *, F *, F *, F *, F *, F *, F *);
extern void pmpi_rsend_init_(const void *, F *, F *, F *, F *, F *, F *, F *);
extern void pmpi_recv_init_(void *, F *, F *, F *, F *, F *, F *, F *);
extern void pmpi_start_(F *, F *);
extern void pmpi_startall_(F *, F *, F *);
extern void pmpi_request_free_(F *, F *);
extern void pmpi_testsome_(F *, F *, F *, F *, F *, F *);
extern void pmpi_sendrecv_(const void *, F *, F *, F *, F *, void *, F *, F *, F *, F *, F *, F *, F *);
extern void pmpi_probe_(F *, F *, F *, F *, F *);
extern void pmpi_cancel_(F *, F *);
extern void pmpi_iprobe_(F *, F *, F *, F *, F *, F *);
extern void pmpi_barrier_(F *, F *);
extern void pmpi_bcast_(void *, F *, F *, F *, F *, F *);
extern void pmpi_reduce_(const void *, void *, F *, F *, F *, F *, F *, F *);
extern void pmpi_allreduce_(const void *, void *, F *, F *, F *, F *, F *);
extern void pmpi_gather_(const void *, F *, F *, void *, F *, F *, F *, F *, F *);
extern void pmpi_scatter_(const void *, F *, F *, void *, F *, F *, F *, F *, F *);
extern void pmpi_allgather_(const void *, F *, F *, void *, F *, F *, F *, F *);
extern void pmpi_type_free_(F *, F *);
extern void pmpi_alltoall_(const void *, F *, F *, void *, F *, F *, F *, F *);

static int f_status_ignored(F *s) { return s == MPI_F_STATUS_IGNORE; }
static int f_statuses_ignored(F *s) { return s == MPI_F_STATUSES_IGNORE; }

/* The LogGP knobs (emulate.c) for Fortran callers: the C wrappers' hooks, on converted handles
 * and statuses. */
static void f_emu_received(F *comm, F *fst, uint64_t te) {
    MPI_Status cs;
    PMPI_Status_f2c(fst, &cs);
    emu_received(PMPI_Comm_f2c(*comm), &cs, te);
}
static void f_emu_done(uint64_t key, F *fst, uint64_t te) {
    MPI_Status cs;
    PMPI_Status_f2c(fst, &cs);
    emu_done(key, &cs, te);
}
#define F_EMU_SEND_PRE(DEST, COMM, TAG, DT, COUNT)                                               \
    EMU_SEND_PRE((int)*(DEST), PMPI_Comm_f2c(*(COMM)), (int)*(TAG),                              \
                 type_bytes(PMPI_Type_f2c(*(DT)), (int)*(COUNT)))

void mpi_init_(F *ierr) { clock_cal_start(); pmpi_init_(ierr); if (*ierr == MPI_SUCCESS) after_init(FN_Init); }
void mpi_init_thread_(F *req, F *prov, F *ierr) {
    clock_cal_start();
    pmpi_init_thread_(req, prov, ierr);
    if (*ierr == MPI_SUCCESS) after_init(FN_Init_thread);
}
void mpi_finalize_(F *ierr) { before_finalize(); pmpi_finalize_(ierr); }
void mpi_pcontrol_(F *level) { pcontrol((int)*level); }
/* Invalidates the datatype size cache (type_bytes) like the C MPI_Type_free does. */
void mpi_type_free_(F *t, F *ierr) {
    __atomic_add_fetch(&type_gen, 1, __ATOMIC_RELEASE);
    pmpi_type_free_(t, ierr);
}

/* Under g, as the C wrappers: the non-blocking form and a wait, g's slot between the two. */
#define FSEND(NAME, CNAME, KIND)                                                                        \
    void mpi_##NAME##_(const void *buf, F *count, F *dt, F *dest, F *tag, F *comm, F *ierr) {    \
        if (!ENTER(FN_##CNAME)) { pmpi_##NAME##_(buf, count, dt, dest, tag, comm, ierr); return; }         \
        uint64_t t0 = cur_t0;                                                                     \
        F_EMU_SEND_PRE(dest, comm, tag, dt, count);                                              \
        if (EMU_PACED()) {                                                                       \
            F rq_, fst_[16];                                                                     \
            pmpi_i##NAME##_(buf, count, dt, dest, tag, comm, &rq_, ierr);                        \
            EMU_SEND_POST();                                                                     \
            if (*ierr == MPI_SUCCESS) pmpi_wait_(&rq_, fst_, ierr);                              \
        } else {                                                                                 \
            pmpi_##NAME##_(buf, count, dt, dest, tag, comm, ierr);                               \
            EMU_SEND_POST();                                                                     \
        }                                                                                        \
        uint64_t t1 = (cur_t1 = now());                                                                     \
        if (*ierr == MPI_SUCCESS)                                                                \
            rec_send(KIND, F_FORTRAN, (int)*dest, (int)*tag, PMPI_Comm_f2c(*comm),               \
                     type_bytes(PMPI_Type_f2c(*dt), (int)*count), t0, t1);                       \
        LEAVE();                                                                                 \
    }
FSEND(send, Send, K_SEND)
FSEND(ssend, Ssend, K_SSEND)
FSEND(bsend, Bsend, K_BSEND)
FSEND(rsend, Rsend, K_RSEND)

void mpi_recv_(void *buf, F *count, F *dt, F *src, F *tag, F *comm, F *status, F *ierr) {
    if (!ENTER(FN_Recv)) { pmpi_recv_(buf, count, dt, src, tag, comm, status, ierr); return; }
    F own[16];
    F *st = f_status_ignored(status) ? own : status;
    uint64_t t0 = cur_t0, te = EMU_ENTER();
    pmpi_recv_(buf, count, dt, src, tag, comm, st, ierr);
    if (*ierr == MPI_SUCCESS && EMU_ON()) f_emu_received(comm, st, te);
    uint64_t t1 = (cur_t1 = now());
    if (*ierr == MPI_SUCCESS) {
        MPI_Status cs;
        PMPI_Status_f2c(st, &cs);
        rec_recv(K_RECV, F_FORTRAN | (*src == MPI_ANY_SOURCE ? F_ANY_SOURCE : 0), PMPI_Comm_f2c(*comm), &cs, t0, t1);
    }
    LEAVE();
}

#define FISEND(NAME, CNAME, KIND)                                                                       \
    void mpi_##NAME##_(const void *buf, F *count, F *dt, F *dest, F *tag, F *comm, F *req, F *ierr) { \
        if (!ENTER(FN_##CNAME)) { pmpi_##NAME##_(buf, count, dt, dest, tag, comm, req, ierr); return; }    \
        uint64_t t0 = cur_t0;                                                                     \
        F_EMU_SEND_PRE(dest, comm, tag, dt, count);                                              \
        pmpi_##NAME##_(buf, count, dt, dest, tag, comm, req, ierr);                              \
        EMU_SEND_POST();                                                                         \
        uint64_t t1 = (cur_t1 = now());                                                                     \
        if (*ierr == MPI_SUCCESS)                                                                \
            post(KIND, F_FORTRAN, (int)*dest, (int)*tag, PMPI_Comm_f2c(*comm),                   \
                 type_bytes(PMPI_Type_f2c(*dt), (int)*count), t0, t1, PMPI_Request_f2c(*req));   \
        LEAVE();                                                                                 \
    }
FISEND(isend, Isend, K_ISEND)
FISEND(issend, Issend, K_ISSEND)
FISEND(ibsend, Ibsend, K_IBSEND)
FISEND(irsend, Irsend, K_IRSEND)

void mpi_irecv_(void *buf, F *count, F *dt, F *src, F *tag, F *comm, F *req, F *ierr) {
    if (!ENTER(FN_Irecv)) { pmpi_irecv_(buf, count, dt, src, tag, comm, req, ierr); return; }
    uint64_t t0 = cur_t0;
    pmpi_irecv_(buf, count, dt, src, tag, comm, req, ierr);
    if (*ierr == MPI_SUCCESS && EMU_ON() && *src != MPI_PROC_NULL)
        cpmpi_emu_track(HKEY(PMPI_Request_f2c(*req)), HKEY(PMPI_Comm_f2c(*comm)));
    uint64_t t1 = (cur_t1 = now());
    if (*ierr == MPI_SUCCESS)
        post(K_IRECV, F_FORTRAN | (*src == MPI_ANY_SOURCE ? F_ANY_SOURCE : 0), (int)*src, (int)*tag,
             PMPI_Comm_f2c(*comm), type_bytes(PMPI_Type_f2c(*dt), (int)*count), t0, t1,
             PMPI_Request_f2c(*req));
    LEAVE();
}

/* Fortran completion: keys are the C handles (as the posts recorded them), taken before the call
 * frees them; statuses are converted from whatever array the call filled. */
static void f_complete(uint64_t key, F *fst, uint64_t t0, uint64_t t1) {
    MPI_Status cs;
    PMPI_Status_f2c(fst, &cs);
    complete(key, &cs, t0, t1);
}

void mpi_wait_(F *req, F *status, F *ierr) {
    if (!ENTER(FN_Wait)) { pmpi_wait_(req, status, ierr); return; }
    F own[16];
    F *st = f_status_ignored(status) ? own : status;
    uint64_t key = HKEY(PMPI_Request_f2c(*req));
    uint64_t t0 = cur_t0, te = EMU_ENTER();
    pmpi_wait_(req, st, ierr);
    if (*ierr == MPI_SUCCESS && EMU_ON()) f_emu_done(key, st, te);
    uint64_t t1 = (cur_t1 = now());
    if (*ierr == MPI_SUCCESS) f_complete(key, st, t0, t1);
    LEAVE();
}

void mpi_test_(F *req, F *flag, F *status, F *ierr) {
    if (!ENTER_POLL(FN_Test)) { pmpi_test_(req, flag, status, ierr); return; }
    F own[16];
    F *st = f_status_ignored(status) ? own : status;
    uint64_t key = HKEY(PMPI_Request_f2c(*req));
    uint64_t te = EMU_ENTER();
    pmpi_test_(req, flag, st, ierr);
    /* A poll reads the clock only when it completed something (see MPI_Test in shim.c). */
    if (*ierr == MPI_SUCCESS && *flag) {
        if (EMU_ON()) f_emu_done(key, st, te);
        uint64_t t1 = (cur_t1 = now());
        f_complete(key, st, t1, t1);
    }
    LEAVE();
}

static uint64_t *f_keys(int n, F *reqs, uint64_t *small) {
    uint64_t *k = n <= SMALL ? small : malloc(sizeof(uint64_t) * (size_t)n);
    if (!k) return NULL;
    for (int i = 0; i < n; i++) k[i] = HKEY(PMPI_Request_f2c(reqs[i]));
    return k;
}

/* Whether f_keys and the statuses (`sts`, when the caller ignores them) got their memory;
 * if not, frees what did, says so once (cpmpi_oom) and the caller runs the call unrecorded. */
static int f_many_ok(uint64_t *keys, const uint64_t *kbuf, F *sts, F *statuses, const char *what) {
    if (keys && sts) return 1;
    if (keys && keys != kbuf) free(keys);
    if (sts && sts != statuses) free(sts);
    cpmpi_oom(what);
    return 0;
}

void mpi_waitall_(F *count, F *reqs, F *statuses, F *ierr) {
    if (!ENTER(FN_Waitall)) { pmpi_waitall_(count, reqs, statuses, ierr); return; }
    int n = (int)*count;
    uint64_t kbuf[SMALL], *keys = f_keys(n, reqs, kbuf);
    F *sts = f_statuses_ignored(statuses) ? malloc(sizeof(F) * (size_t)(FSTAT * (n > 0 ? n : 1))) : statuses;
    if (!f_many_ok(keys, kbuf, sts, statuses, "the requests of an MPI_Waitall")) { pmpi_waitall_(count, reqs, statuses, ierr); LEAVE(); return; }
    uint64_t t0 = cur_t0, te = EMU_ENTER();
    pmpi_waitall_(count, reqs, sts, ierr);
    if (*ierr == MPI_SUCCESS && EMU_ON()) {
        cpmpi_emu_batch(1);
        for (int i = 0; i < n; i++) f_emu_done(keys[i], sts + FSTAT * i, te);
        cpmpi_emu_batch(0);
    }
    uint64_t t1 = (cur_t1 = now());
    if (*ierr == MPI_SUCCESS)
        for (int i = 0; i < n; i++) f_complete(keys[i], sts + FSTAT * i, t0, t1);
    if (keys != kbuf) free(keys);
    if (sts != statuses) free(sts);
    LEAVE();
}

void mpi_testall_(F *count, F *reqs, F *flag, F *statuses, F *ierr) {
    if (!ENTER_POLL(FN_Testall)) { pmpi_testall_(count, reqs, flag, statuses, ierr); return; }
    int n = (int)*count;
    uint64_t kbuf[SMALL], *keys = f_keys(n, reqs, kbuf);
    F *sts = f_statuses_ignored(statuses) ? malloc(sizeof(F) * (size_t)(FSTAT * (n > 0 ? n : 1))) : statuses;
    if (!f_many_ok(keys, kbuf, sts, statuses, "the requests of an MPI_Testall")) { pmpi_testall_(count, reqs, flag, statuses, ierr); LEAVE(); return; }
    uint64_t te = EMU_ENTER();
    pmpi_testall_(count, reqs, flag, sts, ierr);
    if (*ierr == MPI_SUCCESS && *flag) {
        if (EMU_ON()) {
            cpmpi_emu_batch(1);
            for (int i = 0; i < n; i++) f_emu_done(keys[i], sts + FSTAT * i, te);
            cpmpi_emu_batch(0);
        }
        uint64_t t1 = (cur_t1 = now());
        for (int i = 0; i < n; i++) f_complete(keys[i], sts + FSTAT * i, t1, t1);
    }
    if (keys != kbuf) free(keys);
    if (sts != statuses) free(sts);
    LEAVE();
}

void mpi_waitany_(F *count, F *reqs, F *index, F *status, F *ierr) {
    if (!ENTER(FN_Waitany)) { pmpi_waitany_(count, reqs, index, status, ierr); return; }
    int n = (int)*count;
    uint64_t kbuf[SMALL], *keys = f_keys(n, reqs, kbuf);
    if (!f_many_ok(keys, kbuf, status, status, "the requests of an MPI_Waitany")) { pmpi_waitany_(count, reqs, index, status, ierr); LEAVE(); return; }
    F own[16];
    F *st = f_status_ignored(status) ? own : status;
    uint64_t t0 = cur_t0, te = EMU_ENTER();
    pmpi_waitany_(count, reqs, index, st, ierr);
    if (*ierr == MPI_SUCCESS && EMU_ON() && *index != MPI_UNDEFINED && *index >= 1 && *index <= n)
        f_emu_done(keys[*index - 1], st, te);
    uint64_t t1 = (cur_t1 = now());
    /* Fortran indices are 1-based. */
    if (*ierr == MPI_SUCCESS && *index != MPI_UNDEFINED && *index >= 1 && *index <= n)
        f_complete(keys[*index - 1], st, t0, t1);
    if (keys != kbuf) free(keys);
    LEAVE();
}

void mpi_waitsome_(F *count, F *reqs, F *outcount, F *indices, F *statuses, F *ierr) {
    if (!ENTER(FN_Waitsome)) { pmpi_waitsome_(count, reqs, outcount, indices, statuses, ierr); return; }
    int n = (int)*count;
    uint64_t kbuf[SMALL], *keys = f_keys(n, reqs, kbuf);
    F *sts = f_statuses_ignored(statuses) ? malloc(sizeof(F) * (size_t)(FSTAT * (n > 0 ? n : 1))) : statuses;
    if (!f_many_ok(keys, kbuf, sts, statuses, "the requests of an MPI_Waitsome")) { pmpi_waitsome_(count, reqs, outcount, indices, statuses, ierr); LEAVE(); return; }
    uint64_t t0 = cur_t0, te = EMU_ENTER();
    pmpi_waitsome_(count, reqs, outcount, indices, sts, ierr);
    if (*ierr == MPI_SUCCESS && EMU_ON() && *outcount != MPI_UNDEFINED) {
        cpmpi_emu_batch(1);
        for (int i = 0; i < (int)*outcount; i++) f_emu_done(keys[indices[i] - 1], sts + FSTAT * i, te);
        cpmpi_emu_batch(0);
    }
    uint64_t t1 = (cur_t1 = now());
    if (*ierr == MPI_SUCCESS && *outcount != MPI_UNDEFINED)
        for (int i = 0; i < (int)*outcount; i++) f_complete(keys[indices[i] - 1], sts + FSTAT * i, t0, t1);
    if (keys != kbuf) free(keys);
    if (sts != statuses) free(sts);
    LEAVE();
}

/* The polls: stamped once, at the exit of the call that completed something (see MPI_Test). */
void mpi_testany_(F *count, F *reqs, F *index, F *flag, F *status, F *ierr) {
    if (!ENTER_POLL(FN_Testany)) { pmpi_testany_(count, reqs, index, flag, status, ierr); return; }
    int n = (int)*count;
    uint64_t kbuf[SMALL], *keys = f_keys(n, reqs, kbuf);
    if (!f_many_ok(keys, kbuf, status, status, "the requests of an MPI_Testany")) { pmpi_testany_(count, reqs, index, flag, status, ierr); LEAVE(); return; }
    F own[16];
    F *st = f_status_ignored(status) ? own : status;
    uint64_t te = EMU_ENTER();
    pmpi_testany_(count, reqs, index, flag, st, ierr);
    /* Fortran indices are 1-based. */
    if (*ierr == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED && *index >= 1 && *index <= n) {
        if (EMU_ON()) f_emu_done(keys[*index - 1], st, te);
        uint64_t t1 = (cur_t1 = now());
        f_complete(keys[*index - 1], st, t1, t1);
    }
    if (keys != kbuf) free(keys);
    LEAVE();
}

void mpi_testsome_(F *count, F *reqs, F *outcount, F *indices, F *statuses, F *ierr) {
    if (!ENTER_POLL(FN_Testsome)) { pmpi_testsome_(count, reqs, outcount, indices, statuses, ierr); return; }
    int n = (int)*count;
    uint64_t kbuf[SMALL], *keys = f_keys(n, reqs, kbuf);
    F *sts = f_statuses_ignored(statuses) ? malloc(sizeof(F) * (size_t)(FSTAT * (n > 0 ? n : 1))) : statuses;
    if (!f_many_ok(keys, kbuf, sts, statuses, "the requests of an MPI_Testsome")) { pmpi_testsome_(count, reqs, outcount, indices, statuses, ierr); LEAVE(); return; }
    uint64_t te = EMU_ENTER();
    pmpi_testsome_(count, reqs, outcount, indices, sts, ierr);
    if (*ierr == MPI_SUCCESS && *outcount != MPI_UNDEFINED && *outcount > 0) {
        if (EMU_ON()) {
            cpmpi_emu_batch(1);
            for (int i = 0; i < (int)*outcount; i++) f_emu_done(keys[indices[i] - 1], sts + FSTAT * i, te);
            cpmpi_emu_batch(0);
        }
        uint64_t t1 = (cur_t1 = now());
        for (int i = 0; i < (int)*outcount; i++) f_complete(keys[indices[i] - 1], sts + FSTAT * i, t1, t1);
    }
    if (keys != kbuf) free(keys);
    if (sts != statuses) free(sts);
    LEAVE();
}

/* Persistent requests: the C side's table and hooks (shim.c, "persistent requests"). */
#define FPINIT_SEND(NAME, FLAGS)                                                                        \
    void mpi_##NAME##_(const void *buf, F *count, F *dt, F *dest, F *tag, F *comm, F *req, F *ierr) { \
        pmpi_##NAME##_(buf, count, dt, dest, tag, comm, req, ierr);                              \
        if (*ierr == MPI_SUCCESS && TRACKING())                                                  \
            pinit_register(1, F_FORTRAN | (FLAGS), (int)*dest, (int)*tag, PMPI_Comm_f2c(*comm),    \
                           type_bytes(PMPI_Type_f2c(*dt), (int)*count), PMPI_Request_f2c(*req)); \
    }
FPINIT_SEND(send_init, 0)
FPINIT_SEND(ssend_init, F_SYNC)
FPINIT_SEND(bsend_init, 0)
FPINIT_SEND(rsend_init, 0)

void mpi_recv_init_(void *buf, F *count, F *dt, F *src, F *tag, F *comm, F *req, F *ierr) {
    pmpi_recv_init_(buf, count, dt, src, tag, comm, req, ierr);
    if (*ierr == MPI_SUCCESS && TRACKING())
        pinit_register(0, F_FORTRAN | (*src == MPI_ANY_SOURCE ? F_ANY_SOURCE : 0), (int)*src,
                       (int)*tag, PMPI_Comm_f2c(*comm), type_bytes(PMPI_Type_f2c(*dt), (int)*count),
                       PMPI_Request_f2c(*req));
}

static void f_start_one(F *req, F *ierr) {
    pinit p;
    MPI_Request c = PMPI_Request_f2c(*req);
    if (!pinit_lookup(HKEY(c), &p)) {
        pmpi_start_(req, ierr);
        return;
    }
    uint64_t t0 = cur_t0;
    start_pre(&p);
    pmpi_start_(req, ierr);
    uint64_t t1 = (cur_t1 = now());
    if (*ierr == MPI_SUCCESS) start_post(&p, c, t0, t1, 0);
}

void mpi_request_free_(F *req, F *ierr) {
    MPI_Request c = PMPI_Request_f2c(*req);
    cev e;
    cpmpi_emu_req ck;
    if (active) cpmpi_rt_take(my_table, HKEY(c), &e);
    if (EMU_ON()) cpmpi_emu_untrack(HKEY(c), &ck);
    if (TRACKING()) pinit_forget(HKEY(c));
    pmpi_request_free_(req, ierr);
}

void mpi_start_(F *req, F *ierr) {
    if (!ENTER(FN_Start)) { pmpi_start_(req, ierr); return; }
    f_start_one(req, ierr);
    LEAVE();
}

void mpi_startall_(F *count, F *reqs, F *ierr) {
    if (!ENTER(FN_Startall)) { pmpi_startall_(count, reqs, ierr); return; }
    *ierr = MPI_SUCCESS;
    for (int i = 0; i < (int)*count && *ierr == MPI_SUCCESS; i++) f_start_one(&reqs[i], ierr);
    LEAVE();
}

void mpi_sendrecv_(const void *sb, F *sc, F *st_, F *dest, F *stag, void *rb, F *rc_, F *rt, F *src,
                   F *rtag, F *comm, F *status, F *ierr) {
    if (!ENTER(FN_Sendrecv)) { pmpi_sendrecv_(sb, sc, st_, dest, stag, rb, rc_, rt, src, rtag, comm, status, ierr); return; }
    F own[16];
    F *st = f_status_ignored(status) ? own : status;
    uint64_t t0 = cur_t0, te = EMU_ENTER();
    F_EMU_SEND_PRE(dest, comm, stag, st_, sc);
    if (EMU_PACED()) {
        /* As cpmpi_emu_paced_sendrecv (emulate.c), in Fortran handles: g's slot after the send's injection, not the receive. */
        F rq[2], sts[2 * 16];
        pmpi_irecv_(rb, rc_, rt, src, rtag, comm, &rq[0], ierr);
        if (*ierr == MPI_SUCCESS) {
            pmpi_isend_(sb, sc, st_, dest, stag, comm, &rq[1], ierr);
            EMU_SEND_POST();
            if (*ierr == MPI_SUCCESS) {
                F two = 2;
                pmpi_waitall_(&two, rq, sts, ierr);
                memcpy(st, sts, sizeof(F) * (size_t)FSTAT);
            } else {
                F e2;
                pmpi_cancel_(&rq[0], &e2);
                pmpi_wait_(&rq[0], sts, &e2);
            }
        }
    } else {
        pmpi_sendrecv_(sb, sc, st_, dest, stag, rb, rc_, rt, src, rtag, comm, st, ierr);
        EMU_SEND_POST();
    }
    if (*ierr == MPI_SUCCESS && EMU_ON()) f_emu_received(comm, st, te);
    uint64_t t1 = (cur_t1 = now());
    if (*ierr == MPI_SUCCESS) {
        MPI_Comm c = PMPI_Comm_f2c(*comm);
        MPI_Status cs;
        PMPI_Status_f2c(st, &cs);
        rec_send(K_SENDRECV_SEND, F_FORTRAN, (int)*dest, (int)*stag, c, type_bytes(PMPI_Type_f2c(*st_), (int)*sc), t0, t1);
        rec_recv(K_SENDRECV_RECV, F_FORTRAN | (*src == MPI_ANY_SOURCE ? F_ANY_SOURCE : 0), c, &cs, t0, t1);
    }
    LEAVE();
}

void mpi_probe_(F *src, F *tag, F *comm, F *status, F *ierr) {
    if (!ENTER(FN_Probe)) { pmpi_probe_(src, tag, comm, status, ierr); return; }
    F own[16];
    F *st = f_status_ignored(status) ? own : status;
    uint64_t t0 = cur_t0;
    pmpi_probe_(src, tag, comm, st, ierr);
    uint64_t t1 = (cur_t1 = now());
    if (*ierr == MPI_SUCCESS) {
        MPI_Status cs;
        PMPI_Status_f2c(st, &cs);
        rec_recv(K_PROBE, F_FORTRAN, PMPI_Comm_f2c(*comm), &cs, t0, t1);
    }
    LEAVE();
}

void mpi_iprobe_(F *src, F *tag, F *comm, F *flag, F *status, F *ierr) {
    if (!ENTER_POLL(FN_Iprobe)) { pmpi_iprobe_(src, tag, comm, flag, status, ierr); return; }
    F own[16];
    F *st = f_status_ignored(status) ? own : status;
    pmpi_iprobe_(src, tag, comm, flag, st, ierr);
    if (*ierr == MPI_SUCCESS && *flag) {
        uint64_t t1 = (cur_t1 = now());
        MPI_Status cs;
        PMPI_Status_f2c(st, &cs);
        rec_recv(K_IPROBE, F_FORTRAN, PMPI_Comm_f2c(*comm), &cs, t1, t1);
    }
    LEAVE();
}

/* Open MPI's Fortran sentinels (in libmpi): coll.c gets the C ones. MPI_BOTTOM is C's 0 too. */
extern char mpi_fortran_in_place_ __attribute__((weak));
extern char mpi_fortran_bottom_ __attribute__((weak));
static inline void *f_buf(const void *b) {
    if (&mpi_fortran_in_place_ && b == (const void *)&mpi_fortran_in_place_) return MPI_IN_PLACE;
    if (&mpi_fortran_bottom_ && b == (const void *)&mpi_fortran_bottom_) return MPI_BOTTOM;
    return (void *)b;
}
#define FT(X) PMPI_Type_f2c(*(X))
#define FC(X) PMPI_Comm_f2c(*(X))

/* EMU: coll.c's collective on the converted arguments (CPMPI_COLL_NATIVE: not handled, CALL). */
#define FCOLL(FN, KIND, ROOT, COMM, BYTES, SENT, RECEIVED, EMU, CALL)                           \
    if (!ENTER(FN)) { CALL; return; }                                                            \
    uint64_t t0 = cur_t0;                                                                        \
    int cr_ = __builtin_expect(cpmpi_coll_on, 0) ? (EMU) : CPMPI_COLL_NATIVE;                    \
    if (cr_ == CPMPI_COLL_NATIVE) { CALL; } else *ierr = cr_;                                    \
    uint64_t t1 = (cur_t1 = now());                                                              \
    if (*ierr == MPI_SUCCESS) {                                                                  \
        rec_coll(KIND, ROOT, PMPI_Comm_f2c(*COMM), BYTES, t0, t1);                               \
        if (MONITORING()) { cur_sent += (SENT); cur_received += (RECEIVED); }                    \
    }                                                                                            \
    LEAVE();

void mpi_barrier_(F *comm, F *ierr) { FCOLL(FN_Barrier, K_BARRIER, -1, comm, 0, 0, 0, cpmpi_coll_barrier(FC(comm)), pmpi_barrier_(comm, ierr)) }
void mpi_bcast_(void *b, F *c, F *dt, F *root, F *comm, F *ierr) {
    FCOLL(FN_Bcast, K_BCAST, (int)*root, comm, type_bytes(FT(dt), (int)*c), ISROOT((int)*root, FC(comm)) ? type_bytes(FT(dt), (int)*c) : 0, ISROOT((int)*root, FC(comm)) ? 0 : type_bytes(FT(dt), (int)*c), cpmpi_coll_bcast(f_buf(b), *c, FT(dt), *root, FC(comm)),
          pmpi_bcast_(b, c, dt, root, comm, ierr))
}
void mpi_reduce_(const void *s, void *r, F *c, F *dt, F *op, F *root, F *comm, F *ierr) {
    FCOLL(FN_Reduce, K_REDUCE, (int)*root, comm, type_bytes(FT(dt), (int)*c), type_bytes(FT(dt), (int)*c), ISROOT((int)*root, FC(comm)) ? type_bytes(FT(dt), (int)*c) : 0,
          cpmpi_coll_reduce(f_buf(s), f_buf(r), *c, FT(dt), PMPI_Op_f2c(*op), *root, FC(comm)),
          pmpi_reduce_(s, r, c, dt, op, root, comm, ierr))
}
void mpi_allreduce_(const void *s, void *r, F *c, F *dt, F *op, F *comm, F *ierr) {
    FCOLL(FN_Allreduce, K_ALLREDUCE, -1, comm, type_bytes(FT(dt), (int)*c), type_bytes(FT(dt), (int)*c), type_bytes(FT(dt), (int)*c),
          cpmpi_coll_allreduce(f_buf(s), f_buf(r), *c, FT(dt), PMPI_Op_f2c(*op), FC(comm)),
          pmpi_allreduce_(s, r, c, dt, op, comm, ierr))
}
void mpi_gather_(const void *s, F *sc, F *st, void *r, F *rc_, F *rt, F *root, F *comm, F *ierr) {
    FCOLL(FN_Gather, K_GATHER, (int)*root, comm, type_bytes(FT(st), (int)*sc), type_bytes(FT(st), (int)*sc), ISROOT((int)*root, FC(comm)) ? type_bytes(FT(rt), (int)*rc_) * csize(FC(comm)) : 0,
          cpmpi_coll_gather(f_buf(s), *sc, FT(st), f_buf(r), *rc_, FT(rt), *root, FC(comm)),
          pmpi_gather_(s, sc, st, r, rc_, rt, root, comm, ierr))
}
void mpi_scatter_(const void *s, F *sc, F *st, void *r, F *rc_, F *rt, F *root, F *comm, F *ierr) {
    FCOLL(FN_Scatter, K_SCATTER, (int)*root, comm, type_bytes(FT(rt), (int)*rc_), ISROOT((int)*root, FC(comm)) ? type_bytes(FT(st), (int)*sc) * csize(FC(comm)) : 0, type_bytes(FT(rt), (int)*rc_),
          cpmpi_coll_scatter(f_buf(s), *sc, FT(st), f_buf(r), *rc_, FT(rt), *root, FC(comm)),
          pmpi_scatter_(s, sc, st, r, rc_, rt, root, comm, ierr))
}
void mpi_allgather_(const void *s, F *sc, F *st, void *r, F *rc_, F *rt, F *comm, F *ierr) {
    FCOLL(FN_Allgather, K_ALLGATHER, -1, comm, type_bytes(FT(st), (int)*sc), type_bytes(FT(st), (int)*sc), type_bytes(FT(rt), (int)*rc_) * csize(FC(comm)),
          cpmpi_coll_allgather(f_buf(s), *sc, FT(st), f_buf(r), *rc_, FT(rt), FC(comm)),
          pmpi_allgather_(s, sc, st, r, rc_, rt, comm, ierr))
}
void mpi_alltoall_(const void *s, F *sc, F *st, void *r, F *rc_, F *rt, F *comm, F *ierr) {
    int n = 1;
    PMPI_Comm_size(PMPI_Comm_f2c(*comm), &n);
    FCOLL(FN_Alltoall, K_ALLTOALL, -1, comm, type_bytes(FT(st), (int)*sc) * (uint64_t)n, type_bytes(FT(st), (int)*sc) * csize(FC(comm)), type_bytes(FT(rt), (int)*rc_) * csize(FC(comm)),
          cpmpi_coll_alltoall(f_buf(s), *sc, FT(st), f_buf(r), *rc_, FT(rt), FC(comm)),
          pmpi_alltoall_(s, sc, st, r, rc_, rt, comm, ierr))
}

/* ---- the families of families.c, from Fortran: forwarded to the C wrappers ------------------
 * Open MPI's Fortran binding would call PMPI_* and pass the C wrappers by; these convert the
 * arguments (handles with the f2c/c2f functions, Fortran's MPI_BOTTOM / MPI_IN_PLACE /
 * MPI_STATUS_IGNORE sentinels to C's) and call the C wrapper, which records the call as C's
 * would be: one implementation of each family's recording. fwd_site carries the Fortran
 * caller's address, so the call site is the program's, not this wrapper's. */

#define FWD_BEGIN() fwd_site = __builtin_return_address(0)
#define FWD_END(RC) do { fwd_site = NULL; *ierr = (F)(RC); } while (0)
/* A C status into the Fortran one the caller gave (unless it ignores it). */
static void f_status_out(const MPI_Status *cs, F *fst) {
    if (!f_status_ignored(fst)) PMPI_Status_c2f(cs, fst);
}

void mpi_mprobe_(F *src, F *tag, F *comm, F *msg, F *status, F *ierr) {
    MPI_Message m;
    MPI_Status cs;
    FWD_BEGIN();
    int rc = MPI_Mprobe((int)*src, (int)*tag, FC(comm), &m, &cs);
    if (rc == MPI_SUCCESS) { *msg = PMPI_Message_c2f(m); f_status_out(&cs, status); }
    FWD_END(rc);
}
void mpi_improbe_(F *src, F *tag, F *comm, F *flag, F *msg, F *status, F *ierr) {
    MPI_Message m = MPI_MESSAGE_NULL;
    MPI_Status cs;
    int fl = 0;
    FWD_BEGIN();
    int rc = MPI_Improbe((int)*src, (int)*tag, FC(comm), &fl, &m, &cs);
    if (rc == MPI_SUCCESS) {
        *flag = fl ? 1 : 0; /* Open MPI's .TRUE. is 1 */
        if (fl) { *msg = PMPI_Message_c2f(m); f_status_out(&cs, status); }
    }
    FWD_END(rc);
}
void mpi_mrecv_(void *buf, F *count, F *dt, F *msg, F *status, F *ierr) {
    MPI_Message m = PMPI_Message_f2c(*msg);
    MPI_Status cs;
    FWD_BEGIN();
    int rc = MPI_Mrecv(f_buf(buf), (int)*count, FT(dt), &m, &cs);
    if (rc == MPI_SUCCESS) { *msg = PMPI_Message_c2f(m); f_status_out(&cs, status); }
    FWD_END(rc);
}
void mpi_imrecv_(void *buf, F *count, F *dt, F *msg, F *req, F *ierr) {
    MPI_Message m = PMPI_Message_f2c(*msg);
    MPI_Request r;
    FWD_BEGIN();
    int rc = MPI_Imrecv(f_buf(buf), (int)*count, FT(dt), &m, &r);
    if (rc == MPI_SUCCESS) { *msg = PMPI_Message_c2f(m); *req = PMPI_Request_c2f(r); }
    FWD_END(rc);
}

/* A nonblocking collective: CALL with `r` the C request, returned as the Fortran one. */
#define FNBC(CALL)                                                                               \
    MPI_Request r;                                                                               \
    FWD_BEGIN();                                                                                 \
    int rc = CALL;                                                                               \
    if (rc == MPI_SUCCESS) *req = PMPI_Request_c2f(r);                                           \
    FWD_END(rc);
void mpi_ibarrier_(F *comm, F *req, F *ierr) { FNBC(MPI_Ibarrier(FC(comm), &r)) }
void mpi_ibcast_(void *b, F *c, F *dt, F *root, F *comm, F *req, F *ierr) {
    FNBC(MPI_Ibcast(f_buf(b), (int)*c, FT(dt), (int)*root, FC(comm), &r))
}
void mpi_ireduce_(const void *s, void *rb, F *c, F *dt, F *op, F *root, F *comm, F *req, F *ierr) {
    FNBC(MPI_Ireduce(f_buf(s), f_buf(rb), (int)*c, FT(dt), PMPI_Op_f2c(*op), (int)*root, FC(comm), &r))
}
void mpi_iallreduce_(const void *s, void *rb, F *c, F *dt, F *op, F *comm, F *req, F *ierr) {
    FNBC(MPI_Iallreduce(f_buf(s), f_buf(rb), (int)*c, FT(dt), PMPI_Op_f2c(*op), FC(comm), &r))
}
void mpi_iallgather_(const void *s, F *sc, F *st, void *rb, F *rc_, F *rt, F *comm, F *req, F *ierr) {
    FNBC(MPI_Iallgather(f_buf(s), (int)*sc, FT(st), f_buf(rb), (int)*rc_, FT(rt), FC(comm), &r))
}
void mpi_ialltoall_(const void *s, F *sc, F *st, void *rb, F *rc_, F *rt, F *comm, F *req, F *ierr) {
    FNBC(MPI_Ialltoall(f_buf(s), (int)*sc, FT(st), f_buf(rb), (int)*rc_, FT(rt), FC(comm), &r))
}

/* One-sided: the window and the target displacement (INTEGER(KIND=MPI_ADDRESS_KIND)). */
#define FW(X) PMPI_Win_f2c(*(X))
void mpi_put_(const void *o, F *oc, F *ot, F *target, MPI_Aint *td, F *tc, F *tt, F *win, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Put(f_buf(o), (int)*oc, FT(ot), (int)*target, *td, (int)*tc, FT(tt), FW(win)));
}
void mpi_get_(void *o, F *oc, F *ot, F *target, MPI_Aint *td, F *tc, F *tt, F *win, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Get(f_buf(o), (int)*oc, FT(ot), (int)*target, *td, (int)*tc, FT(tt), FW(win)));
}
void mpi_accumulate_(const void *o, F *oc, F *ot, F *target, MPI_Aint *td, F *tc, F *tt, F *op, F *win,
                     F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Accumulate(f_buf(o), (int)*oc, FT(ot), (int)*target, *td, (int)*tc, FT(tt), PMPI_Op_f2c(*op),
                           FW(win)));
}
void mpi_win_fence_(F *a, F *win, F *ierr) { FWD_BEGIN(); FWD_END(MPI_Win_fence((int)*a, FW(win))); }
void mpi_win_lock_(F *type, F *rank, F *a, F *win, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Win_lock((int)*type, (int)*rank, (int)*a, FW(win)));
}
void mpi_win_unlock_(F *rank, F *win, F *ierr) { FWD_BEGIN(); FWD_END(MPI_Win_unlock((int)*rank, FW(win))); }
void mpi_win_lock_all_(F *a, F *win, F *ierr) { FWD_BEGIN(); FWD_END(MPI_Win_lock_all((int)*a, FW(win))); }
void mpi_win_unlock_all_(F *win, F *ierr) { FWD_BEGIN(); FWD_END(MPI_Win_unlock_all(FW(win))); }
void mpi_win_flush_(F *rank, F *win, F *ierr) { FWD_BEGIN(); FWD_END(MPI_Win_flush((int)*rank, FW(win))); }
void mpi_win_flush_all_(F *win, F *ierr) { FWD_BEGIN(); FWD_END(MPI_Win_flush_all(FW(win))); }
void mpi_win_flush_local_(F *rank, F *win, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Win_flush_local((int)*rank, FW(win)));
}
void mpi_win_flush_local_all_(F *win, F *ierr) { FWD_BEGIN(); FWD_END(MPI_Win_flush_local_all(FW(win))); }
void mpi_win_sync_(F *win, F *ierr) { FWD_BEGIN(); FWD_END(MPI_Win_sync(FW(win))); }
void mpi_win_post_(F *group, F *a, F *win, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Win_post(PMPI_Group_f2c(*group), (int)*a, FW(win)));
}
void mpi_win_start_(F *group, F *a, F *win, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Win_start(PMPI_Group_f2c(*group), (int)*a, FW(win)));
}
void mpi_win_complete_(F *win, F *ierr) { FWD_BEGIN(); FWD_END(MPI_Win_complete(FW(win))); }
void mpi_win_wait_(F *win, F *ierr) { FWD_BEGIN(); FWD_END(MPI_Win_wait(FW(win))); }
void mpi_win_test_(F *win, F *flag, F *ierr) {
    int fl = 0;
    FWD_BEGIN();
    int rc = MPI_Win_test(FW(win), &fl);
    if (rc == MPI_SUCCESS) *flag = fl ? 1 : 0;
    FWD_END(rc);
}
void mpi_get_accumulate_(const void *o, F *oc, F *ot, void *res, F *rc_, F *rt, F *target, MPI_Aint *td, F *tc,
                         F *tt, F *op, F *win, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Get_accumulate(f_buf(o), (int)*oc, FT(ot), f_buf(res), (int)*rc_, FT(rt), (int)*target, *td,
                               (int)*tc, FT(tt), PMPI_Op_f2c(*op), FW(win)));
}
void mpi_fetch_and_op_(const void *o, void *res, F *dt, F *target, MPI_Aint *td, F *op, F *win, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Fetch_and_op(f_buf(o), f_buf(res), FT(dt), (int)*target, *td, PMPI_Op_f2c(*op), FW(win)));
}
void mpi_compare_and_swap_(const void *o, const void *c, void *res, F *dt, F *target, MPI_Aint *td, F *win,
                           F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Compare_and_swap(f_buf(o), f_buf(c), f_buf(res), FT(dt), (int)*target, *td, FW(win)));
}

/* Request-based one-sided: `r` the C request, returned as the Fortran one. */
void mpi_rput_(const void *o, F *oc, F *ot, F *target, MPI_Aint *td, F *tc, F *tt, F *win, F *req, F *ierr) {
    FNBC(MPI_Rput(f_buf(o), (int)*oc, FT(ot), (int)*target, *td, (int)*tc, FT(tt), FW(win), &r))
}
void mpi_rget_(void *o, F *oc, F *ot, F *target, MPI_Aint *td, F *tc, F *tt, F *win, F *req, F *ierr) {
    FNBC(MPI_Rget(f_buf(o), (int)*oc, FT(ot), (int)*target, *td, (int)*tc, FT(tt), FW(win), &r))
}
void mpi_raccumulate_(const void *o, F *oc, F *ot, F *target, MPI_Aint *td, F *tc, F *tt, F *op, F *win, F *req,
                      F *ierr) {
    FNBC(MPI_Raccumulate(f_buf(o), (int)*oc, FT(ot), (int)*target, *td, (int)*tc, FT(tt), PMPI_Op_f2c(*op),
                         FW(win), &r))
}
void mpi_rget_accumulate_(const void *o, F *oc, F *ot, void *res, F *rc_, F *rt, F *target, MPI_Aint *td, F *tc,
                          F *tt, F *op, F *win, F *req, F *ierr) {
    FNBC(MPI_Rget_accumulate(f_buf(o), (int)*oc, FT(ot), f_buf(res), (int)*rc_, FT(rt), (int)*target, *td,
                             (int)*tc, FT(tt), PMPI_Op_f2c(*op), FW(win), &r))
}

/* The v-forms, scans and neighbourhood collectives. Count and displacement arrays are Fortran
 * INTEGERs, which are C ints in Open MPI: the caller's arrays are passed on as they are (a
 * nonblocking collective may read them until it completes, so no copy would do). */
_Static_assert(sizeof(F) == sizeof(int), "MPI_Fint is a C int");
#define FI(X) ((const int *)(X))
void mpi_gatherv_(const void *s, F *sc, F *st, void *r, F *rcs, F *displs, F *rt, F *root, F *comm, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Gatherv(f_buf(s), (int)*sc, FT(st), f_buf(r), FI(rcs), FI(displs), FT(rt), (int)*root, FC(comm)));
}
void mpi_scatterv_(const void *s, F *scs, F *displs, F *st, void *r, F *rc_, F *rt, F *root, F *comm, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Scatterv(f_buf(s), FI(scs), FI(displs), FT(st), f_buf(r), (int)*rc_, FT(rt), (int)*root, FC(comm)));
}
void mpi_allgatherv_(const void *s, F *sc, F *st, void *r, F *rcs, F *displs, F *rt, F *comm, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Allgatherv(f_buf(s), (int)*sc, FT(st), f_buf(r), FI(rcs), FI(displs), FT(rt), FC(comm)));
}
void mpi_alltoallv_(const void *s, F *scs, F *sd, F *st, void *r, F *rcs, F *rd, F *rt, F *comm, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Alltoallv(f_buf(s), FI(scs), FI(sd), FT(st), f_buf(r), FI(rcs), FI(rd), FT(rt), FC(comm)));
}
void mpi_reduce_scatter_(const void *s, void *r, F *rcs, F *dt, F *op, F *comm, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Reduce_scatter(f_buf(s), f_buf(r), FI(rcs), FT(dt), PMPI_Op_f2c(*op), FC(comm)));
}
void mpi_reduce_scatter_block_(const void *s, void *r, F *rc_, F *dt, F *op, F *comm, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Reduce_scatter_block(f_buf(s), f_buf(r), (int)*rc_, FT(dt), PMPI_Op_f2c(*op), FC(comm)));
}
void mpi_scan_(const void *s, void *r, F *c, F *dt, F *op, F *comm, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Scan(f_buf(s), f_buf(r), (int)*c, FT(dt), PMPI_Op_f2c(*op), FC(comm)));
}
void mpi_exscan_(const void *s, void *r, F *c, F *dt, F *op, F *comm, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Exscan(f_buf(s), f_buf(r), (int)*c, FT(dt), PMPI_Op_f2c(*op), FC(comm)));
}
void mpi_igather_(const void *s, F *sc, F *st, void *rb, F *rc_, F *rt, F *root, F *comm, F *req, F *ierr) {
    FNBC(MPI_Igather(f_buf(s), (int)*sc, FT(st), f_buf(rb), (int)*rc_, FT(rt), (int)*root, FC(comm), &r))
}
void mpi_iscatter_(const void *s, F *sc, F *st, void *rb, F *rc_, F *rt, F *root, F *comm, F *req, F *ierr) {
    FNBC(MPI_Iscatter(f_buf(s), (int)*sc, FT(st), f_buf(rb), (int)*rc_, FT(rt), (int)*root, FC(comm), &r))
}
void mpi_igatherv_(const void *s, F *sc, F *st, void *rb, F *rcs, F *displs, F *rt, F *root, F *comm, F *req,
                   F *ierr) {
    FNBC(MPI_Igatherv(f_buf(s), (int)*sc, FT(st), f_buf(rb), FI(rcs), FI(displs), FT(rt), (int)*root, FC(comm),
                      &r))
}
void mpi_iscatterv_(const void *s, F *scs, F *displs, F *st, void *rb, F *rc_, F *rt, F *root, F *comm, F *req,
                    F *ierr) {
    FNBC(MPI_Iscatterv(f_buf(s), FI(scs), FI(displs), FT(st), f_buf(rb), (int)*rc_, FT(rt), (int)*root, FC(comm),
                       &r))
}
void mpi_iallgatherv_(const void *s, F *sc, F *st, void *rb, F *rcs, F *displs, F *rt, F *comm, F *req, F *ierr) {
    FNBC(MPI_Iallgatherv(f_buf(s), (int)*sc, FT(st), f_buf(rb), FI(rcs), FI(displs), FT(rt), FC(comm), &r))
}
void mpi_ialltoallv_(const void *s, F *scs, F *sd, F *st, void *rb, F *rcs, F *rd, F *rt, F *comm, F *req,
                     F *ierr) {
    FNBC(MPI_Ialltoallv(f_buf(s), FI(scs), FI(sd), FT(st), f_buf(rb), FI(rcs), FI(rd), FT(rt), FC(comm), &r))
}
void mpi_ireduce_scatter_(const void *s, void *rb, F *rcs, F *dt, F *op, F *comm, F *req, F *ierr) {
    FNBC(MPI_Ireduce_scatter(f_buf(s), f_buf(rb), FI(rcs), FT(dt), PMPI_Op_f2c(*op), FC(comm), &r))
}
void mpi_ireduce_scatter_block_(const void *s, void *rb, F *rc_, F *dt, F *op, F *comm, F *req, F *ierr) {
    FNBC(MPI_Ireduce_scatter_block(f_buf(s), f_buf(rb), (int)*rc_, FT(dt), PMPI_Op_f2c(*op), FC(comm), &r))
}
void mpi_iscan_(const void *s, void *rb, F *c, F *dt, F *op, F *comm, F *req, F *ierr) {
    FNBC(MPI_Iscan(f_buf(s), f_buf(rb), (int)*c, FT(dt), PMPI_Op_f2c(*op), FC(comm), &r))
}
void mpi_iexscan_(const void *s, void *rb, F *c, F *dt, F *op, F *comm, F *req, F *ierr) {
    FNBC(MPI_Iexscan(f_buf(s), f_buf(rb), (int)*c, FT(dt), PMPI_Op_f2c(*op), FC(comm), &r))
}
void mpi_neighbor_allgather_(const void *s, F *sc, F *st, void *r, F *rc_, F *rt, F *comm, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Neighbor_allgather(f_buf(s), (int)*sc, FT(st), f_buf(r), (int)*rc_, FT(rt), FC(comm)));
}
void mpi_neighbor_allgatherv_(const void *s, F *sc, F *st, void *r, F *rcs, F *displs, F *rt, F *comm, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Neighbor_allgatherv(f_buf(s), (int)*sc, FT(st), f_buf(r), FI(rcs), FI(displs), FT(rt), FC(comm)));
}
void mpi_neighbor_alltoall_(const void *s, F *sc, F *st, void *r, F *rc_, F *rt, F *comm, F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Neighbor_alltoall(f_buf(s), (int)*sc, FT(st), f_buf(r), (int)*rc_, FT(rt), FC(comm)));
}
void mpi_neighbor_alltoallv_(const void *s, F *scs, F *sd, F *st, void *r, F *rcs, F *rd, F *rt, F *comm,
                             F *ierr) {
    FWD_BEGIN();
    FWD_END(MPI_Neighbor_alltoallv(f_buf(s), FI(scs), FI(sd), FT(st), f_buf(r), FI(rcs), FI(rd), FT(rt), FC(comm)));
}
void mpi_ineighbor_allgather_(const void *s, F *sc, F *st, void *rb, F *rc_, F *rt, F *comm, F *req, F *ierr) {
    FNBC(MPI_Ineighbor_allgather(f_buf(s), (int)*sc, FT(st), f_buf(rb), (int)*rc_, FT(rt), FC(comm), &r))
}
void mpi_ineighbor_allgatherv_(const void *s, F *sc, F *st, void *rb, F *rcs, F *displs, F *rt, F *comm, F *req,
                               F *ierr) {
    FNBC(MPI_Ineighbor_allgatherv(f_buf(s), (int)*sc, FT(st), f_buf(rb), FI(rcs), FI(displs), FT(rt), FC(comm), &r))
}
void mpi_ineighbor_alltoall_(const void *s, F *sc, F *st, void *rb, F *rc_, F *rt, F *comm, F *req, F *ierr) {
    FNBC(MPI_Ineighbor_alltoall(f_buf(s), (int)*sc, FT(st), f_buf(rb), (int)*rc_, FT(rt), FC(comm), &r))
}
void mpi_ineighbor_alltoallv_(const void *s, F *scs, F *sd, F *st, void *rb, F *rcs, F *rd, F *rt, F *comm,
                              F *req, F *ierr) {
    FNBC(MPI_Ineighbor_alltoallv(f_buf(s), FI(scs), FI(sd), FT(st), f_buf(rb), FI(rcs), FI(rd), FT(rt), FC(comm),
                                 &r))
}

/* The w-forms name a datatype per peer: they get a converted copy of the handles. A blocking
 * one's lives for the call; a nonblocking one's (`req` not NULL) until its request completes
 * (keep_until_done, freed by the call that completes it, shim.c): the standard lets the library
 * read the arrays until then, and Open MPI's own Fortran binding keeps its converted arrays with
 * the request for that reason. */
static int f_alltoallw(const void *s, F *scs, const void *sd, F *sts, void *r, F *rcs, const void *rd, F *rts,
                       MPI_Comm comm, int nout, int nin, int neighbourhood, MPI_Request *req) {
    MPI_Datatype small[32];
    int n = nout + nin;
    MPI_Datatype *t = n <= 32 && !req ? small : malloc((size_t)(n > 0 ? n : 1) * sizeof *t);
    if (!t) {
        /* The C call needs the converted datatypes: without them the call cannot be made. */
        cpmpi_oom("the datatypes of a Fortran alltoallw");
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < nout; i++) t[i] = PMPI_Type_f2c(sts[i]);
    for (int i = 0; i < nin; i++) t[nout + i] = PMPI_Type_f2c(rts[i]);
    int rc;
    /* Neighbourhood w-forms take displacements of INTEGER(KIND=MPI_ADDRESS_KIND). */
    const MPI_Aint *sa = (const MPI_Aint *)sd, *ra = (const MPI_Aint *)rd;
    if (neighbourhood && req) {
        rc = MPI_Ineighbor_alltoallw(f_buf(s), FI(scs), sa, t, f_buf(r), FI(rcs), ra, t + nout, comm, req);
    } else if (neighbourhood) {
        rc = MPI_Neighbor_alltoallw(f_buf(s), FI(scs), sa, t, f_buf(r), FI(rcs), ra, t + nout, comm);
    } else if (req) {
        rc = MPI_Ialltoallw(f_buf(s), FI(scs), (const int *)sd, t, f_buf(r), FI(rcs), (const int *)rd, t + nout,
                            comm, req);
    } else {
        rc = MPI_Alltoallw(f_buf(s), FI(scs), (const int *)sd, t, f_buf(r), FI(rcs), (const int *)rd, t + nout,
                           comm);
    }
    if (req && rc == MPI_SUCCESS && *req != MPI_REQUEST_NULL) keep_until_done(HKEY(*req), t);
    else if (t != small) free(t);
    return rc;
}
/* The ranks an all-to-all's arrays hold one entry per: the remote group's on an
 * intercommunicator. */
static int f_a2a_peers(MPI_Comm c) {
    int inter = 0, n = 0;
    PMPI_Comm_test_inter(c, &inter);
    if (inter) PMPI_Comm_remote_size(c, &n);
    else PMPI_Comm_size(c, &n);
    return n;
}
void mpi_alltoallw_(const void *s, F *scs, F *sd, F *sts, void *r, F *rcs, F *rd, F *rts, F *comm, F *ierr) {
    MPI_Comm c = FC(comm);
    int n = f_a2a_peers(c);
    FWD_BEGIN();
    FWD_END(f_alltoallw(s, scs, sd, sts, r, rcs, rd, rts, c, n, n, 0, NULL));
}
void mpi_ialltoallw_(const void *s, F *scs, F *sd, F *sts, void *rb, F *rcs, F *rd, F *rts, F *comm, F *req,
                     F *ierr) {
    MPI_Comm c = FC(comm);
    int n = f_a2a_peers(c);
    FNBC(f_alltoallw(s, scs, sd, sts, rb, rcs, rd, rts, c, n, n, 0, &r))
}
void mpi_neighbor_alltoallw_(const void *s, F *scs, MPI_Aint *sd, F *sts, void *r, F *rcs, MPI_Aint *rd, F *rts,
                             F *comm, F *ierr) {
    MPI_Comm c = FC(comm);
    int in = 0, out = 0;
    degrees(c, &in, &out);
    FWD_BEGIN();
    FWD_END(f_alltoallw(s, scs, sd, sts, r, rcs, rd, rts, c, out, in, 1, NULL));
}
void mpi_ineighbor_alltoallw_(const void *s, F *scs, MPI_Aint *sd, F *sts, void *rb, F *rcs, MPI_Aint *rd,
                              F *rts, F *comm, F *req, F *ierr) {
    MPI_Comm c = FC(comm);
    int in = 0, out = 0;
    degrees(c, &in, &out);
    FNBC(f_alltoallw(s, scs, sd, sts, rb, rcs, rd, rts, c, out, in, 1, &r))
}
