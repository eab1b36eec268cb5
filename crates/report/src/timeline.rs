//! Chrome trace-event timelines (the JSON that Perfetto and `chrome://tracing` open): one track
//! per rank, a complete event per call, a flow arrow per message from its send to the call that
//! received it.
//!
//! Why one writer: `commperf monitor` draws timelines of two kinds of run — commperf's own
//! transports (crate `monitor`) and unmodified MPI programs (crate `pmpi`) — and a timeline of
//! either must open the same way in the same viewer (track names, their order, time units, the
//! flow arrows' binding). The callers decide what goes on the tracks; this decides the format.
//! Events are appended as preformatted JSON text: an MPI run's timeline can hold millions of
//! events, and one `format!` per event is several times cheaper than building a `Value` tree.

use std::fmt::Write as _;

/// One argument of an event (`args` in the trace-event format).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg<'a> {
    U(u64),
    I(i64),
    Bool(bool),
    Str(&'a str),
}

/// A timeline being built; [`Timeline::finish`] renders it.
#[derive(Debug, Clone)]
pub struct Timeline {
    events: Vec<String>,
    flows: u64,
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// Microseconds with nanosecond resolution, the trace-event format's time unit.
fn us(t: f64) -> String {
    if t.is_finite() {
        format!("{t:.3}")
    } else {
        "0.000".to_string()
    }
}

fn args_json(args: &[(&str, Arg<'_>)]) -> String {
    let mut s = String::from("{");
    for (i, (k, v)) in args.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&quote(k));
        s.push(':');
        let _ = match v {
            Arg::U(x) => write!(s, "{x}"),
            Arg::I(x) => write!(s, "{x}"),
            Arg::Bool(x) => write!(s, "{x}"),
            Arg::Str(x) => write!(s, "{}", quote(x)),
        };
    }
    s.push('}');
    s
}

impl Timeline {
    /// A timeline titled `title` (the process name shown) with one track per rank, named
    /// `rank N` and ordered by rank (Perfetto would otherwise sort "rank 10" before "rank 2").
    pub fn new(title: &str, ranks: impl IntoIterator<Item = u32>) -> Timeline {
        let mut events = vec![format!(
            r#"{{"name":"process_name","ph":"M","pid":0,"tid":0,"args":{{"name":{}}}}}"#,
            quote(title)
        )];
        for r in ranks {
            events.push(format!(
                r#"{{"name":"thread_name","ph":"M","pid":0,"tid":{r},"args":{{"name":"rank {r}"}}}}"#
            ));
            events.push(format!(
                r#"{{"name":"thread_sort_index","ph":"M","pid":0,"tid":{r},"args":{{"sort_index":{r}}}}}"#
            ));
        }
        Timeline { events, flows: 0 }
    }

    /// A complete event (`ph: X`) on `rank`'s track, from `start_us` for `dur_us` (negative
    /// durations are drawn as 0).
    pub fn span(
        &mut self,
        rank: u32,
        name: &str,
        cat: &str,
        start_us: f64,
        dur_us: f64,
        args: &[(&str, Arg<'_>)],
    ) {
        self.events.push(format!(
            r#"{{"name":{},"cat":{},"ph":"X","pid":0,"tid":{rank},"ts":{},"dur":{},"args":{}}}"#,
            quote(name),
            quote(cat),
            us(start_us),
            us(dur_us.max(0.0)),
            args_json(args)
        ));
    }

    /// A message arrow from `from` (rank, µs) to `to`, bound to the enclosing slice at its end
    /// (the call that received the message). `args` go on the arrow's start.
    pub fn flow(&mut self, from: (u32, f64), to: (u32, f64), args: &[(&str, Arg<'_>)]) {
        let id = self.flows;
        self.flows += 1;
        self.events.push(format!(
            r#"{{"name":"message","cat":"message","ph":"s","id":{id},"pid":0,"tid":{},"ts":{},"args":{}}}"#,
            from.0,
            us(from.1),
            args_json(args)
        ));
        self.events.push(format!(
            r#"{{"name":"message","cat":"message","ph":"f","bp":"e","id":{id},"pid":0,"tid":{},"ts":{}}}"#,
            to.0,
            us(to.1)
        ));
    }

    /// Arrows drawn so far.
    pub fn flows(&self) -> u64 {
        self.flows
    }

    /// The timeline as one JSON document (times in µs, shown in ns).
    pub fn finish(self) -> String {
        let mut s = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
        s += &self.events.join(",\n");
        s += "\n]}\n";
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeline_is_trace_event_json_with_ordered_tracks_spans_and_bound_flows() {
        let mut t = Timeline::new("run \"x\"", [0, 1]);
        t.span(0, "send", "send", 1.5, 2.25, &[("bytes", Arg::U(64))]);
        t.span(
            1,
            "recv",
            "recv",
            2.0,
            -1.0,
            &[("replayed", Arg::Bool(true))],
        );
        t.flow(
            (0, 1.5),
            (1, 2.0),
            &[("tag", Arg::I(-1)), ("note", Arg::Str("a<b"))],
        );
        assert_eq!(t.flows(), 1);
        let v: serde_json::Value = serde_json::from_str(&t.finish()).unwrap();
        assert_eq!(v["displayTimeUnit"], "ns");
        let ev = v["traceEvents"].as_array().unwrap();
        assert_eq!(ev[0]["args"]["name"], "run \"x\"");
        assert_eq!(ev[2]["args"]["sort_index"], 0);
        assert_eq!(ev[3]["args"]["name"], "rank 1");
        let send = &ev[5];
        assert_eq!(
            (send["ph"].as_str(), send["tid"].as_u64()),
            (Some("X"), Some(0))
        );
        assert_eq!(
            (send["ts"].as_f64(), send["dur"].as_f64()),
            (Some(1.5), Some(2.25))
        );
        assert_eq!(send["args"]["bytes"], 64);
        assert_eq!(
            ev[6]["dur"].as_f64(),
            Some(0.0),
            "a negative duration is drawn as 0"
        );
        assert_eq!(ev[6]["args"]["replayed"], true);
        let (s, f) = (&ev[7], &ev[8]);
        assert_eq!((s["ph"].as_str(), f["ph"].as_str()), (Some("s"), Some("f")));
        assert_eq!(s["id"], f["id"]);
        assert_eq!(f["bp"], "e");
        assert_eq!((f["tid"].as_u64(), f["ts"].as_f64()), (Some(1), Some(2.0)));
        assert_eq!(
            (s["args"]["tag"].as_i64(), s["args"]["note"].as_str()),
            (Some(-1), Some("a<b"))
        );
    }
}
