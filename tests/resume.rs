//! A saved state continues bit for bit: a world stepped N steps, saved as a scene
//! (`scene::save::state_scene`, with its `resume` section), written to a file and
//! loaded as `impulse-lab run` loads it, then stepped M steps, equals the original
//! world stepped M more steps without interruption, under every method: every body's
//! position, orientation, velocity and angular velocity, bit for bit, and every energy
//! sample (the ledger continues). Scenes without the section load as before, and a bad
//! section is an error naming its field.

use impulse_lab::World;
use impulse_lab::container::Container;
use impulse_lab::dynamics::solver::SolverKind;
use impulse_lab::energy::EnergySample;
use impulse_lab::math::Vec3;
use impulse_lab::scene::resume::{ImpulseSpec, ResumeSpec};
use impulse_lab::scene::save::state_scene;
use impulse_lab::scene::{Scene, V3, load_scene, parse_scene, resolve_scene};
use std::path::Path;

mod common;
use common::{assert_same_state, body_state, json_body_state};

/// Resting, sleeping, sliding and rolling contacts in one box: a stack of three cubes
/// at rest from the start (asleep after 0.5 s), a cube sliding at 4 m/s (μ = 0.3 stops
/// it after v/(μ g) = 1.36 s), one at 1.5 m/s (stopped after 0.51 s, then still), a
/// sphere rolling (v = ω r), and 27 spheres falling into a pile.
const MIXED: &str = r#"Scene(
    name: "Rest, slide and pile",
    params: (restitution: 0.3, friction: 0.3),
    containers: [Plane(), Box(center: (0.0, 0.0, 0.0), half_size: (4.0, 4.0), height: 3.0)],
    bodies: [
        (shape: Cube(edge: 0.5), position: (-2.5, -2.5, 0.25)),
        (shape: Cube(edge: 0.5), position: (-2.5, -2.5, 0.75)),
        (shape: Cube(edge: 0.5), position: (-2.5, -2.5, 1.25)),
        (shape: Cube(edge: 0.5), position: (-3.5, 2.5, 0.25), velocity: (4.0, 0.0, 0.0)),
        (shape: Cube(edge: 0.5), position: (-3.5, 0.5, 0.25), velocity: (1.5, 0.0, 0.0)),
        (shape: Sphere(radius: 0.3), position: (-3.0, -0.5, 0.3), velocity: (3.0, 0.0, 0.0),
         angular_velocity: (0.0, 10.0, 0.0)),
    ],
    generators: [
        Lattice(
            count: 27,
            shape: Sphere(radius: 0.2),
            region: (min: (1.0, -3.0, 0.3), max: (2.5, -1.5, 1.8)),
            spacing: 0.5,
            velocity_jitter: 0.2,
        ),
    ],
)"#;

fn mixed(kind: SolverKind) -> Scene {
    let mut s = parse_scene(MIXED, "mixed.ron").unwrap();
    s.solver = kind;
    s
}

fn start(scene: &Scene) -> World {
    let mut w = scene.build_world().unwrap();
    w.start_ledger();
    w
}

/// Save `world` (built from `base`) as a scene file in `dir` and load it back as
/// `impulse-lab run` does (`load_scene`, `build_world`, `start_ledger`).
fn save_and_load(base: &Scene, world: &World, dir: &Path) -> (World, EnergySample) {
    let path = dir.join("saved.ron");
    let saved = state_scene(base, world, &world.forces, "saved").unwrap();
    std::fs::write(&path, saved.to_ron().unwrap()).unwrap();
    let mut loaded = load_scene(&path).unwrap().build_world().unwrap();
    let sample = loaded.start_ledger();
    (loaded, sample)
}

fn bits(s: &EnergySample) -> [u64; 9] {
    [
        s.time,
        s.total,
        s.residual,
        s.dissipated_restitution,
        s.dissipated_friction,
        s.external_work,
        s.integration,
        s.projection,
        s.kinetic,
    ]
    .map(f64::to_bits)
}

