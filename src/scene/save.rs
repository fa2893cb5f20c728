//! A world's current state as a scene: every body written out with its shape, density,
//! position, orientation (a unit quaternion), velocity and angular velocity; the
//! containers as they are (removed walls and dividers too); the world's method,
//! parameters, time step, gravity and rotation integrator; the rest (name, duration,
//! seed, packing friction) from the scene the world came from.
//!
//! The rest of what a step reads goes into the scene's `resume` section
//! ([`super::resume`]): the step count and time, the sleep settings, sleeping bodies and
//! still timers, the contact margin and impact timing, the contact pass's warm-start
//! impulses and last projection, the method's own warm-start impulses (CCP, MDP) and the
//! energy ledger's totals. With it, the world built from the scene is the saved world:
//! it continues bit for bit as the saved world itself continues, under every method,
//! and its ledger continues the saved run's.
//!
//! [`state_scene`] chooses each number so that building the scene gives back the same
//! bits (f64 in RON's shortest round-trip form; it checks this by building the scene
//! and says which body does not round-trip, e.g. a polyhedron, whose principal frame is
//! recomputed on load). What a scene does not carry: the mouse spring and other forces
//! that are not the scene's constant forces, the diagnostics of the last step (its
//! solver report, phase times and collision trace; ETM's elastic energy left at the end
//! of the saved step shows in the first sample only, as 0) and the random seed's
//! stream, which only places generated bodies when a scene is first built (a saved
//! scene lists every body).

use super::Scene;
use super::resume::ResumeSpec;
use super::spec::{BodySpec, ContainerSpec, DividerSpec, OrientationSpec, ShapeSpec, V3, Walls};
use crate::body::RigidBody;
use crate::container::Container;
use crate::math::Vec3;
use crate::shapes::Shape;
use crate::world::{AppliedForce, World};

fn v3(v: &Vec3) -> V3 {
    V3::new(v.x, v.y, v.z)
}

/// The scene of `world`'s current state (module doc), named `name`; `base` is the scene
/// the world was built from, `forces` the constant forces to write (at most one a body;
/// not the world's `forces`, which may hold the app's mouse spring). An error names the
/// first body whose state the scene cannot carry exactly.
pub fn state_scene(
    base: &Scene,
    world: &World,
    forces: &[AppliedForce],
    name: &str,
) -> Result<Scene, String> {
    let mut scene = Scene::new(name);
    scene.description = format!(
        "State of \"{}\" at t = {} s (step {}), saved from Impulse Lab.",
        base.name, world.time, world.step_index
    );
    scene.gravity = v3(&world.gravity);
    scene.dt = world.dt;
    scene.duration = base.duration;
    scene.solver = world.solver_kind();
    scene.params = world.params.clone();
    scene.rotation = world.rotation;
    scene.seed = base.seed;
    scene.pack_friction = base.pack_friction;
    scene.reference_angle = base.reference_angle.clone();
    scene.region_of_interest = base.region_of_interest.clone();
    scene.overlap_check = false;
    let resume = ResumeSpec::of_world(world);
    scene.resume = Some(resume.clone());
    scene.containers = world.containers.iter().map(container_spec).collect();
    scene.bodies = world
        .bodies
        .iter()
        .enumerate()
        .map(|(i, b)| body_spec(b).map_err(|e| format!("body {i}: {e}")))
        .collect::<Result<_, _>>()?;
    for f in forces {
        let b: &mut BodySpec = scene
            .bodies
            .get_mut(f.body)
            .ok_or_else(|| format!("a force on body {}, which does not exist", f.body))?;
        if b.force.vec3() != Vec3::zeros() {
            return Err(format!(
                "body {}: two constant forces (a scene gives one a body)",
                f.body
            ));
        }
        b.force = v3(&f.force);
        b.force_offset = v3(&f.offset);
    }
    // Check: the scene builds the same bodies and containers, bit for bit.
    let built = scene.build_world().map_err(|e| e.to_string())?;
    if built.containers != world.containers {
        return Err("a container does not load back exactly from a scene".into());
    }
    for (i, (a, b)) in world.bodies.iter().zip(&built.bodies).enumerate() {
        if !same_body(a, b) {
            return Err(format!(
                "body {i} ({}) does not load back exactly from a scene",
                a.shape.kind_name()
            ));
        }
    }
    if ResumeSpec::of_world(&built) != resume {
        return Err("the step, sleep or warm-start state does not load back exactly".into());
    }
    Ok(scene)
}

