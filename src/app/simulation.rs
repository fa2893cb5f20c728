//! Simulation plugin: the physics core's [`World`] on its own thread, its state shown to
//! the app once per rendered frame.
//!
//! **The physics clock.** The world advances in fixed steps of its own `dt` (never the
//! frame time), on a physics thread that owns the authoritative [`Simulation`]. Every
//! frame, [`advance_simulation`]
//! 1. hands the app's edits to the thread, between two steps (see "edits" below);
//! 2. adds the real time elapsed since the last frame, times the time scale, to the
//!    clock's backlog (what the thread did not take of the last frame's share is dropped:
//!    a solver slower than the requested time scale runs in slow motion at the speed the
//!    machine allows, and never falls ever further behind);
//! 3. waits up to [`SimControl::frame_budget`] for the thread to take what is due
//!    (requested single steps and "step N", and the clock's steps), and without a limit
//!    for [`SimControl::steps_now`] (`--steps N`: taken before the first frame is shown);
//! 4. publishes a copy of the thread's state as the [`Simulation`] resource that the
//!    renderer, the panels and the other plugins read, and the steps' energy samples to
//!    [`EnergyHistory`].
//!
//! The thread keeps stepping while the app renders and draws its panels, so physics gets
//! the whole wall-clock time, not a per-frame budget: at 1 frame per second the world
//! advances as fast as it does headless. Why a thread and not a budget that grows with
//! the frame time: rendering (and a slow software renderer) does not yield the CPU to a
//! budget, and the frame rate a large scene renders at says nothing about how fast it
//! can be simulated.
//!
//! **Edits.** The app's systems change the published copy as before (solver, parameters,
//! time step, sleeping, the mouse spring, reset, opening a scene, spawning, walls, the
//! collision microscope's own steps). At the next frame the copy is compared with what
//! was published: changed parameters, method, time step, sleep settings, trace request,
//! repose measurement and spring are applied to the thread's world between two steps;
//! a changed body set or world ([`Simulation::generation`], the step count) replaces the
//! thread's world by the copy, dropping the steps the thread took in the meantime (they
//! were never shown). Every step runs [`Simulation::step`], the same function and order
//! as `impulse-lab run`, so a run in the app equals the CLI's bit for bit.
//!
//! **Timeline.** After each step the thread keeps a copy of the whole state (bodies,
//! solver and contact warm-start state, ledger, step count) in [`super::timeline::History`],
//! a ring buffer with a memory cap. Seeking shows a past state (paused); a step taken
//! from a past state drops the states after it (a branch), and since the copy holds all
//! the state a step reads, the continued run is bit-identical to a run that never went
//! back.
//!
//! The achieved real-time factor and the time per frame spent stepping are shown in the
//! stats line. A solver error or a non-finite state pauses the run and is shown, never
//! hidden. Compare mode ([`super::compare`]) keeps its own clock: its runs are stepped
//! on the app's thread to the step count of this world.

use super::timeline::{History, TimelineView};
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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
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
    /// (`super::repose`); told of every step.
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
        self.world.forces.clone_from(&self.scene_forces);
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

/// Run control: pause, single steps, time scale and how long a frame waits for physics.
#[derive(Resource, Debug)]
pub struct SimControl {
    pub paused: bool,
    /// Simulated seconds per real second (1 = real time; down to 0.01 for slow motion).
    pub time_scale: f64,
    /// Steps still to take for "step" / "step N" requests (taken even when paused).
    pub pending_steps: u64,
    /// Steps the next frame waits for however long they take, taken even when paused
    /// (`--steps N`: the run is at step N when the first frame is shown).
    pub steps_now: u64,
    /// Longest time a frame waits for the physics thread to take what is due (the
    /// thread goes on stepping while the frame renders). Default: 25 ms.
    pub frame_budget: Duration,
    /// Rebuild the world from the scene before the next step (key `r`, reset button).
    pub reset_requested: bool,
    /// Real time does not advance the world; only `pending_steps` do. Set while a video
    /// is recorded: the recorder schedules one frame interval of steps per captured
    /// frame (see [`super::record`]).
    pub lockstep: bool,
    /// `pending_steps` as last published by the physics thread (what was added since
    /// are new requests).
    published_pending: u64,
    /// Drop the clock's backlog and the pending steps at the next frame.
    clear_requested: bool,
    pub stats: RunStats,
}

