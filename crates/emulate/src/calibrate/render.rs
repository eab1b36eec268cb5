//! The calibration as the table `commperf emulate calibrate` prints: a header saying the
//! criteria, one line per setting, then the baselines, the notes, each knob's verdict and the
//! knobs-at-zero cost. Kept beside the measurement so that the table and the JSON are read
//! from one [`Calibration`].

use super::judge::{Drift, Params, Row};
use super::{Calibration, ZeroCost};
use commperf_core::format_size;

impl Calibration {
    /// The human-readable table: what the run measured, each setting's moves and verdict, and
    /// why a setting was measured again or judged on fewer rounds.
    pub fn render(&self) -> String {
        let mut out = self.header();
        out += &aligned(&self.cells());
        out += &self.baselines_text();
        for r in &self.rows {
            for n in &r.notes {
                out += &format!("# {} = {}: {n}\n", r.knob, set_text(r.set, r.unit));
            }
        }
        out += &self.verdicts_text();
        if let Some(z) = &self.zero_cost {
            out += &zero_cost_text(z);
        }
        out
    }

    fn header(&self) -> String {
        let mut out = format!(
            "# commperf emulate calibrate: {} ({}), sizes {}, {} repetitions per PRTT figure\n",
            self.transport,
            self.mode,
            self.sizes_bytes
                .iter()
                .map(|s| format_size(*s))
                .collect::<Vec<_>>()
                .join(","),
            self.iterations
        );
        out += &format!(
            "# {} round(s), each figure the median; own: moves by the set amount (L: less the baseline's overlap; G: as LogGP expects) ±5 % of it or ±50 ns; others: by their expected amount within 5 %, 50 ns or the baselines' spread; expected = LogGP with the knob raised, through the same PRTT fit (g >= o, ping-pong >= g)\n",
            self.repeat
        );
        out += "# '!' beyond tolerance; 'exp' where LogGP's expectation is not the plain set amount (own) or 0 (others); '±' the setting's spread (max-min over rounds)\n";
        out
    }

    /// The table's cells: a heading, then one row per setting.
    fn cells(&self) -> Vec<Vec<String>> {
        let mut t = vec![vec![
            "knob".to_string(),
            "set".into(),
            "own Δ".into(),
            "others' drift".into(),
            "verdict".into(),
        ]];
        for r in &self.rows {
            let own = r
                .own
                .iter()
                .map(|d| own_cell(d, r, self.repeat))
                .collect::<Vec<_>>()
                .join(", ");
            let others = r
                .others
                .iter()
                .map(other_cell)
                .collect::<Vec<_>>()
                .join(" ");
            t.push(vec![
                r.knob.clone(),
                set_text(r.set, r.unit),
                own,
                others,
                if r.pass { "pass" } else { "FAIL" }.into(),
            ]);
        }
        t
    }

    fn baselines_text(&self) -> String {
        let line = |b: &Params| {
            format!(
                "o_s {} o_r {} g {} G {} L {}",
                fmt_value(b.o_s_ns, "ns"),
                fmt_value(b.o_r_ns, "ns"),
                fmt_value(b.g_ns, "ns"),
                fmt_value(b.gap_per_byte_ns, "ns/B"),
                fmt_value(b.l_ns, "ns"),
            )
        };
        let all: Vec<&Params> = self.baselines.iter().collect();
        let mut out = format!(
            "# baselines: {} fits, median {}\n",
            self.baselines.len(),
            line(&Params::median(&all))
        );
        out += &format!(
            "# settled brackets' spread (max-min, the noise band): {}\n",
            line(&self.baseline_noise)
        );
        out
    }

    fn verdicts_text(&self) -> String {
        let mut out = String::new();
        for k in &self.knobs {
            let range = match (k.measured_delta_min, k.measured_delta_max) {
                (Some(a), Some(b)) => format!(
                    "measured own Δ {} .. {}",
                    fmt_value(Some(a), k.unit),
                    fmt_value(Some(b), k.unit)
                ),
                _ => "own parameter not measured".into(),
            };
            if k.pass {
                out += &format!("# knob {}: pass at every setting; {range}\n", k.knob);
            } else {
                let at: Vec<String> = k
                    .failing_settings
                    .iter()
                    .map(|v| set_text(*v, k.unit))
                    .collect();
                out += &format!("# knob {}: FAILS at {}; {range}\n", k.knob, at.join(", "));
            }
        }
        out
    }
}

fn unit_of(d: &Drift) -> &'static str {
    if d.parameter == "G" {
        "ns/B"
    } else {
        "ns"
    }
}

fn short(x: f64, u: &str) -> String {
    if u == "ns/B" {
        format!("{x:+.4}ns/B")
    } else {
        format!("{x:+.0}ns")
    }
}

/// An own parameter's move, its expectation where that is not the set amount, and its spread.
fn own_cell(d: &Drift, r: &Row, repeat: u32) -> String {
    let u = unit_of(d);
    let mut cell = format!("{} {}", d.parameter, fmt_value(d.delta, u));
    if let Some(e) = d
        .expected
        .filter(|e| (e - r.set).abs() > 1e-9 * r.set.max(1.0))
    {
        cell += &format!(" exp {}", short(e, u));
    }
    if let Some(sp) = d.spread.filter(|_| repeat > 1) {
        cell += &format!(" ±{}", short(sp / 2.0, u).trim_start_matches('+'));
    }
    if d.within == Some(false) {
        cell += "!";
    }
    cell
}

/// Another parameter's drift.
fn other_cell(d: &Drift) -> String {
    let mark = if d.within == Some(false) { "!" } else { "" };
    // Absolute and relative: a 40 ns move of a 30 ns overhead is +130 % and still
    // within the 50 ns floor.
    let abs = match d.delta {
        None => "-".to_string(),
        Some(x) => short(x, unit_of(d)),
    };
    let exp = match d.expected {
        Some(e) if d.tied => format!(" exp {}", short(e, unit_of(d))),
        _ => String::new(),
    };
    match d.drift_percent {
        Some(p) if !d.tied => format!("{} {abs} ({p:+.0}%){mark}", d.parameter),
        _ => format!("{} {abs}{exp}{mark}", d.parameter),
    }
}

/// Cells padded to their column's width, two spaces apart, trailing blanks trimmed.
fn aligned(t: &[Vec<String>]) -> String {
    let columns = t.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|i| t.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in t {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            let pad = widths[i] - cell.chars().count();
            line += cell;
            if i + 1 < r.len() {
                line += &" ".repeat(pad + 2);
            }
        }
        out += line.trim_end();
        out += "\n";
    }
    out
}

fn zero_cost_text(z: &ZeroCost) -> String {
    format!(
        "# knobs at zero: ping-pong {} one-way p50 bare {:.1} ns, emulated {:.1} ns ({:+.1} ns, {:+.2} %; goal within 2 % or 10 ns: {})\n",
        format_size(z.size_bytes),
        z.bare_one_way_ns,
        z.emulated_one_way_ns,
        z.difference_ns,
        z.difference_percent,
        if z.within_goal { "met" } else { "NOT met" }
    )
}

fn fmt_value(x: Option<f64>, unit: &str) -> String {
    match x {
        None => "-".into(),
        Some(x) if unit == "ns/B" => format!("{x:+.3} ns/B"),
        Some(x) => format!("{:+.3} µs", x / 1e3),
    }
}

fn set_text(v: f64, unit: &str) -> String {
    if unit == "ns/B" {
        format!("{v} ns/B")
    } else {
        format!("{} µs", v / 1e3)
    }
}
