//! The energy plot: series, colours, axes, legend, hover read-out and markers.
//!
//! - Tick labels carry an SI prefix chosen from the visible range (`0 kJ, 2 kJ, 4 kJ`),
//!   on a 1-2-5 grid ([`nice_grid`]) so that even a short plot has labelled ticks.
//! - The axes are fixed by [`energy_bounds`]: the time axis spans at least the chosen
//!   window (or 1 s) from the first sample, the energy axis includes 0 and at least
//!   1 J, so a run at t = 0 shows 0 to 10 s and 0 to 1 J rather than a degenerate range.
//! - The legend ([`legend_strip`]) is drawn in the plot's panel, above the axes so it
//!   never hides a line, with each series' colour and line style; it stays in
//!   presentation mode, and a click on an entry hides or shows its series.
//! - Colours are the Okabe-Ito palette (Okabe & Ito 2008, "Color Universal Design"),
//!   told apart by colour-blind viewers, with line styles as a second cue; the total
//!   is drawn in the theme's strong text colour, so it reads on dark and light panels.
//! - [`PlotMarkers`] records where the method, a parameter or the time step changed and
//!   where the scene was reset; the plot draws them as labelled vertical lines.
//! - The range ([`PlotFollow`], [`fit_bounds`]): the plot follows the run, its axes set
//!   every frame to the plotted samples (with egui_plot's 5 % margin), never to the
//!   markers (a "reset" marker at t = 0 does not pin the time axis once the window has
//!   moved on); a pan or zoom stops following, a double-click ("fit") or a new run
//!   (reset, another scene) follows again.

use super::simulation::{Simulation, SimulationSystems};
use crate::dynamics::solver::{SolverKind, SolverParams};
use crate::energy::EnergySample;
use bevy::prelude::*;
use bevy_egui::egui;
use egui_plot::{GridInput, GridMark, LineStyle};
use std::ops::RangeInclusive;

/// How a series' colour is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesColor {
    /// A fixed colour: (on a dark panel, on a light panel).
    Rgb([u8; 3], [u8; 3]),
    /// The theme's strong text colour (white-ish on dark, black-ish on light).
    Text,
}

/// A plotted series: label, colour, line style, value of a sample given PE₀.
pub struct Series {
    pub name: &'static str,
    /// The legend's label.
    pub short: &'static str,
    pub color: SeriesColor,
    pub style: Style,
    pub value: fn(&EnergySample, f64) -> f64,
}

/// A line style that can live in a `const` (egui_plot's [`LineStyle`] holds floats).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    Solid,
    Dashed,
    Dotted,
}

impl Style {
    pub fn line_style(self) -> LineStyle {
        match self {
            Style::Solid => LineStyle::Solid,
            Style::Dashed => LineStyle::dashed_loose(),
            Style::Dotted => LineStyle::dotted_loose(),
        }
    }
}

// Okabe-Ito colours.
const VERMILLION: [u8; 3] = [213, 94, 0];
const ORANGE: [u8; 3] = [230, 159, 0];
const SKY_BLUE: [u8; 3] = [86, 180, 233];
const BLUE: [u8; 3] = [0, 114, 178];
const GREEN: [u8; 3] = [0, 158, 115];
const PURPLE: [u8; 3] = [204, 121, 167];
const YELLOW: [u8; 3] = [240, 228, 66];
/// Okabe-Ito yellow darkened for a light panel (the original has too little contrast on white).
const DARK_YELLOW: [u8; 3] = [150, 130, 0];

/// The plotted energy series (`pe0` is the potential energy at step 0, subtracted so
/// that the curves share a scale). The two dissipated energies are the ledger's sinks:
/// dashed; the residual (energy the method created or lost unaccounted) is dotted.
pub const SERIES: [Series; 9] = [
    Series {
        name: "kinetic (translational)",
        short: "KE translational",
        color: SeriesColor::Rgb(VERMILLION, VERMILLION),
        style: Style::Solid,
        value: |s, _| s.kinetic_translational,
    },
    Series {
        name: "kinetic (rotational)",
        short: "KE rotational",
        color: SeriesColor::Rgb(ORANGE, ORANGE),
        style: Style::Solid,
        value: |s, _| s.kinetic_rotational,
    },
    Series {
        name: "potential − PE₀",
        short: "PE − PE₀",
        color: SeriesColor::Rgb(SKY_BLUE, BLUE),
        style: Style::Solid,
        value: |s, pe0| s.potential - pe0,
    },
    Series {
        name: "elastic",
        short: "elastic",
        color: SeriesColor::Rgb(PURPLE, PURPLE),
        style: Style::Solid,
        value: |s, _| s.elastic,
    },
    Series {
        name: "dissipated (restitution)",
        short: "dissipated: restitution",
        color: SeriesColor::Rgb(BLUE, BLUE),
        style: Style::Dashed,
        value: |s, _| s.dissipated_restitution,
    },
    Series {
        name: "dissipated (friction)",
        short: "dissipated: friction",
        color: SeriesColor::Rgb(GREEN, GREEN),
        style: Style::Dashed,
        value: |s, _| s.dissipated_friction,
    },
    Series {
        name: "position projection",
        short: "projection",
        color: SeriesColor::Rgb(PURPLE, PURPLE),
        style: Style::Dotted,
        value: |s, _| s.projection,
    },
    Series {
        name: "total − PE₀",
        short: "total − PE₀",
        color: SeriesColor::Text,
        style: Style::Solid,
        value: |s, pe0| s.total - pe0,
    },
    Series {
        name: "residual (artificial)",
        short: "residual",
        color: SeriesColor::Rgb(YELLOW, DARK_YELLOW),
        style: Style::Dotted,
        value: |s, _| s.residual,
    },
];

