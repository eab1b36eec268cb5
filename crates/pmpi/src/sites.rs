//! Call sites: which line of the program made the calls. The interposer keeps, per MPI function
//! and caller's return address, the calls' count, time and bytes, and resolves each address to
//! its module and nearest exported symbol (dladdr) at MPI_Finalize; here the ranks' sites are
//! added up (a program's ranks run the same binary, so a site is the same module offset on every
//! rank whatever the load address) and turned into `function at file:line` by binutils'
//! addr2line where the module has debug information, else `symbol+0xoffset (module)`.

use crate::read::Run;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// One call site over all ranks.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
pub struct CallSite {
    pub call: String,
    /// `function at file:line`, or `symbol+0xoffset (module)` without debug information.
    pub location: String,
    pub module: String,
    /// The call's address within the module (what addr2line takes).
    pub offset: u64,
    /// Ranks that made calls from here.
    pub ranks: u32,
    pub count: u64,
    /// Calls timed (polls: one in 64), their time, and its mean; the site's whole time in MPI
    /// is `mean_ns × count` (`estimated_time_ns`).
    pub timed_count: u64,
    pub time_ns: u64,
    pub mean_ns: f64,
    pub estimated_time_ns: f64,
    pub sent_bytes: u64,
    pub received_bytes: u64,
}

/// ELF e_type ET_EXEC: a program linked at a fixed address, whose addresses addr2line takes as
/// they are; any other module (a shared object, a position-independent program) is given the
/// address relative to its load address.
fn fixed_address(module: &str) -> bool {
    use std::io::Read;
    let mut h = [0u8; 18];
    std::fs::File::open(module)
        .and_then(|mut f| f.read_exact(&mut h))
        .is_ok_and(|()| &h[..4] == b"\x7fELF" && u16::from_le_bytes([h[16], h[17]]) == 2)
}

/// `function at file:line` for each address of `module` (None where addr2line knows nothing,
/// or is not installed).
fn addr2line(module: &str, addrs: &[u64]) -> Vec<Option<String>> {
    let none = || vec![None; addrs.len()];
    if addrs.is_empty() || !Path::new(module).is_file() {
        return none();
    }
    let o = Command::new("addr2line")
        .args(["-f", "-C", "-e", module])
        .args(addrs.iter().map(|a| format!("{a:#x}")))
        .output();
    let Ok(o) = o else { return none() };
    if !o.status.success() {
        return none();
    }
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() != 2 * addrs.len() {
        return none();
    }
    lines
        .chunks(2)
        .map(|p| {
            let (func, place) = (p[0].trim(), p[1].trim());
            // "file:line (discriminator n)": the discriminator is the compiler's, not the user's.
            let place = place.split(" (").next().unwrap_or(place);
            if place.starts_with("??") || place.ends_with(":0") || place.ends_with(":?") {
                None
            } else if func == "??" {
                Some(place.to_string())
            } else {
                Some(format!("{func} at {place}"))
            }
        })
        .collect()
}

/// Every rank's sites added up by (call, module, offset), longest (estimated) total time first (ties by
/// call, then location), at most `top` of them; and the calls whose sites were not kept.
pub fn call_sites(run: &Run, top: usize) -> (Vec<CallSite>, u64) {
    // (call, module, offset) -> (ranks, count, time, sent, received, symbol, symbol offset,
    // timed)
    type Acc = (u32, u64, u64, u64, u64, String, u64, u64);
    let mut by: BTreeMap<(String, String, u64), Acc> = BTreeMap::new();
    let mut overflow = 0;
    let mut fixed: BTreeMap<String, bool> = BTreeMap::new();
    for rd in &run.ranks {
        // Sums of counts a rank file states: saturating, since a damaged file may state any.
        overflow = u64::saturating_add(overflow, rd.sites.overflow_calls);
        for s in &rd.sites.sites {
            let is_fixed = *fixed
                .entry(s.module.clone())
                .or_insert_with(|| fixed_address(&s.module));
            // addr - 1: the call instruction itself, not the one after it.
            let at = s.addr.saturating_sub(1);
            let offset = if is_fixed {
                at
            } else {
                at.wrapping_sub(s.base)
            };
            let e = by
                .entry((s.call.clone(), s.module.clone(), offset))
                .or_insert_with(|| {
                    (
                        0,
                        0,
                        0,
                        0,
                        0,
                        s.symbol.clone(),
                        s.addr.saturating_sub(s.symbol_addr),
                        0,
                    )
                });
            e.0 += 1;
            e.1 = e.1.saturating_add(s.count);
            e.2 = e.2.saturating_add(s.time_ns);
            e.3 = e.3.saturating_add(s.sent_bytes);
            e.4 = e.4.saturating_add(s.received_bytes);
            e.7 = e.7.saturating_add(s.timed_count);
        }
    }
    let estimate = |a: &Acc| {
        if a.7 > 0 {
            a.2 as f64 / a.7 as f64 * a.1 as f64
        } else {
            0.0
        }
    };
    let mut v: Vec<((String, String, u64), Acc)> = by.into_iter().collect();
    v.sort_by(|a, b| {
        estimate(&b.1)
            .total_cmp(&estimate(&a.1))
            .then_with(|| a.0.cmp(&b.0))
    });
    v.truncate(top);
    // One addr2line per module, for the sites kept.
    let mut per_module: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for ((_, m, off), _) in &v {
        per_module.entry(m.clone()).or_default().push(*off);
    }
    let mut resolved: BTreeMap<(String, u64), String> = BTreeMap::new();
    for (m, offs) in per_module {
        for (off, loc) in offs.iter().zip(addr2line(&m, &offs)) {
            if let Some(l) = loc {
                resolved.insert((m.clone(), *off), l);
            }
        }
    }
    let sites = v
        .into_iter()
        .map(|((call, module, offset), a)| {
            let short = Path::new(&module)
                .file_name()
                .map_or_else(|| module.clone(), |f| f.to_string_lossy().into_owned());
            let location = resolved
                .get(&(module.clone(), offset))
                .cloned()
                .unwrap_or_else(|| {
                    if a.5.is_empty() {
                        format!("{short}+{offset:#x}")
                    } else {
                        format!("{}+{:#x} ({short})", a.5, a.6)
                    }
                });
            CallSite {
                call,
                location,
                module,
                offset,
                ranks: a.0,
                count: a.1,
                timed_count: a.7,
                time_ns: a.2,
                mean_ns: if a.7 > 0 {
                    a.2 as f64 / a.7 as f64
                } else {
                    0.0
                },
                estimated_time_ns: estimate(&a),
                sent_bytes: a.3,
                received_bytes: a.4,
            }
        })
        .collect::<Vec<CallSite>>();
    // Two call instructions on one source line (a loop the compiler unrolled or split) are one
    // place to the reader: merged when both resolved to the same `function at file:line`.
    let mut merged: Vec<CallSite> = Vec::with_capacity(sites.len());
    for c in sites {
        match merged
            .iter_mut()
            .find(|m| m.call == c.call && m.location == c.location && m.module == c.module)
        {
            Some(m) => {
                m.ranks = m.ranks.max(c.ranks);
                m.count += c.count;
                m.timed_count += c.timed_count;
                m.time_ns += c.time_ns;
                m.estimated_time_ns += c.estimated_time_ns;
                m.sent_bytes += c.sent_bytes;
                m.received_bytes += c.received_bytes;
                m.mean_ns = if m.timed_count > 0 {
                    m.time_ns as f64 / m.timed_count as f64
                } else {
                    0.0
                };
            }
            None => merged.push(c),
        }
    }
    (merged, overflow)
}
