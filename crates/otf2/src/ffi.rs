//! The libotf2 (3.x) functions this crate calls, declared by hand from /usr/include/otf2/
//! (OTF2_Archive.h, OTF2_GlobalDefWriter.h, OTF2_DefWriter.h, OTF2_EvtWriter.h, OTF2_Reader.h
//! and the callback headers). Enumerations are the C typedefs' widths (uint8_t, or uint32_t
//! for flags); handles are opaque.

#![allow(non_camel_case_types, non_snake_case)]

use std::ffi::{c_char, c_void};

pub type ErrorCode = u32;
pub type CallbackCode = u32;
pub const SUCCESS: ErrorCode = 0;
pub const CALLBACK_SUCCESS: CallbackCode = 0;
pub const UNDEFINED_UINT32: u32 = u32::MAX;

pub const FILEMODE_WRITE: u8 = 0;
pub const SUBSTRATE_POSIX: u8 = 1;
pub const COMPRESSION_NONE: u8 = 1;
pub const FLUSH: u8 = 1;
pub const CHUNK_SIZE_EVENTS_DEFAULT: u64 = 1024 * 1024;
pub const CHUNK_SIZE_DEFINITIONS_DEFAULT: u64 = 4 * 1024 * 1024;

pub const GROUP_TYPE_COMM_LOCATIONS: u8 = 4;
pub const GROUP_TYPE_COMM_GROUP: u8 = 5;
pub const PARADIGM_MPI: u8 = 4;
pub const LOCATION_TYPE_CPU_THREAD: u8 = 1;
pub const LOCATION_GROUP_TYPE_PROCESS: u8 = 1;
pub const MEASUREMENT_ON: u8 = 1;
pub const MEASUREMENT_OFF: u8 = 2;
/// OTF2_RMA_ATOMIC_TYPE_FETCH_AND_ACCUMULATE: what commperf writes for a read-modify-write.
pub const RMA_ATOMIC_FETCH_AND_ACCUMULATE: u8 = 7;

#[repr(C)]
pub struct OTF2_Archive {
    _p: [u8; 0],
}
#[repr(C)]
pub struct OTF2_EvtWriter {
    _p: [u8; 0],
}
#[repr(C)]
pub struct OTF2_DefWriter {
    _p: [u8; 0],
}
#[repr(C)]
pub struct OTF2_GlobalDefWriter {
    _p: [u8; 0],
}
#[repr(C)]
pub struct OTF2_Reader {
    _p: [u8; 0],
}
#[repr(C)]
pub struct OTF2_EvtReader {
    _p: [u8; 0],
}
#[repr(C)]
pub struct OTF2_DefReader {
    _p: [u8; 0],
}
#[repr(C)]
pub struct OTF2_GlobalDefReader {
    _p: [u8; 0],
}
#[repr(C)]
pub struct OTF2_EvtReaderCallbacks {
    _p: [u8; 0],
}
#[repr(C)]
pub struct OTF2_GlobalDefReaderCallbacks {
    _p: [u8; 0],
}
#[repr(C)]
pub struct OTF2_AttributeList {
    _p: [u8; 0],
}

pub type PreFlush = extern "C" fn(*mut c_void, u8, u64, *mut c_void, bool) -> u8;
pub type PostFlush = extern "C" fn(*mut c_void, u8, u64) -> u64;

#[repr(C)]
pub struct OTF2_FlushCallbacks {
    pub pre_flush: PreFlush,
    pub post_flush: PostFlush,
}

/// (location, time, eventPosition, userData, attributeList) start every event callback.
pub type Al = *mut OTF2_AttributeList;
pub type CbEnter = extern "C" fn(u64, u64, u64, *mut c_void, Al, u32) -> CallbackCode;
pub type CbP2p = extern "C" fn(u64, u64, u64, *mut c_void, Al, u32, u32, u32, u64) -> CallbackCode;
pub type CbP2pReq =
    extern "C" fn(u64, u64, u64, *mut c_void, Al, u32, u32, u32, u64, u64) -> CallbackCode;
