//! Headless tests of the app's simulation plugin (Bevy `MinimalPlugins`, manual time):
//! it steps the core exactly as the CLI does, pauses and single-steps, switches solver
//! without touching the bodies, resets, and survives a broken scene file. Also: every
//! bundled scene opens and runs in the app, and every shape gets a proper mesh.
#![cfg(feature = "app")]

mod common;

use common::app::{command, sim, step_app};
use common::{assert_same_state, body_state, json_body_state};
use impulse_lab::app::messages::{ReposeCommand, SimCommand};

use bevy::prelude::*;
use bevy::time::TimeUpdateStrategy;
use impulse_lab::RigidBody;
use impulse_lab::app::headless_app;
use impulse_lab::app::render::shape_mesh;
use impulse_lab::app::simulation::{
    EnergyHistory, GrabSpring, SceneWatcher, SimControl, Simulation,
};
use impulse_lab::dynamics::solver::SolverKind;
use impulse_lab::math::{Quat, Vec3};
use impulse_lab::scene;
use impulse_lab::shapes::Shape;
use std::path::Path;
use std::time::Duration;

fn step_index(app: &App) -> u64 {
    app.world().resource::<Simulation>().world.step_index
}

#[test]
fn simulation_plugin_steps_the_core_exactly_as_the_cli_does() {
    const STEPS: u64 = 150;
    let dir = tempfile::tempdir().unwrap();
    let cli = common::cli_final_state(
        &["run", "pour_mixed", "--steps", &STEPS.to_string()],
        dir.path(),
    );

    let mut app = headless_app(sim("pour_mixed"));
    step_app(&mut app, STEPS);
    let world = &app.world().resource::<Simulation>().world;
    assert_eq!(world.step_index, STEPS);
    assert_eq!(cli["step"].as_u64(), Some(STEPS));
    let bodies = cli["bodies"].as_array().unwrap();
    assert_eq!(bodies.len(), world.bodies.len());
    // serde_json writes the shortest representation that reads back to the same f64,
    // so equality here is bit-for-bit equality of the two runs.
    for (i, (j, b)) in bodies.iter().zip(&world.bodies).enumerate() {
        let (app_state, cli_state) = (body_state(b), json_body_state(j));
        assert_eq!(app_state, cli_state, "body {i} after {STEPS} steps");
    }
}

#[test]
fn pause_single_step_and_real_time_stepping() {
    let mut app = headless_app(sim("etm_box_on_box"));
    let dt = app.world().resource::<Simulation>().world.dt;
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
        dt,
    )));
    // Paused: frames pass, the world does not move.
    for _ in 0..10 {
        app.update();
    }
    assert_eq!(step_index(&app), 0, "paused world stepped");
    // Single step while paused: exactly one.
    step_app(&mut app, 1);
    assert_eq!(step_index(&app), 1);
    app.update();
    assert_eq!(step_index(&app), 1, "single step took more than one step");
    // Running at time scale 1 with frames of exactly dt: one step per frame.
    app.world_mut().resource_mut::<SimControl>().paused = false;
    for k in 1..=20 {
        app.update();
        assert_eq!(step_index(&app), 1 + k, "frame {k}");
    }
    // Slow motion ×0.25: one step every fourth frame.
    app.world_mut().resource_mut::<SimControl>().time_scale = 0.25;
    let before = step_index(&app);
    for _ in 0..40 {
        app.update();
    }
    assert_eq!(step_index(&app) - before, 10);
    // The energy history has one sample per step plus step 0.
    let n = app.world().resource::<EnergyHistory>().samples.len() as u64;
    assert_eq!(n, step_index(&app) + 1);
}

