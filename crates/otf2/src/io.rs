//! [`Archive`] to and from disk through libotf2: one plain loop over definitions and records
//! each way; the meaning is in [`crate::from_run`] and [`crate::to_own`].

// The callbacks and writer calls have libotf2's C signatures, however many arguments.
#![allow(clippy::too_many_arguments)]

use crate::ffi::*;
use crate::model::{Archive, ClockOffset, Comm, Location, Rec, Region};
use crate::Otf2Error;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, c_void, CStr, CString};
use std::path::Path;

fn check(call: &'static str, code: ErrorCode) -> Result<(), Otf2Error> {
    if code == SUCCESS {
        Ok(())
    } else {
        Err(library_error(call, code))
    }
}

fn library_error(call: &'static str, code: ErrorCode) -> Otf2Error {
    // SAFETY: libotf2 returns pointers to static NUL-terminated strings for every code (an
    // unknown one included), or NULL, which is checked.
    let text = |p: *const c_char| unsafe {
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    // SAFETY: plain lookups of a code, no other state.
    let (name, description) = unsafe {
        (
            text(OTF2_Error_GetName(code)),
            text(OTF2_Error_GetDescription(code)),
        )
    };
    Otf2Error::Library {
        call,
        code,
        message: format!("{name}: {description}"),
    }
}

fn cstring(s: &str) -> CString {
    // Names come from rank files and hosts: a NUL inside one is cut there, never a failure.
    CString::new(s.split('\0').next().unwrap_or("")).unwrap_or_default()
}

extern "C" fn pre_flush(_: *mut c_void, _: u8, _: u64, _: *mut c_void, _: bool) -> u8 {
    FLUSH
}

extern "C" fn post_flush(_: *mut c_void, _: u8, _: u64) -> u64 {
    0
}

/// A strings table: each string once, ids in first-use order.
#[derive(Default)]
struct Strings {
    ids: HashMap<String, u32>,
    list: Vec<String>,
}

impl Strings {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.list.len() as u32;
        self.ids.insert(s.to_string(), i);
        self.list.push(s.to_string());
        i
    }
}

/// An archive open for writing, closed (whatever happens) when dropped.
struct WriteArchive(*mut OTF2_Archive);

impl Drop for WriteArchive {
    fn drop(&mut self) {
        // SAFETY: the handle came from OTF2_Archive_Open and is closed only here; closing
        // also closes the writers still open.
        unsafe {
            OTF2_Archive_Close(self.0);
        }
    }
}

/// Writes `a` as `dir/NAME.otf2` (the anchor file), `dir/NAME.def` and `dir/NAME/`. An archive
/// of that name already in `dir` is replaced.
pub(crate) fn write(a: &Archive, dir: &Path, name: &str) -> Result<(), Otf2Error> {
    let io = |path: &Path, source: std::io::Error| Otf2Error::Io {
        path: path.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    // libotf2 refuses to write over an existing archive.
    for p in [
        dir.join(format!("{name}.otf2")),
        dir.join(format!("{name}.def")),
    ] {
        match std::fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(&p, e)),
            _ => {}
        }
    }
    let sub = dir.join(name);
    if sub.exists() {
        std::fs::remove_dir_all(&sub).map_err(|e| io(&sub, e))?;
    }
    let cdir = cstring(&dir.to_string_lossy());
    let cname = cstring(name);
    // SAFETY: both strings are valid NUL-terminated C strings that outlive the call.
    let raw = unsafe {
        OTF2_Archive_Open(
            cdir.as_ptr(),
            cname.as_ptr(),
            FILEMODE_WRITE,
            CHUNK_SIZE_EVENTS_DEFAULT,
            CHUNK_SIZE_DEFINITIONS_DEFAULT,
            SUBSTRATE_POSIX,
            COMPRESSION_NONE,
        )
    };
    if raw.is_null() {
        return Err(Otf2Error::Open {
            path: dir.join(format!("{name}.otf2")),
        });
    }
    let ar = WriteArchive(raw);
    let flush = OTF2_FlushCallbacks {
        pre_flush,
        post_flush,
    };
    let creator = cstring(concat!("commperf ", env!("CARGO_PKG_VERSION")));
    // SAFETY: `ar.0` is an open archive; libotf2 copies the callbacks struct and the creator
    // string, both valid for the calls.
    unsafe {
        check(
            "OTF2_Archive_SetFlushCallbacks",
            OTF2_Archive_SetFlushCallbacks(ar.0, &flush, std::ptr::null_mut()),
        )?;
        check(
            "OTF2_Archive_SetSerialCollectiveCallbacks",
            OTF2_Archive_SetSerialCollectiveCallbacks(ar.0),
        )?;
        check(
            "OTF2_Archive_SetCreator",
            OTF2_Archive_SetCreator(ar.0, creator.as_ptr()),
        )?;
        check("OTF2_Archive_OpenEvtFiles", OTF2_Archive_OpenEvtFiles(ar.0))?;
    }
    for l in &a.locations {
        // SAFETY: the archive is open with its event files; the writer is used only inside
        // this block and closed at its end.
        unsafe {
            let w = OTF2_Archive_GetEvtWriter(ar.0, l.id);
            if w.is_null() {
                return Err(Otf2Error::Library {
                    call: "OTF2_Archive_GetEvtWriter",
                    code: 0,
                    message: format!("no event writer for location {}", l.id),
                });
            }
            for r in &l.events {
                write_rec(w, r)?;
            }
            check(
                "OTF2_Archive_CloseEvtWriter",
                OTF2_Archive_CloseEvtWriter(ar.0, w),
            )?;
        }
    }
    // SAFETY: the archive is open; every def writer is closed before the def files are.
    unsafe {
        check(
            "OTF2_Archive_CloseEvtFiles",
            OTF2_Archive_CloseEvtFiles(ar.0),
        )?;
        check("OTF2_Archive_OpenDefFiles", OTF2_Archive_OpenDefFiles(ar.0))?;
        for l in &a.locations {
            let w = OTF2_Archive_GetDefWriter(ar.0, l.id);
            if w.is_null() {
                continue;
            }
            for c in &l.clock_offsets {
                check(
                    "OTF2_DefWriter_WriteClockOffset",
                    OTF2_DefWriter_WriteClockOffset(w, c.time, c.offset, c.std_dev),
                )?;
            }
            check(
                "OTF2_Archive_CloseDefWriter",
                OTF2_Archive_CloseDefWriter(ar.0, w),
            )?;
        }
        check(
            "OTF2_Archive_CloseDefFiles",
            OTF2_Archive_CloseDefFiles(ar.0),
        )?;
    }
    write_global_defs(&ar, a)?;
    // Closing writes the anchor file: its errors are the archive's.
    let raw = ar.0;
    std::mem::forget(ar);
    // SAFETY: the handle is open and, with `ar` forgotten, closed exactly once, here.
    check("OTF2_Archive_Close", unsafe { OTF2_Archive_Close(raw) })
}

