//! The NAS-pattern skeletons of `apps/nas/` (the sensitivity study's programs):
//! each is compiled here with Open MPI's mpicc, run with 4 ranks under `commperf monitor`, and
//! must (a) verify its own data (checksum equal to the expected one, exit 0), and (b) send
//! exactly the point-to-point messages its pattern's formula gives for its parameters, pair by
//! pair and size by size, with exactly the collectives it documents. A run with one flipped bit
//! must say WRONG and exit 1, so a broken run is detectable. Without Open MPI each test skips
//! with a message, unless `COMMPERF_REQUIRE_MPI=1` (CI) makes that a failure. The kit also
//! builds and verifies with MPICH's compiler (`commperf app` runs it on MPICH stacks).

mod mpi_apps;
use mpi_apps::{exe, need, ok, text, Scratch};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RANKS: u64 = 4;

fn nas_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../apps/nas")
}

fn build(s: &Scratch, name: &str) -> PathBuf {
    let out = s.0.join(name);
    let o = Command::new("mpicc.openmpi")
        .args(["-O2", "-Wall", "-Werror", "-I"])
        .arg(nas_dir())
        .arg("-o")
        .arg(&out)
        .arg(nas_dir().join(format!("{name}.c")))
        .output()
        .expect("run mpicc.openmpi");
    assert!(o.status.success(), "mpicc {name}.c: {}", text(&o.stderr));
    out
}

