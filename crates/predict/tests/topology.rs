//! Topology tests: exact routes for a few pairs, every route a connected full-duplex path for all
//! pairs of small instances, seeded choices, dot files (including a mutation fuzz) and rank maps.

use std::collections::HashSet;

use commperf_predict::topology::{build, Clos, FatTree, Network, TopologySpec, Torus};

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
}
