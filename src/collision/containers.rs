//! Contacts between bodies and static containers.
//!
//! Each container is a set of one-sided surfaces with an inward normal. Paper 001
//! ("Orientation of a plane and plane impenetrability", modified eqs. 5.8-5.9) shows why
//! the test must be one-sided: the penetration Δx = r − (x − r_s)·n̂ stays positive even
//! when a fast body's centre has crossed the surface, so the body is pushed back instead
//! of tunnelling. We evaluate the signed distance d(q) (> 0 on the allowed side) at:
//! - a sphere's centre (gap = d − r);
//! - every vertex of a polyhedron, cross or rod cap centre (gap = d − cap radius). The
//!   inside of a plane, cylinder or cone is convex-complement-free for these tests: the
//!   penetration is a convex function of the point, so its maximum over a convex body is
//!   attained at a vertex and vertex tests miss no contact;
//! - ellipsoids by SAGI (paper 002, Appendix A3), see [`super::ellipsoid`].

use super::collider::Collider;
use super::narrow_phase::make_contact;
use super::{Contact, FeatureId};
use crate::body::RigidBody;
use crate::container::Container;
use crate::math::Vec3;

/// A one-sided static surface.
#[derive(Clone, Copy, Debug)]
pub enum Surface {
    /// Plane through `point` with inward (allowed-side) unit normal `normal`. Points
    /// above `top` (world z) are ignored when `top` is finite (walls of finite height).
    Plane { point: Vec3, normal: Vec3, top: f64 },
    /// Inside of the vertical cylinder of radius `radius` around the axis through `base`,
    /// up to world height `top`.
    CylinderWall { base: Vec3, radius: f64, top: f64 },
    /// Inside of the truncated cone (axis +z through `base`), radius `r0` at `base.z`
    /// growing to `r1` at `base.z + height`.
    ConeWall {
        base: Vec3,
        r0: f64,
        r1: f64,
        height: f64,
    },
}

impl Surface {
    /// Signed distance of `q` from the surface (> 0 on the allowed side) and the inward
    /// unit normal at the nearest surface point; `None` if `q` is outside the surface's
    /// extent.
    #[inline]
    pub fn eval(&self, q: &Vec3) -> Option<(f64, Vec3)> {
        match *self {
            Surface::Plane { point, normal, top } => {
                (q.z <= top).then(|| ((q - point).dot(&normal), normal))
            }
            Surface::CylinderWall { base, radius, top } => {
                if q.z > top {
                    return None;
                }
                let rho_v = Vec3::new(q.x - base.x, q.y - base.y, 0.0);
                let rho = rho_v.norm();
                let n = if rho > 1e-300 {
                    -rho_v / rho
                } else {
                    -Vec3::x()
                };
                Some((radius - rho, n))
            }
            Surface::ConeWall {
                base,
                r0,
                r1,
                height,
            } => {
                let z = q.z - base.z;
                if z > height {
                    return None;
                }
                let rho_v = Vec3::new(q.x - base.x, q.y - base.y, 0.0);
                let rho = rho_v.norm();
                let radial = if rho > 1e-300 { rho_v / rho } else { Vec3::x() };
                // Generatrix from (r0, 0) to (r1, H) in the meridian plane; inward normal
                // (−H, r1 − r0)/L; distance (H/L)(r(z) − ρ) with r(z) = r0 + (r1 − r0) z/H.
                let l = (height * height + (r1 - r0) * (r1 - r0)).sqrt();
                let r_z = r0 + (r1 - r0) * z / height;
                let n = (-height * radial + Vec3::new(0.0, 0.0, r1 - r0)) / l;
                Some((height / l * (r_z - rho), n))
            }
        }
    }
}