#[test]
fn switching_solver_mid_run_keeps_body_states() {
    let mut app = headless_app(sim("etm_box_on_box"));
    step_app(&mut app, 40);
    let before = app.world().resource::<Simulation>().world.bodies.clone();
    command(&mut app, SimCommand::Solver(SolverKind::Smm));
    let after = &app.world().resource::<Simulation>().world;
    assert_eq!(after.solver_kind(), SolverKind::Smm);
    assert_eq!(after.step_index, 40);
    assert_same_state(&before, &after.bodies, "right after the switch");

    // The next steps are SMM steps from that same state: compare with the core alone.
    let mut reference = scene::load_scene(&scene::resolve_scene("etm_box_on_box"))
        .unwrap()
        .build_world()
        .unwrap();
    reference.start_ledger();
    for _ in 0..40 {
        reference.step().unwrap();
    }
    reference.set_solver(SolverKind::Smm);
    for _ in 0..30 {
        reference.step().unwrap();
    }
    step_app(&mut app, 30);
    assert_same_state(
        &reference.bodies,
        &app.world().resource::<Simulation>().world.bodies,
        "30 SMM steps after the switch",
    );
}

#[test]
fn reset_restores_the_initial_state_and_keeps_the_chosen_solver() {
    let mut app = headless_app(sim("pour_mixed"));
    let initial = app.world().resource::<Simulation>().world.bodies.clone();
    step_app(&mut app, 60);
    let mut params = app.world().resource::<Simulation>().world.params.clone();
    params.friction = 0.7;
    app.world_mut()
        .write_message(SimCommand::Solver(SolverKind::Sqm));
    command(&mut app, SimCommand::Params(params));
    let moved = &app.world().resource::<Simulation>().world.bodies;
    assert!(
        moved
            .iter()
            .zip(&initial)
            .any(|(a, b)| a.position != b.position),
        "nothing moved in 60 steps"
    );
    app.world_mut().write_message(SimCommand::Reset);
    app.update();
    let s = app.world().resource::<Simulation>();
    assert_eq!(s.world.step_index, 0);
    assert_eq!(s.world.time, 0.0);
    assert_same_state(&initial, &s.world.bodies, "after reset");
    assert_eq!(s.world.solver_kind(), SolverKind::Sqm);
    assert_eq!(s.world.params.friction, 0.7);
    assert_eq!(app.world().resource::<EnergyHistory>().samples.len(), 1);
}

#[test]
fn broken_scene_file_leaves_the_previous_scene_running_and_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("edited.ron");
    let good = std::fs::read_to_string(scene::resolve_scene("etm_box_on_box")).unwrap();
    std::fs::write(&path, &good).unwrap();
    let mut app = headless_app(Simulation::load(path.to_str().unwrap(), None).unwrap());
    app.world_mut().resource_mut::<SceneWatcher>().period = Duration::ZERO;
    step_app(&mut app, 10);
    let name = app.world().resource::<Simulation>().scene.name.clone();

    // Break the file: the falling cube gets a negative edge.
    let broken = good.replacen("edge: 1.0", "edge: -1.0", 1);
    assert_ne!(broken, good);
    write_newer(&path, &broken, 1);
    step_app(&mut app, 5);
    let error = app
        .world()
        .resource::<SceneWatcher>()
        .error
        .clone()
        .expect("the broken file was not reported");
    assert!(error.contains("edited.ron:"), "no file/line in: {error}");
    assert!(error.contains("bodies[1].shape"), "no field in: {error}");
    let s = app.world().resource::<Simulation>();
    assert_eq!(s.scene.name, name);
    assert_eq!(s.world.step_index, 15, "the previous scene stopped running");

    // Fixed again (with a new name): it reloads from its initial state.
    write_newer(&path, &good.replacen(&name, "Edited", 1), 2);
    app.update();
    let s = app.world().resource::<Simulation>();
    assert!(app.world().resource::<SceneWatcher>().error.is_none());
    assert_eq!(s.scene.name, "Edited");
    assert_eq!(s.world.step_index, 0);
}

/// Write `text` and set the file's modification time `secs` seconds into the future, so
/// the watcher sees a change whatever the file system's timestamp resolution.
fn write_newer(path: &Path, text: &str, secs: u64) {
    std::fs::write(path, text).unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(std::time::SystemTime::now() + Duration::from_secs(secs))
        .unwrap();
}