impl Default for SimControl {
    fn default() -> Self {
        SimControl {
            paused: false,
            time_scale: 1.0,
            pending_steps: 0,
            steps_now: 0,
            frame_budget: Duration::from_millis(25),
            reset_requested: false,
            lockstep: false,
            published_pending: 0,
            clear_requested: false,
            stats: RunStats::default(),
        }
    }
}

impl SimControl {
    /// Forget the time backlog and the pending steps (after a reset or a load).
    pub fn clear_backlog(&mut self) {
        self.pending_steps = 0;
        self.clear_requested = true;
    }
}

/// What the last frames achieved.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Simulated seconds per wall-clock second, smoothed over about half a second.
    pub real_time_factor: f64,
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

impl RunStats {
    /// The app's own time per frame (input, panels, rendering): the frame time less the
    /// time it waited for physics.
    pub fn render_time(&self) -> Duration {
        self.frame_time.saturating_sub(self.waited_last_frame)
    }
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

    /// Drop the samples after `step` (a branch from a past state).
    pub fn truncate_after(&mut self, step: u64) {
        while self.samples.back().is_some_and(|s| s.step > step) {
            self.samples.pop_back();
        }
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
        .init_resource::<TimelineView>()
        .add_systems(Startup, start_history)
        .add_systems(
            Update,
            (
                apply_startup_steps,
                super::timeline::save_requested_state,
                reload_changed_scene,
                handle_reset,
                advance_simulation,
            )
                .chain()
                .in_set(SimulationSystems),
        );
    }
}

/// Steps to take before the first frame is shown (`--steps N`), handed to
/// [`SimControl::steps_now`] at the first frame (after a lesson or comparison set up in
/// that frame).
#[derive(Resource, Debug, Clone, Copy)]
pub struct StartupSteps(pub u64);

