//! Go's duration syntax (`15s`, `1m30s`, `500ms`) for the flags kube-scheduler spells that
//! way, so operators can carry their values over unchanged.

use std::time::Duration;

/// The accepted form, quoted in every error.
const FORM: &str = "a Go duration: a sequence of numbers with units ns, us, µs, ms, s, m, h \
                    (e.g. 15s, 1m30s, 500ms)";

/// Parses a non-negative Go duration. Unlike Go, a bare number other than `0` is rejected:
/// `15` is ambiguous (seconds? the old `--lease-duration` meant seconds) and upstream
/// rejects it too.
pub fn parse(s: &str) -> Result<Duration, String> {
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(format!("empty value; expected {FORM}"));
    }
    let mut rest = s;
    let mut total_ns: u128 = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("{s:?} has a number without a unit; expected {FORM}"))?;
        let (number, after) = rest.split_at(digits);
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(unit_len);
        let unit_ns: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return Err(format!("{s:?} has unknown unit {unit:?}; expected {FORM}")),
        };
        total_ns += number_ns(number, unit_ns)
            .ok_or_else(|| format!("{s:?} has a malformed number {number:?}; expected {FORM}"))?;
        if total_ns > u128::from(u64::MAX) {
            return Err(format!("{s:?} is too long; expected {FORM}"));
        }
        rest = next;
    }
    Ok(Duration::from_nanos(total_ns as u64))
}

/// Formats a duration so [`parse`] (and Go) read it back exactly: whole seconds as `5s`,
/// else milliseconds, microseconds or nanoseconds, whichever is exact.
pub fn format(d: Duration) -> String {
    let ns = d.as_nanos();
    [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")]
        .into_iter()
        .find(|(unit, _)| ns.is_multiple_of(*unit))
        .map(|(unit, name)| format!("{}{name}", ns / unit))
        .unwrap_or_else(|| format!("{ns}ns"))
}

/// `number` (digits with at most one '.', at least one digit) times `unit_ns`, in
/// nanoseconds; fractions below a nanosecond are dropped, as Go does.
fn number_ns(number: &str, unit_ns: u128) -> Option<u128> {
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if int.is_empty() && frac.is_empty() || frac.contains('.') || int.len() > 20 {
        return None;
    }
    let int: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut ns = int.checked_mul(unit_ns)?;
    let mut scale = unit_ns;
    for d in frac.bytes().take(20) {
        scale /= 10;
        ns += u128::from(d - b'0') * scale;
    }
    Some(ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_go_durations() {
        let cases = [
            ("0", Duration::ZERO),
            ("15s", Duration::from_secs(15)),
            ("1m30s", Duration::from_secs(90)),
            ("500ms", Duration::from_millis(500)),
            ("1.5h", Duration::from_secs(5400)),
            (".5s", Duration::from_millis(500)),
            ("2h45m0.5s", Duration::from_millis(9_900_500)),
            ("10us", Duration::from_micros(10)),
            ("10µs", Duration::from_micros(10)),
            ("7ns", Duration::from_nanos(7)),
        ];
        for (input, want) in cases {
            assert_eq!(parse(input), Ok(want), "{input}");
        }
    }

    #[test]
    fn formats_what_it_parses() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_secs(5), "5s"),
            (Duration::from_millis(1500), "1500ms"),
            (Duration::from_micros(7), "7us"),
            (Duration::from_nanos(1_000_000_001), "1000000001ns"),
        ];
        for (d, want) in cases {
            assert_eq!(format(d), want);
            assert_eq!(parse(want), Ok(d), "{want}");
        }
    }

    #[test]
    fn rejects_bad_durations_naming_the_form() {
        let cases = [
            ("", "empty value"),
            ("15", "without a unit"),
            ("1m30", "without a unit"),
            ("15sec", "unknown unit \"sec\""),
            ("-5s", "unknown unit \"-\""),
            ("s", "malformed number \"\""),
            ("1..5s", "malformed number"),
            (".s", "malformed number"),
            (" 15s", "unknown unit \" \""),
            ("99999999999999999999h", "too long"),
            ("999999999999999999999999s", "malformed number"),
            ("9999999999h", "too long"),
        ];
        for (input, want) in cases {
            let err = parse(input).expect_err(input);
            assert!(err.contains(want), "{input}: {err}");
            assert!(err.contains("e.g. 15s, 1m30s, 500ms"), "{input}: {err}");
        }
    }
}
