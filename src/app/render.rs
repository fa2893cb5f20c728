//! Rendering plugin: meshes for bodies and containers, lights, colouring, debug drawing.
//!
//! # Quality
//!
//! [`RenderQuality::Full`] draws smooth meshes with a material per body, 4× MSAA and a
//! shadow-casting key light. [`RenderQuality::Fast`] is for software rasterisers
//! (Mesa's lavapipe), where every fragment and every draw costs CPU time: no shadow
//! pass, no MSAA, low-poly meshes, and bodies that share one mesh handle per shape and
//! one material handle per colour (colours are quantised to a small palette), so that
//! Bevy's automatic batching draws each (mesh, material) group as one instanced batch.
//! Without `--quality` the app picks fast on a CPU adapter
//! (`RenderAdapterInfo::device_type == Cpu`) and full otherwise.
//!
//! # Render scale
//!
//! A software rasteriser's time goes mostly into fragments, whose number grows with the
//! area of the 3D view. The render scale s (per axis, [`RENDER_SCALES`]; by default
//! [`RenderQuality::default_scale`]: ½ at fast quality, 1 at full) draws the 3D view
//! into an off-screen image of round(s·w) × round(s·h) pixels, s² of the fragments, and
//! shows it stretched over the w × h view with bilinear filtering: the window's
//! [`ScaledViewCamera`] follows the app's camera, which then draws nothing itself but
//! keeps its viewport, so picking and every overlay work in window pixels as before.
//! The image is painted as the bottom layer of egui's pass, under every panel and
//! overlay, which stay at the window's resolution. Side-by-side comparison draws at
//! scale 1 (its cameras draw over the main one's viewport). Recordings scale the same
//! way and stretch the picture back to the frame size on the CPU
//! (`record::upscale`), before the caption is drawn.
//!
//! The core's world is z-up in metres, and so is the scene here: the camera's up vector
//! is +z, so positions and orientations pass to Bevy unchanged, converted from f64 to
//! f32 at this boundary only. Each body's mesh is built in its principal frame, the frame
//! its shape is stored in, so its transform is simply (position, orientation).

use super::sets::{SimulationSystems, UiSystems};
use super::simulation::Simulation;
pub use super::view::{ColorMode, DisplaySettings, ramp, to_core, to_render};
use super::view::{MainViewCamera, Selection};
use crate::collision::Contact;
use crate::container::{BOX_WALL_NAMES, Container};
use crate::math::{Quat as DQuat, Vec3 as DVec3};
use crate::shapes::Shape;
use bevy::asset::RenderAssetUsages;
use bevy::core_pipeline::tonemapping::{DebandDither, Tonemapping};
use bevy::mesh::{Indices, PrimitiveTopology};
use bevy::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// How much the renderer draws per frame (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RenderQuality {
    /// No shadows, no MSAA, low-poly meshes, shared meshes and materials.
    Fast,
    /// Shadows, 4× MSAA, smooth meshes, a material per body.
    #[default]
    Full,
}

impl RenderQuality {
    pub const ALL: [RenderQuality; 2] = [RenderQuality::Fast, RenderQuality::Full];

    pub fn name(self) -> &'static str {
        match self {
            RenderQuality::Fast => "fast",
            RenderQuality::Full => "full",
        }
    }

    /// The other quality.
    pub fn toggled(self) -> Self {
        match self {
            RenderQuality::Fast => RenderQuality::Full,
            RenderQuality::Full => RenderQuality::Fast,
        }
    }

    /// The render scale (per axis) used unless one is asked for: ½ at fast quality (a
    /// quarter of the fragments), 1 at full quality.
    pub fn default_scale(self) -> f32 {
        match self {
            RenderQuality::Fast => 0.5,
            RenderQuality::Full => 1.0,
        }
    }

    /// The MSAA of a 3D camera at this quality.
    pub fn msaa(self) -> Msaa {
        match self {
            RenderQuality::Fast => Msaa::Off,
            RenderQuality::Full => Msaa::Sample4,
        }
    }
}

impl std::str::FromStr for RenderQuality {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|q| q.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| format!("unknown render quality '{s}' (expected fast or full)"))
    }
}

impl std::fmt::Display for RenderQuality {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The render scales the app offers (the UI's choices; any value in
/// [`MIN_RENDER_SCALE`]..=1 is accepted by `--render-scale`).
pub const RENDER_SCALES: [f32; 4] = [0.25, 0.5, 0.75, 1.0];

/// The smallest render scale: below it the bodies of the default scene are a few
/// pixels wide.
pub const MIN_RENDER_SCALE: f32 = 0.25;

/// A render scale from the command line: a number in [`MIN_RENDER_SCALE`]..=1.
pub fn parse_render_scale(s: &str) -> Result<f32, String> {
    let v: f32 = s
        .trim()
        .parse()
        .map_err(|_| format!("render scale must be a number, got '{s}'"))?;
    if (MIN_RENDER_SCALE..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!(
            "render scale must be between {MIN_RENDER_SCALE} and 1, got {s}"
        ))
    }
}

/// The size a `w` × `h` view is drawn at with render scale `scale`: each side
/// round(scale · side), at least 1 pixel; scale 1 keeps the size.
pub fn scaled_size(w: u32, h: u32, scale: f32) -> (u32, u32) {
    let side = |n: u32| ((n as f32 * scale).round() as u32).clamp(1, n.max(1));
    (side(w), side(h))
}

/// The render quality in use and how it was chosen.
#[derive(Resource, Debug, Clone)]
pub struct RenderSettings {
    pub quality: RenderQuality,
    /// Whether the user chose the quality (`--quality`, the toggle); else it is picked
    /// from the adapter once known.
    pub chosen: bool,
    /// The adapter's name and whether it is a software (CPU) one, once known.
    pub adapter: Option<(String, bool)>,
    /// The render scale asked for (`--render-scale`, the UI); `None`: the quality's
    /// [`RenderQuality::default_scale`].
    pub scale: Option<f32>,
}

impl RenderSettings {
    /// The render scale in use (module doc).
    pub fn render_scale(&self) -> f32 {
        self.scale
            .unwrap_or_else(|| self.quality.default_scale())
            .clamp(MIN_RENDER_SCALE, 1.0)
    }
}

/// Wall-clock time of the render world's schedule in the last frame (extract commands to
/// cleanup: preparing, queueing, encoding, submitting and presenting), in nanoseconds;
/// written by the render world, read by the UI.
#[derive(Resource, Debug, Clone, Default)]
pub struct RenderTime(pub Arc<AtomicU64>);

impl RenderTime {
    /// The last frame's render time (s).
    pub fn seconds(&self) -> f64 {
        self.0.load(Ordering::Relaxed) as f64 * 1e-9
    }
}

/// When the render world's schedule started this frame.
#[derive(Resource, Default)]
struct RenderStart(Option<Instant>);

/// The key light (the one that casts shadows at full quality).
#[derive(Component, Debug)]
pub struct KeyLight;

/// Marks the mesh entity of body `0` (index into the world's bodies).
#[derive(Component, Debug, Clone, Copy)]
pub struct BodyVisual(pub usize);

/// Marks a container's mesh entity.
#[derive(Component, Debug)]
pub struct ContainerVisual;

/// Mesh cache and per-body materials of the current generation.
#[derive(Resource, Default)]
pub struct VisualState {
    generation: Option<u64>,
    /// The quality the visuals were built for.
    quality: Option<RenderQuality>,
    meshes: HashMap<(String, RenderQuality), Handle<Mesh>>,
    /// At full quality a material per body; at fast quality the shared material of each
    /// body's current colour.
    pub body_materials: Vec<Handle<StandardMaterial>>,
    base_colors: Vec<Color>,
    last_mode: ColorMode,
    /// Fast quality: the shared materials of the palette, by colour key.
    palette: HashMap<PaletteKey, Handle<StandardMaterial>>,
    /// Fast quality: each body's base (by-body) colour key.
    base_keys: Vec<PaletteKey>,
}

/// A colour of the fast palette: a shape hue and one of [`BODY_SHADES`] shades, a step
/// of the [`RAMP_STEPS`]-step ramp, or the static grey.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum PaletteKey {
    Body(u8, u8),
    Ramp(u8),
    Static,
}