/// # Safety
/// `w` is an open event writer.
unsafe fn write_rec(w: *mut OTF2_EvtWriter, r: &Rec) -> Result<(), Otf2Error> {
    let al = std::ptr::null_mut();
    // SAFETY: the caller's; every argument is a plain value.
    let (call, code) = unsafe {
        match *r {
            Rec::Enter { t, region } => ("Enter", OTF2_EvtWriter_Enter(w, al, t, region)),
            Rec::Leave { t, region } => ("Leave", OTF2_EvtWriter_Leave(w, al, t, region)),
            Rec::Send {
                t,
                peer,
                comm,
                tag,
                bytes,
            } => (
                "MpiSend",
                OTF2_EvtWriter_MpiSend(w, al, t, peer, comm, tag, bytes),
            ),
            Rec::Recv {
                t,
                peer,
                comm,
                tag,
                bytes,
            } => (
                "MpiRecv",
                OTF2_EvtWriter_MpiRecv(w, al, t, peer, comm, tag, bytes),
            ),
            Rec::Isend {
                t,
                peer,
                comm,
                tag,
                bytes,
                req,
            } => (
                "MpiIsend",
                OTF2_EvtWriter_MpiIsend(w, al, t, peer, comm, tag, bytes, req),
            ),
            Rec::Irecv {
                t,
                peer,
                comm,
                tag,
                bytes,
                req,
            } => (
                "MpiIrecv",
                OTF2_EvtWriter_MpiIrecv(w, al, t, peer, comm, tag, bytes, req),
            ),
            Rec::IsendComplete { t, req } => (
                "MpiIsendComplete",
                OTF2_EvtWriter_MpiIsendComplete(w, al, t, req),
            ),
            Rec::IrecvRequest { t, req } => (
                "MpiIrecvRequest",
                OTF2_EvtWriter_MpiIrecvRequest(w, al, t, req),
            ),
            Rec::RequestCancelled { t, req } => (
                "MpiRequestCancelled",
                OTF2_EvtWriter_MpiRequestCancelled(w, al, t, req),
            ),
            Rec::CollBegin { t } => (
                "MpiCollectiveBegin",
                OTF2_EvtWriter_MpiCollectiveBegin(w, al, t),
            ),
            Rec::CollEnd {
                t,
                op,
                comm,
                root,
                sent,
                received,
            } => (
                "MpiCollectiveEnd",
                OTF2_EvtWriter_MpiCollectiveEnd(
                    w,
                    al,
                    t,
                    op,
                    comm,
                    root.unwrap_or(UNDEFINED_UINT32),
                    sent,
                    received,
                ),
            ),
            Rec::NbcRequest { t, req } => (
                "NonBlockingCollectiveRequest",
                OTF2_EvtWriter_NonBlockingCollectiveRequest(w, al, t, req),
            ),
            Rec::NbcComplete {
                t,
                op,
                comm,
                root,
                sent,
                received,
                req,
            } => (
                "NonBlockingCollectiveComplete",
                OTF2_EvtWriter_NonBlockingCollectiveComplete(
                    w,
                    al,
                    t,
                    op,
                    comm,
                    root.unwrap_or(UNDEFINED_UINT32),
                    sent,
                    received,
                    req,
                ),
            ),
            Rec::Measurement { t, on } => (
                "MeasurementOnOff",
                OTF2_EvtWriter_MeasurementOnOff(
                    w,
                    al,
                    t,
                    if on { MEASUREMENT_ON } else { MEASUREMENT_OFF },
                ),
            ),
            Rec::RmaPut {
                t,
                win,
                peer,
                bytes,
                req,
            } => (
                "RmaPut",
                OTF2_EvtWriter_RmaPut(w, al, t, win, peer, bytes, req),
            ),
            Rec::RmaGet {
                t,
                win,
                peer,
                bytes,
                req,
            } => (
                "RmaGet",
                OTF2_EvtWriter_RmaGet(w, al, t, win, peer, bytes, req),
            ),
            Rec::RmaAtomic {
                t,
                win,
                peer,
                sent,
                received,
                req,
            } => (
                "RmaAtomic",
                OTF2_EvtWriter_RmaAtomic(
                    w,
                    al,
                    t,
                    win,
                    peer,
                    RMA_ATOMIC_FETCH_AND_ACCUMULATE,
                    sent,
                    received,
                    req,
                ),
            ),
            Rec::RmaComplete { t, win, req } => (
                "RmaOpCompleteRemote",
                OTF2_EvtWriter_RmaOpCompleteRemote(w, al, t, win, req),
            ),
            // Never built by the writer: nothing to write.
            Rec::Unmodelled { .. } => return Ok(()),
        }
    };
    if code == SUCCESS {
        Ok(())
    } else {
        let _ = call;
        Err(library_error("OTF2_EvtWriter_*", code))
    }
}