fn apply_startup_steps(startup: Option<ResMut<StartupSteps>>, mut control: ResMut<SimControl>) {
    if let Some(mut s) = startup {
        control.steps_now += std::mem::take(&mut s.0);
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

/// What the app and the physics thread share.
struct Shared {
    core: Mutex<Core>,
    /// Signalled by the app when it has given work or wants the thread to stop, and by
    /// the thread after every step.
    changed: Condvar,
    /// The app wants the lock: the thread waits after its current step.
    sync_wanted: AtomicBool,
    /// Progress, written by the thread after every step (read without the lock): whether
    /// work is left, and how many steps the frame waits for regardless of its budget.
    work_due: AtomicBool,
    blocking_left: AtomicU64,
    /// The app thread waiting for progress (woken after every step).
    waiter: Mutex<Option<std::thread::Thread>>,
}

impl Shared {
    /// After a step or a change of work: publish the progress and wake a waiting frame.
    fn progress(&self, core: &Core) {
        self.work_due.store(core.has_work(), Ordering::Release);
        self.blocking_left.store(core.blocking, Ordering::Release);
        if let Some(t) = self
            .waiter
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            t.unpark();
        }
    }
}

/// The physics thread's side: the authoritative simulation and its clock.
struct Core {
    sim: Simulation,
    /// Whether real time advances the world (not paused, not in lockstep).
    clock_running: bool,
    /// Simulated time the clock still asks for (s).
    backlog: f64,
    /// Requested steps still to take (taken before the clock's, even when paused).
    pending: u64,
    /// Of `pending`, how many the current frame waits for whatever they cost.
    blocking: u64,
    /// Energy samples of the steps taken since the last publication.
    samples: Vec<EnergySample>,
    /// A step was taken from a past state since the last publication: the energy trace
    /// after this step is no longer this run's.
    branched_at: Option<u64>,
    /// Stepping time and steps since the last publication.
    busy: Duration,
    steps: u32,
    /// Whether the state changed since the last publication.
    dirty: bool,
    history: History,
    quit: bool,
}

impl Core {
    fn has_work(&self) -> bool {
        self.sim.error.is_none() && (self.pending > 0 || (self.clock_running && self.clock_due()))
    }

    /// Whether the clock's backlog holds a step (a relative tolerance so that adding dt
    /// per frame takes every step).
    fn clock_due(&self) -> bool {
        self.backlog >= self.sim.world.dt * (1.0 - 1e-9)
    }

    fn take_step(&mut self) {
        let from = self.sim.world.step_index;
        if self.history.truncate_after(from) {
            // A step from a past state: the future is dropped (a branch).
            self.branched_at = Some(self.branched_at.map_or(from, |b| b.min(from)));
        }
        let h = self.sim.world.dt;
        self.dirty = true;
        match self.sim.step() {
            Ok(sample) => {
                self.samples.push(sample);
                self.history.push(&self.sim);
            }
            Err(e) => {
                self.sim.error = Some(e);
                self.pending = 0;
                self.blocking = 0;
                self.backlog = 0.0;
                return;
            }
        }
        if self.pending > 0 {
            self.pending -= 1;
            self.blocking = self.blocking.saturating_sub(1);
        } else {
            self.backlog -= h;
        }
        self.steps += 1;
    }
}

fn physics_thread(shared: Arc<Shared>) {
    let mut core = shared.core.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        while shared.sync_wanted.load(Ordering::Acquire) && !core.quit {
            core = wait(&shared, core);
        }
        if core.quit {
            return;
        }
        if !core.has_work() {
            core = wait(&shared, core);
            continue;
        }
        let t = Instant::now();
        let stepped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| core.take_step()));
        if stepped.is_err() {
            // A bug in a step: shown as the run's error (the run pauses), not a dead
            // thread the frame would wait for.
            core.sim.error = Some(format!(
                "step {}: the physics step panicked (a bug; see the terminal)",
                core.sim.world.step_index + 1
            ));
            core.pending = 0;
            core.blocking = 0;
            core.backlog = 0.0;
            core.dirty = true;
        }
        core.busy += t.elapsed();
        shared.progress(&core);
        drop(core);
        shared.changed.notify_all();
        core = shared.core.lock().unwrap_or_else(|e| e.into_inner());
    }
}

fn wait<'a>(shared: &Shared, core: MutexGuard<'a, Core>) -> MutexGuard<'a, Core> {
    shared.changed.wait(core).unwrap_or_else(|e| e.into_inner())
}

/// What the app published last: edits are what differs from it.
struct Published {
    run: u64,
    generation: u64,
    step_index: u64,
    time: f64,
    params: crate::dynamics::solver::SolverParams,
    solver: SolverKind,
    dt: f64,
    sleep: crate::world::SleepParams,
    grab: Option<GrabSpring>,
    error: Option<String>,
    scene_path: Option<PathBuf>,
    record_trace: bool,
    repose_measurement: Option<ReposeMeasurement>,
}

impl Published {
    fn of(sim: &Simulation) -> Self {
        Published {
            run: sim.run,
            generation: sim.generation,
            step_index: sim.world.step_index,
            time: sim.world.time,
            params: sim.world.params.clone(),
            solver: sim.world.solver_kind(),
            dt: sim.world.dt,
            sleep: sim.world.sleep.clone(),
            grab: sim.grab.clone(),
            error: sim.error.clone(),
            scene_path: sim.scene_path.clone(),
            record_trace: sim.world.record_trace,
            repose_measurement: sim.repose_measurement.clone(),
        }
    }