/// Shades per shape kind in the fast palette (by-body colouring).
const BODY_SHADES: u32 = 4;
/// Steps of the speed / energy ramp in the fast palette.
const RAMP_STEPS: u32 = 16;

/// Renders with the given quality, or chooses it from the adapter when `None`, and with
/// the given render scale, or the quality's default when `None`.
#[derive(Default)]
pub struct LabRenderPlugin {
    pub quality: Option<RenderQuality>,
    pub scale: Option<f32>,
}

impl Plugin for LabRenderPlugin {
    fn build(&self, app: &mut App) {
        let render_time = RenderTime::default();
        if let Some(render_app) = app.get_sub_app_mut(bevy::render::RenderApp) {
            use bevy::render::{Render, RenderSystems};
            render_app
                .insert_resource(render_time.clone())
                .init_resource::<RenderStart>()
                .add_systems(
                    Render,
                    (
                        (|mut start: ResMut<RenderStart>| start.0 = Some(Instant::now()))
                            .before(RenderSystems::ExtractCommands),
                        (|start: Res<RenderStart>, time: Res<RenderTime>| {
                            if let Some(t) = start.0 {
                                time.0
                                    .store(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
                            }
                        })
                        .after(RenderSystems::Render)
                        .before(RenderSystems::Cleanup),
                    ),
                );
        }
        app.insert_resource(render_time)
            .insert_resource(RenderSettings {
                quality: self.quality.unwrap_or_default(),
                chosen: self.quality.is_some(),
                adapter: None,
                scale: self.scale,
            })
            .init_resource::<DisplaySettings>()
            .init_resource::<VisualState>()
            .insert_resource(ClearColor(Color::srgb(0.86, 0.88, 0.91)))
            .insert_resource(GlobalAmbientLight {
                color: Color::WHITE,
                brightness: 400.0,
                ..default()
            })
            .init_gizmo_group::<ContainerGizmos>()
            .add_systems(Startup, (spawn_lights, configure_container_gizmos))
            .add_systems(
                Update,
                (
                    choose_quality,
                    apply_quality,
                    rebuild_visuals,
                    sync_transforms,
                    update_colors,
                    draw_debug,
                )
                    .chain()
                    .after(SimulationSystems),
            );
    }
}

/// Pick the quality from the adapter (fast on a software one) unless one was asked for.
fn choose_quality(
    adapter: Option<Res<bevy::render::renderer::RenderAdapterInfo>>,
    mut settings: ResMut<RenderSettings>,
) {
    if settings.adapter.is_some() {
        return;
    }
    let Some(info) = adapter else {
        return;
    };
    // wgpu's `DeviceType::Cpu` (Bevy does not re-export the enum).
    let software = format!("{:?}", info.device_type) == "Cpu";
    settings.adapter = Some((info.name.clone(), software));
    if !settings.chosen {
        settings.quality = if software {
            RenderQuality::Fast
        } else {
            RenderQuality::Full
        };
        info!(
            "render quality {} ({} adapter {})",
            settings.quality,
            if software { "software" } else { "hardware" },
            info.name
        );
    }
}

/// The 3D cameras and egui's 2D camera.
type AnyCamera = Or<(With<Camera3d>, With<Camera2d>)>;

/// Shadows and MSAA of the current quality on the key light and every camera (egui's
/// 2D camera too: its multisampled target costs a software rasteriser a full-window
/// resolve per frame, and egui draws unsampled); the meshes and materials are rebuilt
/// when the quality changes.
fn apply_quality(
    mut commands: Commands,
    settings: Res<RenderSettings>,
    mut state: ResMut<VisualState>,
    cameras: Query<(Entity, Option<&Msaa>), AnyCamera>,
    views: Query<(Entity, &Tonemapping), With<Camera3d>>,
    mut key: Query<&mut DirectionalLight, With<KeyLight>>,
) {
    let q = settings.quality;
    for (e, msaa) in &cameras {
        if msaa != Some(&q.msaa()) {
            commands.entity(e).insert(q.msaa());
        }
    }
    let (tonemapping, dither) = view_colour(q);
    for (e, t) in &views {
        if *t != tonemapping {
            commands.entity(e).insert((tonemapping, dither));
        }
    }
    for mut light in &mut key {
        let shadows = q == RenderQuality::Full;
        if light.shadow_maps_enabled != shadows {
            light.shadow_maps_enabled = shadows;
        }
    }
    if state.quality.is_some_and(|built| built != q) {
        state.generation = None;
    }
}

/// Tone mapping and dithering at quality `q`. Fast: no tone mapping (a 3D lookup per
/// pixel) and no deband dithering; the colours are those of a display-referred renderer,
/// and the unlit surfaces show their base colours exactly.
fn view_colour(q: RenderQuality) -> (Tonemapping, DebandDither) {
    match q {
        RenderQuality::Fast => (Tonemapping::None, DebandDither::Disabled),
        RenderQuality::Full => (Tonemapping::default(), DebandDither::Enabled),
    }
}

fn spawn_lights(mut commands: Commands, sim: Res<Simulation>, settings: Res<RenderSettings>) {
    // One shadow cascade reaching past the scene: shadows show where bodies touch the
    // floor, at a quarter of the cost of Bevy's default four cascades (which matters
    // under software rendering).
    let reach = 4.0 * scene_extent(&sim);
    commands.spawn((
        KeyLight,
        DirectionalLight {
            illuminance: 9_000.0,
            shadow_maps_enabled: settings.quality == RenderQuality::Full,
            ..default()
        },
        bevy::light::CascadeShadowConfigBuilder {
            num_cascades: 1,
            maximum_distance: reach,
            ..default()
        }
        .build(),
        Transform::from_xyz(8.0, -5.0, 14.0).looking_at(Vec3::ZERO, Vec3::Z),
    ));
    commands.spawn((
        DirectionalLight {
            illuminance: 2_500.0,
            shadow_maps_enabled: false,
            ..default()
        },
        Transform::from_xyz(-6.0, 8.0, 5.0).looking_at(Vec3::ZERO, Vec3::Z),
    ));
}

fn to_render_quat(q: &DQuat) -> Quat {
    let q = q.quaternion();
    Quat::from_xyzw(q.i as f32, q.j as f32, q.k as f32, q.w as f32).normalize()
}

/// Entities drawn for the world: bodies and containers.
type AnyVisual = Or<(With<BodyVisual>, With<ContainerVisual>)>;

/// Respawn all body and container meshes when the simulation's generation changed.
#[allow(clippy::too_many_arguments)]
fn rebuild_visuals(
    mut commands: Commands,
    sim: Res<Simulation>,
    mut state: ResMut<VisualState>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    settings: Res<RenderSettings>,
    old: Query<Entity, AnyVisual>,
) {
    if state.generation == Some(sim.generation) {
        return;
    }
    let quality = settings.quality;
    state.generation = Some(sim.generation);
    state.quality = Some(quality);
    for e in &old {
        commands.entity(e).despawn();
    }
    let shared: Vec<_> = state.palette.values().cloned().collect();
    for h in state.body_materials.drain(..) {
        if !shared.contains(&h) {
            materials.remove(&h);
        }
    }
    state.base_colors.clear();
    state.base_keys.clear();
    state.last_mode = ColorMode::ByBody;

    let world = &sim.world;
    for (i, body) in world.bodies.iter().enumerate() {
        let key = (format!("{:?}", body.shape), quality);
        let mesh = state
            .meshes
            .entry(key)
            .or_insert_with(|| meshes.add(shape_mesh_at(&body.shape, quality)))
            .clone();
        let color = body_color(&body.shape, i, body.is_static());
        let material = match quality {
            RenderQuality::Full => materials.add(body_material(color)),
            RenderQuality::Fast => {
                let key = body_palette_key(&body.shape, i, body.is_static());
                state.base_keys.push(key);
                palette_material(&mut state.palette, &mut materials, key)
            }
        };
        state.body_materials.push(material.clone());
        state.base_colors.push(color);
        commands.spawn((
            BodyVisual(i),
            Mesh3d(mesh),
            MeshMaterial3d(material),
            Transform::from_translation(to_render(&body.position))
                .with_rotation(to_render_quat(&body.orientation)),
        ));
    }

    let extent = scene_extent(&sim);
    let segments = match quality {
        RenderQuality::Full => 64,
        RenderQuality::Fast => 24,
    };
    let [glass, divider_glass, ground, floor] =
        container_materials(quality).map(|m| materials.add(m));
    for c in &world.containers {
        match c {
            Container::Plane { point, normal } => {
                let n = to_render(&normal.normalize());
                commands.spawn((
                    ContainerVisual,
                    Mesh3d(meshes.add(Plane3d::new(n, Vec2::splat(extent * 1.5)).mesh())),
                    MeshMaterial3d(ground.clone()),
                    Transform::from_translation(to_render(point)),
                ));
            }
            Container::Box {
                center,
                half_size,
                height,
                walls,
                dividers,
            } => {
                let (hx, hy, h) = (half_size[0] as f32, half_size[1] as f32, *height as f32);
                let c0 = to_render(center);
                // Floor, lifted a millimetre above a coinciding ground plane.
                commands.spawn((
                    ContainerVisual,
                    Mesh3d(meshes.add(Plane3d::new(Vec3::Z, Vec2::new(hx, hy)).mesh())),
                    MeshMaterial3d(floor.clone()),
                    Transform::from_translation(c0 + Vec3::Z * 0.001),
                ));
                for (k, present) in walls.iter().enumerate() {
                    if !present {
                        continue;
                    }
                    let (offset, normal, half) = match BOX_WALL_NAMES[k] {
                        "-x" => (Vec3::new(-hx, 0.0, 0.0), Vec3::X, Vec2::new(hy, h / 2.0)),
                        "+x" => (Vec3::new(hx, 0.0, 0.0), Vec3::NEG_X, Vec2::new(hy, h / 2.0)),
                        "-y" => (Vec3::new(0.0, -hy, 0.0), Vec3::Y, Vec2::new(hx, h / 2.0)),
                        _ => (Vec3::new(0.0, hy, 0.0), Vec3::NEG_Y, Vec2::new(hx, h / 2.0)),
                    };
                    commands.spawn((
                        ContainerVisual,
                        Mesh3d(meshes.add(wall_mesh(normal, half))),
                        MeshMaterial3d(glass.clone()),
                        Transform::from_translation(c0 + offset + Vec3::Z * (h / 2.0)),
                    ));
                }
                for d in dividers.iter().filter(|d| d.present) {
                    commands.spawn((
                        ContainerVisual,
                        Mesh3d(meshes.add(wall_mesh(Vec3::X, Vec2::new(hy, h / 2.0)))),
                        MeshMaterial3d(divider_glass.clone()),
                        Transform::from_xyz(d.x as f32, c0.y, c0.z + h / 2.0),
                    ));
                }
            }
            Container::Cylinder {
                base,
                radius,
                height,
            } => {
                let r = *radius as f32;
                commands.spawn((
                    ContainerVisual,
                    Mesh3d(meshes.add(frustum_side_mesh(r, r, *height as f32, segments))),
                    MeshMaterial3d(glass.clone()),
                    Transform::from_translation(to_render(base)),
                ));
                commands.spawn((
                    ContainerVisual,
                    Mesh3d(meshes.add(Circle::new(r).mesh().resolution(segments))),
                    MeshMaterial3d(floor.clone()),
                    Transform::from_translation(to_render(base) + Vec3::Z * 0.001),
                ));
            }
            Container::Hopper {
                base,
                bottom_radius,
                top_radius,
                height,
            } => {
                commands.spawn((
                    ContainerVisual,
                    Mesh3d(meshes.add(frustum_side_mesh(
                        *bottom_radius as f32,
                        *top_radius as f32,
                        *height as f32,
                        segments,
                    ))),
                    MeshMaterial3d(glass.clone()),
                    Transform::from_translation(to_render(base)),
                ));
            }
        }
    }
}

/// The materials of glass walls, dividers, the ground plane and box floors. At fast
/// quality they are unlit, in the colours the lit ones show (a flat surface under
/// directional light without shadows is one colour): the ground and the walls cover
/// most of the view, and a software rasteriser spends most of a frame shading them.
fn container_materials(quality: RenderQuality) -> [StandardMaterial; 4] {
    let unlit = quality == RenderQuality::Fast;
    let pick = |lit: Color, flat: Color| if unlit { flat } else { lit };
    [
        StandardMaterial {
            base_color: pick(
                Color::srgba(0.55, 0.7, 0.85, 0.14),
                Color::srgba(0.7, 0.82, 0.94, 0.16),
            ),
            alpha_mode: AlphaMode::Blend,
            cull_mode: None,
            double_sided: true,
            perceptual_roughness: 0.2,
            unlit,
            ..default()
        },
        StandardMaterial {
            base_color: pick(
                Color::srgba(0.95, 0.55, 0.2, 0.22),
                Color::srgba(0.98, 0.62, 0.3, 0.24),
            ),
            alpha_mode: AlphaMode::Blend,
            cull_mode: None,
            double_sided: true,
            unlit,
            ..default()
        },
        StandardMaterial {
            base_color: pick(Color::srgb(0.62, 0.64, 0.66), Color::srgb_u8(198, 202, 206)),
            perceptual_roughness: 0.9,
            unlit,
            ..default()
        },
        StandardMaterial {
            base_color: pick(Color::srgb(0.5, 0.53, 0.57), Color::srgb_u8(160, 168, 178)),
            perceptual_roughness: 0.9,
            unlit,
            ..default()
        },
    ]
}

/// A rough size of the scene (m): the largest distance of a body or container part from
/// the origin, at least 5 m.
pub fn scene_extent(sim: &Simulation) -> f32 {
    let mut r: f64 = 5.0;
    for b in &sim.world.bodies {
        r = r.max(b.position.norm() + b.shape.bounding_radius());
    }
    for c in &sim.world.containers {
        let s = match c {
            Container::Plane { point, .. } => point.norm(),
            Container::Box {
                center,
                half_size,
                height,
                ..
            } => center.norm() + half_size[0].hypot(half_size[1]).hypot(*height),
            Container::Cylinder {
                base,
                radius,
                height,
            } => base.norm() + radius.hypot(*height),
            Container::Hopper {
                base,
                top_radius,
                height,
                ..
            } => base.norm() + top_radius.hypot(*height),
        };
        r = r.max(s);
    }
    r as f32
}

fn sync_transforms(sim: Res<Simulation>, mut q: Query<(&BodyVisual, &mut Transform)>) {
    for (BodyVisual(i), mut t) in &mut q {
        if let Some(b) = sim.world.bodies.get(*i) {
            t.translation = to_render(&b.position);
            t.rotation = to_render_quat(&b.orientation);
        }
    }
}

/// Recolour bodies by speed or kinetic energy (every frame in those modes). At full
/// quality each body's own material changes colour; at fast quality each body is given
/// the shared material of its colour.
fn update_colors(
    sim: Res<Simulation>,
    settings: Res<RenderSettings>,
    mut display: ResMut<DisplaySettings>,
    mut state: ResMut<VisualState>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    color_scale: Option<Res<super::colorbar::ColorScale>>,
    mut bodies: Query<(&BodyVisual, &mut MeshMaterial3d<StandardMaterial>)>,
) {
    let mode = display.color_mode;
    let fast = settings.quality == RenderQuality::Fast;
    if mode == ColorMode::ByBody {
        if state.last_mode != ColorMode::ByBody {
            if fast {
                let state = &mut *state;
                for (BodyVisual(i), mut m) in &mut bodies {
                    if let Some(key) = state.base_keys.get(*i) {
                        let h = palette_material(&mut state.palette, &mut materials, *key);
                        state.body_materials[*i] = h.clone();
                        m.0 = h;
                    }
                }
            } else {
                for (h, c) in state.body_materials.iter().zip(&state.base_colors) {
                    if let Some(mut m) = materials.get_mut(h) {
                        m.base_color = *c;
                    }
                }
            }
            state.last_mode = mode;
        }
        return;
    }
    state.last_mode = mode;
    let values: Vec<f64> = sim
        .world
        .bodies
        .iter()
        .map(|b| match mode {
            ColorMode::BySpeed => b.velocity.norm(),
            _ => b.kinetic_energy_translational() + b.kinetic_energy_rotational(),
        })
        .collect();
    let max = values.iter().copied().fold(0.0, f64::max);
    display.color_scale = max.max(display.color_scale * 0.995).max(1e-9);
    // The fixed range the user set, or the decaying maximum (see `colorbar`).
    let (lo, hi) = color_scale
        .as_deref()
        .cloned()
        .unwrap_or_default()
        .range(mode, display.color_scale);
    let ramp_x = |v: f64| super::colorbar::ramp_position(mode, v, lo, hi);
    if fast {
        let state = &mut *state;
        for (BodyVisual(i), mut m) in &mut bodies {
            let (Some(v), Some(b)) = (values.get(*i), sim.world.bodies.get(*i)) else {
                continue;
            };
            let key = if b.is_static() {
                PaletteKey::Static
            } else {
                PaletteKey::Ramp(ramp_step(ramp_x(*v)))
            };
            let h = palette_material(&mut state.palette, &mut materials, key);
            if m.0 != h {
                state.body_materials[*i] = h.clone();
                m.0 = h;
            }
        }
        return;
    }
    for ((h, v), b) in state
        .body_materials
        .iter()
        .zip(&values)
        .zip(&sim.world.bodies)
    {
        let x = ramp_x(*v);
        if let Some(mut m) = materials.get_mut(h) {
            m.base_color = if b.is_static() {
                Color::srgb(0.5, 0.5, 0.5)
            } else {
                ramp(x)
            };
        }
    }
}

/// The material of a body at full quality.
fn body_material(color: Color) -> StandardMaterial {
    StandardMaterial {
        base_color: color,
        perceptual_roughness: 0.55,
        reflectance: 0.4,
        ..default()
    }
}

/// The step of the fast palette's ramp for x in [0, 1].
fn ramp_step(x: f32) -> u8 {
    ((x.clamp(0.0, 1.0) * RAMP_STEPS as f32) as u32).min(RAMP_STEPS - 1) as u8
}

/// The fast palette's colour of body `i` in [`ColorMode::ByBody`]: [`body_color`] with
/// its lightness quantised to [`BODY_SHADES`] shades.
fn body_palette_key(shape: &Shape, i: usize, is_static: bool) -> PaletteKey {
    if is_static {
        return PaletteKey::Static;
    }
    let t = (i as f32 * 0.618_034).fract();
    let shade = ((t * BODY_SHADES as f32) as u32).min(BODY_SHADES - 1) as u8;
    PaletteKey::Body(shape_kind(shape), shade)
}

fn shape_kind(shape: &Shape) -> u8 {
    match shape {
        Shape::Sphere { .. } => 0,
        Shape::Cuboid { .. } => 1,
        Shape::Cross { .. } => 2,
        Shape::Ellipsoid { .. } => 3,
        Shape::Rod { .. } => 4,
        Shape::ConvexPolyhedron(_) => 5,
        Shape::MassPoints { .. } => 6,
    }
}

/// Hue of each shape kind (degrees), in [`shape_kind`] order.
const SHAPE_HUES: [f32; 7] = [18.0, 212.0, 140.0, 280.0, 48.0, 350.0, 190.0];

fn palette_color(key: PaletteKey) -> Color {
    match key {
        PaletteKey::Static => Color::srgb(0.45, 0.45, 0.48),
        PaletteKey::Body(kind, shade) => {
            // The middle of the shade's interval of the golden-ratio parameter.
            let t = (f32::from(shade) + 0.5) / BODY_SHADES as f32;
            Color::hsl(
                SHAPE_HUES[usize::from(kind)] + 16.0 * (t - 0.5),
                0.62,
                0.42 + 0.18 * t,
            )
        }
        PaletteKey::Ramp(step) => ramp((f32::from(step) + 0.5) / RAMP_STEPS as f32),
    }
}

/// The shared material of a palette colour (made on first use).
fn palette_material(
    palette: &mut HashMap<PaletteKey, Handle<StandardMaterial>>,
    materials: &mut Assets<StandardMaterial>,
    key: PaletteKey,
) -> Handle<StandardMaterial> {
    palette
        .entry(key)
        .or_insert_with(|| materials.add(body_material(palette_color(key))))
        .clone()
}

/// The colour of body `i` in [`ColorMode::ByBody`]: a hue per shape kind, lightness
/// varied per body so neighbours can be told apart.
pub fn body_color(shape: &Shape, i: usize, is_static: bool) -> Color {
    if is_static {
        return Color::srgb(0.45, 0.45, 0.48);
    }
    let hue = SHAPE_HUES[usize::from(shape_kind(shape))];
    // Golden-ratio sequence: well spread, deterministic.
    let t = (i as f32 * 0.618_034).fract();
    Color::hsl(hue + 16.0 * (t - 0.5), 0.62, 0.42 + 0.18 * t)
}

/// The mesh of a shape in its principal frame, at full quality.
pub fn shape_mesh(shape: &Shape) -> Mesh {
    shape_mesh_at(shape, RenderQuality::Full)
}

/// The mesh of a shape in its principal frame; curved surfaces have fewer facets at
/// fast quality (a sphere of 12 × 8 instead of 32 × 18 quads).
pub fn shape_mesh_at(shape: &Shape, quality: RenderQuality) -> Mesh {
    let fast = quality == RenderQuality::Fast;
    // (sectors, stacks) of spheres, ellipsoids and mass-point balls; capsule longitudes
    // and latitudes; cylinder resolution.
    let (sphere, ellipsoid, ball, capsule, strut) = if fast {
        ((12, 8), (14, 9), (8, 6), (12, 4), 6)
    } else {
        ((32, 18), (40, 24), (20, 12), (32, 16), 32)
    };
    match shape {
        Shape::Sphere { radius } => Sphere::new(*radius as f32).mesh().uv(sphere.0, sphere.1),
        Shape::Cuboid { half_extents: h } => cuboid_mesh(h),
        Shape::Cross { c } => {
            // Three bars sharing their centre; their inner faces stay hidden inside.
            let [x, y, z] = Shape::cross_bars(*c).map(|h| cuboid_mesh(&h));
            merge_meshes(x, &[y, z])
        }
        Shape::Ellipsoid { semi_axes: s } => Sphere::new(1.0)
            .mesh()
            .uv(ellipsoid.0, ellipsoid.1)
            .scaled_by(Vec3::new(s.x as f32, s.y as f32, s.z as f32)),
        Shape::Rod { length, radius } => Capsule3d::new(*radius as f32, *length as f32)
            .mesh()
            .longitudes(capsule.0)
            .latitudes(capsule.1)
            .build()
            // Bevy's capsule runs along y; the core's rod along z.
            .rotated_by(Quat::from_rotation_x(std::f32::consts::FRAC_PI_2)),
        Shape::MassPoints { points, radius, .. } => {
            // A ball at each mass point on a thin massless strut from the centre of mass.
            let reach = points.iter().map(|p| p.norm()).fold(0.0, f64::max);
            let r = if *radius > 0.0 { *radius } else { 0.06 * reach } as f32;
            let mut parts = Vec::new();
            for p in points {
                let p = Vec3::new(p.x as f32, p.y as f32, p.z as f32);
                parts.push(Sphere::new(r).mesh().uv(ball.0, ball.1).translated_by(p));
                let len = p.length();
                if len > 1e-6 {
                    parts.push(
                        Cylinder::new(0.3 * r, len)
                            .mesh()
                            .resolution(strut)
                            .build()
                            .rotated_by(Quat::from_rotation_arc(Vec3::Y, p / len))
                            .translated_by(p / 2.0),
                    );
                }
            }
            let first = parts.remove(0);
            merge_meshes(first, &parts)
        }
        Shape::ConvexPolyhedron(p) => {
            let points: Vec<crate::math::Point3> = p.vertices.iter().map(|v| (*v).into()).collect();
            let (verts, tris) = parry3d_f64::transformation::convex_hull(&points);
            flat_mesh(
                &verts
                    .iter()
                    .map(|v| Vec3::new(v.x as f32, v.y as f32, v.z as f32))
                    .collect::<Vec<_>>(),
                &tris,
            )
        }
    }
}

fn cuboid_mesh(h: &DVec3) -> Mesh {
    Mesh::from(Cuboid::new(
        2.0 * h.x as f32,
        2.0 * h.y as f32,
        2.0 * h.z as f32,
    ))
}

/// `first` with `others` appended (meshes of one attribute layout, as Bevy's primitives
/// build them; a mesh that does not fit is left out and logged).
fn merge_meshes(mut first: Mesh, others: &[Mesh]) -> Mesh {
    for m in others {
        if let Err(e) = first.merge(m) {
            warn!("mesh merge failed: {e}");
        }
    }
    first
}

/// A flat-shaded triangle mesh (each triangle its own three vertices and face normal).
fn flat_mesh(vertices: &[Vec3], triangles: &[[u32; 3]]) -> Mesh {
    let mut positions = Vec::with_capacity(triangles.len() * 3);
    let mut normals = Vec::with_capacity(triangles.len() * 3);
    for t in triangles {
        let [a, b, c] = t.map(|i| vertices[i as usize]);
        let n = (b - a).cross(c - a).normalize_or_zero();
        for p in [a, b, c] {
            positions.push(p.to_array());
            normals.push(n.to_array());
        }
    }
    let count = positions.len() as u32;
    Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::default(),
    )
    .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, positions)
    .with_inserted_attribute(Mesh::ATTRIBUTE_NORMAL, normals)
    .with_inserted_indices(Indices::U32((0..count).collect()))
}