fn write_global_defs(ar: &WriteArchive, a: &Archive) -> Result<(), Otf2Error> {
    let mut s = Strings::default();
    let empty = s.id("");
    let region_names: Vec<u32> = a.regions.iter().map(|r| s.id(&r.name)).collect();
    let machine = s.id("commperf run");
    let machine_class = s.id("machine");
    let node_class = s.id("node");
    let mut hosts: BTreeMap<String, u32> = BTreeMap::new();
    for l in &a.locations {
        let k = hosts.len() as u32 + 1;
        hosts.entry(l.host.clone()).or_insert(k);
    }
    let host_names: Vec<(u32, u32)> = hosts.iter().map(|(h, &id)| (id, s.id(h))).collect();
    let rank_of = |id: u64| a.mpi_ranks.iter().position(|&x| x == id);
    let group_names: Vec<u32> = a
        .locations
        .iter()
        .map(|l| match rank_of(l.id) {
            Some(r) => s.id(&format!("MPI Rank {r}")),
            None => s.id(&l.name),
        })
        .collect();
    let loc_names: Vec<u32> = a.locations.iter().map(|l| s.id(&l.name)).collect();
    let all_locations = s.id("MPI locations");
    let comm_names: Vec<u32> = a.comms.iter().map(|c| s.id(&c.name)).collect();
    let win_name = s.id("MPI_Win");
    let first = a
        .locations
        .iter()
        .flat_map(|l| {
            let min_off = l.clock_offsets.iter().map(|c| c.offset).min().unwrap_or(0);
            l.events
                .first()
                .map(|e| e.time().saturating_add_signed(min_off.min(0)))
        })
        .min()
        .unwrap_or(0);
    let last = a
        .locations
        .iter()
        .flat_map(|l| {
            let max_off = l.clock_offsets.iter().map(|c| c.offset).max().unwrap_or(0);
            l.events
                .last()
                .map(|e| e.time().saturating_add_signed(max_off.max(0)))
        })
        .max()
        .unwrap_or(first);
    // SAFETY: the archive is open; the global def writer belongs to it and every pointer
    // passed (strings, member arrays) is valid for the duration of its call.
    unsafe {
        let w = OTF2_Archive_GetGlobalDefWriter(ar.0);
        if w.is_null() {
            return Err(Otf2Error::Library {
                call: "OTF2_Archive_GetGlobalDefWriter",
                code: 0,
                message: "no global definition writer".into(),
            });
        }
        check(
            "OTF2_GlobalDefWriter_WriteClockProperties",
            OTF2_GlobalDefWriter_WriteClockProperties(
                w,
                a.timer_resolution,
                first,
                last.saturating_sub(first),
                u64::MAX,
            ),
        )?;
        for (i, st) in s.list.iter().enumerate() {
            let c = cstring(st);
            check(
                "OTF2_GlobalDefWriter_WriteString",
                OTF2_GlobalDefWriter_WriteString(w, i as u32, c.as_ptr()),
            )?;
        }
        for (i, r) in a.regions.iter().enumerate() {
            check(
                "OTF2_GlobalDefWriter_WriteRegion",
                OTF2_GlobalDefWriter_WriteRegion(
                    w,
                    i as u32,
                    region_names[i],
                    region_names[i],
                    empty,
                    r.role,
                    if r.mpi { PARADIGM_MPI } else { 1 },
                    0,
                    empty,
                    0,
                    0,
                ),
            )?;
        }
        check(
            "OTF2_GlobalDefWriter_WriteSystemTreeNode",
            OTF2_GlobalDefWriter_WriteSystemTreeNode(
                w,
                0,
                machine,
                machine_class,
                UNDEFINED_UINT32,
            ),
        )?;
        for &(id, nm) in &host_names {
            check(
                "OTF2_GlobalDefWriter_WriteSystemTreeNode",
                OTF2_GlobalDefWriter_WriteSystemTreeNode(w, id, nm, node_class, 0),
            )?;
        }
        for (i, l) in a.locations.iter().enumerate() {
            check(
                "OTF2_GlobalDefWriter_WriteLocationGroup",
                OTF2_GlobalDefWriter_WriteLocationGroup(
                    w,
                    i as u32,
                    group_names[i],
                    LOCATION_GROUP_TYPE_PROCESS,
                    hosts[&l.host],
                    UNDEFINED_UINT32,
                ),
            )?;
        }
        for (i, l) in a.locations.iter().enumerate() {
            check(
                "OTF2_GlobalDefWriter_WriteLocation",
                OTF2_GlobalDefWriter_WriteLocation(
                    w,
                    l.id,
                    loc_names[i],
                    LOCATION_TYPE_CPU_THREAD,
                    l.events.len() as u64,
                    i as u32,
                ),
            )?;
        }
        // Group 0: the MPI ranks' locations (rank r = member r); group 1 + k: communicator k's
        // ranks, as indices into group 0.
        check(
            "OTF2_GlobalDefWriter_WriteGroup",
            OTF2_GlobalDefWriter_WriteGroup(
                w,
                0,
                all_locations,
                GROUP_TYPE_COMM_LOCATIONS,
                PARADIGM_MPI,
                0,
                a.mpi_ranks.len() as u32,
                a.mpi_ranks.as_ptr(),
            ),
        )?;
        for (k, c) in a.comms.iter().enumerate() {
            let members: Vec<u64> = c.members.iter().map(|&m| u64::from(m)).collect();
            check(
                "OTF2_GlobalDefWriter_WriteGroup",
                OTF2_GlobalDefWriter_WriteGroup(
                    w,
                    1 + k as u32,
                    comm_names[k],
                    GROUP_TYPE_COMM_GROUP,
                    PARADIGM_MPI,
                    0,
                    members.len() as u32,
                    members.as_ptr(),
                ),
            )?;
            check(
                "OTF2_GlobalDefWriter_WriteComm",
                OTF2_GlobalDefWriter_WriteComm(
                    w,
                    k as u32,
                    comm_names[k],
                    1 + k as u32,
                    UNDEFINED_UINT32,
                    0,
                ),
            )?;
        }
        for (k, &comm) in a.windows.iter().enumerate() {
            check(
                "OTF2_GlobalDefWriter_WriteRmaWin",
                OTF2_GlobalDefWriter_WriteRmaWin(w, k as u32, win_name, comm, 0),
            )?;
        }
    }
    Ok(())
}

