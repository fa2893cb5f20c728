//! Rendering plugin: meshes for bodies and containers, lights, colouring, debug drawing.
//!
//! The core's world is z-up in metres, and so is the scene here: the camera's up vector
//! is +z, so positions and orientations pass to Bevy unchanged, converted from f64 to
//! f32 at this boundary only. Each body's mesh is built in its principal frame, the frame
//! its shape is stored in, so its transform is simply (position, orientation).

use super::simulation::Simulation;
use crate::collision::Contact;
use crate::container::{BOX_WALL_NAMES, Container};
use crate::math::{Quat as DQuat, Vec3 as DVec3};
use crate::shapes::Shape;
use bevy::asset::RenderAssetUsages;
use bevy::mesh::{Indices, PrimitiveTopology};
use bevy::prelude::*;
use std::collections::HashMap;

/// How bodies are coloured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorMode {
    /// A colour per shape kind, varied per body.
    #[default]
    ByBody,
    /// Speed |v| of the centre of mass, on a blue → yellow ramp.
    BySpeed,
    /// Kinetic energy ½m|v|² + ½ωᵀIω, on a logarithmic ramp over four decades.
    ByKineticEnergy,
}

impl ColorMode {
    pub const ALL: [ColorMode; 3] = [
        ColorMode::ByBody,
        ColorMode::BySpeed,
        ColorMode::ByKineticEnergy,
    ];
    pub fn label(self) -> &'static str {
        match self {
            ColorMode::ByBody => "body",
            ColorMode::BySpeed => "speed",
            ColorMode::ByKineticEnergy => "kinetic energy",
        }
    }
}

/// Display options (set from the UI).
#[derive(Resource, Debug, Clone)]
pub struct DisplaySettings {
    pub color_mode: ColorMode,
    /// Draw contact points.
    pub contact_points: bool,
    /// Draw contact normals.
    pub contact_normals: bool,
    /// Draw the impulse of each contact in the last step (records the solver trace every
    /// step while on, which slows large scenes).
    pub contact_impulses: bool,
    /// Draw the edges of containers.
    pub container_edges: bool,
    /// Upper end of the colour ramp (m/s for speed, J for kinetic energy); follows the
    /// largest value seen, decaying slowly.
    pub color_scale: f64,
}

impl Default for DisplaySettings {
    fn default() -> Self {
        DisplaySettings {
            color_mode: ColorMode::ByBody,
            contact_points: false,
            contact_normals: false,
            contact_impulses: false,
            container_edges: true,
            color_scale: 0.0,
        }
    }
}

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
    meshes: HashMap<String, Handle<Mesh>>,
    pub body_materials: Vec<Handle<StandardMaterial>>,
    base_colors: Vec<Color>,
    last_mode: ColorMode,
}

pub struct LabRenderPlugin;

impl Plugin for LabRenderPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<DisplaySettings>()
            .init_resource::<VisualState>()
            .insert_resource(ClearColor(Color::srgb(0.86, 0.88, 0.91)))
            .insert_resource(GlobalAmbientLight {
                color: Color::WHITE,
                brightness: 400.0,
                ..default()
            })
            .add_systems(Startup, spawn_lights)
            .add_systems(
                Update,
                (rebuild_visuals, sync_transforms, update_colors, draw_debug)
                    .chain()
                    .after(super::simulation::SimulationSystems),
            );
    }
}

fn spawn_lights(mut commands: Commands, sim: Res<Simulation>) {
    // One shadow cascade reaching past the scene: shadows show where bodies touch the
    // floor, at a quarter of the cost of Bevy's default four cascades (which matters
    // under software rendering).
    let reach = 4.0 * scene_extent(&sim);
    commands.spawn((
        DirectionalLight {
            illuminance: 9_000.0,
            shadow_maps_enabled: true,
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

/// f64 core vector → f32 render vector.
pub fn to_render(v: &DVec3) -> Vec3 {
    Vec3::new(v.x as f32, v.y as f32, v.z as f32)
}

/// f32 render vector → f64 core vector.
pub fn to_core(v: Vec3) -> DVec3 {
    DVec3::new(v.x.into(), v.y.into(), v.z.into())
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
    old: Query<Entity, AnyVisual>,
) {
    if state.generation == Some(sim.generation) {
        return;
    }
    state.generation = Some(sim.generation);
    for e in &old {
        commands.entity(e).despawn();
    }
    for h in state.body_materials.drain(..) {
        materials.remove(&h);
    }
    state.base_colors.clear();
    state.last_mode = ColorMode::ByBody;

    let world = &sim.world;
    for (i, body) in world.bodies.iter().enumerate() {
        let key = format!("{:?}", body.shape);
        let mesh = state
            .meshes
            .entry(key)
            .or_insert_with(|| meshes.add(shape_mesh(&body.shape)))
            .clone();
        let color = body_color(&body.shape, i, body.is_static());
        let material = materials.add(StandardMaterial {
            base_color: color,
            perceptual_roughness: 0.55,
            reflectance: 0.4,
            ..default()
        });
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
    let glass = materials.add(StandardMaterial {
        base_color: Color::srgba(0.55, 0.7, 0.85, 0.14),
        alpha_mode: AlphaMode::Blend,
        cull_mode: None,
        double_sided: true,
        perceptual_roughness: 0.2,
        ..default()
    });
    let divider_glass = materials.add(StandardMaterial {
        base_color: Color::srgba(0.95, 0.55, 0.2, 0.22),
        alpha_mode: AlphaMode::Blend,
        cull_mode: None,
        double_sided: true,
        ..default()
    });
    let ground = materials.add(StandardMaterial {
        base_color: Color::srgb(0.62, 0.64, 0.66),
        perceptual_roughness: 0.9,
        ..default()
    });
    let floor = materials.add(StandardMaterial {
        base_color: Color::srgb(0.5, 0.53, 0.57),
        perceptual_roughness: 0.9,
        ..default()
    });
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
                    Mesh3d(meshes.add(frustum_side_mesh(r, r, *height as f32, 64))),
                    MeshMaterial3d(glass.clone()),
                    Transform::from_translation(to_render(base)),
                ));
                commands.spawn((
                    ContainerVisual,
                    Mesh3d(meshes.add(Circle::new(r).mesh().resolution(64))),
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
                        64,
                    ))),
                    MeshMaterial3d(glass.clone()),
                    Transform::from_translation(to_render(base)),
                ));
            }
        }
    }
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