/// Line styles of the runs in compare mode (run 0 solid), a cue besides their colours.
pub const RUN_STYLES: [Style; 3] = [Style::Solid, Style::Dashed, Style::Dotted];

impl SeriesColor {
    /// The colour on the panels of `visuals`.
    pub fn resolve(self, visuals: &egui::Visuals) -> egui::Color32 {
        match self {
            SeriesColor::Rgb(dark, light) => {
                let c = if visuals.dark_mode { dark } else { light };
                egui::Color32::from_rgb(c[0], c[1], c[2])
            }
            SeriesColor::Text => visuals.strong_text_color(),
        }
    }
}

/// `value` with an SI prefix for `unit`: the prefix is chosen from `magnitude` (the
/// largest absolute value on the axis, so every tick of an axis shares it), the
/// decimals from `step` (the tick spacing), e.g. `si_format(2500.0, 500.0, 5000.0, "J")`
/// is "2.5 kJ". Zero is "0 J" whatever the prefix.
pub fn si_format(value: f64, step: f64, magnitude: f64, unit: &str) -> String {
    if !value.is_finite() {
        return format!("{value} {unit}");
    }
    let (scale, prefix) = si_prefix(magnitude.abs().max(value.abs()));
    let v = value * scale;
    // Tiny values next to zero (rounding of the grid) are zero.
    if value == 0.0 || (step > 0.0 && value.abs() < 1e-9 * step) {
        return format!("0 {unit}");
    }
    let s = (step * scale).abs();
    let mut decimals = if s > 0.0 && s.is_finite() {
        (-(s.log10() + 1e-9).floor()).clamp(0.0, 6.0) as usize
    } else {
        3
    };
    // A value off the step's grid (or no step) gets the decimals it needs, up to 6.
    while decimals < 6 {
        let p = 10f64.powi(decimals as i32);
        if ((v * p).round() / p - v).abs() <= 1e-9 * v.abs().max(1.0) {
            break;
        }
        decimals += 1;
    }
    let text = format!("{:.*}", decimals, v);
    format!("{} {prefix}{unit}", text.replace('-', "−"))
}

/// (factor, prefix) with `magnitude × factor` in [1, 1000) for magnitudes from 1 n to
/// 1 T; 0 has no prefix.
fn si_prefix(magnitude: f64) -> (f64, &'static str) {
    const PREFIXES: [(f64, &str); 8] = [
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
        (1.0, ""),
        (1e-3, "m"),
        (1e-6, "µ"),
        (1e-9, "n"),
    ];
    if magnitude == 0.0 || !magnitude.is_finite() {
        return (1.0, "");
    }
    // Round first, so that 999.9996 J (shown as 1000 J) is 1 kJ.
    let m = magnitude * (1.0 + 1e-9);
    for (p, name) in PREFIXES {
        if m >= p {
            return (1.0 / p, name);
        }
    }
    (1e9, "n")
}

/// The y-axis formatter of an energy plot (J with SI prefixes).
pub fn joule_ticks(mark: GridMark, range: &RangeInclusive<f64>) -> String {
    let magnitude = range.start().abs().max(range.end().abs());
    si_format(mark.value, mark.step_size, magnitude, "J")
}

/// The x-axis formatter of a time axis (s; ms below 1 s of range).
pub fn second_ticks(mark: GridMark, range: &RangeInclusive<f64>) -> String {
    let magnitude = range.start().abs().max(range.end().abs());
    if magnitude >= 1.0 {
        // Seconds without prefix: 120 s, not 0.12 ks.
        let decimals = (-(mark.step_size.log10() + 1e-9).floor()).clamp(0.0, 6.0) as usize;
        format!("{:.*} s", decimals, mark.value).replace('-', "−")
    } else {
        si_format(mark.value, mark.step_size, magnitude, "s")
    }
}

/// Three nested grid step sizes (each a multiple of the one before, so the tick labels
/// of two levels never interleave) for a grid whose finest lines are at least `base`
/// apart (egui_plot's `base_step_size`: 8 points of the axis). The middle step is the
/// smallest 1, 2 or 5 × 10^k at least 4 × `base` (≥ 32 points: egui_plot labels ticks
/// at 20 points or more, fully from 30), so that some tick is labelled however short
/// the plot; the finer and coarser steps divide and multiply it (½-1-5, ½-1-5, ⅕-1-2
/// for mantissas 1, 2, 5).
pub fn nice_steps(base: f64) -> [f64; 3] {
    steps_labelled_at(base, 4.0)
}

