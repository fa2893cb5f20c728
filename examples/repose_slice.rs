//! A side view of a repose pile, when packed and after the slump: the bodies whose
//! centre lies in one row of paper 000's 8 × 16 grid (§7.5; the slice |y − y₀| < 1.375 m
//! about the centre line of the 22 m wide repose boxes: one row wide), drawn in the x-z
//! plane, each convex part (a cube, a cross's bar, a sphere) as its outline projected on
//! the plane. It shows how
//! the bodies packed (a random pack, or towers with empty shafts between them) and what
//! the slump left. It also prints the packed pile's mean height and packing fraction.
//!
//! `cargo run --release --no-default-features --example repose_slice -- SCENE SOLVER MU SEED OUT.png [--pack-friction MU|run] [--no-sleep]`,
//! e.g. `... -- repose_cubes sqm 0.4 75 slice.png`; SCENE is a file or a bundled scene's name.

use impulse_lab::body::RigidBody;
use impulse_lab::repose::{COLUMNS, Phase, ROWS, ReposeExperiment, ReposeMeasurement};
use impulse_lab::shapes::Shape;
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::process::ExitCode;

mod common;

/// The convex hull of points in the plane (Andrew's monotone chain), counter-clockwise.
fn hull(mut p: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    p.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    if p.len() < 3 {
        return p;
    }
    let cross = |o: (f64, f64), a: (f64, f64), b: (f64, f64)| {
        (a.0 - o.0) * (b.1 - o.1) - (a.1 - o.1) * (b.0 - o.0)
    };
    let mut h: Vec<(f64, f64)> = Vec::with_capacity(2 * p.len());
    for pass in 0..2 {
        let start = h.len();
        for &q in p.iter() {
            while h.len() >= start + 2 && cross(h[h.len() - 2], h[h.len() - 1], q) <= 0.0 {
                h.pop();
            }
            h.push(q);
        }
        h.pop();
        if pass == 0 {
            p.reverse();
        }
    }
    h
}

/// Outlines, in the x-z plane, of a body's convex parts.
fn outlines(b: &RigidBody) -> Vec<Vec<(f64, f64)>> {
    let xz = |v: &impulse_lab::math::Vec3| {
        let w = b.position + b.orientation * v;
        (w.x, w.z)
    };
    match &b.shape {
        Shape::Sphere { radius } => {
            let circle = (0..32)
                .map(|k| {
                    let t = k as f64 * std::f64::consts::TAU / 32.0;
                    (
                        b.position.x + radius * t.cos(),
                        b.position.z + radius * t.sin(),
                    )
                })
                .collect();
            vec![circle]
        }
        // A cross's vertices come as its three bars' 8 corners each.
        Shape::Cross { .. } => b
            .shape
            .vertices()
            .unwrap_or_default()
            .chunks(8)
            .map(|bar| hull(bar.iter().map(xz).collect()))
            .collect(),
        s => s
            .vertices()
            .map(|v| vec![hull(v.iter().map(xz).collect())])
            .unwrap_or_default(),
    }
}

/// (x, z) outlines of the bodies in the slice, with the body's index (for its colour).
type Snapshot = Vec<(usize, Vec<Vec<(f64, f64)>>)>;

fn snapshot(e: &ReposeExperiment) -> Snapshot {
    // The slice is one of the grid's 8 rows wide (2.75 m across a 22 m box).
    let (y0, half) = (
        e.tracker.grid.center.y,
        e.tracker.grid.half_size[1] / ROWS as f64,
    );
    e.world
        .bodies
        .iter()
        .enumerate()
        .filter(|(_, b)| !b.is_static() && (b.position.y - y0).abs() < half)
        .map(|(i, b)| (i, outlines(b)))
        .collect()
}

