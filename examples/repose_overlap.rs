//! Overlaps during a repose run: once a second of simulated time, the number of
//! body-body contacts per step, the share of them overlapping by more than 1 % of the
//! smaller body's size (`settle::body_size`: a cross's bar width c, a cube's edge, a
//! sphere's diameter), the deepest overlap relative to that size, and the fastest body.
//! It is how the wedged crosses of `repose_crosses` were found (see
//! `dynamics::contact_pass::speculative_gap`): before that fix, SQM at μ = 0.4 (seed 75)
//! showed a 0.76 c overlap in the second before t = 10.5 s, during packing; after it,
//! 0.012 c at most over the whole run.
//!
//! `cargo run --release --no-default-features --example repose_overlap -- SCENE SOLVER MU [SEED] [--pack-friction MU|run] [--no-sleep]`,
//! e.g. `... -- repose_crosses sqm 0.4 75`; SCENE is a file or a bundled scene's name.

use impulse_lab::repose::{Phase, ReposeExperiment};
use impulse_lab::settle::body_size;
use std::process::ExitCode;

mod common;

/// What one second of the run showed.
#[derive(Default)]
struct Window {
    steps: usize,
    contacts: usize,
    over_1_percent: usize,
    deepest: f64,
    fastest: f64,
}

fn run(mut e: ReposeExperiment, _: &[String]) -> Result<(), String> {
    println!("phase     t (s)  contacts/step  >1 %    deepest/size  fastest (m/s)");
    let mut w = Window::default();
    let mut next = 1.0;
    while e.phase() != Phase::Done {
        e.step().map_err(|e| e.to_string())?;
        let world = &e.world;
        for c in &world.contacts {
            let Some(b) = c.b else { continue };
            let size = body_size(&world.bodies[c.a].shape).min(body_size(&world.bodies[b].shape));
            let ratio = (-c.gap / size).max(0.0);
            w.contacts += 1;
            w.over_1_percent += usize::from(ratio > 0.01);
            w.deepest = w.deepest.max(ratio);
        }
        w.fastest = world
            .bodies
            .iter()
            .map(|b| b.velocity.norm())
            .fold(w.fastest, f64::max);
        w.steps += 1;
        if world.time >= next || e.phase() == Phase::Done {
            next += 1.0;
            println!(
                "{:9} {:5.1}  {:13.0}  {:5.2} %  {:12.4}  {:13.2}",
                e.phase().name(),
                world.time,
                w.contacts as f64 / w.steps as f64,
                100.0 * w.over_1_percent as f64 / w.contacts.max(1) as f64,
                w.deepest,
                w.fastest
            );
            w = Window::default();
        }
    }
    let r = e.result().ok_or("no result")?;
    println!(
        "measured {:.1}° ± {:.1}°",
        r.measurement.angle_deg, r.measurement.error_deg
    );
    Ok(())
}

fn main() -> ExitCode {
    common::main("repose_overlap", run)
}
