//! The teaching panel: a right-hand egui panel beside the 3D view with the lessons,
//! presentation mode, the collision microscope and compare mode.
//!
//! It is drawn before the UI plugin's panels, on its own root, and leaves its width in
//! [`TeachLayout::right`]: the UI plugin lays its panels and the 3D viewport out in the
//! rest of the window. With nothing open it is a narrow bar of toggles.

use super::compare::{CompareMode, CompareView, RUN_COLORS};
use super::lessons::Lessons;
use super::messages::{MicroscopeRequest, OpenLesson, StartComparison};
use super::microscope::{Microscope, last_row_of};
use super::plot::joules;
use super::present::Presentation;
use super::sets::UiSystems;
use super::sim_state::LabMode;
use super::simulation::Simulation;
use super::view::Selection;
use crate::dynamics::solver::{SolverKind, TraceRow};
use crate::microscope::ImpactRecord;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

/// Width the teaching panel takes from the window (logical pixels).
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct TeachLayout {
    pub right: f32,
}

/// Panel state that is not simulation state.
#[derive(Resource, Debug)]
pub struct TeachUiState {
    /// Solvers ticked for compare mode (order of [`SolverKind::ALL`]).
    pub compare_choice: [bool; 6],
    /// Whether the compare section is shown.
    pub compare_open: bool,
    /// Own parameters per solver (order of [`SolverKind::ALL`]); `None`: the runs share
    /// the Solver panel's parameters.
    pub compare_params: Option<Vec<crate::dynamics::solver::SolverParams>>,
}

impl Default for TeachUiState {
    fn default() -> Self {
        TeachUiState {
            compare_choice: [true, true, false, false, false, false],
            compare_open: false,
            compare_params: None,
        }
    }
}

pub struct TeachUiPlugin;

impl Plugin for TeachUiPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<TeachLayout>()
            .init_resource::<TeachUiState>()
            .add_systems(
                EguiPrimaryContextPass,
                teach_panel.in_set(UiSystems::OuterPanels),
            );
    }
}

/// Everything the teaching panel reads or changes.
#[derive(bevy::ecs::system::SystemParam)]
pub struct TeachParams<'w> {
    sim: Res<'w, Simulation>,
    lessons: ResMut<'w, Lessons>,
    present: ResMut<'w, Presentation>,
    micro: ResMut<'w, Microscope>,
    micro_requests: MessageWriter<'w, MicroscopeRequest>,
    compare: ResMut<'w, CompareMode>,
    open_lesson: MessageWriter<'w, OpenLesson>,
    start_comparison: MessageWriter<'w, StartComparison>,
    mode: Res<'w, State<LabMode>>,
    next_mode: ResMut<'w, NextState<LabMode>>,
    selection: Res<'w, Selection>,
    state: ResMut<'w, TeachUiState>,
    help: ResMut<'w, super::help::HelpOverlay>,
}

/// Lesson text for egui's default fonts, which lack the superscripts ⁺ and ⁻
/// (post-/pre-impact): written ^+ and ^− instead.
pub fn display_text(s: &str) -> String {
    s.replace('⁺', "^+").replace('⁻', "^−")
}

/// An energy difference: scientific notation below 1 mJ, else [`joules`].
pub fn joules_small(v: f64) -> String {
    if v == 0.0 {
        "0 J".into()
    } else if v.abs() < 1e-3 {
        format!("{v:.2e} J")
    } else {
        joules(v)
    }
}

const RED: egui::Color32 = egui::Color32::from_rgb(200, 30, 30);
const GREEN: egui::Color32 = egui::Color32::from_rgb(30, 130, 40);

pub(crate) fn teach_panel(
    mut contexts: EguiContexts,
    mut t: TeachParams,
    mut layout: ResMut<TeachLayout>,
) -> Result {
    let ctx = contexts.ctx_mut()?.clone();
    let want = t.present.text_scale();
    let mut root = egui::Ui::new(
        ctx.clone(),
        "impulse-lab-teach-root".into(),
        egui::UiBuilder::new()
            .layer_id(egui::LayerId::background())
            .max_rect(ctx.viewport_rect()),
    );
    let active =
        t.lessons.current.is_some() || t.micro.open || t.compare.is_on() || t.state.compare_open;
    let panel = if !active {
        egui::Panel::right("teach_bar").exact_size(150.0 * want)
    } else if t.present.enlarged() {
        // At most PANEL_FRACTION of the window: the 3D view keeps ≥ 60 % of the width.
        let max = Presentation::PANEL_FRACTION * ctx.viewport_rect().width();
        egui::Panel::right("teach_present")
            .default_size(max.min(560.0))
            .max_size(max)
            .resizable(true)
    } else {
        egui::Panel::right("teach")
            .default_size(400.0)
            .resizable(true)
    };
    let rect = panel
        .show(&mut root, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| contents(ui, &mut t, active));
        })
        .response
        .rect;
    super::view::mark_region(&ctx, "teach", rect);
    layout.right = rect.width();
    Ok(())
}