/// The packed pile's mean height above the floor and its packing fraction, over the
/// uphill half of the grid (8 × 8 cells: the repose scenes' wall stands at the box's
/// middle): the mean of those cells' highest points, and the bodies' volume over the
/// half's floor area × that height. A diagnostic of a packed pile only.
fn packing(e: &ReposeExperiment, m: &ReposeMeasurement) -> (f64, f64) {
    let z: Vec<f64> = (0..ROWS)
        .flat_map(|r| (0..COLUMNS / 2).filter_map(move |c| m.highest[r][c].map(|p| p.z)))
        .collect();
    let floor = e.tracker.grid.center.z;
    let height = z.iter().sum::<f64>() / z.len().max(1) as f64 - floor;
    let [hx, hy] = e.tracker.grid.half_size;
    let area = 2.0 * hx * hy;
    let volume: f64 = e
        .world
        .bodies
        .iter()
        .filter(|b| !b.is_static())
        .map(|b| b.shape.principal(1.0).mass)
        .sum();
    (height, volume / (area * height))
}

fn draw(out: &str, panels: &[(String, Snapshot)], x: std::ops::Range<f64>) -> Result<(), String> {
    plotters::style::register_font(
        "sans-serif",
        FontStyle::Normal,
        include_bytes!("../assets/fonts/DejaVuSans.ttf"),
    )
    .map_err(|_| "the bundled font cannot be read".to_string())?;
    let z_max = 40.0;
    let (w, h) = (900u32, 420 * panels.len() as u32);
    let mut rgb = vec![255u8; (w * h * 3) as usize];
    let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
    let e = |e: DrawingAreaErrorKind<_>| format!("drawing {out}: {e}");
    root.fill(&WHITE).map_err(e)?;
    for (area, (title, bodies)) in root.split_evenly((panels.len(), 1)).iter().zip(panels) {
        let mut chart = ChartBuilder::on(area)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(44)
            .build_cartesian_2d(x.clone(), 0.0..z_max)
            .map_err(e)?;
        chart
            .configure_mesh()
            .x_desc("x (m)")
            .y_desc("z (m)")
            .label_style(("sans-serif", 13))
            .disable_mesh()
            .draw()
            .map_err(e)?;
        for (i, parts) in bodies {
            let colour = Palette99::pick(*i).mix(0.85);
            for part in parts {
                chart
                    .draw_series(std::iter::once(Polygon::new(part.clone(), colour.filled())))
                    .map_err(e)?;
                let mut closed = part.clone();
                closed.extend(part.first());
                chart
                    .draw_series(std::iter::once(PathElement::new(closed, BLACK)))
                    .map_err(e)?;
            }
        }
    }
    root.present().map_err(e)?;
    drop(root);
    let file = std::fs::File::create(out).map_err(|e| format!("cannot create {out}: {e}"))?;
    impulse_lab::repose::plot::write_rgb_png(&rgb, w, h, std::io::BufWriter::new(file))
}

fn run(mut e: ReposeExperiment, rest: &[String]) -> Result<(), String> {
    let out = rest
        .first()
        .ok_or("usage: repose_slice SCENE SOLVER MU SEED OUT.png [--pack-friction MU|run]")?;
    let mut panels = Vec::new();
    while e.phase() != Phase::Done {
        let before = e.phase();
        e.step().map_err(|e| e.to_string())?;
        if before == Phase::Packing && e.phase() == Phase::Slumping {
            let m = e.measure_now().map_err(|e| e.to_string())?;
            let (height, fraction) = packing(&e, &m);
            println!(
                "packed after {:.1} s: mean height {height:.1} m, packing fraction {fraction:.2}",
                e.world.time
            );
            panels.push((
                format!(
                    "packed, t = {:.1} s: mean height {height:.1} m, packing fraction {fraction:.2}",
                    e.world.time
                ),
                snapshot(&e),
            ));
        }
    }
    let m = &e.result().ok_or("no result")?.measurement;
    println!("measured {:.1}° ± {:.1}°", m.angle_deg, m.error_deg);
    panels.push((
        format!(
            "after the slump, t = {:.1} s: {:.1}° ± {:.1}°",
            e.world.time, m.angle_deg, m.error_deg
        ),
        snapshot(&e),
    ));
    let (cx, hx) = (e.tracker.grid.center.x, e.tracker.grid.half_size[0]);
    draw(out, &panels, cx - hx..cx + hx)?;
    println!("wrote {out}");
    Ok(())
}

fn main() -> ExitCode {
    common::main("repose_slice", run)
}
