//! Syntax rules for names, label keys and values, selectors and base64, as Kubernetes defines them.
//!
//! Each check returns the first problem as a message, or `None` when the text is valid.

/// Longest label value and longest name part of a qualified name.
const MAX_NAME_PART: usize = 63;
/// Longest DNS-1123 subdomain.
const MAX_SUBDOMAIN: usize = 253;

/// Kubernetes' `IsQualifiedName`: an optional DNS subdomain prefix and `/`, then a name part.
pub(crate) fn qualified_name_error(value: &str) -> Option<String> {
    let mut parts = value.split('/');
    let (prefix, name) = match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, _) => (None, name),
        (Some(prefix), Some(name), None) => (Some(prefix), name),
        _ => {
            return Some(format!(
                "{value:?} has more than one '/': a qualified name is an optional DNS subdomain \
                 prefix and '/', then a name (e.g. 'example.com/MyName')"
            ));
        }
    };
    if let Some(prefix) = prefix
        && let Some(problem) = subdomain_error(prefix)
    {
        return Some(format!("prefix part of {value:?} {problem}"));
    }
    if name.is_empty() {
        return Some(format!("name part of {value:?} must be non-empty"));
    }
    name_part_error(name).map(|problem| format!("name part of {value:?} {problem}"))
}

/// Kubernetes' `IsValidLabelValue`: empty, or a name part.
pub(crate) fn label_value_error(value: &str) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    name_part_error(value).map(|problem| format!("label value {value:?} {problem}"))
}

/// Kubernetes' `IsExtendedResourceName` and `IsQualifiedName`, as extender validation applies them.
pub(crate) fn extended_resource_name_error(name: &str) -> Option<String> {
    if let Some(problem) = qualified_name_error(name) {
        return Some(problem);
    }
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    if native || name.starts_with("requests.") {
        return Some(format!(
            "{name:?} is not an extended resource name: it needs a domain prefix other than \
             kubernetes.io (e.g. 'example.com/foo') and must not start with 'requests.'"
        ));
    }
    // Quota tracks the resource as "requests.<name>", which must itself be a qualified name.
    qualified_name_error(&format!("requests.{name}")).map(|_| {
        format!("{name:?} is not an extended resource name: its prefix is too long for quota")
    })
}

/// Parses `k=v,k2=v2` as Kubernetes' `ConvertSelectorToLabelsMap` does; duplicate keys are errors.
pub(crate) fn parse_selector(selector: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    if selector.is_empty() {
        return Ok(pairs);
    }
    for term in selector.split(',') {
        let mut halves = term.split('=');
        let (Some(key), Some(value), None) = (halves.next(), halves.next(), halves.next()) else {
            return Err(format!(
                "invalid selector term {term:?}: expected key=value terms separated by commas, \
                 e.g. \"region=east,tier=web\""
            ));
        };
        let (key, value) = (key.trim(), value.trim());
        if let Some(problem) = qualified_name_error(key) {
            return Err(format!("invalid label key: {problem}"));
        }
        if let Some(problem) = label_value_error(value) {
            return Err(problem);
        }
        if pairs.iter().any(|(seen, _)| seen == key) {
            return Err(format!("label key {key:?} appears more than once"));
        }
        pairs.push((key.to_owned(), value.to_owned()));
    }
    Ok(pairs)
}

/// A taint as `kubectl taint` writes it, `key[=value][:effect]`, split into its parts; the
/// effect is returned as written (the caller decides which effects it accepts).
pub(crate) fn parse_taint(text: &str) -> Result<(String, Option<String>, Option<String>), String> {
    let (rest, effect) = match text.rsplit_once(':') {
        Some((rest, effect)) => (rest, Some(effect)),
        None => (text, None),
    };
    let (key, value) = match rest.split_once('=') {
        Some((key, value)) => (key, Some(value)),
        None => (rest, None),
    };
    if let Some(problem) = qualified_name_error(key) {
        return Err(format!(
            "invalid taint {text:?}: expected key[=value][:effect] with a label-style key: \
             {problem}"
        ));
    }
    if let Some(problem) = value.and_then(label_value_error) {
        return Err(format!(
            "invalid taint {text:?}: expected key[=value][:effect]: {problem}"
        ));
    }
    if effect == Some("") {
        return Err(format!(
            "invalid taint {text:?}: an empty effect after ':'; write the effect or leave out \
             the ':'"
        ));
    }
    Ok((
        key.to_owned(),
        value.map(str::to_owned),
        effect.map(str::to_owned),
    ))
}

