//! Strict parsing of Kubernetes resource quantities (`resource.Quantity`).
//!
//! Grammar, as in Kubernetes: `<signedNumber><suffix>` where the number is
//! `[+-]?(digits(.digits?)?|.digits)` and the suffix is one of the binary SI
//! suffixes `Ki Mi Gi Ti Pi Ei`, the decimal SI suffixes `n u m "" k M G T P E`,
//! or a decimal exponent `e<int>` / `E<int>` (`E` alone is exa).
//!
//! Results are computed exactly (no floating point) and rounded away from zero
//! to the requested unit, as Go's `Value()` and `MilliValue()` do: `"0.1m"` is
//! 1 milli, `"1.5"` is 2 and `"-1.5"` is -2. (Go rounds negative values with more
//! than nano precision toward +inf instead, an artefact of its internal
//! representation; negative resources are meaningless to the scheduler anyway.)
//! Unlike Go, which silently clamps huge values, a result outside `i64` is an error.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// A quantity string that is not valid Kubernetes syntax or does not fit in `i64`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {input:?}: {reason}")]
pub struct QuantityError {
    /// The rejected quantity string.
    pub input: String,
    /// Why it was rejected.
    pub reason: QuantityErrorReason,
}

/// Why a quantity string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityErrorReason {
    /// The string is empty.
    #[error("empty string")]
    Empty,
    /// There is no digit where the number should be.
    #[error("expected a number such as 1, 2.5, .5 or -1 before any suffix")]
    MissingNumber,
    /// Something other than a known suffix follows the number.
    #[error(
        "unknown suffix {0:?} (expected one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like 1e3)"
    )]
    UnknownSuffix(String),
    /// An `e`/`E` suffix that is not followed by an integer.
    #[error("invalid exponent {0:?} (expected e or E followed by an integer, like 1e3 or 5E-2)")]
    InvalidExponent(String),
    /// The rounded result does not fit in `i64`.
    #[error("{} does not fit in a signed 64-bit integer", if *.in_millis { "the value in millis" } else { "the value" })]
    Overflow {
        /// Whether the overflow happened when converting to millis.
        in_millis: bool,
    },
}

/// The quantity in thousandths, rounded up like Go's `Quantity.MilliValue()` (CPU millicores).
pub fn cpu_millis(q: &Quantity) -> Result<i64, QuantityError> {
    scaled(&q.0, 3)
}

/// The quantity as an integer, rounded up like Go's `Quantity.Value()` (bytes, counts).
pub fn value(q: &Quantity) -> Result<i64, QuantityError> {
    scaled(&q.0, 0)
}

/// The quantity multiplied by `10^unit_exponent`, rounded away from zero.
fn scaled(input: &str, unit_exponent: i128) -> Result<i64, QuantityError> {
    parse(input)
        .and_then(|number| number.into_i64(unit_exponent))
        .map_err(|reason| QuantityError {
            input: input.to_owned(),
            reason,
        })
}

/// A parsed quantity: `(-1)^negative * digits * 10^exp10 * 2^shift2`.
struct Number {
    negative: bool,
    /// Decimal digit values, most significant first, without leading zeros (empty for zero).
    digits: Vec<u8>,
    exp10: i128,
    shift2: u32,
}

fn parse(input: &str) -> Result<Number, QuantityErrorReason> {
    if input.is_empty() {
        return Err(QuantityErrorReason::Empty);
    }
    let (negative, rest) = match input.as_bytes()[0] {
        b'-' => (true, &input[1..]),
        b'+' => (false, &input[1..]),
        _ => (false, input),
    };
    let (int, rest) = split_digits(rest);
    let (frac, rest) = match rest.strip_prefix('.') {
        Some(after_point) => split_digits(after_point),
        None => ("", rest),
    };
    if int.is_empty() && frac.is_empty() {
        return Err(QuantityErrorReason::MissingNumber);
    }
    let (suffix_exp10, shift2) = parse_suffix(rest)?;
    let digits = int
        .bytes()
        .chain(frac.bytes())
        .skip_while(|&b| b == b'0')
        .map(|b| b - b'0')
        .collect();
    Ok(Number {
        negative,
        digits,
        exp10: suffix_exp10 - frac.len() as i128,
        shift2,
    })
}