/// What the global definition callbacks collect.
#[derive(Default)]
struct Defs {
    resolution: u64,
    strings: HashMap<u32, String>,
    /// ref -> (name, role, paradigm)
    regions: BTreeMap<u32, (u32, u8, u8)>,
    /// (id, name)
    locations: Vec<(u64, u32)>,
    /// ref -> (type, paradigm, members)
    groups: HashMap<u32, (u8, u8, Vec<u64>)>,
    /// ref -> (name, group)
    comms: BTreeMap<u32, (u32, u32)>,
    /// RMA window ref -> its communicator
    windows: BTreeMap<u32, u32>,
}

/// # Safety
/// `user` is the `&mut Defs` registered with the callbacks.
unsafe fn defs<'a>(user: *mut c_void) -> &'a mut Defs {
    // SAFETY: the caller's.
    unsafe { &mut *(user as *mut Defs) }
}

extern "C" fn gd_string(user: *mut c_void, id: u32, s: *const c_char) -> CallbackCode {
    // SAFETY: libotf2 passes back the `Defs` given at registration and a NUL-terminated string.
    unsafe {
        let s = if s.is_null() {
            String::new()
        } else {
            CStr::from_ptr(s).to_string_lossy().into_owned()
        };
        defs(user).strings.insert(id, s);
    }
    CALLBACK_SUCCESS
}

