//! Simulation plugin: the physics core's [`World`] on its own thread, its state shown to
//! the app once per rendered frame.
//!
//! **The physics clock.** The world advances in fixed steps of its own `dt` (never the
//! frame time), on a physics thread that owns the authoritative [`Simulation`]. Every
//! frame, [`advance_simulation`]
//! 1. hands the frame's commands to the thread, between two steps (see "commands"
//!    below);
//! 2. adds the real time elapsed since the last frame, times the time scale, to the
//!    clock's backlog (what the thread did not take of the last frame's share is dropped:
//!    a solver slower than the requested time scale runs in slow motion at the speed the
//!    machine allows, and never falls ever further behind);
//! 3. waits up to [`SimControl::frame_budget`] for the thread to take what is due
//!    (requested steps, [`SimCommand::Step`], and the clock's steps), and without a
//!    limit for [`SimCommand::StepNow`] (`--steps N`: taken before the first frame is
//!    shown);
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
//! **Commands in, a snapshot out.** No other plugin changes the world: they write
//! [`SimCommand`] messages (reset, open a scene, method, parameters, time step, sleep,
//! steps, seek, branch, save state, spawn, walls, the mouse spring, the repose
//! experiment, the collision microscope), which [`advance_simulation`] hands to the
//! thread between two steps, in the order written; the [`Simulation`] resource is the
//! thread's state as published at the end of the frame's sync, read-only for every
//! other system. Commands that change what the next step reads are stored as keyframes
//! of the timeline at their step. Every step runs [`Simulation::step`], the same
//! function and order as `impulse-lab run` (the collision microscope's steps too, with
//! the impulse trace on), so a run in the app equals the CLI's bit for bit.
//!
//! **Timeline.** Every step is recorded in [`super::timeline::History`] (keyframes every
//! N steps plus re-simulation, `crate::history`): the commands above are stored as
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

use super::messages::{MicroscopeOutcome, ReposeCommand, SimCommand};
use super::sets::SimulationStage;
pub use super::sets::SimulationSystems;
use super::sim_state::modified_time;
pub use super::sim_state::{
    BodyProbe, EnergyHistory, GrabSpring, LabMode, ProbeSample, RunStats, SceneWatcher, SimControl,
    Simulation, StartupSteps, WallRef,
};
use super::timeline::{History, TimelineView};
use crate::energy::EnergySample;
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
        if !app.is_plugin_added::<bevy::state::app::StatesPlugin>() {
            app.add_plugins(bevy::state::app::StatesPlugin);
        }
        app.insert_resource(SimControl {
            paused: self.paused,
            ..default()
        })
        .init_resource::<EnergyHistory>()
        .init_resource::<SceneWatcher>()
        .init_resource::<TimelineView>()
        .init_state::<LabMode>()
        // The messages of `messages.rs` every plugin may write, whichever plugins the
        // app has.
        .add_message::<SimCommand>()
        .add_message::<MicroscopeOutcome>()
        .add_message::<super::messages::ViewRequest>()
        .add_message::<super::messages::CaptureRequest>()
        .add_message::<super::messages::OpenLesson>()
        .add_message::<super::messages::StartComparison>()
        .add_message::<super::messages::MicroscopeRequest>()
        .add_systems(Startup, start_history)
        .add_systems(
            Update,
            (
                apply_startup_steps,
                reload_changed_scene,
                advance_simulation,
            )
                .chain()
                .in_set(SimulationStage::Sync),
        );
        SimulationStage::configure(app);
    }
}