pub type CbReq = extern "C" fn(u64, u64, u64, *mut c_void, Al, u64) -> CallbackCode;
pub type CbTime = extern "C" fn(u64, u64, u64, *mut c_void, Al) -> CallbackCode;
pub type CbCollEnd =
    extern "C" fn(u64, u64, u64, *mut c_void, Al, u8, u32, u32, u64, u64) -> CallbackCode;
pub type CbMeasurement = extern "C" fn(u64, u64, u64, *mut c_void, Al, u8) -> CallbackCode;
pub type CbRma = extern "C" fn(u64, u64, u64, *mut c_void, Al, u32, u32, u64, u64) -> CallbackCode;
pub type CbRmaAtomic =
    extern "C" fn(u64, u64, u64, *mut c_void, Al, u32, u32, u8, u64, u64, u64) -> CallbackCode;
pub type CbRmaComplete = extern "C" fn(u64, u64, u64, *mut c_void, Al, u32, u64) -> CallbackCode;
pub type GdRmaWin = extern "C" fn(*mut c_void, u32, u32, u32, u32) -> CallbackCode;
pub type CbNbcComplete =
    extern "C" fn(u64, u64, u64, *mut c_void, Al, u8, u32, u32, u64, u64, u64) -> CallbackCode;

pub type GdString = extern "C" fn(*mut c_void, u32, *const c_char) -> CallbackCode;
pub type GdRegion =
    extern "C" fn(*mut c_void, u32, u32, u32, u32, u8, u8, u32, u32, u32, u32) -> CallbackCode;
pub type GdLocation = extern "C" fn(*mut c_void, u64, u32, u8, u64, u32) -> CallbackCode;
pub type GdGroup =
    extern "C" fn(*mut c_void, u32, u32, u8, u8, u32, u32, *const u64) -> CallbackCode;
pub type GdComm = extern "C" fn(*mut c_void, u32, u32, u32, u32, u32) -> CallbackCode;
pub type GdClock = extern "C" fn(*mut c_void, u64, u64, u64, u64) -> CallbackCode;

