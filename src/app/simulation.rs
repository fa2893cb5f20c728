//! Simulation plugin: owns the physics core's [`World`] as a resource and steps it.
//!
//! The world advances in fixed steps of its own `dt` (never the frame time): every frame
//! the real time elapsed, times the time scale, is added to an accumulator, and whole
//! steps are taken while it holds at least one `dt`. Two guards keep the app responsive
//! when a solver is slower than real time:
//! - physics may use at most [`SimControl::frame_budget`] of wall-clock time per frame;
//!   what is left over is dropped, so the run continues in slow motion instead of
//!   falling ever further behind;
//! - the accumulator never holds more than [`MAX_BACKLOG`] of simulated time.
//!
//! The achieved real-time factor (simulated seconds per wall-clock second) is measured
//! and shown in the stats line. Single steps and "step N" requests are taken even while
//! paused. A solver error or a non-finite state pauses the run and is shown, never
//! hidden.

use crate::body::RigidBody;
use crate::dynamics::solver::SolverKind;
use crate::energy::EnergySample;
use crate::math::Vec3;
use crate::repose::{Phase, ReposeConfig, ReposeGrid, ReposeMeasurement, ReposeTracker};
use crate::scene::{self, Scene};
use crate::world::{AppliedForce, World};
use bevy::prelude::*;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// The longest backlog of simulated time the accumulator keeps (s of simulated time).
pub const MAX_BACKLOG: f64 = 0.1;

/// The physics core's world and the scene it was built from.
#[derive(Resource)]
pub struct Simulation {
    pub world: World,
    /// The scene as loaded (reset rebuilds the world from it).
    pub scene: Scene,
    /// The file the scene came from, if any (watched for edits).
    pub scene_path: Option<PathBuf>,
    /// The last solver or state error; the run pauses when it is set.
    pub error: Option<String>,
    /// Bumped whenever bodies or containers are replaced, added or changed, so the
    /// renderer knows to rebuild its meshes.
    pub generation: u64,
    /// The mouse spring pulling a body, applied before every step.
    pub grab: Option<GrabSpring>,
    /// The last energy sample (step 0's after a load or reset).
    pub last_sample: EnergySample,
    /// The angle-of-repose experiment running on this world, if one was started
    /// (`super::repose`); told of every step.
    pub repose: Option<ReposeTracker>,
    /// The last repose measurement (the experiment's, or "measure now"), drawn over the
    /// pile.
    pub repose_measurement: Option<ReposeMeasurement>,
    /// The repose measurement grid of the scene's initial state, or why the experiment
    /// cannot run on this scene (no box with a divider, unsupported shapes).
    pub repose_grid: Result<ReposeGrid, String>,
}

/// A spring-damper from a material point of a body to a target point: the app's mouse
/// grab. F = m (k (x_target − x_p) − c v_p) with k = ω₀², c = 2 ζ ω₀ (ω₀ = 2π·3 Hz,
/// ζ = 0.7: stiff enough to follow the mouse, damped to stop without ringing), applied at
/// the grabbed point so the body also turns; the acceleration is clamped to
/// [`GrabSpring::MAX_ACCELERATION`]. The energy ledger books its work as external work.
#[derive(Clone, Debug, PartialEq)]
pub struct GrabSpring {
    pub body: usize,
    /// Grabbed point in the body frame (m).
    pub local_point: Vec3,
    /// Where the mouse wants that point (m, world).
    pub target: Vec3,
}

impl GrabSpring {
    pub const FREQUENCY_HZ: f64 = 3.0;
    pub const DAMPING_RATIO: f64 = 0.7;
    /// Largest spring acceleration (m/s²).
    pub const MAX_ACCELERATION: f64 = 300.0;

    /// The applied force for the body's current state.
    pub fn force(&self, body: &RigidBody) -> AppliedForce {
        let w0 = 2.0 * std::f64::consts::PI * Self::FREQUENCY_HZ;
        let (k, c) = (w0 * w0, 2.0 * Self::DAMPING_RATIO * w0);
        let offset = body.orientation * self.local_point;
        let point = body.position + offset;
        let mut accel = k * (self.target - point) - c * body.velocity_at(&point);
        let a = accel.norm();
        if a > Self::MAX_ACCELERATION {
            accel *= Self::MAX_ACCELERATION / a;
        }
        AppliedForce {
            body: self.body,
            force: body.mass * accel,
            offset,
        }
    }
}

