//! A YAML Policy, read as kube-scheduler v1.22.17 reads one.
//!
//! v1.22 decodes the policy file with its scheme's universal decoder
//! (pkg/scheduler/scheduler.go, `initPolicyFromFile`): text that starts with `{` is JSON,
//! anything else goes through sigs.k8s.io/yaml v1.2.0's `YAMLToJSON` (go-yaml v2, YAML 1.1)
//! and the resulting JSON through the same strict JSON decoding (k8s.io/apimachinery
//! v0.22.17, pkg/runtime/serializer/json/json.go, `Decode`). This module does the same
//! conversion, so a YAML Policy meets exactly the JSON decoding a JSON Policy meets, and
//! remembers where each value came from, so errors point into the YAML file:
//!
//! - plain scalars resolve as go-yaml v2.4.0's `resolve` (resolve.go) resolves them: `y`,
//!   `yes`, `on`, `true` (any of their three casings) are true and the `n`/`no`/`off`/`false`
//!   family false; `~`, `null` and nothing are null; integers are Go's `ParseInt(s, 0, 64)`
//!   after `_` is removed (`0x1F`, `0o17`, `017` octal, `0b101`); floats match its
//!   `yamlStyleFloat`; everything else, quoted and block scalars, and timestamps are strings;
//! - map keys become strings as `YAMLToJSON` makes them (`1` -> "1", `true` -> "true"); a
//!   null key is refused, as it refuses one;
//! - floats are written as Go's `encoding/json` writes them, so `weight: 2.0` is the integer
//!   2, as in v1.22;
//! - anchors, aliases and `<<` merge keys are expanded; a key a merge repeats is a duplicate,
//!   as v1.22's strict pass (`YAMLToJSONStrict`) finds it.
//!
//! Berth refuses a second document, which v1.22 would silently ignore. The syntax is read by
//! saphyr-parser (YAML 1.2 syntax, which block and flow collections, quoting and comments
//! share with 1.1), so syntax errors are in its words and at its positions, not go-yaml's.

use std::borrow::Cow;
use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span, Tag};

use crate::file::MAX_NESTING;

/// Most values one file may hold, each alias's and each anchor's copy counted: real policies
/// have a few hundred, and nested aliases could otherwise expand without bound.
const MAX_VALUES: usize = 1_000_000;

/// A 1-based line and column in the YAML text.
pub(crate) type Mark = (usize, usize);

/// Why a YAML text could not be turned into JSON.
#[derive(Debug)]
pub(crate) enum YamlError {
    /// Not well-formed YAML, or not one document.
    Syntax { mark: Mark, message: String },
    /// Well-formed YAML with a value JSON cannot hold, at a JSON path.
    Value {
        mark: Mark,
        path: String,
        message: String,
    },
}

/// The JSON text a YAML text converts to, one token per line, with the YAML position of
/// each line's token.
pub(crate) struct Converted {
    pub(crate) json: String,
    marks: Vec<Mark>,
}

impl Converted {
    /// The YAML position of what is on 1-based `line` of the JSON text.
    pub(crate) fn mark(&self, line: usize) -> Mark {
        let last = self.marks.last().copied().unwrap_or((1, 1));
        line.checked_sub(1)
            .and_then(|index| self.marks.get(index).copied())
            .unwrap_or(last)
    }
}

/// Converts a YAML document to JSON as v1.22 does.
pub(crate) fn to_json(text: &str) -> Result<Converted, YamlError> {
    let root = Reader::default().read(text)?;
    let mut emitter = Emitter {
        json: String::with_capacity(text.len() * 2),
        marks: Vec::new(),
    };
    emitter.emit(&root, &mut String::new(), "")?;
    Ok(Converted {
        json: emitter.json,
        marks: emitter.marks,
    })
}

#[derive(Clone, Debug)]
struct Node {
    mark: Mark,
    value: Value,
}

