//! The repose protocols against configurations with a known answer: the tilt protocol's
//! failure angle for a block on the floor (Coulomb: it slides at tan θ = μ), a
//! frictionless pile that goes flat (cylinder lift, wall removal, rotating drum), and the
//! `--protocol` option of the command line.

use impulse_lab::World;
use impulse_lab::body::RigidBody;
use impulse_lab::container::{Container, Divider};
use impulse_lab::dynamics::solver::{SolverKind, SolverParams};
use impulse_lab::math::{Quat, Vec3};
use impulse_lab::repose::experiment::tilt_lag_deg;
use impulse_lab::repose::measure;
use impulse_lab::repose::{Phase, Protocol, ROWS, ReposeConfig, ReposeExperiment};
use impulse_lab::shapes::Shape;

const G: f64 = 9.81;
/// Half-edge of the test cube (m).
const A: f64 = 0.05;

/// One cube (edge 0.1 m) dropped 1 cm onto the floor of a 2 m × 1 m box, on the −x side
/// of a divider at x = 0.5: the tilt protocol's floor falls towards −x, where the cube
/// has 0.45 m to slide before the wall.
fn cube_world(solver: SolverKind, mu: f64) -> World {
    let params = SolverParams {
        friction: mu,
        restitution: 0.0,
        ..Default::default()
    };
    let mut world = World::new(Vec3::new(0.0, 0.0, -G), 1.0 / 240.0, solver, params).unwrap();
    world.add_container(Container::Box {
        center: Vec3::zeros(),
        half_size: [1.0, 0.5],
        height: 0.5,
        walls: [true; 4],
        dividers: vec![Divider {
            x: 0.5,
            present: true,
        }],
    });
    world.add_body(RigidBody::new(
        &Shape::Cuboid {
            half_extents: Vec3::repeat(A),
        },
        2500.0,
        Vec3::new(-0.5, 0.0, A + 0.01),
        Quat::identity(),
    ));
    world
}

/// Run the tilt protocol on the cube: (failure tilt, lag bound), in degrees.
fn tilt_failure(solver: SolverKind, mu: f64, rate: f64) -> (f64, f64) {
    let config = ReposeConfig {
        protocol: Protocol::Tilt,
        tilt_rate: rate,
        max_time: 3.0,
        ..Default::default()
    };
    let mut exp = ReposeExperiment::new(cube_world(solver, mu), config).unwrap();
    let lag = exp.tracker.tilt_lag_deg(&exp.world);
    let result = exp.run(|_| {}).unwrap().clone();
    assert_eq!(exp.phase(), Phase::Done);
    let failed = exp.tracker.tilt_failed_deg().expect("the cube never slid");
    assert_eq!(result.measurement.angle_deg, failed);
    assert_eq!(result.measurement.error_deg, lag);
    (failed, lag)
}

/// Coulomb's law for a block on a plane tilted at θ: it holds while tan θ ≤ μ and
/// slides beyond, so it starts to slide at θ_c = atan μ. It counts as failed once it
/// has slid d = half its bounding radius, which takes a further tilt
/// Δθ = (6 d ω² cos θ_c / g)^(1/3) (module doc of `repose::experiment`: 0.714° at
/// μ = 0.3 and 0.697° at μ = 0.5, ω = 0.5°/s). SQM and Jolt's failure tilt is
/// θ_c + Δθ within 0.05° (24 steps of tilt at 1/240 s; measured: 17.404° against
/// 17.413°, 27.252° against 27.262°). CCP's cube does not come to rest after its 1 cm
/// drop (its packing phase ends at the cap with K/ΔU ≈ 1), so it starts to tilt while
/// still moving: it is held to the looser [θ_c − 0.1°, θ_c + Δθ + 0.1°] (measured
/// 17.379° and 26.946°).
#[test]
fn tilted_cube_slides_at_atan_mu() {
    let rate = 0.5;
    for mu in [0.3, 0.5] {
        let critical = f64::atan(mu);
        for solver in [SolverKind::Sqm, SolverKind::Jolt] {
            let (failed, lag) = tilt_failure(solver, mu, rate);
            let expected = critical.to_degrees() + lag * critical.cos().cbrt();
            assert!(
                (failed - expected).abs() < 0.05,
                "{solver}, μ = {mu}: slid at {failed:.3}°, expected {expected:.3}° (Coulomb {:.3}° + lag)",
                critical.to_degrees()
            );
        }
        let (failed, lag) = tilt_failure(SolverKind::Ccp, mu, rate);
        let critical = critical.to_degrees();
        assert!(
            failed > critical - 0.1 && failed < critical + lag + 0.1,
            "ccp, μ = {mu}: slid at {failed:.3}°, Coulomb {critical:.3}° (+ lag ≤ {lag:.3}°)"
        );
    }
}

