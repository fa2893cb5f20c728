//! Ellipsoid contacts (paper 002): SAGI for ellipsoid–ellipsoid, ellipsoid–sphere and
//! ellipsoid against planes, cylinder and cone walls (section 3, Appendix A3); GJK/EPA on
//! the ellipsoid's support map for ellipsoid–polyhedron, rod and cross parts.

use super::Contact;
use super::collider::Collider;
use super::contact::FeatureId;
use super::containers::Surface;
use super::narrow_phase::make_contact;
use super::sagi::{self, EllipsoidPose, EllipsoidSupportMap, SagiResult};
use crate::body::RigidBody;
use crate::math::{Iso3, Vec3};
use parry3d_f64::query::contact::contact_support_map_support_map;

/// SAGI tolerance (relative to the ellipsoid size) and iteration cap. The paper reports
/// convergence in a handful of iterations; the cap only guards degenerate input.
const SAGI_TOL: f64 = 1e-12;
const SAGI_MAX_ITER: u32 = 100;

fn pose(b: &RigidBody, semi_axes: &Vec3) -> EllipsoidPose {
    EllipsoidPose {
        semi_axes: *semi_axes,
        position: b.position,
        orientation: b.orientation,
    }
}

/// Push a SAGI result as a contact of `a` (the ellipsoid side `point_a`) against `b`.
fn push(
    bodies: &[RigidBody],
    a: usize,
    b: Option<usize>,
    r: &SagiResult,
    margin: f64,
    out: &mut Vec<Contact>,
) {
    push_feature(bodies, a, b, r, FeatureId::default(), margin, out);
}

/// [`push`] with the contact's features `feature` (its identity within the pair).
fn push_feature(
    bodies: &[RigidBody],
    a: usize,
    b: Option<usize>,
    r: &SagiResult,
    feature: FeatureId,
    margin: f64,
    out: &mut Vec<Contact>,
) {
    if r.distance < margin && r.distance.is_finite() && (r.normal.norm() - 1.0).abs() < 1e-6 {
        let mut c = make_contact(
            bodies,
            a,
            b,
            r.point_a,
            r.point_b,
            r.normal.normalize(),
            r.distance,
        );
        c.feature = feature;
        out.push(c);
    }
}

/// Contacts between bodies `a` and `b`, at least one of which is an ellipsoid.
pub fn body_body(
    bodies: &[RigidBody],
    colliders: &[Collider],
    a: usize,
    b: usize,
    margin: f64,
    out: &mut Vec<Contact>,
) {
    match (&colliders[a], &colliders[b]) {
        (Collider::Ellipsoid { semi_axes: ea }, Collider::Ellipsoid { semi_axes: eb }) => {
            let r = sagi::ellipsoid_ellipsoid(
                &pose(&bodies[a], ea),
                &pose(&bodies[b], eb),
                SAGI_TOL,
                SAGI_MAX_ITER,
            );
            push(bodies, a, Some(b), &r, margin, out);
        }
        (Collider::Ellipsoid { semi_axes }, other) => {
            ellipsoid_other(bodies, a, semi_axes, b, other, margin, false, out)
        }
        (other, Collider::Ellipsoid { semi_axes }) => {
            ellipsoid_other(bodies, b, semi_axes, a, other, margin, true, out)
        }
        _ => unreachable!("called only when one side is an ellipsoid"),
    }
}

