//! Golden files shared by the CLI tests: compare an output with its expected file, or
//! rewrite the file when `BERTH_BLESS` is set.

use std::fs;
use std::path::Path;

/// Differences between the expected file and `got`, or a note that the file was blessed.
pub fn compare(expected: &Path, got: &str) -> Option<String> {
    if std::env::var_os("BERTH_BLESS").is_some() {
        fs::write(expected, got).expect("bless");
        return None;
    }
    let want = match fs::read_to_string(expected) {
        Ok(want) => want,
        Err(e) => {
            return Some(format!(
                "{}: {e} (BERTH_BLESS=1 writes it)",
                expected.display()
            ));
        }
    };
    if want == got {
        return None;
    }
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let mut diff = format!("{} differs:\n", expected.display());
    for i in 0..w.len().max(g.len()) {
        if w.get(i) != g.get(i) {
            diff.push_str(&format!(
                "line {}:\n  want {}\n  got  {}\n",
                i + 1,
                w.get(i).unwrap_or(&"<none>"),
                g.get(i).unwrap_or(&"<none>")
            ));
        }
    }
    if w == g {
        diff.push_str("(line endings or the final newline differ)\n");
    }
    Some(diff)
}