/// Kubernetes' `IsDNS1123Label`, the rule for namespace names.
pub(crate) fn namespace_name_error(name: &str) -> Option<String> {
    let bytes = name.as_bytes();
    let lower_alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let ok = !bytes.is_empty()
        && bytes.len() <= MAX_NAME_PART
        && bytes.iter().all(|b| lower_alnum(b) || *b == b'-')
        && bytes.first().is_some_and(lower_alnum)
        && bytes.last().is_some_and(lower_alnum);
    (!ok).then(|| {
        format!(
            "invalid namespace name {name:?}: at most {MAX_NAME_PART} lowercase letters, digits \
             and '-', starting and ending with a letter or digit"
        )
    })
}

/// A plugin module path: relative, inside the plugins directory, naming a `.wasm` file.
pub(crate) fn module_path_error(module: &str) -> Option<String> {
    let problem = if module.is_empty() {
        "must name a module file, e.g. \"gpu-model.wasm\""
    } else if module.starts_with('/') || module.starts_with('\\') || module.contains(':') {
        "must be relative to the plugins directory, not an absolute path"
    } else if module
        .split(['/', '\\'])
        .any(|part| part == ".." || part.is_empty())
    {
        "must stay inside the plugins directory: no \"..\" and no empty path parts"
    } else if !module.ends_with(".wasm") {
        "must name a compiled module ending in \".wasm\""
    } else {
        return None;
    };
    Some(format!("{module:?} {problem}"))
}

/// Standard padded base64, skipping line breaks, as Go's `encoding/json` decodes `[]byte`.
pub(crate) fn decode_base64(text: &str) -> Result<Vec<u8>, String> {
    let symbols: Vec<u8> = text
        .bytes()
        .filter(|b| !matches!(b, b'\r' | b'\n'))
        .collect();
    if !symbols.len().is_multiple_of(4) {
        return Err(format!(
            "not valid base64: {} characters is not a multiple of 4 (padding '=' is required)",
            symbols.len()
        ));
    }
    let quads = symbols.chunks(4);
    let last = quads.len().saturating_sub(1);
    let mut out = Vec::with_capacity(symbols.len() / 4 * 3);
    for (index, quad) in quads.enumerate() {
        let padding = quad.iter().rev().take_while(|b| **b == b'=').count();
        if padding > 2 || (padding > 0 && index != last) {
            return Err(format!(
                "not valid base64: misplaced '=' in characters {}..{}",
                index * 4,
                index * 4 + 4
            ));
        }
        let mut bits: u32 = 0;
        for (offset, symbol) in quad.iter().take(4 - padding).enumerate() {
            let Some(value) = base64_value(*symbol) else {
                return Err(format!(
                    "not valid base64: illegal character at position {}",
                    index * 4 + offset
                ));
            };
            bits |= u32::from(value) << (18 - 6 * offset);
        }
        let [_, a, b, c] = bits.to_be_bytes();
        out.extend_from_slice(&[a, b, c][..3 - padding]);
    }
    Ok(out)
}

