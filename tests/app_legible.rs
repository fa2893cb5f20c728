//! Headless tests of the app's legibility aids wired into a running app: the energy
//! plot's markers follow the method, a parameter and a reset as the plugin steps the
//! world; the colour range of colour by speed is fixed from the scene and does not
//! follow the bodies as they speed up (a colour keeps its meaning), and every body's
//! ramp position is its speed over that range.
#![cfg(feature = "app")]

mod common;

use bevy::prelude::*;
use common::app::sim;
use impulse_lab::app::colorbar::{ColorBarPlugin, ColorScale, ramp_position};
use impulse_lab::app::headless_app;
use impulse_lab::app::messages::SimCommand;
use impulse_lab::app::plot::{PlotMarkers, PlotMarkersPlugin};
use impulse_lab::app::render::{ColorMode, DisplaySettings};
use impulse_lab::app::simulation::Simulation;
use impulse_lab::dynamics::solver::SolverKind;

/// Take `n` steps, then one more frame for the systems that follow the stepping.
fn step_app(app: &mut App, n: u64) {
    common::app::step_app(app, n);
    app.update();
}

fn labels(app: &App) -> Vec<(f64, String)> {
    app.world()
        .resource::<PlotMarkers>()
        .markers
        .iter()
        .map(|m| (m.time, m.label.clone()))
        .collect()
}

#[test]
fn plot_markers_record_method_parameter_and_reset_where_they_happen() {
    let mut app = headless_app(sim("dda_ellipsoid_bounce"));
    app.add_plugins(PlotMarkersPlugin);
    app.update();
    step_app(&mut app, 30);
    let t1 = app.world().resource::<Simulation>().world.time;
    assert!(t1 > 0.0);
    let mut params = app.world().resource::<Simulation>().world.params.clone();
    params.friction = 0.9;
    app.world_mut().write_message(SimCommand::Params(params));
    app.update();
    step_app(&mut app, 600);
    let t2 = app.world().resource::<Simulation>().world.time;
    let other = {
        let s = app.world().resource::<Simulation>();
        SolverKind::ALL
            .into_iter()
            .find(|k| *k != s.world.solver_kind())
            .unwrap()
    };
    app.world_mut().write_message(SimCommand::Solver(other));
    app.update();
    let m = labels(&app);
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!(m[0].0, t1);
    assert!(
        m[0].1.starts_with("μ ") && m[0].1.ends_with("-> 0.9"),
        "{m:?}"
    );
    assert_eq!(m[1].0, t2);
    assert!(m[1].1.ends_with(&other.name().to_uppercase()), "{m:?}");
    app.world_mut().write_message(SimCommand::Reset);
    app.update();
    assert_eq!(labels(&app), [(0.0, "reset".to_string())]);
}

#[test]
fn colour_by_speed_keeps_a_fixed_range_while_bodies_speed_up() {
    let mut app = headless_app(sim("pour_mixed"));
    app.insert_resource(DisplaySettings {
        color_mode: ColorMode::BySpeed,
        ..Default::default()
    });
    app.add_plugins(ColorBarPlugin);
    app.update();
    let before = app.world().resource::<ColorScale>().clone();
    let [lo, hi] = before.speed.expect("range set from the scene");
    assert_eq!(lo, 0.0);
    // The bodies start near rest; the range is the free-fall speed over the pour's
    // height, so it must exceed every speed reached while they fall into the box.
    step_app(&mut app, 900);
    let sim = app.world().resource::<Simulation>();
    let fastest = sim
        .world
        .bodies
        .iter()
        .map(|b| b.velocity.norm())
        .fold(0.0, f64::max);
    assert!(
        fastest > 1.0 && fastest <= hi,
        "fastest {fastest} m/s, range 0…{hi}"
    );
    let after = app.world().resource::<ColorScale>();
    assert_eq!(after.speed, before.speed, "the range moved");
    // Whatever the decaying maximum is, the fixed range is what colours map through.
    assert_eq!(after.range(ColorMode::BySpeed, 1e3 * hi), (lo, hi));
    for b in &sim.world.bodies {
        let x = ramp_position(ColorMode::BySpeed, b.velocity.norm(), lo, hi);
        assert!((x as f64 - b.velocity.norm() / hi).abs() < 1e-6);
    }
}