extern "C" fn gd_region(
    user: *mut c_void,
    id: u32,
    name: u32,
    _canonical: u32,
    _description: u32,
    role: u8,
    paradigm: u8,
    _flags: u32,
    _file: u32,
    _begin: u32,
    _end: u32,
) -> CallbackCode {
    // SAFETY: libotf2 passes back the `Defs` given at registration.
    unsafe { defs(user) }
        .regions
        .insert(id, (name, role, paradigm));
    CALLBACK_SUCCESS
}

extern "C" fn gd_location(
    user: *mut c_void,
    id: u64,
    name: u32,
    _kind: u8,
    _events: u64,
    _group: u32,
) -> CallbackCode {
    // SAFETY: libotf2 passes back the `Defs` given at registration.
    unsafe { defs(user) }.locations.push((id, name));
    CALLBACK_SUCCESS
}

extern "C" fn gd_group(
    user: *mut c_void,
    id: u32,
    _name: u32,
    kind: u8,
    paradigm: u8,
    _flags: u32,
    n: u32,
    members: *const u64,
) -> CallbackCode {
    // SAFETY: libotf2 passes back the `Defs` given at registration and `n` members.
    unsafe {
        let m = if members.is_null() || n == 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts(members, n as usize).to_vec()
        };
        defs(user).groups.insert(id, (kind, paradigm, m));
    }
    CALLBACK_SUCCESS
}

extern "C" fn gd_comm(
    user: *mut c_void,
    id: u32,
    name: u32,
    group: u32,
    _parent: u32,
    _flags: u32,
) -> CallbackCode {
    // SAFETY: libotf2 passes back the `Defs` given at registration.
    unsafe { defs(user) }.comms.insert(id, (name, group));
    CALLBACK_SUCCESS
}

extern "C" fn gd_rma_win(
    user: *mut c_void,
    id: u32,
    _name: u32,
    comm: u32,
    _flags: u32,
) -> CallbackCode {
    // SAFETY: libotf2 passes back the `Defs` given at registration.
    unsafe { defs(user) }.windows.insert(id, comm);
    CALLBACK_SUCCESS
}

extern "C" fn gd_clock(
    user: *mut c_void,
    res: u64,
    _off: u64,
    _len: u64,
    _rt: u64,
) -> CallbackCode {
    // SAFETY: libotf2 passes back the `Defs` given at registration.
    unsafe { defs(user) }.resolution = res;
    CALLBACK_SUCCESS
}

/// # Safety
/// `user` is the `&mut Vec<Rec>` registered with the event callbacks.
unsafe fn recs<'a>(user: *mut c_void) -> &'a mut Vec<Rec> {
    // SAFETY: the caller's.
    unsafe { &mut *(user as *mut Vec<Rec>) }
}

macro_rules! push {
    ($user:expr, $rec:expr) => {{
        // SAFETY: libotf2 passes back the `Vec<Rec>` registered for this location's reader.
        unsafe { recs($user) }.push($rec);
        CALLBACK_SUCCESS
    }};
}

