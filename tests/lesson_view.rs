//! Every bundled lesson, every run its compare preset holds, and `gui --compare` starts
//! keep their bodies in the app's camera.
//!
//! Until the figure is measured: the lesson's check is run headless on the core's
//! worlds ([`Lesson::run_check_observed`]: every world the check steps, at step 0 and
//! after each step, until it has measured its figure; for a compare preset that is every
//! run), and every subject body must be in view.
//!
//! The whole run: the lesson's scene is stepped for the lesson's run
//! ([`Lesson::run_duration`]) under each solver of its compare preset (its own solver
//! without one), and `gui SCENE --compare etm,sqm,smm` without a lesson for the scene's
//! `duration`. At step 0 and after every step, every moving body (dynamic, awake, faster
//! than the world's sleep velocity) whose centre is inside the scene's region of
//! interest ([`Scene::region_of_interest`]) must be in view; a body that has left the
//! region need not be.
//!
//! The camera is the one the app would show, built with the app's own code:
//! [`lesson_orbit`] for the lesson's camera hint in a view of the app's shape, moved by
//! [`CameraFollow`] if the hint follows a body (the app follows the body of its own
//! world, run 0 of a comparison, and the side-by-side viewports share that camera); for
//! a compare start [`region_orbit`], the framing compare mode holds; Bevy's perspective
//! projection (the app's camera: default field of view π/4, near plane 0.1 m). A body's
//! bounding sphere must lie inside the view: its projection within normalised device
//! coordinates [−1, 1]², i.e. the sphere's centre at least its radius inside each of the
//! four side planes of the view frustum (Gribb and Hartmann's planes of the
//! clip-from-world matrix) and beyond the near plane. No tolerance: a margin below 0 m
//! fails.
#![cfg(feature = "app")]

use bevy::camera::CameraProjection;
use bevy::prelude::*;
use impulse_lab::World;
use impulse_lab::app::interaction::{
    CameraFollow, OrbitCamera, largest_moving_radius, region_orbit,
};
use impulse_lab::app::lessons::lesson_orbit;
use impulse_lab::app::render::to_render;
use impulse_lab::dynamics::solver::SolverKind;
use impulse_lab::lesson::{Lesson, bundled_lessons, load_lesson};
use impulse_lab::scene::{Region, Scene, load_scene, resolve_scene};

/// The scenes `gui --compare etm,sqm,smm` is checked on: the default scene (a pour into
/// a box), a box landing on a plane and the cube tipping off a box's edge.
const COMPARE_SCENES: &[&str] = &["pour_mixed", "etm_box_flat", "etm_box_on_box"];

/// Width/height of the app's 3D view at a 1280×800 window with a lesson open, read off
/// the app (`RUST_LOG=impulse_lab=debug impulse-lab gui --lesson NAME [--projector |
/// --present]`, the aspect `fit_lesson_camera` logs; with the side and teaching panels
/// 1.16-1.26 depending on the lesson, so the narrowest is taken: a wider view only adds
/// room at the sides): with the panels, the projector profile, presentation mode.
const FULL_VIEWS: &[(&str, f32)] = &[
    ("panels", 1.15),
    ("projector", 1.30),
    ("presentation", 2.24),
];

/// Compare mode side by side divides the width of the same views between the n runs
/// (logged as 0.399 = 1.197/3 and 0.746 = 2.24/3 for three runs).
const SPLIT_VIEWS: &[(&str, f32)] = &[("panels", 1.15), ("presentation", 2.24)];