impl Simulation {
    /// Build the world of `scene` (optionally with another solver) and start its ledger,
    /// exactly as `impulse-lab run` does.
    pub fn from_scene(
        mut scene: Scene,
        path: Option<PathBuf>,
        solver: Option<SolverKind>,
    ) -> Result<Self, String> {
        if let Some(kind) = solver {
            scene.solver = kind;
        }
        let mut world = scene.build_world().map_err(|e| e.to_string())?;
        let repose_grid = ReposeTracker::new(&mut world, ReposeConfig::default())
            .map(|t| t.grid)
            .map_err(|e| e.to_string());
        let last_sample = world.start_ledger();
        Ok(Simulation {
            world,
            scene,
            scene_path: path,
            error: None,
            generation: 0,
            grab: None,
            last_sample,
            repose: None,
            repose_measurement: None,
            repose_grid,
        })
    }

    /// Load a scene file (a path, or the name of a bundled scene).
    pub fn load(name: &str, solver: Option<SolverKind>) -> Result<Self, String> {
        let path = scene::resolve_scene(name);
        let scene = scene::load_scene(&path).map_err(|e| e.to_string())?;
        Self::from_scene(scene, Some(path), solver)
    }

    /// Replace the running scene by the one in `path`. On failure the current scene keeps
    /// running and the error (file, line, field) is returned.
    pub fn open(&mut self, path: &Path) -> Result<(), String> {
        let scene = scene::load_scene(path).map_err(|e| e.to_string())?;
        let mut next = Simulation::from_scene(scene, Some(path.to_path_buf()), None)?;
        next.generation = self.generation + 1;
        *self = next;
        Ok(())
    }

    /// Back to the scene's initial state. The solver, its parameters and the time step
    /// chosen in the app are kept (so a tuned run can be replayed from the start); a
    /// repose experiment still packing at its own μ keeps the run's μ, not that one.
    pub fn reset(&mut self) -> Result<(), String> {
        let mut world = self.scene.build_world().map_err(|e| e.to_string())?;
        world.set_solver(self.world.solver_kind());
        world.params = self.world.params.clone();
        if let Some(t) = self.repose.as_ref().filter(|t| t.phase() == Phase::Packing) {
            world.params.friction = t.friction();
        }
        world.dt = self.world.dt;
        world.sleep = self.world.sleep.clone();
        self.last_sample = world.start_ledger();
        self.world = world;
        self.error = None;
        self.grab = None;
        self.repose = None;
        self.repose_measurement = None;
        self.generation += 1;
        Ok(())
    }

    /// Switch the collision method; the bodies keep their state.
    pub fn set_solver(&mut self, kind: SolverKind) {
        self.world.set_solver(kind);
        self.error = None;
    }

    /// One step of the world (with the mouse spring, if any). A solver error or a
    /// non-finite state is returned as an error.
    pub fn step(&mut self) -> Result<EnergySample, String> {
        self.world.forces.clear();
        if let Some(g) = &self.grab {
            match self.world.bodies.get(g.body) {
                Some(b) if !b.is_static() => {
                    let f = g.force(b);
                    // A sleeping body ignores forces until woken.
                    if self.world.is_sleeping(g.body) {
                        self.world.wake_all();
                    }
                    self.world.forces.push(f);
                }
                _ => self.grab = None,
            }
        }
        let next = self.world.step_index + 1;
        let sample = self.world.step().map_err(|e| e.at_step(next))?;
        self.last_sample = sample;
        if let Some(tracker) = &mut self.repose {
            let before = tracker.phase();
            let after = tracker.after_step(&mut self.world);
            if after != before {
                // The divider went (packing ended) or the pile was measured.
                self.generation += 1;
                if let Some(r) = tracker.result() {
                    self.repose_measurement = Some(r.measurement.clone());
                }
            }
        }
        Ok(sample)
    }

    /// Add a dynamic body (e.g. spawned at the cursor); returns its index.
    pub fn add_body(&mut self, body: RigidBody) -> usize {
        self.generation += 1;
        self.world.add_body(body)
    }

