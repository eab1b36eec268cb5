//! Topology tests: exact routes for a few pairs, every route a connected full-duplex path for all
//! pairs of small instances, seeded choices, dot files (including a mutation fuzz) and rank maps.

use std::collections::HashSet;

use commperf_predict::topology::{
    build, Clos, Dot, FatTree, Network, RankMap, TopologyError, TopologySpec, Torus,
};

fn route(net: &dyn Network, a: u32, b: u32) -> Vec<u32> {
    let mut out = Vec::new();
    net.route(a, b, &mut out).expect("route");
    out
}

/// The route as `from>to` strings.
fn hops(net: &dyn Network, a: u32, b: u32) -> Vec<String> {
    route(net, a, b)
        .iter()
        .map(|&l| {
            let l = &net.links()[l as usize];
            format!("{}>{}", l.from, l.to)
        })
        .collect()
}

/// Every route is a connected path from src's host node to dst's, visits no node twice, and
/// the two directions of a pair use disjoint directed links.
fn check_all_pairs(net: &dyn Network) {
    let links = net.links();
    for a in 0..net.hosts() {
        for b in 0..net.hosts() {
            let r = route(net, a, b);
            if a == b {
                assert!(r.is_empty());
                continue;
            }
            assert!(!r.is_empty());
            assert_eq!(links[r[0] as usize].from, net.host_name(a), "{a}->{b}");
            assert_eq!(
                links[r[r.len() - 1] as usize].to,
                net.host_name(b),
                "{a}->{b}"
            );
            let mut seen = HashSet::new();
            seen.insert(links[r[0] as usize].from.clone());
            for w in r.windows(2) {
                assert_eq!(
                    links[w[0] as usize].to, links[w[1] as usize].from,
                    "{a}->{b}"
                );
            }
            for &l in &r {
                assert!(
                    seen.insert(links[l as usize].to.clone()),
                    "{a}->{b} revisits"
                );
            }
            let back: HashSet<u32> = route(net, b, a).into_iter().collect();
            assert!(
                r.iter().all(|l| !back.contains(l)),
                "{a}<->{b} share a link"
            );
        }
    }
}

fn classes(net: &dyn Network, r: &[u32]) -> Vec<String> {
    r.iter()
        .map(|&l| net.links()[l as usize].class.clone())
        .collect()
}

#[test]
fn clos_routes() {
    let net = Clos::new(16, 4, 7).unwrap();
    assert_eq!(net.hosts(), 16);
    assert_eq!(net.links().len(), 64);
    assert_eq!(hops(&net, 0, 3), ["h0>sw1_0", "sw1_0>h3"]);
    let s = net.uplink_choice(1).unwrap();
    assert_eq!(
        hops(&net, 1, 13),
        [
            "h1>sw1_0".to_string(),
            format!("sw1_0>sw2_{s}"),
            format!("sw2_{s}>sw1_3"),
            "sw1_3>h13".into()
        ]
    );
    assert_eq!(
        classes(&net, &route(&net, 1, 13)),
        ["host", "switch", "switch", "host"]
    );
    for a in 0..16 {
        for b in 0..16 {
            let n = route(&net, a, b).len();
            let want = if a == b {
                0
            } else if a / 4 == b / 4 {
                2
            } else {
                4
            };
            assert_eq!(n, want, "{a}->{b}");
        }
    }
    check_all_pairs(&net);
    check_all_pairs(&Clos::new(12, 3, 1).unwrap());
    check_all_pairs(&Clos::new(5, 1, 1).unwrap());
}

#[test]
fn clos_choices_are_seeded() {
    let a = Clos::new(16, 4, 42).unwrap();
    let b = Clos::new(16, 4, 42).unwrap();
    for s in 0..16 {
        for d in 0..16 {
            assert_eq!(route(&a, s, d), route(&b, s, d));
        }
    }
    // Different seeds give different choices somewhere, and some seed uses all four switches.
    let choices = |seed| {
        (0..16)
            .map(|h| Clos::new(16, 4, seed).unwrap().uplink_choice(h).unwrap())
            .collect::<Vec<_>>()
    };
    assert!((0..10).any(|s| choices(s) != choices(42)));
    assert!((0..10).any(|s| choices(s).iter().collect::<HashSet<_>>().len() == 4));
    assert!(Clos::new(16, 4, 1).unwrap().uplink_choice(16).is_none());
}