#[link(name = "otf2")]
extern "C" {
    pub fn OTF2_Error_GetName(code: ErrorCode) -> *const c_char;
    pub fn OTF2_Error_GetDescription(code: ErrorCode) -> *const c_char;

    // Writing.
    pub fn OTF2_Archive_Open(
        path: *const c_char,
        name: *const c_char,
        mode: u8,
        chunk_events: u64,
        chunk_defs: u64,
        substrate: u8,
        compression: u8,
    ) -> *mut OTF2_Archive;
    pub fn OTF2_Archive_Close(a: *mut OTF2_Archive) -> ErrorCode;
    pub fn OTF2_Archive_SetFlushCallbacks(
        a: *mut OTF2_Archive,
        cb: *const OTF2_FlushCallbacks,
        user: *mut c_void,
    ) -> ErrorCode;
    pub fn OTF2_Archive_SetSerialCollectiveCallbacks(a: *mut OTF2_Archive) -> ErrorCode;
    pub fn OTF2_Archive_SetCreator(a: *mut OTF2_Archive, creator: *const c_char) -> ErrorCode;
    pub fn OTF2_Archive_OpenEvtFiles(a: *mut OTF2_Archive) -> ErrorCode;
    pub fn OTF2_Archive_CloseEvtFiles(a: *mut OTF2_Archive) -> ErrorCode;
    pub fn OTF2_Archive_OpenDefFiles(a: *mut OTF2_Archive) -> ErrorCode;
    pub fn OTF2_Archive_CloseDefFiles(a: *mut OTF2_Archive) -> ErrorCode;
    pub fn OTF2_Archive_GetEvtWriter(a: *mut OTF2_Archive, loc: u64) -> *mut OTF2_EvtWriter;
    pub fn OTF2_Archive_CloseEvtWriter(a: *mut OTF2_Archive, w: *mut OTF2_EvtWriter) -> ErrorCode;
    pub fn OTF2_Archive_GetDefWriter(a: *mut OTF2_Archive, loc: u64) -> *mut OTF2_DefWriter;
    pub fn OTF2_Archive_CloseDefWriter(a: *mut OTF2_Archive, w: *mut OTF2_DefWriter) -> ErrorCode;
    pub fn OTF2_Archive_GetGlobalDefWriter(a: *mut OTF2_Archive) -> *mut OTF2_GlobalDefWriter;

    pub fn OTF2_DefWriter_WriteClockOffset(
        w: *mut OTF2_DefWriter,
        time: u64,
        offset: i64,
        std_dev: f64,
    ) -> ErrorCode;

    pub fn OTF2_GlobalDefWriter_WriteClockProperties(
        w: *mut OTF2_GlobalDefWriter,
        resolution: u64,
        global_offset: u64,
        trace_length: u64,
        realtime: u64,
    ) -> ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteString(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        s: *const c_char,
    ) -> ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteRegion(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        canonical: u32,
        description: u32,
        role: u8,
        paradigm: u8,
        flags: u32,
        file: u32,
        begin: u32,
        end: u32,
    ) -> ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteSystemTreeNode(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        class: u32,
        parent: u32,
    ) -> ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteLocationGroup(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        kind: u8,
        parent: u32,
        creating: u32,
    ) -> ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteLocation(
        w: *mut OTF2_GlobalDefWriter,
        id: u64,
        name: u32,
        kind: u8,
        events: u64,
        group: u32,
    ) -> ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteGroup(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        kind: u8,
        paradigm: u8,
        flags: u32,
        n: u32,
        members: *const u64,
    ) -> ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteComm(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        group: u32,
        parent: u32,
        flags: u32,
    ) -> ErrorCode;

    pub fn OTF2_EvtWriter_Enter(w: *mut OTF2_EvtWriter, al: Al, t: u64, region: u32) -> ErrorCode;
    pub fn OTF2_EvtWriter_Leave(w: *mut OTF2_EvtWriter, al: Al, t: u64, region: u32) -> ErrorCode;
    pub fn OTF2_EvtWriter_MpiSend(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        receiver: u32,
        comm: u32,
        tag: u32,
        len: u64,
    ) -> ErrorCode;
    pub fn OTF2_EvtWriter_MpiIsend(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        receiver: u32,
        comm: u32,
        tag: u32,
        len: u64,
        req: u64,
    ) -> ErrorCode;
    pub fn OTF2_EvtWriter_MpiIsendComplete(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        req: u64,
    ) -> ErrorCode;
    pub fn OTF2_EvtWriter_MpiIrecvRequest(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        req: u64,
    ) -> ErrorCode;
    pub fn OTF2_EvtWriter_MpiIrecv(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        sender: u32,
        comm: u32,
        tag: u32,
        len: u64,
        req: u64,
    ) -> ErrorCode;
    pub fn OTF2_EvtWriter_MpiRecv(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        sender: u32,
        comm: u32,
        tag: u32,
        len: u64,
    ) -> ErrorCode;
    pub fn OTF2_EvtWriter_MpiRequestCancelled(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        req: u64,
    ) -> ErrorCode;
    pub fn OTF2_EvtWriter_MpiCollectiveBegin(w: *mut OTF2_EvtWriter, al: Al, t: u64) -> ErrorCode;
    pub fn OTF2_EvtWriter_MpiCollectiveEnd(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        op: u8,
        comm: u32,
        root: u32,
        sent: u64,
        received: u64,
    ) -> ErrorCode;
    pub fn OTF2_EvtWriter_NonBlockingCollectiveRequest(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        req: u64,
    ) -> ErrorCode;
    #[allow(clippy::too_many_arguments)]
    pub fn OTF2_EvtWriter_NonBlockingCollectiveComplete(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        op: u8,
        comm: u32,
        root: u32,
        sent: u64,
        received: u64,
        req: u64,
    ) -> ErrorCode;
    pub fn OTF2_EvtWriter_MeasurementOnOff(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        mode: u8,
    ) -> ErrorCode;
    pub fn OTF2_EvtWriter_RmaPut(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        win: u32,
        remote: u32,
        bytes: u64,
        matching: u64,
    ) -> ErrorCode;
    pub fn OTF2_EvtWriter_RmaGet(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        win: u32,
        remote: u32,
        bytes: u64,
        matching: u64,
    ) -> ErrorCode;
    pub fn OTF2_EvtWriter_RmaAtomic(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        win: u32,
        remote: u32,
        kind: u8,
        sent: u64,
        received: u64,
        matching: u64,
    ) -> ErrorCode;
    pub fn OTF2_EvtWriter_RmaOpCompleteRemote(
        w: *mut OTF2_EvtWriter,
        al: Al,
        t: u64,
        win: u32,
        matching: u64,
    ) -> ErrorCode;
    pub fn OTF2_GlobalDefWriter_WriteRmaWin(
        w: *mut OTF2_GlobalDefWriter,
        id: u32,
        name: u32,
        comm: u32,
        flags: u32,
    ) -> ErrorCode;
    pub fn OTF2_GlobalDefReaderCallbacks_SetRmaWinCallback(
        c: *mut OTF2_GlobalDefReaderCallbacks,
        f: GdRmaWin,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetRmaAtomicCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbRmaAtomic,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetRmaOpCompleteRemoteCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbRmaComplete,
    ) -> ErrorCode;

    // Reading.
    pub fn OTF2_Reader_Open(path: *const c_char) -> *mut OTF2_Reader;
    pub fn OTF2_Reader_Close(r: *mut OTF2_Reader) -> ErrorCode;
    pub fn OTF2_Reader_SetSerialCollectiveCallbacks(r: *mut OTF2_Reader) -> ErrorCode;
    pub fn OTF2_Reader_GetGlobalDefReader(r: *mut OTF2_Reader) -> *mut OTF2_GlobalDefReader;
    pub fn OTF2_Reader_RegisterGlobalDefCallbacks(
        r: *mut OTF2_Reader,
        d: *mut OTF2_GlobalDefReader,
        cb: *const OTF2_GlobalDefReaderCallbacks,
        user: *mut c_void,
    ) -> ErrorCode;
    pub fn OTF2_Reader_ReadAllGlobalDefinitions(
        r: *mut OTF2_Reader,
        d: *mut OTF2_GlobalDefReader,
        n: *mut u64,
    ) -> ErrorCode;
    pub fn OTF2_Reader_CloseGlobalDefReader(
        r: *mut OTF2_Reader,
        d: *mut OTF2_GlobalDefReader,
    ) -> ErrorCode;
    pub fn OTF2_Reader_SelectLocation(r: *mut OTF2_Reader, loc: u64) -> ErrorCode;
    pub fn OTF2_Reader_OpenEvtFiles(r: *mut OTF2_Reader) -> ErrorCode;
    pub fn OTF2_Reader_CloseEvtFiles(r: *mut OTF2_Reader) -> ErrorCode;
    pub fn OTF2_Reader_OpenDefFiles(r: *mut OTF2_Reader) -> ErrorCode;
    pub fn OTF2_Reader_CloseDefFiles(r: *mut OTF2_Reader) -> ErrorCode;
    pub fn OTF2_Reader_GetEvtReader(r: *mut OTF2_Reader, loc: u64) -> *mut OTF2_EvtReader;
    pub fn OTF2_Reader_CloseEvtReader(r: *mut OTF2_Reader, e: *mut OTF2_EvtReader) -> ErrorCode;
    pub fn OTF2_Reader_GetDefReader(r: *mut OTF2_Reader, loc: u64) -> *mut OTF2_DefReader;
    pub fn OTF2_Reader_CloseDefReader(r: *mut OTF2_Reader, d: *mut OTF2_DefReader) -> ErrorCode;
    pub fn OTF2_Reader_ReadAllLocalDefinitions(
        r: *mut OTF2_Reader,
        d: *mut OTF2_DefReader,
        n: *mut u64,
    ) -> ErrorCode;
    pub fn OTF2_Reader_RegisterEvtCallbacks(
        r: *mut OTF2_Reader,
        e: *mut OTF2_EvtReader,
        cb: *const OTF2_EvtReaderCallbacks,
        user: *mut c_void,
    ) -> ErrorCode;
    pub fn OTF2_Reader_ReadAllLocalEvents(
        r: *mut OTF2_Reader,
        e: *mut OTF2_EvtReader,
        n: *mut u64,
    ) -> ErrorCode;
    pub fn OTF2_EvtReader_ApplyClockOffsets(e: *mut OTF2_EvtReader, apply: bool) -> ErrorCode;

    pub fn OTF2_GlobalDefReaderCallbacks_New() -> *mut OTF2_GlobalDefReaderCallbacks;
    pub fn OTF2_GlobalDefReaderCallbacks_Delete(c: *mut OTF2_GlobalDefReaderCallbacks);
    pub fn OTF2_GlobalDefReaderCallbacks_SetStringCallback(
        c: *mut OTF2_GlobalDefReaderCallbacks,
        f: GdString,
    ) -> ErrorCode;
    pub fn OTF2_GlobalDefReaderCallbacks_SetRegionCallback(
        c: *mut OTF2_GlobalDefReaderCallbacks,
        f: GdRegion,
    ) -> ErrorCode;
    pub fn OTF2_GlobalDefReaderCallbacks_SetLocationCallback(
        c: *mut OTF2_GlobalDefReaderCallbacks,
        f: GdLocation,
    ) -> ErrorCode;
    pub fn OTF2_GlobalDefReaderCallbacks_SetGroupCallback(
        c: *mut OTF2_GlobalDefReaderCallbacks,
        f: GdGroup,
    ) -> ErrorCode;
    pub fn OTF2_GlobalDefReaderCallbacks_SetCommCallback(
        c: *mut OTF2_GlobalDefReaderCallbacks,
        f: GdComm,
    ) -> ErrorCode;
    pub fn OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(
        c: *mut OTF2_GlobalDefReaderCallbacks,
        f: GdClock,
    ) -> ErrorCode;

    pub fn OTF2_EvtReaderCallbacks_New() -> *mut OTF2_EvtReaderCallbacks;
    pub fn OTF2_EvtReaderCallbacks_Delete(c: *mut OTF2_EvtReaderCallbacks);
    pub fn OTF2_EvtReaderCallbacks_SetEnterCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbEnter,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetLeaveCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbEnter,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetMpiSendCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbP2p,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetMpiRecvCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbP2p,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetMpiIsendCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbP2pReq,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetMpiIrecvCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbP2pReq,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetMpiIsendCompleteCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbReq,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetMpiIrecvRequestCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbReq,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetMpiRequestCancelledCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbReq,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetMpiCollectiveBeginCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbTime,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetMpiCollectiveEndCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbCollEnd,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetMeasurementOnOffCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbMeasurement,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetRmaPutCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbRma,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetRmaGetCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbRma,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveRequestCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbReq,
    ) -> ErrorCode;
    pub fn OTF2_EvtReaderCallbacks_SetNonBlockingCollectiveCompleteCallback(
        c: *mut OTF2_EvtReaderCallbacks,
        f: CbNbcComplete,
    ) -> ErrorCode;
}