/// The surfaces of `container` that can touch a body centred at `x` with bounding radius
/// `rb` (walls of a box act only on bodies inside its footprint, so a body that has left
/// through a removed wall is not pulled back by the others).
pub fn active_surfaces(container: &Container, x: &Vec3, rb: f64, out: &mut Vec<Surface>) {
    out.clear();
    match container {
        Container::Plane { point, normal } => out.push(Surface::Plane {
            point: *point,
            normal: normal.normalize(),
            top: f64::INFINITY,
        }),
        Container::Box {
            center,
            half_size: [hx, hy],
            height,
            walls,
            dividers,
        } => {
            out.push(Surface::Plane {
                point: *center,
                normal: Vec3::z(),
                top: f64::INFINITY,
            });
            let inside = (x.x - center.x).abs() <= hx + rb && (x.y - center.y).abs() <= hy + rb;
            if !inside || x.z > center.z + height + rb {
                return;
            }
            let top = center.z + height;
            let faces = [
                (Vec3::new(center.x - hx, center.y, center.z), Vec3::x()),
                (Vec3::new(center.x + hx, center.y, center.z), -Vec3::x()),
                (Vec3::new(center.x, center.y - hy, center.z), Vec3::y()),
                (Vec3::new(center.x, center.y + hy, center.z), -Vec3::y()),
            ];
            for (k, (point, normal)) in faces.into_iter().enumerate() {
                if walls[k] {
                    out.push(Surface::Plane { point, normal, top });
                }
            }
            for d in dividers.iter().filter(|d| d.present) {
                // Two-sided: a body is kept on the side its centre is on.
                let normal = if x.x >= d.x { Vec3::x() } else { -Vec3::x() };
                out.push(Surface::Plane {
                    point: Vec3::new(d.x, center.y, center.z),
                    normal,
                    top,
                });
            }
        }
        Container::Cylinder {
            base,
            radius,
            height,
        } => {
            let rho = ((x.x - base.x).powi(2) + (x.y - base.y).powi(2)).sqrt();
            if rho <= radius + rb {
                out.push(Surface::Plane {
                    point: *base,
                    normal: Vec3::z(),
                    top: f64::INFINITY,
                });
                if x.z <= base.z + height + rb {
                    out.push(Surface::CylinderWall {
                        base: *base,
                        radius: *radius,
                        top: base.z + height,
                    });
                }
            }
        }
        Container::Hopper {
            base,
            bottom_radius,
            top_radius,
            height,
        } => {
            let z = x.z - base.z;
            let rho = ((x.x - base.x).powi(2) + (x.y - base.y).powi(2)).sqrt();
            let r_z = bottom_radius + (top_radius - bottom_radius) * z.clamp(0.0, *height) / height;
            if z >= -rb && z <= height + rb && rho <= r_z + rb {
                out.push(Surface::ConeWall {
                    base: *base,
                    r0: *bottom_radius,
                    r1: *top_radius,
                    height: *height,
                });
            }
        }
    }
}

/// Contacts of body `i` with container `ci`, appended to `out`.
#[allow(clippy::too_many_arguments)]
pub fn body_container(
    bodies: &[RigidBody],
    colliders: &[Collider],
    i: usize,
    ci: usize,
    container: &Container,
    margin: f64,
    surfaces: &mut Vec<Surface>,
    out: &mut Vec<Contact>,
) {
    let body = &bodies[i];
    let rb = body.shape.bounding_radius();
    active_surfaces(container, &body.position, rb, surfaces);
    let start = out.len();
    for (k, s) in surfaces.iter().enumerate() {
        let k = k as u64;
        match &colliders[i] {
            Collider::Sphere { radius } => {
                if point_contact(bodies, i, s, &body.position, *radius, margin, out) {
                    set_last(out, FeatureId { a: 0, b: k });
                }
            }
            Collider::Parry { points, radius, .. } => {
                debug_assert!(
                    points
                        .iter()
                        .all(|p| p.norm() + radius <= rb * (1.0 + 1e-12)),
                    "a collider point lies outside the bounding radius {rb}"
                );
                if !beyond_reach(s, &body.position, rb, margin) {
                    vertex_contacts(bodies, i, s, k, points, *radius, margin, out);
                }
            }
            Collider::Ellipsoid { semi_axes } => {
                let first = out.len();
                super::ellipsoid::body_surface(bodies, i, semi_axes, s, margin, out);
                for c in &mut out[first..] {
                    c.feature.b = k;
                }
            }
        }
    }
    for c in &mut out[start..] {
        c.container = Some(ci);
    }
}

/// Whether no point of a body centred at `x` with bounding radius `rb` can come within
/// `margin` of surface `s`, so that its vertex tests can be skipped.
///
/// Each surface's signed distance d is 1-Lipschitz in the point (a plane's with its unit
/// normal; the cylinder's r − ρ; the cone's (H/L)(r(z) − ρ), whose gradient
/// (H/L)((r₁ − r₀)/H ẑ − ρ̂) has norm 1), and a vertex q, or a cap centre with its
/// radius r, lies within rb of the centre (|q − x| + r ≤ rb). So d(q) − r ≥ d(x) − rb,
/// and no contact exists when d(x) − rb ≥ margin. The test keeps a slack of 1e-9 of the
/// scene's length scale, far above the rounding of the vertex positions and distances,
/// so that a skipped surface is one whose vertex tests would have found nothing.
fn beyond_reach(s: &Surface, x: &Vec3, rb: f64, margin: f64) -> bool {
    s.eval(x).is_some_and(|(d, _)| {
        let slack = 1e-9 * (1.0 + x.norm() + rb + margin.abs());
        d - rb >= margin + slack
    })
}