extern "C" fn ev_enter(_: u64, t: u64, _: u64, u: *mut c_void, _: Al, region: u32) -> CallbackCode {
    push!(u, Rec::Enter { t, region })
}
extern "C" fn ev_leave(_: u64, t: u64, _: u64, u: *mut c_void, _: Al, region: u32) -> CallbackCode {
    push!(u, Rec::Leave { t, region })
}
extern "C" fn ev_send(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    peer: u32,
    comm: u32,
    tag: u32,
    bytes: u64,
) -> CallbackCode {
    push!(
        u,
        Rec::Send {
            t,
            peer,
            comm,
            tag,
            bytes
        }
    )
}
extern "C" fn ev_recv(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    peer: u32,
    comm: u32,
    tag: u32,
    bytes: u64,
) -> CallbackCode {
    push!(
        u,
        Rec::Recv {
            t,
            peer,
            comm,
            tag,
            bytes
        }
    )
}
extern "C" fn ev_isend(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    peer: u32,
    comm: u32,
    tag: u32,
    bytes: u64,
    req: u64,
) -> CallbackCode {
    push!(
        u,
        Rec::Isend {
            t,
            peer,
            comm,
            tag,
            bytes,
            req
        }
    )
}
extern "C" fn ev_irecv(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    peer: u32,
    comm: u32,
    tag: u32,
    bytes: u64,
    req: u64,
) -> CallbackCode {
    push!(
        u,
        Rec::Irecv {
            t,
            peer,
            comm,
            tag,
            bytes,
            req
        }
    )
}
extern "C" fn ev_isend_complete(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    req: u64,
) -> CallbackCode {
    push!(u, Rec::IsendComplete { t, req })
}
extern "C" fn ev_irecv_request(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    req: u64,
) -> CallbackCode {
    push!(u, Rec::IrecvRequest { t, req })
}
extern "C" fn ev_cancelled(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    req: u64,
) -> CallbackCode {
    push!(u, Rec::RequestCancelled { t, req })
}
extern "C" fn ev_coll_begin(_: u64, t: u64, _: u64, u: *mut c_void, _: Al) -> CallbackCode {
    push!(u, Rec::CollBegin { t })
}
extern "C" fn ev_coll_end(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    op: u8,
    comm: u32,
    root: u32,
    sent: u64,
    received: u64,
) -> CallbackCode {
    push!(
        u,
        Rec::CollEnd {
            t,
            op,
            comm,
            root: (root != UNDEFINED_UINT32).then_some(root),
            sent,
            received
        }
    )
}
extern "C" fn ev_measurement(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    mode: u8,
) -> CallbackCode {
    push!(
        u,
        Rec::Measurement {
            t,
            on: mode != MEASUREMENT_OFF
        }
    )
}
#[allow(clippy::too_many_arguments)]
extern "C" fn ev_rma_put(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    win: u32,
    peer: u32,
    bytes: u64,
    req: u64,
) -> CallbackCode {
    push!(
        u,
        Rec::RmaPut {
            t,
            win,
            peer,
            bytes,
            req
        }
    )
}
#[allow(clippy::too_many_arguments)]
extern "C" fn ev_rma_get(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    win: u32,
    peer: u32,
    bytes: u64,
    req: u64,
) -> CallbackCode {
    push!(
        u,
        Rec::RmaGet {
            t,
            win,
            peer,
            bytes,
            req
        }
    )
}
#[allow(clippy::too_many_arguments)]
extern "C" fn ev_rma_atomic(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    win: u32,
    peer: u32,
    _kind: u8,
    sent: u64,
    received: u64,
    req: u64,
) -> CallbackCode {
    push!(
        u,
        Rec::RmaAtomic {
            t,
            win,
            peer,
            sent,
            received,
            req
        }
    )
}
extern "C" fn ev_rma_complete(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    win: u32,
    req: u64,
) -> CallbackCode {
    push!(u, Rec::RmaComplete { t, win, req })
}
extern "C" fn ev_nbc_request(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    req: u64,
) -> CallbackCode {
    push!(u, Rec::NbcRequest { t, req })
}
#[allow(clippy::too_many_arguments)]
extern "C" fn ev_nbc_complete(
    _: u64,
    t: u64,
    _: u64,
    u: *mut c_void,
    _: Al,
    op: u8,
    comm: u32,
    root: u32,
    sent: u64,
    received: u64,
    req: u64,
) -> CallbackCode {
    push!(
        u,
        Rec::NbcComplete {
            t,
            op,
            comm,
            root: (root != UNDEFINED_UINT32).then_some(root),
            sent,
            received,
            req
        }
    )
}

/// A reader, closed (whatever happens) when dropped.
struct ReadArchive(*mut OTF2_Reader);

impl Drop for ReadArchive {
    fn drop(&mut self) {
        // SAFETY: the handle came from OTF2_Reader_Open and is closed only here; closing
        // releases its readers too.
        unsafe {
            OTF2_Reader_Close(self.0);
        }
    }
}

/// Reads the archive whose anchor file is `anchor`, timestamps as each location recorded
/// them (clock offsets not applied: durations on one rank are what the workload needs).
pub(crate) fn read(anchor: &Path, apply_clock_offsets: bool) -> Result<Archive, Otf2Error> {
    let rd = open_reader(anchor)?;
    let d = read_global_defs(&rd, anchor)?;
    let mut locations: Vec<Location> = d
        .locations
        .iter()
        .map(|&(id, name)| Location {
            id,
            name: d.string(name),
            host: String::new(),
            clock_offsets: Vec::<ClockOffset>::new(),
            events: Vec::new(),
        })
        .collect();
    if !locations.is_empty() {
        read_events(&rd, &mut locations, apply_clock_offsets)?;
    }
    drop(rd);
    assemble(&d, locations, anchor)
}

/// The open reader of the archive at `anchor`.
fn open_reader(anchor: &Path) -> Result<ReadArchive, Otf2Error> {
    if !anchor.is_file() {
        return Err(Otf2Error::Io {
            path: anchor.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such anchor file"),
        });
    }
    let c = cstring(&anchor.to_string_lossy());
    // SAFETY: a valid C string for the duration of the call.
    let raw = unsafe { OTF2_Reader_Open(c.as_ptr()) };
    if raw.is_null() {
        return Err(Otf2Error::Open {
            path: anchor.to_path_buf(),
        });
    }
    Ok(ReadArchive(raw))
}

