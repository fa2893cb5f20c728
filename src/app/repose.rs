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

use super::messages::{ReposeCommand, SimCommand};
use super::simulation::{SimControl, Simulation};
use super::view::to_render;
use crate::math::Vec3 as DVec3;
use crate::repose::{Phase, Protocol, ROWS, ReposeConfig, ReposeTracker};
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

/// Which protocols the open scene can run, and why not (checked once per run).
#[derive(Clone, Default)]
struct Protocols {
    run: Option<u64>,
    /// Per protocol of [`PROTOCOLS`]: `Ok` or why it cannot run here.
    ready: Vec<Result<(), String>>,
    /// The protocol chosen (index into [`PROTOCOLS`]).
    chosen: usize,
}

/// The protocols in the order the panel offers them.
const PROTOCOLS: [(Protocol, &str, &str); 4] = [
    (
        Protocol::Wall,
        "wall removal",
        "Pack behind the divider, remove it, let the pile slump and settle, measure (paper 000 §7.5)",
    ),
    (
        Protocol::Tilt,
        "tilting base",
        "Pack behind the divider, tilt the box at 1°/s until the surface avalanches: the static angle (MercuryDPM's protocol)",
    ),
    (
        Protocol::Cylinder,
        "lifted cylinder",
        "Pack in the cylinder, lift it off, measure the conical heap (LIGGGHTS' protocol)",
    ),
    (
        Protocol::Drum,
        "rotating drum",
        "Pack in the drum inscribed in the box, turn it, average the free surface's dynamic angle over the turns",
    ),
];

/// The experiment's settings for `protocol` on `sim`'s scene (the CLI's defaults).
fn config_for(sim: &Simulation, protocol: Protocol, world: &crate::World) -> ReposeConfig {
    let mut config = ReposeConfig {
        protocol,
        ..ReposeConfig::for_scene(&sim.scene)
    };
    config.fit_cap_to_drum(world);
    config
}