/// Splits `s` after its leading ASCII digits.
fn split_digits(s: &str) -> (&str, &str) {
    let end = s.bytes().take_while(u8::is_ascii_digit).count();
    s.split_at(end)
}

/// The suffix as a power of ten and a power of two.
fn parse_suffix(suffix: &str) -> Result<(i128, u32), QuantityErrorReason> {
    Ok(match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        _ => match suffix.strip_prefix(['e', 'E']) {
            Some(exponent) => (
                parse_exponent(exponent)
                    .ok_or_else(|| QuantityErrorReason::InvalidExponent(suffix.to_owned()))?,
                0,
            ),
            None => return Err(QuantityErrorReason::UnknownSuffix(suffix.to_owned())),
        },
    })
}

/// Parses `[+-]?digits`, saturating far beyond any exponent that yields an `i64`.
fn parse_exponent(s: &str) -> Option<i128> {
    // Any exponent this large already forces overflow (or rounding to one unit),
    // so clamping keeps the later arithmetic exact without big integers.
    const CLAMP: i128 = 1 << 100;
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let magnitude = digits
        .bytes()
        .fold(0i128, |acc, b| (acc * 10 + i128::from(b - b'0')).min(CLAMP));
    Some(if negative { -magnitude } else { magnitude })
}

impl Number {
    /// The value times `10^unit_exponent`, rounded away from zero, if it fits in `i64`.
    fn into_i64(self, unit_exponent: i128) -> Result<i64, QuantityErrorReason> {
        let overflow = QuantityErrorReason::Overflow {
            in_millis: unit_exponent == 3,
        };
        if self.digits.is_empty() {
            return Ok(0);
        }
        let digits = multiply_by_pow2(&self.digits, self.shift2);
        let exp10 = self.exp10 + unit_exponent;
        let len = digits.len() as i128;
        // The first digit is non-zero, so the magnitude is at least 10^(len - 1 + exp10);
        // 20 or more integer digits always exceed i64 (|i64::MIN| < 10^19).
        let (integer_digits, trailing_zeros, round_up) = if exp10 >= 0 {
            if len + exp10 >= 20 {
                return Err(overflow);
            }
            (&digits[..], exp10, false)
        } else if -exp10 >= len {
            (&digits[..0], 0, true)
        } else {
            let (integer, fraction) = digits.split_at((len + exp10) as usize);
            if integer.len() >= 20 {
                return Err(overflow);
            }
            (integer, 0, fraction.iter().any(|&d| d != 0))
        };
        let mut magnitude = integer_digits
            .iter()
            .fold(0i128, |acc, &d| acc * 10 + i128::from(d));
        for _ in 0..trailing_zeros {
            magnitude *= 10;
        }
        if round_up {
            magnitude += 1;
        }
        let signed = if self.negative { -magnitude } else { magnitude };
        i64::try_from(signed).map_err(|_| overflow)
    }
}

/// Multiplies a big-endian decimal digit string by `2^shift` (`shift <= 60`).
fn multiply_by_pow2(digits: &[u8], shift: u32) -> Vec<u8> {
    if shift == 0 {
        return digits.to_vec();
    }
    let factor = 1u128 << shift;
    let mut carry = 0u128;
    let mut reversed = Vec::with_capacity(digits.len() + 20);
    for &d in digits.iter().rev() {
        let v = u128::from(d) * factor + carry;
        reversed.push((v % 10) as u8);
        carry = v / 10;
    }
    while carry > 0 {
        reversed.push((carry % 10) as u8);
        carry /= 10;
    }
    reversed.reverse();
    reversed
}