    /// Whether `sim` is a different world than the one published (another run, bodies
    /// or containers changed, or stepped by the app itself).
    fn replaced_by(&self, sim: &Simulation) -> bool {
        self.run != sim.run
            || self.generation != sim.generation
            || self.step_index != sim.world.step_index
            || self.time.to_bits() != sim.world.time.to_bits()
    }
}

/// The physics thread, started at the first frame and stopped when the app ends.
pub struct PhysicsThread {
    shared: Arc<Shared>,
    handle: Option<std::thread::JoinHandle<()>>,
    published: Published,
}

impl PhysicsThread {
    fn start(sim: &Simulation) -> Self {
        let mut history = History::default();
        history.push(sim);
        let shared = Arc::new(Shared {
            core: Mutex::new(Core {
                sim: sim.clone(),
                clock_running: false,
                backlog: 0.0,
                pending: 0,
                blocking: 0,
                samples: Vec::new(),
                branched_at: None,
                busy: Duration::ZERO,
                steps: 0,
                dirty: false,
                history,
                quit: false,
            }),
            changed: Condvar::new(),
            sync_wanted: AtomicBool::new(false),
            work_due: AtomicBool::new(false),
            blocking_left: AtomicU64::new(0),
            waiter: Mutex::new(None),
        });
        let thread_shared = shared.clone();
        let handle = std::thread::Builder::new()
            .name("physics".into())
            .spawn(move || physics_thread(thread_shared))
            .expect("cannot start the physics thread");
        PhysicsThread {
            shared,
            handle: Some(handle),
            published: Published::of(sim),
        }
    }

    /// The core, after the thread's current step.
    fn lock(&self) -> MutexGuard<'_, Core> {
        self.shared.sync_wanted.store(true, Ordering::Release);
        let core = self.shared.core.lock().unwrap_or_else(|e| e.into_inner());
        self.shared.sync_wanted.store(false, Ordering::Release);
        core
    }
}

