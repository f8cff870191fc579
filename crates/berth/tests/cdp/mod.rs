//! A small Chrome DevTools Protocol client for the report tests: headless Chromium (Debian's
//! package, `scripts/chromium.sh` installs it) driven over `--remote-debugging-pipe`, so no
//! port is opened and no WebSocket library is needed. Messages are JSON texts ended by a NUL
//! byte; Chromium reads them from its file descriptor 3 and writes on 4, which a shell maps
//! to the pipes of its standard input and output before it becomes Chromium (`exec`).
//!
//! Every console error or warning, uncaught exception, log entry of level error or warning,
//! and request for anything but the page itself is kept as a *problem*; the tests assert
//! there are none.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The longest wait for one answer or event.
const TIMEOUT: Duration = Duration::from_secs(60);
/// What Chromium answers a command sent to a page that a navigation has just replaced.
const NAVIGATED: &str = "Inspected target navigated or closed";
/// The viewport pages are laid out and captured at (CSS pixels, device scale 1).
pub const VIEWPORT: (u32, u32) = (1280, 900);

/// Where Chromium is: `BERTH_CHROMIUM`, else Debian's `/usr/bin/chromium`.
fn chromium_path() -> PathBuf {
    std::env::var_os("BERTH_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"))
}

/// A headless Chromium with one page, closed on drop.
pub struct Browser {
    child: Child,
    input: ChildStdin,
    messages: Receiver<Value>,
    next_id: u64,
    session: String,
    page_url: String,
    problems: Vec<String>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts Chromium and opens a blank page of [`VIEWPORT`]'s size.
    pub fn launch() -> Browser {
        let chromium = chromium_path();
        assert!(
            chromium.exists(),
            "{} is missing: run `bash scripts/chromium.sh` (scripts/test.sh does) or set \
             BERTH_CHROMIUM",
            chromium.display()
        );
        let profile = tempfile::tempdir().expect("profile directory");
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 </dev/null >/dev/null"#)
            .arg(&chromium)
            .args([
                "--headless",
                "--remote-debugging-pipe",
                // Tests run as root here; Chromium refuses its sandbox as root.
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-default-apps",
                "--mute-audio",
                "--hide-scrollbars",
                // No name resolves: whatever a page asked for could not leave the machine.
                "--host-resolver-rules=MAP * ~NOTFOUND",
                &format!("--window-size={},{}", VIEWPORT.0, VIEWPORT.1),
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromium.display()));
        let input = child.stdin.take().expect("chromium's pipe in");
        let output = child.stdout.take().expect("chromium's pipe out");
        let (send, messages) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(output);
            let mut buf = Vec::new();
            while let Ok(n) = reader.read_until(0, &mut buf) {
                if n == 0 {
                    break;
                }
                if buf.last() == Some(&0) {
                    buf.pop();
                }
                let Ok(message) = serde_json::from_slice::<Value>(&buf) else {
                    break;
                };
                if send.send(message).is_err() {
                    break;
                }
                buf.clear();
            }
        });
        let mut browser = Browser {
            child,
            input,
            messages,
            next_id: 0,
            session: String::new(),
            page_url: String::new(),
            problems: Vec::new(),
            _profile: profile,
        };
        let target = browser.call("Target.createTarget", json!({"url": "about:blank"}));
        let attached = browser.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        );
        browser.session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        for domain in ["Runtime", "Log", "Page", "Network"] {
            browser.page_call(&format!("{domain}.enable"), json!({}));
        }
        browser.page_call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": VIEWPORT.0, "height": VIEWPORT.1, "deviceScaleFactor": 1,
                   "mobile": false}),
        );
        browser
    }

    /// Loads `file` and waits for its load event.
    pub fn open(&mut self, file: &Path) -> &mut Self {
        let path = file.canonicalize().expect("page path");
        self.page_url = format!("file://{}", path.display());
        let answer = self.page_call("Page.navigate", json!({"url": self.page_url}));
        assert!(
            answer.get("errorText").is_none(),
            "navigating to {}: {answer}",
            self.page_url
        );
        self.wait_event("Page.loadEventFired");
        self
    }

    /// Waits until `expression` is true in the page (polling every 20 ms).
    pub fn wait_until(&mut self, expression: &str) {
        let deadline = Instant::now() + TIMEOUT;
        while self.eval_unless_navigating(expression) != Some(json!(true)) {
            assert!(
                Instant::now() < deadline,
                "{expression} did not become true; problems: {:?}",
                self.problems()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The value of a JavaScript expression in the page (promises awaited).
    pub fn eval(&mut self, expression: &str) -> Value {
        let answer = self.page_call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
        );
        assert!(
            answer.get("exceptionDetails").is_none(),
            "{expression} threw: {}",
            answer["exceptionDetails"]
        );
        answer["result"]["value"].clone()
    }

    /// [`Browser::eval`], or None when the page was navigating (a reload the test started)
    /// and Chromium dropped the evaluation with the page it was in.
    fn eval_unless_navigating(&mut self, expression: &str) -> Option<Value> {
        let session = self.session.clone();
        let answer = self.try_send(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            Some(&session),
        );
        match answer {
            Ok(answer) => {
                assert!(
                    answer.get("exceptionDetails").is_none(),
                    "{expression} threw: {}",
                    answer["exceptionDetails"]
                );
                Some(answer["result"]["value"].clone())
            }
            Err(error) if error["message"] == json!(NAVIGATED) => None,
            Err(error) => panic!("Runtime.evaluate: {error}"),
        }
    }

    /// A PNG of the viewport.
    pub fn screenshot(&mut self) -> Vec<u8> {
        use base64::Engine as _;
        let answer = self.page_call("Page.captureScreenshot", json!({"format": "png"}));
        base64::engine::general_purpose::STANDARD
            .decode(answer["data"].as_str().expect("screenshot data"))
            .expect("base64 screenshot")
    }

    /// Every problem seen so far: console errors and warnings, uncaught exceptions, error
    /// and warning log entries, requests for anything but the page.
    pub fn problems(&mut self) -> Vec<String> {
        // A round trip, so events the page sent before it are in.
        self.page_call("Runtime.evaluate", json!({"expression": "0"}));
        self.problems.clone()
    }

    fn page_call(&mut self, method: &str, params: Value) -> Value {
        let session = self.session.clone();
        self.send(method, params, Some(&session))
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        self.send(method, params, None)
    }

    fn send(&mut self, method: &str, params: Value, session: Option<&str>) -> Value {
        self.try_send(method, params, session)
            .unwrap_or_else(|error| panic!("{method}: {error}"))
    }

    /// Sends a command and waits for its answer: its result, or the error Chromium gave.
    fn try_send(
        &mut self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        self.input
            .write_all(&bytes)
            .and_then(|()| self.input.flush())
            .unwrap_or_else(|e| panic!("sending {method} to chromium: {e}"));
        loop {
            let m = self.next_message(method);
            if m["id"] == json!(id) {
                return match m.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(m["result"].clone()),
                };
            }
        }
    }

    fn wait_event(&mut self, event: &str) -> Value {
        loop {
            let m = self.next_message(event);
            if m["method"] == json!(event) {
                return m;
            }
        }
    }

    /// The next message; events are noted as problems where they are ones.
    fn next_message(&mut self, waiting_for: &str) -> Value {
        let m = match self.messages.recv_timeout(TIMEOUT) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                panic!("chromium did not answer {waiting_for} within {TIMEOUT:?}")
            }
            Err(RecvTimeoutError::Disconnected) => {
                panic!("chromium closed its pipe while {waiting_for} was awaited")
            }
        };
        if let Some(problem) = self.problem(&m) {
            self.problems.push(problem);
        }
        m
    }

    fn problem(&self, m: &Value) -> Option<String> {
        let params = &m["params"];
        match m["method"].as_str()? {
            "Runtime.exceptionThrown" => {
                let d = &params["exceptionDetails"];
                let what = d["exception"]["description"].as_str().unwrap_or_default();
                Some(format!("uncaught exception: {} {what}", d["text"]))
            }
            "Runtime.consoleAPICalled" => {
                let kind = params["type"].as_str().unwrap_or_default();
                matches!(kind, "error" | "warning" | "assert").then(|| {
                    let args: Vec<String> = params["args"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|a| {
                            a.get("value")
                                .map(Value::to_string)
                                .or_else(|| a["description"].as_str().map(str::to_string))
                                .unwrap_or_default()
                        })
                        .collect();
                    format!("console.{kind}: {}", args.join(" "))
                })
            }
            "Log.entryAdded" => {
                let e = &params["entry"];
                let level = e["level"].as_str().unwrap_or_default();
                matches!(level, "error" | "warning")
                    .then(|| format!("log {level} ({}): {}", e["source"], e["text"]))
            }
            "Network.requestWillBeSent" => {
                let url = params["request"]["url"].as_str().unwrap_or_default();
                (url != self.page_url && url != "about:blank")
                    .then(|| format!("the page requested {url}"))
            }
            _ => None,
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Ask politely, then end the process this test started, by its id.
        let mut bytes = json!({"id": 0, "method": "Browser.close"})
            .to_string()
            .into_bytes();
        bytes.push(0);
        let _ = self.input.write_all(&bytes);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
