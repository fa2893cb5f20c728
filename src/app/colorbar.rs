//! The colour scale of colour-by-speed and colour-by-energy, its colour bar, and body
//! labels.
//!
//! The range is fixed unless the user asks for the automatic one, so that a colour
//! means the same speed or energy for the whole run: on the first frame of a scene in a
//! colour mode it is set from the scene ([`reference_values`]: the speed of the fastest
//! body after falling the scene's height), rounded up to 1, 2 or 5 × 10^k;
//! the Display panel sets it, or fits it to the current maximum. Speed maps linearly
//! from the lower to the upper end; kinetic energy logarithmically (four decades by
//! default). The colour bar is drawn over the bottom-left corner of the 3D view with
//! its unit and ticks.
//!
//! Body labels draw each body's index (as the inspector and the lessons name bodies)
//! at its centre, up to [`MAX_LABELS`] bodies nearest the camera.

use super::plot::si_format;
use super::sets::UiSystems;
use super::simulation::Simulation;
use super::view::{
    ColorMode, DisplaySettings, MainViewCamera, Selection, ViewRect, ramp, to_render,
};
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

/// The colour range of each mode and the label switch.
#[derive(Resource, Debug, Clone, PartialEq, Default)]
pub struct ColorScale {
    /// Follow the largest value seen (decaying slowly) instead of the fixed range.
    pub auto: bool,
    /// Speed range (m/s); `None` until set from the scene.
    pub speed: Option<[f64; 2]>,
    /// Kinetic energy range (J, lower end > 0); `None` until set from the scene.
    pub energy: Option<[f64; 2]>,
    /// Draw each body's index in the view.
    pub labels: bool,
    /// The scene the ranges were set for.
    scene: String,
}

/// Bodies labelled at most (the nearest to the camera).
pub const MAX_LABELS: usize = 300;
/// Decades of kinetic energy the automatic range spans below its maximum.
const ENERGY_DECADES: f64 = 4.0;

impl ColorScale {
    /// The (lower, upper) ends of the ramp for `mode`; `decaying_max` is the automatic
    /// range's upper end.
    pub fn range(&self, mode: ColorMode, decaying_max: f64) -> (f64, f64) {
        let auto_hi = decaying_max.max(1e-9);
        let fixed = if self.auto {
            None
        } else {
            match mode {
                ColorMode::BySpeed => self.speed,
                ColorMode::ByKineticEnergy => self.energy,
                ColorMode::ByBody => None,
            }
        };
        match (fixed, mode) {
            (Some([lo, hi]), _) => (lo, hi),
            (None, ColorMode::ByKineticEnergy) => (auto_hi * 10f64.powf(-ENERGY_DECADES), auto_hi),
            (None, _) => (0.0, auto_hi),
        }
    }

    /// Set the ranges from `sim` when they are unset or the scene changed.
    pub fn init_for(&mut self, sim: &Simulation) {
        if self.scene != sim.scene.name {
            // A new scene gets its own ranges (the first keeps a range set at startup).
            if !self.scene.is_empty() {
                self.speed = None;
                self.energy = None;
            }
            self.scene = sim.scene.name.clone();
        }
        if self.speed.is_none() || self.energy.is_none() {
            let (v, e) = reference_values(sim);
            self.speed.get_or_insert([0.0, v]);
            self.energy
                .get_or_insert([e * 10f64.powf(-ENERGY_DECADES), e]);
        }
    }

    /// Fit the current mode's range to the bodies now (upper end rounded up).
    pub fn fit(&mut self, mode: ColorMode, sim: &Simulation) {
        let bodies = sim.world.bodies.iter().filter(|b| !b.is_static());
        match mode {
            ColorMode::BySpeed => {
                let v = bodies.map(|b| b.velocity.norm()).fold(0.0, f64::max);
                self.speed = Some([0.0, nice_ceil(v.max(1e-3))]);
            }
            ColorMode::ByKineticEnergy => {
                let e = bodies
                    .map(|b| b.kinetic_energy_translational() + b.kinetic_energy_rotational())
                    .fold(0.0, f64::max);
                let hi = nice_ceil(e.max(1e-6));
                self.energy = Some([hi * 10f64.powf(-ENERGY_DECADES), hi]);
            }
            ColorMode::ByBody => {}
        }
    }
}

