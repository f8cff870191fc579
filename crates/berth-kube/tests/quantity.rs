//! Table-driven tests for strict Kubernetes quantity parsing and Go-compatible rounding.

use berth_kube::quantity::{self, QuantityErrorReason};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

fn q(s: &str) -> Quantity {
    Quantity(s.to_owned())
}

#[test]
fn valid_quantities_convert_like_go() {
    // (input, Value(), MilliValue()); None means the conversion overflows i64.
    let cases: &[(&str, Option<i64>, Option<i64>)] = &[
        ("0", Some(0), Some(0)),
        ("-0", Some(0), Some(0)),
        ("+0.000", Some(0), Some(0)),
        ("0Ki", Some(0), Some(0)),
        ("0e999999999999999999999", Some(0), Some(0)),
        ("1", Some(1), Some(1000)),
        ("+1", Some(1), Some(1000)),
        ("000123", Some(123), Some(123_000)),
        ("1.", Some(1), Some(1000)),
        (".5", Some(1), Some(500)),
        ("1.5", Some(2), Some(1500)),
        ("-1.5", Some(-2), Some(-1500)),
        ("100m", Some(1), Some(100)),
        ("-100m", Some(-1), Some(-100)),
        ("3800m", Some(4), Some(3800)),
        ("0.1m", Some(1), Some(1)),
        ("1n", Some(1), Some(1)),
        ("1500000n", Some(1), Some(2)),
        ("1u", Some(1), Some(1)),
        ("1k", Some(1000), Some(1_000_000)),
        ("1M", Some(1_000_000), Some(1_000_000_000)),
        ("1G", Some(1_000_000_000), Some(1_000_000_000_000)),
        ("1T", Some(1_000_000_000_000), Some(1_000_000_000_000_000)),
        (
            "1P",
            Some(1_000_000_000_000_000),
            Some(1_000_000_000_000_000_000),
        ),
        ("1E", Some(1_000_000_000_000_000_000), None),
        ("1Ki", Some(1024), Some(1_024_000)),
        ("1Mi", Some(1 << 20), Some(1000 << 20)),
        ("1.5Gi", Some(1_610_612_736), Some(1_610_612_736_000)),
        ("0.5Ki", Some(512), Some(512_000)),
        ("0.001Ki", Some(2), Some(1024)),
        ("1Ti", Some(1 << 40), Some(1000 << 40)),
        ("1Pi", Some(1 << 50), Some(1000 << 50)),
        ("7Ei", Some(7 << 60), None),
        ("8Ei", None, None),
        ("-8Ei", Some(i64::MIN), None),
        ("1e3", Some(1000), Some(1_000_000)),
        ("1E3", Some(1000), Some(1_000_000)),
        ("1e+3", Some(1000), Some(1_000_000)),
        ("5E-2", Some(1), Some(50)),
        ("1.25e-1", Some(1), Some(125)),
        ("12e-1", Some(2), Some(1200)),
        ("1e-999999999999999999999999", Some(1), Some(1)),
        ("-1e-30", Some(-1), Some(-1)),
        ("0.000000000000000000000000000001", Some(1), Some(1)),
        ("12345678901234567890123456789e-28", Some(2), Some(1235)),
        ("9223372036854775807", Some(i64::MAX), None),
        ("-9223372036854775808", Some(i64::MIN), None),
        ("9223372036854775808", None, None),
        (
            "9223372036854775807m",
            Some(9_223_372_036_854_776),
            Some(i64::MAX),
        ),
        (
            "9223372036854775.807",
            Some(9_223_372_036_854_776),
            Some(i64::MAX),
        ),
        ("9223372036854775.808", Some(9_223_372_036_854_776), None),
        ("1e18", Some(1_000_000_000_000_000_000), None),
        ("1e19", None, None),
        ("1e99999999999999999999999", None, None),
        (
            "100000000000000000000000000000000000000000e-40",
            Some(10),
            Some(10_000),
        ),
    ];
    for &(input, expected_value, expected_millis) in cases {
        assert_eq!(
            quantity::value(&q(input)).ok(),
            expected_value,
            "value({input:?}): {:?}",
            quantity::value(&q(input))
        );
        assert_eq!(
            quantity::cpu_millis(&q(input)).ok(),
            expected_millis,
            "cpu_millis({input:?}): {:?}",
            quantity::cpu_millis(&q(input))
        );
    }
}

#[test]
fn overflow_is_reported_with_the_unit() {
    let error = quantity::value(&q("1e19")).unwrap_err();
    assert_eq!(
        error.reason,
        QuantityErrorReason::Overflow { in_millis: false }
    );
    assert_eq!(
        error.to_string(),
        r#"invalid quantity "1e19": the value does not fit in a signed 64-bit integer"#
    );
    let error = quantity::cpu_millis(&q("1E")).unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"invalid quantity "1E": the value in millis does not fit in a signed 64-bit integer"#
    );
}

#[test]
fn garbage_is_rejected_with_a_reason() {
    use QuantityErrorReason::{Empty, InvalidExponent, MissingNumber, UnknownSuffix};
    let suffix = |s: &str| UnknownSuffix(s.to_owned());
    let exponent = |s: &str| InvalidExponent(s.to_owned());
    let cases = [
        ("", Empty),
        ("12Qi", suffix("Qi")),
        ("1.5.3", suffix(".3")),
        ("--1", MissingNumber),
        ("+-1", MissingNumber),
        ("1e", exponent("e")),
        ("1e+", exponent("e+")),
        ("1e3.5", exponent("e3.5")),
        ("1ee3", exponent("ee3")),
        ("1e3Ki", exponent("e3Ki")),
        ("1E3Ki", exponent("E3Ki")),
        ("+", MissingNumber),
        ("-", MissingNumber),
        (".", MissingNumber),
        ("-.", MissingNumber),
        ("Ki", MissingNumber),
        ("m", MissingNumber),
        ("abc", MissingNumber),
        ("inf", MissingNumber),
        ("NaN", MissingNumber),
        (" 1", MissingNumber),
        ("1 ", suffix(" ")),
        ("1 Gi", suffix(" Gi")),
        ("1K", suffix("K")),
        ("1ki", suffix("ki")),
        ("1KiB", suffix("KiB")),
        ("1Gb", suffix("Gb")),
        ("1mm", suffix("mm")),
        ("0x10", suffix("x10")),
        ("1_000", suffix("_000")),
        ("1,5", suffix(",5")),
        ("1-", suffix("-")),
        ("1\u{0661}", suffix("\u{0661}")),
    ];
    for (input, reason) in cases {
        let value_error = quantity::value(&q(input)).unwrap_err();
        assert_eq!(value_error.reason, reason, "value({input:?})");
        assert_eq!(value_error.input, input);
        let millis_error = quantity::cpu_millis(&q(input)).unwrap_err();
        assert_eq!(millis_error.reason, reason, "cpu_millis({input:?})");
    }
}

#[test]
fn error_messages_name_the_input_and_the_fix() {
    let cases = [
        ("", r#"invalid quantity "": empty string"#),
        (
            "12Qi",
            r#"invalid quantity "12Qi": unknown suffix "Qi" (expected one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like 1e3)"#,
        ),
        (
            "--1",
            r#"invalid quantity "--1": expected a number such as 1, 2.5, .5 or -1 before any suffix"#,
        ),
        (
            "1e",
            r#"invalid quantity "1e": invalid exponent "e" (expected e or E followed by an integer, like 1e3 or 5E-2)"#,
        ),
    ];
    for (input, message) in cases {
        assert_eq!(quantity::value(&q(input)).unwrap_err().to_string(), message);
    }
}