/// Contacts of the body-frame points `points` of body `i` (balls of radius `radius`)
/// against surface `s`, the `k`-th of its container.
#[allow(clippy::too_many_arguments)]
fn vertex_contacts(
    bodies: &[RigidBody],
    i: usize,
    s: &Surface,
    k: u64,
    points: &[Vec3],
    radius: f64,
    margin: f64,
    out: &mut Vec<Contact>,
) {
    let iso = bodies[i].isometry();
    for (v, p) in points.iter().enumerate() {
        let q = iso * crate::math::Point3::from(*p);
        if point_contact(bodies, i, s, &q.coords, radius, margin, out) {
            set_last(out, FeatureId { a: v as u64, b: k });
        }
    }
}

/// Give the last contact of `out` its feature id.
fn set_last(out: &mut [Contact], id: FeatureId) {
    if let Some(c) = out.last_mut() {
        c.feature = id;
    }
}

/// Contact of a ball of radius `r` centred at `q` (a sphere, or a vertex with r = 0)
/// against surface `s`; whether there is one.
fn point_contact(
    bodies: &[RigidBody],
    i: usize,
    s: &Surface,
    q: &Vec3,
    r: f64,
    margin: f64,
    out: &mut Vec<Contact>,
) -> bool {
    if let Some((d, n)) = s.eval(q) {
        let gap = d - r;
        if gap < margin {
            out.push(make_contact(bodies, i, None, q - r * n, q - d * n, n, gap));
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::Divider;
    use crate::math::Quat;
    use crate::shapes::Shape;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Skipping the surfaces a body's bounding ball stays `margin` clear of loses no
    /// contact: over random poses of crosses, cubes and rods near the floor, walls,
    /// dividers, a cylinder's wall and a hopper's cone, `body_container` gives exactly
    /// the contacts of testing every point against every active surface.
    #[test]
    fn skipped_surfaces_have_no_contacts() {
        let shapes = [
            Shape::Cross { c: 1.26 },
            Shape::Cuboid {
                half_extents: Vec3::new(1.2, 0.5, 0.8),
            },
            Shape::Rod {
                length: 3.0,
                radius: 0.2,
            },
        ];
        let containers = [
            Container::Box {
                center: Vec3::zeros(),
                half_size: [10.0, 8.0],
                height: 12.0,
                walls: [true, true, true, false],
                dividers: vec![Divider {
                    x: 2.0,
                    present: true,
                }],
            },
            Container::Cylinder {
                base: Vec3::new(1.0, -2.0, 0.0),
                radius: 9.0,
                height: 12.0,
            },
            Container::Hopper {
                base: Vec3::new(0.0, 0.0, 1.0),
                bottom_radius: 3.0,
                top_radius: 10.0,
                height: 12.0,
            },
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(27);
        let (mut surfaces, mut all) = (Vec::new(), Vec::new());
        let (mut out, mut expected) = (Vec::new(), Vec::new());
        let (mut skipped, mut touching) = (0, 0);
        for shape in &shapes {
            for (ci, container) in containers.iter().enumerate() {
                for _ in 0..300 {
                    let x = Vec3::new(
                        rng.random_range(-11.0..11.0),
                        rng.random_range(-11.0..11.0),
                        rng.random_range(-1.0..14.0),
                    );
                    let q = Quat::from_euler_angles(
                        rng.random_range(-3.2..3.2),
                        rng.random_range(-1.6..1.6),
                        rng.random_range(-3.2..3.2),
                    );
                    let bodies = vec![RigidBody::new(shape, 1000.0, x, q)];
                    let colliders = vec![Collider::new(&bodies[0].shape)];
                    let margin = rng.random_range(0.0..0.5);
                    out.clear();
                    body_container(
                        &bodies,
                        &colliders,
                        0,
                        ci,
                        container,
                        margin,
                        &mut surfaces,
                        &mut out,
                    );
                    let Collider::Parry { points, radius, .. } = &colliders[0] else {
                        unreachable!("polyhedra and rods are parry colliders")
                    };
                    let rb = bodies[0].shape.bounding_radius();
                    active_surfaces(container, &x, rb, &mut all);
                    expected.clear();
                    for (k, s) in all.iter().enumerate() {
                        skipped += usize::from(beyond_reach(s, &x, rb, margin));
                        vertex_contacts(
                            &bodies,
                            0,
                            s,
                            k as u64,
                            points,
                            *radius,
                            margin,
                            &mut expected,
                        );
                    }
                    for c in &mut expected {
                        c.container = Some(ci);
                    }
                    assert_eq!(out, expected);
                    touching += usize::from(!out.is_empty());
                }
            }
        }
        // Not vacuous: many surfaces are skipped and many poses touch.
        assert!(
            skipped > 1000 && touching > 500,
            "{skipped} skipped, {touching} touching"
        );
    }
}
