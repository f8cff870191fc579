//! Reading configuration files that someone else may have pointed anywhere: a ConfigMap
//! volume is a tree of symlinks, and a careless (or hostile) edit can leave a policy or a
//! plugin module pointing at `/dev/zero`, a FIFO or a huge file. `std::fs::read` would then
//! allocate without bound or block for ever, so the file is checked first.

use std::io::{self, Read};
use std::path::Path;

/// Largest policy file accepted: real policies are a few KiB.
pub const MAX_POLICY_BYTES: u64 = 4 * 1024 * 1024;

/// Reads `path` (following symlinks) if it is a regular file of at most `max_bytes` bytes.
/// Anything else (a device, a FIFO, a socket, a directory, a larger file) is an
/// `InvalidInput` error saying what was found and what is accepted, and is never read: a
/// FIFO is not even opened, since opening one blocks until a writer appears.
pub fn read_regular_file(path: &Path, max_bytes: u64) -> io::Result<Vec<u8>> {
    let not_regular = |meta: &std::fs::Metadata| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "it is a {}, not a regular file (symlinks to regular files are followed)",
                kind_of(meta)
            ),
        )
    };
    let too_big = |len: u64| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("it is {len} bytes, over the limit of {max_bytes} bytes"),
        )
    };
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    if meta.len() > max_bytes {
        return Err(too_big(meta.len()));
    }
    let file = std::fs::File::open(path)?;
    // The path may have been swapped between the two looks: check what was opened.
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    let mut bytes = Vec::with_capacity(meta.len().min(max_bytes) as usize);
    file.take(max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Reads a UTF-8 text file through [`read_regular_file`].
pub fn read_regular_text(path: &Path, max_bytes: u64) -> io::Result<String> {
    String::from_utf8(read_regular_file(path, max_bytes)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "it is not UTF-8 text".to_string(),
        )
    })
}

/// Deepest nesting of `[` and `{` accepted in a JSON or YAML file. Kubernetes objects and
/// policies nest about 20 deep; JSON embedded in string values (annotations) adds little.
pub const MAX_NESTING: usize = 256;

/// Where text first nests deeper than `max` levels of `[` / `{`: (1-based line, column).
///
/// Brackets are counted everywhere, inside strings and comments too, so the scan is a cheap
/// upper bound that no quoting can hide nesting from (a stray bracket in a string only
/// counts, it never lets real nesting through). It runs before any parser: YAML's scanner
/// costs time quadratic in flow nesting depth before a recursion limit could stop it.
pub fn too_deep(text: &str, max: usize) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let (mut line, mut line_start) = (1, 0);
    for (i, b) in text.bytes().enumerate() {
        match b {
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    let column = text[line_start..i].chars().count() + 1;
                    return Some((line, column));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'\n' => {
                line += 1;
                line_start = i + 1;
            }
            _ => {}
        }
    }
    None
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_cap() {
        let dir = tempfile::tempdir().expect("temp dir");
        let small = dir.path().join("small");
        std::fs::write(&small, b"abc").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&small, &link).expect("symlink");
        assert_eq!(read_regular_file(&link, 3).expect("read"), b"abc");
        let err = |p: &Path, cap| read_regular_file(p, cap).expect_err("refused").to_string();
        assert_eq!(err(&small, 2), "it is 3 bytes, over the limit of 2 bytes");
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        assert_eq!(
            err(&zero, 10),
            "it is a character device, not a regular file (symlinks to regular files are followed)"
        );
        assert!(err(dir.path(), 10).starts_with("it is a directory"));
    }

    #[test]
    fn nesting_is_bounded_whatever_the_quoting() {
        // (text, bound, where it is crossed: line and column)
        type Case<'a> = (&'a str, usize, Option<(usize, usize)>);
        let cases: &[Case] = &[
            ("{\"a\": [1, {\"b\": 2}]}", 3, None),
            ("{\"a\": [1, {\"b\": [2]}]}", 3, Some((1, 17))),
            ("a:\n  b: \"[[[\"\n", 2, Some((2, 9))),
            // Closers never bank credit for later openers.
            ("]]]]\n[[[", 2, Some((2, 3))),
            ("- [x]\n- [y]\n", 1, None),
        ];
        for (text, max, want) in cases {
            assert_eq!(too_deep(text, *max), *want, "{text}");
        }
    }
}
