//! Interaction plugin: the orbit camera, picking, dragging and throwing bodies, spawning
//! bodies at the cursor, and the keyboard shortcuts.
//!
//! Mouse: left-drag on a body grabs it with a spring (release to throw it); left-drag on
//! empty space orbits; right- or middle-drag pans; the wheel zooms toward the point under
//! the cursor; a left click on empty space clears the selection. A press or a wheel turn
//! over a panel (anywhere outside the 3D view's rectangle) or over an egui window never
//! reaches the camera. Drags read the cursor's
//! position from frame to frame (what remote desktops, VNC and xdotool move), and the
//! raw mouse motion only when the cursor position is unknown (a grabbed cursor). Keys:
//! space play/pause, `.` one step, `r` reset, `c` camera home, `f` frame every body
//! (shift+`f`: the selected one), `t` follow the selected body ([`CameraFollow`]), `i`
//! pause at the next impact on/off,
//! `1`-`4` look from the front, side, top or at an isometric angle, `b` spawn a body at
//! the cursor, F12 screenshot, F9 start/stop recording a video.

use super::messages::{CaptureRequest, SimCommand, ViewRequest};
use super::simulation::{GrabSpring, SimControl, Simulation, SimulationSystems};
pub use super::view::Selection;
use super::view::{CameraPreset, ViewRect, to_core, to_render};
use crate::body::RigidBody;
use crate::collision::raycast;
use crate::math::{Quat as DQuat, Vec3 as DVec3};
use crate::scene::Region;
use crate::shapes::Shape;
use bevy::input::mouse::{AccumulatedMouseMotion, AccumulatedMouseScroll, MouseScrollUnit};
use bevy::prelude::*;
use bevy::window::PrimaryWindow;
use bevy_egui::egui;
use bevy_egui::input::EguiWantsInput;

/// The shape `b` and the spawn button add at the cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpawnShape {
    Sphere,
    Cube,
    Cross,
    Ellipsoid,
    Tetrahedron,
    Rod,
}

impl SpawnShape {
    pub const ALL: [SpawnShape; 6] = [
        SpawnShape::Sphere,
        SpawnShape::Cube,
        SpawnShape::Cross,
        SpawnShape::Ellipsoid,
        SpawnShape::Tetrahedron,
        SpawnShape::Rod,
    ];

    pub fn label(self) -> &'static str {
        match self {
            SpawnShape::Sphere => "sphere",
            SpawnShape::Cube => "cube",
            SpawnShape::Cross => "cross",
            SpawnShape::Ellipsoid => "ellipsoid",
            SpawnShape::Tetrahedron => "tetrahedron",
            SpawnShape::Rod => "rod",
        }
    }

    /// The shape of overall size `size` (m): sphere diameter, cube edge, cross length
    /// 3c, ellipsoid's longest axis, tetrahedron edge, rod length.
    pub fn shape(self, size: f64) -> Shape {
        match self {
            SpawnShape::Sphere => Shape::Sphere { radius: size / 2.0 },
            SpawnShape::Cube => Shape::Cuboid {
                half_extents: DVec3::repeat(size / 2.0),
            },
            SpawnShape::Cross => Shape::Cross { c: size / 3.0 },
            SpawnShape::Ellipsoid => Shape::Ellipsoid {
                semi_axes: DVec3::new(0.5, 0.35, 0.25) * size,
            },
            SpawnShape::Tetrahedron => Shape::regular_tetrahedron(size),
            SpawnShape::Rod => Shape::Rod {
                length: 0.8 * size,
                radius: 0.1 * size,
            },
        }
    }
}

/// What a spawned body is like.
#[derive(Resource, Debug, Clone)]
pub struct SpawnSettings {
    pub shape: SpawnShape,
    /// Overall size (m), see [`SpawnShape::shape`]. Default: the scene's typical body
    /// size, set when a scene opens.
    pub size: f64,
    /// Density (kg/m³). Default: 1000.
    pub density: f64,
}

impl Default for SpawnSettings {
    fn default() -> Self {
        SpawnSettings {
            shape: SpawnShape::Cube,
            size: 0.5,
            density: 1000.0,
        }
    }
}

/// The orbit camera: it looks at `target` from `distance`, at azimuth `yaw` and
/// elevation `pitch` (rad), z up.
#[derive(Component, Debug, Clone)]
pub struct OrbitCamera {
    pub target: Vec3,
    pub distance: f32,
    pub yaw: f32,
    pub pitch: f32,
    /// Where "camera home" (`c`) returns to.
    pub home: (Vec3, f32, f32, f32),
}

impl OrbitCamera {
    /// A view of a scene of size `extent` (m) centred on `target`.
    pub fn framing(target: Vec3, extent: f32) -> Self {
        let (distance, yaw, pitch) = (1.5 * extent, -1.1, 0.42);
        OrbitCamera {
            target,
            distance,
            yaw,
            pitch,
            home: (target, distance, yaw, pitch),
        }
    }

    /// The distance at which a sphere of `radius` around the target fits a perspective
    /// view of vertical field of view `fov_y` (rad) and `aspect` = width/height: the
    /// sphere fits a cone of half-angle θ from distance r / sin θ, θ the smaller
    /// half-angle of the view (tan θ_x = aspect · tan(fov_y/2)); 5 % margin.
    pub fn fit_distance(radius: f32, fov_y: f32, aspect: f32) -> f32 {
        let half_y = 0.5 * fov_y;
        let half_x = (aspect * half_y.tan()).atan();
        let theta = half_y.min(half_x).max(1e-3);
        1.05 * radius.max(1e-3) / theta.sin()
    }