/// Without friction the block slides at once: its failure tilt is the lag alone,
/// Δθ = (6 d ω² / g)^(1/3) (θ_c = 0), 1.149° at ω = 1°/s, within 0.05° (measured:
/// 1.146° with SQM, Jolt and CCP).
#[test]
fn frictionless_cube_slides_at_once() {
    for solver in [SolverKind::Sqm, SolverKind::Jolt, SolverKind::Ccp] {
        let (failed, lag) = tilt_failure(solver, 0.0, 1.0);
        let d = 0.5 * 3f64.sqrt() * A;
        assert!((lag - tilt_lag_deg(d, 1.0, G)).abs() < 1e-12);
        assert!(
            (failed - lag).abs() < 0.05,
            "{solver}: slid at {failed:.3}°, lag bound {lag:.3}°"
        );
    }
}

// ---------------------------------------------------------------- the cylinder

/// Spheres (r = 0.05 m) whose tops lie on the cone z = 0.5 − ρ tan θ around (0.3, −0.2):
/// every sector's line passes through its highest points exactly.
#[test]
fn cone_of_spheres_gives_its_angle() {
    let base = Vec3::new(0.3, -0.2, 0.0);
    for theta in [0.0f64, 12.0, 30.0] {
        let t = theta.to_radians().tan();
        let mut bodies = Vec::new();
        for k in 1..=40 {
            let rho = 0.03 * k as f64;
            for j in 0..16 {
                let phi = (j as f64 + 0.5) * std::f64::consts::TAU / 16.0 + 0.01 * k as f64;
                let c = base + Vec3::new(rho * phi.cos(), rho * phi.sin(), 0.45 - rho * t);
                bodies.push(RigidBody::new(
                    &Shape::Sphere { radius: 0.05 },
                    2500.0,
                    c,
                    Quat::identity(),
                ));
            }
        }
        let m = measure::measure_cone(&base, &bodies, |_| false).unwrap();
        assert_eq!(m.rows_fitted, ROWS);
        assert!(
            (m.angle_deg - theta).abs() < 1e-9 && m.error_deg < 1e-9,
            "θ = {theta}°: measured {}° ± {}",
            m.angle_deg,
            m.error_deg
        );
    }
}

/// 42 spheres (r = 0.05 m, three offset layers) in a cylinder of radius 0.3 m, packed at
/// μ = 0.3, then the cylinder is lifted and the run's μ applies.
fn cylinder_pile(solver: SolverKind, mu: f64) -> (ReposeExperiment, f64) {
    let params = SolverParams {
        friction: mu,
        restitution: 0.3,
        ..Default::default()
    };
    let mut world = World::new(Vec3::new(0.0, 0.0, -G), 1.0 / 240.0, solver, params).unwrap();
    world.add_container(Container::Cylinder {
        base: Vec3::zeros(),
        radius: 0.3,
        height: 1.0,
    });
    for layer in 0..3 {
        let off = if layer % 2 == 0 { 0.0 } else { 0.055 };
        for i in -2..=2 {
            for j in -2..=2 {
                let (x, y) = (0.11 * i as f64 + off, 0.11 * j as f64 + off);
                if x.hypot(y) <= 0.24 {
                    world.add_body(RigidBody::new(
                        &Shape::Sphere { radius: 0.05 },
                        2500.0,
                        Vec3::new(x, y, 0.06 + 0.11 * layer as f64),
                        Quat::identity(),
                    ));
                }
            }
        }
    }
    let config = ReposeConfig {
        protocol: Protocol::Cylinder,
        pack_friction: Some(0.3),
        max_time: 2.0,
        ..Default::default()
    };
    let mut exp = ReposeExperiment::new(world, config).unwrap();
    let angle = exp.run(|_| {}).unwrap().measurement.angle_deg;
    (exp, angle)
}