/// A rectangle with the given normal and half-size, centred at the origin.
fn wall_mesh(normal: Vec3, half: Vec2) -> Mesh {
    Plane3d::new(Vec3::Z, half)
        .mesh()
        .build()
        // Plane3d's half-size runs along x and y of its own frame: stand it up with its
        // y along the world z (height) and its normal along `normal`.
        .rotated_by(Quat::from_mat3(&Mat3::from_cols(
            Vec3::Z.cross(normal),
            Vec3::Z,
            normal,
        )))
}

/// The lateral surface of a truncated cone (axis +z, base at the origin), open at both
/// ends: radius `r0` at z = 0, `r1` at z = `height`.
pub fn frustum_side_mesh(r0: f32, r1: f32, height: f32, segments: u32) -> Mesh {
    let mut positions = Vec::new();
    let mut normals = Vec::new();
    let slope = (r0 - r1) / height;
    for i in 0..=segments {
        let a = i as f32 / segments as f32 * std::f32::consts::TAU;
        let (s, c) = a.sin_cos();
        let n = Vec3::new(c, s, slope).normalize();
        positions.push([r0 * c, r0 * s, 0.0]);
        normals.push(n.to_array());
        positions.push([r1 * c, r1 * s, height]);
        normals.push(n.to_array());
    }
    let mut indices = Vec::new();
    for i in 0..segments {
        let k = 2 * i;
        indices.extend_from_slice(&[k, k + 2, k + 1, k + 1, k + 2, k + 3]);
    }
    Mesh::new(
        PrimitiveTopology::TriangleList,
        RenderAssetUsages::default(),
    )
    .with_inserted_attribute(Mesh::ATTRIBUTE_POSITION, positions)
    .with_inserted_attribute(Mesh::ATTRIBUTE_NORMAL, normals)
    .with_inserted_indices(Indices::U32(indices))
}

