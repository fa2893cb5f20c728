//! The app's clock (physics on its own thread, `impulse_lab::app::simulation`) and its
//! timeline (`impulse_lab::app::timeline`), headless under Bevy's `MinimalPlugins`:
//! slow frames do not slow the physics, `--steps N` is taken before the first frame, a
//! run scrubbed back and resumed equals a run that never went back, the history keeps
//! to its memory cap.
#![cfg(feature = "app")]

mod common;

use bevy::prelude::*;
use common::app::{sim, step_app};
use common::{assert_same_state, body_state, json_body_state};
use impulse_lab::app::headless_app;
use impulse_lab::app::messages::SimCommand;
use impulse_lab::app::simulation::{
    EnergyHistory, SimControl, Simulation, SimulationSystems, StartupSteps,
};
use impulse_lab::app::timeline::TimelineView;
use impulse_lab::scene;
use impulse_lab::world::World;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The timing test measures rates: the other tests of this file wait while it runs.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn core_world(name: &str) -> World {
    let mut w = scene::load_scene(&scene::resolve_scene(name))
        .unwrap()
        .build_world()
        .unwrap();
    w.start_ledger();
    w
}

fn shown(app: &App) -> &Simulation {
    app.world().resource::<Simulation>()
}

/// When the last frame published the world (the slow system's start, right after the
/// physics sync).
#[derive(Resource, Default)]
struct Published(Option<Instant>);

/// A frame that takes 500 ms (a system sleeping after the physics sync, as a slow
/// renderer or panel would): over the same wall time the app's world advances as far as
/// the core stepping in a loop. The app's wall time runs from the end of its first frame
/// (the clock's first real-time interval starts there; Bevy's first frame has no elapsed
/// time) to the last publication; the core runs from the scene's start for that same
/// wall time, before and after each of the app's runs, and the mean of the two is that
/// run's reference (a change of machine load during the test moves both). The app runs
/// `ROUNDS` times between core runs and the sums over the rounds are compared, so that a
/// passing dip of the machine's speed during one app run, which the core runs around it
/// do not see, weighs less. Sleeping is off on both sides: on a machine that reaches the
/// pour's sleep (every body asleep from about 4.5 s of simulated time) within the wall
/// time, the steps after it cost almost nothing, and the simulated time read at a given
/// wall time then swings by seconds with a few milliseconds of timing (measured: the
/// app's last frame jumped from 4.5 s to 5.2-7.0 s of simulated time). The time scale is one no machine reaches, so both run as
/// fast as the machine allows; this compares two rates measured in the same test, not an
/// absolute speed. The bound is the 10 %: what the app adds is a copy of the
/// world per step for the timeline, one per frame for the display and up to one frame
/// budget of waiting, a few per cent here.
#[test]
fn slow_frames_do_not_slow_the_physics() {
    let _serial = serial();
    const SLOW_FRAME: Duration = Duration::from_millis(500);
    const WALL: Duration = Duration::from_secs(6);
    const ROUNDS: usize = 2;
    // The core's simulated time after each step against the wall time since its start,
    // for `limit` of wall time; `at` reads it at a given wall time. It steps on a worker
    // of a rayon pool, as the app's physics thread and `impulse-lab run` do: stepped from
    // a thread outside the pool, every parallel loop of a step hands its work over and
    // waits to be woken, and the reference's own speed then varied by 25 % from run to
    // run within one test (3.99-5.02 s of simulated time in the same wall time; on a
    // pool worker 4.42-5.15 s over four rounds, 4.79-5.14 s over two tests of two).
    let pool = rayon::ThreadPoolBuilder::new().build().unwrap();
    let headless_trace = |limit: Duration| {
        pool.install(|| {
            let mut w = core_world("pour_mixed");
            w.sleep.enabled = false;
            let mut trace = Vec::new();
            let t0 = Instant::now();
            while t0.elapsed() < limit {
                w.step().unwrap();
                trace.push((t0.elapsed(), w.time));
            }
            trace
        })
    };
    let at = |trace: &[(Duration, f64)], wall: Duration| {
        trace
            .iter()
            .find(|(t, _)| *t >= wall)
            .or(trace.last())
            .map_or(0.0, |&(_, time)| time)
    };
    // The app's simulated time over its wall time, with its frames and their mean length.
    let app_run = || {
        let mut awake = sim("pour_mixed");
        awake.world.sleep.enabled = false;
        let mut app = headless_app(awake);
        app.init_resource::<Published>();
        app.add_systems(
            Update,
            (|mut p: ResMut<Published>| {
                p.0 = Some(Instant::now());
                std::thread::sleep(SLOW_FRAME);
            })
            .after(SimulationSystems),
        );
        {
            let mut control = app.world_mut().resource_mut::<SimControl>();
            control.paused = false;
            control.time_scale = 1e6;
        }
        app.update();
        let t0 = Instant::now();
        let mut frames = 0;
        while t0.elapsed() < WALL {
            app.update();
            frames += 1;
        }
        let frame_time = t0.elapsed() / frames;
        let wall = app.world().resource::<Published>().0.unwrap() - t0;
        (wall, shown(&app).world.time, frames, frame_time)
    };
    // Each core run covers an app run's wall time (the last frame ends within one slow
    // frame after WALL) and is the reference after one app run and before the next.
    let mut before = headless_trace(WALL + 2 * SLOW_FRAME);
    let (mut app_total, mut headless_total) = (0.0, 0.0);
    for _ in 0..ROUNDS {
        let (wall, app_time, frames, frame_time) = app_run();
        let after = headless_trace(WALL + 2 * SLOW_FRAME);
        let (b, a) = (at(&before, wall), at(&after, wall));
        println!(
            "simulated time in {wall:?} of wall time: headless {b:.4} s / {a:.4} s, \
             app {app_time:.4} s ({frames} frames of {frame_time:?})"
        );
        assert!(
            frame_time >= SLOW_FRAME,
            "the frames were not slow: {frame_time:?}"
        );
        app_total += app_time;
        headless_total += 0.5 * (b + a);
        before = after;
    }
    assert!(
        (app_total / headless_total - 1.0).abs() <= 0.10,
        "app {app_total:.4} s vs headless {headless_total:.4} s of simulated time over \
         {ROUNDS} runs"
    );
}