fn contents(ui: &mut egui::Ui, t: &mut TeachParams, active: bool) {
    toolbar(ui, t, active);
    if let Some(e) = &t.lessons.error {
        ui.colored_label(RED, e);
    }
    if t.lessons.current.is_some() {
        ui.separator();
        lesson_section(ui, t);
    }
    if t.micro.open {
        ui.separator();
        egui::CollapsingHeader::new("Collision microscope")
            .default_open(true)
            .show(ui, |ui| microscope_section(ui, t));
    }
    if t.compare.is_on() || t.state.compare_open {
        ui.separator();
        egui::CollapsingHeader::new("Compare solvers")
            .default_open(true)
            .show(ui, |ui| compare_section(ui, t));
    }
}

fn toolbar(ui: &mut egui::Ui, t: &mut TeachParams, active: bool) {
    let tools = |ui: &mut egui::Ui| {
        let current = t
            .lessons
            .current
            .as_ref()
            .and_then(|l| l.name())
            .unwrap_or_else(|| "Lessons…".into());
        let mut chosen = None;
        egui::ComboBox::from_id_salt("lesson_choice")
            .selected_text(current)
            .height(600.0)
            .show_ui(ui, |ui| {
                ui.set_min_width(280.0);
                for e in &t.lessons.entries {
                    match &e.lesson {
                        Ok(l) => {
                            if ui
                                .add(
                                    egui::Button::selectable(false, display_text(&l.title))
                                        .right_text(egui::RichText::new(&e.name).small().weak()),
                                )
                                .on_hover_text(display_text(&l.summary))
                                .clicked()
                            {
                                chosen = Some(e.name.clone());
                            }
                        }
                        Err(err) => {
                            ui.add_enabled(false, egui::Button::new(&e.name))
                                .on_disabled_hover_text(err);
                        }
                    }
                }
            })
            .response
            .on_hover_text("Open a lesson: its scene, camera, solvers and text");
        if let Some(name) = chosen {
            t.open_lesson.write(OpenLesson(name));
        }
        // Modes are toggle buttons: framed, and filled while on.
        let toggle = |ui: &mut egui::Ui, on: bool, text: &str, hover: &str| {
            ui.add(egui::Button::new(text).selected(on).frame(true))
                .on_hover_text(hover)
                .clicked()
        };
        if toggle(
            ui,
            t.present.on,
            "Present",
            "Presentation mode: large text, developer panels hidden (F11 or P)",
        ) {
            t.present.toggle();
        }
        if toggle(
            ui,
            t.present.projector,
            "Projector",
            "Projector profile: light theme, large text and lines, a narrow side panel (gui --projector)",
        ) {
            t.present.projector = !t.present.projector;
        }
        if toggle(
            ui,
            t.micro.open,
            "Microscope",
            "The collision microscope: one impact, iteration by iteration",
        ) {
            t.micro.open = !t.micro.open;
        }
        let compare_on = t.compare.is_on() || t.state.compare_open;
        if toggle(
            ui,
            compare_on,
            "Compare",
            "The scene under 2-3 solvers from the same initial state",
        ) {
            t.state.compare_open = !compare_on;
            if compare_on {
                stop_comparing(t);
            }
        }
        if toggle(ui, t.help.open, "Help (F1)", "Keys and mouse (F1 or ?)") {
            t.help.open = !t.help.open;
        }
    };
    if active {
        ui.horizontal_wrapped(tools);
    } else {
        ui.vertical(tools);
    }
}

/// How the lesson starts the run, in words ("Starts paused (space plays), 0.1× (slow
/// motion), pauses at the next impact, camera follows body 1, a run of 0.5 s"); `None`
/// for a plain start.
fn start_summary(l: &crate::lesson::Lesson) -> Option<String> {
    let s = &l.start;
    let mut parts = Vec::new();
    if s.paused {
        parts.push("starts paused (space plays)".to_string());
    }
    if s.time_scale < 1.0 {
        parts.push(format!("{}× (slow motion)", s.time_scale));
    } else if s.time_scale > 1.0 {
        parts.push(format!("{}× (fast)", s.time_scale));
    }
    if s.pause_at_impact {
        parts.push("pauses at the next impact".into());
    }
    if let Some(b) = l.camera.as_ref().and_then(|c| c.follow) {
        parts.push(format!("camera follows body {b}"));
    }
    if let Some(d) = l.duration {
        parts.push(format!("a run of {d} s"));
    }
    if parts.is_empty() {
        return None;
    }
    let mut text = parts.join(", ");
    if let Some(first) = text.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    Some(text)
}