/// Step both worlds `m` times: equal samples at every step, equal bodies at the end.
fn assert_continue_alike(original: &mut World, loaded: &mut World, m: usize, what: &str) {
    for step in 0..m {
        let a = original.step().unwrap();
        let b = loaded.step().unwrap();
        assert_eq!(a.step, b.step, "{what}: step count");
        assert_eq!(
            (bits(&a), a.contacts),
            (bits(&b), b.contacts),
            "{what}: sample {step} after the load"
        );
    }
    assert_eq!(original.sleeping_bodies(), loaded.sleeping_bodies());
    assert_same_state(&original.bodies, &loaded.bodies, what);
}

/// Every method, on the box of resting, sleeping, sliding and rolling bodies: 480 steps
/// (0.8 s: the stack asleep, the cube still sliding, the spheres piling), saved to a file
/// and loaded, then 240 steps: the same bits as the world that was never saved. The
/// saved state is checked to hold what the continuation needs (sleepers, running
/// timers, warm-start impulses of the contact pass or of the method), and loads of the
/// same file without its `resume` section (a cold start) or without one of its parts
/// are checked to continue differently, so the comparison can fail.
#[test]
fn a_saved_state_continues_bit_for_bit_under_every_method() {
    const N: usize = 480;
    const M: usize = 240;
    let dir = tempfile::tempdir().unwrap();
    for kind in SolverKind::ALL {
        let base = mixed(kind);
        let mut original = start(&base);
        for _ in 0..N {
            original.step().unwrap();
        }
        let saved = state_scene(&base, &original, &original.forces, "saved").unwrap();
        let r = saved.resume.as_ref().unwrap();
        eprintln!(
            "{kind}: {} asleep, {} still timers running, sliding cube at {:.3} m/s, {} contact-pass and {} method warm-start impulses, {} projection rows",
            r.asleep.len(),
            r.still_time.iter().filter(|&&t| t > 0.0 && t < 0.5).count(),
            original.bodies[3].velocity.x,
            r.contact_impulses.len(),
            r.solver.as_ref().map_or(0, |s| s.impulses.len()),
            r.projection.len(),
        );
        assert_eq!(r.step, N as u64);
        assert!(!r.asleep.is_empty(), "{kind}: the stack must sleep");
        assert!(
            r.still_time.iter().any(|&t| t > 0.0 && t < 0.5),
            "{kind}: the stopped cube's still timer must be running"
        );
        assert!(
            original.bodies[3].velocity.x > 0.5,
            "{kind}: the cube must still slide"
        );
        assert_eq!(
            r.solver.is_some(),
            matches!(kind, SolverKind::Ccp | SolverKind::Mdp),
            "{kind}: the methods that keep their own impulses"
        );
        let warm = r.contact_impulses.len() + r.solver.as_ref().map_or(0, |s| s.impulses.len());
        assert!(warm > 10, "{kind}: {warm} warm-start impulses");

        let (mut loaded, sample) = save_and_load(&base, &original, dir.path());
        assert_eq!(loaded.step_index, N as u64);
        assert_eq!(loaded.time.to_bits(), original.time.to_bits());
        let e = original.state_energy(0.0);
        let expected = original
            .ledger
            .sample(original.step_index, original.time, e, 0);
        assert_eq!(
            bits(&sample),
            bits(&expected),
            "{kind}: the ledger continues"
        );
        assert_same_state(&original.bodies, &loaded.bodies, &format!("{kind} loaded"));

        // Without each part of the section the continuation differs: the comparison
        // below can fail. (The sleepers' timers are past the sleep time, so without
        // `asleep` the stack takes one step awake and falls asleep again, moved.)
        let file = load_scene(&dir.path().join("saved.ron")).unwrap();
        let mut reference = original.clone();
        let mut ends = Vec::new();
        type Drop = fn(&mut Scene);
        let mut parts: Vec<(&str, Drop)> = vec![
            ("the whole section (a cold start)", |s| s.resume = None),
            ("asleep", |s| s.resume.as_mut().unwrap().asleep.clear()),
            ("still_time", |s| {
                s.resume.as_mut().unwrap().still_time.clear()
            }),
        ];
        if r.contact_impulses.len() > 10 {
            parts.push(("contact_impulses", |s| {
                s.resume.as_mut().unwrap().contact_impulses.clear()
            }));
        }
        if r.solver.as_ref().is_some_and(|s| s.impulses.len() > 10) {
            parts.push(("solver", |s| s.resume.as_mut().unwrap().solver = None));
        }
        for (_, drop) in &parts {
            let mut s = file.clone();
            drop(&mut s);
            ends.push(start(&s));
        }
        for _ in 0..M {
            reference.step().unwrap();
            for w in &mut ends {
                w.step().unwrap();
            }
        }
        for ((part, _), w) in parts.iter().zip(&ends) {
            let same =
                reference.bodies.iter().zip(&w.bodies).all(|(x, y)| {
                    body_state(x).map(f64::to_bits) == body_state(y).map(f64::to_bits)
                });
            assert!(
                !same,
                "{kind}: without {part} the run must continue differently"
            );
        }
        assert_continue_alike(&mut original, &mut loaded, M, &format!("{kind}"));
    }
}