/// `--steps N` (the [`StartupSteps`] resource `impulse-lab gui --steps` inserts): the
/// first frame shows step N, whatever the frame budget and however slow the frames, and
/// the state equals the core's after N steps bit for bit.
#[test]
fn startup_steps_are_taken_before_the_first_frame() {
    let _serial = serial();
    const N: u64 = 600;
    let mut app = headless_app(sim("pour_mixed"));
    app.insert_resource(StartupSteps(N));
    app.world_mut().resource_mut::<SimControl>().frame_budget = Duration::ZERO;
    app.update();
    assert_eq!(shown(&app).world.step_index, N, "first frame");
    assert_eq!(app.world().resource::<SimControl>().pending_steps(), 0);
    let mut reference = core_world("pour_mixed");
    for _ in 0..N {
        reference.step().unwrap();
    }
    assert_same_state(&reference.bodies, &shown(&app).world.bodies, "step N");
    // Paused: the next frames stay at step N.
    for _ in 0..3 {
        app.update();
    }
    assert_eq!(shown(&app).world.step_index, N);
    assert_eq!(
        app.world().resource::<EnergyHistory>().samples.len() as u64,
        N + 1
    );
}

/// Scrub back 200 steps, then step on from there: the stored state is the run's state
/// at that step, and the continued run equals, bit for bit (bodies and the ledger's
/// sample), a run that never went back; the energy trace after the branch point is
/// the new run's.
#[test]
fn scrubbing_back_and_resuming_equals_a_run_that_never_went_back() {
    let _serial = serial();
    let mut app = headless_app(sim("pour_mixed"));
    step_app(&mut app, 400);
    let at_400 = shown(&app).world.bodies.clone();
    app.world_mut().write_message(SimCommand::Seek(200));
    app.update();
    let mut reference = core_world("pour_mixed");
    for _ in 0..200 {
        reference.step().unwrap();
    }
    assert_eq!(shown(&app).world.step_index, 200);
    assert!(app.world().resource::<SimControl>().paused);
    assert_same_state(
        &reference.bodies,
        &shown(&app).world.bodies,
        "scrubbed to 200",
    );
    let view = app.world().resource::<TimelineView>().clone();
    assert_eq!(
        view.range,
        Some((0, 400)),
        "the future is kept until a step"
    );
    assert!(view.in_past());
    // Forward again through the stored states: the same state as before.
    app.world_mut().write_message(SimCommand::Seek(400));
    app.update();
    assert_same_state(&at_400, &shown(&app).world.bodies, "back at 400");
    app.world_mut().write_message(SimCommand::Seek(200));
    app.update();

    // Resume from 200: the states after it go, and the run goes on to 500.
    step_app(&mut app, 300);
    let mut last = None;
    for _ in 0..300 {
        last = Some(reference.step().unwrap());
    }
    let last = last.unwrap();
    let s = shown(&app);
    assert_eq!(s.world.step_index, 500);
    assert_same_state(&reference.bodies, &s.world.bodies, "500 after going back");
    assert_eq!(s.last_sample, last, "the ledger's sample at step 500");
    let history = app.world().resource::<EnergyHistory>();
    assert_eq!(history.samples.len(), 501, "one sample per step");
    assert!(
        history
            .samples
            .iter()
            .enumerate()
            .all(|(i, x)| x.step == i as u64)
    );
    assert_eq!(history.samples.back(), Some(&last));
    assert_eq!(app.world().resource::<TimelineView>().range, Some((0, 500)));
}