#[derive(Clone, Debug)]
enum Value {
    Null,
    Bool(bool),
    /// In the ranges of Go's int64 and uint64.
    Int(i128),
    Float(f64),
    Str(String),
    /// A plain `<<`: a merge when it is a key, the string "<<" elsewhere.
    Merge,
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

/// A mapping's entries so far, and its key while the value is read.
type OpenMap = (Vec<(Node, Node)>, Option<Node>);

/// A collection being read.
struct Frame {
    mark: Mark,
    anchor: usize,
    /// `Some` for a mapping.
    map: Option<OpenMap>,
    items: Vec<Node>,
}

#[derive(Default)]
struct Reader {
    anchors: HashMap<usize, Node>,
    values: usize,
}

impl Reader {
    fn read(mut self, text: &str) -> Result<Node, YamlError> {
        let mut parser = Parser::new_from_str(text);
        let mut stack: Vec<Frame> = Vec::new();
        let mut root: Option<Node> = None;
        let mut documents = 0;
        while let Some(next) = parser.next_event() {
            let (event, span) = next.map_err(|error| YamlError::Syntax {
                mark: (error.marker().line(), error.marker().col() + 1),
                message: error.info().to_owned(),
            })?;
            let mark = start(&span);
            let node = match event {
                Event::StreamEnd => break,
                Event::Nothing | Event::StreamStart | Event::DocumentEnd => continue,
                Event::DocumentStart(_) => {
                    documents += 1;
                    if documents > 1 {
                        return Err(YamlError::Syntax {
                            mark,
                            message: "a second YAML document starts here; a Policy file holds \
                                      one (kube-scheduler v1.22 would silently ignore the rest)"
                                .to_owned(),
                        });
                    }
                    continue;
                }
                Event::Alias(id) => {
                    let Some(node) = self.anchors.get(&id) else {
                        return Err(YamlError::Syntax {
                            mark,
                            message: "an alias to an anchor that is not defined before it"
                                .to_owned(),
                        });
                    };
                    let node = node.clone();
                    self.count(size(&node), mark)?;
                    node
                }
                Event::Scalar(text, style, anchor, tag) => {
                    self.count(1, mark)?;
                    let value = scalar(text, style, tag.as_deref())
                        .map_err(|message| YamlError::Syntax { mark, message })?;
                    self.anchored(anchor, Node { mark, value })?
                }
                Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                    if stack.len() >= MAX_NESTING {
                        return Err(YamlError::Syntax {
                            mark,
                            message: format!(
                                "nested deeper than {MAX_NESTING} levels; a Policy nests about \
                                 5 levels deep"
                            ),
                        });
                    }
                    self.count(1, mark)?;
                    let map = matches!(event, Event::MappingStart(..)).then(|| (Vec::new(), None));
                    stack.push(Frame {
                        mark,
                        anchor,
                        map,
                        items: Vec::new(),
                    });
                    continue;
                }
                Event::SequenceEnd | Event::MappingEnd => {
                    let Some(frame) = stack.pop() else { continue };
                    let value = match frame.map {
                        Some((entries, _)) => Value::Map(entries),
                        None => Value::Seq(frame.items),
                    };
                    self.anchored(
                        frame.anchor,
                        Node {
                            mark: frame.mark,
                            value,
                        },
                    )?
                }
            };
            match stack.last_mut() {
                None => root = Some(node),
                Some(Frame {
                    map: Some((entries, key)),
                    ..
                }) => match key.take() {
                    None => *key = Some(node),
                    Some(key) => entries.push((key, node)),
                },
                Some(frame) => frame.items.push(node),
            }
        }
        root.ok_or_else(|| YamlError::Syntax {
            mark: (1, 1),
            message: "the file holds no YAML value, only comments; a Policy is a mapping such \
                      as `kind: Policy`"
                .to_owned(),
        })
    }

    fn anchored(&mut self, anchor: usize, node: Node) -> Result<Node, YamlError> {
        if anchor != 0 {
            self.count(size(&node), node.mark)?;
            self.anchors.insert(anchor, node.clone());
        }
        Ok(node)
    }

    fn count(&mut self, values: usize, mark: Mark) -> Result<(), YamlError> {
        self.values = self.values.saturating_add(values);
        if self.values > MAX_VALUES {
            return Err(YamlError::Syntax {
                mark,
                message: format!(
                    "the file holds more than {MAX_VALUES} values (aliases and anchors \
                     expanded); a Policy has a few hundred"
                ),
            });
        }
        Ok(())
    }
}

fn start(span: &Span) -> Mark {
    (span.start.line(), span.start.col() + 1)
}

fn size(node: &Node) -> usize {
    match &node.value {
        Value::Seq(items) => 1 + items.iter().map(size).sum::<usize>(),
        Value::Map(entries) => {
            1 + entries
                .iter()
                .map(|(key, value)| size(key) + size(value))
                .sum::<usize>()
        }
        _ => 1,
    }
}