    /// Remove or restore a wall (index into `BOX_WALL_NAMES`) of box container `c`,
    /// or divider `d` when `wall` is `None`.
    pub fn set_wall(&mut self, c: usize, wall: WallRef, present: bool) {
        if let Some(crate::container::Container::Box {
            walls, dividers, ..
        }) = self.world.containers.get_mut(c)
        {
            match wall {
                WallRef::Side(k) if k < 4 => walls[k] = present,
                WallRef::Divider(d) if d < dividers.len() => dividers[d].present = present,
                _ => return,
            }
            self.generation += 1;
        }
    }
}

/// A wall of a box container: one of its four sides or one of its dividers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WallRef {
    Side(usize),
    Divider(usize),
}

/// Run control: pause, single steps, time scale and the per-frame budget.
#[derive(Resource, Debug)]
pub struct SimControl {
    pub paused: bool,
    /// Simulated seconds per real second (1 = real time; down to 0.01 for slow motion).
    pub time_scale: f64,
    /// Steps still to take for "step" / "step N" requests (taken even when paused).
    pub pending_steps: u64,
    /// Wall-clock time physics may use per frame. Default: 25 ms.
    pub frame_budget: Duration,
    /// Rebuild the world from the scene before the next step (key `r`, reset button).
    pub reset_requested: bool,
    /// Real time does not advance the world; only `pending_steps` do. Set while a video
    /// is recorded: the recorder schedules one frame interval of steps per captured
    /// frame (see [`super::record`]).
    pub lockstep: bool,
    accumulator: f64,
    pub stats: RunStats,
}

impl Default for SimControl {
    fn default() -> Self {
        SimControl {
            paused: false,
            time_scale: 1.0,
            pending_steps: 0,
            frame_budget: Duration::from_millis(25),
            reset_requested: false,
            lockstep: false,
            accumulator: 0.0,
            stats: RunStats::default(),
        }
    }
}

impl SimControl {
    /// Forget the time backlog (after a reset or a load).
    pub fn clear_backlog(&mut self) {
        self.accumulator = 0.0;
        self.pending_steps = 0;
    }
}

/// What the last frames achieved.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Simulated seconds per wall-clock second, smoothed over about half a second.
    pub real_time_factor: f64,
    /// Steps taken in the last frame.
    pub steps_last_frame: u32,
    /// Wall-clock time spent stepping in the last frame.
    pub physics_last_frame: Duration,
    /// Whether the last frame ran out of its physics budget (the run is slower than the
    /// requested time scale).
    pub over_budget: bool,
}

/// The energy trace of the run, one sample per step (oldest dropped past `capacity`).
#[derive(Resource, Debug)]
pub struct EnergyHistory {
    pub samples: VecDeque<EnergySample>,
    pub capacity: usize,
}

impl Default for EnergyHistory {
    fn default() -> Self {
        EnergyHistory {
            samples: VecDeque::new(),
            capacity: 200_000,
        }
    }
}

impl EnergyHistory {
    pub fn push(&mut self, s: EnergySample) {
        if self.samples.len() >= self.capacity {
            self.samples.pop_front();
        }
        self.samples.push_back(s);
    }

    /// Start a new trace at `s` (after a load or reset).
    pub fn restart(&mut self, s: EnergySample) {
        self.samples.clear();
        self.samples.push_back(s);
    }
}

/// Watches the open scene file and reloads it when it changes on disk.
#[derive(Resource, Debug)]
pub struct SceneWatcher {
    modified: Option<SystemTime>,
    last_check: Option<Instant>,
    /// How often the file's modification time is read. Default: 0.5 s.
    pub period: Duration,
    /// The last load error (the previous scene keeps running while it is set).
    pub error: Option<String>,
}

impl Default for SceneWatcher {
    fn default() -> Self {
        SceneWatcher {
            modified: None,
            last_check: None,
            period: Duration::from_millis(500),
            error: None,
        }
    }
}

impl SceneWatcher {
    /// Remember the file's current modification time (after a successful load).
    pub fn track(&mut self, path: Option<&Path>) {
        self.modified = path.and_then(modified_time);
        self.error = None;
    }
}