/// Frictionless spheres on a frictionless floor cannot stand on one another once the
/// cylinder is gone: a sphere resting on others pushes them apart (nothing holds them),
/// so the pile spreads into a monolayer whose tops lie at 2r, and the cone is flat.
/// Checked: every centre ends within 2 % of r of z = r (each sphere on the floor,
/// contact overlap and slop included; measured 0.05007 m), and the angle obeys the
/// measurement's own bound for tops in a band of width w (measured max − min): a
/// sector's least-squares line through rings Δ = ρ_max/16 apart rises at most 2w/Δ
/// (twice the two-ring worst case w/Δ). Measured: 1e-4° (SQM) and −2e-3° (Jolt), 2 s
/// after the lift.
#[test]
fn frictionless_pile_goes_flat_when_the_cylinder_is_lifted() {
    for solver in [SolverKind::Sqm, SolverKind::Jolt] {
        let (exp, angle) = cylinder_pile(solver, 0.0);
        let result = exp.result().unwrap();
        assert_eq!(result.bodies_lost, 0);
        let r = 0.05;
        for b in &exp.world.bodies {
            assert!(
                (b.position.z - r).abs() < 0.02 * r,
                "{solver}: a sphere at z = {} is not on the floor",
                b.position.z
            );
        }
        let m = &result.measurement;
        let tops: Vec<Vec3> = m.highest.iter().flatten().flatten().copied().collect();
        let w = tops.iter().map(|p| p.z).fold(f64::NEG_INFINITY, f64::max)
            - tops.iter().map(|p| p.z).fold(f64::INFINITY, f64::min);
        let rho_max = tops.iter().map(|p| p.x.hypot(p.y)).fold(0.0, f64::max);
        let bound = (2.0 * w / (rho_max / 16.0)).atan().to_degrees();
        assert_eq!(m.rows_fitted, ROWS, "{solver}");
        assert!(
            angle.abs() <= bound && bound < 1.0,
            "{solver}: angle {angle}° against the bound {bound}° (w = {w} m, ρ_max = {rho_max} m)"
        );
    }
}

// ---------------------------------------------------------------- the drum

const DRUM_TINY: &str = "tests/fixtures/repose_drum_tiny.ron";

/// The drum fixture (48 spheres, d = 0.08 m, in a drum of R = 0.3 m and length 3d) at
/// friction `mu` and rolling resistance `mu_r` (m), packed at μ = 0.5, turned at
/// Fr = 0.01 for half a turn and then one measured turn (36 samples).
fn drum_run(mu: f64, mu_r: f64) -> ReposeExperiment {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(DRUM_TINY);
    let mut scene = impulse_lab::scene::load_scene(&path).unwrap();
    scene.params.friction = mu;
    scene.params.rolling_friction = mu_r;
    let config = ReposeConfig {
        protocol: Protocol::Drum,
        pack_friction: Some(0.5),
        drum_froude: 0.01,
        drum_turns: 1.0,
        max_time: 30.0,
        ..Default::default()
    };
    let mut exp = ReposeExperiment::new(scene.build_world().unwrap(), config).unwrap();
    exp.run(|_| {}).unwrap();
    exp
}