/// The history keeps to its memory cap: keyframes are sparser than steps, their bytes at
/// least the bodies' own (a check that the allocator's count is real); a cap request
/// for about a third of them drops the oldest, the bytes within the cap, and seeking
/// before the oldest step held shows the oldest.
#[test]
fn the_history_keeps_to_its_memory_cap() {
    let _serial = serial();
    let mut app = headless_app(sim("pour_mixed"));
    step_app(&mut app, 600);
    let view = app.world().resource::<TimelineView>().clone();
    assert_eq!(view.range, Some((0, 600)));
    assert!(
        view.keyframes >= 2 && view.keyframes < 300,
        "{} keyframes",
        view.keyframes
    );
    let sample = size_of::<impulse_lab::energy::EnergySample>();
    let per_keyframe = (view.bytes - 601 * sample) / view.keyframes;
    let bodies = shown(&app).world.bodies.len();
    assert!(
        per_keyframe >= bodies * size_of::<impulse_lab::RigidBody>(),
        "{per_keyframe} bytes per keyframe for {bodies} bodies"
    );
    assert!(view.capacity_secs >= 120.0, "{} s", view.capacity_secs);
    let cap = (view.keyframes / 3 * per_keyframe + 601 * sample) * 8 / 7;
    app.world_mut().write_message(SimCommand::HistoryCap(cap));
    app.update();
    let view = app.world().resource::<TimelineView>().clone();
    assert_eq!(view.cap, cap);
    assert!(view.bytes <= cap, "{} bytes over the cap {cap}", view.bytes);
    let (first, last) = view.range.unwrap();
    assert_eq!(last, 600);
    assert!(first > 0, "the oldest keyframes went");
    app.world_mut().write_message(SimCommand::Seek(first - 1));
    app.update();
    assert_eq!(shown(&app).world.step_index, first);
}

/// Save the state at step 300 as a scene: the file loads (through `impulse-lab run`'s own
/// path) as the app's world at step 300, bodies bit for bit, and
/// `impulse-lab run FILE --steps 200` ends, bit for bit, where the app's own
/// continuation ends 200 steps later: the scene's `resume` section carries the
/// warm-start caches, sleep state, step count and ledger (`impulse_lab::scene::save`).
/// "Reset" returns to the saved state, and the app continues from it to the same end.
#[test]
fn a_saved_state_continues_with_impulse_lab_run_as_in_the_app() {
    let _serial = serial();
    const STEPS: u64 = 200;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.ron");
    let mut app = headless_app(sim("pour_mixed"));
    step_app(&mut app, 300);
    let saved = shown(&app).world.bodies.clone();
    app.world_mut()
        .write_message(SimCommand::SaveState(path.clone()));
    app.update();
    let message = app.world().resource::<TimelineView>().message.clone();
    assert!(matches!(message, Some((_, true))), "{message:?}");
    assert_eq!(shown(&app).scene_path.as_deref(), Some(path.as_path()));
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("contact_impulses"),
        "the app writes the resume section"
    );

    // Loaded as the CLI loads it: the same bodies, bit for bit, at the same step.
    let loaded = scene::load_scene(&path).unwrap().build_world().unwrap();
    assert_same_state(&saved, &loaded.bodies, "loaded from the saved scene");
    assert_eq!(loaded.step_index, 300);

    // The app's own continuation.
    step_app(&mut app, STEPS);
    assert_eq!(shown(&app).world.step_index, 300 + STEPS);
    let continued = shown(&app).world.bodies.clone();

    let cli = common::cli_final_state(
        &["run", path.to_str().unwrap(), "--steps", &STEPS.to_string()],
        dir.path(),
    );
    assert_eq!(cli["step"].as_u64(), Some(300 + STEPS));
    let bodies = cli["bodies"].as_array().unwrap();
    assert_eq!(bodies.len(), continued.len());
    // Position, orientation and velocity, bit for bit (`json_body_state`).
    for (i, (j, b)) in bodies.iter().zip(&continued).enumerate() {
        let bits = |x: [f64; 13]| x.map(f64::to_bits)[..10].to_vec();
        let (app_state, cli_state) = (bits(body_state(b)), bits(json_body_state(j)));
        assert_eq!(app_state, cli_state, "body {i} after {STEPS} steps");
    }

    // Reset returns to the saved state; the app continues from it to the same end.
    app.world_mut().write_message(SimCommand::Reset);
    app.update();
    assert_eq!(shown(&app).world.step_index, 300);
    assert_same_state(&saved, &shown(&app).world.bodies, "after reset");
    step_app(&mut app, STEPS);
    assert_same_state(
        &continued,
        &shown(&app).world.bodies,
        "continued after reset",
    );
}

