//! `impulse-lab validate` on scenes of 10⁶ spheres: one plane perpendicular to x (the
//! layout that made an overlap sweep along x quadratic) and a 100³ lattice, each within
//! 10 s, and the time growing about linearly with the body count (10⁵ → 10⁶ bodies);
//! and 10⁶ mutually overlapping spheres refused within 10 s of CPU time and 1 GiB.
//!
//! Ignored by default (it writes and checks 2.2 million bodies, a few seconds); CI runs
//! it once (`.ci/run`): `cargo test --test validate_scale -- --ignored --nocapture`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A scene of `count` spheres (r = 0.4 m) on a lattice of pitch 1 m in `[min, max]`.
fn scene(count: usize, max: (f64, f64, f64)) -> String {
    format!(
        r#"Scene(
    name: "scale",
    generators: [Lattice(
        count: {count},
        shape: Sphere(radius: 0.4),
        region: (min: (0, 0, 0), max: {max:?}),
        spacing: 1.0,
        orientation: Identity,
    )],
)"#
    )
}

/// Wall time of `validate` on `text` (asserting that it succeeds with `count` bodies).
fn validate(dir: &Path, name: &str, text: &str, count: usize) -> Duration {
    let path = dir.join(format!("{name}.ron"));
    std::fs::write(&path, text).unwrap();
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_impulse-lab"))
        .arg("validate")
        .arg(&path)
        .output()
        .unwrap();
    let wall = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("ok ({count} bodies")),
        "{name}: {stdout}"
    );
    wall
}

#[test]
#[ignore = "reason: validates 2.2 million bodies (seconds); CI runs it once in .ci/run"]
fn a_million_spheres_validate_in_any_layout_within_10_s() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        // 1 × 1000 × 1000 sites: every centre at x = 0.5.
        ("plane_1e6", 1_000_000, (1.0, 1000.0, 1000.0)),
        ("plane_1e5", 100_000, (1.0, 1000.0, 100.0)),
        ("lattice_1e6", 1_000_000, (100.0, 100.0, 100.0)),
        ("lattice_1e5", 100_000, (100.0, 100.0, 10.0)),
    ];
    let mut t = std::collections::HashMap::new();
    for (name, count, max) in cases {
        let wall = validate(dir.path(), name, &scene(count, max), count);
        println!(
            "validate {name}: {count} bodies in {:.2} s",
            wall.as_secs_f64()
        );
        t.insert(name, wall.as_secs_f64());
    }
    for layout in ["plane", "lattice"] {
        let (big, small) = (t[&*format!("{layout}_1e6")], t[&*format!("{layout}_1e5")]);
        println!(
            "{layout}: t(10^6) / t(10^5) = {:.1} (10 for linear growth)",
            big / small
        );
        // The issue's bound on this machine (2 cores); the old sweep took > 60 s (plane)
        // and 25-30 s (lattice).
        assert!(big < 10.0, "{layout}: {big:.1} s for 10^6 bodies");
    }
}

/// Issue 44: `validate` on 10⁶ spheres written at three points (each overlaps the
/// others at its point and the neighbouring point) kept every overlapping pair, n²
/// memory (23 GiB after 55 s). Now it refuses the scene under 1 GiB of address space
/// and 10 s of CPU time (`prlimit`; over either the process is killed and the test
/// fails), listing the first 20 errors and the total count: about 5 s of CPU time in
/// the test profile (docs/results/hostile-input.md).
#[test]
#[ignore = "reason: writes and checks a 55 MB scene of 10^6 bodies (seconds); CI runs it once in .ci/run"]
fn a_million_overlapping_spheres_are_refused_in_bounded_memory_and_time() {
    use std::fmt::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overlap_1e6.ron");
    let n = 1_000_000;
    let mut text = String::from("Scene(name: \"overlap\", bodies: [\n");
    for i in 0..n {
        writeln!(
            text,
            "Body(shape: Sphere(radius: 1.0), position: (0, 0, {})),",
            5 + i % 3
        )
        .unwrap();
    }
    text.push_str("])\n");
    std::fs::write(&path, &text).unwrap();
    drop(text);
    let start = Instant::now();
    let out = Command::new("prlimit")
        .arg(format!("--as={}", 1u64 << 30))
        .arg("--cpu=10")
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_impulse-lab"))
        .arg("validate")
        .arg(&path)
        .output()
        .expect("prlimit (util-linux) runs the binary");
    let wall = start.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    println!(
        "validate {n} overlapping spheres: exit {:?} in {wall:.2} s wall; last lines: {:?}",
        out.status.code(),
        &lines[lines.len().saturating_sub(2)..]
    );
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // bodies[k] overlaps bodies[0] (same point) or bodies[1] (the point 1 m away): one
    // error per body but the first, 20 listed.
    let file = path.display().to_string();
    assert!(
        stderr.contains(&format!(
            "{file}:3:34: bodies[1].position: bodies[1] at (0, 0, 6) overlaps bodies[0]"
        )),
        "{stderr}"
    );
    assert_eq!(lines.iter().filter(|l| l.contains("overlaps")).count(), 20);
    assert!(
        stderr.contains(&format!(
            "{file}: 999979 more errors not shown (the first 20 are)"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{file}: 999999 errors")),
        "{stderr}"
    );
    // The issue's 10 s is enforced as CPU time by prlimit above (a process over it is
    // killed and fails the exit-status assertion); the wall time, printed, also
    // counts the other jobs of a shared machine.
}
