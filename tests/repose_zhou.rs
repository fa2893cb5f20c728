//! The Zhou et al. 2002 configuration (`scenes/repose_zhou.ron`) and the reference angle a
//! scene may cite: the bundled scene carries the paper's parameters, and `impulse-lab
//! repose` prints a cited angle beside the measured one.

use impulse_lab::container::Container;
use impulse_lab::scene::{load_scene, resolve_scene};
use impulse_lab::shapes::Shape;
use std::process::Command;

/// Zhou et al. 2002's fitted correlation for the angle of repose of monosized spheres
/// (degrees), with the rolling-resistance coefficients and the diameter in mm, as quoted
/// by Lethe's plate-discharge example:
/// φ = 68.61 μ_pp^0.27 μ_pw^0.22 μ_r,pp^0.06 μ_r,pw^0.12 d^-0.2.
fn zhou_correlation_deg(
    mu_pp: f64,
    mu_pw: f64,
    mu_r_pp_mm: f64,
    mu_r_pw_mm: f64,
    d_mm: f64,
) -> f64 {
    68.61
        * mu_pp.powf(0.27)
        * mu_pw.powf(0.22)
        * mu_r_pp_mm.powf(0.06)
        * mu_r_pw_mm.powf(0.12)
        * d_mm.powf(-0.2)
}

/// The bundled scene has the paper's parameters (d = 10 mm, μ = 0.2 for both pairs, which
/// the lab's one friction coefficient gives, μ_r = 1 mm = 0.1 d, e = 0.9), a box 20 d
/// thick with the pile behind a divider, and cites the 19.7° that the correlation gives
/// for exactly these parameters.
#[test]
fn zhou_scene_has_the_papers_parameters_and_cites_its_angle() {
    let scene = load_scene(&resolve_scene("repose_zhou")).expect("repose_zhou loads");
    assert_eq!(scene.params.friction, 0.2);
    assert_eq!(scene.params.rolling_friction, 0.001);
    assert_eq!(scene.params.restitution, 0.9);
    let reference = scene.reference_angle.as_ref().expect("a reference angle");
    assert_eq!(reference.angle_deg, 19.7);
    assert!(
        reference.source.contains("Zhou et al. 2002"),
        "{}",
        reference.source
    );

    let world = scene.build_world().unwrap();
    assert!(world.bodies.len() >= 1000, "{} bodies", world.bodies.len());
    let mut d = None;
    for b in &world.bodies {
        match b.shape {
            Shape::Sphere { radius } => d = Some(2.0 * radius),
            ref other => panic!("not a sphere: {other:?}"),
        }
    }
    let d = d.unwrap();
    assert!((d - 0.01).abs() < 1e-12, "d = {d}");
    let phi = zhou_correlation_deg(0.2, 0.2, 1e3 * 0.001, 1e3 * 0.001, 1e3 * d);
    assert!(
        (phi - reference.angle_deg).abs() < 0.05,
        "correlation {phi}°"
    );

    let Some(Container::Box {
        half_size,
        dividers,
        ..
    }) = world.containers.first()
    else {
        panic!("no box");
    };
    // The container is 20 d thick (Lethe's 0.2 m for the same spheres).
    assert!(
        (2.0 * half_size[1] - 20.0 * d).abs() < 1e-12,
        "{half_size:?}"
    );
    assert_eq!(dividers.len(), 1);
    let wall = dividers[0].x;
    assert!(world.bodies.iter().all(|b| b.position.x < wall - 0.5 * d));
}

/// A scene that cites a reference angle gets a line with the measured angle ± error, the
/// protocol, the reference with its source and the difference, on stderr (the CSV keeps
/// stdout), after each run; the angle printed is the CSV's.
#[test]
fn repose_prints_the_reference_angle_beside_the_measured_one() {
    let dir = tempfile::tempdir().unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    let tiny = std::fs::read_to_string(format!("{root}/tests/fixtures/repose_tiny.ron")).unwrap();
    let cited = tiny.replacen(
        "seed: 7,",
        "seed: 7,\n    reference_angle: (angle_deg: 12.5, source: \"a test\"),",
        1,
    );
    assert_ne!(cited, tiny);
    let scene = dir.path().join("repose_cited.ron");
    std::fs::write(&scene, cited).unwrap();
    let csv = dir.path().join("rows.csv");
    let o = Command::new(env!("CARGO_BIN_EXE_impulse-lab"))
        .args([
            "repose",
            scene.to_str().unwrap(),
            "--max-time",
            "0.4",
            "--jobs",
            "1",
        ])
        .args(["--out", csv.to_str().unwrap()])
        .output()
        .expect("binary runs");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let row: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
    let (angle, error): (f64, f64) = (row[7].parse().unwrap(), row[8].parse().unwrap());
    let expected = format!(
        "repose_cited, μ = 0.3, seed 7: {angle:.2}° ± {error:.2}° (wall_removal); reference 12.5° (a test): difference {:+.2}°",
        angle - 12.5
    );
    assert!(
        stderr.contains(&expected),
        "expected `{expected}` in:\n{stderr}"
    );
    // The statepoint carries the reference too.
    let sp = std::fs::read_dir(dir.path().join("rows.statepoints"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(sp).unwrap()).unwrap();
    assert_eq!(v["reference_angle"]["angle_deg"], 12.5);
    assert_eq!(v["reference_angle"]["source"], "a test");

    // Without a reference, no such line.
    let o = Command::new(env!("CARGO_BIN_EXE_impulse-lab"))
        .current_dir(root)
        .args([
            "repose",
            "tests/fixtures/repose_tiny.ron",
            "--max-time",
            "0.4",
            "--jobs",
            "1",
        ])
        .args(["--out", dir.path().join("plain.csv").to_str().unwrap()])
        .output()
        .expect("binary runs");
    assert!(o.status.success());
    assert!(!String::from_utf8_lossy(&o.stderr).contains("reference"));
}
