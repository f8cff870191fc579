//! The container image `scripts/image.sh` builds: a valid OCI layout (every blob's digest and
//! size, the layer's diff ID), a config that runs `/berth` as 65532:65532 with the version,
//! source and revision labels, a layer holding nothing but a static, stripped `/berth`, and
//! that binary working: `--version`, `check` on the bundled policy and `simulate` print what
//! this build's berth prints, run from the unpacked root filesystem with an empty
//! environment, and, as root where an OCI runtime (runc or crun, or `BERTH_OCI_RUNTIME`) can
//! start a container, inside one: read-only root, no network, no capabilities, plus a short
//! WASM plugin benchmark when plugins/dist is built.
//!
//! The image is built by `scripts/image.sh` (a release build for the musl target, so not by
//! `cargo test`): `scripts/test.sh` runs it and sets `BERTH_IMAGE` to the OCI archive.
//! Without `BERTH_IMAGE` these tests skip and say so.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The OCI archive, or None (after saying so) when the test command did not build one.
fn archive() -> Option<PathBuf> {
    match std::env::var_os("BERTH_IMAGE") {
        Some(path) => Some(PathBuf::from(path)),
        None => {
            eprintln!(
                "SKIPPED: BERTH_IMAGE is not set. Build the image with `bash scripts/image.sh` \
                 and set BERTH_IMAGE to the archive path it prints (scripts/test.sh does both)"
            );
            None
        }
    }
}

fn run(command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("running {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The image unpacked: the layout, the chosen manifest's config, and its root filesystem.
struct Image {
    _dir: tempfile::TempDir,
    config: Value,
    rootfs: PathBuf,
    layer_listing: String,
    sizes: String,
}

impl Image {
    fn unpack(archive: &Path) -> Image {
        let dir = tempfile::tempdir().expect("temporary directory");
        let layout = dir.path().join("oci");
        std::fs::create_dir(&layout).expect("mkdir");
        run(Command::new("tar")
            .arg("-xf")
            .arg(archive)
            .arg("-C")
            .arg(&layout));

        let oci_layout: Value = read_json(&layout.join("oci-layout"));
        assert_eq!(oci_layout, json!({"imageLayoutVersion": "1.0.0"}));
        let index: Value = read_json(&layout.join("index.json"));
        assert_eq!(index["schemaVersion"], 2);
        let top = index["manifests"]
            .as_array()
            .expect("index.json's manifests");
        assert_eq!(top.len(), 1, "index.json names one image: {index}");
        assert_eq!(
            top[0]["annotations"]["org.opencontainers.image.ref.name"], VERSION,
            "the image is tagged with the workspace version"
        );

        // A multi-arch image (CI's) has an index between; pick this machine's manifest.
        let arch = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            other => panic!("no image architecture for {other}"),
        };
        let mut descriptor = top[0].clone();
        if descriptor["mediaType"] == "application/vnd.oci.image.index.v1+json" {
            let list: Value = serde_json::from_slice(&blob(&layout, &descriptor)).expect("JSON");
            descriptor = list["manifests"]
                .as_array()
                .expect("manifests")
                .iter()
                .find(|m| m["platform"]["architecture"] == arch)
                .unwrap_or_else(|| panic!("no {arch} manifest in {list}"))
                .clone();
        }
        assert_eq!(
            descriptor["mediaType"],
            "application/vnd.oci.image.manifest.v1+json"
        );
        let manifest: Value = serde_json::from_slice(&blob(&layout, &descriptor)).expect("JSON");
        assert_eq!(manifest["schemaVersion"], 2);
        assert_eq!(
            manifest["config"]["mediaType"],
            "application/vnd.oci.image.config.v1+json"
        );
        let config: Value =
            serde_json::from_slice(&blob(&layout, &manifest["config"])).expect("JSON");
        assert_eq!(config["os"], "linux");
        assert_eq!(config["architecture"], arch);

        let layers = manifest["layers"].as_array().expect("layers");
        assert_eq!(layers.len(), 1, "one layer: {manifest}");
        assert_eq!(
            layers[0]["mediaType"],
            "application/vnd.oci.image.layer.v1.tar+gzip"
        );
        let compressed = blob(&layout, &layers[0]);
        let layer_tar = dir.path().join("layer.tar");
        let gz = dir.path().join("layer.tar.gz");
        std::fs::write(&gz, &compressed).expect("write");
        let tar = run(Command::new("gzip").arg("-dc").arg(&gz)).stdout;
        std::fs::write(&layer_tar, &tar).expect("write");
        assert_eq!(
            config["rootfs"],
            json!({"type": "layers", "diff_ids": [format!("sha256:{}", sha256_hex(&tar))]}),
            "the config's diff ID is the uncompressed layer's digest"
        );
        let layer_listing = String::from_utf8(
            run(Command::new("tar")
                .args(["--list", "--verbose", "--numeric-owner", "--file"])
                .arg(&layer_tar))
            .stdout,
        )
        .expect("UTF-8");

        let rootfs = dir.path().join("rootfs");
        std::fs::create_dir(&rootfs).expect("mkdir");
        run(Command::new("tar")
            .arg("-xf")
            .arg(&layer_tar)
            .arg("-C")
            .arg(&rootfs));
        let binary_size = std::fs::metadata(rootfs.join("berth")).map_or(0, |m| m.len());
        let sizes = format!(
            "archive {} bytes, layer {} bytes gzipped ({} bytes as tar), /berth {binary_size} bytes",
            std::fs::metadata(archive).expect("archive").len(),
            compressed.len(),
            tar.len()
        );
        Image {
            _dir: dir,
            config,
            rootfs,
            layer_listing,
            sizes,
        }
    }

    fn berth(&self) -> PathBuf {
        self.rootfs.join("berth")
    }
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A blob of the layout, checked against its descriptor's digest and size.
fn blob(layout: &Path, descriptor: &Value) -> Vec<u8> {
    let digest = descriptor["digest"].as_str().expect("digest");
    let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
    let bytes = std::fs::read(layout.join("blobs/sha256").join(hex))
        .unwrap_or_else(|e| panic!("blob {digest}: {e}"));
    assert_eq!(sha256_hex(&bytes), hex, "blob {digest} has other content");
    assert_eq!(
        Some(bytes.len() as u64),
        descriptor["size"].as_u64(),
        "blob {digest}'s size"
    );
    bytes
}

/// Program header types and section types of an ELF64 little-endian file: statically linked
/// means no PT_INTERP (no dynamic loader asked for); stripped means no SHT_SYMTAB.
fn elf_static_and_stripped(bytes: &[u8]) -> (bool, bool) {
    assert_eq!(&bytes[..4], b"\x7fELF", "an ELF file");
    assert_eq!(bytes[4], 2, "ELF64");
    assert_eq!(bytes[5], 1, "little-endian");
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]) as usize;
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let u64_at =
        |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes")) as usize;
    let (phoff, phentsize, phnum) = (u64_at(0x20), u16_at(0x36), u16_at(0x38));
    let (shoff, shentsize, shnum) = (u64_at(0x28), u16_at(0x3A), u16_at(0x3C));
    const PT_INTERP: u32 = 3;
    const SHT_SYMTAB: u32 = 2;
    let interp = (0..phnum).any(|i| u32_at(phoff + i * phentsize) == PT_INTERP);
    let symtab = (0..shnum).any(|i| u32_at(shoff + i * shentsize + 4) == SHT_SYMTAB);
    (!interp, !symtab)
}

