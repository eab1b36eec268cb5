//! SimGrid platform files (the XML `smpirun -platform` reads), the subset that describes a
//! cluster or a flat network: so that a prediction runs over the same links as a SimGrid run.
//!
//! Read: `platform`, `zone` (or the older `AS`) with `routing="Full"`, `cluster` (one switch
//! and a private link per host, with an optional backbone), `host`, `link`, `route` with
//! `link_ctn`. Anything else — another element, another routing, an attribute not listed
//! here — is refused by name rather than silently ignored, since it would change the answer.
//!
//! Links keep SimGrid's sharing policies: `SHARED` (SimGrid's default for `link`: both
//! directions share one capacity) is one link used in both directions; `SPLITDUPLEX` (the
//! default of a cluster's private links; `FULLDUPLEX` is its old name) is two links, `_UP` and
//! `_DOWN`; `FATPIPE` gives every message the whole bandwidth. Each link carries its own
//! bandwidth and latency ([`Network::link_specs`]); its class is its id (for `--link`
//! overrides), `host` for a cluster's private links and `backbone` for its backbone.

use super::{Link, LinkSpec, Network, TopologyError};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// A network read from a SimGrid platform file.
#[derive(Debug, Clone)]
pub struct SimGridPlatform {
    name: String,
    hosts: Vec<(String, f64)>,
    links: Vec<Link>,
    specs: Vec<LinkSpec>,
    /// Per (src, dst) host pair with a route: its directed links.
    routes: HashMap<(u32, u32), Vec<u32>>,
    /// Clusters: (first host, host count, private links' UP ids (one per host), their DOWN ids,
    /// backbone).
    clusters: Vec<Cluster>,
}

#[derive(Debug, Clone)]
struct Cluster {
    first: u32,
    count: u32,
    up: Vec<u32>,
    down: Vec<u32>,
    backbone: Option<u32>,
}

/// A platform link as declared: its directed ids (UP, DOWN; equal when shared).
#[derive(Debug, Clone, Copy)]
struct Declared {
    up: u32,
    down: u32,
}

/// The route being read: its ends, whether it is symmetrical, per `link_ctn` its directed link
/// this way and the other way, and the directed links already listed (a route crossing one
/// link twice is a loop, refused).
struct PendingRoute {
    src: u32,
    dst: u32,
    symmetrical: bool,
    links: Vec<(u32, u32)>,
    seen: HashSet<u32>,
}

/// The deepest element nesting read. commperf reads at most `platform > zone > route >
/// link_ctn` (4); the bound is generous so that a file SimGrid reads is refused by what it
/// contains, while a hostile nesting is refused before anything walks it.
pub const MAX_DEPTH: usize = 32;

/// The walk over a parsed platform document.
struct Reader<'a, 'input> {
    file: &'a str,
    doc: &'a roxmltree::Document<'input>,
    p: SimGridPlatform,
    declared: HashMap<String, Declared>,
    host_ids: HashMap<String, u32>,
    route: Option<PendingRoute>,
}

impl SimGridPlatform {
    pub fn from_file(path: &Path) -> Result<SimGridPlatform, TopologyError> {
        let text = commperf_core::read_text(path).map_err(|e| TopologyError::Io(e.to_string()))?;
        SimGridPlatform::parse(&text, &path.display().to_string())
    }

