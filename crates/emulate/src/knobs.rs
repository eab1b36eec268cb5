//! The four knobs, their valid ranges, and their textual form (`o=0,1,2,5us`).

use commperf_core::units;
use std::fmt;
use std::str::FromStr;

/// The largest value any knob takes: one second (per byte for G). Beyond it a setting is a typo,
/// not an experiment, and a delay that long would look like a hang.
pub const MAX_KNOB_NS: f64 = 1e9;

/// Largest delay queue (bytes, including room for one largest message): it is preallocated.
pub const MAX_QUEUE_BYTES: usize = 1 << 30;

/// Errors of configuration: every one names the knob or setting at fault and its valid range.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmulateError {
    #[error("knob {knob}: {value} is out of range; {knob} must be between 0 and 1 s{per}")]
    OutOfRange {
        knob: Knob,
        value: String,
        per: &'static str,
    },
    #[error("knob {knob}: cannot read {value:?} as a duration ({why}); write e.g. {example}")]
    Malformed {
        knob: Knob,
        value: String,
        why: String,
        example: &'static str,
    },
    #[error("{0:?} is not a knob; the knobs are o, g, G and L (e.g. o=0,1,2,5us)")]
    UnknownKnob(String),
    #[error(
        "delay queue: {bytes} bytes (queue plus the largest message, {max_message} bytes) \
         exceeds the limit of {limit} bytes; lower the endpoint's maximum message"
    )]
    QueueTooLarge {
        bytes: usize,
        max_message: usize,
        limit: usize,
    },
}

/// One of the four LogGP knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Knob {
    O,
    LowerG,
    UpperG,
    L,
}

impl Knob {
    pub const ALL: [Knob; 4] = [Knob::O, Knob::LowerG, Knob::UpperG, Knob::L];

    fn per(self) -> &'static str {
        match self {
            Knob::UpperG => " per byte",
            _ => "",
        }
    }

    fn example(self) -> &'static str {
        match self {
            Knob::UpperG => "G=0,0.5,1ns (per byte)",
            Knob::O => "o=0,1,2,5us",
            Knob::LowerG => "g=0,1,2,5us",
            Knob::L => "L=0,5,10,20us",
        }
    }
}

impl fmt::Display for Knob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Knob::O => "o",
            Knob::LowerG => "g",
            Knob::UpperG => "G",
            Knob::L => "L",
        })
    }
}

impl FromStr for Knob {
    type Err = EmulateError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // Case matters: g (gap) and G (Gap per byte) are different knobs.
        match s.trim() {
            "o" => Ok(Knob::O),
            "g" => Ok(Knob::LowerG),
            "G" => Ok(Knob::UpperG),
            "L" => Ok(Knob::L),
            other => Err(EmulateError::UnknownKnob(other.to_string())),
        }
    }
}

/// Added costs, in ns (G in ns per byte). All zero: the transport as it is.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Knobs {
    pub o_ns: f64,
    pub g_ns: f64,
    pub gap_per_byte_ns: f64,
    pub l_ns: f64,
}

impl Knobs {
    /// Only `knob` set, to `value` (ns, or ns per byte for G).
    pub fn only(knob: Knob, value: f64) -> Self {
        let mut k = Knobs::default();
        k.set(knob, value);
        k
    }

    pub fn get(&self, knob: Knob) -> f64 {
        match knob {
            Knob::O => self.o_ns,
            Knob::LowerG => self.g_ns,
            Knob::UpperG => self.gap_per_byte_ns,
            Knob::L => self.l_ns,
        }
    }

    pub fn set(&mut self, knob: Knob, value: f64) {
        match knob {
            Knob::O => self.o_ns = value,
            Knob::LowerG => self.g_ns = value,
            Knob::UpperG => self.gap_per_byte_ns = value,
            Knob::L => self.l_ns = value,
        }
    }

    /// Every knob finite and within [0, 1 s].
    pub fn validate(&self) -> Result<(), EmulateError> {
        for k in Knob::ALL {
            check(k, self.get(k))?;
        }
        Ok(())
    }

    pub fn is_zero(&self) -> bool {
        Knob::ALL.iter().all(|&k| self.get(k) == 0.0)
    }

    /// Whether the receiver must hold messages back (the delay queue is needed).
    pub fn delays_delivery(&self) -> bool {
        self.l_ns > 0.0 || self.gap_per_byte_ns > 0.0
    }
}