/// Compare mode follows the timeline: scrubbing the app's world back to step 100 brings
/// every run of the comparison to step 100 (recomputed from the scene: each run is
/// deterministic), equal bit for bit to that run alone, and stepping on from there
/// keeps them so.
#[test]
fn compare_mode_scrubs_every_run() {
    use impulse_lab::app::compare::CompareMode;
    use impulse_lab::app::{AppOptions, teach_plugins};
    use impulse_lab::dynamics::solver::SolverKind;
    let _serial = serial();
    let solvers = vec![SolverKind::Etm, SolverKind::Sqm, SolverKind::Smm];
    let options = AppOptions {
        compare: solvers.clone(),
        ..AppOptions::default()
    };
    let mut app = headless_app(sim("etm_box_flat"));
    app.add_plugins(teach_plugins(&options));
    // Compare mode is asked for in the first frame and entered in the second.
    app.update();
    app.update();
    // This test checks the runs' states, not their pace: the comparison may take the
    // time it needs in a frame to catch up with the app's steps.
    app.world_mut().resource_mut::<CompareMode>().frame_budget = Some(Duration::from_secs(3600));
    step_app(&mut app, 250);
    app.update();
    app.world_mut().write_message(SimCommand::Seek(100));
    app.update();
    let check = |app: &App, steps: u64| {
        assert_eq!(shown(app).world.step_index, steps);
        let c = app
            .world()
            .resource::<CompareMode>()
            .comparison
            .as_ref()
            .expect("compare mode on");
        assert_eq!(c.steps(), steps);
        let sc = scene::load_scene(&scene::resolve_scene("etm_box_flat")).unwrap();
        for (run, &k) in c.runs.iter().zip(&solvers) {
            let mut s = sc.clone();
            s.solver = k;
            let mut alone = s.build_world().unwrap();
            alone.start_ledger();
            for _ in 0..steps {
                alone.step().unwrap();
            }
            assert_same_state(&run.world.bodies, &alone.bodies, k.name());
        }
        assert_same_state(
            &shown(app).world.bodies,
            &c.runs[0].world.bodies,
            "app world vs run 0",
        );
    };
    check(&app, 100);
    step_app(&mut app, 50);
    app.update();
    check(&app, 150);
}

/// A scene's constant forces (`dda_rolling_sphere` pushes one sphere with F = 1 N at an
/// offset) act at every step of the app as in the core, so the app's run equals the
/// core's bit for bit; and a state saved from it carries the force.
#[test]
fn scene_forces_act_in_the_app_as_in_the_core() {
    let _serial = serial();
    const STEPS: u64 = 300;
    let mut app = headless_app(sim("dda_rolling_sphere"));
    step_app(&mut app, STEPS);
    let mut reference = core_world("dda_rolling_sphere");
    assert!(
        !reference.forces.is_empty(),
        "the scene has a constant force"
    );
    for _ in 0..STEPS {
        reference.step().unwrap();
    }
    assert_same_state(
        &reference.bodies,
        &shown(&app).world.bodies,
        "after 300 steps",
    );
    let s = shown(&app);
    let saved = impulse_lab::scene::save::state_scene(&s.scene, &s.world, &s.scene_forces, "saved")
        .unwrap();
    let loaded = saved.build_world().unwrap();
    assert_eq!(loaded.forces, reference.forces);
}