fn lesson_section(ui: &mut egui::Ui, t: &mut TeachParams) {
    let Some(l) = t.lessons.current.clone() else {
        return;
    };
    ui.horizontal_wrapped(|ui| {
        ui.heading(display_text(&l.title));
        if ui
            .small_button("Close")
            .on_hover_text("Close the lesson: back to the sandbox (the scene keeps running)")
            .clicked()
        {
            t.next_mode.set(LabMode::Sandbox);
        }
    });
    if t.sim.scene_path.as_deref() == Some(l.scene_path().as_path()) {
        ui.small(format!("scene: {}", t.sim.scene.name));
    } else {
        ui.horizontal_wrapped(|ui| {
            ui.colored_label(RED, "Another scene is open.");
            if ui.button("Reopen the lesson").clicked()
                && let Some(name) = l.name()
            {
                t.open_lesson.write(OpenLesson(name));
            }
        });
    }
    // Collapsible, closed by default when presenting: the 3D view and the compare
    // table matter more on a projector than the text the lecturer is saying.
    egui::CollapsingHeader::new("Lesson text")
        .id_salt(("lesson_text", l.name()))
        .default_open(!t.present.enlarged())
        .show(ui, |ui| {
            ui.label(egui::RichText::new("What it shows").strong());
            ui.label(display_text(&l.summary));
            ui.add_space(4.0);
            ui.label(egui::RichText::new("What to look at").strong());
            ui.label(display_text(&l.look_at));
            ui.add_space(4.0);
            ui.label(egui::RichText::new("Expected").strong());
            ui.label(display_text(&l.expected.figure));
            ui.label(
                egui::RichText::new(format!("Source: {}", display_text(&l.expected.source)))
                    .italics(),
            );
        });
    if !l.compare.is_empty() {
        ui.label(format!("Compare preset: {}", l.compare.join(", ")));
    }
    if let Some(start) = start_summary(&l) {
        ui.label(start)
            .on_hover_text("Set by the lesson when it opens; the run controls above change them");
    }
    ui.add_space(4.0);
    let running = t
        .lessons
        .check
        .as_ref()
        .is_some_and(|c| c.result().is_none());
    ui.horizontal(|ui| {
        if ui
            .add_enabled(!running, egui::Button::new("Check"))
            .on_hover_text(format!(
                "Run the lesson's check ({}) headless on a fresh world: measured against expected",
                l.check.name()
            ))
            .clicked()
        {
            t.lessons.start_check();
        }
        if let Some(c) = &t.lessons.check
            && running
        {
            ui.spinner();
            ui.label(format!(
                "running {:.0} s…",
                c.started.elapsed().as_secs_f64()
            ));
        }
    });
    let Some(c) = &t.lessons.check else {
        return;
    };
    if Some(&c.lesson) != l.name().as_ref() {
        return;
    }
    match c.result() {
        None => {}
        Some(Err(e)) => {
            ui.colored_label(RED, e);
        }
        Some(Ok(out)) => {
            // A figure a block: its name wraps, and its values wrap as whole items, so
            // that no number is ever cut at a projector's narrow panel.
            for f in &out.figures {
                ui.separator();
                ui.label(display_text(&f.name));
                ui.horizontal_wrapped(|ui| {
                    // The number as one item: moved to the next line, never broken.
                    let whole = |text: String| {
                        egui::Label::new(egui::RichText::new(text).monospace())
                            .wrap_mode(egui::TextWrapMode::Extend)
                    };
                    ui.label("measured");
                    ui.add(whole(format!("{:.4e}", f.measured)));
                    ui.label("expected");
                    ui.label(egui::RichText::new(display_text(&f.expected)).monospace());
                    if f.pass {
                        ui.colored_label(GREEN, "pass");
                    } else {
                        ui.colored_label(RED, "FAIL");
                    }
                });
            }
            if out.passed() {
                ui.colored_label(GREEN, "PASS");
            } else {
                ui.colored_label(RED, "FAIL");
            }
        }
    }
}