/// Whether the world loaded from `file` (a saved state of `original` with part of its
/// section dropped) ends `steps` steps later in another state than `original` does.
fn continues_differently(original: &World, file: &Scene, steps: usize) -> bool {
    let mut without = start(file);
    let mut reference = original.clone();
    for _ in 0..steps {
        reference.step().unwrap();
        without.step().unwrap();
    }
    reference
        .bodies
        .iter()
        .zip(&without.bodies)
        .any(|(x, y)| body_state(x).map(f64::to_bits) != body_state(y).map(f64::to_bits))
}

/// The default scene under every method (as `tests/snapshot.rs` clones it): 700 steps
/// of the mixed pour (the bodies have landed, 100+ contacts), saved, loaded, 60 more.
#[test]
fn the_default_scene_continues_bit_for_bit_from_a_saved_state() {
    let dir = tempfile::tempdir().unwrap();
    let (mut projected, mut mattered) = (Vec::new(), Vec::new());
    let mut manifolds_mattered = Vec::new();
    for kind in SolverKind::ALL {
        let mut base = load_scene(&resolve_scene("pour_mixed")).unwrap();
        base.solver = kind;
        let mut original = start(&base);
        for _ in 0..700 {
            original.step().unwrap();
        }
        assert!(
            original.contacts.len() > 100,
            "{kind}: the pile is in contact"
        );
        let (mut loaded, _) = save_and_load(&base, &original, dir.path());
        // The contact pass's last projection (after the methods without their own) opened
        // gaps that the next step must not take as room to fall into: without it the
        // run can continue differently.
        let mut file = load_scene(&dir.path().join("saved.ron")).unwrap();
        let r = file.resume.as_mut().unwrap();
        if r.projection
            .iter()
            .any(|(dx, _)| dx.vec3() != Vec3::zeros())
        {
            projected.push(kind);
            r.projection.clear();
            if continues_differently(&original, &file, 60) {
                mattered.push(kind);
            }
        }
        // The kept manifolds of the cube and cross pairs are part of the state: without
        // them every pair is computed afresh in the next step, and the run continues
        // differently.
        let mut file = load_scene(&dir.path().join("saved.ron")).unwrap();
        let r = file.resume.as_mut().unwrap();
        assert!(
            r.manifolds.len() > 20,
            "{kind}: {} kept manifolds",
            r.manifolds.len()
        );
        r.manifolds.clear();
        if continues_differently(&original, &file, 60) {
            manifolds_mattered.push(kind);
        }
        assert_continue_alike(&mut original, &mut loaded, 60, &format!("{kind}"));
    }
    // The world's projection runs after every method but MDP (which corrects by error
    // reduction); CCP's contact law lets no contact of the pour overlap at step 700
    // (its deepest gap then is +2.6e-5 m), so it has moved nothing to save.
    assert_eq!(
        projected,
        [
            SolverKind::Etm,
            SolverKind::Sqm,
            SolverKind::Smm,
            SolverKind::Jolt
        ],
        "the methods whose saved state holds a projection"
    );
    eprintln!("without the saved projection the pour continues differently under {mattered:?}");
    // A pair whose bodies all sleep, or that is struck, reads no kept manifold: the
    // manifolds matter where awake flat-faced pairs rest (not under CCP, whose pile
    // keeps bouncing on Newmark's contact law, docs/results/ccp-speed.md).
    eprintln!(
        "without the kept manifolds the pour continues differently under {manifolds_mattered:?}"
    );
    assert!(
        manifolds_mattered.len() >= 3,
        "the kept manifolds must matter under most methods: {manifolds_mattered:?}"
    );
    assert!(
        !mattered.is_empty(),
        "the saved projection must matter somewhere"
    );
}