/// As [`nice_steps`] with the middle step at least `factor` × `base`.
fn steps_labelled_at(base: f64, factor: f64) -> [f64; 3] {
    let base = if base.is_finite() && base > 0.0 {
        base
    } else {
        1.0
    };
    let want = factor * base;
    let decade = 10f64.powf(want.log10().floor());
    let (mantissa, s1) = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| (m, m * decade))
        .find(|(_, v)| *v >= want * (1.0 - 1e-9))
        .unwrap_or((10.0, 10.0 * decade));
    let (finer, coarser) = if mantissa == 5.0 {
        (5.0, 2.0)
    } else {
        (2.0, 5.0)
    };
    [s1 / finer, s1, s1 * coarser]
}

/// A grid spacer on the 1-2-5 sequence (egui_plot's default is powers of ten only,
/// which on a short plot leaves a single labelled tick, "0 J").
pub fn nice_grid(input: GridInput) -> Vec<GridMark> {
    grid_marks(input.bounds, nice_steps(input.base_step_size))
}

/// [`nice_grid`] for an x axis: egui_plot labels x ticks from 60 points apart (fully
/// from 80), so the middle step is at least 10 × the 8-point base.
pub fn nice_grid_x(input: GridInput) -> Vec<GridMark> {
    grid_marks(input.bounds, steps_labelled_at(input.base_step_size, 10.0))
}

/// The marks of `steps` within `(lo, hi)`, each value once with its largest step.
fn grid_marks((lo, hi): (f64, f64), steps: [f64; 3]) -> Vec<GridMark> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return Vec::new();
    }
    let mut marks: Vec<GridMark> = Vec::new();
    // Coarsest first: a value on several grids keeps the largest step.
    for &step in steps.iter().rev() {
        let first = (lo / step).ceil() as i64;
        let last = (hi / step).floor() as i64;
        if last - first > 1000 {
            continue;
        }
        for k in first..=last {
            let value = k as f64 * step;
            if !marks
                .iter()
                .any(|m| (m.value - value).abs() < 1e-6 * steps[0])
            {
                marks.push(GridMark {
                    value,
                    step_size: step,
                });
            }
        }
    }
    marks.sort_by(|a, b| a.value.total_cmp(&b.value));
    marks
}

/// The axes of an energy plot: `x` (s) and `y` (J), before egui_plot's 5 % margin.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AxisBounds {
    pub x: [f64; 2],
    pub y: [f64; 2],
}

/// Axes for samples from `t_first` to `t_last` (s) with values in `[y_min, y_max]` (J)
/// and a time `window` (s, 0 = everything): the time axis spans at least the window
/// (1 s when everything is shown) from the first sample, the energy axis includes 0 and
/// spans at least 1 J, or 1 % of the largest magnitude when that is smaller than 1 J but
/// not zero.
pub fn energy_bounds(t_first: f64, t_last: f64, window: f64, y_min: f64, y_max: f64) -> AxisBounds {
    let finite = |v: f64, d: f64| if v.is_finite() { v } else { d };
    let t0 = finite(t_first, 0.0);
    let t1 = finite(t_last, t0).max(t0);
    let span = if window > 0.0 { window } else { 1.0 };
    let x = [t0.max(t1 - span.max(t1 - t0)), t1.max(t0 + span)];
    let lo = finite(y_min, 0.0).min(0.0);
    let hi = finite(y_max, 0.0).max(0.0);
    let magnitude = lo.abs().max(hi.abs());
    let min_span = if magnitude == 0.0 {
        1.0
    } else {
        magnitude.min(1.0)
    };
    let y = if hi - lo >= min_span {
        [lo, hi]
    } else if lo < 0.0 && hi == 0.0 {
        [hi - min_span, hi]
    } else {
        [lo, lo + min_span]
    };
    AxisBounds { x, y }
}

/// The plotted range for samples from `t_first` to `t_last` with values in
/// `[y_min, y_max]` and time window `window` ([`energy_bounds`]), widened by 5 % of its
/// span on each side (egui_plot's auto-bounds margin). Markers play no part: the fit is
/// the data's.
pub fn fit_bounds(t_first: f64, t_last: f64, window: f64, y_min: f64, y_max: f64) -> AxisBounds {
    let b = energy_bounds(t_first, t_last, window, y_min, y_max);
    let widen = |[lo, hi]: [f64; 2]| {
        let m = 0.05 * (hi - lo);
        [lo - m, hi + m]
    };
    AxisBounds {
        x: widen(b.x),
        y: widen(b.y),
    }
}

/// Whether the energy plot follows the run (its range set to [`fit_bounds`] every
/// frame) or keeps the range the user panned or zoomed to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlotFollow {
    pub following: bool,
    /// The run the plot showed last ([`Simulation::run`]).
    run: Option<u64>,
}

impl Default for PlotFollow {
    fn default() -> Self {
        PlotFollow {
            following: true,
            run: None,
        }
    }
}

impl PlotFollow {
    /// Before drawing run `run`: a new run (a reset, another scene) is followed again.
    /// Returns whether the plot follows this frame.
    pub fn begin(&mut self, run: u64) -> bool {
        if self.run != Some(run) {
            self.run = Some(run);
            self.following = true;
        }
        self.following
    }

    /// After drawing: the plot showed `shown` where it set `set` (`None` when it did not
    /// follow); a range that moved was panned or zoomed by the user and stops the
    /// following, a double-click starts it again.
    pub fn end(&mut self, set: Option<AxisBounds>, shown: AxisBounds, double_clicked: bool) {
        if let Some(set) = set {
            let moved = |a: [f64; 2], b: [f64; 2]| {
                let tol = 1e-6 * (a[1] - a[0]).abs().max(1e-12);
                (a[0] - b[0]).abs() > tol || (a[1] - b[1]).abs() > tol
            };
            if moved(set.x, shown.x) || moved(set.y, shown.y) {
                self.following = false;
            }
        }
        if double_clicked {
            self.following = true;
        }
    }
}