fn microscope_section(ui: &mut egui::Ui, t: &mut TeachParams) {
    let body = t.selection.body;
    ui.horizontal_wrapped(|ui| {
        let what = body.map_or("any body".to_string(), |b| format!("body {b}"));
        if ui
            .button("Catch next impact")
            .on_hover_text(format!(
                "Step until a contact of {what} gets a solver impulse (at most the max. steps), then pause"
            ))
            .clicked()
        {
            t.micro_requests.write(MicroscopeRequest::CatchNextImpact);
        }
        if ui
            .button("This step")
            .on_hover_text("Record the next step, impact or not, then pause")
            .clicked()
        {
            t.micro_requests.write(MicroscopeRequest::ThisStep);
        }
        ui.add(
            egui::DragValue::new(&mut t.micro.max_steps)
                .range(1..=100_000)
                .prefix("max steps "),
        );
    });
    if let Some((msg, ok)) = &t.micro.message {
        ui.colored_label(if *ok { GREEN } else { RED }, msg);
    }
    let line = t.present.line_width(1.5);
    let mu = t.sim.world.params.friction;
    let m = &mut *t.micro;
    let Some(r) = &m.record else {
        ui.label("Nothing recorded yet. Select a body to watch only its impacts.");
        return;
    };
    ui.label(format!(
        "step {}, t = {:.4} s, h = {:.3} ms, {} · {} contacts, {} rows, {} iterations",
        r.step,
        r.time,
        r.dt * 1e3,
        r.solver.name().to_uppercase(),
        r.contacts.len(),
        r.rows.len(),
        r.iterations.len()
    ));
    summary_grid(ui, r);
    let n = r.iterations.len();
    if n > 0 {
        m.iteration = m.iteration.min(n - 1);
        let k = m.iteration;
        ui.add(
            egui::Slider::new(&mut m.iteration, 0..=n - 1)
                .text(format!("iteration (s = {})", r.iterations[k])),
        )
        .on_hover_text(
            "The arrows in the 3D view show each contact's cumulative impulse up to this iteration",
        );
    }
    let k = m.iteration;
    egui::CollapsingHeader::new(format!("Contacts ({})", r.contacts.len()))
        .default_open(r.contacts.len() <= 4)
        .show(ui, |ui| {
            egui::ScrollArea::horizontal()
                .id_salt("contacts_scroll")
                .show(ui, |ui| contacts_grid(ui, r, k));
        });
    if r.solver == SolverKind::Etm {
        etm_plots(ui, r, k, line);
    }
    if matches!(r.solver, SolverKind::Ccp | SolverKind::Mdp) {
        cone_plots(ui, r, k, line, mu);
    }
    if !r.summary.resolution_order.is_empty() {
        let order: Vec<String> = r
            .summary
            .resolution_order
            .iter()
            .take(80)
            .map(|c| format!("c{c}"))
            .collect();
        ui.label(egui::RichText::new("Resolution order").strong())
            .on_hover_text("The contact of each impulse in the order applied (SQM pops the most-approaching contact first, paper 000 App. A)");
        ui.label(
            egui::RichText::new(format!(
                "{}{}",
                order.join(" → "),
                if r.summary.resolution_order.len() > 80 {
                    " …"
                } else {
                    ""
                }
            ))
            .monospace(),
        );
    }
    egui::CollapsingHeader::new(format!("Impulses ({} rows)", r.rows.len()))
        .default_open(r.solver != SolverKind::Etm)
        .show(ui, |ui| {
            egui::ScrollArea::horizontal()
                .id_salt("rows_scroll")
                .show(ui, |ui| rows_grid(ui, r, k));
        });
    let mut export = false;
    ui.horizontal(|ui| {
        ui.add(egui::TextEdit::singleline(&mut m.csv_path).desired_width(160.0));
        export = ui
            .button("Export CSV")
            .on_hover_text("One line per trace row, with the cumulative impulse at its contact")
            .clicked();
    });
    if export {
        m.message = Some(match m.export_csv() {
            Ok(n) => (format!("wrote {n} rows to {}", m.csv_path.trim()), true),
            Err(e) => (format!("export failed: {e}"), false),
        });
    }
}