#[test]
fn fattree_routes() {
    let net = FatTree::new(4).unwrap();
    assert_eq!(net.hosts(), 16);
    assert_eq!(net.links().len(), 96);
    assert_eq!(hops(&net, 0, 1), ["h0>e0.0", "e0.0>h1"]);
    // Same pod, other edge switch: aggregation switch dst % 2 = 0.
    assert_eq!(
        hops(&net, 0, 2),
        ["h0>e0.0", "e0.0>a0.0", "a0.0>e0.1", "e0.1>h2"]
    );
    // Across pods: aggregation 7 % 2 = 1, core (1, (7/2) % 2 = 1).
    assert_eq!(
        hops(&net, 0, 7),
        [
            "h0>e0.0",
            "e0.0>a0.1",
            "a0.1>c1.1",
            "c1.1>a1.1",
            "a1.1>e1.1",
            "e1.1>h7"
        ]
    );
    assert_eq!(
        classes(&net, &route(&net, 0, 7)),
        ["host", "edge", "core", "core", "edge", "host"]
    );
    for a in 0..16 {
        for b in 0..16 {
            let want = if a == b {
                0
            } else if a / 2 == b / 2 {
                2
            } else if a / 4 == b / 4 {
                4
            } else {
                6
            };
            assert_eq!(route(&net, a, b).len(), want, "{a}->{b}");
        }
    }
    check_all_pairs(&net);
    check_all_pairs(&FatTree::new(2).unwrap());
    check_all_pairs(&FatTree::new(6).unwrap());
    // Routes towards one destination form a tree: each node has one way on.
    let net = FatTree::new(6).unwrap();
    for d in 0..net.hosts() {
        let mut next = std::collections::HashMap::new();
        for s in 0..net.hosts() {
            for l in route(&net, s, d) {
                let l = &net.links()[l as usize];
                assert_eq!(next.entry(l.from.clone()).or_insert(l.to.clone()), &l.to);
            }
        }
    }
}

#[test]
fn fattree_large_builds() {
    let net = FatTree::new(16).unwrap();
    assert_eq!(net.hosts(), 1024);
    let net = FatTree::new(64).unwrap();
    assert_eq!(net.hosts(), 65536);
    assert_eq!(net.links().len(), 393_216);
    let mut out = Vec::new();
    for s in (0..65536).step_by(997) {
        out.clear();
        net.route(s, 65535 - s, &mut out).unwrap();
        assert!(matches!(out.len(), 0 | 2 | 4 | 6));
    }
    assert!(net.route(0, 65536, &mut out).is_err());
    assert!(net.describe().contains("65536 hosts"));
    assert!(FatTree::new(3).is_err());
    assert!(
        FatTree::new(256).is_err(),
        "too large is an error, not an allocation failure"
    );
}