/// The impulse each contact received in the last step, summed from the solver trace
/// (empty unless the trace was recorded).
pub fn contact_impulses(sim: &Simulation) -> HashMap<usize, DVec3> {
    let mut out: HashMap<usize, DVec3> = HashMap::new();
    for row in &sim.world.trace {
        *out.entry(row.contact).or_insert_with(DVec3::zeros) += DVec3::from(row.impulse);
    }
    out
}

/// The gizmo group of the containers' edges. Its lines are on [`CONTAINER_LAYERS`], as
/// the container meshes are: a side-by-side comparison draws run i's bodies on render
/// layer i, one viewport each (`compare.rs`), and every viewport shows the containers
/// whole. The other gizmos (contacts, impulses, the selection) belong to the app's own
/// world and stay on layer 0.
#[derive(Default, Reflect, GizmoConfigGroup)]
pub struct ContainerGizmos;

/// The render layers the containers are drawn on: 0 (the app's world) and the layers of
/// a comparison's other runs.
pub const CONTAINER_LAYERS: [usize; 3] = [0, 1, 2];

fn configure_container_gizmos(mut store: ResMut<GizmoConfigStore>) {
    let (config, _) = store.config_mut::<ContainerGizmos>();
    config.render_layers = bevy::camera::visibility::RenderLayers::from_layers(&CONTAINER_LAYERS);
}

