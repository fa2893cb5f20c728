//! `impulse-lab validate` on scenes of 10⁶ spheres: one plane perpendicular to x (the
//! layout that made an overlap sweep along x quadratic) and a 100³ lattice, each within
//! 10 s, and the time growing about linearly with the body count (10⁵ → 10⁶ bodies).
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
