//! Two checks on a repose pile once it is measured (paper 000, §7.5):
//!
//! - **The paper's node measure.** The paper fits its lines "through the highest nodes
//!   identified in each of the sixteen cells"; `repose` takes the highest body point
//!   over each cell, which also counts where an edge or face crosses the cell's
//!   boundary (`repose::measure`, step 2). Here each cell gets only the highest vertex
//!   lying in it (a cube's 8 corners, a cross's bars' 24 arm-end corners, a sphere's
//!   top), and the same fit (`measure::from_highest`). It prints both angles and both
//!   profiles (per column, the mean over the 8 rows of the highest point; 0 for a bare
//!   column).
//! - **Interlocking.** Of the pairs of bodies in contact (gap ≤ 1 mm), the share that
//!   touch with two normals more than 45° apart: an arm seated in another cross's
//!   notch touches both of its faces (normals 90° apart), whereas two convex bodies
//!   touch along one normal. It also prints the pairs in contact per body.
//!
//! `cargo run --release --no-default-features --example repose_census -- SCENE SOLVER MU [SEED] [--pack-friction MU|run] [--no-sleep]`,
//! e.g. `... -- repose_crosses sqm 0.4 75`; SCENE is a file or a bundled scene's name.

use impulse_lab::math::Vec3;
use impulse_lab::repose::measure::from_highest;
use impulse_lab::repose::{COLUMNS, Phase, ROWS, ReposeExperiment, ReposeMeasurement};
use impulse_lab::shapes::Shape;
use std::collections::BTreeMap;
use std::process::ExitCode;

mod common;

/// A gap below this counts as touching (m).
const TOUCHING: f64 = 1e-3;

/// The paper's measure: the highest vertex (a sphere: its top) in each cell.
fn node_measure(e: &ReposeExperiment) -> ReposeMeasurement {
    let grid = &e.tracker.grid;
    let mut highest: [[Option<Vec3>; COLUMNS]; ROWS] = [[None; COLUMNS]; ROWS];
    for (i, b) in e.world.bodies.iter().enumerate() {
        if b.is_static() || e.is_lost(i) {
            continue;
        }
        let nodes: Vec<Vec3> = match &b.shape {
            Shape::Sphere { radius } => vec![b.position + Vec3::z() * *radius],
            s => s
                .vertices()
                .unwrap_or_default()
                .iter()
                .map(|v| b.position + b.orientation * v)
                .collect(),
        };
        for p in nodes {
            for (row, cells) in highest.iter_mut().enumerate() {
                for (column, cell) in cells.iter_mut().enumerate() {
                    let [x0, x1, y0, y1] = grid.cell_rect(row, column);
                    let inside = (x0..x1).contains(&p.x) && (y0..y1).contains(&p.y);
                    if inside && cell.is_none_or(|h| p.z > h.z) {
                        *cell = Some(p);
                    }
                }
            }
        }
    }
    from_highest(grid, highest)
}

fn run(mut e: ReposeExperiment, _: &[String]) -> Result<(), String> {
    while e.phase() != Phase::Done {
        e.step().map_err(|e| e.to_string())?;
    }
    let surface = e.result().ok_or("no result")?.measurement.clone();
    let nodes = node_measure(&e);
    for (name, m) in [("surface", &surface), ("nodes", &nodes)] {
        println!(
            "{name:8} {:.2}° ± {:.2}° ({} bare cells)  profile {}",
            m.angle_deg,
            m.error_deg,
            m.empty_cells,
            m.column_profile().map(|z| format!("{z:5.1}")).concat()
        );
    }
    let mut normals: BTreeMap<(usize, usize), Vec<Vec3>> = BTreeMap::new();
    for c in e.world.detect() {
        if let Some(b) = c.b.filter(|_| c.gap <= TOUCHING) {
            normals
                .entry((c.a.min(b), c.a.max(b)))
                .or_default()
                .push(c.normal);
        }
    }
    let engaged = normals
        .values()
        .filter(|n| {
            n.iter()
                .any(|a| n.iter().any(|b| a.dot(b) < std::f64::consts::FRAC_1_SQRT_2))
        })
        .count();
    let bodies = e.world.bodies.iter().filter(|b| !b.is_static()).count();
    println!(
        "pairs in contact {} ({:.2} per body), touching along normals > 45° apart {engaged} ({:.1} %)",
        normals.len(),
        2.0 * normals.len() as f64 / bodies as f64,
        100.0 * engaged as f64 / normals.len().max(1) as f64
    );
    Ok(())
}

fn main() -> ExitCode {
    common::main("repose_census", run)
}