/// Ellipsoid body `e` against a non-ellipsoid body `o`. Contacts are emitted with
/// `a < b` as the pipeline orders them: if `swap`, `o` is `a`.
#[allow(clippy::too_many_arguments)]
fn ellipsoid_other(
    bodies: &[RigidBody],
    e: usize,
    semi_axes: &Vec3,
    o: usize,
    other: &Collider,
    margin: f64,
    swap: bool,
    out: &mut Vec<Contact>,
) {
    let pe = pose(&bodies[e], semi_axes);
    // Each result with the index of the other body's convex part it touches: one
    // contact per part, each part its own feature (the contact's identity in the pair).
    let mut results: Vec<(u32, SagiResult)> = Vec::new();
    match other {
        Collider::Sphere { radius } => {
            // Closest point of the ellipsoid to the sphere centre (SAGI, section 3.1).
            let c = bodies[o].position;
            let (p, d, iterations) =
                sagi::closest_point_on_ellipsoid(&pe, &c, SAGI_TOL, SAGI_MAX_ITER);
            let n_out = outward_normal(&pe, &p);
            // Normal from the sphere (b) to the ellipsoid (a): minus the outward normal.
            results.push((
                0,
                SagiResult {
                    point_a: p,
                    point_b: c + *radius * n_out,
                    normal: -n_out,
                    distance: d - *radius,
                    iterations,
                    converged: true,
                },
            ));
        }
        Collider::Parry { parts, .. } => {
            let iso_e = bodies[e].isometry();
            let iso_o = bodies[o].isometry();
            let map = EllipsoidSupportMap {
                semi_axes: *semi_axes,
            };
            for (k, (part_pos, part)) in parts.iter().enumerate() {
                let Some(sm) = part.as_support_map() else {
                    continue;
                };
                let iso_part: Iso3 = iso_o * part_pos;
                let pos12 = iso_e.inv_mul(&iso_part);
                if let Some(c) = contact_support_map_support_map(&pos12, &map, sm, margin) {
                    let p1 = (iso_e * c.point1).coords;
                    let p2 = (iso_part * c.point2).coords;
                    let n1 = iso_e * c.normal1.into_inner();
                    results.push((
                        k as u32,
                        SagiResult {
                            point_a: p1,
                            point_b: p2,
                            normal: -n1,
                            distance: c.dist,
                            iterations: 0,
                            converged: true,
                        },
                    ));
                }
            }
        }
        Collider::Ellipsoid { .. } => unreachable!("ellipsoid pairs are handled by SAGI directly"),
    }
    for (part, r) in results {
        // The part on the other body's side of the pair: a if swapped, b otherwise.
        let part = FeatureId::part_feature(part, 0);
        if swap {
            let flipped = SagiResult {
                point_a: r.point_b,
                point_b: r.point_a,
                normal: -r.normal,
                ..r
            };
            let feature = FeatureId { a: part, b: 0 };
            push_feature(bodies, o, Some(e), &flipped, feature, margin, out);
        } else {
            let feature = FeatureId { a: 0, b: part };
            push_feature(bodies, e, Some(o), &r, feature, margin, out);
        }
    }
}

/// Outward unit normal of the ellipsoid at surface point `p` (world): R A⁻² Rᵀ (p − x),
/// normalised (paper 002, section 2).
fn outward_normal(e: &EllipsoidPose, p: &Vec3) -> Vec3 {
    let local = e.orientation.inverse_transform_vector(&(p - e.position));
    let g = local.component_div(&e.semi_axes.component_mul(&e.semi_axes));
    let n = e.orientation * g;
    let len = n.norm();
    if len > 0.0 { n / len } else { Vec3::z() }
}

/// Ellipsoid body `i` against one container surface (paper 002, Appendix A3).
pub fn body_surface(
    bodies: &[RigidBody],
    i: usize,
    semi_axes: &Vec3,
    s: &Surface,
    margin: f64,
    out: &mut Vec<Contact>,
) {
    let pe = pose(&bodies[i], semi_axes);
    let (r, top) = match *s {
        Surface::Plane { point, normal, top } => (sagi::ellipsoid_plane(&pe, &point, &normal), top),
        Surface::CylinderWall { base, radius, top } => {
            (sagi::ellipsoid_cylinder_inner(&pe, &base, radius), top)
        }
        Surface::ConeWall {
            base,
            r0,
            r1,
            height,
        } => (
            sagi::ellipsoid_cone_inner(&pe, &base, r0, r1, height),
            base.z + height,
        ),
    };
    if r.point_a.z <= top {
        push(bodies, i, None, &r, margin, out);
    }
}
