//! The Containerfile builds the image the emitted Kubernetes Job names: its tag, its working
//! folder, `cosmos` on PATH, the runs volume, and the MCP servers installed by the project's own
//! script. Checked against the emitted manifest; `docker build` is an ignored test, run by hand
//! where a daemon and the base images are at hand (it fails, saying why, where they are not).

use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn manifest() -> serde_yaml_ng::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_cosmos"))
        .args([
            "sweep",
            "sample_runs/sweep.toml",
            "--emit",
            "k8s",
            "--shards",
            "2",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_yaml_ng::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_containerfile_makes_what_the_emitted_job_runs() {
    let file = std::fs::read_to_string(root().join("Containerfile")).unwrap();
    let job = manifest();
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    let image = container["image"].as_str().unwrap();
    assert!(
        file.contains(&format!("-t {image} ")),
        "the build line tags {image}"
    );
    let workdir = container["workingDir"].as_str().unwrap();
    let last_stage = file.rsplit("\nFROM ").next().unwrap();
    assert!(
        last_stage.contains(&format!("WORKDIR {workdir}\n")),
        "{workdir}"
    );
    assert!(last_stage.contains(&format!("COPY . {workdir}\n")));
    assert_eq!(container["command"][0], "cosmos");
    assert!(
        last_stage.contains("/usr/local/bin/cosmos"),
        "cosmos on PATH"
    );
    let mount = container["volumeMounts"][0]["mountPath"].as_str().unwrap();
    assert!(last_stage.contains(&format!("VOLUME [\"{mount}\"]")));
    // The servers of the examples come from the project's own install script, which needs
    // Python's venv and npm in the image.
    assert!(last_stage.contains("./scripts/install-test-servers.sh"));
    for package in ["python3-venv", "nodejs", "npm"] {
        assert!(last_stage.contains(package), "{package}");
    }
    let ignore = std::fs::read_to_string(root().join(".dockerignore")).unwrap();
    for dir in ["target", ".cache"] {
        assert!(
            ignore.lines().any(|l| l == dir),
            "{dir} is not copied into the image"
        );
    }
}

/// Needs a Docker daemon with the base images (not on the project's machines, which have no
/// registry but the package ones): run it with `cargo nextest run --run-ignored all
/// the_image_builds`. Run so without them, it fails saying what is missing.
#[test]
#[ignore = "needs a Docker daemon and its base images: cargo nextest run --run-ignored all the_image_builds"]
fn the_image_builds_where_docker_can_build_it() {
    let daemon = Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output();
    let daemon_ok = daemon.as_ref().is_ok_and(|o| o.status.success());
    let bases_here = daemon_ok
        && ["rust:1-bookworm", "debian:bookworm-slim"]
            .iter()
            .all(|image| {
                Command::new("docker")
                    .args(["image", "inspect", image])
                    .output()
                    .is_ok_and(|o| o.status.success())
            });
    assert!(
        bases_here,
        "cannot build the image here: {} (run this test where Docker can pull rust:1-bookworm \
         and debian:bookworm-slim)",
        if daemon_ok {
            "the base images are not on this machine and no registry can be reached"
        } else {
            "no Docker daemon answers on this machine"
        }
    );
    let built = Command::new("docker")
        .args(["build", "-t", "mcp-cosmos:test", "-f", "Containerfile", "."])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let help = Command::new("docker")
        .args([
            "run",
            "--rm",
            "mcp-cosmos:test",
            "cosmos",
            "sweep",
            "--help",
        ])
        .output()
        .unwrap();
    assert!(help.status.success());
}