/// A labelled vertical line in the energy plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    /// Simulated time (s).
    pub time: f64,
    pub label: String,
    /// What changed (a parameter's name, "method", "dt", "reset"): consecutive changes
    /// of the same thing at nearly the same time merge into one marker.
    key: String,
    /// The value before the first of the merged changes.
    from: String,
}

/// What the markers compare frame to frame.
#[derive(Clone, Debug, PartialEq)]
struct Watched {
    step_index: u64,
    time: f64,
    solver: SolverKind,
    params: SolverParams,
    dt: f64,
    scene: String,
}

/// Markers of the energy plot (module doc).
#[derive(Resource, Debug, Default)]
pub struct PlotMarkers {
    pub markers: Vec<Marker>,
    last: Option<Watched>,
}

/// Changes closer than this in simulated time (s) to the previous marker of the same
/// thing merge with it (a slider dragged while running).
const MERGE_WINDOW: f64 = 0.5;
/// Markers kept (oldest dropped).
const MAX_MARKERS: usize = 64;

impl PlotMarkers {
    /// Compare the simulation with the last frame and add markers for what changed.
    pub fn observe(&mut self, sim: &Simulation) {
        let w = &sim.world;
        let now = Watched {
            step_index: w.step_index,
            time: w.time,
            solver: w.solver_kind(),
            params: w.params.clone(),
            dt: w.dt,
            scene: sim.scene.name.clone(),
        };
        let Some(last) = self.last.replace(now.clone()) else {
            return;
        };
        if now.scene != last.scene {
            self.markers.clear();
            self.add(now.time, "scene", "", format!("scene: {}", now.scene));
            return;
        }
        if now.step_index < last.step_index || now.time < last.time {
            self.markers.clear();
            self.add(now.time, "reset", "", "reset".into());
        }
        if now.solver != last.solver {
            let from = last.solver.name().to_uppercase();
            self.add(now.time, "method", &from, now.solver.name().to_uppercase());
        }
        if now.dt != last.dt {
            let from = format!("{:.3}", last.dt * 1e3);
            self.add(now.time, "dt", &from, format!("{:.3} ms", now.dt * 1e3));
        }
        if now.params != last.params {
            for (key, before, after) in param_changes(&last.params, &now.params) {
                self.add(now.time, &key, &before, after);
            }
        }
    }

    /// Add a marker, or update the last one when it is the same `key` within
    /// [`MERGE_WINDOW`]. `to` is the new value; the label reads "key from -> to".
    fn add(&mut self, time: f64, key: &str, from: &str, to: String) {
        let label_of = |from: &str| {
            if from.is_empty() {
                to.clone()
            } else {
                format!("{key} {from} -> {to}")
            }
        };
        if let Some(m) = self.markers.last_mut()
            && m.key == key
            && !from.is_empty()
            && (time - m.time).abs() <= MERGE_WINDOW
        {
            m.label = label_of(&m.from.clone());
            return;
        }
        self.markers.push(Marker {
            time,
            label: label_of(from),
            key: key.into(),
            from: from.into(),
        });
        if self.markers.len() > MAX_MARKERS {
            self.markers.remove(0);
        }
    }
}

/// The solver parameters that differ: (name, before, after), read through serde so
/// that every field counts without listing them here.
fn param_changes(a: &SolverParams, b: &SolverParams) -> Vec<(String, String, String)> {
    let (Ok(serde_json::Value::Object(a)), Ok(serde_json::Value::Object(b))) =
        (serde_json::to_value(a), serde_json::to_value(b))
    else {
        return vec![("parameters".into(), String::new(), "changed".into())];
    };
    let show = |v: &serde_json::Value| match v {
        serde_json::Value::Number(n) => n
            .as_f64()
            .map_or_else(|| n.to_string(), |x| format!("{}", (x * 1e4).round() / 1e4)),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    b.iter()
        .filter(|(k, v)| a.get(*k) != Some(v))
        .map(|(k, v)| (param_name(k), a.get(k).map_or(String::new(), show), show(v)))
        .collect()
}

/// The short name of a parameter: its symbol in the parameter table
/// (`param_spec::PARAMS`), else its field name in words.
fn param_name(field: &str) -> String {
    match crate::dynamics::solver::param_spec::spec(field) {
        Some(spec) if !spec.symbol.is_empty() => spec.symbol.to_string(),
        _ => field.replace('_', " "),
    }
}

pub struct PlotMarkersPlugin;

impl Plugin for PlotMarkersPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<PlotMarkers>()
            .add_systems(Update, observe_markers.after(SimulationSystems));
    }
}

fn observe_markers(sim: Res<Simulation>, mut markers: ResMut<PlotMarkers>) {
    markers.observe(&sim);
}

