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
//! **Timeline.** Every step is recorded in [`super::timeline::History`] (keyframes every
//! N steps plus re-simulation, `crate::history`): the edits above are stored as
//! keyframes at their step; seeking shows a past state (paused); a step taken from a
//! past state keeps the old future as a branch, and since a keyframe holds all the
//! state a step reads, either run continues bit for bit as one that never went back.
//!
//! **Pause at the next impact** ([`SimControl::pause_at_impact`]): the thread watches
//! each step with [`crate::microscope::ImpactWatch`] and stops the clock after the first
//! step of an impact; the next frame publishes that step and pauses the run
//! ([`SimControl::impact_paused`]).
//!
//! The achieved real-time factor and the time per frame spent stepping are shown in the
//! stats line. A solver error or a non-finite state pauses the run and is shown, never
//! hidden. Compare mode (`compare.rs`) keeps its own clock: its runs are stepped
//! on the app's thread to the step count of this world.

use super::sets::SimulationStage;
pub use super::sets::SimulationSystems;
use super::sim_state::modified_time;
pub use super::sim_state::{
    BodyProbe, EnergyHistory, GrabSpring, ProbeSample, RunStats, SceneWatcher, SimControl,
    Simulation, StartupSteps, WallRef,
};
use super::timeline::{History, TimelineView};
use crate::dynamics::solver::SolverKind;
use crate::energy::EnergySample;
use crate::repose::ReposeMeasurement;
use bevy::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

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
                .in_set(SimulationStage::Sync),
        );
        SimulationStage::configure(app);
    }
}