    /// The view from direction (`yaw`, `pitch`) (rad) that holds every sphere `(centre,
    /// radius)` of `spheres` inside a perspective view of vertical field of view `fov_y`
    /// and `aspect` = width/height, with 8 % of each half-angle to spare: the target is
    /// the centre of the spheres' bounding box, the distance the least at which every
    /// sphere is inside each of the four side planes of the view and beyond the near
    /// plane (0.1 m, Bevy's default); "camera home" returns there. For a side plane
    /// through the eye e = t − d f (f the view direction) with inward normal n and
    /// n·f = sin θ (θ the plane's half-angle), a sphere (c, r) is inside when
    /// n·(c − t) + d sin θ ≥ r.
    pub fn fit_spheres(
        spheres: &[(Vec3, f32)],
        fov_y: f32,
        aspect: f32,
        yaw: f32,
        pitch: f32,
    ) -> Self {
        let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
        for (c, r) in spheres {
            lo = lo.min(*c - *r);
            hi = hi.max(*c + *r);
        }
        let mut cam = OrbitCamera::framing(Vec3::ZERO, 1.0);
        (cam.yaw, cam.pitch) = (yaw, pitch);
        if spheres.is_empty() {
            cam.distance = 10.0;
            cam.home = (cam.target, cam.distance, yaw, pitch);
            return cam;
        }
        let target = 0.5 * (lo + hi);
        // The view's axes (as `transform` places the eye).
        let (sy, cy) = yaw.sin_cos();
        let (sp, cp) = pitch.sin_cos();
        let forward = -Vec3::new(cp * cy, cp * sy, sp);
        let right = forward.cross(Vec3::Z).try_normalize().unwrap_or(Vec3::X);
        let up = right.cross(forward);
        let half_y = 0.92 * 0.5 * fov_y;
        let half_x = 0.92 * (aspect * (0.5 * fov_y).tan()).atan();
        let planes = [
            (right, half_x),
            (-right, half_x),
            (up, half_y),
            (-up, half_y),
        ]
        .map(|(side, theta)| (theta.cos() * side + theta.sin() * forward, theta.sin()));
        const NEAR: f32 = 0.1;
        let mut distance: f32 = 1e-3;
        for (c, r) in spheres {
            let rel = *c - target;
            for (n, sin) in planes {
                distance = distance.max((r - n.dot(rel)) / sin.max(1e-3));
            }
            distance = distance.max(NEAR + r - forward.dot(rel));
        }
        cam.target = target;
        cam.distance = distance;
        cam.home = (target, distance, yaw, pitch);
        cam
    }

    pub fn go_home(&mut self) {
        (self.target, self.distance, self.yaw, self.pitch) = self.home;
    }

    /// Aim at the centre of the box `(lo, hi)` and back off, along the current
    /// direction, until the box's bounding sphere fits the view
    /// ([`OrbitCamera::fit_distance`]).
    pub fn frame(&mut self, lo: Vec3, hi: Vec3, fov_y: f32, aspect: f32) {
        self.target = 0.5 * (lo + hi);
        self.distance = Self::fit_distance(0.5 * (hi - lo).length(), fov_y, aspect);
    }

    /// Scale the view about the point `p` by `factor` (< 1 zooms in): target and eye
    /// move toward `p` by that factor, the direction stays, so `p` stays under the
    /// same pixel (a homothety about `p` keeps every ray through `p`).
    pub fn zoom_about(&mut self, p: Vec3, factor: f32) {
        self.target = p + factor * (self.target - p);
        self.distance *= factor;
    }

    pub fn transform(&self) -> Transform {
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.sin_cos();
        let eye = self.target + self.distance * Vec3::new(cp * cy, cp * sy, sp);
        Transform::from_translation(eye).looking_at(self.target, Vec3::Z)
    }
}

/// What the current mouse drag does.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Drag {
    Orbit {
        moved: bool,
    },
    Pan,
    /// Dragging a grabbed body along the plane through the grab point facing the camera
    /// with the mouse spring `spring` (sent to the physics thread whenever it moves).
    Grab {
        plane_point: Vec3,
        plane_normal: Vec3,
        spring: GrabSpring,
    },
}

#[derive(Resource, Debug, Default)]
struct PointerState {
    drag: Option<Drag>,
    /// The cursor position (logical pixels) at the last frame.
    last_cursor: Option<Vec2>,
}

/// The camera follows a body: each frame its target is put at the body's centre plus
/// `offset` (render coordinates), so orbit, zoom and pan go on around the moving body
/// (whatever moves the target between frames, a pan, a zoom toward the cursor, framing,
/// moves the offset with it). Stops when the scene file changes or the body is gone.
#[derive(Resource, Debug, Default, Clone)]
pub struct CameraFollow {
    pub body: Option<usize>,
    /// Target − body centre (m).
    pub offset: Vec3,
    /// The scene the body belongs to.
    scene: Option<std::path::PathBuf>,
    /// The target as this put it last.
    placed: Option<Vec3>,
}

