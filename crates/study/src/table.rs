//! The study's text tables: the completion times per program and stack with their
//! explanations ([`render`]), the loop's measured, predicted and emulated times
//! ([`render_loop`]) and the sensitivity sweeps ([`render_sensitivity`]).

use crate::rounds::GOAL_PERCENT;
use crate::schema::{Cell, Loop, Sensitivity, Study};

fn fmt_size(b: u64) -> String {
    if b >= 1 << 20 && b % (1 << 20) == 0 {
        format!("{} MiB", b >> 20)
    } else if b >= 1 << 10 && b % (1 << 10) == 0 {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

pub fn render(s: &Study) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# commperf app | {} ranks | median of {} run(s) | completion time per program and stack (s)",
        s.np, s.repeat
    );
    // What disturbed the study comes first: it qualifies every figure below.
    for n in s.disturbance.notes() {
        let _ = writeln!(o, "# disturbed: {n}");
    }
    let _ = write!(o, "{:<12}", "program");
    for st in &s.stacks {
        let _ = write!(o, " {st:>12}");
    }
    let _ = writeln!(o);
    for p in &s.programs {
        let _ = write!(o, "{p:<12}");
        for st in &s.stacks {
            let c = s.cells.iter().find(|c| &c.program == p && &c.stack == st);
            let v = match c {
                Some(Cell {
                    time_s: Some(t), ..
                }) => format!("{t:.6}"),
                _ => "FAILED".into(),
            };
            let _ = write!(o, " {v:>12}");
        }
        let _ = writeln!(o);
    }
    let walls: Vec<String> = s
        .cells
        .iter()
        .filter(|c| c.error.is_none() && c.time_source.as_deref() == Some("wall"))
        .map(|c| format!("{} on {}", c.program, c.stack))
        .collect();
    if !walls.is_empty() {
        let _ = writeln!(
            o,
            "the launch's wall time (the program prints no time it is known by): {}",
            walls.join(", ")
        );
    }
    let _ = writeln!(
        o,
        "\n# per run: the program's messages (monitor) and the stack's MPI-layer figures at its dominant size"
    );
    let _ = writeln!(
        o,
        "{:<12} {:<10} {:>10} {:<7} {:>9} {:>9} {:<22} {:<24} {:>9} {:>10} {:>8}",
        "program",
        "stack",
        "time s",
        "time of",
        "wall s",
        "messages",
        "sent per rank",
        "dominant size",
        "lat µs",
        "bw MB/s",
        "g µs"
    );
    for c in &s.cells {
        if let Some(e) = &c.error {
            let _ = writeln!(o, "{:<12} {:<10} FAILED: {e}", c.program, c.stack);
            continue;
        }
        let (msgs, per, dom) = match &c.profile {
            Some(p) => (
                p.messages.to_string(),
                p.sent_per_rank
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join("/"),
                match (p.dominant_mean_bytes, p.dominant_bin_bytes) {
                    (Some(m), Some(b)) => format!(
                        "{} (≤{}, {:.0} %)",
                        fmt_size(m),
                        fmt_size(b),
                        p.dominant_share * 100.0
                    ),
                    _ => format!(
                        "none ({} coll./rank)",
                        p.collectives_per_rank.iter().max().unwrap_or(&0)
                    ),
                },
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let (lat, bw, g) = match &c.micro {
            Some(m) => (
                format!("{:.2}", m.latency_us),
                format!("{:.1}", m.bandwidth_mb_per_s),
                format!("{:.2}", m.gap_us),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let _ = writeln!(
            o,
            "{:<12} {:<10} {:>10.6} {:<7} {:>9.2} {:>9} {:<22} {:<24} {:>9} {:>10} {:>8}",
            c.program,
            c.stack,
            c.time_s.unwrap_or(f64::NAN),
            c.time_source.as_deref().unwrap_or("-"),
            c.wall_s.unwrap_or(f64::NAN),
            msgs,
            per,
            dom,
            lat,
            bw,
            g
        );
    }
    for c in &s.cells {
        for n in &c.notes {
            let _ = writeln!(o, "{} on {}: {n}", c.program, c.stack);
        }
    }
    for b in &s.benches {
        if let Some(e) = &b.error {
            let _ = writeln!(o, "micro-benchmarks on {}: {e}", b.stack);
        }
        if let Some(n) = &b.note {
            let _ = writeln!(o, "micro-benchmarks on {}: {n}", b.stack);
        }
    }
    if let Some(n) = &s.oversubscribed {
        let _ = writeln!(o, "note: {n}");
    }
    let _ = writeln!(
        o,
        "\n# which micro-benchmark figure orders the stacks as the program's times do (Spearman ρ)"
    );
    for e in &s.explanations {
        let r = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:+.2}"));
        match &e.figure {
            Some(f) => {
                let weak = if e.spearman.unwrap_or(0.0) < 0.8 {
                    ", weak"
                } else {
                    ""
                };
                let _ = writeln!(
                    o,
                    "{:<12} {f} (ρ = {} over {} stacks{weak}; latency {}, bandwidth {})",
                    e.program,
                    r(e.spearman),
                    e.stacks_compared,
                    r(e.latency_spearman),
                    r(e.bandwidth_spearman)
                );
            }
            None => {
                let _ = writeln!(
                    o,
                    "{:<12} none: {}",
                    e.program,
                    e.note.as_deref().unwrap_or("")
                );
            }
        }
    }
    if let Some(l) = &s.loop_study {
        o += &render_loop(l);
    }
    render_sensitivity(&mut o, &s.sensitivity);
    let _ = writeln!(o, "\nstudy wall time {:.1} s", s.wall_time_s);
    o
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{:.3}", x * 1e3))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:+.1}%"))
}

/// The loop's table: per program and stack, measured, predicted and emulated times.
pub fn render_loop(l: &Loop) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\n# the loop: predicted (LogGP replay of the reference's monitored trace) and emulated \
         (the reference under the knobs) against measured; times in ms, from the barrier before the timed loop (the kit; other programs: from MPI_Init) to the last MPI call"
    );
    let _ = writeln!(o, "reference stack: {}", l.reference_rule);
    let _ = writeln!(
        o,
        "{:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  LogGP: `bench loggp --transport mpi`, per protocol piece",
        "stack", "L ns", "o_s ns", "o_r ns", "g ns", "G ns/B", "O ns/B", "over. ns", "wait ns", "dupl. ns"
    );
    for s in &l.stacks {
        match (&s.params, &s.error) {
            (Some(first), _) => {
                let pieces = if s.pieces.is_empty() {
                    std::slice::from_ref(first)
                } else {
                    &s.pieces[..]
                };
                for p in pieces {
                    let _ = writeln!(
                        o,
                        "{:<10} {:>9.0} {:>9.0} {:>9.0} {:>9.0} {:>9.4} {:>9.4} {:>9.0} {:>9.0} {:>9.0}  (sizes {}..{} B)",
                        s.stack,
                        p.L_ns,
                        p.o_s_ns,
                        p.o_r_ns,
                        p.g_ns,
                        p.G_ns_per_byte,
                        p.O_ns_per_byte,
                        p.overlap_ns,
                        p.send_wait_ns,
                        p.duplex_ns,
                        p.piece_from_bytes.unwrap_or(0),
                        p.piece_to_bytes.unwrap_or(0)
                    );
                }
            }
            (None, e) => {
                let _ = writeln!(
                    o,
                    "{:<10} no parameters: {}",
                    s.stack,
                    e.as_deref().unwrap_or("")
                );
            }
        }
    }
    let _ = writeln!(
        o,
        "{:<12} {:<10} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8} {:>10} {:>8} {:>10} {:>8} {:>10} {:>10} {:>8}  knobs",
        "program",
        "stack",
        "total",
        "predicted",
        "err",
        "comm",
        "predicted",
        "err",
        "emulated",
        "err",
        "emulated",
        "err",
        "program",
        "emulated",
        "err"
    );
    for c in &l.cells {
        let e = c.emulation.as_ref();
        let knobs = match e {
            None => "reference".to_string(),
            Some(e) => format!(
                "o {:.0} g {:.0} L {:.0} ns, G {:.4} ns/B{}",
                e.o_ns,
                e.g_ns,
                e.L_ns,
                e.G_ns_per_byte,
                if e.clamped.is_empty() {
                    String::new()
                } else {
                    format!(" (clamped: {})", e.clamped.join(", "))
                }
            ),
        };
        let _ = writeln!(
            o,
            "{:<12} {:<10} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8} {:>10} {:>8} {:>10} {:>8} {:>10} {:>10} {:>8}  {knobs}{}",
            c.program,
            c.stack,
            ms(c.measured_total_s),
            ms(c.predicted_total_s),
            pct(c.total_error_percent),
            ms(c.measured_comm_s),
            ms(c.predicted_comm_s),
            pct(c.comm_error_percent),
            ms(e.and_then(|e| e.comm_s)),
            pct(e.and_then(|e| e.comm_error_percent)),
            ms(e.and_then(|e| e.total_s)),
            pct(e.and_then(|e| e.total_error_percent)),
            ms(c.measured_program_s),
            ms(e.and_then(|e| e.program_s)),
            pct(e.and_then(|e| e.program_error_percent)),
            if c.other_state.is_empty() { "" } else { " ~" },
        );
    }
    for c in &l.cells {
        if let Some(e) = &c.error {
            let _ = writeln!(o, "{} on {}: {e}", c.program, c.stack);
        }
        if let Some(e) = c.emulation.as_ref().and_then(|e| e.error.as_ref()) {
            let _ = writeln!(o, "{} emulating {}: {e}", c.program, c.stack);
        }
        // Say where a replay took another piece than the table's first.
        let first = l
            .stacks
            .iter()
            .find(|s| s.stack == c.stack)
            .and_then(|s| s.params.as_ref())
            .map(|p| (p.piece_from_bytes, p.piece_to_bytes));
        if let (Some(lo), Some(hi)) = (c.piece_from_bytes, c.piece_to_bytes) {
            if first.is_some_and(|f| f != (Some(lo), Some(hi))) {
                let _ = writeln!(
                    o,
                    "{} on {}: replayed with the {lo}–{hi} B piece (its median message's)",
                    c.program, c.stack
                );
            }
        }
    }
    for s in &l.stacks {
        for n in &s.notes {
            let _ = writeln!(o, "LogGP of {}: {n}", s.stack);
        }
    }
    for c in l.cells.iter().filter(|c| !c.other_state.is_empty()) {
        let _ = writeln!(
            o,
            "~ {} on {}: {}",
            c.program,
            c.stack,
            c.other_state.join("; ")
        );
    }
    for c in &l.cells {
        for m in &c.comm_misses {
            let _ = writeln!(o, "miss: {} on {}: {m}", c.program, c.stack);
        }
    }
    let _ = writeln!(
        o,
        "within {GOAL_PERCENT} %: {} of {} predictions (total), {} of {} emulations (total){}",
        l.predictions_within_10_percent,
        l.predictions,
        l.emulations_within_10_percent,
        l.emulations,
        usual_counts(l)
    );
    let _ = writeln!(
        o,
        "within {GOAL_PERCENT} % on communication time (inside MPI calls): {} of {} predictions, {} of {} emulations{}",
        l.comm_predictions_within_10_percent,
        l.comm_predictions,
        l.comm_emulations_within_10_percent,
        l.comm_emulations,
        usual_comm_counts(l)
    );
    o
}