/// Where `value` falls on the ramp, in [0, 1]: linear for speed, logarithmic for
/// kinetic energy (`lo` > 0).
pub fn ramp_position(mode: ColorMode, value: f64, lo: f64, hi: f64) -> f32 {
    let x = match mode {
        ColorMode::ByKineticEnergy => {
            let lo = lo.max(1e-300);
            let hi = hi.max(lo * (1.0 + 1e-12));
            if value <= lo {
                0.0
            } else {
                (value / lo).log10() / (hi / lo).log10()
            }
        }
        _ => {
            if hi > lo {
                (value - lo) / (hi - lo)
            } else {
                0.0
            }
        }
    };
    if x.is_finite() {
        x.clamp(0.0, 1.0) as f32
    } else {
        0.0
    }
}

/// The smallest 1, 2 or 5 × 10^k ≥ `x` (x > 0).
pub fn nice_ceil(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return 1.0;
    }
    let decade = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|v| *v >= x * (1.0 - 1e-12))
        .unwrap_or(10.0 * decade)
}

/// The reference speed and kinetic energy of a scene: the speed of its fastest body
/// after falling the height the bodies span above the lowest of them and the ground,
/// v = √(v₀² + 2 g h), rounded up to 1, 2 or 5 × 10^k; the energy ½ m v² of the
/// heaviest body at that speed (or the largest now, if larger).
pub fn reference_values(sim: &Simulation) -> (f64, f64) {
    let w = &sim.world;
    let moving: Vec<_> = w.bodies.iter().filter(|b| !b.is_static()).collect();
    let g = w.gravity.norm();
    let z_max = moving
        .iter()
        .map(|b| b.position.z)
        .fold(f64::NEG_INFINITY, f64::max);
    let z_min = moving.iter().map(|b| b.position.z).fold(0.0, f64::min);
    let drop = if z_max.is_finite() {
        (z_max - z_min).max(0.0)
    } else {
        0.0
    };
    let fastest = moving.iter().map(|b| b.velocity.norm()).fold(0.0, f64::max);
    // Energy conservation: the fastest body falling the whole height, v² = v₀² + 2 g h.
    let v = nice_ceil((fastest * fastest + 2.0 * g * drop).sqrt().max(0.1));
    let m = moving.iter().map(|b| b.mass).fold(0.0, f64::max);
    let e_now = moving
        .iter()
        .map(|b| b.kinetic_energy_translational() + b.kinetic_energy_rotational())
        .fold(0.0, f64::max);
    let e = nice_ceil((0.5 * m * v * v).max(e_now).max(1e-6));
    (v, e)
}

pub struct ColorBarPlugin;

impl Plugin for ColorBarPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<ColorScale>()
            .add_systems(Update, init_scale)
            .add_systems(
                EguiPrimaryContextPass,
                draw_overlays.in_set(UiSystems::Overlays),
            );
    }
}

fn init_scale(sim: Res<Simulation>, display: Res<DisplaySettings>, mut scale: ResMut<ColorScale>) {
    if display.color_mode != ColorMode::ByBody || scale.scene != sim.scene.name {
        scale.init_for(&sim);
    }
}

/// The colour controls of the Display panel: range, automatic or fixed, labels.
pub fn display_controls(
    ui: &mut egui::Ui,
    mode: ColorMode,
    scale: &mut ColorScale,
    sim: &Simulation,
    decaying_max: f64,
) {
    ui.checkbox(&mut scale.labels, "body labels (index)")
        .on_hover_text(
            "Each body's index drawn at its centre, as the inspector and the lessons name bodies",
        );
    if mode == ColorMode::ByBody {
        return;
    }
    scale.init_for(sim);
    ui.horizontal(|ui| {
        ui.checkbox(&mut scale.auto, "automatic range")
            .on_hover_text(
                "Follow the largest value (decaying slowly): colours then drift in meaning",
            );
        if ui
            .add_enabled(!scale.auto, egui::Button::new("fit to now"))
            .on_hover_text("Set the range to the bodies' current maximum")
            .clicked()
        {
            scale.fit(mode, sim);
        }
    });
    let (lo, hi) = scale.range(mode, decaying_max);
    ui.add_enabled_ui(!scale.auto, |ui| match mode {
        ColorMode::BySpeed => {
            let [mut a, mut b] = scale.speed.unwrap_or([lo, hi]);
            ui.horizontal(|ui| {
                ui.label("from");
                ui.add(
                    egui::DragValue::new(&mut a)
                        .speed(0.05)
                        .range(0.0..=1e6)
                        .suffix(" m/s"),
                );
                ui.label("to");
                ui.add(
                    egui::DragValue::new(&mut b)
                        .speed(0.05)
                        .range(0.0..=1e6)
                        .suffix(" m/s"),
                );
            });
            if b > a {
                scale.speed = Some([a, b]);
            }
        }
        ColorMode::ByKineticEnergy => {
            let [mut a, mut b] = scale.energy.unwrap_or([lo, hi]);
            let (speed_a, speed_b) = (a.max(1e-9) * 0.02, b.max(1e-9) * 0.02);
            ui.horizontal(|ui| {
                ui.label("from");
                ui.add(
                    egui::DragValue::new(&mut a)
                        .speed(speed_a)
                        .range(1e-12..=1e15)
                        .custom_formatter(|v, _| si_format(v, 0.0, v, "J")),
                );
                ui.label("to");
                ui.add(
                    egui::DragValue::new(&mut b)
                        .speed(speed_b)
                        .range(1e-12..=1e15)
                        .custom_formatter(|v, _| si_format(v, 0.0, v, "J")),
                );
            });
            if b > a && a > 0.0 {
                scale.energy = Some([a, b]);
            }
        }
        ColorMode::ByBody => {}
    });
}