impl CameraFollow {
    /// Following `body` of `world`, with the camera's `target` kept where it is now
    /// relative to the body.
    pub fn on(body: usize, world: &crate::World, target: Vec3) -> Option<Self> {
        let b = world.bodies.get(body)?;
        Some(CameraFollow {
            body: Some(body),
            offset: target - to_render(&b.position),
            scene: None,
            placed: None,
        })
    }

    /// Follow `body` of `sim` ([`CameraFollow::on`]).
    pub fn start(&mut self, body: usize, sim: &Simulation, target: Vec3) {
        if let Some(f) = Self::on(body, &sim.world, target) {
            *self = CameraFollow {
                scene: sim.scene_path.clone(),
                ..f
            };
        }
    }

    pub fn stop(&mut self) {
        self.body = None;
    }

    /// Where the camera's target goes for the world's current state.
    pub fn target(&self, world: &crate::World) -> Option<Vec3> {
        let b = world.bodies.get(self.body?)?;
        b.position
            .iter()
            .all(|x| x.is_finite())
            .then(|| to_render(&b.position) + self.offset)
    }
}

pub struct LabInteractionPlugin;

impl Plugin for LabInteractionPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<Selection>()
            .init_resource::<SpawnSettings>()
            .init_resource::<PointerState>()
            .init_resource::<CameraFollow>()
            .init_resource::<ViewRect>()
            .init_resource::<ProvisionalFraming>()
            .init_resource::<RegionFraming>()
            .add_systems(Startup, spawn_camera)
            .add_systems(
                Update,
                (
                    keyboard_shortcuts,
                    mouse_input,
                    frame_all_at_step,
                    fit_region_framing,
                    apply_camera,
                )
                    .chain()
                    .before(SimulationSystems),
            )
            .add_systems(
                Update,
                (carry_out_requests, follow_body, apply_camera)
                    .chain()
                    .after(SimulationSystems),
            );
    }
}

/// A framing made before the 3D view had its shape (no viewport yet, at the first
/// frame): the camera's (target, distance, yaw, pitch) then. It is made again with the
/// view's aspect at the first frame that has one, unless the camera moved meanwhile (a
/// lesson's camera, the user).
#[derive(Resource, Debug, Default)]
struct ProvisionalFraming(Option<(Vec3, f32, f32, f32)>);

fn orbit_state(o: &OrbitCamera) -> (Vec3, f32, f32, f32) {
    (o.target, o.distance, o.yaw, o.pitch)
}

/// The camera a scene opens with: every body and container in view
/// ([`scene_spheres`], [`OrbitCamera::fit_spheres`]) from the default direction.
pub fn scene_framing(world: &crate::World, fov_y: f32, aspect: f32) -> OrbitCamera {
    let home = OrbitCamera::framing(Vec3::ZERO, 1.0);
    OrbitCamera::fit_spheres(&scene_spheres(world), fov_y, aspect, home.yaw, home.pitch)
}

/// The smallest region a scene opens framed on: a sphere of this radius (m) about the
/// centre of what it frames ([`scene_spheres`]).
pub const MIN_FRAMED_RADIUS: f32 = 4.0;

/// What opening a scene keeps in view (render coordinates): every body's bounding
/// sphere, and points on every container's rims (a box's top and floor corners, 16
/// points round each rim of a cylinder or hopper); planes are unbounded and left out.
/// Last, a sphere of [`MIN_FRAMED_RADIUS`] about the centre of all these.
pub fn scene_spheres(world: &crate::World) -> Vec<(Vec3, f32)> {
    use crate::container::Container;
    let mut out: Vec<(Vec3, f32)> = world
        .bodies
        .iter()
        .filter(|b| b.position.iter().all(|x| x.is_finite()))
        .map(|b| (to_render(&b.position), b.shape.bounding_radius() as f32))
        .collect();
    let mut point = |p: DVec3| out.push((to_render(&p), 0.0));
    let rim = |base: &DVec3, r: f64, z: f64, point: &mut dyn FnMut(DVec3)| {
        for k in 0..16 {
            let a = std::f64::consts::TAU * k as f64 / 16.0;
            // The polygon's corners on a circle of r / cos(π/16) hold the circle.
            let r = r / (std::f64::consts::PI / 16.0).cos();
            point(base + DVec3::new(r * a.cos(), r * a.sin(), z));
        }
    };
    for c in &world.containers {
        match c {
            Container::Plane { .. } => {}
            Container::Box {
                center,
                half_size,
                height,
                ..
            } => {
                for k in 0..8 {
                    let sx = if k & 1 == 0 { -1.0 } else { 1.0 };
                    let sy = if k & 2 == 0 { -1.0 } else { 1.0 };
                    let z = if k & 4 == 0 { 0.0 } else { *height };
                    point(center + DVec3::new(sx * half_size[0], sy * half_size[1], z));
                }
            }
            Container::Cylinder {
                base,
                radius,
                height,
            } => {
                rim(base, *radius, 0.0, &mut point);
                rim(base, *radius, *height, &mut point);
            }
            Container::Hopper {
                base,
                bottom_radius,
                top_radius,
                height,
            } => {
                rim(base, *bottom_radius, 0.0, &mut point);
                rim(base, *top_radius, *height, &mut point);
            }
        }
    }
    // Never narrower than MIN_FRAMED_RADIUS: a scene of one or two small bodies (a
    // sphere rolling on the floor) opens with room around them.
    if !out.is_empty() {
        let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
        for (c, r) in &out {
            lo = lo.min(*c - *r);
            hi = hi.max(*c + *r);
        }
        out.push((0.5 * (lo + hi), MIN_FRAMED_RADIUS));
    }
    out
}