#[test]
fn every_bundled_scene_opens_in_the_app_and_runs() {
    for path in scene::bundled_scenes().unwrap() {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let s = Simulation::load(path.to_str().unwrap(), None)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for b in &s.world.bodies {
            let mesh = shape_mesh(&b.shape);
            let n = mesh.count_vertices();
            assert!(
                n >= 4,
                "{name}: {} mesh has {n} vertices",
                b.shape.kind_name()
            );
            assert!(
                mesh.attribute(Mesh::ATTRIBUTE_NORMAL).is_some(),
                "{name}: {} mesh has no normals",
                b.shape.kind_name()
            );
        }
        let mut app = headless_app(s);
        step_app(&mut app, 3);
        let s = app.world().resource::<Simulation>();
        assert!(s.error.is_none(), "{name}: {:?}", s.error);
        assert_eq!(s.world.step_index, 3, "{name}");
        assert!(s.last_sample.total.is_finite(), "{name}");
    }
}

/// The mouse spring is a damped oscillator, m ẍ = m (k (x_t − x) − c ẋ), with k = ω₀²,
/// c = 2ζω₀: a free sphere grabbed at its centre settles on the target, and the ledger
/// books the spring's work as external work (the residual stays at rounding level).
#[test]
fn grab_spring_pulls_a_body_to_the_target_and_the_ledger_books_its_work() {
    let mut scene = scene::Scene::new("grab");
    scene.gravity = impulse_lab::scene::V3::new(0.0, 0.0, 0.0);
    let mut s = Simulation::from_scene(scene, None, Some(SolverKind::Jolt)).unwrap();
    let shape = Shape::Sphere { radius: 0.5 };
    let i = s.add_body(RigidBody::new(
        &shape,
        1000.0,
        Vec3::zeros(),
        Quat::identity(),
    ));
    s.world.start_ledger();
    let target = Vec3::new(0.8, -0.3, 0.5);
    s.grab = Some(GrabSpring {
        body: i,
        local_point: Vec3::zeros(),
        target,
    });
    // ζ = 0.7 at 3 Hz: the envelope e^{−ζω₀t} is below 1e-7 after 2 s.
    let steps = (2.0 / s.world.dt).round() as usize;
    let mut sample = s.last_sample;
    let mut peak_kinetic: f64 = 0.0;
    for _ in 0..steps {
        sample = s.step().unwrap();
        peak_kinetic = peak_kinetic.max(sample.kinetic);
    }
    let b = &s.world.bodies[i];
    assert!(
        (b.position - target).norm() < 1e-5,
        "did not reach the target: {}",
        b.position
    );
    assert!(peak_kinetic > 1.0, "the spring did not move the body");
    assert!(
        sample.residual.abs() < 1e-9 * peak_kinetic,
        "residual {} J vs peak kinetic energy {peak_kinetic} J",
        sample.residual
    );
    // Released, the body keeps its (tiny) velocity: the throw is ballistic.
    s.grab = None;
    let v = s.world.bodies[i].velocity;
    s.step().unwrap();
    assert_eq!(s.world.bodies[i].velocity, v);
}