fn check(knob: Knob, v: f64) -> Result<f64, EmulateError> {
    if !(0.0..=MAX_KNOB_NS).contains(&v) {
        return Err(EmulateError::OutOfRange {
            knob,
            value: format!("{v} ns{}", knob.per()),
            per: knob.per(),
        });
    }
    Ok(v)
}

/// How an endpoint is emulated; separate from its state, as in smoltcp.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EmulateConfig {
    pub knobs: Knobs,
    /// Bytes of messages the delay queue holds beyond one largest message (which it always has
    /// room for). When it is full, arrivals are stamped once room frees, as a NIC with finite
    /// buffers would back-pressure.
    pub queue_bytes: usize,
    /// Message slots of the delay queue.
    pub queue_slots: usize,
}

impl EmulateConfig {
    pub fn new(knobs: Knobs) -> Self {
        EmulateConfig {
            knobs,
            queue_bytes: 4 << 20,
            queue_slots: 4096,
        }
    }
}

/// Reads one duration: a number and a unit (ns, us, µs, ms, s; G's unit is per byte and
/// defaults to ns). A bare number is refused for o, g and L: a unit guessed wrong is a factor of
/// a thousand.
pub fn parse_duration_ns(knob: Knob, text: &str) -> Result<f64, EmulateError> {
    let t = match knob {
        Knob::UpperG => text.trim().trim_end_matches("/B").trim_end_matches("/byte"),
        _ => text,
    };
    let bare = (knob == Knob::UpperG).then_some(1.0);
    let ns = units::parse_duration_ns(t, bare).map_err(|e| EmulateError::Malformed {
        knob,
        value: text.to_string(),
        why: e.to_string(),
        example: knob.example(),
    })?;
    check(knob, ns).map_err(|_| EmulateError::OutOfRange {
        knob,
        value: text.to_string(),
        per: knob.per(),
    })
}

/// Reads `KNOB=v1,v2,…UNIT` (the unit may be on each value or only on the last), e.g.
/// `o=0,1,2,5us` or `L=0us,500ns`.
pub fn parse_knob_list(text: &str) -> Result<(Knob, Vec<f64>), EmulateError> {
    let (k, vals) = text
        .split_once('=')
        .ok_or_else(|| EmulateError::UnknownKnob(text.to_string()))?;
    let knob: Knob = k.parse()?;
    let parts: Vec<&str> = vals.split(',').map(str::trim).collect();
    let last = parts.last().copied().unwrap_or("");
    let unit: String = last
        .chars()
        .skip_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-' || *c == '+' || *c == 'e')
        .collect();
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        let has_unit = p.chars().any(|c| c.is_alphabetic() || c == 'µ' || c == '/');
        let v = if has_unit || p.is_empty() {
            parse_duration_ns(knob, p)?
        } else {
            parse_duration_ns(knob, &format!("{p}{unit}"))?
        };
        out.push(v);
    }
    Ok((knob, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_share_the_last_unit() {
        assert_eq!(
            parse_knob_list("o=0,1,2,5us").unwrap(),
            (Knob::O, vec![0.0, 1e3, 2e3, 5e3])
        );
        assert_eq!(
            parse_knob_list("L=500ns,1us").unwrap(),
            (Knob::L, vec![500.0, 1e3])
        );
        assert_eq!(
            parse_knob_list("G=0,0.5").unwrap(),
            (Knob::UpperG, vec![0.0, 0.5])
        );
    }

    #[test]
    fn bad_values_name_the_knob_and_the_range() {
        let e = parse_knob_list("o=-1us").unwrap_err().to_string();
        assert!(
            e.contains("knob o") && e.contains("between 0 and 1 s"),
            "{e}"
        );
        let e = parse_knob_list("L=2s").unwrap_err().to_string();
        assert!(
            e.contains("knob L") && e.contains("between 0 and 1 s"),
            "{e}"
        );
        let e = parse_knob_list("g=fast").unwrap_err().to_string();
        assert!(e.contains("knob g"), "{e}");
        let e = parse_knob_list("g=5").unwrap_err().to_string();
        assert!(e.contains("no unit"), "{e}");
        let e = parse_knob_list("x=5us").unwrap_err().to_string();
        assert!(e.contains("not a knob"), "{e}");
        assert!(Knobs::only(Knob::L, f64::NAN).validate().is_err());
    }
}