/// Container edges, contacts, normals, impulses and the selected body.
fn draw_debug(
    sim: Res<Simulation>,
    display: Res<DisplaySettings>,
    selection: Res<Selection>,
    mut gizmos: Gizmos,
    mut edges: Gizmos<ContainerGizmos>,
) {
    let world = &sim.world;
    if display.container_edges {
        for c in &world.containers {
            container_edges(c, &mut edges);
        }
    }
    let typical = typical_size(&sim);
    if display.contact_points || display.contact_normals {
        for c in &world.contacts {
            draw_contact(c, typical, &display, &mut gizmos);
        }
    }
    if display.contact_impulses {
        // Scale: the largest impulse is drawn as long as two typical body sizes.
        let impulses = contact_impulses(&sim);
        let max = impulses.values().map(|p| p.norm()).fold(0.0, f64::max);
        if max > 0.0 {
            for (i, p) in &impulses {
                if let Some(c) = world.contacts.get(*i) {
                    let start = to_render(&c.point);
                    let end = start + to_render(&(p * (2.0 * typical / max)));
                    gizmos.arrow(start, end, Color::srgb(0.9, 0.1, 0.6));
                }
            }
        }
    }
    if let Some(i) = selection.body
        && let Some(b) = world.bodies.get(i)
    {
        gizmos.sphere(
            Isometry3d::from_translation(to_render(&b.position)),
            b.shape.bounding_radius() as f32 * 1.05,
            Color::srgb(1.0, 0.85, 0.1),
        );
    }
    if let Some(g) = &sim.grab
        && let Some(b) = world.bodies.get(g.body)
    {
        let p = b.position + b.orientation * g.local_point;
        gizmos.line(
            to_render(&p),
            to_render(&g.target),
            Color::srgb(1.0, 0.3, 0.1),
        );
    }
}