fn summary_grid(ui: &mut egui::Ui, r: &ImpactRecord) {
    let s = &r.summary;
    egui::Grid::new("impact_summary")
        .num_columns(2)
        .striped(true)
        .show(ui, |ui| {
            let mut row = |k: &str, v: String, tip: &str| {
                ui.label(k).on_hover_text(tip);
                ui.monospace(v);
                ui.end_row();
            };
            row(
                "KE before K₀",
                format!("{:.6e} J", s.kinetic_before),
                "Kinetic energy after the velocity kick, before the solver",
            );
            row(
                "KE after",
                format!("{:.6e} J", s.kinetic_after),
                "Kinetic energy after the solver, before the contact pass",
            );
            if s.elastic_peak > 0.0 {
                row(
                    "elastic peak W_mc",
                    format!("{:.6e} J", s.elastic_peak),
                    "Largest stored elastic energy (maximum compression), paper 000 eqs. 62-64",
                );
            }
            if let Some(kmc) = s.kinetic_at_max_compression {
                row(
                    "KE at max. compression",
                    format!("{kmc:.6e} J"),
                    "Kinetic energy at the row of the elastic peak",
                );
                row(
                    "K₀ − K_mc",
                    format!("{:.6e} J", s.kinetic_before + s.elastic_before - kmc),
                    "Equals W_mc for one contact (paper 000 eq. 64)",
                );
            }
            row(
                "energy drift",
                format!(
                    "{:.3e} J ({:.2e} rel.)",
                    s.energy_drift, s.energy_drift_relative
                ),
                "max over rows |(K + W) − (K₀ + W₀)|: 0 for an exact conservative impact; includes physical dissipation otherwise",
            );
            if s.compression_iterations > 0 {
                row(
                    "compression increments",
                    s.compression_iterations.to_string(),
                    "Rows in ETM's compression stage",
                );
            }
        });
}

fn contacts_grid(ui: &mut egui::Ui, r: &ImpactRecord, k: usize) {
    let p = r.impulses_at(k);
    let v3 = |v: &crate::math::Vec3| format!("({:+.3}, {:+.3}, {:+.3})", v.x, v.y, v.z);
    egui::Grid::new("impact_contacts")
        .num_columns(5)
        .striped(true)
        .show(ui, |ui| {
            ui.strong("#");
            ui.strong("bodies");
            ui.strong("u_n before, after (m/s)");
            ui.strong("P(k) on a (N s)");
            ui.strong("normal");
            ui.end_row();
            for (i, c) in r.contacts.iter().enumerate() {
                ui.label(format!("c{i}"));
                let other = match (c.b, c.container) {
                    (Some(b), _) => format!("body {b}"),
                    (None, Some(w)) => format!("container {w}"),
                    _ => "—".into(),
                };
                ui.label(format!("{} / {other}", c.a))
                    .on_hover_text(format!("point {} m, gap {:+.2e} m", v3(&c.point), c.gap));
                ui.monospace(format!(
                    "{:+.3}, {:+.3}",
                    c.normal_velocity_before, c.normal_velocity_after
                ));
                ui.monospace(v3(&p[i]));
                ui.monospace(v3(&c.normal));
                ui.end_row();
            }
        });
}

/// Paper 000 Fig. 4: per increment, the relative normal velocity, the stored elastic
/// energy, the kinetic energy and their sum.
fn etm_plots(ui: &mut egui::Ui, r: &ImpactRecord, k: usize, width: f32) {
    let x_now = last_row_of(r, k).map(|i| i as f64);
    let series = |f: fn(&TraceRow) -> f64| -> Vec<[f64; 2]> {
        r.rows
            .iter()
            .enumerate()
            .map(|(i, row)| [i as f64, f(row)])
            .collect()
    };
    let h = 150.0 * ui.text_style_height(&egui::TextStyle::Body) / 14.0;
    ui.label(egui::RichText::new("Energy per increment (paper 000 Fig. 4)").strong());
    egui_plot::Plot::new("etm_energy")
        .height(h)
        .legend(egui_plot::Legend::default())
        .x_axis_label("row")
        .y_axis_formatter(|mark, _| joules(mark.value))
        .y_axis_min_width(56.0)
        .show(ui, |plot| {
            for (name, rgb, f) in [
                (
                    "kinetic K",
                    [214, 96, 30],
                    (|x| x.kinetic_energy) as fn(&TraceRow) -> f64,
                ),
                ("elastic W", [150, 70, 190], |x| x.elastic_total),
                ("K + W", [235, 235, 235], |x| x.total_energy),
            ] {
                plot.line(
                    egui_plot::Line::new(name, series(f))
                        .color(egui::Color32::from_rgb(rgb[0], rgb[1], rgb[2]))
                        .width(width),
                );
            }
            if let Some(x) = x_now {
                plot.vline(egui_plot::VLine::new("slider", x).color(egui::Color32::RED));
            }
        });
    ui.label(egui::RichText::new("Relative normal velocity u_n (m/s)").strong());
    egui_plot::Plot::new("etm_un")
        .height(h * 0.8)
        .x_axis_label("row")
        .y_axis_min_width(56.0)
        .show(ui, |plot| {
            plot.line(
                egui_plot::Line::new("u_n", series(|x| x.normal_velocity))
                    .color(egui::Color32::from_rgb(40, 110, 210))
                    .width(width),
            );
            if let Some(x) = x_now {
                plot.vline(egui_plot::VLine::new("slider", x).color(egui::Color32::RED));
            }
        });
}

