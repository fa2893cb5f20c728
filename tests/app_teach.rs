//! Headless tests of the app's teaching plugins (Bevy `MinimalPlugins`): opening a lesson
//! loads its scene and presets the solver and compare mode; the collision microscope
//! catches an exact ETM impact and keeps the energy history consistent; compare mode
//! steps every run exactly as that run alone; presentation mode toggles.
#![cfg(feature = "app")]

mod common;

use common::assert_same_state;

use bevy::prelude::*;
use impulse_lab::app::compare::{CompareMode, CompareView};
use impulse_lab::app::interaction::RegionFraming;
use impulse_lab::app::lessons::Lessons;
use impulse_lab::app::messages::{MicroscopeRequest, OpenLesson, SimCommand, StartComparison};
use impulse_lab::app::microscope::Microscope;
use impulse_lab::app::present::Presentation;
use impulse_lab::app::simulation::{EnergyHistory, LabMode, SimControl, Simulation};
use impulse_lab::app::{AppOptions, headless_app, teach_plugins};
use impulse_lab::dynamics::solver::SolverKind;
use impulse_lab::scene;
use std::path::Path;

fn scene_path(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenes")
        .join(format!("{name}.ron"))
        .display()
        .to_string()
}

fn app_with(scene_name: &str, options: &AppOptions) -> App {
    let sim = Simulation::load(&scene_path(scene_name), None).unwrap();
    let mut app = headless_app(sim);
    app.add_plugins(teach_plugins(options));
    app
}

fn step_app(app: &mut App, n: u64) {
    app.world_mut().write_message(SimCommand::Step(n));
    app.update();
    for _ in 0..100_000 {
        if app.world().resource::<SimControl>().pending_steps() == 0 {
            // One more frame so that systems after the stepping (compare) catch up.
            app.update();
            return;
        }
        app.update();
    }
    panic!("steps never completed");
}