/// The camera that holds a scene's region of interest ([`crate::scene::region`]) in a
/// perspective view of vertical field of view `fov_y` (rad) and `aspect` =
/// width/height, from the direction a scene opens with: every body whose centre lies in
/// the region, a sphere of the largest moving body's bounding radius `radius` (m) about
/// each of the region's eight corners, is inside the view ([`OrbitCamera::fit_spheres`]:
/// the box's corners bound every point of it, and the side planes are convex).
pub fn region_orbit(region: &Region, radius: f32, fov_y: f32, aspect: f32) -> OrbitCamera {
    let home = OrbitCamera::framing(Vec3::ZERO, 1.0);
    let spheres: Vec<(Vec3, f32)> = region
        .corners()
        .iter()
        .map(|c| (to_render(c), radius))
        .collect();
    OrbitCamera::fit_spheres(&spheres, fov_y, aspect, home.yaw, home.pitch)
}

/// The largest bounding radius of a moving body of `world` (m; 0 without one).
pub fn largest_moving_radius(world: &crate::World) -> f32 {
    world
        .bodies
        .iter()
        .filter(|b| !b.is_static())
        .map(|b| b.shape.bounding_radius() as f32)
        .fold(0.0, f32::max)
}

/// A framing of a region of interest that the camera keeps ([`region_orbit`]), fitted
/// again whenever the 3D view's shape changes (panels, side-by-side viewports), until
/// the user orbits, pans or zooms. Compare mode sets it when it starts without a lesson.
#[derive(Resource, Debug, Default)]
pub struct RegionFraming {
    /// The region and the bodies' largest bounding radius (m); `None`: no such framing.
    pub region: Option<(Region, f32)>,
    /// The view's aspect and the camera state last set for it.
    applied: Option<(f32, (Vec3, f32, f32, f32))>,
}

impl RegionFraming {
    /// Frame `region` for bodies of bounding radius up to `radius` from the next frame.
    pub fn frame(&mut self, region: Region, radius: f32) {
        self.region = Some((region, radius));
        self.applied = None;
    }
}

/// Fit the held region framing to the 3D view's shape (see [`RegionFraming`]).
fn fit_region_framing(
    mut framing: ResMut<RegionFraming>,
    mut cameras: Query<(&Camera, &mut OrbitCamera, Option<&Projection>)>,
    window: Single<&Window, With<PrimaryWindow>>,
) {
    let Some((region, radius)) = framing.region.clone() else {
        return;
    };
    let Ok((cam, mut orbit, projection)) = cameras.single_mut() else {
        return;
    };
    let aspect = cam
        .viewport
        .as_ref()
        .map_or(window.width() / window.height().max(1.0), |v| {
            v.physical_size.x as f32 / v.physical_size.y.max(1) as f32
        });
    if let Some((was, placed)) = framing.applied {
        if placed != orbit_state(&orbit) {
            // The user moved the camera: it is theirs now.
            framing.region = None;
            return;
        }
        if was == aspect {
            return;
        }
    }
    *orbit = region_orbit(&region, radius, fov_of(projection), aspect);
    framing.applied = Some((aspect, orbit_state(&orbit)));
}

/// The vertical field of view of a camera's projection (Bevy's default without one).
fn fov_of(projection: Option<&Projection>) -> f32 {
    match projection {
        Some(Projection::Perspective(p)) => p.fov,
        _ => PerspectiveProjection::default().fov,
    }
}

fn spawn_camera(
    mut commands: Commands,
    sim: Res<Simulation>,
    mut spawn: ResMut<SpawnSettings>,
    windows: Query<&Window, With<PrimaryWindow>>,
) {
    // The window's shape until the 3D view has its own (`ProvisionalFraming`).
    let aspect = windows
        .iter()
        .next()
        .map_or(16.0 / 10.0, |w| w.width() / w.height().max(1.0));
    let orbit = scene_framing(&sim.world, fov_of(None), aspect);
    commands.insert_resource(ProvisionalFraming(Some(orbit_state(&orbit))));
    commands.spawn((Camera3d::default(), orbit.transform(), orbit));
    spawn.size = 2.0 * super::render::typical_size(&sim);
}

/// The box around the bodies' bounding spheres, or around body `only`'s (render
/// coordinates); `None` when there is no such body.
pub fn body_bounds(sim: &Simulation, only: Option<usize>) -> Option<(Vec3, Vec3)> {
    let (mut lo, mut hi) = (DVec3::repeat(f64::MAX), DVec3::repeat(f64::MIN));
    let mut any = false;
    for (i, b) in sim.world.bodies.iter().enumerate() {
        if only.is_some_and(|k| k != i) {
            continue;
        }
        let r = DVec3::repeat(b.shape.bounding_radius());
        lo = lo.inf(&(b.position - r));
        hi = hi.sup(&(b.position + r));
        any = true;
    }
    any.then(|| (to_render(&lo), to_render(&hi)))
}

/// Centre of the dynamic bodies' bounding box (the origin for an empty scene).
pub fn scene_center(sim: &Simulation) -> Vec3 {
    let dynamic = sim.world.bodies.iter().filter(|b| !b.is_static());
    let (mut lo, mut hi) = (DVec3::repeat(f64::MAX), DVec3::repeat(f64::MIN));
    let mut any = false;
    for b in dynamic {
        lo = lo.inf(&b.position);
        hi = hi.sup(&b.position);
        any = true;
    }
    if !any {
        return Vec3::ZERO;
    }
    let c = to_render(&(0.5 * (lo + hi)));
    // Look a little below the centre: piles end up lower than they start.
    Vec3::new(c.x, c.y, 0.6 * c.z)
}

