//! A [`Timeline`] as Chrome trace-event JSON, the format Perfetto and `chrome://tracing` open:
//! one process, one thread per rank (named `rank N`), a complete (`"X"`) event per span and a
//! flow arrow (`"s"` at the sender, `"f"` with `"bp":"e"` at the receiver, sharing an id) per
//! message.
//!
//! The text is written by hand rather than through a JSON map so that it is byte-identical for
//! identical input: fields in a fixed order, times in µs with exactly three decimals (ns, the
//! engine's resolution), events in the timeline's order. Spans or messages whose times are not
//! finite are left out (JSON has no NaN); a span that ends before it starts gets duration 0.

use super::{Prediction, SpanKind, Timeline};
use std::fmt::Write as _;

/// The trace-event name and category of a span kind.
pub fn kind_name(k: SpanKind) -> &'static str {
    match k {
        SpanKind::Compute => "compute",
        SpanKind::Send => "send",
        SpanKind::Recv => "recv",
        SpanKind::Wait => "wait",
    }
}

/// A JSON string literal.
fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// ns → µs with three decimals.
fn ts(ns: f64) -> String {
    format!("{:.3}", ns / 1e3)
}

/// The whole trace file.
pub fn render(t: &Timeline, p: &Prediction) -> String {
    let mut ev: Vec<String> = Vec::with_capacity(t.spans.len() + 2 * t.messages.len() + 8);
    ev.push(format!(
        r#"{{"name":"process_name","ph":"M","pid":0,"tid":0,"args":{{"name":{}}}}}"#,
        js(&format!("commperf predict: {} ({})", p.trace, p.model))
    ));
    for r in 0..t.nranks {
        ev.push(format!(
            r#"{{"name":"thread_name","ph":"M","pid":0,"tid":{r},"args":{{"name":"rank {r}"}}}}"#
        ));
        // Perfetto orders threads by this index, not by name ("rank 10" before "rank 2").
        ev.push(format!(
            r#"{{"name":"thread_sort_index","ph":"M","pid":0,"tid":{r},"args":{{"sort_index":{r}}}}}"#
        ));
    }
    for s in &t.spans {
        if !(s.start_ns.is_finite() && s.end_ns.is_finite()) {
            continue;
        }
        let name = kind_name(s.kind);
        let mut args = format!(r#""bytes":{}"#, s.bytes);
        if let Some(peer) = s.peer {
            let _ = write!(args, r#","peer":{peer}"#);
        }
        ev.push(format!(
            r#"{{"name":"{name}","cat":"{name}","ph":"X","pid":0,"tid":{},"ts":{},"dur":{},"args":{{{args}}}}}"#,
            s.rank,
            ts(s.start_ns),
            ts((s.end_ns - s.start_ns).max(0.0)),
        ));
    }
    for (id, m) in t.messages.iter().enumerate() {
        if !(m.start_ns.is_finite() && m.end_ns.is_finite()) {
            continue;
        }
        ev.push(format!(
            r#"{{"name":"message","cat":"message","ph":"s","id":{id},"pid":0,"tid":{},"ts":{},"args":{{"bytes":{},"dst":{}}}}}"#,
            m.src,
            ts(m.start_ns),
            m.bytes,
            m.dst
        ));
        ev.push(format!(
            r#"{{"name":"message","cat":"message","ph":"f","bp":"e","id":{id},"pid":0,"tid":{},"ts":{}}}"#,
            m.dst,
            ts(m.end_ns.max(m.start_ns))
        ));
    }
    let other = format!(
        r#"{{"tool":{},"model":{},"trace":{},"trace_format":{},"topology":{},"profile":{},"background":{},"seed":"{}","total_us":"{}"}}"#,
        js(&p.tool),
        js(&p.model),
        js(&p.trace),
        js(&p.trace_format),
        js(&p.topology),
        js(&p.profile),
        js(&p.background),
        p.seed,
        super::table::us(p.total_us)
    );
    let mut out = String::from("{\"traceEvents\":[\n");
    out.push_str(&ev.join(",\n"));
    out.push_str("\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":");
    out.push_str(&other);
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixtures::{check_snapshot, prediction, timeline};
    use crate::output::{Arrow, Span};

    #[test]
    fn snapshot_small() {
        check_snapshot("timeline.chrome.json", &render(&timeline(), &prediction()));
    }

    #[test]
    fn output_is_json_with_the_events_perfetto_needs() {
        let v: serde_json::Value =
            serde_json::from_str(&render(&timeline(), &prediction())).expect("valid JSON");
        assert_eq!(v["displayTimeUnit"], "ns");
        let ev = v["traceEvents"].as_array().unwrap();
        let ph = |p: &str| ev.iter().filter(|e| e["ph"] == p).count();
        let t = timeline();
        assert_eq!(ph("X"), t.spans.len());
        assert_eq!((ph("s"), ph("f")), (t.messages.len(), t.messages.len()));
        assert_eq!(ph("M"), 1 + 2 * t.nranks as usize);
        assert!(ev.iter().filter(|e| e["ph"] == "f").all(|e| e["bp"] == "e"));
    }

    #[test]
    fn identical_input_gives_identical_bytes_and_nan_is_left_out() {
        let mut t = timeline();
        assert_eq!(render(&t, &prediction()), render(&t, &prediction()));
        t.spans.push(Span {
            rank: 0,
            kind: SpanKind::Wait,
            start_ns: f64::NAN,
            end_ns: 1.0,
            peer: None,
            bytes: 0,
        });
        t.messages.push(Arrow {
            src: 0,
            dst: 1,
            bytes: 1,
            start_ns: 0.0,
            end_ns: f64::INFINITY,
        });
        let text = render(&t, &prediction());
        assert!(!text.contains("NaN") && !text.contains("inf"));
        serde_json::from_str::<serde_json::Value>(&text).expect("valid JSON");
    }
}