/// The colour bar (colour modes) and body labels, over the 3D view.
fn draw_overlays(
    mut contexts: EguiContexts,
    sim: Res<Simulation>,
    display: Res<DisplaySettings>,
    scale: Res<ColorScale>,
    selection: Res<Selection>,
    view: Res<ViewRect>,
    camera: Query<(&Camera, &GlobalTransform), MainViewCamera>,
) -> Result {
    let ctx = contexts.ctx_mut()?.clone();
    let rect = view.0;
    if rect.width() < 50.0 || rect.height() < 50.0 {
        return Ok(());
    }
    if scale.labels
        && let Ok((cam, cam_t)) = camera.single()
    {
        body_labels(&ctx, rect, &sim, cam, cam_t, selection.body);
    }
    if display.color_mode != ColorMode::ByBody {
        let (lo, hi) = scale.range(display.color_mode, display.color_scale);
        color_bar(&ctx, rect, display.color_mode, lo, hi, scale.auto);
    }
    Ok(())
}

fn body_labels(
    ctx: &egui::Context,
    rect: egui::Rect,
    sim: &Simulation,
    cam: &Camera,
    cam_t: &GlobalTransform,
    selected: Option<usize>,
) {
    let painter = ctx
        .layer_painter(egui::LayerId::new(
            egui::Order::Background,
            egui::Id::new("body_labels"),
        ))
        .with_clip_rect(rect);
    let eye = cam_t.translation();
    let mut visible: Vec<(f32, usize, egui::Pos2)> = sim
        .world
        .bodies
        .iter()
        .enumerate()
        .filter(|(_, b)| !b.is_static())
        .filter_map(|(i, b)| {
            let p = to_render(&b.position);
            let s = cam.world_to_viewport(cam_t, p).ok()?;
            let pos = egui::pos2(s.x, s.y);
            rect.contains(pos).then(|| (p.distance(eye), i, pos))
        })
        .collect();
    visible.sort_by(|a, b| a.0.total_cmp(&b.0));
    let font = egui::FontId::proportional(
        ctx.global_style().text_styles[&egui::TextStyle::Small]
            .size
            .max(11.0),
    );
    // Farthest first, so nearer labels are drawn over them.
    for &(_, i, pos) in visible.iter().take(MAX_LABELS).rev() {
        let galley = painter.layout_no_wrap(i.to_string(), font.clone(), egui::Color32::WHITE);
        let r = egui::Rect::from_center_size(pos, galley.size() + egui::vec2(6.0, 2.0));
        let fill = if Some(i) == selected {
            egui::Color32::from_rgb(200, 30, 30)
        } else {
            egui::Color32::from_black_alpha(170)
        };
        painter.rect_filled(r, 3.0, fill);
        painter.galley(r.min + egui::vec2(3.0, 1.0), galley, egui::Color32::WHITE);
    }
}