#[test]
fn torus_routes() {
    let net = Torus::new(&[4, 4]).unwrap();
    assert_eq!(net.hosts(), 16);
    // X first, then Y; 0 -> 5 = (0,0) -> (1,1).
    assert_eq!(
        hops(&net, 0, 5),
        ["h0>r0.0", "r0.0>r1.0", "r1.0>r1.1", "r1.1>h5"]
    );
    // Wraparound: (0,0) -> (3,0) is one hop backwards.
    assert_eq!(hops(&net, 0, 3), ["h0>r0.0", "r0.0>r3.0", "r3.0>h3"]);
    // Tie (distance 2 both ways) goes the positive way.
    assert_eq!(
        hops(&net, 3, 1),
        ["h3>r3.0", "r3.0>r0.0", "r0.0>r1.0", "r1.0>h1"]
    );
    assert_eq!(
        classes(&net, &route(&net, 0, 5)),
        ["host", "torus", "torus", "host"]
    );
    let ring = |a: u32, b: u32, n: u32| {
        let d = (b + n - a) % n;
        d.min(n - d)
    };
    for a in 0..16 {
        for b in 0..16 {
            let want = if a == b {
                0
            } else {
                2 + ring(a % 4, b % 4, 4) + ring(a / 4, b / 4, 4)
            };
            assert_eq!(route(&net, a, b).len() as u32, want, "{a}->{b}");
        }
    }
    check_all_pairs(&net);

    let net = Torus::new(&[3, 3, 3]).unwrap();
    assert_eq!(net.hosts(), 27);
    assert_eq!(
        hops(&net, 0, 26),
        [
            "h0>r0.0.0",
            "r0.0.0>r2.0.0",
            "r2.0.0>r2.2.0",
            "r2.2.0>r2.2.2",
            "r2.2.2>h26"
        ]
    );
    for a in 0..27 {
        for b in 0..27 {
            let c = |x: u32| [x % 3, (x / 3) % 3, x / 9];
            let (ca, cb) = (c(a), c(b));
            let want: u32 = if a == b {
                0
            } else {
                2 + (0..3).map(|i| ring(ca[i], cb[i], 3)).sum::<u32>()
            };
            assert_eq!(route(&net, a, b).len() as u32, want, "{a}->{b}");
        }
    }
    check_all_pairs(&net);
    check_all_pairs(&Torus::new(&[2, 3]).unwrap());
    check_all_pairs(&Torus::new(&[1, 5, 2]).unwrap());
    check_all_pairs(&Torus::new(&[1, 1]).unwrap());
    assert!(Torus::new(&[4]).is_err());
    assert!(Torus::new(&[4, 0]).is_err());
}

#[test]
fn build_from_specs() {
    let b = |s: &str| build(&s.parse::<TopologySpec>().unwrap(), 8, 3);
    assert_eq!(b("clos").unwrap().hosts(), 16);
    assert_eq!(b("clos:hosts=32,group=8").unwrap().hosts(), 32);
    assert_eq!(b("fattree:k=4").unwrap().hosts(), 16);
    assert_eq!(b("torus:4x4x2").unwrap().hosts(), 32);
    assert_eq!(b("crossbar").unwrap().hosts(), 8);
    assert!(b("torus:4096x4096").is_err());
    assert!(b("clos").unwrap().describe().contains("seed 3"));
    // The seed reaches the Clos choices.
    let routes = |seed| {
        let n = build(
            &TopologySpec::Clos {
                hosts: 16,
                group: 4,
            },
            16,
            seed,
        )
        .unwrap();
        (0..16)
            .map(|s| route(&n, s, (s + 4) % 16))
            .collect::<Vec<_>>()
    };
    assert_eq!(routes(5), routes(5));
    assert!((0..10).any(|s| routes(s) != routes(5)));
    let dot = env!("CARGO_MANIFEST_DIR").to_string() + "/tests/data/simplenet.dot";
    assert_eq!(b(&dot).unwrap().hosts(), 11);
}

fn simplenet() -> String {
    std::fs::read_to_string(env!("CARGO_MANIFEST_DIR").to_string() + "/tests/data/simplenet.dot")
        .unwrap()
}

fn file_err(r: Result<Dot, TopologyError>) -> (usize, usize, String) {
    match r {
        Err(TopologyError::File {
            line, column, why, ..
        }) => (line, column, why),
        other => panic!("expected a file error, got {other:?}"),
    }
}

#[test]
fn dot_simplenet() {
    let net = Dot::parse(&simplenet(), "simplenet.dot").unwrap();
    assert_eq!(net.hosts(), 11);
    assert_eq!(net.links().len(), 22);
    assert_eq!(net.host_name(10), "H10");
    assert_eq!(hops(&net, 0, 10), ["H0>S1", "S1>H10"]);
    assert_eq!(hops(&net, 10, 2), ["H10>S1", "S1>H2"]);
    assert_eq!(classes(&net, &route(&net, 0, 1)), ["host", "host"]);
    assert!(net.describe().contains("mycoolnetwork"));
    check_all_pairs(&net);
}