fn modified_time(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

pub struct LabSimulationPlugin {
    /// Start paused (the headless tests drive the steps themselves).
    pub paused: bool,
}

impl Plugin for LabSimulationPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(SimControl {
            paused: self.paused,
            ..default()
        })
        .init_resource::<EnergyHistory>()
        .init_resource::<SceneWatcher>()
        .add_systems(Startup, start_history)
        .add_systems(
            Update,
            (reload_changed_scene, handle_reset, advance_simulation)
                .chain()
                .in_set(SimulationSystems),
        );
    }
}

/// The systems that change the world; input handling runs before, rendering after.
#[derive(SystemSet, Clone, Debug, PartialEq, Eq, Hash)]
pub struct SimulationSystems;

fn start_history(
    sim: Res<Simulation>,
    mut history: ResMut<EnergyHistory>,
    mut watcher: ResMut<SceneWatcher>,
) {
    history.restart(sim.last_sample);
    watcher.track(sim.scene_path.as_deref());
}

/// Reload the scene when its file changes; a broken file leaves the previous scene
/// running and its error in [`SceneWatcher::error`].
pub fn reload_changed_scene(
    mut sim: ResMut<Simulation>,
    mut watcher: ResMut<SceneWatcher>,
    mut history: ResMut<EnergyHistory>,
    mut control: ResMut<SimControl>,
) {
    let now = Instant::now();
    if watcher.last_check.is_some_and(|t| now - t < watcher.period) {
        return;
    }
    watcher.last_check = Some(now);
    let Some(path) = sim.scene_path.clone() else {
        return;
    };
    let modified = modified_time(&path);
    if modified.is_none() || modified == watcher.modified {
        return;
    }
    watcher.modified = modified;
    match sim.open(&path) {
        Ok(()) => {
            watcher.error = None;
            history.restart(sim.last_sample);
            control.clear_backlog();
        }
        Err(e) => watcher.error = Some(e),
    }
}

/// Carry out a reset request: the world back to the scene's initial state.
pub fn handle_reset(
    mut sim: ResMut<Simulation>,
    mut control: ResMut<SimControl>,
    mut history: ResMut<EnergyHistory>,
) {
    if !std::mem::take(&mut control.reset_requested) {
        return;
    }
    match sim.reset() {
        Ok(()) => {
            history.restart(sim.last_sample);
            control.clear_backlog();
        }
        Err(e) => sim.error = Some(e),
    }
}

/// Take this frame's steps (see the module doc).
pub fn advance_simulation(
    time: Res<Time<Real>>,
    mut sim: ResMut<Simulation>,
    mut control: ResMut<SimControl>,
    mut history: ResMut<EnergyHistory>,
) {
    let h = sim.world.dt;
    let real_dt = time.delta_secs_f64();
    if !control.paused && !control.lockstep {
        control.accumulator = (control.accumulator + real_dt * control.time_scale).min(MAX_BACKLOG);
    }
    let start = Instant::now();
    let mut steps = 0u32;
    let mut over_budget = false;
    loop {
        let requested = control.pending_steps > 0;
        // A relative tolerance so that accumulating dt per frame takes every step.
        let due = !control.paused && !control.lockstep && control.accumulator >= h * (1.0 - 1e-9);
        if !(requested || due) {
            break;
        }
        if steps > 0 && start.elapsed() >= control.frame_budget {
            over_budget = true;
            break;
        }
        match sim.step() {
            Ok(sample) => history.push(sample),
            Err(e) => {
                sim.error = Some(e);
                control.paused = true;
                control.clear_backlog();
                break;
            }
        }
        if requested {
            control.pending_steps -= 1;
        } else {
            control.accumulator -= h;
        }
        steps += 1;
    }
    if over_budget {
        // Slow motion rather than a spiral of ever longer frames.
        control.accumulator = control.accumulator.min(h);
    }
    let stats = &mut control.stats;
    stats.steps_last_frame = steps;
    stats.physics_last_frame = start.elapsed();
    stats.over_budget = over_budget;
    if real_dt > 0.0 {
        let factor = f64::from(steps) * h / real_dt;
        // Exponential smoothing with a time constant of 0.5 s.
        let alpha = (real_dt / 0.5).min(1.0);
        stats.real_time_factor += alpha * (factor - stats.real_time_factor);
    }
}