/// Recolour bodies by speed or kinetic energy (every frame in those modes).
fn update_colors(
    sim: Res<Simulation>,
    mut display: ResMut<DisplaySettings>,
    mut state: ResMut<VisualState>,
    mut materials: ResMut<Assets<StandardMaterial>>,
    color_scale: Option<Res<super::colorbar::ColorScale>>,
) {
    let mode = display.color_mode;
    if mode == ColorMode::ByBody {
        if state.last_mode != ColorMode::ByBody {
            for (h, c) in state.body_materials.iter().zip(&state.base_colors) {
                if let Some(mut m) = materials.get_mut(h) {
                    m.base_color = *c;
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
    for ((h, v), b) in state
        .body_materials
        .iter()
        .zip(&values)
        .zip(&sim.world.bodies)
    {
        let x = super::colorbar::ramp_position(mode, *v, lo, hi);
        if let Some(mut m) = materials.get_mut(h) {
            m.base_color = if b.is_static() {
                Color::srgb(0.5, 0.5, 0.5)
            } else {
                ramp(x)
            };
        }
    }
}

/// A perceptually ordered ramp (dark blue → teal → yellow, after viridis) for x in [0, 1].
pub fn ramp(x: f32) -> Color {
    const STOPS: [[f32; 3]; 5] = [
        [0.267, 0.005, 0.329],
        [0.230, 0.322, 0.546],
        [0.128, 0.567, 0.551],
        [0.369, 0.789, 0.383],
        [0.993, 0.906, 0.144],
    ];
    let x = x.clamp(0.0, 1.0) * 4.0;
    let i = (x.floor() as usize).min(3);
    let f = x - i as f32;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    Color::srgb(
        a[0] + f * (b[0] - a[0]),
        a[1] + f * (b[1] - a[1]),
        a[2] + f * (b[2] - a[2]),
    )
}

/// The colour of body `i` in [`ColorMode::ByBody`]: a hue per shape kind, lightness
/// varied per body so neighbours can be told apart.
pub fn body_color(shape: &Shape, i: usize, is_static: bool) -> Color {
    if is_static {
        return Color::srgb(0.45, 0.45, 0.48);
    }
    let hue = match shape {
        Shape::Sphere { .. } => 18.0,
        Shape::Cuboid { .. } => 212.0,
        Shape::Cross { .. } => 140.0,
        Shape::Ellipsoid { .. } => 280.0,
        Shape::Rod { .. } => 48.0,
        Shape::ConvexPolyhedron(_) => 350.0,
        Shape::MassPoints { .. } => 190.0,
    };
    // Golden-ratio sequence: well spread, deterministic.
    let t = (i as f32 * 0.618_034).fract();
    Color::hsl(hue + 16.0 * (t - 0.5), 0.62, 0.42 + 0.18 * t)
}

/// The mesh of a shape in its principal frame.
pub fn shape_mesh(shape: &Shape) -> Mesh {
    match shape {
        Shape::Sphere { radius } => Sphere::new(*radius as f32).mesh().uv(32, 18),
        Shape::Cuboid { half_extents: h } => cuboid_mesh(h),
        Shape::Cross { c } => {
            // Three bars sharing their centre; their inner faces stay hidden inside.
            let [x, y, z] = Shape::cross_bars(*c).map(|h| cuboid_mesh(&h));
            merge_meshes(x, &[y, z])
        }
        Shape::Ellipsoid { semi_axes: s } => Sphere::new(1.0)
            .mesh()
            .uv(40, 24)
            .scaled_by(Vec3::new(s.x as f32, s.y as f32, s.z as f32)),
        Shape::Rod { length, radius } => Capsule3d::new(*radius as f32, *length as f32)
            .mesh()
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
                parts.push(Sphere::new(r).mesh().uv(20, 12).translated_by(p));
                let len = p.length();
                if len > 1e-6 {
                    parts.push(
                        Cylinder::new(0.3 * r, len)
                            .mesh()
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

/// Container edges, contacts, normals, impulses and the selected body.
fn draw_debug(
    sim: Res<Simulation>,
    display: Res<DisplaySettings>,
    selection: Res<super::interaction::Selection>,
    mut gizmos: Gizmos,
) {
    let world = &sim.world;
    if display.container_edges {
        for c in &world.containers {
            container_edges(c, &mut gizmos);
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

fn container_edges(c: &Container, gizmos: &mut Gizmos) {
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