/// The drum's measurement in the frame of gravity: spheres (r = 5 mm, one over the centre
/// of each grid cell within 0.25 m of the axis) whose tops lie on a plane of slope θ
/// (falling towards +x) in the frame of a gravity turned by φ, put in the drum's frame by
/// turning them back by −φ about the axis: the measurement turns them to the frame of
/// the world's gravity and finds θ exactly, for every φ.
#[test]
fn drum_measures_the_surface_in_the_frame_of_gravity() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(DRUM_TINY);
    let scene = impulse_lab::scene::load_scene(&path).unwrap();
    let config = ReposeConfig {
        protocol: Protocol::Drum,
        ..Default::default()
    };
    let mut exp = ReposeExperiment::new(scene.build_world().unwrap(), config).unwrap();
    let c = exp.tracker.drum().unwrap().geometry.center;
    let r = 0.005;
    for phi in [0.0f64, 0.3, 2.0, -1.0] {
        for theta in [0.0f64, 20.0, -15.0] {
            let t = theta.to_radians().tan();
            let back = Quat::from_axis_angle(&Vec3::y_axis(), -phi);
            let mut bodies = Vec::new();
            for row in 0..ROWS {
                for col in 0..measure::COLUMNS {
                    let rect = exp.tracker.grid.cell_rect(row, col);
                    let (x, y) = (0.5 * (rect[0] + rect[1]), 0.5 * (rect[2] + rect[3]));
                    if (x - c.x).abs() > 0.25 {
                        continue;
                    }
                    // Centre in the frame of gravity, its top on z = c.z − t (x − c.x).
                    let p = Vec3::new(x, y, c.z - t * (x - c.x) - r);
                    bodies.push(RigidBody::new(
                        &Shape::Sphere { radius: r },
                        2500.0,
                        c + back * (p - c),
                        Quat::identity(),
                    ));
                }
            }
            exp.world.bodies = bodies;
            exp.world.gravity = G * Vec3::new(phi.sin(), 0.0, -phi.cos());
            let m = exp.measure_now().unwrap();
            assert_eq!(m.rows_fitted, ROWS);
            assert!(
                (m.angle_deg - theta).abs() < 1e-9 && m.error_deg < 1e-9,
                "φ = {phi}, θ = {theta}°: measured {}° ± {}",
                m.angle_deg,
                m.error_deg
            );
        }
    }
}

/// The fit noise of the surface measured by `m`: per row, the standard error of the
/// least-squares slope, σ_s = σ_res / √Σ(u − ū)² (σ_res² = Σ residual² / (n − 2), the
/// scatter of the highest points about the row's line over its fitted length), as an
/// angle (σ_s rad bounds the angle's error, d atan s ≤ ds); returned is the mean over the
/// rows, in degrees, which is the standard error of the 8 rows' mean angle when the rows
/// are fully correlated (they are: 8 rows over a drum 3 spheres long), an upper bound
/// otherwise.
fn surface_fit_noise_deg(exp: &ReposeExperiment, m: &measure::ReposeMeasurement) -> f64 {
    let mut errors = Vec::new();
    for row in &m.highest {
        let pts: Vec<(f64, f64)> = row
            .iter()
            .flatten()
            .map(|p| (exp.tracker.grid.u(p), p.z))
            .collect();
        let Some((a, slope)) = measure::fit_line(&pts) else {
            continue;
        };
        if pts.len() < 3 {
            continue;
        }
        let n = pts.len() as f64;
        let ub = pts.iter().map(|p| p.0).sum::<f64>() / n;
        let suu: f64 = pts.iter().map(|p| (p.0 - ub).powi(2)).sum();
        let res: f64 = pts.iter().map(|p| (p.1 - a - slope * p.0).powi(2)).sum();
        errors.push(((res / (n - 2.0)).sqrt() / suu.sqrt()).to_degrees());
    }
    errors.iter().sum::<f64>() / errors.len() as f64
}

/// Frictionless spheres (μ = 0 with one another and the wall, no rolling resistance) in
/// a slowly turning drum cannot be dragged up its wall: the bed's free surface stays
/// perpendicular to gravity, so its dynamic angle is 0 up to the fit noise of a flat but
/// grainy surface (one sphere of diameter d thick, its tops scattered by a fraction of d
/// over a fitted length of 6 d). The test measures that noise on the bed's last state
/// ([`surface_fit_noise_deg`], the standard error of its fitted angle) and requires
/// the time average over the turn to be 0 within three of it. Measured (SQM, Fr = 0.01,
/// 36 samples over one turn): −0.50° ± 0.36° (mean ± std), within 3 × 2.55°. A fit
/// noise above 5° would mean ridges, not a flat bed, and fails the test too.
#[test]
fn frictionless_bed_stays_flat_in_the_drum() {
    let exp = drum_run(0.0, 0.0);
    let r = exp.result().unwrap();
    let d = r.drum.as_ref().unwrap();
    println!("frictionless drum: {d:?}, packing {:?}", r.packing);
    assert_eq!(r.bodies_lost, 0);
    assert!(r.packing.settled && r.slumping.settled);
    assert_eq!(d.samples, 36);
    assert_eq!(r.measurement.angle_deg, d.mean_deg);
    let noise = surface_fit_noise_deg(&exp, &exp.measure_now().unwrap());
    println!("surface fit noise {noise}°");
    assert!(noise < 5.0, "fit noise {noise}°: not a flat bed");
    assert!(
        d.mean_deg.abs() <= 3.0 * noise,
        "dynamic angle {}° ± {}° against 3 × the fit noise {noise}°",
        d.mean_deg,
        d.std_deg
    );
}