fn keyboard_shortcuts(
    keys: Res<ButtonInput<KeyCode>>,
    wants: Res<EguiWantsInput>,
    mut control: ResMut<SimControl>,
    mut commands: MessageWriter<SimCommand>,
    mut view: MessageWriter<ViewRequest>,
    mut capture: MessageWriter<CaptureRequest>,
    mut cameras: Query<&mut OrbitCamera>,
) {
    if wants.wants_keyboard_input() {
        return;
    }
    if keys.just_pressed(KeyCode::Space) {
        control.paused = !control.paused;
    }
    if keys.just_pressed(KeyCode::Period) {
        control.paused = true;
        commands.write(SimCommand::Step(1));
    }
    if keys.just_pressed(KeyCode::KeyR) {
        commands.write(SimCommand::Reset);
    }
    if keys.just_pressed(KeyCode::KeyC) {
        for mut cam in &mut cameras {
            cam.go_home();
        }
    }
    if keys.just_pressed(KeyCode::KeyB) {
        view.write(ViewRequest::SpawnAtCursor);
    }
    if keys.just_pressed(KeyCode::KeyT) {
        view.write(ViewRequest::FollowSelection);
    }
    if keys.just_pressed(KeyCode::KeyI) {
        control.pause_at_impact = !control.pause_at_impact;
    }
    if keys.just_pressed(KeyCode::KeyF) {
        if keys.any_pressed([KeyCode::ShiftLeft, KeyCode::ShiftRight]) {
            view.write(ViewRequest::FrameSelection);
        } else {
            view.write(ViewRequest::FrameAll);
        }
    }
    for (key, preset) in [
        (KeyCode::Digit1, CameraPreset::Front),
        (KeyCode::Digit2, CameraPreset::Side),
        (KeyCode::Digit3, CameraPreset::Top),
        (KeyCode::Digit4, CameraPreset::Iso),
    ] {
        if keys.just_pressed(key) {
            view.write(ViewRequest::Preset(preset));
        }
    }
    if keys.just_pressed(KeyCode::F12) {
        capture.write(CaptureRequest::Screenshot);
    }
    if keys.just_pressed(KeyCode::F9) {
        capture.write(CaptureRequest::ToggleRecording);
    }
}

/// The ray under the cursor, in core coordinates (origin, unit direction).
fn cursor_ray(
    window: &Window,
    camera: &Camera,
    camera_transform: &GlobalTransform,
) -> Option<(DVec3, DVec3)> {
    let cursor = window.cursor_position()?;
    let ray = camera.viewport_to_world(camera_transform, cursor).ok()?;
    Some((to_core(ray.origin), to_core(*ray.direction)))
}