    /// Parses a platform; `file` names it in errors. Linear in the file's size: the XML is
    /// parsed once (roxmltree), its nesting checked against [`MAX_DEPTH`], then walked once.
    pub fn parse(text: &str, file: &str) -> Result<SimGridPlatform, TopologyError> {
        // SimGrid's files start with `<!DOCTYPE platform SYSTEM "…simgrid.dtd">`; roxmltree
        // refuses a DTD unless allowed (it bounds entity expansion itself).
        let options = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..roxmltree::ParsingOptions::default()
        };
        let doc = roxmltree::Document::parse_with_options(text, options).map_err(|e| {
            let at = e.pos();
            TopologyError::File {
                file: file.to_string(),
                line: at.row as usize,
                column: at.col as usize,
                why: format!("not well-formed XML: {e}"),
            }
        })?;
        let mut r = Reader {
            file,
            doc: &doc,
            p: SimGridPlatform {
                name: file.to_string(),
                hosts: Vec::new(),
                links: Vec::new(),
                specs: Vec::new(),
                routes: HashMap::new(),
                clusters: Vec::new(),
            },
            declared: HashMap::new(),
            host_ids: HashMap::new(),
            route: None,
        };
        r.check_depth()?;
        let root = doc.root_element();
        r.element(root)?;
        r.walk(root)?;
        let p = r.p;
        if p.hosts.is_empty() {
            return Err(TopologyError::File {
                file: file.to_string(),
                line: 1,
                column: 1,
                why: "the platform declares no host".into(),
            });
        }
        super::check_size(file, p.links.len() as u64)?;
        Ok(p)
    }

    /// Adds a platform link: one directed link when shared, two (`_UP`, `_DOWN`) otherwise.
    fn declare(
        &mut self,
        a: &str,
        b: &str,
        bw: f64,
        lat: f64,
        policy: &str,
        class: &str,
    ) -> Result<Declared, String> {
        let spec = LinkSpec {
            bandwidth_bytes_per_ns: bw,
            latency_ns: lat,
            fatpipe: policy == "FATPIPE",
        };
        let mut add = |from: String, to: String| {
            self.links.push(Link {
                from,
                to,
                class: class.to_string(),
            });
            self.specs.push(spec);
            (self.links.len() - 1) as u32
        };
        match policy {
            "SHARED" | "FATPIPE" => {
                let id = add(a.to_string(), b.to_string());
                Ok(Declared { up: id, down: id })
            }
            "SPLITDUPLEX" | "FULLDUPLEX" => {
                let (a, b) = if a == b {
                    (format!("{a}_UP"), format!("{a}_DOWN"))
                } else {
                    (a.to_string(), b.to_string())
                };
                let up = add(a.clone(), b.clone());
                let down = add(b, a);
                Ok(Declared { up, down })
            }
            other => Err(format!(
                "sharing policy `{other}` is not read by commperf (SHARED, SPLITDUPLEX, FULLDUPLEX, FATPIPE)"
            )),
        }
    }
}

impl Reader<'_, '_> {
    /// A refusal at node `n`'s place.
    fn err(&self, n: roxmltree::Node<'_, '_>, why: String) -> TopologyError {
        let at = self.doc.text_pos_at(n.range().start);
        TopologyError::File {
            file: self.file.to_string(),
            line: at.row as usize,
            column: at.col as usize,
            why,
        }
    }