fn draw_contact(c: &Contact, typical: f64, display: &DisplaySettings, gizmos: &mut Gizmos) {
    let p = to_render(&c.point);
    if display.contact_points {
        let s = (0.12 * typical) as f32;
        gizmos.sphere(
            Isometry3d::from_translation(p),
            s,
            Color::srgb(0.9, 0.1, 0.1),
        );
    }
    if display.contact_normals {
        let end = p + to_render(&(c.normal * (0.6 * typical)));
        gizmos.arrow(p, end, Color::srgb(0.1, 0.3, 0.95));
    }
}

/// Median bounding radius of the dynamic bodies (m), for sizing debug drawings.
pub fn typical_size(sim: &Simulation) -> f64 {
    let mut r: Vec<f64> = sim
        .world
        .bodies
        .iter()
        .filter(|b| !b.is_static())
        .map(|b| b.shape.bounding_radius())
        .collect();
    if r.is_empty() {
        return 0.5;
    }
    let mid = r.len() / 2;
    *r.select_nth_unstable_by(mid, f64::total_cmp).1
}

fn container_edges(c: &Container, gizmos: &mut Gizmos<ContainerGizmos>) {
    let edge = Color::srgb(0.2, 0.3, 0.4);
    match c {
        Container::Plane { .. } => {}
        Container::Box {
            center,
            half_size,
            height,
            walls,
            dividers,
        } => {
            let c0 = to_render(center);
            let (hx, hy, h) = (half_size[0] as f32, half_size[1] as f32, *height as f32);
            let corner = |sx: f32, sy: f32, z: f32| c0 + Vec3::new(sx * hx, sy * hy, z);
            // Floor outline, then each present wall's top edge and its two uprights.
            for (a, b) in [
                ((-1.0, -1.0), (1.0, -1.0)),
                ((1.0, -1.0), (1.0, 1.0)),
                ((1.0, 1.0), (-1.0, 1.0)),
                ((-1.0, 1.0), (-1.0, -1.0)),
            ] {
                gizmos.line(corner(a.0, a.1, 0.0), corner(b.0, b.1, 0.0), edge);
            }
            let sides = [
                ((-1.0, -1.0), (-1.0, 1.0)),
                ((1.0, -1.0), (1.0, 1.0)),
                ((-1.0, -1.0), (1.0, -1.0)),
                ((-1.0, 1.0), (1.0, 1.0)),
            ];
            for (k, (a, b)) in sides.iter().enumerate() {
                if walls[k] {
                    gizmos.line(corner(a.0, a.1, h), corner(b.0, b.1, h), edge);
                    gizmos.line(corner(a.0, a.1, 0.0), corner(a.0, a.1, h), edge);
                    gizmos.line(corner(b.0, b.1, 0.0), corner(b.0, b.1, h), edge);
                }
            }
            for d in dividers.iter().filter(|d| d.present) {
                let x = d.x as f32;
                let divider = Color::srgb(0.85, 0.45, 0.1);
                let p = |y: f32, z: f32| Vec3::new(x, c0.y + y, c0.z + z);
                gizmos.line(p(-hy, h), p(hy, h), divider);
                gizmos.line(p(-hy, 0.0), p(-hy, h), divider);
                gizmos.line(p(hy, 0.0), p(hy, h), divider);
            }
        }
        Container::Cylinder {
            base,
            radius,
            height,
        } => {
            let b = to_render(base);
            let r = *radius as f32;
            gizmos
                .circle(Isometry3d::from_translation(b), r, edge)
                .resolution(64);
            gizmos
                .circle(
                    Isometry3d::from_translation(b + Vec3::Z * *height as f32),
                    r,
                    edge,
                )
                .resolution(64);
        }
        Container::Hopper {
            base,
            bottom_radius,
            top_radius,
            height,
        } => {
            let b = to_render(base);
            gizmos
                .circle(Isometry3d::from_translation(b), *bottom_radius as f32, edge)
                .resolution(64);
            gizmos
                .circle(
                    Isometry3d::from_translation(b + Vec3::Z * *height as f32),
                    *top_radius as f32,
                    edge,
                )
                .resolution(64);
        }
    }
}

/// The frame rate, the render time and the quality toggle, drawn over the 3D view's
/// top-right corner, and the 3D view drawn at the render scale (windowed app only; F8
/// toggles the quality too).
pub struct RenderStatsPlugin;

impl Plugin for RenderStatsPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<FrameStats>()
            .init_resource::<ScaledView>()
            .init_resource::<super::view::RecordingView>()
            .add_systems(Update, toggle_quality_key)
            .add_systems(
                bevy_egui::EguiPrimaryContextPass,
                (render_stats_overlay, paint_scaled_view).in_set(UiSystems::Overlays),
            )
            .add_systems(
                PostUpdate,
                sync_scaled_view
                    .after(bevy_egui::EguiPostUpdateSet::EndPass)
                    .after(bevy::transform::TransformSystems::Propagate)
                    // Every camera this turns on (the orbit camera when the view is drawn
                    // at scale 1 again, e.g. F8 to full quality) or spawns must be seen by
                    // the shadow cascades, which are built only for the cameras active at
                    // that moment: a camera active in the render world without its
                    // cascades panics in bevy_pbr's `prepare_lights` (docs/results/
                    // quality-switch.md). The egui pass (compare mode's split viewports
                    // turn their cameras on there) runs before this, so before them too.
                    .before(bevy::light::SimulationLightSystems::UpdateDirectionalLightCascades),
            );
    }
}

