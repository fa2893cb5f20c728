//! Body shapes and their exact mass properties.
//!
//! Every shape is described in its own *shape frame*. [`Shape::principal`] re-expresses a
//! shape in its *principal frame* (origin at the centre of mass, axes along the principal
//! axes of inertia); rigid bodies always store their shape in that frame, so the body
//! inertia tensor is diagonal and the rotational integrators of paper 004 apply directly.

mod mass;
mod polyhedron;

pub use mass::MassProperties;
pub use polyhedron::ConvexPolyhedron;

use crate::math::{Mat3, Quat, Vec3};
use serde::{Deserialize, Serialize};

/// A body shape. All lengths in metres.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Shape {
    /// Ball of radius `radius`.
    Sphere { radius: f64 },
    /// Box with half-extents along the shape-frame axes.
    Cuboid { half_extents: Vec3 },
    /// Non-convex cross (paper 000, Fig. 10c): three orthogonal bars of size 3c × c × c
    /// sharing their centre. Volume 7c³. The paper's crosses have 3c = 3.78 m.
    Cross { c: f64 },
    /// Ellipsoid x²/a² + y²/b² + z²/c² ≤ 1 with `semi_axes = (a, b, c)` (paper 002, eq. 1).
    Ellipsoid { semi_axes: Vec3 },
    /// Slender rod: a capsule whose axis is the shape-frame z axis, with `length` between
    /// the centres of its two hemispherical caps and radius `radius` (paper 003, Painlevé).
    Rod { length: f64, radius: f64 },
    /// Convex polyhedron given by its vertices (tetrahedra included).
    ConvexPolyhedron(ConvexPolyhedron),
    /// Rigid set of mass points joined by massless rods (paper 003 §4.1, the six-mass-point
    /// body): point `points[k]` carries mass `masses[k]` (kg, not scaled by a density) and
    /// touches other shapes as a massless ball of radius `radius` around it; the rods do
    /// not collide.
    MassPoints {
        points: Vec<Vec3>,
        masses: Vec<f64>,
        radius: f64,
    },
}

/// A shape re-expressed in its principal frame (see [`Shape::principal`]).
#[derive(Clone, Debug)]
pub struct PrincipalShape {
    /// The shape with its centre of mass at the origin and principal axes along x, y, z.
    pub shape: Shape,
    /// Mass in kg.
    pub mass: f64,
    /// Principal moments of inertia (kg m²) about x, y, z of the principal frame.
    pub inertia: Vec3,
    /// Centre of mass in the original shape frame.
    pub center_of_mass: Vec3,
    /// Rotation taking principal-frame vectors to original shape-frame vectors.
    pub rotation: Quat,
}

impl Shape {
    /// Regular tetrahedron of edge length `edge`, centred on its centroid, with one face
    /// parallel to the xy plane and the opposite vertex on +z.
    pub fn regular_tetrahedron(edge: f64) -> Shape {
        Shape::ConvexPolyhedron(ConvexPolyhedron::regular_tetrahedron(edge))
    }

