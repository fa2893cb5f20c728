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
    let reach = body.shape.bounding_radius();
    active_surfaces(container, &body.position, reach, surfaces);
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
                if beyond_reach(s, &body.position, reach, margin) {
                    continue;
                }
                let iso = body.isometry();
                for (v, p) in points.iter().enumerate() {
                    let q = iso * crate::math::Point3::from(*p);
                    if point_contact(bodies, i, s, &q.coords, *radius, margin, out) {
                        set_last(out, FeatureId { a: v as u64, b: k });
                    }
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

/// Whether no point within `reach` of `centre` (the body's vertices, or its cap spheres
/// when `reach` includes their radius) can come within `margin` of plane or cylinder
/// surface `s`: their signed distances are 1-Lipschitz, so every such point is at least
/// d(centre) − `reach` from it. A relative slack of 10⁻⁹ keeps the test on the safe side
/// of rounding, so it skips only vertices that would give no contact.
fn beyond_reach(s: &Surface, centre: &Vec3, reach: f64, margin: f64) -> bool {
    if !matches!(s, Surface::Plane { .. } | Surface::CylinderWall { .. }) {
        return false;
    }
    s.eval(centre)
        .is_some_and(|(d, _)| d - reach > margin + 1e-9 * (d.abs() + reach + margin.abs() + 1.0))
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
    use crate::math::Quat;
    use crate::shapes::Shape;

    /// Every vertex against every active surface, without the reach test: what
    /// [`body_container`] must give.
    fn all_vertices(
        bodies: &[RigidBody],
        colliders: &[Collider],
        container: &Container,
        margin: f64,
    ) -> Vec<Contact> {
        let mut surfaces = Vec::new();
        let mut out = Vec::new();
        let body = &bodies[0];
        active_surfaces(
            container,
            &body.position,
            body.shape.bounding_radius(),
            &mut surfaces,
        );
        let Collider::Parry { points, radius, .. } = &colliders[0] else {
            unreachable!("polyhedral shapes only")
        };
        for (k, s) in surfaces.iter().enumerate() {
            for (v, p) in points.iter().enumerate() {
                let q = body.isometry() * crate::math::Point3::from(*p);
                if point_contact(bodies, 0, s, &q.coords, *radius, margin, &mut out) {
                    set_last(
                        &mut out,
                        FeatureId {
                            a: v as u64,
                            b: k as u64,
                        },
                    );
                }
            }
        }
        for c in &mut out {
            c.container = Some(0);
        }
        out
    }

    /// The reach test skips only surfaces no vertex can touch: cubes, crosses and rods
    /// at 4,000 random poses in the corners of a box and inside a cylinder, their
    /// centres 0.5-1.1 bounding radii from the floor and walls, get the same contacts,
    /// bit for bit, as testing every vertex.
    #[test]
    fn skipping_surfaces_out_of_reach_loses_no_contact() {
        let containers = [
            Container::Box {
                center: Vec3::zeros(),
                half_size: [1.0, 1.5],
                height: 1.0,
                walls: [true; 4],
                dividers: vec![],
            },
            Container::Cylinder {
                base: Vec3::zeros(),
                radius: 1.2,
                height: 1.0,
            },
        ];
        let shapes = [
            Shape::Cuboid {
                half_extents: Vec3::new(0.2, 0.1, 0.3),
            },
            Shape::Cross { c: 0.15 },
            Shape::Rod {
                length: 0.6,
                radius: 0.05,
            },
        ];
        // A small deterministic generator (no dependency on a random crate's stream).
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut uniform = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        let margin = 0.01;
        let (mut total, mut touching) = (0, 0);
        for container in &containers {
            for shape in &shapes {
                let colliders = [Collider::new(shape)];
                for _ in 0..667 {
                    // The centre between half and 1.1 times the bounding radius from
                    // the floor, and from an x wall and a y wall (the box's; inside
                    // the cylinder these are near its wall or well inside), where the
                    // nearest vertex decides.
                    let reach = shape.bounding_radius();
                    let near = |u: f64| reach * (0.5 + 0.6 * u);
                    let side = |u: f64| if u < 0.5 { -1.0 } else { 1.0 };
                    let position = Vec3::new(
                        side(uniform()) * (1.0 - near(uniform())),
                        side(uniform()) * (1.5 - near(uniform())),
                        near(uniform()),
                    );
                    let axis = Vec3::new(uniform() - 0.5, uniform() - 0.5, uniform() - 0.5);
                    let q = Quat::from_scaled_axis(axis * 6.0);
                    let bodies = [RigidBody::new(shape, 1000.0, position, q)];
                    let mut surfaces = Vec::new();
                    let mut got = Vec::new();
                    body_container(
                        &bodies,
                        &colliders,
                        0,
                        0,
                        container,
                        margin,
                        &mut surfaces,
                        &mut got,
                    );
                    let want = all_vertices(&bodies, &colliders, container, margin);
                    assert_eq!(got.len(), want.len(), "{shape:?} at {position:?}");
                    for (g, w) in got.iter().zip(&want) {
                        assert_eq!(g.feature, w.feature);
                        assert_eq!(g.point, w.point);
                        assert_eq!(g.gap.to_bits(), w.gap.to_bits());
                    }
                    total += 1;
                    touching += usize::from(!got.is_empty());
                }
            }
        }
        // The poses must exercise both sides of the test.
        assert!(
            touching > total / 10 && touching < total,
            "{touching} of {total}"
        );
    }
}