/// The legend: per series a line sample in its colour and style and its short label;
/// clicking an entry flips `shown` for it (a hidden series is greyed and struck out).
pub fn legend_strip(ui: &mut egui::Ui, shown: &mut [bool; SERIES.len()], width: f32) {
    let visuals = ui.visuals().clone();
    ui.horizontal_wrapped(|ui| {
        ui.spacing_mut().item_spacing.x = 4.0;
        for (k, s) in SERIES.iter().enumerate() {
            let h = ui.text_style_height(&egui::TextStyle::Small);
            let (rect, sample) =
                ui.allocate_exact_size(egui::vec2(2.2 * h, h), egui::Sense::click());
            let color = if shown[k] {
                s.color.resolve(&visuals)
            } else {
                visuals.weak_text_color()
            };
            let stroke = egui::Stroke::new(width.max(1.5), color);
            let (a, b) = (rect.left_center(), rect.right_center());
            let painter = ui.painter();
            match s.style {
                Style::Solid => {
                    painter.line_segment([a, b], stroke);
                }
                Style::Dashed => {
                    painter.extend(egui::Shape::dashed_line(&[a, b], stroke, 0.45 * h, 0.3 * h));
                }
                Style::Dotted => {
                    painter.extend(egui::Shape::dotted_line(
                        &[a, b],
                        color,
                        0.4 * h,
                        stroke.width * 0.6,
                    ));
                }
            }
            let mut text = egui::RichText::new(s.short).small();
            text = if shown[k] {
                text.color(visuals.text_color())
            } else {
                text.weak().strikethrough()
            };
            let label = ui
                .add(egui::Label::new(text).sense(egui::Sense::click()))
                .on_hover_text(format!("{} (click: hide or show)", s.name));
            if sample.clicked() || label.clicked() {
                shown[k] = !shown[k];
            }
            ui.add_space(8.0);
        }
    });
}

/// What the plot marks on its time axis: the labelled changes (method, parameter,
/// reset) and the timeline's step when scrubbed back.
pub struct TimeMarks<'a> {
    pub markers: &'a [Marker],
    pub cursor: Option<f64>,
    /// The run shown ([`Simulation::run`]): a new one makes the plot follow again.
    pub run: u64,
}

/// One line of a plot: its legend name, colour, style and points `[t, value]` in time
/// order.
pub struct Curve {
    pub name: String,
    pub color: egui::Color32,
    pub style: Style,
    pub points: Vec<[f64; 2]>,
}

/// At most ~2,000 points of `points` (every k-th and the last): plotting more adds
/// nothing on screen.
pub fn thin<T: Copy>(points: impl ExactSizeIterator<Item = T> + Clone) -> Vec<T> {
    let n = points.len();
    let stride = (n / 2000).max(1);
    let last = points
        .clone()
        .last()
        .filter(|_| n > 1 && !(n - 1).is_multiple_of(stride));
    points.step_by(stride).chain(last).collect()
}

/// The energy ledger's `shown` series of `samples` (PE₀ = `pe0`) as curves.
pub fn ledger_curves(
    samples: &[EnergySample],
    pe0: f64,
    shown: &[bool; SERIES.len()],
    visuals: &egui::Visuals,
) -> Vec<Curve> {
    let thinned = thin(samples.iter());
    SERIES
        .iter()
        .zip(shown)
        .filter(|(_, on)| **on)
        .map(|(s, _)| Curve {
            name: s.name.to_string(),
            color: s.color.resolve(visuals),
            style: s.style,
            points: thinned
                .iter()
                .map(|x| [x.time, (s.value)(x, pe0)])
                .collect(),
        })
        .collect()
}

/// How a plot is labelled: its id (egui's memory of its range) and the quantity's unit
/// (SI prefixes are added to the ticks).
pub struct PlotAxes<'a> {
    pub id: &'a str,
    pub unit: &'static str,
    /// Leave this much height below the plot (a stacked plot below it).
    pub height: Option<f32>,
}