/// Bitwise equality of everything a step reads of a body.
fn same_body(a: &RigidBody, b: &RigidBody) -> bool {
    let bits = |v: &Vec3| v.map(f64::to_bits);
    a.shape == b.shape
        && a.mass.to_bits() == b.mass.to_bits()
        && a.inv_mass.to_bits() == b.inv_mass.to_bits()
        && bits(&a.inertia) == bits(&b.inertia)
        && bits(&a.inv_inertia) == bits(&b.inv_inertia)
        && bits(&a.position) == bits(&b.position)
        && a.orientation.coords.map(f64::to_bits) == b.orientation.coords.map(f64::to_bits)
        && bits(&a.velocity) == bits(&b.velocity)
        && bits(&a.angular_velocity) == bits(&b.angular_velocity)
}

/// The next `k` floats above (k > 0) or below `x`.
fn ulps(x: f64, k: i64) -> f64 {
    f64::from_bits((x.to_bits() as i64 + k) as u64)
}

/// The first of `x`, its neighbours 1, −1, 2, −2, … ulps away for which `ok` holds.
fn nearest(x: f64, ok: impl Fn(f64) -> bool) -> Option<f64> {
    [0, 1, -1, 2, -2, 3, -3, 4, -4]
        .into_iter()
        .map(|k| ulps(x, k))
        .find(|&c| ok(c))
}

fn shape_spec(shape: &Shape) -> Result<ShapeSpec, String> {
    Ok(match shape {
        Shape::Sphere { radius } => ShapeSpec::Sphere { radius: *radius },
        Shape::Cuboid { half_extents } => ShapeSpec::Cuboid {
            size: None,
            half_extents: Some(v3(half_extents)),
        },
        Shape::Cross { c } => {
            // The format gives the bar length 3c; the one that divides back to c.
            let size = nearest(3.0 * c, |s| s / 3.0 == *c)
                .ok_or_else(|| format!("no bar length gives c = {c} exactly"))?;
            ShapeSpec::Cross { size }
        }
        Shape::Ellipsoid { semi_axes } => ShapeSpec::Ellipsoid {
            semi_axes: v3(semi_axes),
        },
        Shape::Rod { length, radius } => ShapeSpec::Rod {
            length: *length,
            radius: *radius,
        },
        Shape::ConvexPolyhedron(p) => ShapeSpec::Polyhedron {
            vertices: p.vertices.iter().map(v3).collect(),
        },
        Shape::MassPoints {
            points,
            masses,
            radius,
        } => ShapeSpec::MassPoints {
            points: points.iter().map(v3).collect(),
            masses: masses.clone(),
            radius: *radius,
        },
    })
}

fn body_spec(b: &RigidBody) -> Result<BodySpec, String> {
    let shape = shape_spec(&b.shape)?;
    // The density whose mass properties are the body's, bit for bit.
    let unit = b.shape.mass_properties(1.0).mass;
    let density = nearest(b.mass / unit, |rho| {
        let p = b.shape.principal(rho);
        p.mass.to_bits() == b.mass.to_bits()
            && p.inertia.map(f64::to_bits) == b.inertia.map(f64::to_bits)
    })
    .ok_or_else(|| format!("no density gives mass {} exactly", b.mass))?;
    let q = b.orientation.quaternion();
    Ok(BodySpec {
        shape,
        density,
        position: v3(&b.position),
        orientation: OrientationSpec::Quaternion {
            w: q.w,
            x: q.i,
            y: q.j,
            z: q.k,
        },
        velocity: v3(&b.velocity),
        angular_velocity: v3(&b.angular_velocity),
        is_static: b.is_static(),
        force: V3::new(0.0, 0.0, 0.0),
        force_offset: V3::new(0.0, 0.0, 0.0),
    })
}

fn container_spec(c: &Container) -> ContainerSpec {
    match c {
        Container::Plane { point, normal } => ContainerSpec::Plane {
            point: v3(point),
            normal: v3(normal),
        },
        Container::Box {
            center,
            half_size,
            height,
            walls,
            dividers,
        } => ContainerSpec::Box {
            center: v3(center),
            half_size: super::Vector(*half_size),
            height: *height,
            walls: Walls {
                neg_x: walls[0],
                pos_x: walls[1],
                neg_y: walls[2],
                pos_y: walls[3],
            },
            dividers: dividers
                .iter()
                .map(|d| DividerSpec {
                    x: d.x,
                    present: d.present,
                })
                .collect(),
        },
        Container::Cylinder {
            base,
            radius,
            height,
        } => ContainerSpec::Cylinder {
            base: v3(base),
            radius: *radius,
            height: *height,
        },
        Container::Hopper {
            base,
            bottom_radius,
            top_radius,
            height,
        } => ContainerSpec::Hopper {
            base: v3(base),
            bottom_radius: *bottom_radius,
            top_radius: *top_radius,
            height: *height,
        },
    }
}
