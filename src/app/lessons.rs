//! Lessons plugin: the bundled lessons (`lessons/*.ron`, [`crate::lesson`]) in the app.
//!
//! An [`OpenLesson`] message names a lesson (bundled name or path); [`open_lessons`]
//! then loads the lesson file and its scene (a broken file leaves the current scene
//! running and the error in [`Lessons::error`]), has the physics thread run the scene
//! ([`SimCommand::Open`], with the first compare solver if the lesson presets some),
//! places the camera if the lesson has a hint, asks for the lesson's comparison
//! ([`StartComparison`]) or stops a running one, and enters [`LabMode::Lesson`]. The
//! lesson's start hint sets the run controls: paused, time scale, pause at the next
//! impact. Leaving the mode ("Close lesson", a comparison of the user's) closes the
//! lesson ([`close_lesson`]).
//!
//! The lesson's camera ([`lesson_orbit`]): at the hint's eye looking at its target,
//! backed off until the hint's radius fits the 3D view, whose shape changes with the
//! panels and with side-by-side compare viewports; [`fit_lesson_camera`] fits it again
//! whenever the view's shape changes, until the user orbits or zooms. A hint that
//! follows a body hands it to [`CameraFollow`]. The teaching panel shows the
//! lesson's text; its "Check" button runs [`Lesson::run_check`] on a fresh world in a
//! background thread ([`Lessons::start_check`]), never on the app's world.

use super::compare::CompareMode;
use super::interaction::{CameraFollow, OrbitCamera};
use super::messages::{OpenLesson, SimCommand, StartComparison, ViewRequest};
use super::sets::SimulationStage;
use super::sim_state::LabMode;
use super::simulation::{SimControl, Simulation};
use super::view::to_render;
use crate::lesson::{self, CameraHint, CheckOutcome, Lesson};
use bevy::prelude::*;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One bundled lesson (or the error that kept it from loading).
#[derive(Clone, Debug)]
pub struct LessonEntry {
    pub name: String,
    pub lesson: Result<Lesson, String>,
}

/// A check running (or finished) in a background thread.
#[derive(Debug)]
pub struct CheckRun {
    /// The lesson checked.
    pub lesson: String,
    pub started: Instant,
    result: Arc<Mutex<Option<Result<CheckOutcome, String>>>>,
}

impl CheckRun {
    /// The outcome, once the thread has finished.
    pub fn result(&self) -> Option<Result<CheckOutcome, String>> {
        self.result.lock().ok().and_then(|r| r.clone())
    }