/// CCP and MDP: the iterations and the friction-cone projection. Per contact c and
/// iteration k, the cumulative impulse P = P_n n + P_t gives the cone ratio
/// |P_t| / (μ |P_n|): below 1 inside the Coulomb cone (sticking), 1 on its boundary
/// (the projection of paper 002 eq. 27 / the sliding branch of paper 003 §3 put it
/// there). The second plot is the largest change of a contact's cumulative impulse per
/// iteration, the fixed-point iteration's convergence.
fn cone_plots(ui: &mut egui::Ui, r: &ImpactRecord, k: usize, width: f32, mu: f64) {
    const MAX_CONTACTS: usize = 8;
    let h = 130.0 * ui.text_style_height(&egui::TextStyle::Body) / 14.0;
    let ratio = |p: &crate::math::Vec3, n: &crate::math::Vec3| {
        let pn = p.dot(n);
        let pt = (p - pn * n).norm();
        (pn.abs() > 1e-12 && mu > 0.0).then(|| pt / (mu * pn.abs()))
    };
    ui.label(egui::RichText::new(format!("Friction cone: |P_t| / (μ |P_n|), μ = {mu}")).strong())
        .on_hover_text("Per contact, after each iteration: < 1 inside the Coulomb cone, = 1 projected onto its boundary");
    egui_plot::Plot::new("cone_ratio")
        .height(h)
        .include_y(0.0)
        .include_y(1.25)
        .legend(egui_plot::Legend::default())
        .x_axis_label("iteration")
        .y_axis_min_width(56.0)
        .show(ui, |plot| {
            for (c, contact) in r.contacts.iter().enumerate().take(MAX_CONTACTS) {
                let pts: Vec<[f64; 2]> = r
                    .cumulative
                    .iter()
                    .enumerate()
                    .filter_map(|(i, ps)| ratio(&ps[c], &contact.normal).map(|y| [i as f64, y]))
                    .collect();
                plot.line(egui_plot::Line::new(format!("c{c}"), pts).width(width));
            }
            plot.hline(egui_plot::HLine::new("cone boundary", 1.0).color(egui::Color32::GRAY));
            plot.vline(egui_plot::VLine::new("slider", k as f64).color(egui::Color32::RED));
        });
    let changes: Vec<[f64; 2]> = r
        .cumulative
        .iter()
        .enumerate()
        .map(|(i, ps)| {
            let prev = i.checked_sub(1).map(|j| &r.cumulative[j]);
            let d = ps
                .iter()
                .enumerate()
                .map(|(c, p)| prev.map_or(p.norm(), |q| (p - q[c]).norm()))
                .fold(0.0, f64::max);
            [i as f64, d]
        })
        .collect();
    ui.label(egui::RichText::new("Largest impulse change per iteration (N s)").strong());
    egui_plot::Plot::new("iteration_change")
        .height(h * 0.8)
        .include_y(0.0)
        .x_axis_label("iteration")
        .y_axis_min_width(56.0)
        .show(ui, |plot| {
            plot.line(
                egui_plot::Line::new("max |ΔP|", changes)
                    .color(egui::Color32::from_rgb(40, 110, 210))
                    .width(width),
            );
            plot.vline(egui_plot::VLine::new("slider", k as f64).color(egui::Color32::RED));
        });
}