#[test]
fn dot_syntax() {
    // Two switches, quoted IDs, several attributes, classes, comments of every kind, chains,
    // node statements, edge defaults, first-appearance host order.
    let text = r#"
# a preprocessor-style line
/* a block
   comment */ digraph "two switches" {
    node [shape=box]; graph [rankdir=LR]
    rankdir = LR
    "b" -> S [comment="a", label=x]  // trailing comment
    a -> S [label="up"; comment=" b , c "]
    c -> S [comment="a,b"]
    S -> a [comment="a"]
    S -> T -> "c" [comment="c", class="trunk"]
    edge [class=slow]
    S -> b [comment="b"]
    T -> S [comment="a,b"]
    a
}
"#;
    let net = Dot::parse(text, "t.dot").unwrap();
    assert_eq!(net.hosts(), 3);
    assert_eq!(
        (0..3).map(|h| net.host_name(h)).collect::<Vec<_>>(),
        ["b", "a", "c"]
    );
    assert_eq!(hops(&net, 1, 2), ["a>S", "S>T", "T>c"]);
    assert_eq!(
        classes(&net, &route(&net, 1, 2)),
        ["host", "trunk", "trunk"]
    );
    assert_eq!(classes(&net, &route(&net, 1, 0)), ["host", "slow"]);
    // c's uplink lists only a and b; T -> S carries nothing towards c.
    assert_eq!(hops(&net, 2, 1), ["c>S", "S>a"]);
    // A missing comment entry is a NoRoute error.
    let text = "digraph { H0 -> S [comment=\"H1\"]; S -> H1 [comment=\"H1\"]; H1 -> S; }";
    let net = Dot::parse(text, "t.dot").unwrap();
    assert_eq!(net.hosts(), 2);
    let mut out = vec![99];
    assert!(matches!(
        net.route(1, 0, &mut out),
        Err(TopologyError::NoRoute { .. })
    ));
    assert_eq!(out, [99], "a failed route leaves `out` as it was");
    // A loop is an error, not a hang.
    let text =
        "digraph { H0 -> A [comment=H1]; A -> B [comment=H1]; B -> A [comment=H1]; H1 -> A }";
    let net = Dot::parse(text, "t.dot").unwrap();
    let err = net.route(0, 1, &mut Vec::new()).unwrap_err();
    assert!(err.to_string().contains("loop"), "{err}");

    // Undirected: each edge both ways, oriented towards the destinations it lists.
    // In a tree every cable may simply list every host.
    let all = "[comment=\"H0,H1,H2\"]";
    let text =
        format!("graph g {{ H0 -- S1 {all}; H1 -- S1 {all}; S1 -- S2 {all}; S2 -- H2 {all} }}");
    let net = Dot::parse(&text, "t.dot").unwrap();
    assert_eq!(net.links().len(), 8);
    assert_eq!(hops(&net, 0, 2), ["H0>S1", "S1>S2", "S2>H2"]);
    assert_eq!(hops(&net, 2, 1), ["H2>S2", "S2>S1", "S1>H1"]);
    check_all_pairs(&net);
    // Or only the destinations on the far side of some end: H0 -- S1 lists H0 (towards H0),
    // and H0's own uplink is found through the others.
    let text = "graph g { H0 -- S1 [comment=\"H0,H1,H2\"]; H1 -- S1 [comment=\"H0,H1,H2\"]; S1 -- S2 [comment=\"H0,H1,H2\"]; S2 -- H2 [comment=\"H0,H1,H2\"] }";
    let net = Dot::parse(text, "t.dot").unwrap();
    assert_eq!(net.links().len(), 8);
    assert_eq!(hops(&net, 0, 2), ["H0>S1", "S1>S2", "S2>H2"]);
    assert_eq!(hops(&net, 2, 1), ["H2>S2", "S2>S1", "S1>H1"]);
    assert_eq!(
        classes(&net, &route(&net, 0, 2)),
        ["host", "switch", "host"]
    );
    check_all_pairs(&net);
}

