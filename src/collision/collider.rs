//! Collision geometry of a body, built once from its [`Shape`].
//!
//! Curved shapes keep their exact analytic form (spheres; ellipsoids handled by SAGI,
//! paper 002); polyhedral shapes and rods become parry shapes so that parry's contact
//! manifolds give multi-point contacts (a cube lying on a cube yields 4 points). The
//! non-convex cross is a compound of its three convex bars.

use crate::math::{Iso3, Point3, Vec3};
use crate::shapes::Shape;
use parry3d_f64::shape::SharedShape;
use std::sync::Arc;

#[derive(Clone)]
pub enum Collider {
    Sphere {
        radius: f64,
    },
    Ellipsoid {
        semi_axes: Vec3,
    },
    /// Polyhedra, rods and crosses: the parry shape plus the body-frame points that can
    /// touch a container (vertices; for a rod the two cap centres, with `radius`).
    /// Shared (`Arc`), like the shape: a copy of a world copies no geometry.
    ///
    /// `parts` are the convex parts (body-frame pose, shape): the compound's part list
    /// for crosses and mass points, the shape itself otherwise. `order` lists the
    /// compound's part indices in the depth-first order of its bounding-volume tree,
    /// the order in which parry's compound queries visit them (empty for a shape that
    /// is not a compound).
    Parry {
        shape: SharedShape,
        points: Arc<[Vec3]>,
        radius: f64,
        parts: Arc<[(Iso3, SharedShape)]>,
        order: Arc<[u32]>,
    },
}

impl Collider {
    pub fn new(shape: &Shape) -> Collider {
        match shape {
            Shape::Sphere { radius } => Collider::Sphere { radius: *radius },
            Shape::Ellipsoid { semi_axes } => Collider::Ellipsoid {
                semi_axes: *semi_axes,
            },
            Shape::Cuboid { half_extents: h } => {
                let s = SharedShape::cuboid(h.x, h.y, h.z);
                Collider::Parry {
                    points: shape.vertices().unwrap_or_default().into(),
                    radius: 0.0,
                    parts: vec![(Iso3::identity(), s.clone())].into(),
                    order: Arc::new([]),
                    shape: s,
                }
            }
            Shape::Cross { c } => {
                let parts: Vec<(Iso3, SharedShape)> = Shape::cross_bars(*c)
                    .iter()
                    .map(|h| (Iso3::identity(), SharedShape::cuboid(h.x, h.y, h.z)))
                    .collect();
                let compound = SharedShape::compound(parts.clone());
                Collider::Parry {
                    order: leaf_order(&compound),
                    shape: compound,
                    points: shape.vertices().unwrap_or_default().into(),
                    radius: 0.0,
                    parts: parts.into(),
                }
            }
            Shape::Rod { length, radius } => {
                let s = SharedShape::capsule_z(0.5 * length, *radius);
                let half = Vec3::new(0.0, 0.0, 0.5 * length);
                Collider::Parry {
                    points: vec![-half, half].into(),
                    radius: *radius,
                    parts: vec![(Iso3::identity(), s.clone())].into(),
                    order: Arc::new([]),
                    shape: s,
                }
            }
            Shape::MassPoints { points, radius, .. } => {
                let parts: Vec<(Iso3, SharedShape)> = points
                    .iter()
                    .map(|p| (Iso3::translation(p.x, p.y, p.z), SharedShape::ball(*radius)))
                    .collect();
                let compound = SharedShape::compound(parts.clone());
                Collider::Parry {
                    order: leaf_order(&compound),
                    shape: compound,
                    points: points.clone().into(),
                    radius: *radius,
                    parts: parts.into(),
                }
            }
            Shape::ConvexPolyhedron(p) => {
                let pts: Vec<Point3> = p.vertices.iter().map(|v| Point3::from(*v)).collect();
                // The shape was validated to have positive volume, so the hull exists; a
                // degenerate hull falls back to its bounding ball rather than panicking.
                let s = SharedShape::convex_hull(&pts)
                    .unwrap_or_else(|| SharedShape::ball(shape.bounding_radius()));
                Collider::Parry {
                    points: p.vertices.clone().into(),
                    radius: 0.0,
                    parts: vec![(Iso3::identity(), s.clone())].into(),
                    order: Arc::new([]),
                    shape: s,
                }
            }
        }
    }
}

/// A compound's part indices in the depth-first order of its bounding-volume tree (left
/// child first, as parry's `Bvh::leaves` yields them); empty for any other shape.
fn leaf_order(shape: &SharedShape) -> Arc<[u32]> {
    shape
        .as_compound()
        .map_or_else(Vec::new, |c| c.bvh().leaves(|_| true).collect())
        .into()
}