fn scene_stem(app: &App) -> String {
    let sim = app.world().resource::<Simulation>();
    sim.scene_path
        .as_ref()
        .and_then(|p| p.file_stem())
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn choosing_a_lesson_loads_its_scene_and_presets_solver_and_compare() {
    let mut app = app_with("pour_mixed", &AppOptions::default());
    assert!(
        app.world().resource::<Lessons>().entries.len() >= 6,
        "the bundled lessons are listed"
    );
    assert!(
        app.world()
            .resource::<Lessons>()
            .entries
            .iter()
            .all(|e| e.lesson.is_ok())
    );
    app.world_mut()
        .write_message(OpenLesson("box_landing_flat".into()));
    app.update();
    assert_eq!(scene_stem(&app), "etm_box_flat");
    let lessons = app.world().resource::<Lessons>();
    assert!(lessons.error.is_none(), "{:?}", lessons.error);
    assert_eq!(
        lessons.current.as_ref().and_then(|l| l.name()).as_deref(),
        Some("box_landing_flat")
    );
    let sim = app.world().resource::<Simulation>();
    assert_eq!(sim.world.solver_kind(), SolverKind::Etm);
    assert_eq!(sim.world.step_index, 0);
    let cm = app.world().resource::<CompareMode>();
    assert!(cm.is_on());
    assert_eq!(
        cm.solvers,
        vec![SolverKind::Etm, SolverKind::Sqm, SolverKind::Smm]
    );
    assert_eq!(
        app.world().resource::<EnergyHistory>().samples.len(),
        1,
        "history restarted"
    );

    // A lesson without a compare preset leaves compare mode.
    app.world_mut()
        .write_message(OpenLesson("rolling_sphere".into()));
    app.update();
    assert_eq!(scene_stem(&app), "dda_rolling_sphere");
    assert!(!app.world().resource::<CompareMode>().is_on());

    // A lesson that does not exist: reported, the scene keeps running.
    app.world_mut()
        .write_message(OpenLesson("no_such_lesson".into()));
    app.update();
    assert_eq!(scene_stem(&app), "dda_rolling_sphere");
    let lessons = app.world().resource::<Lessons>();
    assert!(
        lessons
            .error
            .as_ref()
            .is_some_and(|e| e.contains("no_such_lesson"))
    );
    assert_eq!(
        lessons.current.as_ref().and_then(|l| l.name()).as_deref(),
        Some("rolling_sphere")
    );
}

#[test]
fn lesson_option_opens_it_at_startup_and_its_check_runs() {
    let options = AppOptions {
        lesson: Some("tetrahedra_energy".into()),
        ..AppOptions::default()
    };
    let mut app = app_with("pour_mixed", &options);
    app.update();
    assert_eq!(scene_stem(&app), "etm_tetrahedra");
    let cm = app.world().resource::<CompareMode>();
    assert_eq!(cm.solvers, vec![SolverKind::Etm, SolverKind::Sqm]);
    let mut lessons = app.world_mut().resource_mut::<Lessons>();
    lessons.start_check();
    let outcome = lessons.check.as_ref().unwrap().wait().unwrap();
    assert!(outcome.passed(), "{outcome}");
}

#[test]
fn microscope_catches_an_exact_etm_impact_and_keeps_the_history() {
    let mut app = app_with("etm_tetrahedra", &AppOptions::default());
    app.update();
    app.world_mut()
        .write_message(MicroscopeRequest::CatchNextImpact);
    app.update();
    let m = app.world().resource::<Microscope>();
    let r = m.record.as_ref().expect("an impact was caught");
    assert!(m.open);
    assert_eq!(r.solver, SolverKind::Etm);
    assert!(r.has_impulse(None));
    assert!(!r.rows.is_empty());
    let s = &r.summary;
    let e0 = s.kinetic_before + s.elastic_before;
    assert!(e0 > 0.0);
    for (i, row) in r.rows.iter().enumerate() {
        assert!(
            (row.total_energy - e0).abs() <= 1e-12 * e0,
            "row {i}: K + W = {} vs {e0}",
            row.total_energy
        );
    }
    assert!(s.energy_drift <= 1e-12 * e0, "drift {}", s.energy_drift);
    let kmc = s.kinetic_at_max_compression.expect("a maximum compression");
    assert!(
        (s.elastic_peak - (s.kinetic_before - kmc)).abs() <= 1e-12 * s.kinetic_before,
        "W_mc = {} vs K0 - K_mc = {}",
        s.elastic_peak,
        s.kinetic_before - kmc
    );
    assert!(app.world().resource::<SimControl>().paused);

    // The energy history holds one sample per step, each the one the world's own step
    // returned: the same as stepping the scene's world alone.
    let sim = app.world().resource::<Simulation>();
    let steps = sim.world.step_index;
    assert_eq!(steps, r.step);
    let history = app.world().resource::<EnergyHistory>();
    assert_eq!(history.samples.len() as u64, steps + 1);
    let sc = scene::load_scene(Path::new(&scene_path("etm_tetrahedra"))).unwrap();
    let mut alone = sc.build_world().unwrap();
    let mut expected = vec![alone.start_ledger()];
    for _ in 0..steps {
        expected.push(alone.step().unwrap());
    }
    for (a, b) in history.samples.iter().zip(&expected) {
        assert_eq!(a, b, "sample of step {}", b.step);
    }
    assert_eq!(sim.last_sample, *expected.last().unwrap());
    assert_same_state(&sim.world.bodies, &alone.bodies, "caught world vs alone");

    // "This step" records exactly one step.
    app.world_mut().write_message(MicroscopeRequest::ThisStep);
    app.update();
    assert_eq!(
        app.world().resource::<Simulation>().world.step_index,
        steps + 1
    );
    let m = app.world().resource::<Microscope>();
    assert_eq!(m.record.as_ref().unwrap().step, steps + 1);

    // CSV export.
    let dir = tempfile::tempdir().unwrap();
    let mut m = app.world_mut().resource_mut::<Microscope>();
    m.csv_path = dir.path().join("impact.csv").display().to_string();
    let n = m.export_csv().unwrap();
    let rows = impulse_lab::microscope::read_csv(
        std::fs::File::open(dir.path().join("impact.csv")).unwrap(),
    )
    .unwrap();
    assert_eq!(rows.len(), n);
}

#[test]
fn compare_mode_steps_each_run_exactly_as_alone() {
    const STEPS: u64 = 250;
    let solvers = vec![SolverKind::Etm, SolverKind::Sqm, SolverKind::Smm];
    let options = AppOptions {
        compare: solvers.clone(),
        split: true,
        ..AppOptions::default()
    };
    let mut app = app_with("etm_box_flat", &options);
    // Asked for in the first frame, entered (and built) in the second.
    app.update();
    app.update();
    assert!(app.world().resource::<CompareMode>().is_on());
    // This test checks the runs' states, not their pace: the comparison may take the
    // time it needs in a frame to catch up with the app's steps.
    app.world_mut().resource_mut::<CompareMode>().frame_budget = Some(UNBOUNDED);
    assert_eq!(
        app.world().resource::<CompareMode>().view,
        CompareView::Split
    );
    step_app(&mut app, STEPS);
    let sim = app.world().resource::<Simulation>();
    assert_eq!(sim.world.step_index, STEPS);
    assert_eq!(sim.world.solver_kind(), SolverKind::Etm);
    let cm = app.world().resource::<CompareMode>();
    let c = cm.comparison.as_ref().unwrap();
    assert_eq!(c.steps(), STEPS);
    let sc = scene::load_scene(Path::new(&scene_path("etm_box_flat"))).unwrap();
    for (run, &k) in c.runs.iter().zip(&solvers) {
        let mut s = sc.clone();
        s.solver = k;
        let mut alone = s.build_world().unwrap();
        alone.start_ledger();
        for _ in 0..STEPS {
            alone.step().unwrap();
        }
        assert_same_state(&run.world.bodies, &alone.bodies, k.name());
    }
    // The app's own world is run 0's twin.
    assert_same_state(
        &sim.world.bodies,
        &c.runs[0].world.bodies,
        "app world vs run 0",
    );
    let d = c.divergence();
    assert_eq!(d[0].position, 0.0);
    assert!(
        d[1].position > 0.0 || d[2].position > 0.0,
        "the solvers differ"
    );

    // A reset rebuilds the comparison at step 0.
    app.world_mut().write_message(SimCommand::Reset);
    app.update();
    let cm = app.world().resource::<CompareMode>();
    assert_eq!(cm.comparison.as_ref().unwrap().steps(), 0);
}

/// A frame budget no catch-up in these tests reaches.
const UNBOUNDED: std::time::Duration = std::time::Duration::from_secs(3600);

/// A comparison slower than the app's clock holds the clock (`SimControl::hold_at`)
/// instead of falling ever further behind or stopping the frames: with the clock asking
/// for far more steps than a frame can take and the comparison allowed one step a frame,
/// the app's world stays within two frames' steps of the comparison, where it would run
/// ahead by a frame's steps every frame.
#[test]
fn a_slow_comparison_holds_the_apps_clock() {
    let options = AppOptions {
        compare: vec![SolverKind::Etm, SolverKind::Jolt],
        ..AppOptions::default()
    };
    let mut app = app_with("etm_box_flat", &options);
    app.update();
    app.update();
    assert!(app.world().resource::<CompareMode>().is_on());
    app.world_mut().resource_mut::<CompareMode>().frame_budget = Some(std::time::Duration::ZERO);
    {
        let mut control = app.world_mut().resource_mut::<SimControl>();
        control.paused = false;
        control.time_scale = 1e6;
    }
    let world_step = |app: &App| app.world().resource::<Simulation>().world.step_index;
    let (mut largest_jump, mut held_frames) = (0, 0);
    const FRAMES: u64 = 60;
    for _ in 0..FRAMES {
        let before = world_step(&app);
        app.update();
        largest_jump = largest_jump.max(world_step(&app) - before);
        held_frames += app.world().resource::<SimControl>().hold_at.is_some() as u32;
    }
    let compared = app
        .world()
        .resource::<CompareMode>()
        .comparison
        .as_ref()
        .unwrap()
        .steps();
    let world = world_step(&app);
    eprintln!(
        "after {FRAMES} frames: app's world at step {world}, comparison at {compared}, \
         largest step of the world in a frame {largest_jump}, {held_frames} frames held"
    );
    assert!(largest_jump > 1, "the clock ran: {largest_jump}");
    assert!(
        (1..=FRAMES).contains(&compared),
        "at most one comparison step a frame: {compared}"
    );
    assert!(held_frames > 0);
    assert!(
        world <= compared + 2 * largest_jump,
        "the app's world ran ahead: step {world}, the comparison's {compared}"
    );
}

/// `gui --compare` without a lesson opens as a lesson does: paused at step 0 however the
/// app was running (Play starts the runs together), with the camera held on the scene's
/// region of interest; a lesson's compare preset keeps the lesson's own start and camera.
#[test]
fn a_compare_start_opens_paused_on_the_region_of_interest() {
    let options = AppOptions {
        compare: vec![SolverKind::Etm, SolverKind::Sqm, SolverKind::Smm],
        ..AppOptions::default()
    };
    let sim = Simulation::load(&scene_path("pour_mixed"), None).unwrap();
    let mut app = headless_app(sim);
    app.world_mut().resource_mut::<SimControl>().paused = false;
    app.init_resource::<RegionFraming>();
    app.add_plugins(teach_plugins(&options));
    app.update();
    app.update();
    assert!(app.world().resource::<CompareMode>().is_on());
    assert!(app.world().resource::<SimControl>().paused, "opens paused");
    assert_eq!(app.world().resource::<Simulation>().world.step_index, 0);
    let scene = scene::load_scene(Path::new(&scene_path("pour_mixed"))).unwrap();
    let (region, radius) = app
        .world()
        .resource::<RegionFraming>()
        .region
        .clone()
        .expect("the camera frames the region of interest");
    assert_eq!(region, scene.region_of_interest().unwrap());
    assert!(
        radius > 0.0,
        "the bodies' largest bounding radius: {radius}"
    );

    // A lesson with a compare preset: its start hint and camera, no region framing.
    app.world_mut().resource_mut::<RegionFraming>().region = None;
    app.world_mut()
        .write_message(OpenLesson("box_on_box".into()));
    app.update();
    app.update();
    assert!(app.world().resource::<CompareMode>().is_on());
    let control = app.world().resource::<SimControl>();
    assert!(control.paused && control.time_scale == 0.05 && control.pause_at_impact);
    assert!(app.world().resource::<RegionFraming>().region.is_none());
}

/// Per-run parameters: each run uses its own e and μ (and the app's world, run 0's twin,
/// runs with run 0's), bit-identical to the scene built with those parameters and
/// stepped alone; runs that differ only in parameters diverge.
#[test]
fn compare_mode_with_own_parameters_per_run() {
    // The box reaches the ground at about step 166 (2.76 m at 10 m/s).
    const STEPS: u64 = 240;
    let sc = scene::load_scene(Path::new(&scene_path("etm_box_flat"))).unwrap();
    let mut a = sc.params.clone();
    a.restitution = 0.9;
    let mut b = sc.params.clone();
    b.restitution = 0.1;
    b.friction = 0.6;
    let solvers = vec![SolverKind::Sqm, SolverKind::Sqm];
    let mut app = app_with("etm_box_flat", &AppOptions::default());
    app.world_mut().write_message(StartComparison {
        solvers: solvers.clone(),
        run_params: Some(vec![a.clone(), b.clone()]),
        lesson_scene: None,
    });
    // Asked for, entered, then built from the world opened as it entered.
    app.update();
    app.update();
    assert!(app.world().resource::<CompareMode>().is_on());
    app.world_mut().resource_mut::<CompareMode>().frame_budget = Some(UNBOUNDED);
    step_app(&mut app, STEPS);
    let sim = app.world().resource::<Simulation>();
    assert_eq!(
        sim.world.params, a,
        "the app's world runs with run 0's parameters"
    );
    let c = app
        .world()
        .resource::<CompareMode>()
        .comparison
        .as_ref()
        .unwrap();
    for (run, p) in c.runs.iter().zip([&a, &b]) {
        let mut s = sc.clone();
        s.solver = SolverKind::Sqm;
        s.params = p.clone();
        let mut alone = s.build_world().unwrap();
        alone.start_ledger();
        for _ in 0..STEPS {
            alone.step().unwrap();
        }
        assert_same_state(&run.world.bodies, &alone.bodies, &run.label);
    }
    assert_same_state(&sim.world.bodies, &c.runs[0].world.bodies, "app vs run 0");
    assert!(
        c.divergence()[1].position > 0.0,
        "e = 0.9 and e = 0.1 must differ"
    );
}

#[test]
fn presentation_mode_toggles_by_flag_and_keys() {
    let app = app_with(
        "etm_tetrahedra",
        &AppOptions {
            present: true,
            ..AppOptions::default()
        },
    );
    assert!(app.world().resource::<Presentation>().on);

    let mut app = app_with("etm_tetrahedra", &AppOptions::default());
    assert!(!app.world().resource::<Presentation>().on);
    app.init_resource::<ButtonInput<KeyCode>>();
    app.world_mut()
        .resource_mut::<ButtonInput<KeyCode>>()
        .press(KeyCode::KeyP);
    app.update();
    assert!(app.world().resource::<Presentation>().on);
    {
        let mut keys = app.world_mut().resource_mut::<ButtonInput<KeyCode>>();
        keys.release(KeyCode::KeyP);
        keys.clear();
    }
    app.update();
    assert!(
        app.world().resource::<Presentation>().on,
        "held key: no toggle"
    );
    app.world_mut()
        .resource_mut::<ButtonInput<KeyCode>>()
        .press(KeyCode::F11);
    app.update();
    assert!(!app.world().resource::<Presentation>().on);
}

/// Opening a lesson sets the run controls from its start hint (paused, slow motion,
/// pause at the next impact); played, the run then stops by itself at the step of the
/// landing, the first step in which the solver's trace shows an impulse (the collision
/// microscope's test on a fresh world of the same scene), with every compare run at that
/// step too.
#[test]
fn a_lesson_starts_paused_in_slow_motion_and_pauses_at_the_impact() {
    let mut app = app_with("pour_mixed", &AppOptions::default());
    app.world_mut()
        .write_message(OpenLesson("box_landing_flat".into()));
    app.update();
    let control = app.world().resource::<SimControl>();
    assert!(control.paused);
    assert_eq!(control.time_scale, 0.1);
    assert!(control.pause_at_impact);
    app.update();
    assert_eq!(app.world().resource::<Simulation>().world.step_index, 0);

    // The landing, from the trace of a fresh world.
    let scene = scene::load_scene(&scene::resolve_scene("etm_box_flat")).unwrap();
    let mut w = scene.build_world().unwrap();
    w.start_ledger();
    let landing = loop {
        let r = impulse_lab::microscope::record_step(&mut w).unwrap();
        if r.has_impulse(None) {
            break w.step_index;
        }
        assert!(w.step_index < 1000, "no landing");
    };

    // Play, fast: the clock's steps stop at the landing.
    {
        let mut control = app.world_mut().resource_mut::<SimControl>();
        control.time_scale = 4.0;
        control.paused = false;
    }
    for _ in 0..20_000 {
        app.update();
        if app.world().resource::<SimControl>().paused {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    app.update();
    let control = app.world().resource::<SimControl>();
    assert!(control.paused, "the run paused by itself");
    assert_eq!(control.impact_paused, Some((landing, 0)));
    assert_eq!(
        app.world().resource::<Simulation>().world.step_index,
        landing
    );
    let cm = app.world().resource::<CompareMode>();
    let c = cm.comparison.as_ref().unwrap();
    assert!(c.runs.iter().all(|r| r.world.step_index == landing));
}

/// The microscope's steps are the physics thread's, through `Simulation::step`: on a
/// scene with a constant force (dda_rolling_sphere pushes body 0), a run with microscope
/// steps in it is bit for bit the core's run, force included.
#[test]
fn microscope_steps_are_the_runs_steps_with_the_scenes_forces() {
    let mut app = app_with("dda_rolling_sphere", &AppOptions::default());
    app.update();
    step_app(&mut app, 20);
    for _ in 0..3 {
        app.world_mut().write_message(MicroscopeRequest::ThisStep);
        app.update();
    }
    app.world_mut()
        .write_message(MicroscopeRequest::CatchNextImpact);
    app.update();
    step_app(&mut app, 20);
    let sim = app.world().resource::<Simulation>();
    let steps = sim.world.step_index;
    assert_eq!(
        steps, 44,
        "20 + 3 recorded + 1 caught (the spheres touch the floor) + 20"
    );
    let sc = scene::load_scene(Path::new(&scene_path("dda_rolling_sphere"))).unwrap();
    let mut alone = sc.build_world().unwrap();
    assert!(!alone.forces.is_empty(), "the scene pushes a body");
    alone.start_ledger();
    for _ in 0..steps {
        alone.step().unwrap();
    }
    assert_same_state(
        &sim.world.bodies,
        &alone.bodies,
        "microscope steps vs the core",
    );
    let history = app.world().resource::<EnergyHistory>();
    assert_eq!(history.samples.len() as u64, steps + 1);
}

/// A comparison asked for mid-run is built from the world its start opens (step 0), not
/// from the run it was asked on: no runs are built and caught up to the old run's step in
/// the frame between the request and entering compare mode.
#[test]
fn a_comparison_asked_mid_run_is_built_from_its_own_start() {
    let mut app = app_with("etm_box_flat", &AppOptions::default());
    app.update();
    step_app(&mut app, 300);
    app.world_mut().write_message(StartComparison {
        solvers: vec![SolverKind::Sqm, SolverKind::Jolt],
        run_params: None,
        lesson_scene: None,
    });
    app.update();
    let cm = app.world().resource::<CompareMode>();
    assert!(
        cm.comparison.is_none(),
        "built from the old run at step {}",
        cm.comparison.as_ref().map_or(0, |c| c.steps())
    );
    app.update();
    let cm = app.world().resource::<CompareMode>();
    let c = cm
        .comparison
        .as_ref()
        .expect("built once compare mode is entered");
    assert_eq!(c.steps(), 0);
    let sim = app.world().resource::<Simulation>();
    assert_eq!(sim.world.step_index, 0);
    assert_eq!(sim.world.solver_kind(), SolverKind::Sqm);
    assert!(app.world().resource::<SimControl>().paused);
}

/// Leaving a lesson gives back the run settings it set (slow motion, pause at impact),
/// and a microscope record of another run (another scene, a reset) is forgotten.
#[test]
fn closing_a_lesson_restores_the_run_and_a_new_run_drops_the_microscope_record() {
    let mut app = app_with("etm_tetrahedra", &AppOptions::default());
    app.update();
    {
        let mut c = app.world_mut().resource_mut::<SimControl>();
        c.time_scale = 0.5;
        c.pause_at_impact = false;
    }
    app.world_mut()
        .write_message(MicroscopeRequest::CatchNextImpact);
    app.update();
    assert!(app.world().resource::<Microscope>().record.is_some());
    app.world_mut()
        .write_message(OpenLesson("box_on_box".into()));
    app.update();
    app.update();
    let c = app.world().resource::<SimControl>();
    assert_eq!(
        (c.time_scale, c.pause_at_impact),
        (0.05, true),
        "the lesson's start"
    );
    assert!(
        app.world().resource::<Microscope>().record.is_none(),
        "a record of the previous scene's run is not this run's"
    );
    // Another lesson in the mode, then Close: the settings from before the first lesson.
    app.world_mut()
        .write_message(OpenLesson("rolling_sphere".into()));
    app.update();
    app.world_mut()
        .resource_mut::<NextState<LabMode>>()
        .set(LabMode::Sandbox);
    app.update();
    assert!(app.world().resource::<Lessons>().current.is_none());
    assert!(!app.world().resource::<CompareMode>().is_on());
    let c = app.world().resource::<SimControl>();
    assert_eq!((c.time_scale, c.pause_at_impact), (0.5, false));
}