    /// Refuses a document nesting deeper than [`MAX_DEPTH`], at its first too-deep element,
    /// before anything recurses over it. One pass: a node's depth is its parent's plus one.
    fn check_depth(&self) -> Result<(), TopologyError> {
        let mut depth: Vec<u32> = Vec::new();
        for n in self.doc.descendants() {
            let d = n
                .parent()
                .and_then(|p| depth.get(p.id().get_usize()).copied())
                .map_or(0, |d| d + 1);
            let id = n.id().get_usize();
            if depth.len() <= id {
                depth.resize(id + 1, 0);
            }
            depth[id] = d;
            if n.is_element() && d as usize > MAX_DEPTH {
                return Err(self.err(
                    n,
                    format!(
                        "`<{}>` is nested {d} elements deep, deeper than the {MAX_DEPTH} read \
                         (commperf reads platform > zone > route > link_ctn)",
                        n.tag_name().name()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Reads `n`'s children in order (depth bounded by [`Reader::check_depth`]).
    fn walk(&mut self, n: roxmltree::Node<'_, '_>) -> Result<(), TopologyError> {
        for c in n.children() {
            if c.is_element() {
                self.element(c)?;
                self.walk(c)?;
                self.close(c);
            } else if c.is_text() && c.text().is_some_and(|t| !t.trim().is_empty()) {
                return Err(self.err(c, format!("text inside `<{}>`", n.tag_name().name())));
            }
        }
        Ok(())
    }

    /// After an element's children: a route is complete.
    fn close(&mut self, n: roxmltree::Node<'_, '_>) {
        if n.tag_name().name() != "route" {
            return;
        }
        if let Some(r) = self.route.take() {
            let routes = &mut self.p.routes;
            routes.insert((r.src, r.dst), r.links.iter().map(|l| l.0).collect());
            if r.symmetrical {
                routes
                    .entry((r.dst, r.src))
                    .or_insert_with(|| r.links.iter().rev().map(|l| l.1).collect());
            }
        }
    }

    /// Reads one element (its attributes; its children are walked after): checks that it is
    /// one commperf reads, where it is, with attributes it reads, then reads it.
    fn element(&mut self, t: roxmltree::Node<'_, '_>) -> Result<(), TopologyError> {
        let e = El {
            t,
            name: t.tag_name().name(),
            file: self.file,
            doc: self.doc,
        };
        e.check_attributes()?;
        match e.name {
            "platform" => Ok(()),
            "zone" | "AS" => {
                let routing = e.need("routing")?;
                if routing != "Full" {
                    return Err(e.err(format!(
                        "zone routing `{routing}` is not read by commperf (only Full: routes listed one by one)"
                    )));
                }
                Ok(())
            }
            "host" => self.host(&e),
            "link" => self.link(&e),
            "cluster" => self.cluster(&e),
            "route" => self.route(&e),
            "link_ctn" => self.link_ctn(&e),
            _ => unreachable!("checked by check_attributes"),
        }
    }

    fn host(&mut self, e: &El<'_, '_>) -> Result<(), TopologyError> {
        let id = e.need("id")?.to_string();
        let speed = speed(e.need("speed")?).map_err(|w| e.err(w))?;
        let h = self.p.hosts.len() as u32;
        if self.host_ids.insert(id.clone(), h).is_some() {
            return Err(e.err(format!("host `{id}` is declared twice")));
        }
        self.p.hosts.push((id, speed));
        Ok(())
    }

    fn link(&mut self, e: &El<'_, '_>) -> Result<(), TopologyError> {
        let id = e.need("id")?.to_string();
        let bw = bandwidth(e.need("bandwidth")?).map_err(|w| e.err(w))?;
        let lat = e
            .get("latency")
            .map_or(Ok(0.0), latency)
            .map_err(|w| e.err(w))?;
        let policy = e.get("sharing_policy").unwrap_or("SHARED");
        let d = self
            .p
            .declare(&id, &id, bw, lat, policy, &id)
            .map_err(|w| e.err(w))?;
        if self.declared.insert(id.clone(), d).is_some() {
            return Err(e.err(format!("link `{id}` is declared twice")));
        }
        Ok(())
    }

    /// A FLAT cluster: its hosts, each with its private link, and its backbone if it has one.
    fn cluster(&mut self, e: &El<'_, '_>) -> Result<(), TopologyError> {
        let err = |w: String| e.err(w);
        let id = e.need("id")?.to_string();
        if let Some(topo) = e.get("topology").filter(|v| *v != "FLAT") {
            return Err(err(format!(
                "cluster topology `{topo}` is not read by commperf (only FLAT)"
            )));
        }
        let (prefix, suffix) = (e.need("prefix")?, e.get("suffix").unwrap_or(""));
        let speed = speed(e.need("speed")?).map_err(err)?;
        let bw = bandwidth(e.need("bw")?).map_err(err)?;
        let lat = latency(e.need("lat")?).map_err(err)?;
        let policy = e.get("sharing_policy").unwrap_or("SPLITDUPLEX");
        let radical = radical(e.need("radical")?).map_err(err)?;
        let first = self.p.hosts.len() as u32;
        let mut c = Cluster {
            first,
            count: radical.len() as u32,
            up: Vec::new(),
            down: Vec::new(),
            backbone: None,
        };
        for i in radical {
            let name = format!("{prefix}{i}{suffix}");
            let h = self.p.hosts.len() as u32;
            if self.host_ids.insert(name.clone(), h).is_some() {
                return Err(err(format!("host `{name}` is declared twice")));
            }
            self.p.hosts.push((name.clone(), speed));
            let link = format!("{id}_link_{i}");
            let d = self
                .p
                .declare(&name, &id, bw, lat, policy, "host")
                .map_err(err)?;
            self.declared.insert(link, d);
            c.up.push(d.up);
            c.down.push(d.down);
        }
        if let Some(bb) = e.get("bb_bw") {
            c.backbone = Some(self.backbone(e, &id, bb)?);
        }
        self.p.clusters.push(c);
        Ok(())
    }

    /// Cluster `id`'s backbone of bandwidth `bb`: its one (directed) link.
    fn backbone(&mut self, e: &El<'_, '_>, id: &str, bb: &str) -> Result<u32, TopologyError> {
        let err = |w: String| e.err(w);
        let bb_bw = bandwidth(bb).map_err(err)?;
        let bb_lat = e.get("bb_lat").map_or(Ok(0.0), latency).map_err(err)?;
        let policy = e.get("bb_sharing_policy").unwrap_or("SHARED");
        if policy != "SHARED" && policy != "FATPIPE" {
            return Err(err(format!(
                "a backbone's sharing policy is SHARED or FATPIPE, not `{policy}`"
            )));
        }
        let bb_id = format!("{id}_backbone");
        let d = self
            .p
            .declare(&bb_id, &bb_id, bb_bw, bb_lat, policy, "backbone")
            .map_err(err)?;
        self.declared.insert(bb_id, d);
        Ok(d.up)
    }

    /// Opens a route; its `link_ctn` children fill it, and [`Reader::close`] files it.
    fn route(&mut self, e: &El<'_, '_>) -> Result<(), TopologyError> {
        let host = |k: &str| -> Result<u32, TopologyError> {
            let name = e.need(k)?;
            self.host_ids
                .get(name)
                .copied()
                .ok_or_else(|| e.err(format!("route {k} `{name}` is not a declared host")))
        };
        let (s, d) = (host("src")?, host("dst")?);
        let sym = match e.get("symmetrical").unwrap_or("YES") {
            "YES" | "yes" => true,
            "NO" | "no" => false,
            v => return Err(e.err(format!("symmetrical is YES or NO, not `{v}`"))),
        };
        self.route = Some(PendingRoute {
            src: s,
            dst: d,
            symmetrical: sym,
            links: Vec::new(),
            seen: HashSet::new(),
        });
        Ok(())
    }

    /// One link of the open route, in the direction it names.
    fn link_ctn(&mut self, e: &El<'_, '_>) -> Result<(), TopologyError> {
        let id = e.need("id")?;
        let dir = e.get("direction").unwrap_or("NONE");
        let pair = self.directed(e, id, dir)?;
        if let Some(r) = self.route.as_mut() {
            // The engine prices each link of a route once; a route through one link
            // twice loops, as the dot reader's routes that revisit a node do.
            if !r.seen.insert(pair.0) {
                return Err(e.err(format!(
                    "route `{}` -> `{}` lists link `{id}` twice (a route that loops)",
                    self.p.hosts[r.src as usize].0, self.p.hosts[r.dst as usize].0
                )));
            }
            r.links.push(pair);
        }
        Ok(())
    }

    /// Declared link `id` taken in direction `dir`: (this direction, the reverse route's
    /// direction). A split-duplex link is also named by its `_UP`/`_DOWN` halves.
    fn directed(&self, e: &El<'_, '_>, id: &str, dir: &str) -> Result<(u32, u32), TopologyError> {
        Ok(match (self.declared.get(id), dir) {
            (Some(d), "UP") => (d.up, d.down),
            (Some(d), "DOWN") => (d.down, d.up),
            (Some(d), "NONE") if d.up == d.down => (d.up, d.up),
            (Some(_), "NONE") => {
                return Err(e.err(format!(
                    "link `{id}` is split-duplex: give direction=\"UP\" or \"DOWN\""
                )))
            }
            (Some(_), other) => {
                return Err(e.err(format!("direction is UP or DOWN, not `{other}`")))
            }
            (None, _) => {
                let split = id
                    .strip_suffix("_UP")
                    .map(|b| (b, true))
                    .or(id.strip_suffix("_DOWN").map(|b| (b, false)));
                match split.and_then(|(b, up)| self.declared.get(b).map(|d| (d, up))) {
                    Some((d, true)) => (d.up, d.down),
                    Some((d, false)) => (d.down, d.up),
                    None => return Err(e.err(format!("link `{id}` is not declared"))),
                }
            }
        })
    }
}

/// One element being read: its attributes, and refusals at its place.
struct El<'a, 'input> {
    t: roxmltree::Node<'a, 'input>,
    name: &'a str,
    file: &'a str,
    doc: &'a roxmltree::Document<'input>,
}

impl<'a> El<'a, '_> {
    /// A refusal at the element's place. The position is found on a refusal only: it costs a
    /// scan from the file's start.
    fn err(&self, why: String) -> TopologyError {
        let at = self.doc.text_pos_at(self.t.range().start);
        TopologyError::File {
            file: self.file.to_string(),
            line: at.row as usize,
            column: at.col as usize,
            why,
        }
    }

    fn get(&self, k: &str) -> Option<&'a str> {
        self.t.attribute(k)
    }

    fn need(&self, k: &str) -> Result<&'a str, TopologyError> {
        self.get(k)
            .ok_or_else(|| self.err(format!("`<{}>` needs `{k}`", self.name)))
    }

    /// Refuses an element commperf does not read where it stands, and an attribute it does
    /// not read.
    fn check_attributes(&self) -> Result<(), TopologyError> {
        let parent = self.t.parent_element().map(|p| p.tag_name().name());
        let allowed: &[&str] = match (self.name, parent) {
            ("platform", None) => &["version"],
            ("zone" | "AS", Some("platform")) => &["id", "routing"],
            ("cluster", Some("platform" | "zone" | "AS")) => &[
                "id",
                "prefix",
                "suffix",
                "radical",
                "speed",
                "core",
                "bw",
                "lat",
                "sharing_policy",
                "bb_bw",
                "bb_lat",
                "bb_sharing_policy",
                "router_id",
                "topology",
            ],
            ("host", Some("zone" | "AS")) => &["id", "speed", "core"],
            ("link", Some("zone" | "AS")) => &["id", "bandwidth", "latency", "sharing_policy"],
            ("route", Some("zone" | "AS")) => &["src", "dst", "symmetrical"],
            ("link_ctn", Some("route")) => &["id", "direction"],
            (name, Some(parent)) => {
                return Err(self.err(format!(
                    "SimGrid element `<{name}>` inside `<{parent}>` is not read by commperf (it reads platform, zone routing=\"Full\", cluster, host, link, route, link_ctn)"
                )))
            }
            (name, None) => {
                return Err(self.err(format!(
                    "`<{name}>` at the top: a SimGrid platform file starts with `<platform>`"
                )))
            }
        };
        for a in self.t.attributes() {
            let k = a.name();
            if !allowed.contains(&k) {
                return Err(self.err(format!(
                    "attribute `{k}` of `<{}>` is not read by commperf (it reads {})",
                    self.name,
                    allowed.join(", ")
                )));
            }
        }
        Ok(())
    }
}

impl Network for SimGridPlatform {
    fn describe(&self) -> String {
        format!(
            "SimGrid platform {} ({} hosts, {} links)",
            self.name,
            self.hosts.len(),
            self.links.len()
        )
    }
    fn hosts(&self) -> u32 {
        self.hosts.len() as u32
    }
    fn links(&self) -> &[Link] {
        &self.links
    }
    fn host_name(&self, h: u32) -> String {
        self.hosts
            .get(h as usize)
            .map_or_else(|| format!("h{h}"), |x| x.0.clone())
    }
    fn route(&self, src: u32, dst: u32, out: &mut Vec<u32>) -> Result<(), TopologyError> {
        let n = self.hosts();
        if src >= n || dst >= n {
            return Err(super::no_such_host(src, dst, n));
        }
        if src == dst {
            return Ok(());
        }
        if let Some(r) = self.routes.get(&(src, dst)) {
            out.extend_from_slice(r);
            return Ok(());
        }
        for c in &self.clusters {
            let inside = |h: u32| h >= c.first && h < c.first + c.count;
            if inside(src) && inside(dst) {
                out.push(c.up[(src - c.first) as usize]);
                out.extend(c.backbone);
                out.push(c.down[(dst - c.first) as usize]);
                return Ok(());
            }
        }
        Err(TopologyError::NoRoute {
            from: self.host_name(src),
            to: self.host_name(dst),
            why: "the platform has no route between them".into(),
        })
    }
    fn link_specs(&self) -> Option<&[LinkSpec]> {
        Some(&self.specs)
    }
    fn host_speed(&self, h: u32) -> Option<f64> {
        self.hosts.get(h as usize).map(|x| x.1)
    }
}

/// A number with a unit from `units` (name, multiplier), longest names first; a bare number
/// takes `bare`.
fn with_unit(v: &str, what: &str, units: &[(&str, f64)], bare: f64) -> Result<f64, String> {
    let v = v.trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+')))
        .unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{v}` is not a {what} (a number and a unit)"))?;
    let mult = if unit.is_empty() {
        bare
    } else {
        units
            .iter()
            .find(|u| u.0 == unit)
            .map(|u| u.1)
            .ok_or_else(|| {
                format!(
                    "`{v}`: unknown {what} unit `{unit}` (e.g. {})",
                    units
                        .iter()
                        .take(6)
                        .map(|u| u.0)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?
    };
    let x = n * mult;
    if !(x.is_finite() && x >= 0.0) {
        return Err(format!("`{v}` is not a non-negative {what}"));
    }
    Ok(x)
}

/// SimGrid bandwidths (`125MBps`, `10Gbps`, `1GiBps`) as bytes per ns.
fn bandwidth(v: &str) -> Result<f64, String> {
    let mut units: Vec<(String, f64)> = Vec::new();
    for (p, m) in [
        ("", 1.0),
        ("k", 1e3),
        ("K", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("Ki", 1024.0),
        ("Mi", 1024f64.powi(2)),
        ("Gi", 1024f64.powi(3)),
        ("Ti", 1024f64.powi(4)),
    ] {
        units.push((format!("{p}Bps"), m));
        units.push((format!("{p}bps"), m / 8.0));
    }
    let refs: Vec<(&str, f64)> = units.iter().map(|(u, m)| (u.as_str(), *m)).collect();
    let b = with_unit(v, "bandwidth", &refs, 1.0)?;
    if b <= 0.0 {
        return Err(format!("`{v}`: a bandwidth must be positive"));
    }
    Ok(b / 1e9)
}

/// SimGrid latencies (`50us`, `1.5ms`, a bare number in seconds) as ns.
fn latency(v: &str) -> Result<f64, String> {
    with_unit(
        v,
        "latency",
        &[
            ("s", 1e9),
            ("ms", 1e6),
            ("us", 1e3),
            ("ns", 1.0),
            ("ps", 1e-3),
            ("m", 60e9),
            ("h", 3600e9),
        ],
        1e9,
    )
}

/// SimGrid host speeds (`1Gf`, `100Mf`, `1e9`) as flop/s.
fn speed(v: &str) -> Result<f64, String> {
    // A list of pstates (`1Gf,500Mf`) runs at the first.
    let first = v.split(',').next().unwrap_or(v);
    let s = with_unit(
        first,
        "speed",
        &[
            ("f", 1.0),
            ("kf", 1e3),
            ("Mf", 1e6),
            ("Gf", 1e9),
            ("Tf", 1e12),
            ("Pf", 1e15),
            ("flops", 1.0),
            ("kflops", 1e3),
            ("Mflops", 1e6),
            ("Gflops", 1e9),
            ("Tflops", 1e12),
        ],
        1.0,
    )?;
    if s <= 0.0 {
        return Err(format!("`{v}`: a speed must be positive"));
    }
    Ok(s)
}

/// A cluster radical: `0-15`, `1,3,5-7`.
fn radical(v: &str) -> Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for part in v.split(',') {
        let num = |s: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| format!("radical `{v}`: `{s}` is not a whole number"))
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (num(a)?, num(b)?);
                if b < a || b - a >= 1 << 22 {
                    return Err(format!("radical `{v}`: `{part}` is not a range"));
                }
                out.extend(a..=b);
            }
            None => out.push(num(part)?),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLUSTER: &str = r#"<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <!-- four hosts -->
  <cluster id="c" prefix="node-" suffix="" radical="0-3" speed="1Gf" bw="125MBps" lat="50us"
           bb_bw="2.25GBps" bb_lat="500us"/>
</platform>
"#;

    #[test]
    fn a_cluster_routes_up_backbone_down() {
        let p = SimGridPlatform::parse(CLUSTER, "c.xml").unwrap();
        assert_eq!(p.hosts(), 4);
        assert_eq!(p.host_name(2), "node-2");
        assert_eq!(p.host_speed(0), Some(1e9));
        let mut r = Vec::new();
        p.route(0, 1, &mut r).unwrap();
        let names: Vec<String> = r
            .iter()
            .map(|&l| {
                format!(
                    "{}->{}",
                    p.links()[l as usize].from,
                    p.links()[l as usize].to
                )
            })
            .collect();
        assert_eq!(names, ["node-0->c", "c_backbone->c_backbone", "c->node-1"]);
        let s = p.link_specs().unwrap();
        assert_eq!(s[r[0] as usize].bandwidth_bytes_per_ns, 0.125);
        assert_eq!(s[r[0] as usize].latency_ns, 50_000.0);
        assert_eq!(s[r[1] as usize].latency_ns, 500_000.0);
        // Split duplex: the way back uses the other direction of each private link.
        let mut back = Vec::new();
        p.route(1, 0, &mut back).unwrap();
        assert!(back[0] != r[2] && back[2] != r[0] && back[1] == r[1]);
    }

    #[test]
    fn shared_links_and_full_routes() {
        let text = r#"<platform version="4.1"><zone id="z" routing="Full">
            <host id="a" speed="2Gf"/><host id="b" speed="1e9"/>
            <link id="l1" bandwidth="1GBps" latency="1ms"/>
            <link id="l2" bandwidth="10Gbps" latency="0.000002" sharing_policy="SPLITDUPLEX"/>
            <route src="a" dst="b"><link_ctn id="l1"/><link_ctn id="l2" direction="UP"/></route>
        </zone></platform>"#;
        let p = SimGridPlatform::parse(text, "f.xml").unwrap();
        let (mut ab, mut ba) = (Vec::new(), Vec::new());
        p.route(0, 1, &mut ab).unwrap();
        p.route(1, 0, &mut ba).unwrap();
        assert_eq!(ab.len(), 2);
        // Symmetrical by default: reversed, the shared link is the same, the split one flips.
        assert_eq!(ba[1], ab[0]);
        assert_ne!(ba[0], ab[1]);
        let s = p.link_specs().unwrap();
        assert_eq!(s[ab[1] as usize].bandwidth_bytes_per_ns, 1.25);
        assert_eq!(s[ab[1] as usize].latency_ns, 2000.0);
        assert_eq!(p.host_speed(0), Some(2e9));
    }

    #[test]
    fn unknown_elements_and_attributes_are_refused_by_name() {
        let e = |t: &str| SimGridPlatform::parse(t, "x.xml").unwrap_err().to_string();
        let m = e(r#"<platform><zone id="z" routing="Floyd"></zone></platform>"#);
        assert!(m.contains("routing `Floyd`"), "{m}");
        let m = e(
            r#"<platform><zone id="z" routing="Full"><prop id="a" value="b"/></zone></platform>"#,
        );
        assert!(m.contains("`<prop>`"), "{m}");
        let m = e(
            r#"<platform><cluster id="c" prefix="n" radical="0-1" speed="1f" bw="1Bps" lat="0s" loopback_bw="1Bps"/></platform>"#,
        );
        assert!(m.contains("loopback_bw"), "{m}");
        let m = e(
            r#"<platform><zone id="z" routing="Full"><link id="l" bandwidth="1 furlong"/></zone></platform>"#,
        );
        assert!(m.contains("x.xml:1:"), "{m}");
        let m = e("<notaplatform/>");
        assert!(m.contains("<platform>"), "{m}");
    }
    /// A flat zone of `n` hosts `h0`, `h1`, … (one line each).
    fn flat(n: usize) -> String {
        let mut t = String::from("<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">\n");
        for i in 0..n {
            t.push_str(&format!("<host id=\"h{i}\" speed=\"1Gf\"/>\n"));
        }
        t + "</zone></platform>\n"
    }

    #[test]
    fn a_route_through_one_link_twice_is_refused_by_name() {
        let text = r#"<platform version="4.1"><zone id="z" routing="Full">
            <host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>
            <link id="l1" bandwidth="1GBps" latency="1us"/>
            <link id="l2" bandwidth="1GBps" latency="1us" sharing_policy="SPLITDUPLEX"/>
            <route src="a" dst="b"><link_ctn id="l1"/><link_ctn id="l1"/></route>
        </zone></platform>"#;
        let m = SimGridPlatform::parse(text, "dup.xml")
            .unwrap_err()
            .to_string();
        assert_eq!(
            m,
            "dup.xml:5:55: route `a` -> `b` lists link `l1` twice (a route that loops)"
        );
        // A split-duplex link's two directions are two links: UP then DOWN is no repeat, UP
        // twice (once by its `_UP` name) is.
        let both = text.replace(
            r#"<link_ctn id="l1"/><link_ctn id="l1"/>"#,
            r#"<link_ctn id="l2" direction="UP"/><link_ctn id="l2" direction="DOWN"/>"#,
        );
        let p = SimGridPlatform::parse(&both, "dup.xml").unwrap();
        let mut r = Vec::new();
        p.route(0, 1, &mut r).unwrap();
        assert_eq!(r, [1, 2]);
        let twice = text.replace(
            r#"<link_ctn id="l1"/><link_ctn id="l1"/>"#,
            r#"<link_ctn id="l2" direction="UP"/><link_ctn id="l2_UP"/>"#,
        );
        let m = SimGridPlatform::parse(&twice, "dup.xml")
            .unwrap_err()
            .to_string();
        assert!(m.contains("lists link `l2_UP` twice"), "{m}");
    }

    #[test]
    fn a_greater_than_sign_inside_a_value_is_read_as_text() {
        let text = r#"<platform version="4.1"><zone id="z" routing="Full">
            <host id="a>1" speed="1Gf"/><host id="b&gt;2" speed="2Gf"/>
            <link id="l>" bandwidth="1GBps" latency="1us"/>
            <route src="a>1" dst="b>2"><link_ctn id="l>"/></route>
        </zone></platform>"#;
        let p = SimGridPlatform::parse(text, "gt.xml").unwrap();
        assert_eq!(
            (p.hosts(), p.host_name(0), p.host_name(1)),
            (2, "a>1".into(), "b>2".into())
        );
        assert_eq!(p.host_speed(1), Some(2e9));
        let mut r = Vec::new();
        p.route(1, 0, &mut r).unwrap();
        assert_eq!((r, p.links()[0].class.as_str()), (vec![0], "l>"));
    }

    #[test]
    fn deep_nesting_is_refused_by_the_depth_bound() {
        let n = 100_000;
        let text = format!(
            "<platform>{}{}</platform>",
            "<zone id=\"z\" routing=\"Full\">".repeat(n),
            "</zone>".repeat(n)
        );
        let m = SimGridPlatform::parse(&text, "deep.xml")
            .unwrap_err()
            .to_string();
        // The platform is 1 deep, the 32nd zone 33: refused there (column 10 + 31 × 28 + 1).
        assert_eq!(
            m,
            format!(
                "deep.xml:1:879: `<zone>` is nested 33 elements deep, deeper than the {MAX_DEPTH} \
                 read (commperf reads platform > zone > route > link_ctn)"
            )
        );
    }

    #[test]
    fn parse_time_grows_linearly_with_the_hosts() {
        let time = |n: usize| {
            let text = flat(n);
            let t0 = std::time::Instant::now();
            let p = SimGridPlatform::parse(&text, "flat.xml").unwrap();
            assert_eq!(p.hosts(), n as u32);
            assert_eq!(p.host_name(n as u32 - 1), format!("h{}", n - 1));
            t0.elapsed()
        };
        let small = time(50_000);
        let large = time(200_000);
        // 4× the hosts: 4× the time when linear, 16× when quadratic (the former hand parser
        // took 16 s for 80,000 hosts). 8× leaves room for a loaded machine; the floor keeps a
        // very fast small run from making the bound noise.
        let floor = std::time::Duration::from_millis(50);
        assert!(large < 8 * small.max(floor), "{small:?} then {large:?}");
        assert!(large.as_secs() < 20, "{large:?}");
    }
}