fn mpirun(prog: &Path, args: &[&str]) -> Command {
    let mut c = Command::new("timeout");
    c.args([
        "-k",
        "10",
        "300",
        "mpirun.openmpi",
        "-np",
        "4",
        "--oversubscribe",
    ])
    .arg(prog)
    .args(args)
    .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
    .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

/// `commperf monitor -o DIR -- mpirun … PROG ARGS`.
fn monitored(s: &Scratch, prog: &Path, args: &[&str]) -> (Output, Value) {
    let dir = s.0.join("mon");
    let run = mpirun(prog, args);
    let mut c = Command::new("timeout");
    c.args(["-k", "10", "300", exe(), "monitor", "-o"])
        .arg(&dir)
        .arg("--")
        .arg(run.get_program())
        .args(run.get_args())
        .envs(run.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .current_dir(&s.0);
    let o = c.output().expect("run commperf monitor");
    ok(&o);
    let j = serde_json::from_str(
        &std::fs::read_to_string(dir.join("summary.json")).expect("summary.json"),
    )
    .expect("JSON");
    (o, j)
}

/// The program's report line: its checksum must equal the expected one, and say OK.
fn verified(o: &Output, pattern: &str) -> String {
    let out = text(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("{pattern}: ")))
        .unwrap_or_else(|| panic!("no {pattern} line in:\n{out}\n{}", text(&o.stderr)))
        .to_string();
    let word = |w: &str| {
        let v: Vec<&str> = line.split_whitespace().collect();
        let i = v
            .iter()
            .position(|x| *x == w)
            .unwrap_or_else(|| panic!("{w} in {line}"));
        v[i + 1].to_string()
    };
    assert_eq!(word("checksum"), word("expected"), "{line}");
    assert_eq!(word("errors"), "0", "{line}");
    assert!(line.ends_with(" OK"), "{line}");
    line
}

/// Matched point-to-point messages per (src, dst, size bin), summed over calls.
fn pairs(j: &Value) -> BTreeMap<(u64, u64, u64), u64> {
    let mut m = BTreeMap::new();
    for p in j["pairs"].as_array().expect("pairs") {
        let k = (
            p["src"].as_u64().unwrap(),
            p["dst"].as_u64().unwrap(),
            p["size_bin"].as_u64().unwrap(),
        );
        *m.entry(k).or_insert(0) += p["count"].as_u64().unwrap();
    }
    m
}

fn calls(j: &Value, rank: u64, call: &str) -> u64 {
    j["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter(|c| c["rank"].as_u64() == Some(rank) && c["call"] == call)
        .map(|c| c["count"].as_u64().unwrap_or(0))
        .sum()
}

fn bin(bytes: u64) -> u64 {
    bytes.next_power_of_two()
}

fn check_exact(j: &Value, want: &BTreeMap<(u64, u64, u64), u64>) {
    assert_eq!(j["cut_short"], false, "{j}");
    assert_eq!(j["unmatched_sends"], 0, "{j}");
    assert_eq!(j["unmatched_recvs"], 0, "{j}");
    assert_eq!(j["drops"], 0, "{j}");
    let total: u64 = want.values().sum();
    assert_eq!(j["matched_messages"], total, "{j}");
    assert_eq!(&pairs(j), want, "per (src, dst, size bin)");
}

/// Rank of grid coordinates on a periodic rows × cols grid (row-major, as MPI_Cart_create
/// without reordering numbers them).
fn at(rows: u64, cols: u64, i: i64, j: i64) -> u64 {
    let i = i.rem_euclid(rows as i64) as u64;
    let j = j.rem_euclid(cols as i64) as u64;
    i * cols + j
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn halo_exchange_sends_four_edges_per_iteration() {
    need("halo", &["mpicc.openmpi", "mpirun.openmpi"]);
    let s = Scratch::new("nas", "halo");
    let prog = build(&s, "halo");
    let (n, iters) = (48u64, 25u64);
    let (o, j) = monitored(&s, &prog, &[&format!("n={n}"), &format!("iters={iters}")]);
    verified(&o, "halo");
    // MPI_Dims_create(4, 2) = 2 × 2; one message per direction per iteration.
    let (rows, cols) = (2, 2);
    let mut want = BTreeMap::new();
    for r in 0..RANKS {
        let (i, jj) = ((r / cols) as i64, (r % cols) as i64);
        for (di, dj) in [(-1, 0), (1, 0), (0, -1), (0, 1)] {
            let to = at(rows, cols, i + di, jj + dj);
            *want.entry((r, to, bin(n * 8))).or_insert(0) += iters;
        }
    }
    // On 2 × 2, north and south are one rank: 2 × iters to each of two neighbours, none to the
    // diagonal one.
    assert_eq!(want.get(&(0, 1, 512)), Some(&(2 * iters)));
    assert_eq!(want.get(&(0, 3, 512)), None);
    check_exact(&j, &want);
    for r in 0..RANKS {
        assert_eq!(calls(&j, r, "MPI_Isend"), 4 * iters, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Irecv"), 4 * iters, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Allreduce"), 2, "rank {r}");
    }
}

fn transpose(p2p: bool) {
    let test = if p2p {
        "transpose_p2p"
    } else {
        "transpose_alltoall"
    };
    need(test, &["mpicc.openmpi", "mpirun.openmpi"]);
    let s = Scratch::new("nas", test);
    let prog = build(&s, "transpose");
    let (elems, iters) = (1000u64, 12u64);
    let args = [
        format!("elems={elems}"),
        format!("iters={iters}"),
        format!("p2p={}", p2p as u8),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (o, j) = monitored(&s, &prog, &args);
    let line = verified(&o, "transpose");
    assert!(
        line.contains(if p2p { "isend-irecv" } else { "alltoall" }),
        "{line}"
    );
    let mut want = BTreeMap::new();
    if p2p {
        for a in 0..RANKS {
            for b in (0..RANKS).filter(|b| *b != a) {
                want.insert((a, b, bin(elems * 8)), iters);
            }
        }
    }
    check_exact(&j, &want);
    for r in 0..RANKS {
        let (isend, alltoall) = if p2p { (3 * iters, 0) } else { (0, iters) };
        assert_eq!(calls(&j, r, "MPI_Isend"), isend, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Alltoall"), alltoall, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Allreduce"), 1, "rank {r}");
    }
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn transpose_by_alltoall_moves_every_block_in_one_collective_per_iteration() {
    transpose(false);
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn transpose_by_isend_irecv_sends_one_block_to_every_other_rank_per_iteration() {
    transpose(true);
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn wavefront_pipelines_one_small_message_per_plane_and_neighbour() {
    need("wavefront", &["mpicc.openmpi", "mpirun.openmpi"]);
    let s = Scratch::new("nas", "wavefront");
    let prog = build(&s, "wavefront");
    // Different bx and by: row messages (to south and north) are by·8 bytes, column ones
    // (east and west) bx·8.
    let (bx, by, nz, iters) = (4u64, 12u64, 30u64, 3u64);
    let args = [
        format!("bx={bx}"),
        format!("by={by}"),
        format!("nz={nz}"),
        format!("iters={iters}"),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (o, j) = monitored(&s, &prog, &args);
    verified(&o, "wavefront");
    // 2 × 2, not periodic: forward to south (+2) and east (+1), backward to north and west.
    let cols = 2;
    let mut want = BTreeMap::new();
    for r in 0..RANKS {
        let (i, jj) = (r / cols, r % cols);
        if i == 0 {
            want.insert((r, r + cols, bin(by * 8)), nz * iters);
        } else {
            want.insert((r, r - cols, bin(by * 8)), nz * iters);
        }
        if jj == 0 {
            want.insert((r, r + 1, bin(bx * 8)), nz * iters);
        } else {
            want.insert((r, r - 1, bin(bx * 8)), nz * iters);
        }
    }
    check_exact(&j, &want);
    for r in 0..RANKS {
        assert_eq!(calls(&j, r, "MPI_Send"), 2 * nz * iters, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Recv"), 2 * nz * iters, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Allreduce"), 1, "rank {r}");
    }
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn cg_exchanges_with_both_ring_neighbours_and_reduces_its_dots() {
    need("cg", &["mpicc.openmpi", "mpirun.openmpi"]);
    let s = Scratch::new("nas", "cg");
    let prog = build(&s, "cg");
    let (m, hw, iters, dots) = (500u64, 3u64, 40u64, 3u64);
    let args = [
        format!("m={m}"),
        format!("hw={hw}"),
        format!("iters={iters}"),
        format!("dots={dots}"),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (o, j) = monitored(&s, &prog, &args);
    verified(&o, "cg");
    let mut want = BTreeMap::new();
    for r in 0..RANKS {
        want.insert((r, (r + 1) % RANKS, bin(hw * 8)), iters);
        want.insert((r, (r + RANKS - 1) % RANKS, bin(hw * 8)), iters);
    }
    check_exact(&j, &want);
    for r in 0..RANKS {
        assert_eq!(calls(&j, r, "MPI_Allreduce"), 2 + iters * dots, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Isend"), 2 * iters, "rank {r}");
    }
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn pipeline_streams_blocks_down_the_chain_and_back() {
    need("pipeline", &["mpicc.openmpi", "mpirun.openmpi"]);
    let s = Scratch::new("nas", "pipeline");
    let prog = build(&s, "pipeline");
    let (bs, blocks, iters) = (5u64, 6u64, 7u64);
    let args = [
        format!("bs={bs}"),
        format!("blocks={blocks}"),
        format!("iters={iters}"),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (o, j) = monitored(&s, &prog, &args);
    let line = verified(&o, "pipeline");
    assert!(line.contains("message 40 B"), "{line}");
    // Chain 0 - 1 - 2 - 3: `blocks` forward and `blocks` backward per iteration and link.
    let mut want = BTreeMap::new();
    for r in 0..RANKS - 1 {
        want.insert((r, r + 1, bin(bs * 8)), blocks * iters);
        want.insert((r + 1, r, bin(bs * 8)), blocks * iters);
    }
    check_exact(&j, &want);
    for r in 0..RANKS {
        let links = if r == 0 || r == RANKS - 1 { 1 } else { 2 };
        assert_eq!(
            calls(&j, r, "MPI_Isend"),
            links * blocks * iters,
            "rank {r}"
        );
        assert_eq!(
            calls(&j, r, "MPI_Irecv"),
            links * blocks * iters,
            "rank {r}"
        );
        assert_eq!(calls(&j, r, "MPI_Allreduce"), 1, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Send"), 0, "rank {r}");
    }
    // warmup=2: before the timed loop, two rounds of twice 64 messages of the largest size
    // (40 B) from every rank to every other rank (ranks paired by shifts: once to posted
    // receives, once ahead of them, a barrier between), and an allreduce a round.
    let warm: Vec<&str> = args.iter().copied().chain(["warmup=2"]).collect();
    let (o, j) = monitored(&s, &prog, &warm);
    verified(&o, "pipeline");
    for src in 0..RANKS {
        for dst in (0..RANKS).filter(|&d| d != src) {
            *want.entry((src, dst, bin(bs * 8))).or_default() += 2 * 2 * 64;
        }
    }
    check_exact(&j, &want);
    for r in 0..RANKS {
        let links = if r == 0 || r == RANKS - 1 { 1 } else { 2 };
        let sends = links * blocks * iters + 2 * 2 * 64 * (RANKS - 1);
        assert_eq!(calls(&j, r, "MPI_Isend"), sends, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Irecv"), sends, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Allreduce"), 1 + 2, "rank {r}");
        // The timed loop's, and one a warm-up round per shift.
        let barriers = 1 + 2 * (RANKS - 1);
        assert_eq!(calls(&j, r, "MPI_Barrier"), barriers, "rank {r}");
    }
}

#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn ep_sends_nothing_but_one_allreduce() {
    need("ep", &["mpicc.openmpi", "mpirun.openmpi"]);
    let s = Scratch::new("nas", "ep");
    let prog = build(&s, "ep");
    // An n that does not divide by 4: the slices still cover every item once.
    let (o, j) = monitored(&s, &prog, &["n=100003", "work=8"]);
    let line = verified(&o, "ep");
    // n(n-1)/2 = 5000250003 = 0x12a09c293.
    assert!(line.contains("checksum 000000012a09c293"), "{line}");
    check_exact(&j, &BTreeMap::new());
    for r in 0..RANKS {
        assert_eq!(calls(&j, r, "MPI_Allreduce"), 1, "rank {r}");
        assert_eq!(calls(&j, r, "MPI_Barrier"), 1, "rank {r}");
        assert_eq!(
            calls(&j, r, "MPI_Isend") + calls(&j, r, "MPI_Send"),
            0,
            "rank {r}"
        );
    }
}

/// The kit builds and verifies with MPICH's compiler too (`commperf app` runs it on MPICH
/// stacks); `-Werror` is left out there: gcc warns about MPICH's own MPI_STATUSES_IGNORE.
#[test]
#[cfg_attr(
    not(commperf_has_mpich),
    ignore = "needs MPICH (mpicc.mpich, mpirun.mpich: apt-get install libmpich-dev mpich)"
)]
fn the_kit_verifies_under_mpich() {
    need("kit_mpich", &["mpicc.mpich", "mpiexec.mpich"]);
    let s = Scratch::new("nas", "kit_mpich");
    for (name, args) in [
        ("halo", &["n=32", "iters=5"][..]),
        ("transpose", &["elems=100", "iters=3", "p2p=1"][..]),
        ("wavefront", &["nz=5", "iters=2"][..]),
        ("cg", &["m=100", "iters=5"][..]),
        ("pipeline", &["bs=4", "blocks=3", "iters=5"][..]),
        ("ep", &["n=1000", "work=4"][..]),
    ] {
        let prog = s.0.join(format!("{name}.mpich"));
        let o = Command::new("mpicc.mpich")
            .args(["-O2", "-I"])
            .arg(nas_dir())
            .arg("-o")
            .arg(&prog)
            .arg(nas_dir().join(format!("{name}.c")))
            .output()
            .expect("run mpicc.mpich");
        assert!(
            o.status.success(),
            "mpicc.mpich {name}.c: {}",
            text(&o.stderr)
        );
        let o = Command::new("timeout")
            .args(["-k", "10", "300", "mpiexec.mpich", "-n", "4"])
            .arg(&prog)
            .args(args)
            .output()
            .expect("mpiexec.mpich");
        ok(&o);
        verified(&o, name);
    }
}

/// One flipped bit in one received message: every program must notice, say WRONG and exit 1.
#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn a_corrupted_message_is_detected_by_every_program() {
    need("corrupt", &["mpicc.openmpi", "mpirun.openmpi"]);
    let s = Scratch::new("nas", "corrupt");
    for (name, args) in [
        ("halo", &["n=32", "iters=5"][..]),
        ("transpose", &["elems=100", "iters=3", "p2p=1"][..]),
        ("wavefront", &["nz=5", "iters=2"][..]),
        ("cg", &["m=100", "iters=5"][..]),
        ("pipeline", &["bs=4", "blocks=3", "iters=5"][..]),
        ("ep", &["n=1000", "work=4"][..]),
    ] {
        let prog = build(&s, name);
        let o = mpirun(&prog, args).output().expect("mpirun");
        ok(&o);
        verified(&o, name);
        let mut bad: Vec<&str> = args.to_vec();
        bad.push("corrupt=1");
        let o = mpirun(&prog, &bad).output().expect("mpirun");
        assert_eq!(o.status.code(), Some(1), "{name}: {}", text(&o.stdout));
        let out = text(&o.stdout);
        assert!(
            out.lines()
                .any(|l| l.starts_with(name) && l.ends_with(" WRONG")),
            "{name}: {out}"
        );
    }
}

/// A bad argument: exit 2 naming it, no output line.
#[test]
#[cfg_attr(
    not(commperf_has_openmpi),
    ignore = "needs Open MPI (mpicc.openmpi, mpirun.openmpi: apt-get install libopenmpi-dev openmpi-bin)"
)]
fn a_bad_argument_is_refused_naming_it() {
    need("badarg", &["mpicc.openmpi", "mpirun.openmpi"]);
    let s = Scratch::new("nas", "badarg");
    let prog = build(&s, "cg");
    for (arg, says) in [
        ("iters=x", "argument iters"),
        ("hw=0", "argument hw"),
        ("speed=3", "unknown argument speed=3"),
        ("warmup=-1", "argument warmup"),
        ("warmup=100001", "argument warmup"),
    ] {
        let o = mpirun(&prog, &[arg]).output().expect("mpirun");
        assert!(!o.status.success(), "{arg}");
        let err = text(&o.stderr);
        assert!(err.contains(says), "{arg}: {err}");
        assert!(!text(&o.stdout).contains("cg: "), "{arg}");
    }
}