/// The archive's global definitions.
fn read_global_defs(rd: &ReadArchive, anchor: &Path) -> Result<Defs, Otf2Error> {
    let mut d = Defs {
        resolution: 1_000_000_000,
        ..Defs::default()
    };
    // SAFETY: `rd.0` is an open reader; the callbacks struct outlives the read; `d` outlives
    // every callback, which all run inside ReadAllGlobalDefinitions.
    unsafe {
        check(
            "OTF2_Reader_SetSerialCollectiveCallbacks",
            OTF2_Reader_SetSerialCollectiveCallbacks(rd.0),
        )?;
        let gd = OTF2_Reader_GetGlobalDefReader(rd.0);
        if gd.is_null() {
            return Err(Otf2Error::Open {
                path: anchor.to_path_buf(),
            });
        }
        let cb = OTF2_GlobalDefReaderCallbacks_New();
        OTF2_GlobalDefReaderCallbacks_SetStringCallback(cb, gd_string);
        OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cb, gd_region);
        OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cb, gd_location);
        OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cb, gd_group);
        OTF2_GlobalDefReaderCallbacks_SetCommCallback(cb, gd_comm);
        OTF2_GlobalDefReaderCallbacks_SetRmaWinCallback(cb, gd_rma_win);
        OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cb, gd_clock);
        let r = OTF2_Reader_RegisterGlobalDefCallbacks(
            rd.0,
            gd,
            cb,
            &mut d as *mut Defs as *mut c_void,
        );
        OTF2_GlobalDefReaderCallbacks_Delete(cb);
        check("OTF2_Reader_RegisterGlobalDefCallbacks", r)?;
        let mut n = 0u64;
        check(
            "OTF2_Reader_ReadAllGlobalDefinitions",
            OTF2_Reader_ReadAllGlobalDefinitions(rd.0, gd, &mut n),
        )?;
        check(
            "OTF2_Reader_CloseGlobalDefReader",
            OTF2_Reader_CloseGlobalDefReader(rd.0, gd),
        )?;
    }
    Ok(d)
}

/// Reads every location's events into its `events`.
fn read_events(
    rd: &ReadArchive,
    locations: &mut [Location],
    apply_clock_offsets: bool,
) -> Result<(), Otf2Error> {
    // SAFETY: the reader is open; every event reader is used inside this block, with its
    // `Vec<Rec>` alive and unaliased for the whole ReadAllLocalEvents that fills it.
    unsafe {
        let evts = event_readers(rd, locations)?;
        let cb = event_callbacks();
        let mut result = Ok(());
        for (l, &er) in locations.iter_mut().zip(&evts) {
            result = (|| {
                check(
                    "OTF2_EvtReader_ApplyClockOffsets",
                    OTF2_EvtReader_ApplyClockOffsets(er, apply_clock_offsets),
                )?;
                check(
                    "OTF2_Reader_RegisterEvtCallbacks",
                    OTF2_Reader_RegisterEvtCallbacks(
                        rd.0,
                        er,
                        cb,
                        &mut l.events as *mut Vec<Rec> as *mut c_void,
                    ),
                )?;
                let mut n = 0u64;
                check(
                    "OTF2_Reader_ReadAllLocalEvents",
                    OTF2_Reader_ReadAllLocalEvents(rd.0, er, &mut n),
                )
            })();
            if result.is_err() {
                break;
            }
        }
        OTF2_EvtReaderCallbacks_Delete(cb);
        for er in evts {
            OTF2_Reader_CloseEvtReader(rd.0, er);
        }
        OTF2_Reader_CloseEvtFiles(rd.0);
        result
    }
}

/// Selects every location and opens its event reader (after its local definitions, which
/// hold the mapping tables, Score-P's local ids to global ones, that the event reader applies).
///
/// # Safety
/// `rd` is open; the caller closes the event readers and the event files.
unsafe fn event_readers(
    rd: &ReadArchive,
    locations: &[Location],
) -> Result<Vec<*mut OTF2_EvtReader>, Otf2Error> {
    // SAFETY: the caller's; each definition reader is closed here after its read.
    unsafe {
        for l in locations {
            check(
                "OTF2_Reader_SelectLocation",
                OTF2_Reader_SelectLocation(rd.0, l.id),
            )?;
        }
        let defs_open = OTF2_Reader_OpenDefFiles(rd.0) == SUCCESS;
        check("OTF2_Reader_OpenEvtFiles", OTF2_Reader_OpenEvtFiles(rd.0))?;
        let mut evts = Vec::with_capacity(locations.len());
        for l in locations {
            if defs_open {
                let dr = OTF2_Reader_GetDefReader(rd.0, l.id);
                if !dr.is_null() {
                    let mut n = 0u64;
                    check(
                        "OTF2_Reader_ReadAllLocalDefinitions",
                        OTF2_Reader_ReadAllLocalDefinitions(rd.0, dr, &mut n),
                    )?;
                    OTF2_Reader_CloseDefReader(rd.0, dr);
                }
            }
            let er = OTF2_Reader_GetEvtReader(rd.0, l.id);
            if er.is_null() {
                return Err(Otf2Error::Library {
                    call: "OTF2_Reader_GetEvtReader",
                    code: 0,
                    message: format!("no event reader for location {}", l.id),
                });
            }
            evts.push(er);
        }
        if defs_open {
            OTF2_Reader_CloseDefFiles(rd.0);
        }
        Ok(evts)
    }
}

