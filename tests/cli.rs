//! The command-line contract: exit codes, output files, every bundled scene runs,
//! determinism.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_impulse-lab"));
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn bundled_scenes() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "ron"))
            .collect();
    v.sort();
    v
}

const TRACE_COLUMNS: &str = "step,time,kinetic,kinetic_translational,kinetic_rotational,potential,elastic,\
dissipated_restitution,dissipated_friction,external_work,integration,projection,total,residual,contacts";

#[test]
fn every_bundled_scene_validates_and_runs() {
    let scenes = bundled_scenes();
    assert!(scenes.len() >= 5, "bundled scenes missing: {scenes:?}");
    let dir = tempfile::tempdir().unwrap();
    for s in scenes {
        let name = s.file_stem().unwrap().to_string_lossy().into_owned();
        let o = run(&["validate", s.to_str().unwrap()]);
        assert!(o.status.success(), "validate {name}: {}", stderr(&o));
        let trace = dir.path().join(format!("{name}.csv"));
        let state = dir.path().join(format!("{name}.json"));
        // Each scene with its own method.
        let o = run(&[
            "run",
            &name,
            "--steps",
            "30",
            "--out",
            trace.to_str().unwrap(),
            "--final-state",
            state.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "run {name}: {}", stderr(&o));
        let csv = std::fs::read_to_string(&trace).unwrap();
        let mut lines = csv.lines();
        assert_eq!(lines.next().unwrap(), TRACE_COLUMNS, "{name}: trace header");
        assert_eq!(lines.count(), 31, "{name}: one row per step plus step 0");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
        let bodies = json["bodies"].as_array().unwrap();
        assert!(!bodies.is_empty(), "{name}: no bodies in the final state");
        for b in bodies {
            for (k, n) in [
                ("position", 3),
                ("orientation", 4),
                ("velocity", 3),
                ("angular_velocity", 3),
            ] {
                let v = b[k]
                    .as_array()
                    .unwrap_or_else(|| panic!("{name}: body lacks {k}"));
                assert_eq!(v.len(), n, "{name}: {k}");
                assert!(
                    v.iter().all(|x| x.as_f64().unwrap().is_finite()),
                    "{name}: {k} not finite"
                );
            }
            assert!(b["id"].is_u64() && b["shape"].is_string());
        }
    }
}

#[test]
fn runs_are_bit_identical() {
    let dir = tempfile::tempdir().unwrap();
    let mut traces = Vec::new();
    for k in 0..2 {
        let t = dir.path().join(format!("t{k}.csv"));
        let s = dir.path().join(format!("s{k}.json"));
        let o = run(&[
            "run",
            "pile_spheres_1080",
            "--steps",
            "120",
            "--out",
            t.to_str().unwrap(),
            "--final-state",
            s.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        traces.push((std::fs::read(&t).unwrap(), std::fs::read(&s).unwrap()));
    }
    assert!(
        traces[0].0 == traces[1].0,
        "energy traces differ between identical runs"
    );
    assert!(
        traces[0].1 == traces[1].1,
        "final states differ between identical runs"
    );
}

#[test]
fn unknown_solver_and_bad_parameters_exit_2() {
    for args in [
        vec!["--solver", "bogus"],
        vec!["--restitution", "1.5"],
        vec!["--friction", "-0.1"],
        vec!["--lambda", "0.5"],
        vec!["--dt", "-1"],
        vec!["--restitution", "NaN"],
        vec!["--rotation", "theta:1.5"],
        vec!["--rotation", "midpoint"],
        vec!["--mdp-friction", "stiction"],
        vec!["--error-reduction", "-0.1"],
    ] {
        let mut all = vec!["run", "pile_spheres_1080", "--steps", "1"];
        all.extend(args.iter());
        let o = run(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}");
    }
}

#[test]
fn unwritable_output_fails_before_running() {
    let o = run(&[
        "run",
        "pile_spheres_1080",
        "--out",
        "/nonexistent-dir/trace.csv",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/nonexistent-dir/trace.csv"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn missing_scene_exits_2() {
    let o = run(&["run", "no_such_scene"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no_such_scene"));
}

#[test]
fn scenes_lists_every_bundled_scene() {
    let o = run(&["scenes"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for s in bundled_scenes() {
        let name = s.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(
            out.lines()
                .any(|l| l.starts_with(&name) && l.len() > name.len() + 5),
            "{name} missing or without description"
        );
    }
}

/// Invalid scene files exit 2 with a message naming the file, the line and the field.
#[test]
fn invalid_scenes_exit_2_naming_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "negative_radius",
            "Body(shape: Sphere(radius: -1.0), position: (0, 0, 2))",
            "radius",
        ),
        (
            "nan_position",
            "Body(shape: Sphere(radius: 0.5), position: (0, NaN, 2))",
            "position",
        ),
        (
            "unknown_shape",
            "Body(shape: Blob(radius: 0.5), position: (0, 0, 2))",
            "Blob",
        ),
    ];
    for (name, body, field) in cases {
        let path = dir.path().join(format!("{name}.ron"));
        let text = format!(
            "Scene(\n    name: \"bad\",\n    containers: [Plane()],\n    bodies: [\n        {body},\n    ],\n)\n"
        );
        std::fs::write(&path, text).unwrap();
        for cmd in ["validate", "run"] {
            let o = run(&[cmd, path.to_str().unwrap()]);
            assert_eq!(o.status.code(), Some(2), "{name} ({cmd}): {}", stderr(&o));
            let msg = stderr(&o);
            assert!(
                msg.contains(&format!("{name}.ron:5:")),
                "{name}: file and line 5 expected in: {msg}"
            );
            assert!(
                msg.contains(field),
                "{name}: field {field} expected in: {msg}"
            );
        }
    }
    let bad_params = dir.path().join("bad_e.ron");
    std::fs::write(
        &bad_params,
        "Scene(\n    name: \"bad\",\n    params: (\n        restitution: 1.5,\n    ),\n)\n",
    )
    .unwrap();
    let o = run(&["validate", bad_params.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("bad_e.ron:4:") && stderr(&o).contains("restitution"),
        "{}",
        stderr(&o)
    );
}

/// Without a display server the app cannot open its window: `gui` says so and points to
/// the commands that need none, with exit status 2 (the environment is the problem), not
/// a panic from the windowing library.
#[cfg(all(feature = "app", target_os = "linux"))]
#[test]
fn gui_without_a_display_exits_2_and_points_to_record_and_run() {
    let out = bin()
        .arg("gui")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no display"), "{stderr}");
    assert!(
        stderr.contains("impulse-lab record") && stderr.contains("impulse-lab run"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Rolling and spinning resistance act only in the contact pass, which sees only the
/// contacts slower than rest_velocity: with rest_velocity 0 `validate` and `run` say
/// that μ_r and μ_s cannot act, and say nothing when they can.
#[test]
fn resistance_that_cannot_act_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let scene = |rest: f64| {
        format!(
            r#"Scene(
    name: "Rolling ball",
    duration: 0.1,
    solver: "sqm",
    params: (rest_velocity: {rest}, rolling_friction: 0.01, spinning_friction: 0.0),
    containers: [Box(center: (0.0, 0.0, 0.0), half_size: (2.0, 2.0), height: 2.0)],
    bodies: [(shape: Sphere(radius: 0.5), position: (0.0, 0.0, 0.5), velocity: (1.0, 0.0, 0.0))],
)"#
        )
    };
    let inert = dir.path().join("inert.ron");
    std::fs::write(&inert, scene(0.0)).unwrap();
    let o = run(&["validate", inert.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains("note: params.rolling_friction") && out.contains("rest_velocity is 0"),
        "validate: {out}"
    );
    assert!(!out.contains("spinning_friction"), "μ_s is 0: {out}");
    let o = run(&["run", inert.to_str().unwrap(), "--steps", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("note: params.rolling_friction"),
        "run: {}",
        stderr(&o)
    );
    let acting = dir.path().join("acting.ron");
    std::fs::write(&acting, scene(0.05)).unwrap();
    let o = run(&["validate", acting.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("note:"),
        "it can act"
    );
}

/// `run --resting-model soft` takes the soft resting model (the run differs from the
/// hard one), and a bad value or a configuration it cannot run in is refused naming it.
#[test]
fn run_takes_the_resting_model() {
    let dir = tempfile::tempdir().unwrap();
    let state = |model: &str| {
        let out = dir.path().join(format!("{model}.json"));
        let o = run(&[
            "run",
            "pour_mixed",
            "--steps",
            "400",
            "--resting-model",
            model,
            "--final-state",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{model}: {}", stderr(&o));
        std::fs::read_to_string(out).unwrap()
    };
    assert_ne!(state("soft"), state("hard"), "the model changes the run");
    let o = run(&[
        "run",
        "pour_mixed",
        "--steps",
        "1",
        "--resting-model",
        "squishy",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("resting-model"), "{}", stderr(&o));
    let o = run(&[
        "run",
        "dda_rolling_sphere",
        "--steps",
        "1",
        "--resting-model",
        "soft",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("resting_model"), "{}", stderr(&o));
}