/// A scalar's value: go-yaml v2 resolves plain untagged scalars, takes quoted and block
/// scalars as strings, checks a core-schema tag against the text, and leaves a scalar with
/// any other tag as its text.
fn scalar(text: Cow<'_, str>, style: ScalarStyle, tag: Option<&Tag>) -> Result<Value, String> {
    let Some(tag) = tag else {
        return Ok(if style == ScalarStyle::Plain {
            resolve(&text)
        } else {
            Value::Str(text.into_owned())
        });
    };
    if !tag.is_yaml_core_schema() {
        return Ok(Value::Str(text.into_owned()));
    }
    let wanted = tag.suffix.as_str();
    if wanted == "str" {
        return Ok(Value::Str(text.into_owned()));
    }
    if wanted == "binary" {
        // go-yaml v2 decodes !!binary into the string of its bytes.
        let bytes = crate::syntax::decode_base64(&text)
            .map_err(|problem| format!("!!binary: {problem}"))?;
        return Ok(Value::Str(String::from_utf8_lossy(&bytes).into_owned()));
    }
    let resolved = resolve(&text);
    let found = match &resolved {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Float(_) => "float",
        Value::Merge => "merge",
        _ => "str",
    };
    match (wanted, resolved) {
        ("float", Value::Int(int)) => Ok(Value::Float(int as f64)),
        (_, resolved) if wanted == found => Ok(resolved),
        ("null" | "bool" | "int" | "float" | "merge", _) => {
            Err(format!("cannot decode !!{found} `{text}` as a !!{wanted}"))
        }
        _ => Ok(Value::Str(text.into_owned())),
    }
}

/// go-yaml v2.4.0's `resolve` for a plain scalar without a tag.
fn resolve(text: &str) -> Value {
    match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Value::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Value::Bool(false);
        }
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        "<<" => return Value::Merge,
        _ => {}
    }
    match text.as_bytes()[0] {
        b'.' => go_float(text).map_or_else(|| Value::Str(text.to_owned()), Value::Float),
        b'+' | b'-' | b'0'..=b'9' => {
            let plain = text.replace('_', "");
            if let Some(int) = go_int(&plain) {
                Value::Int(int)
            } else if let Some(float) = go_float(&plain) {
                Value::Float(float)
            } else {
                Value::Str(text.to_owned())
            }
        }
        _ => Value::Str(text.to_owned()),
    }
}