/// The colour bar: the ramp left to right, its ends and middle labelled.
fn color_bar(ctx: &egui::Context, view: egui::Rect, mode: ColorMode, lo: f64, hi: f64, auto: bool) {
    let (title, unit) = match mode {
        ColorMode::BySpeed => ("speed |v|", "m/s"),
        _ => ("kinetic energy (log scale)", "J"),
    };
    egui::Area::new(egui::Id::new("color_bar"))
        .order(egui::Order::Foreground)
        .fixed_pos(view.left_bottom() + egui::vec2(10.0, -10.0))
        .pivot(egui::Align2::LEFT_BOTTOM)
        .interactable(false)
        .show(ctx, |ui| {
            egui::Frame::popup(ui.style()).show(ui, |ui| {
                let text_h = ui.text_style_height(&egui::TextStyle::Body);
                let width = (12.0 * text_h).min(view.width() * 0.45);
                ui.label(
                    egui::RichText::new(if auto {
                        format!("{title} (automatic range)")
                    } else {
                        title.to_string()
                    })
                    .strong(),
                );
                let (bar, _) =
                    ui.allocate_exact_size(egui::vec2(width, 0.9 * text_h), egui::Sense::hover());
                let painter = ui.painter();
                const N: usize = 48;
                let mut mesh = egui::Mesh::default();
                for k in 0..=N {
                    let f = k as f32 / N as f32;
                    let c = ramp(f).to_srgba();
                    let color = egui::Color32::from_rgb(
                        (c.red * 255.0) as u8,
                        (c.green * 255.0) as u8,
                        (c.blue * 255.0) as u8,
                    );
                    let x = bar.left() + f * bar.width();
                    mesh.colored_vertex(egui::pos2(x, bar.top()), color);
                    mesh.colored_vertex(egui::pos2(x, bar.bottom()), color);
                    if k > 0 {
                        let i = (2 * k) as u32;
                        mesh.add_triangle(i - 2, i - 1, i);
                        mesh.add_triangle(i - 1, i, i + 1);
                    }
                }
                painter.add(egui::Shape::mesh(mesh));
                painter.rect_stroke(
                    bar,
                    0.0,
                    ui.visuals().widgets.noninteractive.fg_stroke,
                    egui::StrokeKind::Outside,
                );
                let mid = match mode {
                    ColorMode::BySpeed => 0.5 * (lo + hi),
                    _ => (lo * hi).sqrt(),
                };
                let fmt = |v: f64| match mode {
                    ColorMode::BySpeed => si_format(v, (hi - lo) / 2.0, hi, unit),
                    _ => si_format(v, 0.0, v, unit),
                };
                ui.horizontal(|ui| {
                    ui.set_width(width);
                    let third = width / 3.0;
                    ui.allocate_ui_with_layout(
                        egui::vec2(third, text_h),
                        egui::Layout::left_to_right(egui::Align::Center),
                        |ui| ui.label(fmt(lo)),
                    );
                    ui.allocate_ui_with_layout(
                        egui::vec2(third, text_h),
                        egui::Layout::centered_and_justified(egui::Direction::LeftToRight),
                        |ui| ui.label(fmt(mid)),
                    );
                    ui.allocate_ui_with_layout(
                        egui::vec2(third, text_h),
                        egui::Layout::right_to_left(egui::Align::Center),
                        |ui| ui.label(fmt(hi)),
                    );
                });
            });
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_positions_are_linear_in_speed_and_logarithmic_in_energy() {
        assert_eq!(ramp_position(ColorMode::BySpeed, 5.0, 0.0, 10.0), 0.5);
        assert_eq!(ramp_position(ColorMode::BySpeed, 20.0, 0.0, 10.0), 1.0);
        assert_eq!(ramp_position(ColorMode::BySpeed, -1.0, 0.0, 10.0), 0.0);
        // 1 J on 1 mJ … 1 kJ is the middle of six decades.
        let x = ramp_position(ColorMode::ByKineticEnergy, 1.0, 1e-3, 1e3);
        assert!((x - 0.5).abs() < 1e-6, "{x}");
        assert_eq!(
            ramp_position(ColorMode::ByKineticEnergy, 0.0, 1e-3, 1e3),
            0.0
        );
        assert_eq!(ramp_position(ColorMode::BySpeed, f64::NAN, 0.0, 1.0), 0.0);
    }

    #[test]
    fn fixed_range_does_not_follow_the_maximum() {
        let s = ColorScale {
            speed: Some([0.0, 5.0]),
            energy: Some([0.1, 1000.0]),
            ..Default::default()
        };
        assert_eq!(s.range(ColorMode::BySpeed, 37.0), (0.0, 5.0));
        assert_eq!(s.range(ColorMode::ByKineticEnergy, 37.0), (0.1, 1000.0));
        let auto = ColorScale { auto: true, ..s };
        assert_eq!(auto.range(ColorMode::BySpeed, 37.0), (0.0, 37.0));
    }

    #[test]
    fn nice_ceil_rounds_up_to_1_2_5() {
        assert_eq!(nice_ceil(0.7), 1.0);
        assert_eq!(nice_ceil(1.0), 1.0);
        assert_eq!(nice_ceil(1.2), 2.0);
        assert_eq!(nice_ceil(3.0), 5.0);
        assert_eq!(nice_ceil(7.1), 10.0);
        assert_eq!(nice_ceil(140.0), 200.0);
    }
}