fn base64_value(symbol: u8) -> Option<u8> {
    match symbol {
        b'A'..=b'Z' => Some(symbol - b'A'),
        b'a'..=b'z' => Some(symbol - b'a' + 26),
        b'0'..=b'9' => Some(symbol - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most 63 characters.
fn name_part_error(name: &str) -> Option<String> {
    if name.len() > MAX_NAME_PART {
        return Some(format!("must be {MAX_NAME_PART} characters or less"));
    }
    let bytes = name.as_bytes();
    let ok = bytes
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric);
    (!ok).then(|| {
        "must consist of letters, digits, '-', '_' or '.', and start and end with a letter or digit"
            .to_owned()
    })
}

/// Kubernetes' `IsDNS1123Subdomain`.
fn subdomain_error(value: &str) -> Option<String> {
    if value.is_empty() {
        return Some("must be non-empty".to_owned());
    }
    if value.len() > MAX_SUBDOMAIN {
        return Some(format!("must be {MAX_SUBDOMAIN} characters or less"));
    }
    let label_ok = |label: &str| {
        let bytes = label.as_bytes();
        let lower_alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        bytes.iter().all(|b| lower_alnum(b) || *b == b'-')
            && bytes.first().is_some_and(lower_alnum)
            && bytes.last().is_some_and(lower_alnum)
    };
    (!value.split('.').all(label_ok)).then(|| {
        "must be a lowercase DNS subdomain: dot-separated parts of lowercase letters, digits and \
         '-', each starting and ending with a letter or digit (e.g. 'example.com')"
            .to_owned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_go_std_encoding() {
        let cases: &[(&str, Result<&[u8], &str>)] = &[
            ("", Ok(b"")),
            ("QQ==", Ok(b"A")),
            ("QUI=", Ok(b"AB")),
            ("QUJD", Ok(b"ABC")),
            ("QUJD\nRA==\r\n", Ok(b"ABCD")),
            ("QQ", Err("multiple of 4")),
            ("QQ==QUJD", Err("misplaced '='")),
            ("Q===", Err("misplaced '='")),
            ("QU*D", Err("illegal character at position 2")),
        ];
        for (text, want) in cases {
            match (decode_base64(text), want) {
                (Ok(got), Ok(want)) => assert_eq!(&got, want, "{text:?}"),
                (Err(got), Err(want)) => assert!(got.contains(want), "{text:?}: {got}"),
                (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn module_paths() {
        for ok in ["gpu.wasm", "team/cost.wasm", "./a.wasm"] {
            assert_eq!(module_path_error(ok), None, "{ok}");
        }
        for (bad, want) in [
            ("", "must name a module file"),
            ("/etc/x.wasm", "not an absolute path"),
            ("C:x.wasm", "not an absolute path"),
            ("../x.wasm", "no \"..\""),
            ("a//x.wasm", "no empty path parts"),
            ("x.wat", "ending in \".wasm\""),
        ] {
            let got = module_path_error(bad).unwrap_or_default();
            assert!(got.contains(want), "{bad:?}: {got}");
        }
    }

    #[test]
    fn qualified_names() {
        for ok in ["cpu", "example.com/foo", "a.b-c/X_y.z", "x"] {
            assert_eq!(qualified_name_error(ok), None, "{ok}");
        }
        for (bad, want) in [
            ("a/b/c", "more than one '/'"),
            ("/foo", "prefix part"),
            ("Example.com/foo", "lowercase DNS subdomain"),
            ("example.com/", "must be non-empty"),
            ("-foo", "start and end"),
            (&"x".repeat(64), "63 characters"),
        ] {
            let got = qualified_name_error(bad).unwrap_or_default();
            assert!(got.contains(want), "{bad}: {got}");
        }
    }

    #[test]
    fn extended_resource_names() {
        assert_eq!(extended_resource_name_error("example.com/foo"), None);
        for bad in [
            "foo",
            "kubernetes.io/foo",
            "requests.example.com/foo",
            "example.com/-x",
        ] {
            assert!(extended_resource_name_error(bad).is_some(), "{bad}");
        }
        let long_prefix = format!("{}.com/foo", "a".repeat(246));
        let got = extended_resource_name_error(&long_prefix).unwrap_or_default();
        assert!(got.contains("too long for quota"), "{got}");
    }

    #[test]
    fn taints() {
        let split = |text| parse_taint(text);
        let owned = |k: &str, v: Option<&str>, e: Option<&str>| {
            Ok((k.to_owned(), v.map(str::to_owned), e.map(str::to_owned)))
        };
        assert_eq!(split("gpu"), owned("gpu", None, None));
        assert_eq!(split("gpu="), owned("gpu", Some(""), None));
        assert_eq!(
            split("example.com/dedicated=tenant-a:NoSchedule"),
            owned(
                "example.com/dedicated",
                Some("tenant-a"),
                Some("NoSchedule")
            )
        );
        assert_eq!(
            split("gpu:NoExecute"),
            owned("gpu", None, Some("NoExecute"))
        );
        for (bad, want) in [
            ("", "name part"),
            ("=x", "name part"),
            ("a=b=c", "label value"),
            ("a:", "empty effect"),
            ("a/b/c=x", "more than one '/'"),
        ] {
            let got = parse_taint(bad).err().unwrap_or_default();
            assert!(got.contains(want), "{bad}: {got}");
        }
    }

    #[test]
    fn namespace_names() {
        for ok in ["a", "team-a", "kube-system", "x1"] {
            assert_eq!(namespace_name_error(ok), None, "{ok}");
        }
        for bad in ["", "Team", "-a", "a-", "a.b", &"a".repeat(64)] {
            assert!(namespace_name_error(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn selectors() {
        assert_eq!(parse_selector(""), Ok(vec![]));
        assert_eq!(
            parse_selector("a=1, example.com/b = x "),
            Ok(vec![
                ("a".into(), "1".into()),
                ("example.com/b".into(), "x".into())
            ])
        );
        assert_eq!(parse_selector("a="), Ok(vec![("a".into(), String::new())]));
        for (bad, want) in [
            ("a", "key=value"),
            ("a=1=2", "key=value"),
            ("a=1,", "key=value"),
            ("=1", "name part"),
            ("a=-x", "label value"),
            ("a=1,a=2", "more than once"),
        ] {
            let got = parse_selector(bad).err().unwrap_or_default();
            assert!(got.contains(want), "{bad}: {got}");
        }
    }
}