/// "Spawn at the cursor" drops the new body above whatever the cursor ray meets, clear of
/// the bodies below: a cube dropped over a sphere resting on the ground starts above the
/// sphere's top, and over empty ground just above the ground.
#[test]
fn spawned_bodies_start_above_what_the_cursor_points_at() {
    use impulse_lab::app::interaction::spawn_point;
    let mut scene = scene::Scene::new("spawn");
    scene.gravity = impulse_lab::scene::V3::new(0.0, 0.0, -9.81);
    let mut s = Simulation::from_scene(scene, None, Some(SolverKind::Sqm)).unwrap();
    let ball = Shape::Sphere { radius: 0.5 };
    s.add_body(RigidBody::new(
        &ball,
        1000.0,
        Vec3::new(2.0, 1.0, 0.5),
        Quat::identity(),
    ));
    let cube = Shape::Cuboid {
        half_extents: Vec3::repeat(0.2),
    };
    let r = cube.bounding_radius();
    // Looking straight down onto the sphere.
    let p = spawn_point(&s, &cube, &Vec3::new(2.0, 1.0, 10.0), &-Vec3::z()).unwrap();
    assert!((p.xy() - Vec3::new(2.0, 1.0, 0.0).xy()).norm() < 1e-12);
    assert!(
        p.z - r >= 1.0,
        "cube's bounding ball reaches below the sphere's top: {p}"
    );
    // Looking down at 45° onto empty ground: lands on the ray's ground point, just above.
    let d = Vec3::new(1.0, 0.0, -1.0);
    let p = spawn_point(&s, &cube, &Vec3::new(-10.0, -5.0, 10.0), &d).unwrap();
    assert!((p.x - 0.0).abs() < 1e-9 && (p.y + 5.0).abs() < 1e-9, "{p}");
    assert!(p.z > r && p.z < 1.1 * r, "{p}");
    // Looking up into the sky: nothing to drop on.
    assert!(spawn_point(&s, &cube, &Vec3::new(0.0, 0.0, 1.0), &Vec3::z()).is_none());
}

/// The app's repose experiment (the panel's "Run experiment") follows the same script as
/// the CLI's batch run: stepped through the plugin, it packs at the packing friction,
/// removes the divider and brings the run's μ back when packing ends, and gives the same
/// measurement, bit for bit, as `ReposeExperiment` on a world built from the same scene.
#[test]
fn repose_experiment_in_the_app_matches_the_batch_run() {
    use impulse_lab::repose::{Phase, ReposeConfig, ReposeExperiment};
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/repose_tiny.ron");
    // The fixture's μ is 0.3.
    let config = ReposeConfig {
        max_time: 0.4,
        pack_friction: Some(0.5),
        ..Default::default()
    };
    let friction = |app: &App| app.world().resource::<Simulation>().world.params.friction;
    let mut s = Simulation::load(fixture.to_str().unwrap(), None).unwrap();
    assert!(s.repose_grid.is_ok(), "{:?}", s.repose_grid);
    s.start_repose(config.clone()).unwrap();
    let mut app = headless_app(s);
    let divider = |app: &App| match &app.world().resource::<Simulation>().world.containers[0] {
        impulse_lab::container::Container::Box { dividers, .. } => dividers[0].present,
        _ => panic!("not a box"),
    };
    let phase = |app: &App| {
        app.world()
            .resource::<Simulation>()
            .repose
            .as_ref()
            .unwrap()
            .phase()
    };
    let mut steps = 0;
    while phase(&app) == Phase::Packing {
        assert!(divider(&app), "the wall goes only when packing ends");
        assert_eq!(friction(&app), 0.5, "packing at the packing friction");
        step_app(&mut app, 1);
        steps += 1;
        assert!(steps < 10_000);
    }
    assert!(!divider(&app), "packing ended but the wall is still there");
    assert_eq!(
        friction(&app),
        0.3,
        "the wall's removal brings the run's μ back"
    );
    while phase(&app) != Phase::Done {
        step_app(&mut app, 1);
        steps += 1;
        assert!(steps < 10_000);
    }
    let sim = app.world().resource::<Simulation>();
    let shown = sim.repose_measurement.clone().expect("measurement shown");

    let scene = scene::load_scene(&fixture).unwrap();
    let mut batch = ReposeExperiment::new(scene.build_world().unwrap(), config.clone()).unwrap();
    let result = batch.run(|_| {}).unwrap().clone();
    assert_eq!(batch.world.step_index, steps, "same number of steps");
    assert_eq!(shown, result.measurement, "same measurement");
    assert!(shown.angle_deg.is_finite() && shown.rows_fitted > 0);
    assert_same_state(&sim.world.bodies, &batch.world.bodies, "repose end state");

    // Reset leaves the experiment.
    let mut app = app;
    app.world_mut().write_message(SimCommand::Reset);
    app.update();
    let sim = app.world().resource::<Simulation>();
    assert!(sim.repose.is_none() && sim.repose_measurement.is_none());
    assert!(divider(&app), "reset restores the wall");

    // A reset while packing keeps the run's μ, not the packing one.
    command(&mut app, SimCommand::Repose(ReposeCommand::Start(config)));
    // The experiment starts the run playing: hold it, and take the steps.
    app.world_mut().resource_mut::<SimControl>().paused = true;
    step_app(&mut app, 3);
    assert_eq!(phase(&app), Phase::Packing);
    assert_eq!(friction(&app), 0.5);
    app.world_mut().write_message(SimCommand::Reset);
    app.update();
    assert_eq!(
        friction(&app),
        0.3,
        "reset during packing kept the packing μ"
    );
}