fn rows_grid(ui: &mut egui::Ui, r: &ImpactRecord, k: usize) {
    const MAX_ROWS: usize = 200;
    let now = r.iterations.get(k).copied();
    egui::Grid::new("impact_rows")
        .num_columns(6)
        .striped(true)
        .show(ui, |ui| {
            for h in [
                "s",
                "stage",
                "contact",
                "|Δp| (N s)",
                "u_n after",
                "Δp on a",
            ] {
                ui.strong(h);
            }
            ui.end_row();
            for row in r.rows.iter().take(MAX_ROWS) {
                let text = |s: String| {
                    let t = egui::RichText::new(s).monospace();
                    if Some(row.iteration) == now {
                        t.color(egui::Color32::RED)
                    } else {
                        t
                    }
                };
                let p = row.impulse;
                ui.label(text(row.iteration.to_string()));
                ui.label(text(row.stage.to_string()));
                ui.label(text(format!("c{}", row.contact)));
                ui.label(text(format!(
                    "{:.3e}",
                    (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt()
                )));
                ui.label(text(format!("{:+.4}", row.normal_velocity)));
                ui.label(text(format!(
                    "({:+.2e}, {:+.2e}, {:+.2e})",
                    p[0], p[1], p[2]
                )));
                ui.end_row();
            }
        });
    if r.rows.len() > MAX_ROWS {
        ui.small(format!(
            "first {MAX_ROWS} of {} rows (Export CSV for all)",
            r.rows.len()
        ));
    }
}

fn compare_section(ui: &mut egui::Ui, t: &mut TeachParams) {
    if let Some(e) = &t.compare.error {
        ui.colored_label(RED, e);
    }
    if t.compare.is_on() {
        ui.horizontal(|ui| {
            ui.radio_value(&mut t.compare.view, CompareView::Overlay, "overlay")
                .on_hover_text("The other runs as tinted ghosts over the first");
            ui.radio_value(&mut t.compare.view, CompareView::Split, "side by side")
                .on_hover_text("One viewport per run, the same camera");
        });
    }
    let Some(c) = &t.compare.comparison else {
        ui.label("The scene from its initial state under 2 or 3 solvers, in lockstep:");
        ui.horizontal_wrapped(|ui| {
            for (i, k) in SolverKind::ALL.iter().enumerate() {
                ui.checkbox(&mut t.state.compare_choice[i], k.name());
            }
        });
        let chosen: Vec<SolverKind> = SolverKind::ALL
            .iter()
            .zip(t.state.compare_choice)
            .filter(|(_, on)| *on)
            .map(|(k, _)| *k)
            .collect();
        let mut own = t.state.compare_params.is_some();
        if ui
            .checkbox(&mut own, "own parameters per solver")
            .on_hover_text(
                "Off: every run uses the Solver panel's parameters. On: set e, μ and λ per solver",
            )
            .changed()
        {
            t.state.compare_params = own.then(|| vec![t.sim.world.params.clone(); 6]);
        }
        let choice = t.state.compare_choice;
        if let Some(params) = &mut t.state.compare_params {
            egui::Grid::new("compare_params")
                .num_columns(4)
                .show(ui, |ui| {
                    ui.label("");
                    ui.label("e");
                    ui.label("μ");
                    ui.label("λ (ETM)");
                    ui.end_row();
                    for (i, k) in SolverKind::ALL.iter().enumerate() {
                        if !choice[i] {
                            continue;
                        }
                        let p = &mut params[i];
                        ui.label(k.name());
                        ui.add(
                            egui::DragValue::new(&mut p.restitution)
                                .range(0.0..=1.0)
                                .speed(0.01),
                        );
                        ui.add(
                            egui::DragValue::new(&mut p.friction)
                                .range(0.0..=2.0)
                                .speed(0.01),
                        );
                        ui.add_enabled(
                            *k == SolverKind::Etm,
                            egui::DragValue::new(&mut p.lambda)
                                .range(1.0..=1000.0)
                                .speed(1.0),
                        );
                        ui.end_row();
                    }
                });
        }
        let ok = (2..=crate::compare::MAX_RUNS).contains(&chosen.len());
        if ui
            .add_enabled(ok, egui::Button::new("Start compare"))
            .on_disabled_hover_text("Tick 2 or 3 solvers")
            .on_hover_text("Restart the scene with the first solver; the others run as ghosts")
            .clicked()
        {
            let run_params = t.state.compare_params.as_ref().map(|all| {
                SolverKind::ALL
                    .iter()
                    .zip(all)
                    .filter(|(k, _)| chosen.contains(k))
                    .map(|(_, p)| p.clone())
                    .collect()
            });
            t.start_comparison.write(StartComparison {
                solvers: chosen,
                run_params,
                lesson_scene: None,
            });
        }
        return;
    };
    let swatch = |i: usize| {
        let [r, g, b] = RUN_COLORS[i % RUN_COLORS.len()];
        egui::Color32::from_rgb(r, g, b)
    };
    ui.horizontal_wrapped(|ui| {
        for (i, run) in c.runs.iter().enumerate() {
            let how = match (i, t.compare.view) {
                (_, CompareView::Split) => "view",
                (0, _) => "solid",
                _ => "ghost",
            };
            ui.colored_label(
                swatch(i),
                egui::RichText::new(format!("■ {} ({how})", run.label.to_uppercase())).strong(),
            );
        }
    });
    ui.label(format!("t = {:.3} s, step {}", c.time(), c.steps()));
    let d = c.divergence();
    ui.label(
        egui::RichText::new(format!(
            "Divergence from {}",
            c.runs[0].label.to_uppercase()
        ))
        .strong(),
    );
    let enlarged = t.present.enlarged();
    egui::ScrollArea::horizontal()
        .id_salt("divergence_scroll")
        .show(ui, |ui| {
            if enlarged {
                // Presenting: the table at 1.2× rather than 1.5× text, so that it fits a
                // side panel of a third of a 1024-pixel projector without scrolling.
                let k = 1.2 / Presentation::TEXT_SCALE;
                for style in [egui::TextStyle::Monospace, egui::TextStyle::Body] {
                    if let Some(f) = ui.style_mut().text_styles.get_mut(&style) {
                        f.size *= k;
                    }
                }
            }
            egui::Grid::new("divergence")
                .num_columns(4)
                .striped(true)
                .show(ui, |ui| {
                    ui.strong("run");
                    ui.strong("max |Δx|").on_hover_text(
                        "Largest body position difference from the first run, and the body (b)",
                    );
                    ui.strong("max Δθ")
                        .on_hover_text("Largest body orientation difference, and the body (b)");
                    ui.strong("ΔE").on_hover_text(
                        "Total energy minus the first run's (hover a value: relative)",
                    );
                    ui.end_row();
                    for (i, (run, dv)) in c.runs.iter().zip(&d).enumerate().skip(1) {
                        ui.colored_label(swatch(i), run.label.to_uppercase());
                        // Presenting: the body that differs most goes into the hover.
                        let body = |b: Option<usize>| match b {
                            Some(b) if !enlarged => format!(" b{b}"),
                            _ => String::new(),
                        };
                        let at = |b: Option<usize>| {
                            b.map_or("no body".to_string(), |b| format!("body {b}"))
                        };
                        ui.monospace(format!("{:.2e} m{}", dv.position, body(dv.position_body)))
                            .on_hover_text(at(dv.position_body));
                        ui.monospace(format!(
                            "{:.1}°{}",
                            dv.orientation.to_degrees(),
                            body(dv.orientation_body)
                        ))
                        .on_hover_text(at(dv.orientation_body));
                        ui.monospace(joules_small(dv.energy))
                            .on_hover_text(format!("{:+.2e} relative", dv.energy_relative));
                        ui.end_row();
                    }
                });
        });
    let width = t.present.line_width(1.5);
    ui.label(egui::RichText::new("Change of total energy since t = 0, per run").strong());
    let h = 160.0 * ui.text_style_height(&egui::TextStyle::Body) / 14.0;
    egui_plot::Plot::new("compare_energy")
        .height(h)
        .legend(egui_plot::Legend::default())
        .x_axis_label("t (s)")
        .y_grid_spacer(super::plot::nice_grid)
        .y_axis_formatter(|mark, _| joules_small(mark.value))
        .y_axis_min_width(56.0)
        .show(ui, |plot| {
            for (i, run) in c.runs.iter().enumerate() {
                let e0 = run.samples.first().map_or(0.0, |s| s.total);
                let stride = (run.samples.len() / 2000).max(1);
                let pts: Vec<[f64; 2]> = run
                    .samples
                    .iter()
                    .step_by(stride)
                    .chain(run.samples.last())
                    .map(|s| [s.time, s.total - e0])
                    .collect();
                plot.line(
                    egui_plot::Line::new(run.label.to_uppercase(), pts)
                        .color(swatch(i))
                        .style(super::plot::RUN_STYLES[i % 3].line_style())
                        .width(width),
                );
            }
        });
    if ui
        .button("Stop comparing")
        .on_hover_text("Keep running the first solver alone")
        .clicked()
    {
        stop_comparing(t);
        t.state.compare_open = false;
    }
}

/// Stop the comparison: leave [`LabMode::Compare`] for the sandbox, or, in a lesson,
/// stop the lesson's comparison and keep the lesson.
fn stop_comparing(t: &mut TeachParams) {
    if *t.mode.get() == LabMode::Compare {
        t.next_mode.set(LabMode::Sandbox);
    } else {
        t.compare.stop();
    }
}