/// Draw `curves` with `marks`, lines `width` wide, time window `window` (s, 0 = all).
/// The range follows the run ([`PlotFollow`]) until the user pans or zooms; returns the
/// plot's rectangle.
pub fn curve_plot(
    ui: &mut egui::Ui,
    axes: PlotAxes<'_>,
    curves: Vec<Curve>,
    marks: TimeMarks<'_>,
    window: f64,
    width: f32,
) -> egui::Rect {
    let TimeMarks {
        markers,
        cursor,
        run,
    } = marks;
    let (mut y_min, mut y_max) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut t_first, mut t_last) = (f64::INFINITY, f64::NEG_INFINITY);
    for c in &curves {
        for p in &c.points {
            y_min = y_min.min(p[1]);
            y_max = y_max.max(p[1]);
        }
        if let (Some(a), Some(b)) = (c.points.first(), c.points.last()) {
            t_first = t_first.min(a[0]);
            t_last = t_last.max(b[0]);
        }
    }
    if !t_first.is_finite() {
        (t_first, t_last) = (0.0, 0.0);
    }
    // The time axis ends at the latest sample and spans the window before it.
    if window > 0.0 {
        t_first = t_first.max(t_last - window);
    }
    let fit = fit_bounds(t_first, t_last, window, y_min, y_max);
    let follow_id = egui::Id::new((axes.id, "follow"));
    let mut follow: PlotFollow = ui.data(|d| d.get_temp(follow_id)).unwrap_or_default();
    let set = follow.begin(run).then_some(fit);
    let visuals = ui.visuals().clone();
    let marker_color = visuals.weak_text_color();
    let ui_text_height = ui.text_style_height(&egui::TextStyle::Body) as f64;
    let unit = axes.unit;
    let hover_curves: Vec<(String, Vec<[f64; 2]>)> = curves
        .iter()
        .map(|c| (c.name.clone(), c.points.clone()))
        .collect();
    let mut plot = egui_plot::Plot::new(axes.id)
        .x_axis_label("t (s)")
        .y_axis_min_width(64.0)
        .x_grid_spacer(nice_grid_x)
        .y_grid_spacer(nice_grid)
        .y_axis_formatter(move |mark, range| {
            let magnitude = range.start().abs().max(range.end().abs());
            si_format(mark.value, mark.step_size, magnitude, unit)
        })
        .x_axis_formatter(second_ticks)
        // The range is ours (`PlotFollow`): egui_plot's auto bounds and double-click
        // reset would fit every item, the markers' lines and labels too.
        .auto_bounds(false)
        .allow_double_click_reset(false)
        .label_formatter(move |pos| hover_text(pos, &hover_curves, unit));
    if let Some(below) = axes.height {
        plot = plot.height((ui.available_height() - below).max(40.0));
    }
    let response = plot.show(ui, |plot| {
        if let Some(b) = set {
            plot.set_plot_bounds_x(b.x[0]..=b.x[1]);
            plot.set_plot_bounds_y(b.y[0]..=b.y[1]);
        }
        for c in curves {
            plot.line(
                egui_plot::Line::new(c.name, c.points)
                    .color(c.color)
                    .style(c.style.line_style())
                    .width(width),
            );
        }
        // The top of the axis (followed: the fit; else the range shown last).
        let top = match set {
            Some(b) => b.y[1],
            None => plot.plot_bounds().max()[1],
        };
        // Labels of markers close in time are staggered by a text line.
        let line = 1.2 * ui_text_height * plot.transform().dvalue_dpos()[1].abs();
        for (k, m) in markers.iter().enumerate() {
            let y = top - (k % 3) as f64 * line;
            plot.vline(
                egui_plot::VLine::new("", m.time)
                    .color(marker_color)
                    .style(LineStyle::dashed_dense())
                    .width(1.0),
            );
            plot.text(
                egui_plot::Text::new("", egui_plot::PlotPoint::new(m.time, y), m.label.as_str())
                    .color(visuals.text_color())
                    .anchor(egui::Align2::LEFT_TOP),
            );
        }
        // The timeline's step when scrubbed back (`app::timeline`).
        if let Some(t) = cursor {
            plot.vline(
                egui_plot::VLine::new("timeline", t)
                    .color(visuals.strong_text_color())
                    .width(1.5),
            );
        }
    });
    let shown = response.transform.bounds();
    follow.end(
        set,
        AxisBounds {
            x: [shown.min()[0], shown.max()[0]],
            y: [shown.min()[1], shown.max()[1]],
        },
        response.response.double_clicked(),
    );
    ui.data_mut(|d| d.insert_temp(follow_id, follow));
    response.response.rect
}

/// The hover read-out: the time and every curve's value at its point nearest the
/// pointer's time, the curve under the pointer first.
fn hover_text(
    pos: &egui_plot::HoverPosition,
    curves: &[(String, Vec<[f64; 2]>)],
    unit: &str,
) -> Option<String> {
    let (t, near) = match pos {
        egui_plot::HoverPosition::NearDataPoint {
            plot_name,
            position,
            ..
        } => (position.x, Some(*plot_name)),
        egui_plot::HoverPosition::Elsewhere { position } => (position.x, None),
    };
    let mut lines = vec![format!("t = {t:.4} s")];
    let mut rows: Vec<String> = Vec::new();
    for (name, points) in curves {
        let Some(v) = nearest(points, t) else {
            continue;
        };
        let row = format!("{name}: {}", unit_value(v, unit));
        if Some(name.as_str()) == near.filter(|n| !n.is_empty()) {
            rows.insert(0, format!("> {row}"));
        } else {
            rows.push(row);
        }
    }
    if rows.is_empty() {
        return None;
    }
    lines.extend(rows);
    Some(lines.join("\n"))
}

/// The value of the point of `points` (in time order) nearest time `t`.
pub fn nearest(points: &[[f64; 2]], t: f64) -> Option<f64> {
    if points.is_empty() {
        return None;
    }
    let i = points.partition_point(|p| p[0] < t).min(points.len() - 1);
    let i = if i > 0 && (points[i - 1][0] - t).abs() < (points[i][0] - t).abs() {
        i - 1
    } else {
        i
    };
    Some(points[i][1])
}

/// A value for a read-out: four significant digits with an SI prefix of `unit`; a
/// count (no unit) as an integer when it is one.
pub fn unit_value(v: f64, unit: &str) -> String {
    if unit == "J" {
        return joule_value(v);
    }
    if unit.is_empty() && v.fract() == 0.0 && v.abs() < 1e15 {
        return format!("{v:.0}").replace('-', "−");
    }
    if v == 0.0 {
        return format!("0 {unit}");
    }
    let (scale, prefix) = si_prefix(v.abs());
    let x = v * scale;
    let decimals = if x.abs() >= 100.0 {
        1
    } else if x.abs() >= 10.0 {
        2
    } else {
        3
    };
    format!("{:.*} {prefix}{unit}", decimals, x)
        .trim_end()
        .replace('-', "−")
}

