//! The simulation's shared state: the [`Simulation`] resource (the published copy of
//! the physics thread's world), run control ([`SimControl`]), the energy trace
//! ([`EnergyHistory`]), the scene-file watcher ([`SceneWatcher`]) and the app's modes
//! ([`LabMode`]).
//!
//! Vocabulary shared by every plugin: the simulation plugin (`simulation.rs`) publishes
//! it; the others read it and change the world with
//! [`super::messages::SimCommand`] messages (the snapshot is read-only to them).

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
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// Run identities: every world built from a scene gets a new one.
static NEXT_RUN: AtomicU64 = AtomicU64::new(1);

/// The physics core's world and the scene it was built from.
#[derive(Resource, Clone)]
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
    /// (`repose.rs`); told of every step.
    pub repose: Option<ReposeTracker>,
    /// The last repose measurement (the experiment's, or "measure now"), drawn over the
    /// pile.
    pub repose_measurement: Option<ReposeMeasurement>,
    /// The repose measurement grid of the scene's initial state, or why the experiment
    /// cannot run on this scene (no box with a divider, unsupported shapes).
    pub repose_grid: Result<ReposeGrid, String>,
    /// The scene's constant forces (`force` of its bodies), applied at every step with
    /// the mouse spring.
    pub scene_forces: Vec<AppliedForce>,
    /// Which run this is: new for every world built from a scene (load, reset, open),
    /// kept by steps and edits. The timeline keeps the states of one run.
    pub run: u64,
}

impl std::fmt::Debug for Simulation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulation")
            .field("scene", &self.scene.name)
            .field("run", &self.run)
            .field("step", &self.world.step_index)
            .finish_non_exhaustive()
    }
}

/// A spring-damper from a material point of a body to a target point: the app's mouse
/// grab. F = m (k (x_target − x_p) − c v_p) with k = ω₀², c = 2 ζ ω₀ (ω₀ = 2π·3 Hz,
/// ζ = 0.7: stiff enough to follow the mouse, damped to stop without ringing), applied at
/// the grabbed point so the body also turns; the acceleration is clamped to
/// [`GrabSpring::MAX_ACCELERATION`]. The energy ledger books its work as external work.
#[derive(Clone, Copy, Debug, PartialEq)]
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
        let scene_forces = world.forces.clone();
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
            scene_forces,
            run: NEXT_RUN.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// Load a scene file (a path, or the name of a bundled scene).
    pub fn load(name: &str, solver: Option<SolverKind>) -> Result<Self, String> {
        let path = scene::resolve_scene(name);
        let scene = scene::load_scene(&path).map_err(|e| e.to_string())?;
        Self::from_scene(scene, Some(path), solver)
    }

    /// The world of the scene file at `path` (to run with [`SimCommand::Open`]); the
    /// error names the file, line and field.
    ///
    /// [`SimCommand::Open`]: super::messages::SimCommand::Open
    pub fn from_file(path: &Path) -> Result<Self, String> {
        let scene = scene::load_scene(path).map_err(|e| e.to_string())?;
        Simulation::from_scene(scene, Some(path.to_path_buf()), None)
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
        self.scene_forces = world.forces.clone();
        self.last_sample = world.start_ledger();
        self.world = world;
        self.error = None;
        self.grab = None;
        self.repose = None;
        self.repose_measurement = None;
        self.generation += 1;
        self.run = NEXT_RUN.fetch_add(1, Ordering::Relaxed);
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
        let (sample, changed) = step_parts(
            &mut self.world,
            &self.scene_forces,
            &mut self.grab,
            &mut self.repose,
            &mut self.repose_measurement,
        )?;
        self.last_sample = sample;
        if changed {
            // The divider went (packing ended) or the pile was measured.
            self.generation += 1;
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

/// The angle-of-repose experiment on the world (`repose.rs` draws it).
impl Simulation {
    /// Reset the scene (keeping the chosen solver and parameters) and start the
    /// experiment from its initial state.
    pub fn start_repose(&mut self, config: ReposeConfig) -> Result<(), String> {
        self.reset()?;
        let tracker = ReposeTracker::new(&mut self.world, config).map_err(|e| e.to_string())?;
        self.repose = Some(tracker);
        Ok(())
    }

    /// End packing now: the divider goes and the pile slumps.
    pub fn remove_repose_wall(&mut self) {
        if let Some(t) = &mut self.repose {
            t.remove_wall(&mut self.world);
            self.generation += 1;
        }
    }

    /// Measure the pile as it stands (the experiment's grid, or one set up from the
    /// scene's box if no experiment runs).
    pub fn measure_repose_now(&mut self) -> Result<(), String> {
        let m = match &self.repose {
            Some(t) => t.measure_now(&self.world).map_err(|e| e.to_string())?,
            None => {
                // The grid of the scene's initial state (the divider may be gone now).
                let grid = self.repose_grid.as_ref().map_err(Clone::clone)?;
                crate::repose::measure::measure(grid, &self.world.bodies, |_| false)?
            }
        };
        self.repose_measurement = Some(m);
        Ok(())
    }
}

/// The app's mode, a Bevy `States`: what the teaching panel and the views are set up
/// for. Entering and leaving a mode does its set-up (`OnEnter`/`OnExit` systems of the
/// plugins: a comparison's fresh start in [`LabMode::Compare`], the lesson closed when
/// [`LabMode::Lesson`] is left, the comparison stopped in [`LabMode::Sandbox`]);
/// presentation and recording are settings of any mode (resources).
#[derive(States, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LabMode {
    /// The scene as the user runs it.
    #[default]
    Sandbox,
    /// 2-3 methods in lockstep from the scene's initial state (the user's comparison).
    Compare,
    /// A lesson open: its scene, text, check, camera, and its comparison if it has one.
    Lesson,
}

/// A wall of a box container: one of its four sides or one of its dividers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WallRef {
    Side(usize),
    Divider(usize),
}