/// Every path under `dir`, relative to it.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir") {
            let path = entry.expect("entry").path();
            out.push(
                path.strip_prefix(dir)
                    .expect("under dir")
                    .display()
                    .to_string(),
            );
            if path.is_dir() {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

/// What this build's berth prints for the same arguments: the image's must print the same.
fn this_berth(args: &[&str]) -> String {
    let out = run(Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(args)
        .current_dir(repo()));
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn image_is_a_valid_layout_holding_only_a_static_stripped_berth() {
    let Some(archive) = archive() else { return };
    let image = Image::unpack(&archive);
    eprintln!("{}: {}", archive.display(), image.sizes);

    let config = &image.config["config"];
    assert_eq!(config["User"], "65532:65532", "a non-root numeric user");
    assert_eq!(config["Entrypoint"], json!(["/berth"]));
    let labels = &config["Labels"];
    assert_eq!(labels["org.opencontainers.image.version"], VERSION);
    let source = labels["org.opencontainers.image.source"]
        .as_str()
        .expect("a source label");
    assert!(
        !source.is_empty() && !source.contains('@'),
        "source {source:?}"
    );
    let revision = labels["org.opencontainers.image.revision"]
        .as_str()
        .expect("a revision label");
    let commit = revision.strip_suffix("-dirty").unwrap_or(revision);
    assert!(
        revision == "unknown"
            || (commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "revision {revision:?}: a commit (\"-dirty\" with uncommitted changes) or unknown"
    );

    // One entry in the layer: /berth, a regular file owned by root, not writable by the user.
    let entries: Vec<&str> = image.layer_listing.lines().collect();
    assert_eq!(
        entries.len(),
        1,
        "one file in the layer:\n{}",
        image.layer_listing
    );
    assert!(
        entries[0].starts_with("-rwxr-xr-x 0/0 ") && entries[0].ends_with(" berth"),
        "/berth, mode 0755, root-owned: {}",
        entries[0]
    );
    assert_eq!(files(&image.rootfs), ["berth"]);

    let bytes = std::fs::read(image.berth()).expect("/berth");
    let (is_static, stripped) = elf_static_and_stripped(&bytes);
    assert!(is_static, "/berth asks for a dynamic loader (PT_INTERP)");
    assert!(stripped, "/berth has a symbol table (not stripped)");

    // A second reader, where installed: skopeo reads the archive as a registry would get it.
    match Command::new("skopeo").arg("--version").output() {
        Ok(out) if out.status.success() => {
            let out = run(Command::new("skopeo")
                .args(["inspect", "--config"])
                .arg(format!("oci-archive:{}", archive.display())));
            let seen: Value = serde_json::from_slice(&out.stdout).expect("skopeo's JSON");
            assert_eq!(
                seen["config"], image.config["config"],
                "skopeo reads the same config"
            );
        }
        _ => eprintln!("skopeo is not installed: the archive was read by this test only"),
    }
}

#[test]
fn berth_runs_from_the_image_root_filesystem() {
    let Some(archive) = archive() else { return };
    let image = Image::unpack(&archive);
    let policies = repo().join("policies");
    // An empty environment and the root filesystem as working directory: nothing from this
    // machine but the kernel (the binary is static, so no loader or libc is looked up).
    let berth = |args: &[&str]| {
        let out = run(Command::new(image.berth())
            .args(args)
            .env_clear()
            .current_dir(&image.rootfs));
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    assert_eq!(berth(&["--version"]), format!("berth {VERSION}\n"));
    let policy = policies.join("openshift.json");
    let policy = policy.to_str().expect("UTF-8 path");
    assert_eq!(
        berth(&["check", policy]),
        this_berth(&["check", policy]),
        "`berth check` in the image prints what this build's prints"
    );
    assert_eq!(
        berth(&["simulate"]),
        this_berth(&["simulate"]),
        "`berth simulate` (bundled cluster and policy) in the image prints what this build's prints"
    );
}

/// The OCI runtimes to try: `BERTH_OCI_RUNTIME`, else runc and crun where installed.
fn runtimes() -> Vec<String> {
    if let Some(runtime) = std::env::var_os("BERTH_OCI_RUNTIME") {
        return vec![runtime.to_string_lossy().into_owned()];
    }
    ["runc", "crun"]
        .into_iter()
        .filter(|r| {
            Command::new(r)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .map(String::from)
        .collect()
}

/// An OCI runtime bundle around the image's root filesystem: the image's user and
/// entrypoint, a read-only root, no capabilities, no network (its own namespace), an empty
/// environment; the policies (and plugins/dist, when built) bind-mounted read-only.
fn bundle_config(image: &Image, args: &[&str], plugins: Option<&Path>) -> Value {
    let config = &image.config["config"];
    let user = config["User"].as_str().expect("User");
    let (uid, gid) = user.split_once(':').expect("uid:gid");
    let mut process_args: Vec<Value> = config["Entrypoint"].as_array().expect("Entrypoint").clone();
    process_args.extend(args.iter().map(|a| json!(a)));
    let mut mounts = vec![
        json!({"destination": "/proc", "type": "proc", "source": "proc"}),
        json!({"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
               "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]}),
        json!({"destination": "/etc/berth", "type": "bind",
               "source": repo().join("policies"), "options": ["rbind", "ro"]}),
    ];
    if let Some(plugins) = plugins {
        mounts.push(json!({"destination": "/plugins", "type": "bind",
                           "source": plugins, "options": ["rbind", "ro"]}));
    }
    let none: [&str; 0] = [];
    json!({
        "ociVersion": "1.0.2",
        "process": {
            "terminal": false,
            "user": {"uid": uid.parse::<u32>().expect("numeric uid"),
                     "gid": gid.parse::<u32>().expect("numeric gid")},
            "args": process_args,
            "env": [],
            "cwd": "/",
            "capabilities": {"bounding": none, "effective": none, "permitted": none},
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
            "noNewPrivileges": true
        },
        "root": {"path": "rootfs", "readonly": true},
        "hostname": "berth",
        "mounts": mounts,
        "linux": {
            "namespaces": [{"type": "pid"}, {"type": "network"}, {"type": "ipc"},
                           {"type": "uts"}, {"type": "mount"}],
            "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list"],
            "readonlyPaths": ["/proc/sys", "/proc/sysrq-trigger"]
        }
    })
}

/// Runs the image's entrypoint with `args` in a container; the runtime's output.
fn in_container(
    runtime: &str,
    image: &Image,
    args: &[&str],
    plugins: Option<&Path>,
    n: usize,
) -> Output {
    let bundle = image.rootfs.parent().expect("bundle directory");
    let config = bundle_config(image, args, plugins);
    std::fs::write(
        bundle.join("config.json"),
        serde_json::to_vec_pretty(&config).expect("JSON"),
    )
    .expect("config.json");
    // The runtime's state in the bundle, not under /run: nothing left behind.
    let state = bundle.join("state");
    let id = format!("berth-image-test-{}-{n}", std::process::id());
    Command::new("timeout")
        .arg("120")
        .arg(runtime)
        .arg("--root")
        .arg(&state)
        .arg("run")
        .arg("--bundle")
        .arg(bundle)
        .arg(&id)
        .output()
        .unwrap_or_else(|e| panic!("running {runtime}: {e}"))
}

#[test]
fn berth_runs_in_a_container_under_an_oci_runtime() {
    let Some(archive) = archive() else { return };
    if !rustix::process::geteuid().is_root() {
        eprintln!(
            "SKIPPED: not root, so no OCI runtime container (the image's binary is still run \
             from its root filesystem by berth_runs_from_the_image_root_filesystem)"
        );
        return;
    }
    let runtimes = runtimes();
    if runtimes.is_empty() {
        eprintln!(
            "SKIPPED: no OCI runtime (runc, crun) installed; `apt-get install runc` to run the \
             image in a container (scripts/test.sh installs it as root)"
        );
        return;
    }
    let image = Image::unpack(&archive);
    let plugins = repo().join("plugins/dist");
    let plugins = plugins
        .join("node-label-filter.wasm")
        .is_file()
        .then_some(plugins.as_path());

    let mut unusable = Vec::new();
    for (n, runtime) in runtimes.iter().enumerate() {
        // The first container tells whether the runtime works on this machine at all (crun
        // 1.8 refuses hosts with cgroup v1 and v2 both mounted, for instance): a runtime
        // that printed nothing of berth's did not start it.
        let out = in_container(runtime, &image, &["--version"], plugins, n * 10);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() && stdout.is_empty() {
            unusable.push(format!(
                "{runtime}: {} {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
            continue;
        }
        assert!(
            out.status.success() && stdout == format!("berth {VERSION}\n"),
            "{runtime}: `berth --version` in the container: {}\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let check = |args: &[&str], k: usize| {
            let out = in_container(runtime, &image, args, plugins, n * 10 + k);
            assert!(
                out.status.success(),
                "{runtime}: `berth {}` in the container: {}\n{}{}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).expect("UTF-8")
        };
        let policy = repo().join("policies/openshift.json");
        assert_eq!(
            check(&["check", "/etc/berth/openshift.json"], 1),
            this_berth(&["check", policy.to_str().expect("UTF-8 path")]).replace(
                policy.to_str().expect("UTF-8 path"),
                "/etc/berth/openshift.json"
            ),
            "{runtime}: `berth check` in the container prints what this build's prints"
        );
        assert_eq!(check(&["simulate"], 2), this_berth(&["simulate"]));
        if plugins.is_some() {
            // Wasmtime compiling and running the example plugins in the container.
            let bench = check(
                &[
                    "bench",
                    "--workload=node-label",
                    "--compare-wasm",
                    "--plugins=/plugins",
                    "--nodes=50",
                    "--running=0",
                    "--pods=100",
                ],
                3,
            );
            eprintln!("{runtime}: WASM plugins in the container:\n{bench}");
            assert!(
                bench
                    .lines()
                    .any(|l| l.trim_start().starts_with("same decisions") && l.ends_with("true")),
                "{runtime}: the plugins decided as the built-ins do in the container:\n{bench}"
            );
        } else {
            eprintln!("plugins/dist is not built: no WASM plugin run in the container");
        }
        eprintln!(
            "{runtime} ran the image: --version, check, simulate{}",
            if plugins.is_some() {
                ", bench with WASM plugins"
            } else {
                ""
            }
        );
        return;
    }
    eprintln!(
        "SKIPPED: no installed OCI runtime can start a container on this machine (the image's \
         binary is still run from its root filesystem):\n{}",
        unusable.join("\n")
    );
}