pub use super::view::ScaledViewCamera;

/// The off-screen 3D view at the render scale: its camera, its image and the image's
/// egui texture; no camera while the scale is 1 (the app's camera draws the view).
#[derive(Resource, Debug, Default)]
pub struct ScaledView {
    camera: Option<Entity>,
    target: Option<Handle<Image>>,
    /// The image's size (physical pixels).
    size: UVec2,
    texture: Option<(AssetId<Image>, bevy_egui::egui::TextureId)>,
}

impl ScaledView {
    /// The size the 3D view is drawn at, while it is drawn off-screen.
    pub fn size(&self) -> Option<UVec2> {
        self.target.as_ref().map(|_| self.size)
    }
}

/// The app's orbit camera: the main view's (not egui's, a compare, record or the scaled
/// view's camera).
type OrbitView = MainViewCamera;

/// Keep the off-screen camera on the orbit camera's eye and its image at the scaled
/// size of the orbit camera's viewport, which then stops drawing; at scale 1 (or side
/// by side) remove it and let the orbit camera draw again.
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn sync_scaled_view(
    mut commands: Commands,
    settings: Res<RenderSettings>,
    mut state: ResMut<ScaledView>,
    mut images: ResMut<Assets<Image>>,
    mut main: Query<
        (
            &mut Camera,
            &Transform,
            &GlobalTransform,
            Ref<Projection>,
            Option<&bevy::camera::visibility::RenderLayers>,
        ),
        OrbitView,
    >,
    mut scaled: Query<
        (
            &mut Transform,
            &mut GlobalTransform,
            &mut Projection,
            Option<&bevy::camera::visibility::RenderLayers>,
        ),
        With<ScaledViewCamera>,
    >,
    side_by_side: Query<&Camera, (With<super::view::CompareCamera>, Without<ScaledViewCamera>)>,
    recording: Res<super::view::RecordingView>,
) {
    let Ok((mut cam, eye, global, projection, layers)) = main.single_mut() else {
        return;
    };
    let scale = settings.render_scale();
    let split = side_by_side.iter().any(|c| c.is_active);
    if recording.0.is_some() && !split {
        // The recording's picture is the view (`RecordingView`): nothing else draws it.
        if let Some(e) = state.camera.take() {
            commands.entity(e).despawn();
        }
        state.target = None;
        if cam.is_active {
            cam.is_active = false;
        }
        return;
    }
    let size = match cam.viewport.as_ref() {
        Some(v) if scale < 1.0 && !split => {
            let (w, h) = scaled_size(v.physical_size.x, v.physical_size.y, scale);
            UVec2::new(w, h)
        }
        _ => {
            if let Some(e) = state.camera.take() {
                commands.entity(e).despawn();
            }
            state.target = None;
            if !cam.is_active {
                cam.is_active = true;
            }
            return;
        }
    };
    if state.target.is_none() || state.size != size {
        let target = images.add(Image::new_target_texture(
            size.x,
            size.y,
            bevy::render::render_resource::TextureFormat::Rgba8UnormSrgb,
            None,
        ));
        state.size = size;
        state.target = Some(target.clone());
        if let Some(e) = state.camera {
            commands
                .entity(e)
                .insert(bevy::camera::RenderTarget::from(target));
        }
    }
    match state.camera.and_then(|e| scaled.get_mut(e).ok()) {
        Some((mut t, mut g, mut p, seen)) => {
            if *t != *eye {
                *t = *eye;
            }
            if *g != *global {
                *g = *global;
            }
            if projection.is_changed() {
                *p = (*projection).clone();
            }
            let layer_0 = bevy::camera::visibility::RenderLayers::default();
            if seen.unwrap_or(&layer_0) != layers.unwrap_or(&layer_0)
                && let Some(e) = state.camera
            {
                commands
                    .entity(e)
                    .insert(layers.cloned().unwrap_or_default());
            }
        }
        None if state.camera.is_none() => {
            let q = settings.quality;
            let (tonemapping, dither) = view_colour(q);
            let target = state.target.clone().unwrap_or_default();
            let camera = commands
                .spawn((
                    ScaledViewCamera,
                    Camera3d::default(),
                    Camera {
                        // Before the window's cameras; it has a target of its own.
                        order: -50,
                        ..default()
                    },
                    bevy::camera::RenderTarget::from(target),
                    q.msaa(),
                    tonemapping,
                    dither,
                    (
                        *eye,
                        *global,
                        (*projection).clone(),
                        layers.cloned().unwrap_or_default(),
                    ),
                ))
                .id();
            state.camera = Some(camera);
        }
        // Spawned this frame.
        None => {}
    }
    if cam.is_active {
        cam.is_active = false;
    }
}

/// Show the off-screen 3D view stretched over the orbit camera's viewport, in a layer
/// of its own that egui draws before its other background layers (the panels' and the
/// body labels'): layers in egui's area order come first within an [`egui::Order`].
fn paint_scaled_view(
    mut contexts: bevy_egui::EguiContexts,
    mut state: ResMut<ScaledView>,
    main: Query<&Camera, OrbitView>,
    window: Single<&Window, With<bevy::window::PrimaryWindow>>,
    recording: Res<super::view::RecordingView>,
    images: Res<Assets<Image>>,
) -> Result {
    use bevy_egui::egui;
    // While recording, the recording's picture, fitted to the view with its aspect.
    let recorded = recording.0.as_ref().filter(|_| state.target.is_none());
    let Some(target) = recorded.or(state.target.as_ref()).map(|t| t.id()) else {
        if let Some((id, _)) = state.texture.take() {
            contexts.remove_image(id);
        }
        return Ok(());
    };
    let Ok(cam) = main.single() else {
        return Ok(());
    };
    let Some(vp) = cam.viewport.as_ref().filter(|_| !cam.is_active) else {
        return Ok(());
    };
    let texture = match state.texture {
        Some((id, texture)) if id == target => texture,
        old => {
            if let Some((id, _)) = old {
                contexts.remove_image(id);
            }
            let texture = contexts.add_image(bevy_egui::EguiTextureHandle::Weak(target));
            state.texture = Some((target, texture));
            texture
        }
    };
    let s = window.scale_factor();
    let mut rect = egui::Rect::from_min_size(
        egui::pos2(
            vp.physical_position.x as f32 / s,
            vp.physical_position.y as f32 / s,
        ),
        egui::vec2(vp.physical_size.x as f32 / s, vp.physical_size.y as f32 / s),
    );
    if recorded.is_some()
        && let Some(image) = images.get(target)
    {
        let (w, h) = (image.width() as f32, image.height() as f32);
        let k = (rect.width() / w.max(1.0)).min(rect.height() / h.max(1.0));
        rect = egui::Rect::from_center_size(rect.center(), egui::vec2(w * k, h * k));
    }
    let ctx = contexts.ctx_mut()?;
    let layer = egui::LayerId::new(egui::Order::Background, egui::Id::new("scaled_3d_view"));
    ctx.memory_mut(|m| m.areas_mut().move_to_top(layer));
    ctx.layer_painter(layer).image(
        texture,
        rect,
        egui::Rect::from_min_max(egui::pos2(0.0, 0.0), egui::pos2(1.0, 1.0)),
        egui::Color32::WHITE,
    );
    Ok(())
}