/// A wall removed just before the save wakes every sleeping body at the next step, in
/// the loaded world as in the original (the section's `wake_pending`).
/// The soft resting model (`SolverParams::resting_model`) carries the same state: its
/// push-out is the pass's recorded displacement (saved as `projection`) and its
/// impulses the warm start. pour_mixed under each method that uses the contact pass,
/// 700 steps, saved and loaded, then 60 steps: the same bits; without the saved
/// displacement or impulses the run continues differently.
#[test]
fn the_soft_resting_model_continues_bit_for_bit_from_a_saved_state() {
    let dir = tempfile::tempdir().unwrap();
    let mut mattered = Vec::new();
    for kind in [SolverKind::Jolt, SolverKind::Sqm, SolverKind::Etm] {
        let mut base = load_scene(&resolve_scene("pour_mixed")).unwrap();
        base.solver = kind;
        base.params.resting_model = impulse_lab::dynamics::solver::RestingModel::Soft;
        let mut original = start(&base);
        for _ in 0..700 {
            original.step().unwrap();
        }
        let (mut loaded, _) = save_and_load(&base, &original, dir.path());
        let mut file = load_scene(&dir.path().join("saved.ron")).unwrap();
        assert_eq!(
            file.params.resting_model,
            impulse_lab::dynamics::solver::RestingModel::Soft,
            "{kind}: the model is saved"
        );
        let r = file.resume.as_mut().unwrap();
        assert!(
            r.projection
                .iter()
                .any(|(dx, _)| dx.vec3() != Vec3::zeros()),
            "{kind}: the push-out is saved"
        );
        r.projection.clear();
        // The push-out matters when a contact whose gap it opened reaches the pass
        // within the 60 steps (not in every method's pile at step 700).
        if continues_differently(&original, &file, 60) {
            mattered.push(kind);
        }
        assert_continue_alike(&mut original, &mut loaded, 60, &format!("{kind} soft"));
    }
    eprintln!("without the saved push-out the soft pour continues differently under {mattered:?}");
    assert!(
        mattered.len() >= 2,
        "the saved push-out must matter under most methods (else the comparison cannot \
         fail): {mattered:?}"
    );
}

