//! Never lose work, in the real app under Xvfb with Mesa's software Vulkan driver (as
//! tests/gui_screenshot.rs):
//! - the render quality switched 20 times each way (fast → full → fast ...), with other
//!   scenes opened and other methods chosen in between, never panics (it did: bevy_pbr's
//!   `prepare_lights` found no shadow cascades for the camera turned on by the switch,
//!   docs/results/quality-switch.md);
//! - a panic in a system saves the state shown last as a scene file and says where; the
//!   file validates and `impulse-lab run` continues it from its step.
//!
//! Both drive the app with the hidden `gui --script` flag (`app::launch::parse_script`).
//! Where xvfb-run is missing the tests say so and pass, except under CI (`CI` set),
//! where they fail: CI must run them.
#![cfg(feature = "app")]

mod common;

use common::{run_gui_in_xvfb, xvfb_run};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// `impulse-lab gui ARGS` under Xvfb in a 960x600 window.
fn run_gui(
    xvfb: &Path,
    out_dir: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
) -> (ExitStatus, String) {
    run_gui_in_xvfb(xvfb, out_dir, (960, 600), args, env)
}

/// F8 twenty times each way, from a fresh start (fast quality on a software
/// renderer), with four other scenes opened and the method switched between switches.
#[test]
fn render_quality_switches_both_ways_without_a_panic() {
    let Some(xvfb) = xvfb_run() else {
        return;
    };
    // Small scenes: a software renderer draws 1,080 lit spheres at full quality at
    // under one frame per second, and the switch does not depend on the scene.
    let scenes = [
        "etm_box_on_box",
        "dda_rolling_sphere",
        "mdp_painleve_rod",
        "pour_mixed",
    ];
    let solvers = ["etm", "sqm", "jolt", "smm", "ccp", "mdp"];
    let mut script = Vec::new();
    let mut frame = 20;
    for k in 0..40 {
        script.push(format!("{frame}:quality"));
        frame += 4;
        if k % 4 == 1 {
            script.push(format!("{frame}:scene={}", scenes[(k / 4) % scenes.len()]));
            frame += 3;
        }
        if k % 4 == 3 {
            script.push(format!(
                "{frame}:solver={}",
                solvers[(k / 4) % solvers.len()]
            ));
            frame += 3;
        }
    }
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gui_quality");
    let shot = out_dir.join("after_switches.png");
    let _ = std::fs::remove_file(&shot);
    script.push(format!("{frame}:shot={}", shot.display()));
    let end = (frame + 10).to_string();
    let script = script.join(",");
    let (status, log) = run_gui(
        &xvfb,
        &out_dir,
        &["--script", &script, "--exit-after-frames", &end],
        &[],
    );
    assert!(status.success(), "app failed ({status}):\n{log}");
    assert!(!log.contains("panicked"), "a panic:\n{log}");
    let toggles = log.matches("ToggleQuality").count();
    assert_eq!(toggles, 40, "not every switch ran:\n{log}");
    assert!(
        log.matches("Scene(").count() == 10 && log.matches("Solver(").count() == 10,
        "not every scene or method switch ran:\n{log}"
    );
    // The last switch (the 40th) returned to fast quality; the window still draws.
    assert!(shot.exists(), "no screenshot after the switches:\n{log}");
}

/// A system that panics (`--script N:panic`) leaves the state as a scene file: the app
/// exits with an error, names the file on stderr, the file validates and `impulse-lab
/// run` continues it from the step shown.
#[test]
fn a_panic_saves_the_state_shown_as_a_scene() {
    let Some(xvfb) = xvfb_run() else {
        return;
    };
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gui_crash");
    let crash_dir = out_dir.join("crash");
    let _ = std::fs::remove_dir_all(&crash_dir);
    // 40 steps before the first frame, paused: the state shown is step 40 of jolt.
    let (status, log) = run_gui(
        &xvfb,
        &out_dir,
        &[
            "pile_spheres_1080",
            "--solver",
            "jolt",
            "--paused",
            "--steps",
            "40",
            "--script",
            "30:panic",
            "--exit-after-frames",
            "200",
        ],
        &[("IMPULSE_LAB_CRASH_DIR", &crash_dir)],
    );
    assert!(
        !status.success(),
        "the app should fail after the panic:\n{log}"
    );
    assert!(log.contains("scripted panic"), "{log}");
    // The file named on stderr, in the folder asked for.
    let line = log
        .lines()
        .find(|l| l.contains("is saved as "))
        .unwrap_or_else(|| panic!("no saved state reported:\n{log}"));
    let path = line
        .split("is saved as ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .map(PathBuf::from)
        .unwrap();
    assert!(path.starts_with(&crash_dir), "{line}");
    assert!(path.exists(), "{} missing:\n{log}", path.display());
    assert!(line.contains("step 40"), "{line}");
    let exe = env!("CARGO_BIN_EXE_impulse-lab");
    let validate = Command::new(exe)
        .arg("validate")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        validate.status.success(),
        "validate: {}",
        String::from_utf8_lossy(&validate.stderr)
    );
    let trace = out_dir.join("continued.csv");
    let run = Command::new(exe)
        .arg("run")
        .arg(&path)
        .args(["--steps", "10", "--out"])
        .arg(&trace)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "run: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    // The trace continues the saved run: its steps are 41 to 50 (after step 40's row).
    let csv = std::fs::read_to_string(&trace).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header
        .iter()
        .position(|h| *h == "step")
        .expect("a step column");
    let steps: Vec<u64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(col).unwrap().parse().unwrap())
        .collect();
    assert_eq!(steps.last(), Some(&50), "{csv}");
    assert!(steps.iter().all(|s| *s >= 40), "{csv}");
}