impl Protocols {
    /// Check every protocol on the scene's initial state, once per run.
    fn refresh(&mut self, sim: &Simulation) {
        if self.run == Some(sim.run) {
            return;
        }
        self.run = Some(sim.run);
        if let Some(t) = &sim.repose
            && let Some(k) = PROTOCOLS
                .iter()
                .position(|(p, _, _)| *p == t.config.protocol)
        {
            self.chosen = k;
        }
        self.ready = match sim.scene.build_world() {
            Ok(world) => PROTOCOLS
                .iter()
                .map(|(p, _, _)| {
                    let mut w = world.clone();
                    let config = config_for(sim, *p, &w);
                    ReposeTracker::new(&mut w, config)
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
                .collect(),
            Err(e) => vec![Err(e.to_string()); PROTOCOLS.len()],
        };
        if self.ready.get(self.chosen).is_none_or(|r| r.is_err())
            && let Some(k) = self.ready.iter().position(Result::is_ok)
        {
            self.chosen = k;
        }
    }
}

/// Where the panel keeps [`Protocols`] (egui's memory).
const PROTOCOLS_ID: &str = "repose_protocols";

/// Whether the panel has something to offer on `sim`: an experiment running, or a
/// protocol the scene can run (checked once per run).
pub fn offered(ctx: &egui::Context, sim: &Simulation) -> bool {
    if sim.repose.is_some() {
        return true;
    }
    let id = egui::Id::new(PROTOCOLS_ID);
    let mut protocols: Protocols = ctx.data(|d| d.get_temp(id)).unwrap_or_default();
    protocols.refresh(sim);
    let any = protocols.ready.iter().any(Result::is_ok);
    ctx.data_mut(|d| d.insert_temp(id, protocols));
    any
}

/// The panel's section (inside the left panel).
pub fn section(
    ui: &mut egui::Ui,
    sim: &Simulation,
    control: &SimControl,
    commands: &mut Vec<SimCommand>,
) {
    let id = egui::Id::new(PROTOCOLS_ID);
    let mut protocols: Protocols = ui.data(|d| d.get_temp(id)).unwrap_or_default();
    protocols.refresh(sim);
    if !protocols.ready.iter().any(Result::is_ok) {
        let why = protocols
            .ready
            .first()
            .and_then(|r| r.clone().err())
            .unwrap_or_default();
        ui.label(format!(
            "No repose protocol can run on this scene (wall removal: {why})"
        ))
        .on_hover_text(
            PROTOCOLS
                .iter()
                .zip(&protocols.ready)
                .map(|((_, name, _), r)| match r {
                    Ok(()) => format!("{name}: ready"),
                    Err(e) => format!("{name}: {e}"),
                })
                .collect::<Vec<_>>()
                .join("\n"),
        );
        ui.data_mut(|d| d.insert_temp(id, protocols));
        return;
    }
    ui.horizontal_wrapped(|ui| {
        ui.label("Protocol");
        let (_, name, _) = PROTOCOLS[protocols.chosen];
        egui::ComboBox::from_id_salt("repose_protocol")
            .selected_text(name)
            .show_ui(ui, |ui| {
                for (k, (_, name, help)) in PROTOCOLS.iter().enumerate() {
                    let response = ui.add_enabled(
                        protocols.ready[k].is_ok(),
                        egui::Button::selectable(protocols.chosen == k, *name),
                    );
                    let response = match &protocols.ready[k] {
                        Ok(()) => response.on_hover_text(*help),
                        Err(why) => response
                            .on_disabled_hover_text(format!("{help}. Not for this scene: {why}")),
                    };
                    if response.clicked() {
                        protocols.chosen = k;
                    }
                }
            })
            .response
            .on_hover_text(PROTOCOLS[protocols.chosen].2);
    });
    let protocol = PROTOCOLS[protocols.chosen].0;
    ui.horizontal(|ui| {
        if ui
            .button("▶ Run experiment")
            .on_hover_text(
                "Reset the scene and run the chosen protocol: pack and settle, bring the pile to its slope, settle, measure",
            )
            .clicked()
        {
            let config = config_for(sim, protocol, &sim.world);
            commands.push(SimCommand::Repose(ReposeCommand::Start(config)));
        }
        let packing_behind_wall = sim.repose.as_ref().is_some_and(|t| {
            t.phase() == Phase::Packing && t.config.protocol == Protocol::Wall
        });
        if ui
            .add_enabled(packing_behind_wall, egui::Button::new("Remove wall now"))
            .on_hover_text("End the packing phase now: the divider goes and the pile slumps")
            .clicked()
        {
            commands.push(SimCommand::Repose(ReposeCommand::RemoveWall));
        }
        if ui
            .add_enabled(
                sim.repose.is_some() || sim.repose_grid.is_ok(),
                egui::Button::new("Measure now"),
            )
            .on_hover_text("The 8 × 16 measurement of the pile as it stands")
            .clicked()
        {
            commands.push(SimCommand::Repose(ReposeCommand::MeasureNow));
        }
    });
    ui.data_mut(|d| d.insert_temp(id, protocols));
    if let Some(t) = &sim.repose {
        let c = &t.config;
        let progress = t.progress(&sim.world);
        let mut stage = format!("{} ({})", progress.stage, t.config.protocol.name());
        if t.phase() == Phase::Packing && t.pack_friction() != t.friction() {
            stage += &format!(
                " at μ = {}; the run's μ = {} comes after packing",
                t.pack_friction(),
                t.friction()
            );
        }
        if t.tilt().is_some() {
            stage += &format!(", tilt {:.1}°", t.tilt_deg(&sim.world));
        }
        if t.drum().is_some() && t.phase() == Phase::Slumping {
            stage += &format!(", {:.2} turns", t.drum_turns(&sim.world));
        }
        ui.label(format!("Phase: {stage}"));
        if t.phase() != Phase::Done {
            ui.add(egui::ProgressBar::new(progress.fraction() as f32).text(format!(
                "{:.1} s of at most {:.1} s",
                progress.elapsed, progress.cap
            )))
            .on_hover_text(
                "Simulated time of this stage against its cap; a settle stage ends earlier once the pile rests",
            );
            let rate = control.stats.real_time_factor;
            let left = progress.left_at_most();
            ui.label(if rate > 0.0 && !control.paused {
                format!(
                    "At most {:.0} s of simulated time left: {} at {} real time",
                    left,
                    super::timeline::duration(left / rate),
                    super::sim_state::rate_text(rate)
                )
            } else {
                format!("At most {left:.0} s of simulated time left (paused)")
            });
            ui.label(format!(
                "K/ΔU = {:.1e} (settled below {:.0e} for {} s; cap {:.0} s)",
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

/// The drum of [`Protocol::Drum`] as an outline: its two end rims and eight lines along
/// its axis. The world holds the drum as 24 planes (a prism), which the renderer does
/// not draw; the simulation runs in the drum's frame, so the outline stands still while
/// gravity turns.
fn draw_drum(sim: &Simulation, gizmos: &mut Gizmos) {
    let Some(drum) = sim.repose.as_ref().and_then(|t| t.drum()) else {
        return;
    };
    let g = &drum.geometry;
    let colour = Color::srgb(0.35, 0.45, 0.6);
    let point = |a: f64, y: f64| {
        to_render(&(g.center + DVec3::new(g.radius * a.cos(), y, g.radius * a.sin())))
    };
    const SEGMENTS: usize = 48;
    for k in 0..SEGMENTS {
        let (a, b) = (
            std::f64::consts::TAU * k as f64 / SEGMENTS as f64,
            std::f64::consts::TAU * (k + 1) as f64 / SEGMENTS as f64,
        );
        for y in [-g.half_length, g.half_length] {
            gizmos.line(point(a, y), point(b, y), colour);
        }
        if k % (SEGMENTS / 8) == 0 {
            gizmos.line(point(a, -g.half_length), point(a, g.half_length), colour);
        }
    }
}

/// The drum's outline, the eight fitted lines and the highest point of every cell.
fn draw_measurement(sim: Res<Simulation>, mut gizmos: Gizmos) {
    draw_drum(&sim, &mut gizmos);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The panel offers the protocols each bundled repose scene can run, as the CLI's
    /// set-up decides: the box with a divider takes wall removal and the tilt, not the
    /// cylinder lift; the drum scene only the drum. The choice moves to one the scene
    /// can run.
    #[test]
    fn the_panel_offers_the_protocols_the_scene_can_run() {
        let ready = |name: &str| {
            let sim = Simulation::load(name, None).unwrap();
            let mut p = Protocols::default();
            p.refresh(&sim);
            let ok: Vec<bool> = p.ready.iter().map(Result::is_ok).collect();
            (ok, PROTOCOLS[p.chosen].0)
        };
        let (spheres, chosen) = ready("repose_spheres");
        assert_eq!(spheres[..3], [true, true, false]);
        assert_eq!(chosen, Protocol::Wall);
        let (drum, chosen) = ready("repose_drum");
        assert_eq!(drum, [false, false, false, true]);
        assert_eq!(chosen, Protocol::Drum);
    }
}