/// Go's `ParseInt(s, 0, 64)`, else `ParseUint(s, 0, 64)`: an optional sign, then `0x`, `0o`,
/// `0b` or a leading `0` (octal) choose the base.
fn go_int(text: &str) -> Option<i128> {
    let (negative, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let prefixed = |lower: &str, upper: &str| {
        body.strip_prefix(lower)
            .or_else(|| body.strip_prefix(upper))
    };
    let (radix, digits) = if let Some(digits) = prefixed("0x", "0X") {
        (16, digits)
    } else if let Some(digits) = prefixed("0o", "0O") {
        (8, digits)
    } else if let Some(digits) = prefixed("0b", "0B") {
        (2, digits)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    let magnitude = i128::try_from(u128::from_str_radix(digits, radix).ok()?).ok()?;
    let value = if negative { -magnitude } else { magnitude };
    let signed = (i128::from(i64::MIN)..=i128::from(i64::MAX)).contains(&value);
    // ParseUint takes no sign.
    let unsigned = !text.starts_with(['+', '-']) && value <= i128::from(u64::MAX);
    (signed || unsigned).then_some(value)
}

/// go-yaml v2's `yamlStyleFloat`, `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`,
/// then Go's `ParseFloat`, which refuses what overflows.
fn go_float(text: &str) -> Option<f64> {
    let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
    let rest = text.strip_prefix(['+', '-']).unwrap_or(text);
    let rest = if let Some(fraction) = rest.strip_prefix('.') {
        let n = digits(fraction);
        (n > 0).then_some(&fraction[n..])?
    } else {
        let n = digits(rest);
        if n == 0 {
            return None;
        }
        match rest[n..].strip_prefix('.') {
            Some(fraction) => &fraction[digits(fraction)..],
            None => &rest[n..],
        }
    };
    if let Some(exponent) = rest.strip_prefix(['e', 'E']) {
        let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        if exponent.is_empty() || digits(exponent) != exponent.len() {
            return None;
        }
    } else if !rest.is_empty() {
        return None;
    }
    text.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Writes JSON one token per line, recording where in the YAML each line's token was.
struct Emitter {
    json: String,
    marks: Vec<Mark>,
}

impl Emitter {
    fn line(&mut self, text: &str, suffix: &str, mark: Mark) {
        self.json.push_str(text);
        self.json.push_str(suffix);
        self.json.push('\n');
        self.marks.push(mark);
    }

    fn emit(&mut self, node: &Node, path: &mut String, suffix: &str) -> Result<(), YamlError> {
        let invalid = |path: &str, message: String| YamlError::Value {
            mark: node.mark,
            path: path.to_owned(),
            message,
        };
        match &node.value {
            Value::Null => self.line("null", suffix, node.mark),
            Value::Bool(b) => self.line(if *b { "true" } else { "false" }, suffix, node.mark),
            Value::Int(int) => self.line(&int.to_string(), suffix, node.mark),
            Value::Float(float) => {
                let Some(text) = go_json_float(*float) else {
                    return Err(invalid(
                        path,
                        format!(
                            "{float} (.nan or .inf) has no JSON form, so kube-scheduler v1.22 \
                             refuses it; expected a finite number"
                        ),
                    ));
                };
                self.line(&text, suffix, node.mark);
            }
            Value::Str(text) => self.line(&json_string(text), suffix, node.mark),
            Value::Merge => self.line("\"<<\"", suffix, node.mark),
            Value::Seq(items) => {
                self.line("[", "", node.mark);
                let base = path.len();
                for (index, item) in items.iter().enumerate() {
                    path.push_str(&format!("[{index}]"));
                    let comma = if index + 1 < items.len() { "," } else { "" };
                    self.emit(item, path, comma)?;
                    path.truncate(base);
                }
                self.line("]", suffix, node.mark);
            }
            Value::Map(entries) => {
                let mut merged = Vec::new();
                flatten(entries, &mut merged, path)?;
                self.line("{", "", node.mark);
                let base = path.len();
                for (index, (key, value)) in merged.iter().enumerate() {
                    let key_text = key_string(key).map_err(|message| YamlError::Value {
                        mark: key.mark,
                        path: path.clone(),
                        message,
                    })?;
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(&key_text);
                    self.line(&json_string(&key_text), ":", key.mark);
                    let comma = if index + 1 < merged.len() { "," } else { "" };
                    self.emit(value, path, comma)?;
                    path.truncate(base);
                }
                self.line("}", suffix, node.mark);
            }
        }
        Ok(())
    }
}

/// A mapping's entries with its `<<` merges spliced in where they stand: a merged key that
/// is also written out is then a duplicate, as v1.22's strict pass finds it.
fn flatten<'a>(
    entries: &'a [(Node, Node)],
    out: &mut Vec<&'a (Node, Node)>,
    path: &str,
) -> Result<(), YamlError> {
    for entry in entries {
        let (key, value) = entry;
        if !matches!(key.value, Value::Merge) {
            out.push(entry);
            continue;
        }
        let refused = || YamlError::Value {
            mark: value.mark,
            path: path.to_owned(),
            message: "a << merge takes a mapping or a list of mappings".to_owned(),
        };
        match &value.value {
            Value::Map(merged) => flatten(merged, out, path)?,
            Value::Seq(items) => {
                for item in items {
                    let Value::Map(merged) = &item.value else {
                        return Err(refused());
                    };
                    flatten(merged, out, path)?;
                }
            }
            _ => return Err(refused()),
        }
    }
    Ok(())
}

/// A key as sigs.k8s.io/yaml v1.2.0's `convertToJSONableObject` turns it into a string.
fn key_string(key: &Node) -> Result<String, String> {
    match &key.value {
        Value::Str(text) => Ok(text.clone()),
        Value::Int(int) => Ok(int.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Merge => Ok("<<".to_owned()),
        // It formats with 32-bit precision, as go-yaml writes floats.
        Value::Float(float) => Ok(match *float as f32 {
            f if f.is_nan() => ".nan".to_owned(),
            f if f == f32::INFINITY => ".inf".to_owned(),
            f if f == f32::NEG_INFINITY => "-.inf".to_owned(),
            f => f.to_string(),
        }),
        Value::Null => Err("a null key (~, null or nothing) cannot be a JSON key, and \
                            kube-scheduler v1.22 refuses it; expected a field name"
            .to_owned()),
        Value::Seq(_) | Value::Map(_) => Err("a list or mapping as a key cannot be a JSON key; \
                                               expected a field name"
            .to_owned()),
    }
}

/// Go's `encoding/json` form of a float: shortest digits, with an exponent below 1e-6 and
/// from 1e21 on (`1e+21`, `1e-7`); `None` for NaN and the infinities, which it refuses.
fn go_json_float(float: f64) -> Option<String> {
    if !float.is_finite() {
        return None;
    }
    let magnitude = float.abs();
    if magnitude == 0.0 || (1e-6..1e21).contains(&magnitude) {
        return Some(float.to_string());
    }
    let text = format!("{float:e}");
    Some(match text.split_once('e') {
        Some((mantissa, exponent)) if !exponent.starts_with('-') => {
            format!("{mantissa}e+{exponent}")
        }
        _ => text,
    })
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("a string serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(value: &Value) -> String {
        let node = Node {
            mark: (1, 1),
            value: value.clone(),
        };
        let mut emitter = Emitter {
            json: String::new(),
            marks: Vec::new(),
        };
        emitter.emit(&node, &mut String::new(), "").expect("emits");
        emitter.json.trim_end().to_owned()
    }

    /// Plain scalars as go-yaml v2.4.0's resolve.go resolves them (YAML 1.1), each written
    /// as sigs.k8s.io/yaml v1.2.0 then writes it in JSON. v1.22.17 reads `yes` as true and
    /// `010` as 8 (checked with the reference binary).
    #[test]
    fn plain_scalars_resolve_as_go_yaml_v2() {
        let cases: &[(&str, &str)] = &[
            ("yes", "true"),
            ("Yes", "true"),
            ("YES", "true"),
            ("y", "true"),
            ("Y", "true"),
            ("on", "true"),
            ("ON", "true"),
            ("True", "true"),
            ("no", "false"),
            ("n", "false"),
            ("off", "false"),
            ("Off", "false"),
            ("FALSE", "false"),
            ("yEs", "\"yEs\""),
            ("", "null"),
            ("~", "null"),
            ("Null", "null"),
            ("nil", "\"nil\""),
            ("10", "10"),
            ("+10", "10"),
            ("-10", "-10"),
            ("010", "8"),
            ("08", "8"),
            ("0o17", "15"),
            ("0x1F", "31"),
            ("-0x10", "-16"),
            ("0b101", "5"),
            ("1_000", "1000"),
            ("9223372036854775807", "9223372036854775807"),
            ("18446744073709551615", "18446744073709551615"),
            // ParseUint takes no sign, so this one is a float.
            ("+18446744073709551615", "18446744073709552000"),
            ("18446744073709551616", "18446744073709552000"),
            ("2.0", "2"),
            ("1.5", "1.5"),
            (".5", "0.5"),
            ("1.", "1"),
            ("1e3", "1000"),
            ("1E-7", "1e-7"),
            ("1e21", "1e+21"),
            ("1e400", "\"1e400\""),
            ("0x1p3", "\"0x1p3\""),
            ("1.2.3", "\"1.2.3\""),
            ("2001-12-14", "\"2001-12-14\""),
            ("12:30", "\"12:30\""),
            ("-", "\"-\""),
            ("<<", "\"<<\""),
        ];
        for (text, want) in cases {
            assert_eq!(json(&resolve(text)), *want, "{text:?}");
        }
    }

    #[test]
    fn tags_and_styles() {
        let tag = |suffix: &str| Tag {
            handle: "tag:yaml.org,2002:".to_owned(),
            suffix: suffix.to_owned(),
        };
        let local = Tag {
            handle: "!".to_owned(),
            suffix: "custom".to_owned(),
        };
        // (text, style, tag, JSON or error)
        type Case<'a> = (
            &'a str,
            ScalarStyle,
            Option<&'a Tag>,
            Result<&'a str, &'a str>,
        );
        let cases: &[Case] = &[
            ("yes", ScalarStyle::SingleQuoted, None, Ok("\"yes\"")),
            ("10", ScalarStyle::DoubleQuoted, None, Ok("\"10\"")),
            ("on", ScalarStyle::Literal, None, Ok("\"on\"")),
            ("10", ScalarStyle::Plain, Some(&tag("str")), Ok("\"10\"")),
            ("10", ScalarStyle::Plain, Some(&tag("float")), Ok("10")),
            ("10", ScalarStyle::DoubleQuoted, Some(&tag("int")), Ok("10")),
            (
                "QUJD",
                ScalarStyle::Plain,
                Some(&tag("binary")),
                Ok("\"ABC\""),
            ),
            ("10", ScalarStyle::Plain, Some(&local), Ok("\"10\"")),
            (
                "abc",
                ScalarStyle::Plain,
                Some(&tag("int")),
                Err("cannot decode !!str `abc` as a !!int"),
            ),
            (
                "1.5",
                ScalarStyle::Plain,
                Some(&tag("int")),
                Err("cannot decode !!float `1.5` as a !!int"),
            ),
        ];
        for (text, style, tag, want) in cases {
            let got = scalar(Cow::Borrowed(text), *style, *tag).map(|value| json(&value));
            assert_eq!(
                got.as_deref().map_err(String::as_str),
                *want,
                "{text:?} {style:?} {tag:?}"
            );
        }
    }
}
