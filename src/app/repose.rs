//! The angle-of-repose panel (paper 000 §7.5, Figs. 11-14): runs the core's
//! [`ReposeTracker`] on the app's world and draws the eight fitted lines over the pile.
//!
//! "Run experiment" resets the scene and starts the scripted run: packing (at the
//! scene's `pack_friction` if it sets one), settling (K/ΔU below the threshold for the
//! hold time, or the time cap), the wall's removal, slumping (at the run's μ), settling
//! again, and the 8 × 16 measurement. "Remove wall now" ends packing early; "Measure
//! now" measures the pile as it stands in any phase. The measurement is drawn as the
//! eight least-squares lines (one per row of the grid, across the floor's long side) and
//! the highest point found in each cell.

use super::simulation::{SimControl, Simulation};
use super::view::to_render;
use crate::math::Vec3 as DVec3;
use crate::repose::{Phase, ROWS, ReposeConfig, ReposeTracker};
use bevy::prelude::*;
use bevy_egui::egui;

pub struct LabReposePlugin;

impl Plugin for LabReposePlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(
            Update,
            draw_measurement.after(super::simulation::SimulationSystems),
        );
    }
}

impl Simulation {
    /// Reset the scene (keeping the chosen solver and parameters) and start the
    /// experiment from its initial state.
    pub fn start_repose(&mut self, config: ReposeConfig) -> Result<(), String> {
        self.reset()?;
        let tracker = ReposeTracker::new(&mut self.world, config).map_err(|e| e.to_string())?;
        self.repose = Some(tracker);
        Ok(())
    }

    /// End packing now: the divider goes and the pile slumps.
    pub fn remove_repose_wall(&mut self) {
        if let Some(t) = &mut self.repose {
            t.remove_wall(&mut self.world);
            self.generation += 1;
        }
    }

    /// Measure the pile as it stands (the experiment's grid, or one set up from the
    /// scene's box if no experiment runs).
    pub fn measure_repose_now(&mut self) -> Result<(), String> {
        let m = match &self.repose {
            Some(t) => t.measure_now(&self.world).map_err(|e| e.to_string())?,
            None => {
                // The grid of the scene's initial state (the divider may be gone now).
                let grid = self.repose_grid.as_ref().map_err(Clone::clone)?;
                crate::repose::measure::measure(grid, &self.world.bodies, |_| false)?
            }
        };
        self.repose_measurement = Some(m);
        Ok(())
    }
}

/// The panel's section (inside the left panel).
pub fn section(ui: &mut egui::Ui, sim: &mut Simulation, control: &mut SimControl) {
    if let Err(why) = &sim.repose_grid {
        ui.label(format!("Not available for this scene: {why}"));
        return;
    }
    ui.horizontal(|ui| {
        if ui
            .button("▶ Run experiment")
            .on_hover_text(
                "Reset the scene, let it pack and settle, remove the wall, let it slump and settle, measure (paper 000 §7.5)",
            )
            .clicked()
        {
            match sim.start_repose(ReposeConfig::for_scene(&sim.scene)) {
                Ok(()) => control.paused = false,
                Err(e) => sim.error = Some(e),
            }
        }
        let packing = sim.repose.as_ref().is_some_and(|t| t.phase() == Phase::Packing);
        if ui
            .add_enabled(packing, egui::Button::new("Remove wall now"))
            .on_hover_text("End the packing phase now: the divider goes and the pile slumps")
            .clicked()
        {
            sim.remove_repose_wall();
        }
        if ui
            .button("Measure now")
            .on_hover_text("The 8 × 16 measurement of the pile as it stands")
            .clicked()
            && let Err(e) = sim.measure_repose_now()
        {
            sim.error = Some(e);
        }
    });
    if let Some(t) = &sim.repose {
        let c = &t.config;
        let time = t.phase_time(&sim.world);
        ui.label(match t.phase() {
            Phase::Packing if t.pack_friction() != t.friction() => format!(
                "Phase: packing behind the wall ({time:.1} s) at μ = {}; the run's μ = {} comes with the wall's removal",
                t.pack_friction(),
                t.friction()
            ),
            Phase::Packing => format!("Phase: packing behind the wall ({time:.1} s)"),
            Phase::Slumping => format!("Phase: wall removed, slumping ({time:.1} s)"),
            Phase::Done => "Phase: done, measured".to_string(),
        });
        if t.phase() != Phase::Done {
            ui.label(format!(
                "K/ΔU = {:.1e} (settled below {:.0e} for {} s; cap {} s)",
                t.ke_ratio(&sim.world),
                c.ke_ratio,
                c.hold,
                c.max_time
            ));
        }
        for (name, r) in [
            ("packing", t.packing()),
            ("slumping", t.result().map(|r| &r.slumping)),
        ] {
            if let Some(r) = r {
                ui.label(format!(
                    "{name}: {:.1} s, {}",
                    r.duration,
                    if r.settled {
                        "settled"
                    } else {
                        "time cap reached"
                    }
                ));
            }
        }
    }
    if let Some(m) = &sim.repose_measurement {
        ui.separator();
        ui.heading(format!("θ = {:.2}° ± {:.2}°", m.angle_deg, m.error_deg))
            .on_hover_text(
                "Mean of the eight row slopes; error = ½(θmax − θmin), as paper 000 §7.5 defines it",
            );
        ui.label(format!(
            "{} of {ROWS} rows fitted, {} empty cells",
            m.rows_fitted, m.empty_cells
        ));
        // What makes the experiment's angle doubtful (capped phase, standing face, lost
        // bodies), as the batch run prints it.
        if let Some(r) = sim.repose.as_ref().and_then(|t| t.result()) {
            for c in r.caveats() {
                ui.colored_label(
                    egui::Color32::from_rgb(230, 160, 40),
                    format!("Caveat: {c}"),
                );
            }
        }
        egui::Grid::new("repose_rows").striped(true).show(ui, |ui| {
            for (j, a) in m.row_angles_deg.iter().enumerate() {
                ui.label(format!("row {}", j + 1));
                ui.label(format!("{a:.2}°"));
                if j % 2 == 1 {
                    ui.end_row();
                }
            }
        });
    }
}

/// The eight fitted lines and the highest point of every cell.
fn draw_measurement(sim: Res<Simulation>, mut gizmos: Gizmos) {
    let Some(m) = &sim.repose_measurement else {
        return;
    };
    let grid = match (&sim.repose, &sim.repose_grid) {
        (Some(t), _) => &t.grid,
        (None, Ok(g)) => g,
        (None, Err(_)) => return,
    };
    let line = Color::srgb(0.95, 0.1, 0.1);
    let point = Color::srgb(1.0, 0.8, 0.0);
    let size = (grid.half_size[0].min(grid.half_size[1]) / 40.0) as f32;
    for (row, fit) in m.lines.iter().enumerate() {
        if let Some([a, b]) = grid.line_world(row, *fit) {
            gizmos.line(to_render(&a), to_render(&b), line);
        }
        for p in m.highest[row].iter().flatten() {
            let c = to_render(p);
            let d = to_render(&DVec3::new(0.0, 0.0, 1.0)) * size;
            gizmos.line(c - d, c + d, point);
            gizmos.sphere(Isometry3d::from_translation(c), size, point);
        }
    }
}