fn apply_startup_steps(startup: Option<ResMut<StartupSteps>>, mut control: ResMut<SimControl>) {
    if let Some(mut s) = startup {
        control.steps_now += std::mem::take(&mut s.0);
    }
}

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
    /// Probe samples of the same steps ([`super::sim_state::ProbeSample`]).
    probes: Vec<ProbeSample>,
    /// The body the probe samples record ([`SimControl::probe_body`]).
    probe_body: Option<usize>,
    /// A step was taken from a past state since the last publication: the energy trace
    /// after this step is no longer this run's.
    branched_at: Option<u64>,
    /// Stepping time and steps since the last publication.
    busy: Duration,
    steps: u32,
    /// Whether the state changed since the last publication.
    dirty: bool,
    history: History,
    /// The last failed history operation (shown by the timeline).
    history_error: Option<String>,
    /// The run returned to another branch: the plot's energy trace is replaced.
    trace_replaced: bool,
    /// Watching for impacts ([`SimControl::pause_at_impact`]).
    impacts: Option<crate::microscope::ImpactWatch>,
    /// An impact stopped the clock since the last publication: (step, body).
    impact_hit: Option<(u64, usize)>,
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
        if self.history.before_step(&self.sim) {
            // A step from a past state: the future after it is kept as a branch, the
            // energy trace after it is no longer this run's.
            self.branched_at = Some(self.branched_at.map_or(from, |b| b.min(from)));
        }
        let h = self.sim.world.dt;
        self.dirty = true;
        if let Some(watch) = &mut self.impacts {
            watch.before_step(&self.sim.world);
        }
        match self.sim.step() {
            Ok(sample) => {
                self.samples.push(sample);
                self.probes
                    .push(ProbeSample::of(&self.sim, self.probe_body));
                if let Err(e) = self.history.after_step(&self.sim, sample) {
                    self.history_error = Some(e);
                }
                self.stop_at_impact();
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

impl Core {
    /// After a step: if it was the first of an impact and the run pauses at impacts,
    /// stop the clock (the app pauses when it publishes `impact_hit`).
    fn stop_at_impact(&mut self) {
        let Some(watch) = &mut self.impacts else {
            return;
        };
        if let Some(body) = watch.after_step(&self.sim.world) {
            self.impact_hit = Some((self.sim.world.step_index, body));
            self.clock_running = false;
            self.backlog = 0.0;
        }
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
        let history = History::new(sim, super::timeline::DEFAULT_CAP);
        let shared = Arc::new(Shared {
            core: Mutex::new(Core {
                sim: sim.clone(),
                clock_running: false,
                backlog: 0.0,
                pending: 0,
                blocking: 0,
                samples: Vec::new(),
                probes: Vec::new(),
                probe_body: None,
                branched_at: None,
                busy: Duration::ZERO,
                steps: 0,
                dirty: false,
                history,
                history_error: None,
                trace_replaced: false,
                impacts: None,
                impact_hit: None,
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
            .spawn(move || {
                // The steps run on a worker of a rayon pool, so that detection's parallel
                // loops fork from inside it instead of handing their work over and
                // waiting to be woken, loop after loop (as `impulse-lab run` does).
                match rayon::ThreadPoolBuilder::new()
                    .thread_name(|i| format!("physics-{i}"))
                    .build()
                {
                    Ok(pool) => pool.install(|| physics_thread(thread_shared)),
                    Err(_) => physics_thread(thread_shared),
                }
            })
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
        core.probes.clear();
        core.branched_at = None;
        core.dirty = true;
        let core = &mut *core;
        if published.run != sim.run {
            core.history.reset(&core.sim);
        } else if let Err(e) = core.history.edit(&core.sim) {
            core.history_error = Some(e);
        }
        return;
    }
    // Edits that change what the next step reads are stored as a keyframe at this
    // step, so a re-simulation never crosses them.
    let mut edited = false;
    let w = &mut core.sim.world;
    if sim.world.solver_kind() != published.solver {
        w.set_solver(sim.world.solver_kind());
        edited = true;
        core.dirty = true;
    }
    if sim.world.params != published.params {
        w.params = sim.world.params.clone();
        edited = true;
        core.dirty = true;
    }
    if sim.world.dt.to_bits() != published.dt.to_bits() {
        w.dt = sim.world.dt;
        edited = true;
        core.dirty = true;
    }
    if sim.world.sleep != published.sleep {
        w.sleep = sim.world.sleep.clone();
        edited = true;
        core.dirty = true;
    }
    if sim.world.record_trace != published.record_trace {
        w.record_trace = sim.world.record_trace;
        edited = true;
        core.dirty = true;
    }
    if sim.grab != published.grab {
        core.sim.grab = sim.grab.clone();
        edited = true;
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
        edited = true;
        core.dirty = true;
    }
    if edited {
        let core = &mut *core;
        if let Err(e) = core.history.edit(&core.sim) {
            core.history_error = Some(e);
        }
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
    let thread = thread.get_or_insert_with(|| {
        super::crash::publish(&sim);
        PhysicsThread::start(&sim)
    });
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
            let t = Instant::now();
            match core.history.seek(step) {
                Ok(frame) => {
                    super::timeline::restore(frame, &mut core.sim);
                    core.dirty = true;
                }
                Err(e) => core.history_error = Some(format!("cannot show step {step}: {e}")),
            }
            timeline.last_seek = Some(t.elapsed());
        }
        if let Some(id) = timeline.branch_request.take() {
            control.paused = true;
            control.clear_backlog();
            let core = &mut *core;
            match core.history.switch(id) {
                Ok(frame) => {
                    super::timeline::restore(frame, &mut core.sim);
                    core.dirty = true;
                    core.trace_replaced = true;
                }
                Err(e) => core.history_error = Some(format!("cannot return to the branch: {e}")),
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
        core.probe_body = control.probe_body;
        take_impact_hit(&mut core, &mut control);
        core.clock_running = !control.paused && !control.lockstep;
        arm_impact_watch(&mut core, &control);
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
    if std::mem::take(&mut core.trace_replaced) {
        // Another branch: its trace (its own and its ancestors' up to the fork).
        // It already holds the steps taken since the switch.
        let trace = core.history.trace();
        let skip = trace.len().saturating_sub(history.capacity);
        history.samples = trace.into_iter().skip(skip).collect();
        // The probes are not kept by the timeline: they restart on the other branch.
        history.probes.clear();
        core.samples.clear();
        core.probes.clear();
        core.branched_at = None;
    }
    if let Some(step) = core.branched_at.take() {
        history.truncate_after(step);
    }
    if let Some(e) = core.history_error.take() {
        timeline.message = Some((e, false));
    }
    for s in core.samples.drain(..) {
        history.push(s);
    }
    for p in core.probes.drain(..) {
        history.push_probe(p);
    }
    if core.sim.error.is_some() && core.dirty {
        control.paused = true;
        core.clock_running = false;
        core.backlog = 0.0;
    }
    take_impact_hit(&mut core, &mut control);
    if std::mem::take(&mut core.dirty) {
        *sim = core.sim.clone();
        // What a panic saves (`crash`): the state just published.
        super::crash::publish(&sim);
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

/// An impact stopped the clock: the run pauses there.
fn take_impact_hit(core: &mut Core, control: &mut SimControl) {
    if let Some(hit) = core.impact_hit.take() {
        control.paused = true;
        control.impact_paused = Some(hit);
        core.clock_running = false;
        core.backlog = 0.0;
    }
}

/// Start or stop watching for impacts as [`SimControl::pause_at_impact`] says.
fn arm_impact_watch(core: &mut Core, control: &SimControl) {
    match (control.pause_at_impact, core.impacts.is_some()) {
        (true, false) => core.impacts = Some(Default::default()),
        (false, true) => core.impacts = None,
        _ => {}
    }
}

fn self_notify(thread: &PhysicsThread) {
    thread.shared.changed.notify_all();
}