    /// Wait for the outcome (tests and scripts).
    pub fn wait(&self) -> Result<CheckOutcome, String> {
        loop {
            if let Some(r) = self.result() {
                return r;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// The lessons and the one open.
#[derive(Resource, Debug, Default)]
pub struct Lessons {
    pub entries: Vec<LessonEntry>,
    /// The lesson open (its scene is the app's scene unless another was opened since).
    pub current: Option<Lesson>,
    /// Why the last lesson asked for did not open.
    pub error: Option<String>,
    /// The last check started.
    pub check: Option<CheckRun>,
    /// The run settings (time scale, pause at impact) before the first lesson opened:
    /// closing the lesson gives them back.
    settings_before: Option<(f64, bool)>,
}

impl Lessons {
    /// Read the bundled lessons (each validated against its scene).
    pub fn load_bundled() -> Self {
        let entries = match lesson::bundled_lessons() {
            Ok(paths) => paths
                .iter()
                .map(|p| LessonEntry {
                    name: p
                        .file_stem()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned(),
                    lesson: lesson::load_lesson(p).map_err(|e| e.to_string()),
                })
                .collect(),
            Err(e) => {
                return Lessons {
                    error: Some(format!("{}: {e}", lesson::lessons_dir().display())),
                    ..default()
                };
            }
        };
        Lessons {
            entries,
            ..default()
        }
    }

    /// Run the open lesson's check on a fresh world in a background thread.
    pub fn start_check(&mut self) {
        let Some(l) = self.current.clone() else {
            return;
        };
        let result = Arc::new(Mutex::new(None));
        let out = result.clone();
        std::thread::spawn(move || {
            let r = l.run_check().map_err(|e| e.to_string());
            if let Ok(mut slot) = out.lock() {
                *slot = Some(r);
            }
        });
        self.check = Some(CheckRun {
            lesson: self
                .current
                .as_ref()
                .and_then(|l| l.name())
                .unwrap_or_default(),
            started: Instant::now(),
            result,
        });
    }
}

/// Adds [`Lessons`] (the bundled ones) and the system that opens a requested lesson.
#[derive(Default)]
pub struct LessonsPlugin {
    /// Open this lesson at startup (`impulse-lab gui --lesson NAME`).
    pub open: Option<String>,
}

impl Plugin for LessonsPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(Lessons::load_bundled())
            .init_resource::<LessonCamera>()
            .add_message::<OpenLesson>()
            .add_systems(OnExit(LabMode::Lesson), close_lesson)
            .add_systems(
                Update,
                (
                    open_lessons,
                    fit_lesson_camera.run_if(in_state(LabMode::Lesson)),
                )
                    .chain()
                    .in_set(SimulationStage::Open),
            );
        if let Some(name) = &self.open {
            app.world_mut().write_message(OpenLesson(name.clone()));
        }
    }
}

/// The open lesson's camera hint while the camera is still the lesson's (module doc).
#[derive(Resource, Debug, Default)]
pub struct LessonCamera {
    pub hint: Option<CameraHint>,
    /// The view's aspect and the (distance, yaw, pitch) last set for it.
    applied: Option<(f32, (f32, f32, f32))>,
}

/// Open the lessons asked for (module doc).
#[allow(clippy::too_many_arguments)]
pub fn open_lessons(
    mut asked: MessageReader<OpenLesson>,
    mut lessons: ResMut<Lessons>,
    mut commands: MessageWriter<SimCommand>,
    mut comparisons: MessageWriter<StartComparison>,
    mut view: MessageWriter<ViewRequest>,
    mut next_mode: ResMut<NextState<LabMode>>,
    mut control: ResMut<SimControl>,
    mut cameras: Query<(&mut OrbitCamera, Option<&Projection>)>,
    mut lesson_camera: ResMut<LessonCamera>,
    compare: Option<ResMut<CompareMode>>,
    follow: Option<ResMut<CameraFollow>>,
) {
    let Some(OpenLesson(name)) = asked.read().last() else {
        return;
    };
    let (l, next) = match load(name) {
        Ok(opened) => opened,
        Err(e) => {
            lessons.error = Some(e);
            return;
        }
    };
    lessons.error = None;
    if lessons.current.is_none() {
        lessons.settings_before = Some((control.time_scale, control.pause_at_impact));
    }
    let start = &l.start;
    control.paused = start.paused;
    control.time_scale = start.time_scale;
    control.pause_at_impact = start.pause_at_impact;
    control.impact_paused = None;
    let mut follow = follow;
    if let Some(f) = follow.as_mut() {
        f.stop();
    }
    lesson_camera.hint = l.camera.clone();
    lesson_camera.applied = None;
    if let Some(hint) = &l.camera {
        for (mut cam, projection) in &mut cameras {
            let (fov, aspect) = view_shape(projection);
            *cam = lesson_orbit(hint, fov, aspect);
            lesson_camera.applied = Some((aspect, (cam.distance, cam.yaw, cam.pitch)));
            if let (Some(body), Some(f)) = (hint.follow, follow.as_mut()) {
                f.start(body, &next, cam.target);
            }
        }
    } else {
        view.write(ViewRequest::Reframe);
    }
    let solvers = l.compare_solvers();
    if solvers.len() >= 2 {
        comparisons.write(StartComparison {
            solvers,
            run_params: None,
            lesson_scene: next.scene_path.clone(),
        });
    } else if let Some(mut compare) = compare {
        compare.stop();
    }
    commands.write(SimCommand::Open(Box::new(next)));
    lessons.current = Some(l);
    // Another lesson in the mode stays in it (the lesson just set up is not closed).
    NextState::set_if_neq(&mut next_mode, LabMode::Lesson);
}

/// `OnExit(LabMode::Lesson)`: the lesson is closed (its text, check and camera go) and
/// the run settings it set (slow motion, pause at impact) are given back as they were.
pub fn close_lesson(
    mut lessons: ResMut<Lessons>,
    mut lesson_camera: ResMut<LessonCamera>,
    mut control: ResMut<SimControl>,
) {
    lessons.current = None;
    lessons.check = None;
    if let Some((time_scale, pause_at_impact)) = lessons.settings_before.take() {
        control.time_scale = time_scale;
        control.pause_at_impact = pause_at_impact;
    }
    lesson_camera.hint = None;
    lesson_camera.applied = None;
}

/// The vertical field of view and aspect of a camera's projection (Bevy's default
/// perspective without one).
fn view_shape(projection: Option<&Projection>) -> (f32, f32) {
    match projection {
        Some(Projection::Perspective(p)) => (p.fov, p.aspect_ratio),
        _ => {
            let p = PerspectiveProjection::default();
            (p.fov, p.aspect_ratio)
        }
    }
}

/// Fit the lesson's camera to the view again when the view's shape changed, as long as
/// the user has not orbited or zoomed since it was placed (module doc).
pub fn fit_lesson_camera(
    mut lesson_camera: ResMut<LessonCamera>,
    mut cameras: Query<(&mut OrbitCamera, &Projection)>,
) {
    let Some(hint) = lesson_camera.hint.clone() else {
        return;
    };
    let Ok((mut cam, projection)) = cameras.single_mut() else {
        return;
    };
    let (fov, aspect) = view_shape(Some(projection));
    if let Some((was, placed)) = lesson_camera.applied {
        if placed != (cam.distance, cam.yaw, cam.pitch) {
            // The user moved the camera: it is theirs now.
            lesson_camera.hint = None;
            return;
        }
        if was == aspect {
            return;
        }
    }
    debug!("lesson camera: fitting a view of aspect {aspect}");
    let fitted = lesson_orbit(&hint, fov, aspect);
    cam.distance = fitted.distance;
    cam.home.1 = fitted.distance;
    lesson_camera.applied = Some((aspect, (cam.distance, cam.yaw, cam.pitch)));
}

/// The orbit camera of a lesson's hint for a perspective view of vertical field of view
/// `fov` (rad) and `aspect` = width/height: at `eye` looking at `target`, backed off
/// along eye − target to [`OrbitCamera::fit_distance`] of the hint's radius if that is
/// further (render coordinates; a followed body then moves it, [`CameraFollow`]).
pub fn lesson_orbit(hint: &CameraHint, fov: f32, aspect: f32) -> OrbitCamera {
    let mut cam = orbit_from(to_render(&hint.eye.vec3()), to_render(&hint.target.vec3()));
    if let Some(r) = hint.radius {
        cam.distance = cam
            .distance
            .max(OrbitCamera::fit_distance(r as f32, fov, aspect));
        cam.home.1 = cam.distance;
    }
    cam
}

/// Load the lesson `name` and the world of its scene (with the first compare solver,
/// if any).
fn load(name: &str) -> Result<(Lesson, Simulation), String> {
    let l = lesson::load_lesson(&lesson::resolve_lesson(name)).map_err(|e| e.to_string())?;
    let mut sim = Simulation::from_file(&l.scene_path())?;
    if let Some(&first) = l.compare_solvers().first() {
        sim.set_solver(first);
    }
    Ok((l, sim))
}

/// The orbit camera at `eye` looking at `target` (z up); "camera home" returns there.
pub fn orbit_from(eye: Vec3, target: Vec3) -> OrbitCamera {
    let d = eye - target;
    let distance = d.length().max(1e-3);
    let yaw = d.y.atan2(d.x);
    let pitch = (d.z / distance).clamp(-1.0, 1.0).asin();
    OrbitCamera {
        target,
        distance,
        yaw,
        pitch,
        home: (target, distance, yaw, pitch),
    }
}