/// Frames per second and render time, smoothed over about half a second.
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct FrameStats {
    pub fps: f64,
    /// Render world time per frame (s), see [`RenderTime`].
    pub render: f64,
}

fn toggle_quality_key(
    keys: Res<ButtonInput<KeyCode>>,
    wants: Res<bevy_egui::input::EguiWantsInput>,
    mut settings: ResMut<RenderSettings>,
) {
    if !wants.wants_keyboard_input() && keys.just_pressed(KeyCode::F8) {
        let q = settings.quality.toggled();
        settings.quality = q;
        settings.chosen = true;
    }
}

/// A render scale as the UI shows it: "1/4", "1/2", "3/4", "1", or the number.
pub fn scale_label(s: f32) -> String {
    match (s * 4.0).round() as u32 {
        n @ 1..=3 if (s * 4.0 - n as f32).abs() < 1e-3 => match n {
            2 => "1/2".into(),
            n => format!("{n}/4"),
        },
        _ => format!("{s}"),
    }
}

/// The render scale menu (module doc); `scaled`: whether the view is drawn off-screen
/// now (not side by side, where it is drawn at scale 1); `recording`: whether the view
/// shows the recording's picture ([`super::view::RecordingView`]).
fn render_scale_choice(
    ui: &mut bevy_egui::egui::Ui,
    settings: &mut RenderSettings,
    scaled: bool,
    recording: bool,
) {
    let current = settings.render_scale();
    let shown = if recording {
        format!("scale {} (recording)", scale_label(current))
    } else if scaled || current >= 1.0 {
        format!("scale {}", scale_label(current))
    } else {
        "scale 1 (split)".into()
    };
    bevy_egui::egui::ComboBox::from_id_salt("render_scale")
        .selected_text(shown)
        .show_ui(ui, |ui| {
            for s in RENDER_SCALES {
                if ui
                    .selectable_label((s - current).abs() < 1e-3, scale_label(s))
                    .clicked()
                {
                    settings.scale = Some(s);
                }
            }
        })
        .response
        .on_hover_text(
            "Render scale: the 3D view is drawn at this fraction of its width and height \
             and stretched to fit: fewer pixels to shade, a softer picture; the panels \
             stay sharp. Default: 1/2 at fast quality, 1 at full (--render-scale). \
             Side by side comparison draws at scale 1.",
        );
}

#[allow(clippy::too_many_arguments)]
fn render_stats_overlay(
    mut contexts: bevy_egui::EguiContexts,
    time: Res<Time<Real>>,
    render_time: Res<RenderTime>,
    mut stats: ResMut<FrameStats>,
    mut settings: ResMut<RenderSettings>,
    scaled_view: Res<ScaledView>,
    camera: Query<&Camera, MainViewCamera>,
    window: Single<&Window, With<bevy::window::PrimaryWindow>>,
    present: Option<Res<super::present::Presentation>>,
    recording: Res<super::view::RecordingView>,
) -> Result {
    use bevy_egui::egui;
    let dt = time.delta_secs_f64();
    if dt > 0.0 {
        let alpha = (dt / 0.5).min(1.0);
        stats.fps += alpha * (1.0 / dt - stats.fps);
        stats.render += alpha * (render_time.seconds() - stats.render);
    }
    // A developer's read-out: not shown to a class (presentation mode).
    if present.is_some_and(|p| p.on) {
        return Ok(());
    }
    let ctx = contexts.ctx_mut()?;
    // The view's bottom-right corner in logical pixels (egui's points): the top of the
    // view holds the status messages and, side by side, each run's name.
    let scale = window.scale_factor();
    let viewport = camera.iter().find_map(|c| c.viewport.as_ref());
    let right_gap = viewport.map_or(0.0, |v| {
        window.physical_width() as f32 - (v.physical_position.x + v.physical_size.x) as f32
    }) / scale;
    let bottom_gap = viewport.map_or(0.0, |v| {
        window.physical_height() as f32 - (v.physical_position.y + v.physical_size.y) as f32
    }) / scale;
    egui::Area::new("render_stats".into())
        .anchor(
            egui::Align2::RIGHT_BOTTOM,
            egui::vec2(-right_gap - 6.0, -bottom_gap - 6.0),
        )
        .show(ctx, |ui| {
            egui::Frame::popup(ui.style()).show(ui, |ui| {
                ui.monospace(format!(
                    "{:.1} FPS | render {:.0} ms",
                    stats.fps,
                    stats.render * 1e3
                ))
                .on_hover_text(
                    "Frames per second of the whole app, and the time the renderer \
                     takes per frame (preparing, drawing, presenting)",
                );
                // The controls on a line of their own: the box stays narrow over a
                // narrow view.
                ui.horizontal(|ui| {
                    let q = settings.quality;
                    let hint = match &settings.adapter {
                        Some((name, true)) => format!("software renderer ({name})"),
                        Some((name, false)) => format!("GPU ({name})"),
                        None => "renderer not known yet".into(),
                    };
                    if ui
                        .button(format!("quality: {q}"))
                        .on_hover_text(format!(
                            "fast: no shadows, no anti-aliasing, low-poly meshes, bodies \
                             batched by colour; full: shadows, 4× MSAA, smooth meshes. \
                             Click or F8 to switch. Renderer: {hint}"
                        ))
                        .clicked()
                    {
                        settings.quality = q.toggled();
                        settings.chosen = true;
                    }
                    render_scale_choice(
                        ui,
                        &mut settings,
                        scaled_view.size().is_some(),
                        recording.0.is_some(),
                    );
                });
            });
        });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each side is scaled and rounded on its own (an odd side rounds half up), never
    /// below one pixel, and scale 1 keeps the size.
    #[test]
    fn scaled_sizes() {
        assert_eq!(scaled_size(1280, 720, 0.5), (640, 360));
        assert_eq!(scaled_size(790, 466, 0.5), (395, 233));
        assert_eq!(scaled_size(791, 467, 0.5), (396, 234));
        assert_eq!(scaled_size(1280, 720, 0.25), (320, 180));
        assert_eq!(scaled_size(1280, 720, 1.0), (1280, 720));
        assert_eq!(scaled_size(3, 1, 0.25), (1, 1));
    }

    /// The command line accepts 0.25 to 1 and names the problem otherwise; the default
    /// scale follows the quality, a chosen one overrides it.
    #[test]
    fn render_scale_parses_and_defaults_by_quality() {
        assert_eq!(parse_render_scale("0.5"), Ok(0.5));
        assert_eq!(parse_render_scale("1"), Ok(1.0));
        assert_eq!(parse_render_scale("0.25"), Ok(0.25));
        for bad in ["0", "0.2", "1.5", "-1", "NaN", "half", ""] {
            let e = parse_render_scale(bad).unwrap_err();
            assert!(e.contains("render scale"), "{bad}: {e}");
        }
        let mut s = RenderSettings {
            quality: RenderQuality::Fast,
            chosen: false,
            adapter: None,
            scale: None,
        };
        assert_eq!(s.render_scale(), 0.5);
        s.quality = RenderQuality::Full;
        assert_eq!(s.render_scale(), 1.0);
        s.scale = Some(0.75);
        assert_eq!(s.render_scale(), 0.75);
        assert_eq!(scale_label(0.5), "1/2");
        assert_eq!(scale_label(0.75), "3/4");
        assert_eq!(scale_label(1.0), "1");
        assert_eq!(scale_label(0.6), "0.6");
    }
}