#[test]
fn a_wall_removed_before_the_save_wakes_the_loaded_world_too() {
    let dir = tempfile::tempdir().unwrap();
    let base = mixed(SolverKind::Sqm);
    let mut original = start(&base);
    for _ in 0..480 {
        original.step().unwrap();
    }
    assert!(original.sleeping_bodies() > 0);
    let Container::Box { walls, .. } = &mut original.containers[1] else {
        panic!("the scene's second container is the box");
    };
    walls[0] = false;
    let (mut loaded, _) = save_and_load(&base, &original, dir.path());
    let text = std::fs::read_to_string(dir.path().join("saved.ron")).unwrap();
    assert!(text.contains("wake_pending: true"), "the wake is saved");
    original.step().unwrap();
    loaded.step().unwrap();
    assert_eq!(original.sleeping_bodies(), 0, "the removal woke the stack");
    assert_eq!(loaded.sleeping_bodies(), 0);
    assert_continue_alike(&mut original, &mut loaded, 120, "after the wall");
}

/// `impulse-lab run saved.ron --steps M --final-state out.json` ends, bit for bit, where
/// the world that was never saved ends M steps later (CCP: the method keeps its own
/// warm-start impulses; the file's step count continues the saved one).
#[test]
fn impulse_lab_run_continues_a_saved_state_bit_for_bit() {
    const N: usize = 480;
    const M: u64 = 240;
    let dir = tempfile::tempdir().unwrap();
    for kind in [SolverKind::Ccp, SolverKind::Jolt] {
        let base = mixed(kind);
        let mut original = start(&base);
        for _ in 0..N {
            original.step().unwrap();
        }
        let path = dir.path().join("saved.ron");
        let saved = state_scene(&base, &original, &original.forces, "saved").unwrap();
        std::fs::write(&path, saved.to_ron().unwrap()).unwrap();
        for _ in 0..M {
            original.step().unwrap();
        }
        let cli = common::cli_final_state(
            &["run", path.to_str().unwrap(), "--steps", &M.to_string()],
            dir.path(),
        );
        assert_eq!(cli["step"].as_u64(), Some(N as u64 + M), "{kind}");
        let bodies = cli["bodies"].as_array().unwrap();
        assert_eq!(bodies.len(), original.bodies.len());
        for (i, (j, b)) in bodies.iter().zip(&original.bodies).enumerate() {
            assert_eq!(
                body_state(b).map(f64::to_bits),
                json_body_state(j).map(f64::to_bits),
                "{kind}: body {i} after {M} steps"
            );
        }
    }
}

/// A scene written without the section loads at step 0 with a new ledger, as before.
#[test]
fn a_scene_without_the_section_starts_at_step_zero() {
    let mut w = mixed(SolverKind::Jolt).build_world().unwrap();
    assert_eq!((w.step_index, w.time), (0, 0.0));
    let s = w.start_ledger();
    assert_eq!(s.residual, 0.0);
    assert_eq!(w.sleeping_bodies(), 0);
}

/// A run from a saved state with another method (`impulse-lab run --solver`) starts that
/// method cold and keeps the rest; the file itself must name the method its impulses
/// came from.
#[test]
fn another_method_starts_cold_and_a_mismatched_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let base = mixed(SolverKind::Ccp);
    let mut original = start(&base);
    for _ in 0..200 {
        original.step().unwrap();
    }
    let saved = state_scene(&base, &original, &original.forces, "saved").unwrap();
    let text = saved.to_ron().unwrap();
    let path = dir.path().join("saved.ron");
    std::fs::write(&path, &text).unwrap();
    // As `--solver mdp` does: the scene's method replaced after loading.
    let mut s = load_scene(&path).unwrap();
    s.solver = SolverKind::Mdp;
    let w = s.build_world().unwrap();
    assert_eq!(w.step_index, 200);
    assert!(
        w.carried_state()
            .impulses
            .entries()
            .iter()
            .all(|e| e.impulses.method.is_none()),
        "MDP starts cold"
    );
    // The file edited to say mdp: its impulses are CCP's.
    let edited = text.replacen("solver: \"ccp\"", "solver: \"mdp\"", 1);
    assert_ne!(edited, text);
    let e = parse_scene(&edited, "edited.ron").unwrap_err().to_string();
    assert!(
        e.contains("resume.solver.method") && e.contains("saved with ccp"),
        "{e}"
    );
}