/// The event callbacks of every record the model keeps; the caller deletes them.
fn event_callbacks() -> *mut OTF2_EvtReaderCallbacks {
    // SAFETY: a fresh callbacks struct, given functions of the signatures libotf2 expects.
    unsafe {
        let cb = OTF2_EvtReaderCallbacks_New();
        OTF2_EvtReaderCallbacks_SetEnterCallback(cb, ev_enter);
        OTF2_EvtReaderCallbacks_SetLeaveCallback(cb, ev_leave);
        OTF2_EvtReaderCallbacks_SetMpiSendCallback(cb, ev_send);
        OTF2_EvtReaderCallbacks_SetMpiRecvCallback(cb, ev_recv);
        OTF2_EvtReaderCallbacks_SetMpiIsendCallback(cb, ev_isend);
        OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(cb, ev_irecv);
        OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback(cb, ev_isend_complete);
        OTF2_EvtReaderCallbacks_SetMpiIrecvRequestCallback(cb, ev_irecv_request);
        OTF2_EvtReaderCallbacks_SetMpiRequestCancelledCallback(cb, ev_cancelled);
        OTF2_EvtReaderCallbacks_SetMpiCollectiveBeginCallback(cb, ev_coll_begin);
        OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(cb, ev_coll_end);
        OTF2_EvtReaderCallbacks_SetMeasurementOnOffCallback(cb, ev_measurement);
        OTF2_EvtReaderCallbacks_SetRmaPutCallback(cb, ev_rma_put);
        OTF2_EvtReaderCallbacks_SetRmaGetCallback(cb, ev_rma_get);
        OTF2_EvtReaderCallbacks_SetRmaAtomicCallback(cb, ev_rma_atomic);
        OTF2_EvtReaderCallbacks_SetRmaOpCompleteRemoteCallback(cb, ev_rma_complete);
        OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveRequestCallback(cb, ev_nbc_request);
        OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveCompleteCallback(cb, ev_nbc_complete);
        cb
    }
}

/// The archive from its definitions and its locations' events.
fn assemble(d: &Defs, locations: Vec<Location>, anchor: &Path) -> Result<Archive, Otf2Error> {
    // Regions and communicators indexed by their OTF2 references (dense in the archives
    // libotf2's writers make); a reference far beyond any real table is refused rather than
    // allocated for.
    const MAX_REF: u32 = 1 << 24;
    if let Some(&k) = d
        .regions
        .keys()
        .chain(d.comms.keys())
        .chain(d.windows.keys())
        .find(|&&k| k >= MAX_REF)
    {
        return Err(Otf2Error::Refused {
            path: anchor.to_path_buf(),
            message: format!("definition reference {k} is beyond {MAX_REF}"),
        });
    }
    let mpi_ranks: Vec<u64> = d
        .groups
        .values()
        .find(|g| g.0 == GROUP_TYPE_COMM_LOCATIONS && g.1 == PARADIGM_MPI)
        .map(|g| g.2.clone())
        .unwrap_or_default();
    // Refs are bounded (MAX_REF), so the tables are small.
    let win_len = d.windows.keys().next_back().map_or(0, |&k| k as usize + 1);
    let mut windows = vec![UNDEFINED_UINT32; win_len];
    for (&id, &comm) in &d.windows {
        windows[id as usize] = comm;
    }
    Ok(Archive {
        timer_resolution: d.resolution,
        regions: d.region_table(),
        comms: d.comm_table(),
        windows,
        mpi_ranks,
        locations,
    })
}

impl Defs {
    /// String `id`, empty when the archive does not define it.
    fn string(&self, id: u32) -> String {
        self.strings.get(&id).cloned().unwrap_or_default()
    }

    /// The regions, indexed by reference (bounded by the caller).
    fn region_table(&self) -> Vec<Region> {
        let region_len = self
            .regions
            .keys()
            .next_back()
            .map_or(0, |&k| k as usize + 1);
        let mut regions = vec![
            Region {
                name: String::new(),
                role: 0,
                mpi: false,
            };
            region_len
        ];
        for (&id, &(name, role, paradigm)) in &self.regions {
            regions[id as usize] = Region {
                name: self.string(name),
                role,
                mpi: paradigm == PARADIGM_MPI,
            };
        }
        regions
    }

    /// The communicators, indexed by reference (bounded by the caller), each with its group's
    /// members (none when the group is not a communicator group).
    fn comm_table(&self) -> Vec<Comm> {
        let comm_len = self.comms.keys().next_back().map_or(0, |&k| k as usize + 1);
        let mut comms = vec![
            Comm {
                name: String::new(),
                members: Vec::new(),
            };
            comm_len
        ];
        for (&id, &(name, group)) in &self.comms {
            let members = match self.groups.get(&group) {
                Some((kind, _, m)) if *kind == GROUP_TYPE_COMM_GROUP => {
                    m.iter().map(|&x| x as u32).collect()
                }
                _ => Vec::new(),
            };
            comms[id as usize] = Comm {
                name: self.string(name),
                members,
            };
        }
        comms
    }
}