/// [`usual_counts`] on the communication time.
pub fn usual_comm_counts(l: &Loop) -> String {
    match l.usual_state_ns {
        Some(_) if l.cells.iter().any(|c| !c.other_state.is_empty()) => format!(
            "; in the machine's usual state: {} of {} predictions, {} of {} emulations",
            l.comm_predictions_within_10_percent_usual,
            l.comm_predictions_usual,
            l.comm_emulations_within_10_percent_usual,
            l.comm_emulations_usual
        ),
        _ => String::new(),
    }
}

/// The counts over the cells in the machine's usual state, where a cell is in another.
pub fn usual_counts(l: &Loop) -> String {
    match l.usual_state_ns {
        Some(u) if l.cells.iter().any(|c| !c.other_state.is_empty()) => format!(
            "; in the machine's usual state (a cache line crosses between the ranks' CPUs in \
             {u:.0} ns; the cells not marked ~): {} of {} predictions, {} of {} emulations",
            l.predictions_within_10_percent_usual,
            l.predictions_usual,
            l.emulations_within_10_percent_usual,
            l.emulations_usual
        ),
        _ => String::new(),
    }
}

/// The table's lines: per program the knob it is most sensitive to and each knob's largest
/// slowdown.
pub fn render_sensitivity(out: &mut String, all: &[Sensitivity]) {
    use std::fmt::Write;
    let Some(first) = all.first() else { return };
    let _ = writeln!(
        out,
        "\n# sensitivity (emulate sweep on {}): largest slowdown per knob over the values tested",
        first.stack
    );
    for s in all {
        match (&s.sweep, &s.error) {
            (Some(r), _) => {
                let knobs: Vec<String> = r
                    .knobs
                    .iter()
                    .map(|k| {
                        let top = k.points.iter().map(|p| p.0).fold(0.0f64, f64::max);
                        format!(
                            "{} (to {top} {}) {}",
                            k.knob,
                            k.unit,
                            k.max_slowdown
                                .map_or("-".into(), |x| format!("{:+.1} %", 100.0 * x))
                        )
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "{:<12} most sensitive to {}; {}; noise band ±{}",
                    s.program,
                    r.most_sensitive
                        .as_deref()
                        .unwrap_or("none beyond the noise band"),
                    knobs.join(", "),
                    r.baseline_spread
                        .map_or("-".into(), |x| format!("{:.1} %", 100.0 * x))
                );
            }
            (None, e) => {
                let _ = writeln!(
                    out,
                    "{:<12} FAILED: {}",
                    s.program,
                    e.as_deref().unwrap_or("no result")
                );
            }
        }
    }
}
