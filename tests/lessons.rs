//! Lessons (`lessons/*.ron`, `impulse_lab::lesson`): every lesson loads, runs and its
//! check passes (one test per lesson, so they run in parallel and fail by name); a
//! malformed lesson file gives an error naming file, line and field; the CLI lists and
//! runs them; the impact watch behind "pause at the next impact" stops at the lessons'
//! impacts and not at rolling.

use impulse_lab::SolverKind;
use impulse_lab::lesson::{Check, bundled_lessons, load_lesson, parse_lesson};
use impulse_lab::microscope::{ImpactWatch, record_step};
use impulse_lab::scene;
use std::path::Path;
use std::process::Command;

const LESSONS: [&str; 6] = [
    "box_landing_flat",
    "box_on_box",
    "painleve_rod",
    "repose_friction",
    "rolling_sphere",
    "tetrahedra_energy",
];

fn lesson_path(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("lessons/{name}.ron"))
}

/// Load lesson `name`, run its check, print the figures and require that it passes.
fn passes(name: &str) -> impulse_lab::lesson::CheckOutcome {
    let lesson = load_lesson(&lesson_path(name)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(lesson.name().as_deref(), Some(name));
    let outcome = lesson.run_check().unwrap_or_else(|e| panic!("{name}: {e}"));
    eprintln!("{name}: {}\n{outcome}", lesson.title);
    assert!(outcome.passed(), "{name}: the check failed:\n{outcome}");
    outcome
}

fn figure(o: &impulse_lab::lesson::CheckOutcome, starts: &str) -> f64 {
    o.figures
        .iter()
        .find(|f| f.name.starts_with(starts))
        .unwrap_or_else(|| panic!("no figure '{starts}' in {o}"))
        .measured
}

/// The repose check's "time to rest" figures (packing and slumping at each μ).
fn times_to_rest(o: &impulse_lab::lesson::CheckOutcome) -> Vec<&impulse_lab::lesson::Figure> {
    o.figures
        .iter()
        .filter(|f| f.name.contains("time to rest"))
        .collect()
}

#[test]
fn the_bundled_lessons_are_these_six() {
    let found: Vec<String> = bundled_lessons()
        .unwrap()
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(found, LESSONS, "add a test below for a new lesson");
    // Compare presets are valid solver lists.
    let l = load_lesson(&lesson_path("box_on_box")).unwrap();
    assert_eq!(
        l.compare_solvers(),
        [SolverKind::Etm, SolverKind::Sqm, SolverKind::Smm]
    );
}

#[test]
fn lesson_tetrahedra_energy() {
    let o = passes("tetrahedra_energy");
    assert!(figure(&o, "max |(K+W)") <= 1e-12);
}

#[test]
fn lesson_box_landing_flat() {
    let o = passes("box_landing_flat");
    // ETM's spurious spin is far below SQM's (paper 000 §7.3, Fig. 8b).
    assert!(figure(&o, "etm") < figure(&o, "sqm") / 5.0);
}

#[test]
fn lesson_box_on_box() {
    passes("box_on_box");
}

#[test]
fn lesson_rolling_sphere() {
    passes("rolling_sphere");
}

#[test]
fn lesson_painleve_rod() {
    passes("painleve_rod");
}

#[test]
fn lesson_repose_friction() {
    let o = passes("repose_friction");
    // Every settle phase of both runs came to rest under the repose command's rule
    // (a capped phase fails the check, so `passes` holds it; this says it by name).
    let rest = times_to_rest(&o);
    assert_eq!(rest.len(), 4, "packing and slumping at both μ:\n{o}");
    assert!(rest.iter().all(|f| f.pass && f.measured < 30.0), "{o}");
    // The rough pile stands steeper than the smooth one by more than both error bars.
    let (lo, hi) = (
        figure(&o, "angle of repose at μ = 0 "),
        figure(&o, "angle of repose at μ = 0.5 "),
    );
    let (e_lo, e_hi) = (
        figure(&o, "error bar ε at μ = 0 "),
        figure(&o, "error bar ε at μ = 0.5 "),
    );
    assert!(hi - lo > e_lo + e_hi, "{lo} ± {e_lo} vs {hi} ± {e_hi}\n{o}");
}

/// A phase cut off by the cap is not at rest: with 1.5 s per phase (the piles are still
/// falling) the repose check fails on its times to rest, whatever the angles.
#[test]
fn repose_check_fails_when_a_phase_reaches_its_cap() {
    let text = std::fs::read_to_string(lesson_path("repose_friction")).unwrap();
    let capped = text.replacen("max_time: 30.0", "max_time: 1.5", 1);
    assert_ne!(capped, text, "the lesson's cap is 30 s");
    let lesson = parse_lesson(&capped, "lessons/repose_capped.ron").unwrap();
    let o = lesson.run_check().unwrap();
    assert!(!o.passed(), "{o}");
    let rest = times_to_rest(&o);
    assert_eq!(rest.len(), 4, "{o}");
    assert!(rest.iter().all(|f| !f.pass), "{o}");
    assert!(
        o.figures
            .iter()
            .filter(|f| f.name.starts_with("angle of repose"))
            .all(|f| !f.pass),
        "a capped run's angle is not presented as at rest:\n{o}"
    );
}

/// The lesson text of `tetrahedra_energy` with `from` replaced by `to`.
fn edited(from: &str, to: &str) -> String {
    let text = std::fs::read_to_string(lesson_path("tetrahedra_energy")).unwrap();
    assert!(text.contains(from), "'{from}' not in the lesson");
    text.replacen(from, to, 1)
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn malformed_lesson_names_file_line_and_field() {
    let file = "lessons/broken.ron";
    // (text edit, field named, line holding this text)
    let cases = [
        // Semantic: λ must increase.
        (
            edited("lambdas: [1.0, 10.0, 200.0]", "lambdas: [1.0, 10.0, 5.0]"),
            "check.lambdas[2]",
            "lambdas:",
        ),
        // Semantic: unknown solver in the compare preset.
        (
            edited(r#"compare: ["etm", "sqm"]"#, r#"compare: ["etm", "sqn"]"#),
            "compare[1]",
            "compare:",
        ),
        // Semantic: tolerance.
        (edited("tol: 1e-12", "tol: -1.0"), "check.tol", "tol:"),
        // Semantic: an empty text field.
        (
            {
                let text = edited("", "");
                let line = text.lines().find(|l| l.contains("look_at:")).unwrap();
                text.replacen(line, r#"    look_at: " ","#, 1)
            },
            "look_at",
            "look_at:",
        ),
        // Type error from ron: a string where a number goes.
        (edited("tol: 1e-12", r#"tol: "tiny""#), "check.tol", "tol:"),
        // A scene that does not exist.
        (
            edited(r#"scene: "etm_tetrahedra""#, r#"scene: "no_such_scene""#),
            "scene",
            "scene:",
        ),
        // Start hints: a time scale the app cannot run at.
        (
            edited("time_scale: 0.01", "time_scale: 0.0"),
            "start.time_scale",
            "start:",
        ),
        // Camera: a radius that is no length; following a body the scene lacks.
        (
            edited("radius: 1.6", "radius: -1.0"),
            "camera.radius",
            "camera:",
        ),
        (
            edited("radius: 1.6", "radius: 1.6, follow: 7"),
            "camera.follow",
            "camera:",
        ),
        // A run shorter than a time step.
        (
            std::fs::read_to_string(lesson_path("box_on_box"))
                .unwrap()
                .replacen("duration: 0.5", "duration: 0.0", 1),
            "duration",
            "duration:",
        ),
    ];
    for (text, field, needle) in cases {
        let e = parse_lesson(&text, file).expect_err("must be refused");
        eprintln!("{e}");
        assert_eq!(e.file, file);
        assert!(e.line.is_some(), "no line in {e}");
        if !field.is_empty() {
            assert_eq!(e.field, field, "{e}");
            assert_eq!(e.line, Some(line_of(&text, needle)), "{e}");
            assert!(
                e.to_string()
                    .starts_with(&format!("{file}:{}:", e.line.unwrap()))
            );
        }
    }
    // A check that contradicts its scene: V0 is the scene's 1 m/s.
    let text = std::fs::read_to_string(lesson_path("rolling_sphere"))
        .unwrap()
        .replacen("v0: 1.0", "v0: 2.0", 1);
    let e = parse_lesson(&text, "rolling.ron").unwrap_err();
    assert_eq!(e.field, "check.v0");
    assert_eq!(e.line, Some(line_of(&text, "check: RollingTime")), "{e}");
    assert!(e.message.contains("initial speed"), "{e}");
    // A body the scene does not have.
    let text = std::fs::read_to_string(lesson_path("box_on_box"))
        .unwrap()
        .replacen("body: 1", "body: 9", 1);
    let e = parse_lesson(&text, "box.ron").unwrap_err();
    assert_eq!(e.field, "check.body");
    assert_eq!(e.line, Some(line_of(&text, "body: 9")), "{e}");
    // Following the static box.
    let text = std::fs::read_to_string(lesson_path("box_on_box"))
        .unwrap()
        .replacen("follow: 1)", "follow: 0)", 1);
    let e = parse_lesson(&text, "box.ron").unwrap_err();
    assert_eq!(e.field, "camera.follow");
    assert!(e.message.contains("static"), "{e}");
}

#[test]
fn check_kinds_round_trip_through_ron() {
    let l = load_lesson(&lesson_path("painleve_rod")).unwrap();
    assert_eq!(l.check.name(), "PainleveStick");
    assert!(matches!(l.check, Check::PainleveStick { body: 0, .. }));
}

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_impulse-lab"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("binary runs")
}

#[test]
fn cli_lists_lessons_and_runs_one() {
    let o = cli(&["lessons"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for name in LESSONS {
        assert!(out.contains(name), "{name} not listed:\n{out}");
    }
    let o = cli(&["lesson", "box_on_box"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("smm: ξ_ω") && out.contains("PASS"), "{out}");
    // A lesson whose bound its scene cannot meet: exit 1, the figure marked FAIL.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("impossible.ron");
    let text = std::fs::read_to_string(lesson_path("box_on_box"))
        .unwrap()
        .replacen(
            r#"(solver: "smm", min: 0.0, max: 1e-9)"#,
            r#"(solver: "smm", min: 1.0, max: 2.0)"#,
            1,
        );
    assert!(text.contains("min: 1.0, max: 2.0"));
    std::fs::write(&path, text).unwrap();
    let o = cli(&["lesson", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("FAIL"));
    // A malformed lesson: exit 2 with file:line.
    std::fs::write(&path, edited("tol: 1e-12", "tol: -1.0")).unwrap();
    let o = cli(&["lesson", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("impossible.ron:") && err.contains("check.tol"),
        "{err}"
    );
}

/// The first step in which the solver gives `body` (any body: `None`) an impulse, from
/// the solver's trace (the microscope's test), and the first step the impact watch
/// reports, over `steps` steps of the scene with `solver`.
fn first_impacts(scene_name: &str, solver: SolverKind, steps: u64) -> (Option<u64>, Option<u64>) {
    let mut s = scene::load_scene(&scene::resolve_scene(scene_name)).unwrap();
    s.solver = solver;
    let mut w = s.build_world().unwrap();
    w.start_ledger();
    let mut watch = ImpactWatch::default();
    let (mut traced, mut watched) = (None, None);
    for _ in 0..steps {
        watch.before_step(&w);
        let r = record_step(&mut w).unwrap();
        let hit = watch.after_step(&w);
        if traced.is_none() && r.has_impulse(None) {
            traced = Some(w.step_index);
        }
        if watched.is_none() && hit.is_some() {
            watched = Some(w.step_index);
        }
    }
    (traced, watched)
}

/// The watch finds the collisions of the impact lessons at the step the solver's trace
/// shows the first impulse (every method of the compare presets), and none while a
/// sphere rests, slides and rolls on a plane under gravity (impulses every step, of the
/// order m g h: the rolling lesson's scene for the check's 486 steps and beyond).
#[test]
fn impact_watch_stops_at_collisions_not_at_rolling() {
    for (scene_name, solvers) in [
        (
            "etm_box_flat",
            &[SolverKind::Etm, SolverKind::Sqm, SolverKind::Smm][..],
        ),
        (
            "etm_box_on_box",
            &[SolverKind::Etm, SolverKind::Sqm, SolverKind::Smm][..],
        ),
        ("etm_tetrahedra", &[SolverKind::Etm, SolverKind::Sqm][..]),
        ("mdp_painleve_rod", &[SolverKind::Mdp][..]),
    ] {
        for &solver in solvers {
            let (traced, watched) = first_impacts(scene_name, solver, 300);
            assert!(traced.is_some(), "{scene_name} ({solver}): an impact");
            assert_eq!(watched, traced, "{scene_name} ({solver})");
        }
    }
    let (traced, watched) = first_impacts("dda_rolling_sphere", SolverKind::Ccp, 1000);
    assert_eq!(
        traced,
        Some(1),
        "the spheres rest on the plane from the first step"
    );
    assert_eq!(watched, None, "resting, sliding and rolling are no impact");
}