/// Run control: pause, single steps, time scale and how long a frame waits for physics.
#[derive(Resource, Debug)]
pub struct SimControl {
    pub paused: bool,
    /// Simulated seconds per real second (1 = real time; down to 0.01 for slow motion).
    pub time_scale: f64,
    /// Steps requested ([`super::messages::SimCommand::Step`]) and not yet taken, as
    /// the physics thread last published.
    pub(super) pending: u64,
    /// Longest time a frame waits for the physics thread to take what is due (the
    /// thread goes on stepping while the frame renders). Default: 25 ms.
    pub frame_budget: Duration,
    /// Real time does not advance the world; only requested steps
    /// ([`super::messages::SimCommand::StepNow`]) do. Set while a video is recorded: the
    /// recorder schedules one frame interval of steps per captured frame (see
    /// `record.rs`).
    pub lockstep: bool,
    /// Pause the run at the next impact ([`crate::microscope::ImpactWatch`]): the physics
    /// thread stops the clock after the step (requested steps are still taken).
    pub pause_at_impact: bool,
    /// The impact that paused the run last: (step, body with the largest speed change).
    pub impact_paused: Option<(u64, usize)>,
    /// The clock does not advance the world past this step (requested steps still do):
    /// compare mode holds the app's run at its comparison's step while the comparison
    /// catches up (`super::compare`). Set every frame; `None`: the clock runs free.
    pub hold_at: Option<u64>,
    /// The body whose motion the physics thread records after every step
    /// ([`ProbeSample::body`]), for the plot's body quantities.
    pub probe_body: Option<usize>,
    pub stats: RunStats,
}

impl Default for SimControl {
    fn default() -> Self {
        SimControl {
            paused: false,
            time_scale: 1.0,
            pending: 0,
            frame_budget: Duration::from_millis(25),
            lockstep: false,
            pause_at_impact: false,
            impact_paused: None,
            hold_at: None,
            probe_body: None,
            stats: RunStats::default(),
        }
    }
}