/// `--steps N`: taken once the modes asked for at startup are entered (a comparison
/// opens its world as it enters).
fn apply_startup_steps(
    startup: Option<ResMut<StartupSteps>>,
    next_mode: Res<NextState<LabMode>>,
    mut commands: MessageWriter<SimCommand>,
) {
    if !matches!(*next_mode, NextState::Unchanged) {
        return;
    }
    if let Some(mut s) = startup {
        let n = std::mem::take(&mut s.0);
        if n > 0 {
            commands.write(SimCommand::StepNow(n));
        }
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
    sim: Res<Simulation>,
    mut watcher: ResMut<SceneWatcher>,
    mut commands: MessageWriter<SimCommand>,
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
    match Simulation::from_file(&path) {
        Ok(next) => {
            watcher.error = None;
            commands.write(SimCommand::Open(Box::new(next)));
        }
        Err(e) => watcher.error = Some(e),
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
    /// A new run started since the last publication (reset, open): its first sample.
    restarted: Option<EnergySample>,
    /// The outcome of the last save or history operation, for the timeline.
    timeline_message: Option<(String, bool)>,
    /// Wall-clock time of the last seek's re-simulation.
    last_seek: Option<Duration>,
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

/// The physics thread, started at the first frame and stopped when the app ends.
pub struct PhysicsThread {
    shared: Arc<Shared>,
    handle: Option<std::thread::JoinHandle<()>>,
    /// The scene file the app last watched (the watcher follows the published one).
    watched: Option<PathBuf>,
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
                restarted: None,
                timeline_message: None,
                last_seek: None,
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
            watched: sim.scene_path.clone(),
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

impl Core {
    /// Forget the clock's backlog and the steps requested and not taken.
    fn clear_backlog(&mut self) {
        self.backlog = 0.0;
        self.pending = 0;
        self.blocking = 0;
    }

    /// A new run began in `self.sim` (reset, open, a repose experiment): the timeline,
    /// the energy trace and the clock start again.
    fn new_run(&mut self) {
        self.samples.clear();
        self.probes.clear();
        self.branched_at = None;
        self.trace_replaced = false;
        self.restarted = Some(self.sim.last_sample);
        self.history.reset(&self.sim);
        self.clear_backlog();
        self.dirty = true;
    }

    /// A command failed on the world: shown as the run's error (the run pauses).
    fn fail(&mut self, e: String) {
        self.sim.error = Some(e);
        self.dirty = true;
    }

    /// The state changed in a way the next step reads: a keyframe at this step, so that
    /// a re-simulation never crosses the change.
    fn edited(&mut self) {
        self.dirty = true;
        if let Err(e) = self.history.edit(&self.sim) {
            self.history_error = Some(e);
        }
    }

    /// Carry out one command (module doc); `control` is paused where the command pauses
    /// the run (seek, branch, microscope), and the microscope's outcome is returned.
    fn apply(
        &mut self,
        command: SimCommand,
        control: &mut SimControl,
    ) -> Option<MicroscopeOutcome> {
        match command {
            SimCommand::Reset => match self.sim.reset() {
                Ok(()) => self.new_run(),
                Err(e) => self.fail(e),
            },
            SimCommand::Open(next) => {
                let generation = self.sim.generation + 1;
                self.sim = *next;
                self.sim.generation = generation;
                self.new_run();
            }
            SimCommand::Solver(kind) => {
                self.sim.set_solver(kind);
                self.edited();
            }
            SimCommand::Params(params) => {
                self.sim.world.params = params;
                self.edited();
            }
            SimCommand::TimeStep(dt) => {
                self.sim.world.dt = dt;
                self.edited();
            }
            SimCommand::Sleep(sleep) => {
                self.sim.world.sleep = sleep;
                self.edited();
            }
            SimCommand::RecordTrace(on) => {
                self.sim.world.record_trace = on;
                self.edited();
            }
            SimCommand::Step(n) => self.pending += n,
            SimCommand::StepNow(n) => {
                self.pending += n;
                self.blocking += n;
            }
            SimCommand::ClearBacklog => self.clear_backlog(),
            SimCommand::Seek(step) => {
                control.paused = true;
                self.clear_backlog();
                let t = Instant::now();
                match self.history.seek(step) {
                    Ok(frame) => {
                        super::timeline::restore(frame, &mut self.sim);
                        self.dirty = true;
                    }
                    Err(e) => self.history_error = Some(format!("cannot show step {step}: {e}")),
                }
                self.last_seek = Some(t.elapsed());
            }
            SimCommand::Branch(id) => {
                control.paused = true;
                self.clear_backlog();
                match self.history.switch(id) {
                    Ok(frame) => {
                        super::timeline::restore(frame, &mut self.sim);
                        self.dirty = true;
                        self.trace_replaced = true;
                    }
                    Err(e) => {
                        self.history_error = Some(format!("cannot return to the branch: {e}"))
                    }
                }
            }
            SimCommand::HistoryCap(cap) => self.history.set_cap(cap),
            SimCommand::SaveState(path) => {
                self.timeline_message =
                    Some(match super::timeline::save_state(&mut self.sim, &path) {
                        Ok(()) => (
                            format!(
                                "saved step {} as {} (reset returns to it)",
                                self.sim.world.step_index,
                                path.display()
                            ),
                            true,
                        ),
                        Err(e) => (format!("not saved: {e}"), false),
                    });
                self.dirty = true;
            }
            SimCommand::Spawn(body) => {
                self.sim.add_body(*body);
                self.edited();
            }
            SimCommand::Wall {
                container,
                wall,
                present,
            } => {
                self.sim.set_wall(container, wall, present);
                self.edited();
            }
            SimCommand::Grab(grab) => {
                if self.sim.grab != grab {
                    self.sim.grab = grab;
                    self.edited();
                }
            }
            SimCommand::Repose(ReposeCommand::Start(config)) => {
                match self.sim.start_repose(config) {
                    Ok(()) => {
                        self.new_run();
                        control.paused = false;
                    }
                    Err(e) => self.fail(e),
                }
            }
            SimCommand::Repose(ReposeCommand::RemoveWall) => {
                self.sim.remove_repose_wall();
                self.edited();
            }
            SimCommand::Repose(ReposeCommand::MeasureNow) => {
                if let Err(e) = self.sim.measure_repose_now() {
                    self.sim.error = Some(e);
                }
                self.edited();
            }
            SimCommand::Microscope {
                catch,
                body,
                max_steps,
            } => {
                control.paused = true;
                return Some(self.microscope(catch, body, max_steps));
            }
        }
        None
    }

    /// The collision microscope's steps (module doc of `app::microscope`): taken as
    /// every other step, with the impulse trace on; the mouse spring is let go first.
    fn microscope(
        &mut self,
        catch: bool,
        body: Option<usize>,
        max_steps: u64,
    ) -> MicroscopeOutcome {
        self.clear_backlog();
        self.clock_running = false;
        self.sim.grab = None;
        let trace_was = self.sim.world.record_trace;
        self.sim.world.record_trace = true;
        self.edited();
        let max = if catch { max_steps.max(1) } else { 1 };
        let mut result = Ok(None);
        for _ in 0..max {
            let time = self.sim.world.time;
            // A requested step (taken whatever the clock says).
            self.pending = 1;
            self.take_step();
            if let Some(e) = &self.sim.error {
                result = Err(e.clone());
                break;
            }
            let record = crate::microscope::pack(&self.sim.world, time);
            if !catch || record.has_impulse(body) {
                result = Ok(Some(record));
                break;
            }
        }
        self.clear_backlog();
        self.sim.world.record_trace = trace_was;
        self.edited();
        MicroscopeOutcome {
            result,
            body,
            max_steps: max,
        }
    }
}

/// One frame of the physics clock (module doc): the frame's commands to the physics
/// thread, wait for what is due, publish its state.
#[allow(clippy::too_many_arguments)]
pub fn advance_simulation(
    time: Res<Time<Real>>,
    mut sim: ResMut<Simulation>,
    mut control: ResMut<SimControl>,
    mut history: ResMut<EnergyHistory>,
    mut timeline: ResMut<TimelineView>,
    mut watcher: ResMut<SceneWatcher>,
    mut commands: MessageReader<SimCommand>,
    mut outcomes: MessageWriter<MicroscopeOutcome>,
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
        for command in commands.read() {
            if let Some(outcome) = core.apply(command.clone(), &mut control) {
                outcomes.write(outcome);
            }
        }
        core.probe_body = control.probe_body;
        take_impact_hit(&mut core, &mut control);
        core.clock_running = !control.paused
            && !control.lockstep
            && control
                .hold_at
                .is_none_or(|step| core.sim.world.step_index < step);
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
    // its `StepNow` steps taken.
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
    if let Some(first) = core.restarted.take() {
        history.restart(first);
    }
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
    if let Some(m) = core.timeline_message.take() {
        timeline.message = Some(m);
    }
    if let Some(t) = core.last_seek.take() {
        timeline.last_seek = Some(t);
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
    control.pending = core.pending;
    timeline.update(&core.history, sim.world.step_index);
    let steps = std::mem::take(&mut core.steps);
    let busy = std::mem::take(&mut core.busy);
    let h = core.sim.world.dt;
    let clock_running = core.clock_running;
    drop(core);
    self_notify(thread);
    if thread.watched != sim.scene_path {
        // Another scene file (opened, a lesson's, saved as): watch it.
        thread.watched = sim.scene_path.clone();
        watcher.track(sim.scene_path.as_deref());
    }

    let stats = &mut control.stats;
    stats.steps_last_frame = steps;
    stats.physics_last_frame = busy;
    stats.frame_time = Duration::from_secs_f64(real_dt);
    stats.waited_last_frame = waited;
    if clock_running {
        stats.record_frame(f64::from(steps) * h, real_dt);
    } else {
        stats.run_stopped();
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