#[test]
fn dot_errors() {
    let cases: &[(&str, usize, usize, &str)] = &[
        ("digraph { H0 -> S [comment=\"H1\"] ", 1, 34, "missing `}`"),
        ("digraph {\n  H0 -- S }", 2, 6, "`--`"),
        ("graph {\n  H0 -> S }", 2, 6, "`->`"),
        ("digraph { subgraph x { H0 } }", 1, 11, "subgraph"),
        ("digraph { A -> {B C} }", 1, 16, "subgraph"),
        ("digraph { H0 -> S [comment=\"H9\"] }", 1, 28, "`H9`"),
        ("digraph { H0 -> S [comment=\"H1] }", 1, 28, "unterminated"),
        ("digraph { H0 -> S /* }", 1, 19, "unterminated"),
        ("digraph { H0 -> S } x", 1, 21, "one graph"),
        ("network { }", 1, 1, "`network`"),
        ("digraph { H0 -> S [comment=H1 = ] }", 1, 31, "`=`"),
        (
            "digraph { H0 -> S; S -> H0 [comment=H0]; S -> H1 [comment=\"H0\"] }",
            1,
            59,
            "two out-edges",
        ),
        ("digraph { H0 -> 3x }", 1, 17, "quoted"),
        ("digraph { H0 -> S @ }", 1, 19, "`@`"),
        ("digraph { A -> B }", 1, 1, "no hosts"),
        ("digraph { H0 -> S [class=\"\"] }", 1, 26, "class"),
    ];
    for (text, line, col, why) in cases {
        let (l, c, w) = file_err(Dot::parse(text, "t.dot"));
        assert_eq!((l, c), (*line, *col), "{text}: {w}");
        assert!(w.contains(why), "{text}: {w}");
    }
    let err = Dot::parse("digraph { H0 -> S @ }", "net.dot").unwrap_err();
    assert_eq!(err.to_string(), "net.dot:1:19: unexpected character `@`");
    assert!(matches!(
        Dot::from_file(std::path::Path::new("/nonexistent/x.dot")),
        Err(TopologyError::Io(_))
    ));
}