/// Bad data in the section: an error naming the field, never a panic.
#[test]
fn a_bad_section_is_an_error_naming_the_field() {
    let base = mixed(SolverKind::Mdp);
    let mut original = start(&base);
    for _ in 0..400 {
        original.step().unwrap();
    }
    let saved = state_scene(&base, &original, &original.forces, "saved").unwrap();
    let n = original.bodies.len();
    let r = saved.resume.as_ref().unwrap();
    let k = r.asleep.len();
    // One valid impulse of each kind (body 0 on body 1), for the cases to spoil.
    let valid = ImpulseSpec {
        a: 0,
        b: Some(1),
        container: None,
        feature: (0, 0),
        point: Some(V3::new(0.0, 0.0, 0.25)),
        normal: 1.0,
        tangent: V3::new(0.1, 0.0, 0.0),
    };
    let mut saved = saved.clone();
    let r = saved.resume.as_mut().unwrap();
    r.contact_impulses.insert(0, valid.clone());
    r.solver.as_mut().unwrap().impulses.insert(0, valid);
    assert!(
        parse_scene(&saved.to_ron().unwrap(), "valid.ron").is_ok(),
        "the valid impulses load"
    );
    type Spoil = Box<dyn Fn(&mut ResumeSpec)>;
    let cases: Vec<(String, Spoil)> = vec![
        ("resume.time".into(), Box::new(|r| r.time = f64::NAN)),
        (
            format!("resume.asleep[{k}]"),
            Box::new(move |r| r.asleep.push(n)),
        ),
        (
            "resume.still_time".into(),
            Box::new(|r| r.still_time = vec![0.0; 3]),
        ),
        (
            "resume.sleep.velocity".into(),
            Box::new(|r| r.sleep.velocity = -1.0),
        ),
        (
            "resume.contact_impulses[0].b".into(),
            Box::new(|r| {
                let i = &mut r.contact_impulses[0];
                i.b = Some(i.a);
                i.container = None;
            }),
        ),
        (
            "resume.contact_impulses[0].container".into(),
            Box::new(|r| {
                let i = &mut r.contact_impulses[0];
                i.b = None;
                i.container = Some(9);
            }),
        ),
        (
            "resume.contact_impulses[0].point".into(),
            Box::new(|r| r.contact_impulses[0].point = Some(V3::new(0.0, f64::NAN, 0.0))),
        ),
        (
            "resume.contact_impulses[1].feature".into(),
            Box::new(|r| {
                let twin = r.contact_impulses[0].clone();
                r.contact_impulses.insert(1, twin);
            }),
        ),
        (
            "resume.solver.impulses[0].normal".into(),
            Box::new(|r| r.solver.as_mut().unwrap().impulses[0].normal = -1.0),
        ),
        (
            "resume.solver.impulses[0].a".into(),
            Box::new(move |r| r.solver.as_mut().unwrap().impulses[0].a = n + 5),
        ),
        (
            "resume.projection".into(),
            Box::new(|r| r.projection = vec![(V3::new(0.0, 0.0, 0.0), V3::new(0.0, 0.0, 0.0))]),
        ),
        (
            "resume.ledger.integration".into(),
            Box::new(|r| r.ledger.as_mut().unwrap().integration = f64::INFINITY),
        ),
    ];
    for (field, spoil) in cases {
        let mut s = saved.clone();
        spoil(s.resume.as_mut().unwrap());
        // Through the text, as a user's edited file is read.
        let text = s.to_ron().unwrap();
        let e = parse_scene(&text, "bad.ron")
            .map(|_| ())
            .expect_err(&field)
            .to_string();
        assert!(e.contains(&format!("{field}:")), "{field}: {e}");
        // And a scene built in code reports it too (no panic in build_world).
        assert!(s.build_world().is_err(), "{field}");
    }
}