/// With friction (μ = 0.5) and rolling resistance (μ_r = 0.1 d, Zhou et al. 2002's
/// ratio) the wall drags the bed up until its surface avalanches: the dynamic angle is
/// larger than the frictionless one by more than the two runs' standard deviations
/// together. Measured: 40.1° ± 6.9° against −0.5° ± 0.4°.
#[test]
fn friction_and_rolling_resistance_raise_the_drum_angle() {
    let rough = drum_run(0.5, 0.008);
    let smooth = drum_run(0.0, 0.0);
    let [a, b] = [&rough, &smooth].map(|e| e.result().unwrap().drum.clone().unwrap());
    println!("μ = 0.5, μ_r = 0.1 d: {a:?}\nμ = 0: {b:?}");
    assert_eq!(rough.result().unwrap().bodies_lost, 0);
    assert!(
        a.mean_deg - b.mean_deg > a.std_deg + b.std_deg,
        "rough {}° ± {}°, smooth {}° ± {}°",
        a.mean_deg,
        a.std_deg,
        b.mean_deg,
        b.std_deg
    );
}

// ---------------------------------------------------------------- the command line

const TINY: &str = "tests/fixtures/repose_tiny.ron";

fn run(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_impulse-lab"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("binary runs")
}

/// `repose --protocol tilt` runs end to end: the CSV has the wall protocol's columns,
/// and the statepoint names the protocol, its tilt rate, and an angle that the pile
/// (30 spheres at μ = 0.3, tilted at 10°/s) reached between the untilted box and a box
/// on end.
#[test]
fn repose_runs_the_tilt_protocol_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tilt.csv");
    let o = run(&[
        "repose",
        TINY,
        "--protocol",
        "tilt",
        "--tilt-rate",
        "10",
        "--max-time",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(&out).unwrap();
    let mut lines = csv.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("scene,shape,solver,friction")
    );
    assert_eq!(lines.count(), 1);
    let sp_dir = dir.path().join("tilt.statepoints");
    let sp = std::fs::read_dir(&sp_dir).unwrap().next().unwrap().unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sp.path()).unwrap()).unwrap();
    assert_eq!(v["protocol"], "tilt");
    assert_eq!(v["tilt_rate_deg_per_s"], 10.0);
    let angle = v["result"]["angle_deg"].as_f64().unwrap();
    assert!(angle > 0.0 && angle < 90.0, "failure tilt {angle}°");
}

/// `repose --protocol cylinder` runs end to end on a cylinder scene: a frictionless
/// pile goes flat (every top in a monolayer, as in
/// `frictionless_pile_goes_flat_when_the_cylinder_is_lifted`; 6e-15° here), and the
/// statepoint names the protocol.
#[test]
fn repose_runs_the_cylinder_protocol_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cyl.csv");
    let o = run(&[
        "repose",
        "tests/fixtures/repose_cylinder_tiny.ron",
        "--protocol",
        "cylinder",
        "--friction",
        "0",
        "--max-time",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("bare floor"));
    let sp_dir = dir.path().join("cyl.statepoints");
    let sp = std::fs::read_dir(&sp_dir).unwrap().next().unwrap().unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sp.path()).unwrap()).unwrap();
    assert_eq!(v["protocol"], "cylinder_lift");
    let angle = v["result"]["angle_deg"].as_f64().unwrap();
    assert!(angle.abs() < 0.1, "frictionless cone at {angle}°");
}