#[allow(clippy::too_many_arguments)]
fn mouse_input(
    buttons: Res<ButtonInput<MouseButton>>,
    motion: Res<AccumulatedMouseMotion>,
    scroll: Res<AccumulatedMouseScroll>,
    wants: Res<EguiWantsInput>,
    window: Single<&Window, With<PrimaryWindow>>,
    mut camera: Query<(&Camera, &GlobalTransform, &mut OrbitCamera)>,
    mut pointer: ResMut<PointerState>,
    sim: Res<Simulation>,
    mut commands: MessageWriter<SimCommand>,
    mut selection: ResMut<Selection>,
    view: Res<ViewRect>,
) {
    let Ok((cam, cam_transform, mut orbit)) = camera.single_mut() else {
        return;
    };
    let cursor = window.cursor_position();
    // The panels are drawn on egui's background layer, which egui does not count as
    // "over egui": the pointer is over the UI wherever it is outside the 3D view's
    // rectangle (egui points are the window's logical pixels), or over an egui window.
    let outside_view = cursor.is_none_or(|c| !view.0.contains(egui::pos2(c.x, c.y)));
    let over_ui = outside_view || wants.wants_pointer_input() || wants.is_pointer_over_area();
    let ray = cursor_ray(&window, cam, cam_transform);
    // Pointer motion: the cursor's move since the last frame, else the raw motion.
    let delta = match (cursor, pointer.last_cursor) {
        (Some(now), Some(before)) => now - before,
        _ => motion.delta,
    };
    pointer.last_cursor = cursor;

    // Start a drag.
    if pointer.drag.is_none() && !over_ui {
        if buttons.just_pressed(MouseButton::Left) {
            let hit = ray.and_then(|(o, d)| {
                raycast::pick(&sim.world.bodies, &o, &d, true).map(|(i, t)| (i, o + t * d))
            });
            pointer.drag = Some(match hit {
                Some((i, p)) => {
                    selection.body = Some(i);
                    let b = &sim.world.bodies[i];
                    let spring = GrabSpring {
                        body: i,
                        local_point: b.orientation.inverse_transform_vector(&(p - b.position)),
                        target: p,
                    };
                    commands.write(SimCommand::Grab(Some(spring)));
                    Drag::Grab {
                        plane_point: to_render(&p),
                        plane_normal: cam_transform.forward().into(),
                        spring,
                    }
                }
                None => Drag::Orbit { moved: false },
            });
        } else if buttons.just_pressed(MouseButton::Right)
            || buttons.just_pressed(MouseButton::Middle)
        {
            pointer.drag = Some(Drag::Pan);
        }
    }

    // Carry on with it.
    match pointer.drag {
        Some(Drag::Orbit { moved }) => {
            if delta != Vec2::ZERO {
                orbit.yaw -= delta.x * 0.006;
                orbit.pitch = (orbit.pitch + delta.y * 0.006).clamp(-1.5, 1.5);
                pointer.drag = Some(Drag::Orbit {
                    moved: moved || delta.length() > 1.0,
                });
            }
            if buttons.just_released(MouseButton::Left) {
                if !moved {
                    selection.body = None;
                }
                pointer.drag = None;
            }
        }
        Some(Drag::Pan) => {
            let right = cam_transform.right();
            let up = cam_transform.up();
            let k = orbit.distance * 0.0015;
            orbit.target += (-delta.x * k) * *right + (delta.y * k) * *up;
            if !buttons.pressed(MouseButton::Right) && !buttons.pressed(MouseButton::Middle) {
                pointer.drag = None;
            }
        }
        Some(Drag::Grab {
            plane_point,
            plane_normal,
            mut spring,
        }) => {
            if let Some((o, d)) = ray {
                let n = to_core(plane_normal);
                let denom = d.dot(&n);
                if denom.abs() > 1e-6 {
                    let t = (to_core(plane_point) - o).dot(&n) / denom;
                    if t > 0.0 && spring.target != o + t * d {
                        spring.target = o + t * d;
                        commands.write(SimCommand::Grab(Some(spring)));
                        pointer.drag = Some(Drag::Grab {
                            plane_point,
                            plane_normal,
                            spring,
                        });
                    }
                }
            }
            if !buttons.pressed(MouseButton::Left) {
                // Release: the body keeps its velocity (a throw).
                commands.write(SimCommand::Grab(None));
                pointer.drag = None;
            }
        }
        None => {}
    }

    // Zoom.
    if !over_ui && scroll.delta.y != 0.0 {
        let lines = match scroll.unit {
            MouseScrollUnit::Line => scroll.delta.y,
            MouseScrollUnit::Pixel => scroll.delta.y / 40.0,
        };
        let distance = (orbit.distance * (-0.12 * lines).exp()).clamp(0.2, 5_000.0);
        let factor = distance / orbit.distance;
        let p = zoom_point(&sim, ray, &orbit);
        orbit.zoom_about(p, factor);
    }
}

/// The point the wheel zooms toward: where the cursor ray meets a body, else where it
/// crosses the plane through the target facing the camera, else the target.
fn zoom_point(sim: &Simulation, ray: Option<(DVec3, DVec3)>, orbit: &OrbitCamera) -> Vec3 {
    let Some((o, d)) = ray else {
        return orbit.target;
    };
    if let Some((_, t)) = raycast::pick(&sim.world.bodies, &o, &d, false) {
        return to_render(&(o + t * d));
    }
    let (o, d) = (to_render(&o), to_render(&d));
    let n = orbit.transform().forward();
    let denom = d.dot(*n);
    if denom.abs() < 1e-6 {
        return orbit.target;
    }
    let t = (orbit.target - o).dot(*n) / denom;
    if t > 0.0 { o + t * d } else { orbit.target }
}

/// Put the camera's target on the followed body ([`CameraFollow`]), after the step.
fn follow_body(
    sim: Res<Simulation>,
    mut follow: ResMut<CameraFollow>,
    mut cameras: Query<&mut OrbitCamera>,
) {
    if follow.body.is_none() {
        return;
    }
    if follow.scene != sim.scene_path {
        follow.stop();
        return;
    }
    let Some(target) = follow.target(&sim.world) else {
        follow.stop();
        return;
    };
    let Ok(mut orbit) = cameras.single_mut() else {
        return;
    };
    // Moved by something else since the last frame: follow from there.
    let moved = follow.placed.map_or(Vec3::ZERO, |p| orbit.target - p);
    follow.offset += moved;
    let target = target + moved;
    follow.placed = Some(target);
    if orbit.target != target {
        orbit.target = target;
    }
}

fn apply_camera(mut q: Query<(&OrbitCamera, &mut Transform), Changed<OrbitCamera>>) {
    for (orbit, mut t) in &mut q {
        *t = orbit.transform();
    }
}

/// `gui --frame-all`: frame every body once the world has reached this step (the
/// startup steps).
#[derive(Resource, Debug)]
pub struct FrameAllAtStep(pub u64);

fn frame_all_at_step(
    mut commands: Commands,
    at: Option<Res<FrameAllAtStep>>,
    sim: Res<Simulation>,
    mut view: MessageWriter<ViewRequest>,
) {
    if let Some(at) = at
        && sim.world.step_index >= at.0
    {
        view.write(ViewRequest::FrameAll);
        commands.remove_resource::<FrameAllAtStep>();
    }
}