    /// Short lowercase name used in CSV/JSON output and scene files.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Shape::Sphere { .. } => "sphere",
            Shape::Cuboid { .. } => "cuboid",
            Shape::Cross { .. } => "cross",
            Shape::Ellipsoid { .. } => "ellipsoid",
            Shape::Rod { .. } => "rod",
            Shape::ConvexPolyhedron(p) if p.vertices.len() == 4 => "tetrahedron",
            Shape::ConvexPolyhedron(_) => "polyhedron",
            Shape::MassPoints { .. } => "mass_points",
        }
    }

    /// Exact volume, mass, centre of mass and inertia tensor (about the centre of mass,
    /// in the shape frame) for a uniform `density` (kg/m³).
    pub fn mass_properties(&self, density: f64) -> MassProperties {
        mass::mass_properties(self, density)
    }

    /// The shape moved to its principal frame, with mass and principal inertia.
    pub fn principal(&self, density: f64) -> PrincipalShape {
        mass::principal(self, density)
    }

    /// Radius of the smallest origin-centred ball containing the shape (shape frame).
    pub fn bounding_radius(&self) -> f64 {
        match self {
            Shape::Sphere { radius } => *radius,
            Shape::Cuboid { half_extents } => half_extents.norm(),
            Shape::Cross { c } => (1.5 * 1.5 + 0.5 * 0.5 + 0.5 * 0.5f64).sqrt() * c,
            Shape::Ellipsoid { semi_axes } => semi_axes.max(),
            Shape::Rod { length, radius } => 0.5 * length + radius,
            Shape::ConvexPolyhedron(p) => p.vertices.iter().map(|v| v.norm()).fold(0.0, f64::max),
            Shape::MassPoints { points, radius, .. } => {
                points.iter().map(|v| v.norm()).fold(0.0, f64::max) + radius
            }
        }
    }

    /// Vertices of a polyhedral shape in the shape frame (cuboid: 8; cross: the 8 corners
    /// of each of its 3 bars; polyhedron: its vertices). `None` for curved shapes.
    pub fn vertices(&self) -> Option<Vec<Vec3>> {
        match self {
            Shape::Cuboid { half_extents: h } => Some(box_corners(h)),
            Shape::Cross { c } => {
                Some(Shape::cross_bars(*c).iter().flat_map(box_corners).collect())
            }
            Shape::ConvexPolyhedron(p) => Some(p.vertices.clone()),
            _ => None,
        }
    }

    /// Half-extents of the three bars of a cross of size `c` (along x, y and z).
    pub fn cross_bars(c: f64) -> [Vec3; 3] {
        let (l, s) = (1.5 * c, 0.5 * c);
        [Vec3::new(l, s, s), Vec3::new(s, l, s), Vec3::new(s, s, l)]
    }

    /// Check that every dimension is finite and positive; returns the offending field.
    pub fn validate(&self) -> Result<(), String> {
        let pos = |name: &str, x: f64| {
            if x.is_finite() && x > 0.0 {
                Ok(())
            } else {
                Err(format!("{name} must be finite and > 0, got {x}"))
            }
        };
        match self {
            Shape::Sphere { radius } => pos("radius", *radius),
            Shape::Cuboid { half_extents: h } => (0..3).try_for_each(|i| pos("half_extents", h[i])),
            Shape::Cross { c } => pos("c", *c),
            Shape::Ellipsoid { semi_axes: a } => (0..3).try_for_each(|i| pos("semi_axes", a[i])),
            Shape::Rod { length, radius } => pos("length", *length).and(pos("radius", *radius)),
            Shape::ConvexPolyhedron(p) => p.validate(),
            Shape::MassPoints {
                points,
                masses,
                radius,
            } => {
                pos("radius", *radius)?;
                masses.iter().try_for_each(|m| pos("masses", *m))?;
                if points.len() != masses.len() || points.is_empty() {
                    return Err(format!(
                        "need one mass per point and at least one point, got {} points and {} masses",
                        points.len(),
                        masses.len()
                    ));
                }
                if points.iter().any(|p| !p.iter().all(|x| x.is_finite())) {
                    return Err("every point must be finite".into());
                }
                // All principal moments > 0: the points must not lie on one line.
                let i = self.mass_properties(1.0).inertia;
                let moments = i.symmetric_eigenvalues();
                if moments.min() <= 1e-12 * moments.max() {
                    return Err("the points lie on one line: an inertia moment is zero".into());
                }
                Ok(())
            }
        }
    }
}

fn box_corners(h: &Vec3) -> Vec<Vec3> {
    let mut out = Vec::with_capacity(8);
    for sx in [-1.0, 1.0] {
        for sy in [-1.0, 1.0] {
            for sz in [-1.0, 1.0] {
                out.push(Vec3::new(sx * h.x, sy * h.y, sz * h.z));
            }
        }
    }
    out
}

/// Inertia tensor rotated to another frame: `R I Rᵀ`.
pub fn rotate_inertia(rotation: &Quat, inertia: &Mat3) -> Mat3 {
    let r = rotation.to_rotation_matrix();
    r.matrix() * inertia * r.matrix().transpose()
}