impl SimControl {
    /// Steps requested and not yet taken, as the physics thread last published.
    pub fn pending_steps(&self) -> u64 {
        self.pending
    }
}

/// What the last frames achieved.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Simulated seconds per wall-clock second over about the last [`RATE_WINDOW`] s
    /// of running ([`RunStats::record_frame`]).
    pub real_time_factor: f64,
    /// Wall-clock and simulated seconds counted since the run last started, and at the
    /// end of each recent frame that took steps: (wall, simulated), oldest first.
    wall: f64,
    simulated: f64,
    stepped: std::collections::VecDeque<(f64, f64)>,
    /// Steps the physics thread took between the last two frames.
    pub steps_last_frame: u32,
    /// Wall-clock time the physics thread spent stepping between the last two frames.
    pub physics_last_frame: Duration,
    /// Wall-clock time between the last two frames.
    pub frame_time: Duration,
    /// Of `frame_time`, how long the frame waited for the physics thread; the rest is
    /// the app's own work (input, panels, rendering).
    pub waited_last_frame: Duration,
    /// Whether the physics thread did not take all the clock asked of it over the last
    /// frame (the run is slower than the requested time scale).
    pub over_budget: bool,
}

/// Wall-clock seconds over which the real-time factor is measured.
pub const RATE_WINDOW: f64 = 2.0;

/// A real-time factor as shown to the user, "×" and two significant digits (at least
/// two decimals): ×1.00, ×0.29, ×0.0047. Two fixed decimals would show a method that
/// runs at a two-hundredth of real time (SMM on a large pile) as ×0.00, as if it had
/// stopped.
pub fn rate_text(factor: f64) -> String {
    if !(factor.is_finite() && factor > 0.0) {
        return "×0.00".into();
    }
    let decimals = (1 - factor.log10().floor() as i32).clamp(2, 6) as usize;
    format!("×{factor:.decimals$}")
}

impl RunStats {
    /// Counts a frame of `real_dt` wall-clock seconds in which the running world
    /// advanced `simulated` seconds. The factor is the simulated time between the
    /// oldest and the newest frame that took steps within the last [`RATE_WINDOW`] s
    /// (at least the last two such frames) over the wall-clock time between them. So a
    /// method whose steps take longer than a frame, and advances the world in some
    /// frames only, reads its rate (one step of h every T seconds: h/T), where a
    /// per-frame ratio would swing between 0 and a spike.
    pub fn record_frame(&mut self, simulated: f64, real_dt: f64) {
        if !(real_dt.is_finite() && real_dt > 0.0 && simulated.is_finite()) {
            return;
        }
        self.wall += real_dt;
        if simulated <= 0.0 {
            return;
        }
        self.simulated += simulated;
        self.stepped.push_back((self.wall, self.simulated));
        while self.stepped.len() > 2
            && self
                .stepped
                .front()
                .is_some_and(|&(w, _)| w < self.wall - RATE_WINDOW)
        {
            self.stepped.pop_front();
        }
        if let (Some(&(w0, s0)), Some(&(w1, s1))) = (self.stepped.front(), self.stepped.back())
            && w1 > w0
        {
            self.real_time_factor = (s1 - s0) / (w1 - w0);
        }
    }

    /// The run stopped (paused, held or in lockstep): its rate is measured afresh when
    /// it runs again, not across the stop.
    pub fn run_stopped(&mut self) {
        self.stepped.clear();
        self.real_time_factor = 0.0;
    }

    /// The app's own time per frame (input, panels, rendering): the frame time less the
    /// time it waited for physics.
    pub fn render_time(&self) -> Duration {
        self.frame_time.saturating_sub(self.waited_last_frame)
    }
}