/// The distance (m) by which the sphere (centre `c`, radius `r`) lies inside the view of
/// `clip_from_world` (negative: it crosses an edge), and which edge is the closest.
fn inside_by(clip_from_world: &Mat4, c: Vec3, r: f32) -> (f32, &'static str) {
    let rows = [
        clip_from_world.row(0),
        clip_from_world.row(1),
        clip_from_world.row(2),
        clip_from_world.row(3),
    ];
    // x_clip ≥ −w, x_clip ≤ w, y likewise; Bevy's reversed depth: z_clip ≤ w is the near
    // plane (the far plane is at infinity).
    let planes = [
        (rows[3] + rows[0], "left"),
        (rows[3] - rows[0], "right"),
        (rows[3] + rows[1], "bottom"),
        (rows[3] - rows[1], "top"),
        (rows[3] - rows[2], "near"),
    ];
    planes
        .iter()
        .map(|(p, name)| {
            let n = p.truncate();
            ((n.dot(c) + p.w) / n.length() - r, *name)
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap()
}

/// One view of a lesson: the name, aspect, and how many runs share the view's width.
struct View {
    name: String,
    aspect: f32,
}

fn views_of(lesson: &Lesson) -> Vec<View> {
    let mut views: Vec<View> = FULL_VIEWS
        .iter()
        .map(|&(name, aspect)| View {
            name: name.into(),
            aspect,
        })
        .collect();
    let n = lesson.compare.len();
    if n >= 2 {
        for &(name, aspect) in SPLIT_VIEWS {
            views.push(View {
                name: format!("{name}, side by side ({n} runs)"),
                aspect: aspect / n as f32,
            });
        }
    }
    views
}

/// The worst case over the lesson's run: (margin in m, view, step, body, edge).
fn worst_margin(lesson: &Lesson) -> (f32, String, u64, usize, &'static str) {
    let name = lesson.name().unwrap_or_default();
    let hint = lesson
        .camera
        .clone()
        .unwrap_or_else(|| panic!("{name}: a lesson states its camera"));
    let fov = PerspectiveProjection::default().fov;
    let views = views_of(lesson);
    let mut follow: Vec<Option<CameraFollow>> = vec![None; views.len()];
    let mut worst = (f32::INFINITY, String::new(), 0, 0, "");
    let mut states = 0u64;
    let mut observe = |w: &World, subjects: &[usize]| {
        states += 1;
        for (k, view) in views.iter().enumerate() {
            let mut orbit = lesson_orbit(&hint, fov, view.aspect);
            if w.step_index == 0 {
                // A new world of the check: the camera starts from the lesson's view.
                follow[k] = hint
                    .follow
                    .and_then(|b| CameraFollow::on(b, w, orbit.target));
            }
            if let Some(target) = follow[k].as_ref().and_then(|f| f.target(w)) {
                orbit.target = target;
            }
            let projection = PerspectiveProjection {
                aspect_ratio: view.aspect,
                ..default()
            };
            let clip_from_world =
                projection.get_clip_from_view() * orbit.transform().to_matrix().inverse();
            for &i in subjects {
                let b = &w.bodies[i];
                let r = b.shape.bounding_radius() as f32;
                let (margin, edge) = inside_by(&clip_from_world, to_render(&b.position), r);
                if margin < worst.0 {
                    worst = (margin, view.name.clone(), w.step_index, i, edge);
                }
            }
        }
    };
    let outcome = lesson
        .run_check_observed(&mut observe)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        outcome.passed(),
        "{name}: the figure is measured\n{outcome}"
    );
    assert!(states > 1, "{name}: the check stepped a world");
    worst
}

#[test]
fn every_lesson_keeps_its_subjects_in_view_until_its_figure_is_measured() {
    let paths = bundled_lessons().unwrap();
    assert!(paths.len() >= 6, "the bundled lessons: {paths:?}");
    let mut failures = Vec::new();
    for path in paths {
        let lesson = load_lesson(&path).unwrap();
        let name = lesson.name().unwrap_or_default();
        let (margin, view, step, body, edge) = worst_margin(&lesson);
        eprintln!(
            "{name}: closest to an edge by {margin:.3} m ({view}, step {step}, body {body}, {edge})"
        );
        if margin < 0.0 {
            failures.push(format!(
                "{name}: body {body} crosses the {edge} edge by {:.3} m at step {step} ({view})",
                -margin
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The worst case of a whole run: the margin (m), where, and how many (state, run,
/// body) triples were checked.
#[derive(Debug)]
struct Worst {
    margin: f32,
    view: String,
    step: u64,
    run: usize,
    body: usize,
    edge: &'static str,
    checked: u64,
}

impl Worst {
    fn new() -> Self {
        Worst {
            margin: f32::INFINITY,
            view: String::new(),
            step: 0,
            run: 0,
            body: 0,
            edge: "",
            checked: 0,
        }
    }
}

/// Whether body `i` of `w` is a moving body the view must hold: dynamic, awake, faster
/// than the world's sleep velocity (the speed below which its island counts as still,
/// Box2D's linear sleep tolerance, 0.01 m/s by default), and with its centre inside the
/// scene's region of interest.
fn must_show(w: &World, i: usize, region: &Region) -> bool {
    let b = &w.bodies[i];
    !b.is_static()
        && !w.is_sleeping(i)
        && b.velocity.norm() > w.sleep.velocity
        && region.contains(&b.position)
}

/// The clip-from-world matrix of `orbit` in a view of `aspect` (the app's perspective
/// camera: Bevy's default field of view and near plane).
fn clip_from_world(orbit: &OrbitCamera, aspect: f32) -> Mat4 {
    let projection = PerspectiveProjection {
        aspect_ratio: aspect,
        ..default()
    };
    projection.get_clip_from_view() * orbit.transform().to_matrix().inverse()
}

/// Step the runs (one world per solver, as compare mode builds them: the app's world is
/// run 0) for `steps` steps, and at step 0 and after every step check, in every view,
/// every body of every run that [`must_show`]; `camera(k, runs)` is the app's camera
/// of view k for the runs' current state.
fn whole_run(
    runs: &mut [World],
    steps: u64,
    region: &Region,
    views: &[View],
    camera: &mut dyn FnMut(usize, &[World]) -> OrbitCamera,
) -> Worst {
    let mut worst = Worst::new();
    for _ in 0..=steps {
        for (k, view) in views.iter().enumerate() {
            let m = clip_from_world(&camera(k, runs), view.aspect);
            for (r, w) in runs.iter().enumerate() {
                for i in (0..w.bodies.len()).filter(|&i| must_show(w, i, region)) {
                    let b = &w.bodies[i];
                    let radius = b.shape.bounding_radius() as f32;
                    let (margin, edge) = inside_by(&m, to_render(&b.position), radius);
                    worst.checked += 1;
                    if margin < worst.margin {
                        worst = Worst {
                            margin,
                            view: view.name.clone(),
                            step: w.step_index,
                            run: r,
                            body: i,
                            edge,
                            checked: worst.checked,
                        };
                    }
                }
            }
        }
        if runs[0].step_index == steps {
            break;
        }
        for w in runs.iter_mut() {
            w.step().unwrap();
        }
    }
    worst
}

/// The worlds compare mode runs for `solvers` (the scene's own solver alone when
/// empty), each built from the scene with its ledger started.
fn run_worlds(scene: &Scene, solvers: &[SolverKind]) -> Vec<World> {
    let solvers = if solvers.is_empty() {
        vec![scene.solver]
    } else {
        solvers.to_vec()
    };
    solvers
        .iter()
        .map(|&k| {
            let mut s = scene.clone();
            s.solver = k;
            let mut w = s.build_world().unwrap();
            w.start_ledger();
            w
        })
        .collect()
}

fn report(what: &str, worst: &Worst, failures: &mut Vec<String>) {
    eprintln!(
        "{what}: closest to an edge by {:.3} m ({}, step {}, run {}, body {}, {}; {} body-states checked)",
        worst.margin, worst.view, worst.step, worst.run, worst.body, worst.edge, worst.checked
    );
    if worst.margin < 0.0 {
        failures.push(format!(
            "{what}: body {} of run {} crosses the {} edge by {:.3} m at step {} ({})",
            worst.body, worst.run, worst.edge, -worst.margin, worst.step, worst.view
        ));
    }
}

/// Every bundled lesson, every run its compare preset holds, for the lesson's whole run
/// ([`Lesson::run_duration`]): at every step each moving body inside the scene's region
/// of interest is inside the lesson's camera (followed as the app follows: the camera's
/// target moves with the app's world, run 0, and the side-by-side viewports share it).
#[test]
fn every_lesson_keeps_its_moving_bodies_in_view_for_its_whole_run() {
    let fov = PerspectiveProjection::default().fov;
    let mut failures = Vec::new();
    for path in bundled_lessons().unwrap() {
        let lesson = load_lesson(&path).unwrap();
        let name = lesson.name().unwrap_or_default();
        let scene = lesson.load_scene().unwrap();
        let region = scene.region_of_interest().unwrap();
        let hint = lesson
            .camera
            .clone()
            .unwrap_or_else(|| panic!("{name}: a lesson states its camera"));
        let steps = (lesson.run_duration(&scene) / scene.dt).ceil() as u64;
        let mut runs = run_worlds(&scene, &lesson.compare_solvers());
        let views = views_of(&lesson);
        let follow: Vec<Option<CameraFollow>> = views
            .iter()
            .map(|v| {
                let target = lesson_orbit(&hint, fov, v.aspect).target;
                hint.follow
                    .and_then(|b| CameraFollow::on(b, &runs[0], target))
            })
            .collect();
        let mut camera = |k: usize, runs: &[World]| {
            let mut orbit = lesson_orbit(&hint, fov, views[k].aspect);
            if let Some(t) = follow[k].as_ref().and_then(|f| f.target(&runs[0])) {
                orbit.target = t;
            }
            orbit
        };
        let worst = whole_run(&mut runs, steps, &region, &views, &mut camera);
        assert!(worst.checked > 0, "{name}: some body moved in the region");
        report(&format!("{name} ({steps} steps)"), &worst, &mut failures);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `gui SCENE --compare etm,sqm,smm` without a lesson: the scene's whole run (its
/// `duration`), every run, in the full views and the three side-by-side viewports, with
/// the camera a compare start sets ([`region_orbit`] of the scene's region of interest,
/// fitted to each view's shape).
#[test]
fn compare_starts_keep_moving_bodies_in_view_for_the_whole_run() {
    let fov = PerspectiveProjection::default().fov;
    let solvers = [SolverKind::Etm, SolverKind::Sqm, SolverKind::Smm];
    let mut views: Vec<View> = FULL_VIEWS
        .iter()
        .map(|&(name, aspect)| View {
            name: name.into(),
            aspect,
        })
        .collect();
    for &(name, aspect) in SPLIT_VIEWS {
        views.push(View {
            name: format!("{name}, side by side (3 runs)"),
            aspect: aspect / 3.0,
        });
    }
    let mut failures = Vec::new();
    for name in COMPARE_SCENES {
        let scene = load_scene(&resolve_scene(name)).unwrap();
        let region = scene.region_of_interest().unwrap();
        let steps = (scene.duration / scene.dt).ceil() as u64;
        let mut runs = run_worlds(&scene, &solvers);
        let radius = largest_moving_radius(&runs[0]);
        let mut camera =
            |k: usize, _: &[World]| region_orbit(&region, radius, fov, views[k].aspect);
        let worst = whole_run(&mut runs, steps, &region, &views, &mut camera);
        assert!(worst.checked > 0, "{name}: some body moved in the region");
        report(
            &format!("{name} --compare etm,sqm,smm ({steps} steps)"),
            &worst,
            &mut failures,
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The containment test itself: a sphere straight ahead is inside, one beside the view
/// or behind the camera is not, and the margin is the distance to the nearest side plane.
#[test]
fn inside_by_measures_the_distance_to_the_frustum() {
    let projection = PerspectiveProjection {
        aspect_ratio: 1.0,
        ..default()
    };
    // Camera at the origin looking along −z (Bevy's view space = world here).
    let m = projection.get_clip_from_view();
    let half = 0.5 * projection.fov;
    // Centre 10 m ahead: the side planes are 10 tan(fov/2) away sideways, at distance
    // 10 sin(fov/2) from the centre.
    let (d, _) = inside_by(&m, Vec3::new(0.0, 0.0, -10.0), 1.0);
    assert!((d - (10.0 * half.sin() - 1.0)).abs() < 1e-4, "{d}");
    let (d, edge) = inside_by(&m, Vec3::new(10.0, 0.0, -10.0), 1.0);
    assert!(d < 0.0 && edge == "right", "{d} {edge}");
    let (d, edge) = inside_by(&m, Vec3::new(0.0, 0.0, 5.0), 1.0);
    assert!(d < 0.0, "behind the camera: {d} {edge}");
}
