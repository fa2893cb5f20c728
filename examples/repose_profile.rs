//! The height profile of a repose pile along the box, before the wall is removed and
//! every 2 s of the slump: for each of the 16 columns of paper 000's 8 × 16 grid
//! (§7.5), the mean over the 8 rows of the highest body point (m; 0 for a bare column).
//! It shows how tall the packed column stands, how far the slump runs out, and whether
//! the pile reaches the far wall (then the fitted line spans the whole floor). Each
//! slump line ends with the number of bodies asleep (none with `--no-sleep`) and, over
//! the 2 s before it, the time-averaged kinetic energy K and its rotational share
//! K_rot / K (a body sliding without turning has 0; a sphere rolling without slipping
//! 2/7 ≈ 0.29, from ½mv² + ½(2/5 m r²)(v/r)²).
//!
//! `cargo run --release --no-default-features --example repose_profile -- SCENE SOLVER MU [SEED] [--pack-friction MU|run] [--no-sleep]`,
//! e.g. `... -- repose_crosses sqm 0.4 75`; SCENE is a file or a bundled scene's name.

use impulse_lab::repose::{Phase, ReposeExperiment, ReposeMeasurement};
use std::process::ExitCode;

mod common;

/// The pile's height profile (`ReposeMeasurement::column_profile`), formatted.
fn profile(m: &ReposeMeasurement) -> String {
    m.column_profile()
        .iter()
        .map(|z| format!("{z:5.1}"))
        .collect()
}

fn run(mut e: ReposeExperiment, _: &[String]) -> Result<(), String> {
    let mut next = 0.0;
    // Sums of K_trans and K_rot over the slump's steps since the last line.
    let (mut kt_sum, mut kr_sum, mut n) = (0.0, 0.0, 0u32);
    println!("columns 1-16 from the packed side; mean highest point (m)");
    while e.phase() != Phase::Done {
        let before = e.phase();
        e.step().map_err(|e| e.to_string())?;
        if before == Phase::Packing && e.phase() == Phase::Slumping {
            let m = e.measure_now().map_err(|e| e.to_string())?;
            println!("packed after {:5.1} s       {}", e.world.time, profile(&m));
        }
        if e.phase() != Phase::Slumping {
            continue;
        }
        let (kt, kr, _) = e.world.energies();
        kt_sum += kt;
        kr_sum += kr;
        n += 1;
        if e.phase_time() >= next {
            next += 2.0;
            let m = e.measure_now().map_err(|e| e.to_string())?;
            let k = kt_sum + kr_sum;
            let share = if k > 0.0 { kr_sum / k } else { 0.0 };
            println!(
                "slump t = {:4.1} s {:5.1}°  {}  ({} asleep; mean K {:.2e} J, K_rot/K {:.2})",
                e.phase_time(),
                m.angle_deg,
                profile(&m),
                e.world.sleeping_bodies(),
                k / f64::from(n),
                share
            );
            (kt_sum, kr_sum, n) = (0.0, 0.0, 0);
        }
    }
    let r = e.result().ok_or("no result")?;
    let m = &r.measurement;
    println!(
        "measured        {:5.1}°  {}  (± {:.1}°)",
        m.angle_deg,
        profile(m),
        m.error_deg
    );
    Ok(())
}

fn main() -> ExitCode {
    common::main("repose_profile", run)
}