/// One step of a simulation's parts ([`Simulation::step`], and the timeline's
/// re-simulation, which must step exactly as it does): the scene's forces and the mouse
/// spring applied, the world stepped, the repose experiment told. Returns the step's
/// sample and whether the repose experiment changed phase (the divider went or the pile
/// was measured, which changes the bodies or containers).
pub(crate) fn step_parts(
    world: &mut World,
    scene_forces: &[AppliedForce],
    grab: &mut Option<GrabSpring>,
    repose: &mut Option<ReposeTracker>,
    repose_measurement: &mut Option<ReposeMeasurement>,
) -> Result<(EnergySample, bool), String> {
    world.forces.clear();
    world.forces.extend_from_slice(scene_forces);
    if let Some(g) = grab.as_ref() {
        match world.bodies.get(g.body) {
            Some(b) if !b.is_static() => {
                let f = g.force(b);
                // A sleeping body ignores forces until woken.
                if world.is_sleeping(g.body) {
                    world.wake_all();
                }
                world.forces.push(f);
            }
            _ => *grab = None,
        }
    }
    let next = world.step_index + 1;
    let sample = world.step().map_err(|e| e.at_step(next))?;
    let mut changed = false;
    if let Some(tracker) = repose {
        let before = tracker.phase();
        let after = tracker.after_step(world);
        if after != before {
            changed = true;
            if let Some(r) = tracker.result() {
                *repose_measurement = Some(r.measurement.clone());
            }
        }
    }
    Ok((sample, changed))
}

/// The energy trace of the run, one sample per step (oldest dropped past `capacity`),
/// and the probe trace beside it (one [`ProbeSample`] per step the physics thread took
/// since the trace restarted).
#[derive(Resource, Debug)]
pub struct EnergyHistory {
    pub samples: VecDeque<EnergySample>,
    pub probes: VecDeque<ProbeSample>,
    pub capacity: usize,
}

impl Default for EnergyHistory {
    fn default() -> Self {
        EnergyHistory {
            samples: VecDeque::new(),
            probes: VecDeque::new(),
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

    pub fn push_probe(&mut self, p: ProbeSample) {
        if self.probes.len() >= self.capacity {
            self.probes.pop_front();
        }
        self.probes.push_back(p);
    }

    /// Drop the samples after `step` (a branch from a past state).
    pub fn truncate_after(&mut self, step: u64) {
        while self.samples.back().is_some_and(|s| s.step > step) {
            self.samples.pop_back();
        }
        while self.probes.back().is_some_and(|s| s.step > step) {
            self.probes.pop_back();
        }
    }

    /// Start a new trace at `s` (after a load or reset).
    pub fn restart(&mut self, s: EnergySample) {
        self.samples.clear();
        self.samples.push_back(s);
        self.probes.clear();
    }
}

/// What the physics thread records after each step besides the energy sample: the
/// solver's effort and the motion of the probed body ([`SimControl::probe_body`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProbeSample {
    pub step: u64,
    pub time: f64,
    /// The method's iterations (rounds, sweeps) this step ([`SolverReport::iterations`]).
    ///
    /// [`SolverReport::iterations`]: crate::dynamics::solver::SolverReport::iterations
    pub iterations: u32,
    /// Sweeps of the shared contact pass this step (0 when it did not run).
    pub contact_sweeps: u32,
    /// The probed body after the step, if one is probed and exists.
    pub body: Option<BodyProbe>,
    /// The pile's slope (°, the repose experiment's measurement as it stands), every
    /// [`ProbeSample::SLOPE_EVERY`] steps while an experiment runs.
    pub slope_deg: Option<f64>,
}

/// One body's motion after a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyProbe {
    /// The body's index in the world.
    pub index: usize,
    /// Height of its centre of mass along the "up" direction, −g/|g| (z when the scene
    /// has no gravity), in m.
    pub height: f64,
    /// Speed of its centre of mass (m/s).
    pub speed: f64,
    /// Magnitude of its angular velocity (rad/s).
    pub spin: f64,
}

impl ProbeSample {
    /// Steps between two measurements of the pile's slope (0.1 s at the repose scenes'
    /// dt of 1/600 s; a measurement visits every body once).
    pub const SLOPE_EVERY: u64 = 60;