/// `repose --protocol drum` runs end to end on the drum fixture (μ = 0.5, μ_r = 0.1 d):
/// the CSV row names the protocol `drum`, the statepoint's name ends in `_drum` and it
/// holds the drum's Froude number, samples (9: a quarter turn at one per 10°) and an
/// angle between 0° and 90°. A drum phase cut by `--max-time` before its first sample is
/// flagged (`slumping_settled` false, a warning) and has no angle.
#[test]
fn repose_runs_the_drum_protocol_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("drum.csv");
    let o = run(&[
        "repose",
        DRUM_TINY,
        "--protocol",
        "drum",
        "--drum-froude",
        "0.01",
        "--drum-turns",
        "0.25",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("warning"));
    let csv = std::fs::read_to_string(&out).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert_eq!(lines[1].rsplit(',').nth(1), Some("drum"), "{}", lines[1]);
    let sp = dir
        .path()
        .join("drum.statepoints/repose_drum_tiny_sqm_mu0.5_e0.3_seed7_drum.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(sp).unwrap()).unwrap();
    assert_eq!(v["protocol"], "drum");
    assert_eq!(v["drum"]["froude"], 0.01);
    assert_eq!(v["drum"]["samples"], 9);
    assert_eq!(v["result"]["slumping"]["settled"], true);
    let angle = v["result"]["angle_deg"].as_f64().unwrap();
    assert!(angle > 0.0 && angle < 90.0, "dynamic angle {angle}°");
    // Capped before the start-up half turn ends: no sample, flagged.
    let capped = dir.path().join("capped.csv");
    let o = run(&[
        "repose",
        DRUM_TINY,
        "--protocol",
        "drum",
        "--drum-froude",
        "0.01",
        "--max-time",
        "3",
        "--out",
        capped.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the drum reached the time cap"), "{err}");
    let csv = std::fs::read_to_string(&capped).unwrap();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!(row[7], "NaN");
    assert_eq!(row[22], "false");
}

#[test]
fn repose_refuses_an_unknown_or_missing_protocol() {
    let o = run(&["repose", TINY, "--protocol", "slope"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not a protocol") && err.contains("drum"),
        "{err}"
    );
    // The drum protocol on a box whose pile does not fit the inscribed drum: refused.
    let o = run(&["repose", TINY, "--protocol", "drum"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("inside the drum"), "{err}");
    // A Froude number beyond the rolling regime, or no turn: refused before any run.
    for (flag, value) in [("--drum-froude", "0.5"), ("--drum-turns", "0")] {
        let o = run(&["repose", DRUM_TINY, "--protocol", "drum", flag, value]);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(flag), "{flag} {value}: {err}");
    }
    // The cylinder protocol on a box scene: refused, naming what the scene lacks.
    let o = run(&["repose", TINY, "--protocol", "cylinder"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("needs a Cylinder container") && err.contains("[box]"),
        "{err}"
    );
    // A tilt rate of 0 would never tilt the box: refused before any run.
    let o = run(&["repose", TINY, "--protocol", "tilt", "--tilt-rate", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("tilt-rate"));
}

// ---------------------------------------------------------------- the wall

/// The wall protocol's known answer: 30 frictionless spheres (r = 0.5 m) packed at
/// μ = 0.3 behind the wall of the 12 m × 6 m box cannot stay stacked once the wall goes
/// and μ = 0 (nothing holds a lower sphere against the push of the one above it), and
/// the floor (72 m²) has room for all of them: the pile ends as a monolayer, every
/// centre within 2 % of r of z = r (measured: r exactly). The grid reads a monolayer's
/// surface as flat up to where sphere flanks fall in its 0.75 m cells, which scatters
/// the highest points between a sphere's top and its side; its rows measured within 1°
/// of flat (SQM 0.33° ± 0.61°, Jolt 0.31° ± 0.62°), and the angle must be below 1.5°.
#[test]
fn frictionless_pile_goes_flat_when_the_wall_is_removed() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/repose_tiny.ron"
    );
    for solver in [SolverKind::Sqm, SolverKind::Jolt] {
        let mut scene = impulse_lab::scene::load_scene(std::path::Path::new(path)).unwrap();
        scene.solver = solver;
        scene.params.friction = 0.0;
        let config = ReposeConfig {
            pack_friction: Some(0.3),
            max_time: 3.0,
            ..Default::default()
        };
        let mut exp = ReposeExperiment::new(scene.build_world().unwrap(), config).unwrap();
        let result = exp.run(|_| {}).unwrap().clone();
        assert_eq!(result.bodies_lost, 0, "{solver}");
        for b in &exp.world.bodies {
            assert!(
                (b.position.z - 0.5).abs() < 0.01,
                "{solver}: a sphere at z = {} is not on the floor",
                b.position.z
            );
        }
        let m = &result.measurement;
        assert_eq!(m.rows_fitted, ROWS, "{solver}");
        assert!(
            m.angle_deg.abs() < 1.5,
            "{solver}: the flat pile measures {}° ± {}°",
            m.angle_deg,
            m.error_deg
        );
    }
}

/// Runs of two protocols at the same point (scene, method, μ, e, seed) into one
/// statepoint directory keep their own files, the CSV's `protocol` column names each
/// run's protocol, and `merge` rebuilds both rows from the statepoints, wall removal first.
#[test]
fn two_protocols_at_one_point_stay_apart_through_merge() {
    let dir = tempfile::tempdir().unwrap();
    let sp = dir.path().join("runs");
    for (protocol, out) in [("tilt", "tilt.csv"), ("wall", "wall.csv")] {
        let out = dir.path().join(out);
        let o = run(&[
            "repose",
            TINY,
            "--protocol",
            protocol,
            "--max-time",
            "0.2",
            "--statepoints",
            sp.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let mut names: Vec<String> = std::fs::read_dir(&sp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "repose_tiny_sqm_mu0.3_e0.3_seed7.json",
            "repose_tiny_sqm_mu0.3_e0.3_seed7_tilt.json"
        ]
    );
    let merged = dir.path().join("merged.csv");
    let o = run(&[
        "merge",
        sp.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(&merged).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].ends_with(",protocol,wall_clock_s"), "{}", lines[0]);
    assert_eq!(lines.len(), 3, "{csv}");
    let protocol = |line: &str| line.rsplit(',').nth(1).unwrap().to_string();
    assert_eq!(protocol(lines[1]), "tilt");
    assert_eq!(protocol(lines[2]), "wall_removal");
    // Each run's own CSV has the same row as the merged one.
    for (file, line) in [("tilt.csv", lines[1]), ("wall.csv", lines[2])] {
        let own = std::fs::read_to_string(dir.path().join(file)).unwrap();
        assert_eq!(own.lines().nth(1), Some(line), "{file}");
    }
}

/// The progress the app's panel and the CLI's bar show ([`ReposeTracker::progress`]):
/// under the tilt protocol the stages come in order (packing, tilting, settling after
/// the avalanche, done); the time left is at most the whole run's cap at the start
/// (packing 3 s, tilting at most 90°/(1°/s) = 90 s, settling 3 s) and never grows from
/// one step to the next, since each step either spends simulated time of the current
/// stage or ends it early.
#[test]
fn progress_runs_through_the_stages_and_the_time_left_never_grows() {
    let config = ReposeConfig {
        protocol: Protocol::Tilt,
        tilt_rate: 1.0,
        max_time: 3.0,
        ..Default::default()
    };
    let run_cap = impulse_lab::repose::ReposeTracker::run_cap(&config, f64::INFINITY);
    assert_eq!(run_cap, 3.0 + 90.0 + 3.0);
    let mut exp = ReposeExperiment::new(cube_world(SolverKind::Sqm, 0.3), config).unwrap();
    let start = exp.tracker.progress(&exp.world);
    assert_eq!(start.stage, "packing");
    assert_eq!((start.elapsed, start.cap, start.later), (0.0, 3.0, 93.0));
    assert_eq!(start.left_at_most(), run_cap);
    let mut stages = vec![start.stage];
    let mut left = start.left_at_most();
    let mut grew = None;
    exp.run(|e| {
        let p = e.tracker.progress(&e.world);
        assert!((0.0..=1.0).contains(&p.fraction()));
        if p.left_at_most() > left + 1e-9 && grew.is_none() {
            grew = Some((e.world.step_index, left, p.left_at_most()));
        }
        left = p.left_at_most();
        if stages.last() != Some(&p.stage) {
            stages.push(p.stage);
        }
    })
    .unwrap();
    assert_eq!(grew, None, "the time left grew (step, before, after)");
    assert_eq!(
        stages,
        ["packing", "tilting", "settling after the avalanche", "done"]
    );
    assert_eq!(exp.tracker.progress(&exp.world).left_at_most(), 0.0);
}