/// Carry out the view's requests (keys, buttons, scripts, a scene opened) on the state
/// just published: framing, presets, following, spawning at the cursor.
#[allow(clippy::too_many_arguments)]
fn carry_out_requests(
    mut requests: MessageReader<ViewRequest>,
    sim: Res<Simulation>,
    mut commands: MessageWriter<SimCommand>,
    mut follow: ResMut<CameraFollow>,
    mut selection: ResMut<Selection>,
    spawn: Res<SpawnSettings>,
    window: Single<&Window, With<PrimaryWindow>>,
    mut camera: Query<(&Camera, &GlobalTransform, &mut OrbitCamera)>,
    projection: Query<&Projection, With<OrbitCamera>>,
    mut provisional: ResMut<ProvisionalFraming>,
) {
    let asked: Vec<ViewRequest> = requests.read().copied().collect();
    let has = |r: ViewRequest| asked.contains(&r);
    for r in &asked {
        if let ViewRequest::Preset(preset) = r
            && let Ok((_, _, mut orbit)) = camera.single_mut()
        {
            (orbit.yaw, orbit.pitch) = preset.direction().unwrap_or((orbit.home.2, orbit.home.3));
        }
    }
    if has(ViewRequest::FollowSelection) {
        match selection.body {
            Some(i) if follow.body != Some(i) => {
                if let Some(b) = sim.world.bodies.get(i) {
                    follow.start(i, &sim, to_render(&b.position));
                }
            }
            _ => follow.stop(),
        }
    }
    let frame_all = has(ViewRequest::FrameAll);
    let frame_selection = has(ViewRequest::FrameSelection);
    if (frame_all || frame_selection)
        && let Ok((cam, _, mut orbit)) = camera.single_mut()
    {
        let only = if frame_all { None } else { selection.body };
        let fov = match projection.single() {
            Ok(Projection::Perspective(p)) => p.fov,
            _ => std::f32::consts::FRAC_PI_4,
        };
        let aspect = cam
            .logical_viewport_size()
            .map_or(16.0 / 9.0, |s| s.x / s.y.max(1.0));
        if (frame_all || only.is_some())
            && let Some((lo, hi)) = body_bounds(&sim, only)
        {
            orbit.frame(lo, hi, fov, aspect);
        }
    }
    let reframe = has(ViewRequest::Reframe);
    if let Ok((cam, _, mut orbit)) = camera.single_mut() {
        // The 3D view's aspect, once the panels have given it a viewport.
        let view = cam
            .viewport
            .as_ref()
            .map(|v| v.physical_size.x as f32 / v.physical_size.y.max(1) as f32);
        let redo = view.is_some()
            && provisional
                .0
                .take()
                .is_some_and(|p| p == orbit_state(&orbit));
        if reframe || redo {
            let aspect = view.unwrap_or(window.width() / window.height().max(1.0));
            *orbit = scene_framing(&sim.world, fov_of(projection.single().ok()), aspect);
            if view.is_none() {
                provisional.0 = Some(orbit_state(&orbit));
            }
        }
    }
    if reframe {
        selection.body = None;
    }
    if has(ViewRequest::SpawnAtCursor) {
        let Ok((cam, cam_transform, _)) = camera.single() else {
            return;
        };
        let Some((o, d)) = cursor_ray(&window, cam, cam_transform) else {
            return;
        };
        let shape = spawn.shape.shape(spawn.size);
        if let Some(p) = spawn_point(&sim, &shape, &o, &d) {
            let body = RigidBody::new(&shape, spawn.density, p, DQuat::identity());
            // The physics thread appends it: its index is the next one.
            selection.body = Some(sim.world.bodies.len());
            commands.write(SimCommand::Spawn(Box::new(body)));
        }
    }
}

/// Where a body of `shape` dropped at the cursor starts: above whatever the cursor ray
/// hits first (a body, else the plane z = 0), clear of every body nearby.
pub fn spawn_point(sim: &Simulation, shape: &Shape, o: &DVec3, d: &DVec3) -> Option<DVec3> {
    let r = shape.bounding_radius();
    let ground = if d.z.abs() > 1e-9 && -o.z / d.z > 0.0 {
        Some(o + (-o.z / d.z) * d)
    } else {
        None
    };
    let hit = raycast::pick(&sim.world.bodies, o, d, false)
        .map(|(_, t)| o + t * d)
        .or(ground)?;
    // Highest top of the bodies whose footprint is within reach of the drop column.
    let mut z = hit.z + r;
    for b in &sim.world.bodies {
        let rb = b.shape.bounding_radius();
        let horizontal = (b.position.xy() - hit.xy()).norm();
        if horizontal < r + rb {
            z = z.max(b.position.z + rb + r);
        }
    }
    Some(DVec3::new(hit.x, hit.y, z + 0.05 * r))
}

#[cfg(test)]
mod tests {
    use super::{CameraFollow, OrbitCamera};
    use bevy::prelude::*;

    fn ndc(cam: &OrbitCamera, p: Vec3, aspect: f32) -> Vec3 {
        let view = cam.transform().to_matrix().inverse();
        Mat4::perspective_rh(std::f32::consts::FRAC_PI_4, aspect, 0.1, 1000.0)
            .project_point3(view.transform_point3(p))
    }