    /// The record of `sim`'s last step, with body `body` probed (if it exists).
    pub fn of(sim: &Simulation, body: Option<usize>) -> Self {
        let world = &sim.world;
        let slope_deg = sim
            .repose
            .as_ref()
            .filter(|_| world.step_index.is_multiple_of(Self::SLOPE_EVERY))
            .and_then(|t| t.measure_now(world).ok())
            .map(|m| m.angle_deg)
            .filter(|a| a.is_finite());
        let up = if world.gravity.norm() > 0.0 {
            -world.gravity / world.gravity.norm()
        } else {
            Vec3::z()
        };
        ProbeSample {
            step: world.step_index,
            time: world.time,
            iterations: world.last_report.iterations,
            contact_sweeps: world.last_report.contact_sweeps,
            body: body
                .and_then(|i| world.bodies.get(i).map(|b| (i, b)))
                .map(|(i, b)| BodyProbe {
                    index: i,
                    height: b.position.dot(&up),
                    speed: b.velocity.norm(),
                    spin: b.angular_velocity.norm(),
                }),
            slope_deg,
        }
    }
}

/// Watches the open scene file and reloads it when it changes on disk.
#[derive(Resource, Debug)]
pub struct SceneWatcher {
    pub(super) modified: Option<SystemTime>,
    pub(super) last_check: Option<Instant>,
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

pub(super) fn modified_time(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// Steps to take before the first frame is shown (`--steps N`), handed to
/// the physics thread as [`super::messages::SimCommand::StepNow`] at the first frame (after a lesson or comparison set up in
/// that frame).
#[derive(Resource, Debug, Clone, Copy)]
pub struct StartupSteps(pub u64);

#[cfg(test)]
mod rate_tests {
    use super::*;

    #[test]
    fn rates_show_two_significant_digits() {
        assert_eq!(rate_text(1.0), "×1.00");
        assert_eq!(rate_text(12.345), "×12.35");
        assert_eq!(rate_text(0.29), "×0.29");
        assert_eq!(rate_text(0.0047), "×0.0047");
        assert_eq!(rate_text(0.05), "×0.050");
        assert_eq!(rate_text(0.0), "×0.00");
        assert_eq!(rate_text(f64::NAN), "×0.00");
    }

    /// A method whose step (h = 1/600 s) takes 1.5 s of wall-clock time, drawn at four
    /// frames a second, reads h/1.5 at every frame once two steps are done; one that
    /// takes ten steps a frame at 60 frames a second reads 10 h × 60.
    #[test]
    fn the_factor_is_the_rate_of_slow_and_fast_steps() {
        let h = 1.0 / 600.0;
        let mut stats = RunStats::default();
        let mut readings = Vec::new();
        for frame in 1..=80 {
            let t = 0.25 * frame as f64;
            let steps = (t / 1.5).floor() - ((t - 0.25) / 1.5).floor();
            stats.record_frame(steps * h, 0.25);
            if t > 3.1 {
                readings.push(stats.real_time_factor);
            }
        }
        for r in readings {
            assert!(
                (r / (h / 1.5) - 1.0).abs() < 1e-9,
                "{r} against {}",
                h / 1.5
            );
        }
        let mut stats = RunStats::default();
        for _ in 0..200 {
            stats.record_frame(10.0 * h, 1.0 / 60.0);
        }
        assert!((stats.real_time_factor - 10.0 * h * 60.0).abs() < 1e-9);
        // A pause is not counted: the rate after it is the rate of the run.
        stats.run_stopped();
        for _ in 0..600 {
            stats.record_frame(0.0, 1.0 / 60.0);
        }
        for _ in 0..3 {
            stats.record_frame(5.0 * h, 1.0 / 60.0);
        }
        assert!((stats.real_time_factor - 5.0 * h * 60.0).abs() < 1e-9);
    }
}