impl Drop for PhysicsThread {
    fn drop(&mut self) {
        self.lock().quit = true;
        self.shared.changed.notify_all();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Hand the app's edits to the physics thread (module doc).
fn apply_edits(core: &mut Core, sim: &Simulation, published: &Published) {
    if published.replaced_by(sim) {
        core.sim = sim.clone();
        core.samples.clear();
        core.branched_at = None;
        core.dirty = true;
        if published.run != sim.run {
            core.history.clear();
        }
        core.history.push(&core.sim);
        return;
    }
    let w = &mut core.sim.world;
    if sim.world.solver_kind() != published.solver {
        w.set_solver(sim.world.solver_kind());
        core.dirty = true;
    }
    if sim.world.params != published.params {
        w.params = sim.world.params.clone();
        core.dirty = true;
    }
    if sim.world.dt.to_bits() != published.dt.to_bits() {
        w.dt = sim.world.dt;
        core.dirty = true;
    }
    if sim.world.sleep != published.sleep {
        w.sleep = sim.world.sleep.clone();
        core.dirty = true;
    }
    if sim.world.record_trace != published.record_trace {
        w.record_trace = sim.world.record_trace;
        core.dirty = true;
    }
    if sim.grab != published.grab {
        core.sim.grab = sim.grab.clone();
        core.dirty = true;
    }
    if sim.error != published.error {
        core.sim.error = sim.error.clone();
        core.dirty = true;
    }
    if sim.scene_path != published.scene_path {
        // Saved as a scene: reset returns to it.
        core.sim.scene = sim.scene.clone();
        core.sim.scene_path = sim.scene_path.clone();
        core.dirty = true;
    }
    if sim.repose_measurement != published.repose_measurement {
        core.sim.repose_measurement = sim.repose_measurement.clone();
        core.dirty = true;
    }
}

/// One frame of the physics clock (module doc): edits and requests to the physics
/// thread, wait for what is due, publish its state.
#[allow(clippy::too_many_arguments)]
pub fn advance_simulation(
    time: Res<Time<Real>>,
    mut sim: ResMut<Simulation>,
    mut control: ResMut<SimControl>,
    mut history: ResMut<EnergyHistory>,
    mut timeline: ResMut<TimelineView>,
    mut thread: Local<Option<PhysicsThread>>,
) {
    let thread = thread.get_or_insert_with(|| PhysicsThread::start(&sim));
    let real_dt = time.delta_secs_f64();
    let (budget, blocking);
    {
        let mut core = thread.lock();
        apply_edits(&mut core, &sim, &thread.published);
        if let Some(cap) = timeline.cap_request.take() {
            core.history.set_cap(cap);
        }
        if let Some(step) = timeline.seek.take() {
            control.paused = true;
            control.clear_backlog();
            let core = &mut *core;
            if core.history.restore(step, &mut core.sim) {
                core.dirty = true;
            }
        }
        if std::mem::take(&mut control.clear_requested) {
            core.backlog = 0.0;
            core.pending = 0;
            core.blocking = 0;
        }
        let new_requests = control
            .pending_steps
            .saturating_sub(control.published_pending);
        let now = std::mem::take(&mut control.steps_now);
        core.pending += new_requests + now;
        core.blocking += now;
        core.clock_running = !control.paused && !control.lockstep;
        let h = core.sim.world.dt;
        control.stats.over_budget = core.clock_running && core.backlog >= h;
        if core.clock_running {
            // What the thread did not take of the last frame's share is dropped (slow
            // motion rather than an ever longer backlog).
            core.backlog = core.backlog.min(h) + real_dt * control.time_scale;
        } else {
            core.backlog = 0.0;
        }
        budget = control.frame_budget;
        blocking = core.blocking > 0;
        thread.shared.progress(&core);
    }
    self_notify(thread);

    // Wait for what is due: at most the frame budget, unless the frame must show
    // `steps_now` taken.
    let start = Instant::now();
    let shared = &thread.shared;
    *shared.waiter.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::thread::current());
    loop {
        let due = if blocking {
            shared.blocking_left.load(Ordering::Acquire) > 0
        } else {
            shared.work_due.load(Ordering::Acquire)
        };
        if !due {
            break;
        }
        let left = budget.saturating_sub(start.elapsed());
        if !blocking && left.is_zero() {
            break;
        }
        // Woken after every step; the timeout only bounds a missed wake-up.
        std::thread::park_timeout(left.clamp(Duration::from_micros(50), Duration::from_millis(5)));
    }
    *shared.waiter.lock().unwrap_or_else(|e| e.into_inner()) = None;
    let waited = start.elapsed();
    let mut core = thread.lock();

    // Publish.
    if let Some(step) = core.branched_at.take() {
        history.truncate_after(step);
    }
    for s in core.samples.drain(..) {
        history.push(s);
    }
    if core.sim.error.is_some() && core.dirty {
        control.paused = true;
        core.clock_running = false;
        core.backlog = 0.0;
    }
    if std::mem::take(&mut core.dirty) {
        *sim = core.sim.clone();
    }
    let published = Published::of(&sim);
    control.pending_steps = core.pending;
    control.published_pending = core.pending;
    timeline.update(&core.history, sim.world.step_index);
    let steps = std::mem::take(&mut core.steps);
    let busy = std::mem::take(&mut core.busy);
    let h = core.sim.world.dt;
    drop(core);
    thread.published = published;
    self_notify(thread);

    let stats = &mut control.stats;
    stats.steps_last_frame = steps;
    stats.physics_last_frame = busy;
    stats.frame_time = Duration::from_secs_f64(real_dt);
    stats.waited_last_frame = waited;
    if real_dt > 0.0 {
        let factor = f64::from(steps) * h / real_dt;
        // Exponential smoothing with a time constant of 0.5 s.
        let alpha = (real_dt / 0.5).min(1.0);
        stats.real_time_factor += alpha * (factor - stats.real_time_factor);
    }
}

fn self_notify(thread: &PhysicsThread) {
    thread.shared.changed.notify_all();
}