    /// Zooming about a point keeps it under the same pixel (to f32 rounding) and moves
    /// the camera closer by the factor; the view's direction stays.
    #[test]
    fn zoom_about_keeps_the_point_under_the_cursor() {
        let mut cam = OrbitCamera::framing(Vec3::new(1.0, 2.0, 0.5), 4.0);
        for p in [Vec3::new(2.5, 1.0, 1.5), Vec3::new(-1.0, 3.0, 0.0)] {
            let before = ndc(&cam, p, 1.5);
            assert!(before.x.abs() < 1.0 && before.y.abs() < 1.0, "{before}");
            assert!(before.truncate().length() > 0.1, "off-centre: {before}");
            let (distance, yaw, pitch) = (cam.distance, cam.yaw, cam.pitch);
            cam.zoom_about(p, 0.6);
            let after = ndc(&cam, p, 1.5);
            assert!(
                (after - before).truncate().length() < 1e-4,
                "{before} → {after}"
            );
            assert!((cam.distance - 0.6 * distance).abs() < 1e-5);
            assert_eq!((cam.yaw, cam.pitch), (yaw, pitch));
        }
    }

    /// A followed body's displacement moves the target with it, keeping the offset.
    #[test]
    fn follow_moves_the_target_with_the_body() {
        let scene =
            crate::scene::load_scene(&crate::scene::resolve_scene("dda_rolling_sphere")).unwrap();
        let mut w = scene.build_world().unwrap();
        let target = Vec3::new(0.3, 2.5, 1.0);
        let f = CameraFollow::on(1, &w, target).unwrap();
        assert_eq!(f.target(&w), Some(target));
        let p0 = w.bodies[1].position;
        for _ in 0..300 {
            w.step().unwrap();
        }
        let moved = super::to_render(&(w.bodies[1].position - p0));
        assert!(moved.length() > 0.1, "the sphere rolled: {moved}");
        assert!((f.target(&w).unwrap() - (target + moved)).length() < 1e-5);
        assert!(CameraFollow::on(9, &w, target).is_none());
    }

    /// Opening a scene frames it: for every bundled scene, in views as wide as the app's
    /// and narrower, every body's bounding sphere lies inside the view frustum (each side
    /// plane and the near plane) and so does every container rim point, and the scene
    /// is not lost in the middle (some sphere comes within a tenth of the distance of
    /// a side of the view).
    #[test]
    fn scenes_open_framed() {
        let fov = PerspectiveProjection::default().fov;
        let scenes = crate::scene::bundled_scenes().unwrap();
        assert!(scenes.len() >= 20, "{scenes:?}");
        for path in scenes {
            let scene = crate::scene::load_scene(&path).unwrap();
            let world = scene.build_world().unwrap();
            let spheres = super::scene_spheres(&world);
            for aspect in [2.0, 16.0 / 9.0, 1.2] {
                let cam = super::scene_framing(&world, fov, aspect);
                let view = cam.transform().to_matrix().inverse();
                let tan_y = (0.5 * fov).tan();
                let tan_x = aspect * tan_y;
                let mut slack = f32::MAX;
                for (c, r) in &spheres {
                    let p = view.transform_point3(*c);
                    let depth = -p.z;
                    // Distances to the side planes (inward positive).
                    let side = |x: f32, t: f32| (t * depth - x.abs()) / (1.0 + t * t).sqrt();
                    let inside = side(p.x, tan_x).min(side(p.y, tan_y)).min(depth - 0.1);
                    assert!(
                        inside >= r - 1e-3 * (1.0 + r),
                        "{}: aspect {aspect}: sphere at {c} (r {r}) is {inside} inside",
                        path.display()
                    );
                    slack = slack.min(inside - r);
                }
                assert!(
                    slack < 0.1 * cam.distance,
                    "{}: aspect {aspect}: {slack} m to spare at {} m",
                    path.display(),
                    cam.distance
                );
            }
        }
    }

    /// After `frame`, every corner of the box projects inside the view (normalised device
    /// coordinates within ±1) for wide, square and tall views and any direction, and the
    /// box is not lost in the middle: some corner reaches 45 % of the half-view (the
    /// corners lie on the bounding sphere, fitted to 1/1.05 of the narrower half-view;
    /// seen along a short side they project further in).
    #[test]
    fn framing_keeps_the_box_in_view() {
        let (lo, hi) = (Vec3::new(-3.0, -1.0, 0.0), Vec3::new(5.0, 2.0, 7.0));
        let fov = std::f32::consts::FRAC_PI_4;
        for aspect in [16.0 / 9.0, 1.0, 0.6] {
            for (yaw, pitch) in [(-1.1, 0.42), (0.0, 0.12), (-1.2, 1.5607), (2.0, -0.3)] {
                let mut cam = OrbitCamera::framing(Vec3::ZERO, 1.0);
                (cam.yaw, cam.pitch) = (yaw, pitch);
                cam.frame(lo, hi, fov, aspect);
                let view = cam.transform().to_matrix().inverse();
                let proj = Mat4::perspective_rh(fov, aspect, 0.1, 1000.0);
                let mut reach: f32 = 0.0;
                for k in 0..8 {
                    let c = Vec3::new(
                        if k & 1 == 0 { lo.x } else { hi.x },
                        if k & 2 == 0 { lo.y } else { hi.y },
                        if k & 4 == 0 { lo.z } else { hi.z },
                    );
                    let ndc = proj.project_point3(view.transform_point3(c));
                    assert!(
                        ndc.x.abs() <= 1.0 && ndc.y.abs() <= 1.0,
                        "aspect {aspect}, yaw {yaw}, pitch {pitch}: corner {c} at {ndc}"
                    );
                    reach = reach.max(ndc.x.abs().max(ndc.y.abs()));
                }
                assert!(
                    reach > 0.45,
                    "aspect {aspect}, yaw {yaw}: the box fills {reach}"
                );
            }
        }
    }
}
