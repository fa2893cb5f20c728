//! Lessons plugin: the bundled lessons (`lessons/*.ron`, [`crate::lesson`]) in the app.
//!
//! [`Lessons::request`] names a lesson (bundled name or path); [`apply_lesson_request`]
//! then loads the lesson file, opens its scene through [`Simulation::open`] (a broken
//! file leaves the current scene running and the error in [`Lessons::error`]), restarts
//! the energy history, places the camera if the lesson has a hint, and, if the lesson
//! presets compare solvers, switches the app's world to the first and asks compare mode
//! ([`super::compare::CompareMode`]) for all of them. The teaching panel shows the
//! lesson's text; its "Check" button runs [`Lesson::run_check`] on a fresh world in a
//! background thread ([`Lessons::start_check`]), never on the app's world.

use super::compare::CompareMode;
use super::interaction::{OrbitCamera, Requests};
use super::sets::SimulationStage;
use super::simulation::{EnergyHistory, SceneWatcher, SimControl, Simulation};
use super::view::to_render;
use crate::lesson::{self, CheckOutcome, Lesson};
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
    /// Open this lesson (name or path) on the next update.
    pub request: Option<String>,
    /// Why the last request failed.
    pub error: Option<String>,
    /// The last check started.
    pub check: Option<CheckRun>,
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
        let mut lessons = Lessons::load_bundled();
        lessons.request = self.open.clone();
        app.insert_resource(lessons)
            .add_systems(Update, apply_lesson_request.in_set(SimulationStage::Open));
    }
}

/// Open the requested lesson (module doc).
#[allow(clippy::too_many_arguments)]
pub fn apply_lesson_request(
    mut lessons: ResMut<Lessons>,
    mut sim: ResMut<Simulation>,
    mut control: ResMut<SimControl>,
    mut history: ResMut<EnergyHistory>,
    mut watcher: ResMut<SceneWatcher>,
    mut cameras: Query<&mut OrbitCamera>,
    compare: Option<ResMut<CompareMode>>,
    requests: Option<ResMut<Requests>>,
) {
    let Some(name) = lessons.request.take() else {
        return;
    };
    let l = match open_lesson(&name, &mut sim) {
        Ok(l) => l,
        Err(e) => {
            lessons.error = Some(e);
            return;
        }
    };
    lessons.error = None;
    history.restart(sim.last_sample);
    control.clear_backlog();
    watcher.track(sim.scene_path.as_deref());
    if let Some(hint) = &l.camera {
        let (eye, target) = (to_render(&hint.eye.vec3()), to_render(&hint.target.vec3()));
        for mut cam in &mut cameras {
            *cam = orbit_from(eye, target);
        }
    } else if let Some(mut r) = requests {
        r.reframe = true;
    }
    if let Some(mut compare) = compare {
        let solvers = l.compare_solvers();
        if solvers.len() >= 2 {
            compare.request = Some(solvers);
        } else {
            compare.stop();
        }
    }
    lessons.current = Some(l);
}

/// Load the lesson `name` and open its scene in `sim` (with the first compare solver,
/// if any).
fn open_lesson(name: &str, sim: &mut Simulation) -> Result<Lesson, String> {
    let l = lesson::load_lesson(&lesson::resolve_lesson(name)).map_err(|e| e.to_string())?;
    sim.open(&l.scene_path())?;
    if let Some(&first) = l.compare_solvers().first() {
        sim.set_solver(first);
    }
    Ok(l)
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
