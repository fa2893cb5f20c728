//! Every bundled lesson, and the comparison it presets, keeps its subject bodies in the
//! lesson's camera until the lesson's figure is measured.
//!
//! The lesson's check is run headless on the core's worlds ([`Lesson::run_check_observed`]:
//! every world the check steps, at step 0 and after each step, until it has measured its
//! figure; for a compare preset that is every run). At each of those states the camera
//! the app would show is built with the app's own code: [`lesson_orbit`] for the lesson's
//! camera hint in a view of the app's shape, moved by [`CameraFollow`] if the hint
//! follows a body, and Bevy's perspective projection (the app's camera: default field of
//! view π/4, near plane 0.1 m). Every subject body's bounding sphere must lie inside the
//! view: its projection within normalised device coordinates [−1, 1]², i.e. the sphere's
//! centre at least its radius inside each of the four side planes of the view frustum
//! (Gribb and Hartmann's planes of the clip-from-world matrix) and beyond the near plane.
#![cfg(feature = "app")]

use bevy::camera::CameraProjection;
use bevy::prelude::*;
use impulse_lab::World;
use impulse_lab::app::interaction::CameraFollow;
use impulse_lab::app::lessons::lesson_orbit;
use impulse_lab::app::render::to_render;
use impulse_lab::lesson::{Lesson, bundled_lessons, load_lesson};

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