/// An energy for a read-out: four significant digits with an SI prefix.
pub fn joule_value(v: f64) -> String {
    if v == 0.0 {
        return "0 J".into();
    }
    let (scale, prefix) = si_prefix(v.abs());
    let x = v * scale;
    let decimals = if x.abs() >= 100.0 {
        1
    } else if x.abs() >= 10.0 {
        2
    } else {
        3
    };
    format!("{:.*} {prefix}J", decimals, x).replace('-', "−")
}

/// An energy with an SI prefix: 1.5 kJ, −320 J, 2 MJ.
pub fn joules(v: f64) -> String {
    let a = v.abs();
    let (scale, unit) = if a >= 1e9 {
        (1e-9, "GJ")
    } else if a >= 1e6 {
        (1e-6, "MJ")
    } else if a >= 1e3 {
        (1e-3, "kJ")
    } else if a >= 1.0 || a == 0.0 {
        (1.0, "J")
    } else if a >= 1e-3 {
        (1e3, "mJ")
    } else {
        (1e6, "µJ")
    };
    format!("{} {unit}", (v * scale * 1e3).round() / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tick labels at the three scales the plot meets: a dropped sphere (J), a pile
    /// (kJ), the large packings (MJ); the prefix is the axis's, the decimals the step's.
    #[test]
    fn axis_formatter_prefixes_joules_at_every_scale() {
        assert_eq!(si_format(1.0, 0.5, 1.0, "J"), "1.0 J");
        assert_eq!(si_format(1.0, 1.0, 1.0, "J"), "1 J");
        assert_eq!(si_format(5000.0, 1000.0, 5000.0, "J"), "5 kJ");
        assert_eq!(si_format(2.0e6, 1.0e6, 2.0e6, "J"), "2 MJ");
        assert_eq!(si_format(2500.0, 500.0, 5000.0, "J"), "2.5 kJ");
        assert_eq!(si_format(-2.0e6, 5.0e5, 2.0e6, "J"), "−2.0 MJ");
        assert_eq!(si_format(0.0, 1000.0, 5000.0, "J"), "0 J");
        assert_eq!(si_format(0.002, 0.001, 0.004, "J"), "2 mJ");
        // Through egui_plot's formatter signature: the range sets the prefix.
        let mark = |value, step_size| GridMark { value, step_size };
        assert_eq!(joule_ticks(mark(1.0, 1.0), &(0.0..=3.0)), "1 J");
        assert_eq!(
            joule_ticks(mark(5000.0, 1000.0), &(-100.0..=6000.0)),
            "5 kJ"
        );
        assert_eq!(joule_ticks(mark(2.0e6, 1.0e6), &(0.0..=2.4e6)), "2 MJ");
        assert_eq!(joule_ticks(mark(500.0, 500.0), &(0.0..=2400.0)), "0.5 kJ");
    }

    /// At t = 0 (one sample, every energy 0) the axes are 0 … window s and 0 … 1 J,
    /// not a degenerate range egui_plot widens to ±thousands of seconds.
    #[test]
    fn axis_bounds_at_t_zero() {
        let b = energy_bounds(0.0, 0.0, 10.0, 0.0, 0.0);
        assert_eq!(b.x, [0.0, 10.0]);
        assert_eq!(b.y, [0.0, 1.0]);
        // "All" (window 0): one second.
        assert_eq!(energy_bounds(0.0, 0.0, 0.0, 0.0, 0.0).x, [0.0, 1.0]);
        // A run longer than the window scrolls: the last 10 s.
        assert_eq!(energy_bounds(5.0, 15.0, 10.0, -3.0, 4.0).x, [5.0, 15.0]);
        assert_eq!(energy_bounds(5.0, 15.0, 10.0, -3.0, 4.0).y, [-3.0, 4.0]);
        // Energies all negative: the axis ends at 0.
        assert_eq!(energy_bounds(0.0, 1.0, 10.0, -5e3, -1e3).y, [-5e3, 0.0]);
        // A millijoule run is not drowned in a 1 J axis.
        assert_eq!(energy_bounds(0.0, 1.0, 10.0, 0.0, 2e-3).y, [0.0, 2e-3]);
        // Non-finite input (a diverged run) still gives finite axes.
        let b = energy_bounds(0.0, f64::NAN, 10.0, f64::NEG_INFINITY, f64::NAN);
        assert!(b.x.iter().chain(&b.y).all(|v| v.is_finite()));
    }

    /// The grid has a labelled tick every 1, 2 or 5 × 10^k, and a 0 mark.
    #[test]
    fn nice_grid_labels_a_tick_on_a_short_plot() {
        assert_eq!(nice_steps(0.8), [1.0, 5.0, 10.0]);
        assert_eq!(nice_steps(1.0), [1.0, 5.0, 10.0]);
        assert_eq!(nice_steps(1.5), [5.0, 10.0, 50.0]);
        assert_eq!(nice_steps(3.0), [10.0, 20.0, 100.0]);
        assert_eq!(nice_steps(120.0), [100.0, 500.0, 1000.0]);
        // The plot that showed only "0 J": 1,450 kJ over 150 points. Labelled ticks
        // (≥ 30 points apart) every 500 kJ, not only at 0 and ±1 MJ.
        let base = 8.0 * 1.45e6 / 150.0;
        let [_, mid, _] = nice_steps(base);
        assert_eq!(mid, 5e5);
        assert!(mid / base * 8.0 >= 30.0);
        let marks = nice_grid(GridInput {
            bounds: (-0.3, 5.2),
            base_step_size: 0.9,
        });
        let values: Vec<f64> = marks.iter().map(|m| m.value).collect();
        assert_eq!(values, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(marks[0].step_size, 10.0);
        assert_eq!(marks[1].step_size, 1.0);
        assert_eq!(marks[5].step_size, 5.0);
    }

    #[test]
    fn read_out_values_have_four_digits() {
        assert_eq!(joule_value(1234.5), "1.234 kJ");
        assert_eq!(joule_value(-0.5), "−500.0 mJ");
        assert_eq!(joule_value(0.0), "0 J");
    }

    /// A parameter, the method and a reset each leave a marker where they happened.
    #[test]
    fn markers_follow_changes_of_method_parameters_and_reset() {
        let mut sim = Simulation::load("dda_ellipsoid_bounce", None).unwrap();
        let mut m = PlotMarkers::default();
        m.observe(&sim);
        assert!(m.markers.is_empty());
        for _ in 0..10 {
            sim.step().unwrap();
        }
        let t = sim.world.time;
        let e = sim.world.params.restitution;
        sim.world.params.restitution = 0.25;
        m.observe(&sim);
        // Dragging on within the merge window updates the same marker.
        sim.world.params.restitution = 0.3;
        m.observe(&sim);
        assert_eq!(m.markers.len(), 1);
        assert_eq!(m.markers[0].time, t);
        assert_eq!(m.markers[0].label, format!("e {e} -> 0.3"));
        let other = SolverKind::ALL
            .into_iter()
            .find(|k| *k != sim.world.solver_kind())
            .unwrap();
        sim.set_solver(other);
        m.observe(&sim);
        assert_eq!(m.markers.len(), 2);
        assert!(m.markers[1].label.starts_with("method "), "{:?}", m.markers);
        sim.reset().unwrap();
        m.observe(&sim);
        assert_eq!(m.markers.len(), 1);
        assert_eq!(m.markers[0].label, "reset");
        assert_eq!(m.markers[0].time, 0.0);
    }

    #[test]
    fn parameter_changes_are_named_as_in_the_panel() {
        let a = SolverParams::default();
        let mut b = a.clone();
        b.restitution = 0.25;
        let c = param_changes(&a, &b);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].0, "e");
        assert_eq!(c[0].2, "0.25");
    }

    /// After 100 s with a reset marker at t = 0, the 10 s window fills the plot: the
    /// time axis is the window plus 5 % each side, not 0 … 100 s (the markers are no
    /// input of the fit); the energy axis is the data's plus 5 %.
    #[test]
    fn fit_is_the_data_window_not_the_markers() {
        for t_last in [80.0, 100.0, 120.0] {
            let b = fit_bounds(t_last - 10.0, t_last, 10.0, -2.0, 8.0);
            let near = |a: [f64; 2], e: [f64; 2]| (a[0] - e[0]).abs() + (a[1] - e[1]).abs() < 1e-9;
            assert!(near(b.x, [t_last - 10.5, t_last + 0.5]), "{b:?}");
            assert!(near(b.y, [-2.5, 8.5]), "{b:?}");
            // The data take 10/11 of the time axis, not its right eighth.
            assert!(10.0 / (b.x[1] - b.x[0]) > 0.9);
        }
        // Every plotted point is inside the fit.
        let b = fit_bounds(3.0, 7.5, 0.0, 1.0, 2.0);
        assert!(b.x[0] < 3.0 && b.x[1] > 7.5 && b.y[0] <= 0.0 && b.y[1] > 2.0);
    }

    /// Following: a pan stops it, a new run (reset, another scene) and a double-click
    /// start it again; an unmoved range keeps it.
    #[test]
    fn the_plot_follows_the_run_after_a_reset() {
        let fit = fit_bounds(90.0, 100.0, 10.0, 0.0, 5.0);
        let panned = AxisBounds {
            x: [fit.x[0] - 3.0, fit.x[1] - 3.0],
            y: fit.y,
        };
        let mut f = PlotFollow::default();
        assert!(f.begin(1));
        f.end(Some(fit), fit, false);
        assert!(f.begin(1), "an unmoved range keeps following");
        f.end(Some(fit), panned, false);
        assert!(!f.begin(1), "a pan stops following");
        f.end(None, panned, false);
        assert!(!f.begin(1), "still panned");
        // Reset: a new run.
        assert!(f.begin(2), "a reset follows the run again");
        f.end(Some(fit), panned, false);
        assert!(!f.begin(2));
        f.end(None, panned, true);
        assert!(f.begin(2), "a double-click fits and follows again");
        // A zoom (the range shrinks about a point) also stops following.
        let zoomed = AxisBounds {
            x: [fit.x[0] + 1.0, fit.x[1] - 1.0],
            y: fit.y,
        };
        f.end(Some(fit), zoomed, false);
        assert!(!f.begin(2));
    }
}