#[test]
fn dot_mutation_fuzz() {
    // Deterministic mutations of simplenet.dot: parsing and routing must never panic.
    let base: Vec<char> = simplenet().chars().collect();
    let alphabet: Vec<char> = "{}[];,=:-><\"#/*\\ \nHSx0123456789graphdigraphsubgraph"
        .chars()
        .collect();
    let mut state = 0x1234_5678_u64;
    let mut rnd = |n: usize| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 33) as usize) % n.max(1)
    };
    let (mut ok, mut bad) = (0, 0);
    for _ in 0..2000 {
        let mut t = base.clone();
        for _ in 0..1 + rnd(4) {
            let at = rnd(t.len() + 1);
            match rnd(5) {
                0 if at < t.len() => {
                    t.remove(at);
                }
                1 => t.insert(at, alphabet[rnd(alphabet.len())]),
                2 if at < t.len() => t[at] = alphabet[rnd(alphabet.len())],
                3 => t.truncate(at),
                _ => {
                    // Duplicate a slice somewhere else.
                    let from = rnd(t.len());
                    let len = rnd(40).min(t.len() - from.min(t.len()));
                    let piece: Vec<char> = t[from..from + len].to_vec();
                    let at = at.min(t.len());
                    t.splice(at..at, piece);
                }
            }
        }
        let text: String = t.into_iter().collect();
        match Dot::parse(&text, "m.dot") {
            Ok(net) => {
                ok += 1;
                let mut out = Vec::new();
                for a in 0..net.hosts() {
                    for b in 0..net.hosts() {
                        out.clear();
                        let _ = net.route(a, b, &mut out);
                    }
                    let _ = net.host_name(a);
                }
                let _ = net.describe();
            }
            Err(e) => {
                bad += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(ok > 0 && bad > 0, "ok {ok}, bad {bad}");
}

fn place(text: &str, net: &dyn Network) -> Result<RankMap, TopologyError> {
    RankMap::parse(text, "map.txt", net)
}

#[test]
fn rank_maps() {
    let net = Clos::new(16, 4, 1).unwrap();
    let map = place("# rank host\n0 h3\n2 5  # by index\n\n1 h3\n3 15\n", &net).unwrap();
    assert_eq!(map.0, [3, 3, 5, 15]);
    // Two ranks on one host cross no links.
    assert!(route(&net, map.0[0], map.0[1]).is_empty());

    let dot = Dot::parse(&simplenet(), "simplenet.dot").unwrap();
    assert_eq!(place("0 H10\n1 H0\n", &dot).unwrap().0, [10, 0]);

    let err = |text: &str| match place(text, &net) {
        Err(TopologyError::File {
            line, column, why, ..
        }) => (line, column, why),
        other => panic!("{text}: expected an error, got {other:?}"),
    };
    let (l, c, w) = err("0 h1\n2 h2\n3 h3\n");
    assert!(w.contains("rank 1 is not placed"), "{w}");
    assert_eq!((l, c), (3, 1));
    let (l, c, w) = err("0 h1\n  1 16\n");
    assert_eq!((l, c), (2, 5));
    assert!(w.contains("out of range"), "{w}");
    let (l, c, w) = err("0 h1\n1 h99\n");
    assert_eq!((l, c), (2, 3));
    assert!(w.contains("`h99`"), "{w}");
    let (l, c, w) = err("0 h1\nx h2\n");
    assert_eq!((l, c), (2, 1));
    assert!(w.contains("`x`"), "{w}");
    let (l, c, w) = err("0 h1\n0 h2\n");
    assert_eq!((l, c), (2, 1));
    assert!(w.contains("twice"), "{w}");
    let (l, c, w) = err("0 h1 extra\n");
    assert_eq!((l, c), (1, 6));
    assert!(w.contains("`extra`"), "{w}");
    let (_, _, w) = err("# nothing\n");
    assert!(w.contains("no ranks"), "{w}");
    let (_, _, w) = err("99999999999 h1\n");
    assert!(w.contains("rank"), "{w}");
    let (_, _, w) = err("4000000000 h1\n");
    assert!(w.contains("rank 0 is not placed"), "{w}");
    let (l, c, w) = err("0 h1\n1\n");
    assert_eq!((l, c), (2, 1));
    assert!(w.contains("found only `1`"), "{w}");

    // Removed when dropped, also when the assertion fails.
    struct Removed(std::path::PathBuf);
    impl Drop for Removed {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let map =
        Removed(std::env::temp_dir().join(format!("commperf-rankmap-{}", std::process::id())));
    std::fs::write(&map.0, "0 h0\n1 h0\n").unwrap();
    assert_eq!(RankMap::from_file(&map.0, &net).unwrap().0, [0, 0]);
    drop(map);
    assert!(matches!(
        RankMap::from_file(std::path::Path::new("/nonexistent/map"), &net),
        Err(TopologyError::Io(_))
    ));
}

#[test]
fn dot_loggopsim2_star_comments_and_hostnames() {
    // Cut from LogGOPSim2's tests/network/monch_topology.dot (see SOURCES.md), in its layout:
    // a host's only out-edge says `comment="*"` (everything goes there) and carries the host's
    // `hostname`, which LogGOPSim2's mapping files (`RANK NAME` per line) name ranks by.
    let path = env!("CARGO_MANIFEST_DIR").to_string() + "/tests/data/monch_small.dot";
    let net = Dot::from_file(std::path::Path::new(&path)).unwrap();
    assert_eq!(net.hosts(), 4);
    assert_eq!(net.host_name(0), "H1");
    assert_eq!(hops(&net, 0, 2), ["H1>S34", "S34>S31", "S31>H19"]);
    assert_eq!(hops(&net, 3, 1), ["H50>S31", "S31>S34", "S34>H10"]);
    check_all_pairs(&net);
    assert_eq!(net.host_aliases(2), ["monchc021"]);
    let map_path = env!("CARGO_MANIFEST_DIR").to_string() + "/tests/data/monch_small.map";
    let map = RankMap::from_file(std::path::Path::new(&map_path), &net).unwrap();
    // Rank 0 is monchc021 = H19 (host 2), rank 1 monchadmin01 = H1 (host 0), …
    let placed: Vec<String> = (0..4).map(|r| net.host_name(map.0[r])).collect();
    assert_eq!(placed, ["H19", "H1", "H50", "H10"]);

    // A node with one out-edge routes everything over it whatever its comment says, as
    // LogGOPSim2 does; `*` on a node with several out-edges is refused, naming the node.
    let net = Dot::parse(
        "digraph { H0 -> S [comment=\"H0\"]\n H1 -> S\n S -> H0 [comment=\"H0\"]\n \
         S -> H1 [comment=\"H1\"] }",
        "t.dot",
    )
    .unwrap();
    assert_eq!(hops(&net, 0, 1), ["H0>S", "S>H1"]);
    assert_eq!(hops(&net, 1, 0), ["H1>S", "S>H0"]);
    let (line, col, why) = file_err(Dot::parse(
        "digraph {\nH0 -> S\nH1 -> S\nS -> H0 [comment=\"*\"]\nS -> H1 [comment=\"H1\"] }",
        "t.dot",
    ));
    assert_eq!((line, col), (4, 18), "{why}");
    assert!(
        why.contains("`*` (everything) on an out-edge of `S`, which has 2 out-edges"),
        "{why}"
    );
    // Comment lists are split as LogGOPSim2's strtok(", \t\n") splits them.
    let net = Dot::parse(
        "digraph { H0 -> S [comment=\"*\"]\n H1 -> S [comment=\"*\"]\n H2 -> S [comment=\"*\"]\n \
         S -> T [comment=\"H1 H2\"]\n T -> H1 [comment=\"H1\"]\n T -> H2 [comment=\"H2\"]\n \
         S -> H0 [comment=\"H0\"]\n T -> S [comment=\"H0\"] }",
        "t.dot",
    )
    .unwrap();
    assert_eq!(hops(&net, 0, 2), ["H0>S", "S>T", "T>H2"]);
}

#[test]
fn dot_hosts_and_ranks_are_loggopsim2s() {
    // LogGOPSim2's TopoGraph: a host is a node whose name starts with `H` (digits or not), and
    // ranks follow the order nodes first appear (cgraph's), not the numbers in the names.
    let text = "digraph {\n\
        H10 -> S [comment=\"*\"]\n\
        Hx -> S [comment=\"*\"]\n\
        S -> T [comment=\"H2\"]\n\
        S -> H10 [comment=\"H10, T\"]\n\
        S -> Hx [comment=\"Hx\"]\n\
        T -> H2 [comment=\"H2\"]\n\
        H2 -> T [comment=\"*\"]\n\
        T -> S [comment=\"H10, Hx\"] }";
    let net = Dot::parse(text, "t.dot").unwrap();
    let names: Vec<String> = (0..net.hosts()).map(|h| net.host_name(h)).collect();
    // T is listed in a comment but is a switch, as LogGOPSim2 reads it.
    assert_eq!(names, ["H10", "Hx", "H2"]);
    assert_eq!(hops(&net, 1, 2), ["Hx>S", "S>T", "T>H2"]);
    check_all_pairs(&net);
    // A host first named in a comment is ranked where its node first appears.
    let net = Dot::parse(
        "digraph { H5 -> S [comment=\"*\"]\n S -> H3 [comment=\"H3\"]\n \
         S -> H5 [comment=\"H5\"]\n H3 -> S [comment=\"*\"] }",
        "t.dot",
    )
    .unwrap();
    assert_eq!(net.host_name(0), "H5");
    assert_eq!(net.host_name(1), "H3");
    // A file with no `H` node keeps commperf's convention: comment-listed names are hosts.
    let net = Dot::parse(
        "digraph { a -> S [comment=\"b\"]; b -> S [comment=\"a\"]; S -> a [comment=\"a\"]; \
         S -> b [comment=\"b\"] }",
        "t.dot",
    )
    .unwrap();
    assert_eq!(net.hosts(), 2);

    // One hostname on two hosts is reported where the second is given.
    let (line, col, why) = file_err(Dot::parse(
        "digraph {\nH0 -> S [hostname=\"n1\"]\nH1 -> S [hostname=\"n1\"]\nS -> H0 [comment=\"H0\"]\n\
         S -> H1 [comment=\"H1\"] }",
        "t.dot",
    ));
    assert_eq!((line, col), (3, 19), "{why}");
    assert!(
        why.contains("hostname `n1` is given to two hosts, `H0` and `H1`"),
        "{why}"
    );
}
