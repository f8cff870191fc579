//! Control-plane processes with a hard lifetime bound and process-group teardown.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result};
use rustix::process::{Pid, Signal, kill_process_group};

/// Runs before the server is exec'd, in the server's own process group: a background loop
/// kills the server once the test process is gone (so a SIGKILLed or aborted test leaves
/// nothing behind for more than a second) or the lifetime bound has passed (so a hung test
/// cannot keep servers alive), removes the cluster's directory if the test process is gone
/// (nobody else will), and ends the rest of the group. `exec` then makes the server the
/// group leader, so the harness's child is the server itself.
const WATCHDOG: &str = r#"
parent=$1 limit=$2 dir=$3
shift 3
server=$$
(
    elapsed=0
    while [ "$elapsed" -lt "$limit" ] && kill -0 "$parent" 2>/dev/null; do
        sleep 1
        elapsed=$((elapsed + 1))
    done
    echo "berth-testcluster watchdog: killing $1 (lifetime bound or test process gone)" >&2
    kill -KILL "$server"
    if ! kill -0 "$parent" 2>/dev/null; then rm -rf "$dir"; fi
    kill -KILL 0
) </dev/null &
exec "$@"
"#;

/// A command running `program` (add its arguments to the command) in a new process group
/// under the watchdog: it is killed when the test process is gone or after `lifetime`, and
/// `dir`, if given, is removed when the test process died. For servers a test starts itself,
/// such as the scheduler under test.
pub fn bounded_command(program: &Path, lifetime: Duration, dir: Option<&Path>) -> Command {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(WATCHDOG)
        .arg("sh")
        .arg(std::process::id().to_string())
        .arg(lifetime.as_secs().max(1).to_string())
        // `rm -rf ""` removes nothing.
        .arg(dir.map_or(Path::new(""), |d| d))
        .arg(program)
        .stdin(Stdio::null())
        .process_group(0);
    command
}

/// One running server, killed with its whole process group when dropped.
pub(crate) struct Server {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Server {
    /// Starts `program args` in a new process group, logging to `log`, bounded by `lifetime`;
    /// `dir` is the cluster's directory, removed if the test process dies.
    pub(crate) fn spawn(
        name: &'static str,
        program: &Path,
        args: &[String],
        dir: &Path,
        lifetime: Duration,
    ) -> Result<Self> {
        let log = dir.join(format!("{name}.log"));
        let out = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let err = out.try_clone()?;
        let child = bounded_command(program, lifetime, Some(dir))
            .args(args)
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("starting {name} ({})", program.display()))?;
        Ok(Self { name, child, log })
    }

    /// The server's process id, which is also its process group id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails with the log's tail if the server has exited.
    pub(crate) fn check_running(&mut self) -> Result<()> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => anyhow::bail!(
                "{} exited ({status}); last log lines:\n{}",
                self.name,
                self.log_tail(40)
            ),
        }
    }

    /// The last `lines` lines of the server's log.
    pub(crate) fn log_tail(&self, lines: usize) -> String {
        log_tail(&self.log, lines)
    }

    /// The server's name, for messages.
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    /// Kills the process group and reaps the server.
    pub(crate) fn kill(&mut self) {
        // ESRCH only means the group is already gone; there is nothing else to do about an
        // error in teardown.
        let _ = kill_process_group(Pid::from_child(&self.child), Signal::KILL);
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last `lines` lines of a log file (read from its last 64 KiB).
pub(crate) fn log_tail(path: &Path, lines: usize) -> String {
    let mut text = String::new();
    if let Ok(mut file) = File::open(path) {
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = file.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
        let mut bytes = Vec::new();
        let _ = file.read_to_end(&mut bytes);
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