/// While a video is recorded (`SimControl::lockstep`), the clock does not move the world:
/// only the steps the recorder schedules (one frame interval per captured frame, see
/// `impulse_lab::app::record::FramePacer`) are taken, so the video plays at simulated
/// real speed however slowly frames are rendered.
#[test]
fn lockstep_ignores_the_clock_and_takes_the_recorders_steps() {
    use impulse_lab::app::record::FramePacer;
    let mut app = headless_app(sim("etm_box_on_box"));
    let dt = app.world().resource::<Simulation>().world.dt;
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
        10.0 * dt,
    )));
    {
        let mut control = app.world_mut().resource_mut::<SimControl>();
        control.paused = false;
        control.lockstep = true;
    }
    for _ in 0..10 {
        app.update();
    }
    assert_eq!(step_index(&app), 0, "the clock moved a lockstep world");
    // Three frames at 24 fps: the world ends within one step of 3/24 s.
    let mut pacer = FramePacer::new(24.0);
    for _ in 0..3 {
        let n = pacer.steps_after_frame(dt);
        step_app(&mut app, n);
    }
    let t = step_index(&app) as f64 * dt;
    assert!(t <= 3.0 / 24.0 + 1e-12 && 3.0 / 24.0 - t < dt, "t = {t}");
    // Recording stopped: the clock drives the world again.
    app.world_mut().resource_mut::<SimControl>().lockstep = false;
    let before = step_index(&app);
    for _ in 0..5 {
        app.update();
    }
    assert!(
        step_index(&app) > before,
        "the clock no longer moves the world"
    );
}

/// A state that becomes non-finite (g = 1e300 m/s²: after the first kick v = 1e300 h, and
/// ½ m v² overflows) pauses the running app at that step with the world's message naming
/// the step and the body; nothing non-finite reaches the energy history.
#[test]
fn non_finite_state_pauses_the_app_with_step_and_body() {
    let text = r#"Scene(
        name: "overflow",
        gravity: (0.0, 0.0, -1e300),
        dt: 0.01,
        bodies: [Body(shape: Sphere(radius: 0.5), position: (0.0, 0.0, 1.0))],
    )"#;
    let scene = scene::parse_scene(text, "overflow.ron").unwrap();
    let sim = Simulation::from_scene(scene, None, None).unwrap();
    let mut app = headless_app(sim);
    let dt = app.world().resource::<Simulation>().world.dt;
    app.insert_resource(TimeUpdateStrategy::ManualDuration(Duration::from_secs_f64(
        dt,
    )));
    app.world_mut().resource_mut::<SimControl>().paused = false;
    for _ in 0..10 {
        app.update();
    }
    let control = app.world().resource::<SimControl>();
    assert!(control.paused, "the app kept running");
    let sim = app.world().resource::<Simulation>();
    let error = sim.error.as_deref().unwrap_or("no error shown");
    assert!(
        error.starts_with("step 1: body 0's kinetic energy became non-finite"),
        "{error}"
    );
    // Step 0 only: the failed step's sample is not recorded, and no later step ran.
    let history = app.world().resource::<EnergyHistory>();
    assert_eq!(history.samples.len(), 1);
    assert!(history.samples.iter().all(|s| s.total.is_finite()));
}
