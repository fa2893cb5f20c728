//! The data types of a scene file, as written in RON (see `docs/scene-format.md`).
//!
//! These are *descriptions*: they are checked field by field with positions in the file
//! before anything is built. [`ShapeSpec::to_shape`] and
//! [`ContainerSpec::to_container`] turn them into the physics core's types.

use super::locate::FieldPath;
use crate::container::{Container, Divider};
use crate::dynamics::rotation::RotationIntegrator;
use crate::dynamics::solver::SolverKind;
use crate::math::{Quat, Vec3};
use crate::shapes::{ConvexPolyhedron, Shape};
use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeTuple;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A fixed-size list of numbers, written `(x, y, z)` or `[x, y, z]` in RON.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vector<const N: usize>(pub [f64; N]);

/// Three numbers: a point or a vector (x, y, z).
pub type V3 = Vector<3>;
/// Two numbers (x, y).
pub type V2 = Vector<2>;

impl<const N: usize> Default for Vector<N> {
    fn default() -> Self {
        Vector([0.0; N])
    }
}

impl V3 {
    pub const fn new(x: f64, y: f64, z: f64) -> Self {
        Vector([x, y, z])
    }

    pub fn vec3(&self) -> Vec3 {
        Vec3::new(self.0[0], self.0[1], self.0[2])
    }
}

impl From<V3> for Vec3 {
    fn from(v: V3) -> Vec3 {
        v.vec3()
    }
}

impl From<Vec3> for V3 {
    fn from(v: Vec3) -> V3 {
        Vector([v.x, v.y, v.z])
    }
}

impl<const N: usize> Vector<N> {
    pub fn is_finite(&self) -> bool {
        self.0.iter().all(|x| x.is_finite())
    }
}

impl<const N: usize> fmt::Display for Vector<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(")?;
        for (i, x) in self.0.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{x}")?;
        }
        write!(f, ")")
    }
}

impl<const N: usize> Serialize for Vector<N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = s.serialize_tuple(N)?;
        for x in &self.0 {
            t.serialize_element(x)?;
        }
        t.end()
    }
}

impl<'de, const N: usize> Deserialize<'de> for Vector<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Vis<const N: usize>;
        impl<'de, const N: usize> Visitor<'de> for Vis<N> {
            type Value = Vector<N>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match N {
                    2 => f.write_str("2 numbers like (x, y)"),
                    _ => f.write_str("3 numbers like (x, y, z)"),
                }
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vector<N>, A::Error> {
                let mut out = [0.0; N];
                for (i, slot) in out.iter_mut().enumerate() {
                    *slot = seq
                        .next_element::<f64>()?
                        .ok_or_else(|| de::Error::invalid_length(i, &self))?;
                }
                if seq.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::invalid_length(N + 1, &self));
                }
                Ok(Vector(out))
            }
        }
        // `deserialize_any` so that both RON tuples `( )` and lists `[ ]` are accepted.
        d.deserialize_any(Vis::<N>)
    }
}

/// Optional fields written without `Some(...)`: present means `Some(value)`.
pub(super) mod bare_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<T: Serialize, S: Serializer>(v: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(x) => x.serialize(s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        T::deserialize(d).map(Some)
    }
}

/// The solver as a quoted name: `solver: "jolt"`.
pub(super) mod solver_name {
    use super::*;

    pub fn serialize<S: Serializer>(k: &SolverKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(k.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<SolverKind, D::Error> {
        struct Vis;
        impl Visitor<'_> for Vis {
            type Value = SolverKind;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let names: Vec<_> = SolverKind::ALL
                    .iter()
                    .map(|k| format!("\"{}\"", k.name()))
                    .collect();
                write!(f, "a solver name in quotes, one of {}", names.join(", "))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SolverKind, E> {
                v.parse().map_err(E::custom)
            }
        }
        d.deserialize_any(Vis)
    }
}

/// Rotation integrator in scene syntax: `SymplecticEuler` or `Theta(theta: 0.5)`.
#[derive(Serialize, Deserialize)]
#[serde(rename = "Rotation", deny_unknown_fields)]
enum RotationSpec {
    SymplecticEuler,
    Theta { theta: f64 },
}

pub(super) mod rotation_spec {
    use super::*;

    pub fn serialize<S: Serializer>(r: &RotationIntegrator, s: S) -> Result<S::Ok, S::Error> {
        match *r {
            RotationIntegrator::SymplecticEuler => RotationSpec::SymplecticEuler,
            RotationIntegrator::Theta { theta } => RotationSpec::Theta { theta },
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<RotationIntegrator, D::Error> {
        Ok(match RotationSpec::deserialize(d)? {
            RotationSpec::SymplecticEuler => RotationIntegrator::SymplecticEuler,
            RotationSpec::Theta { theta } => RotationIntegrator::Theta { theta },
        })
    }
}

/// A body shape as written in a scene. All lengths in metres.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Shape", deny_unknown_fields)]
pub enum ShapeSpec {
    /// Ball: `Sphere(radius: 0.5)`.
    Sphere { radius: f64 },
    /// Cube: `Cube(edge: 1.0)`.
    Cube { edge: f64 },
    /// Box-shaped body given by its full `size` or by its `half_extents` (exactly one):
    /// `Cuboid(size: (2, 1, 0.5))`.
    Cuboid {
        #[serde(default, with = "bare_option", skip_serializing_if = "Option::is_none")]
        size: Option<V3>,
        #[serde(default, with = "bare_option", skip_serializing_if = "Option::is_none")]
        half_extents: Option<V3>,
    },
    /// Non-convex cross of three orthogonal bars; `size` is the bar length 3c (paper 000,
    /// Fig. 10c: 3c = 3.78 m), each bar is 3c × c × c.
    Cross { size: f64 },
    /// Ellipsoid with semi-axes (a, b, c) along the shape-frame axes.
    Ellipsoid { semi_axes: V3 },
    /// Tetrahedron: regular with edge length `edge` (centred on its centroid), or given by
    /// its 4 `vertices` (exactly one of the two).
    Tetrahedron {
        #[serde(default, with = "bare_option", skip_serializing_if = "Option::is_none")]
        edge: Option<f64>,
        #[serde(default, with = "bare_option", skip_serializing_if = "Option::is_none")]
        vertices: Option<Vec<V3>>,
    },
    /// Convex hull of `vertices` (at least 4, not all in one plane).
    Polyhedron { vertices: Vec<V3> },
    /// Slender rod (capsule along the shape-frame z axis): `length` between the centres
    /// of its end caps, `radius` of the rod.
    Rod { length: f64, radius: f64 },
    /// Rigid set of point masses joined by massless rods (paper 003 §4.1):
    /// `MassPoints(points: [(1, 0, 0), ...], masses: [2.0, ...], radius: 0.01)`. Each point
    /// carries its mass (kg; the body's `density` does not apply) and collides as a
    /// massless ball of `radius`.
    MassPoints {
        points: Vec<V3>,
        masses: Vec<f64>,
        radius: f64,
    },
}

const SQRT6: f64 = 2.449_489_742_783_178;

impl ShapeSpec {
    /// Short lowercase name, as in [`Shape::kind_name`].
    pub fn kind_name(&self) -> &'static str {
        match self {
            ShapeSpec::Sphere { .. } => "sphere",
            ShapeSpec::Cube { .. } => "cube",
            ShapeSpec::Cuboid { .. } => "cuboid",
            ShapeSpec::Cross { .. } => "cross",
            ShapeSpec::Ellipsoid { .. } => "ellipsoid",
            ShapeSpec::Tetrahedron { .. } => "tetrahedron",
            ShapeSpec::Polyhedron { .. } => "polyhedron",
            ShapeSpec::Rod { .. } => "rod",
            ShapeSpec::MassPoints { .. } => "mass_points",
        }
    }

    /// Check every dimension; on error returns the path of the offending part relative
    /// to the shape (`radius`, `vertices[2]`, or empty for the shape as a whole) and what
    /// is wrong.
    pub fn check(&self) -> Result<(), (FieldPath, String)> {
        self.check_inner().map_err(|(field, index, msg)| {
            let path = if field.is_empty() {
                FieldPath::root()
            } else {
                FieldPath::root().field(field)
            };
            (index.map_or(path.clone(), |i| path.index(i)), msg)
        })
    }

    fn check_inner(&self) -> Result<(), (&'static str, Option<usize>, String)> {
        type R = Result<(), (&'static str, Option<usize>, String)>;
        fn pos(field: &'static str, x: f64) -> R {
            if x.is_finite() && x > 0.0 {
                Ok(())
            } else {
                Err((field, None, format!("must be finite and > 0, got {x}")))
            }
        }
        fn pos3(field: &'static str, v: &V3) -> R {
            if v.0.iter().all(|x| x.is_finite() && *x > 0.0) {
                Ok(())
            } else {
                Err((
                    field,
                    None,
                    format!("every component must be finite and > 0, got {v}"),
                ))
            }
        }
        match self {
            ShapeSpec::Sphere { radius } => pos("radius", *radius),
            ShapeSpec::Cube { edge } => pos("edge", *edge),
            ShapeSpec::Cuboid { size, half_extents } => match (size, half_extents) {
                (Some(s), None) => pos3("size", s),
                (None, Some(h)) => pos3("half_extents", h),
                _ => Err((
                    "",
                    None,
                    "give exactly one of `size` or `half_extents`".into(),
                )),
            },
            ShapeSpec::Cross { size } => pos("size", *size),
            ShapeSpec::Ellipsoid { semi_axes } => pos3("semi_axes", semi_axes),
            ShapeSpec::Tetrahedron { edge, vertices } => match (edge, vertices) {
                (Some(e), None) => pos("edge", *e),
                (None, Some(v)) if v.len() != 4 => Err((
                    "vertices",
                    None,
                    format!("a tetrahedron has exactly 4 vertices, got {}", v.len()),
                )),
                (None, Some(v)) => check_solid("vertices", v),
                _ => Err(("", None, "give exactly one of `edge` or `vertices`".into())),
            },
            ShapeSpec::Polyhedron { vertices } => check_solid("vertices", vertices),
            ShapeSpec::Rod { length, radius } => pos("length", *length).and(pos("radius", *radius)),
            ShapeSpec::MassPoints {
                points,
                masses,
                radius,
            } => {
                pos("radius", *radius)?;
                if let Some((i, m)) = masses
                    .iter()
                    .enumerate()
                    .find(|(_, m)| !(m.is_finite() && **m > 0.0))
                {
                    return Err((
                        "masses",
                        Some(i),
                        format!("must be finite and > 0, got {m}"),
                    ));
                }
                if let Some((i, p)) = points.iter().enumerate().find(|(_, p)| !p.is_finite()) {
                    return Err(("points", Some(i), format!("must be finite, got {p}")));
                }
                if points.is_empty() || points.len() != masses.len() {
                    return Err((
                        "masses",
                        None,
                        format!(
                            "need one mass per point and at least one point, got {} points and {} masses",
                            points.len(),
                            masses.len()
                        ),
                    ));
                }
                self.to_core_unchecked()
                    .validate()
                    .map_err(|m| ("points", None, m))
            }
        }
    }

    /// The core shape without re-running [`ShapeSpec::check`] (mass points only).
    fn to_core_unchecked(&self) -> Shape {
        match self {
            ShapeSpec::MassPoints {
                points,
                masses,
                radius,
            } => Shape::MassPoints {
                points: points.iter().map(V3::vec3).collect(),
                masses: masses.clone(),
                radius: *radius,
            },
            _ => Shape::Sphere { radius: 1.0 },
        }
    }

    /// Radius of the smallest ball centred at the shape-frame origin that contains the
    /// shape (m). Assumes [`ShapeSpec::check`] passed.
    pub fn bounding_radius(&self) -> f64 {
        match self {
            ShapeSpec::Sphere { radius } => *radius,
            ShapeSpec::Cube { edge } => 0.5 * 3f64.sqrt() * edge,
            ShapeSpec::Cuboid { .. } => self.half_extents().norm(),
            // Corner of a bar: (1.5c, 0.5c, 0.5c), c = size/3.
            ShapeSpec::Cross { size } => (2.25f64 + 0.25 + 0.25).sqrt() * size / 3.0,
            ShapeSpec::Ellipsoid { semi_axes } => semi_axes.vec3().max(),
            // Circumradius of a regular tetrahedron: a √6 / 4.
            ShapeSpec::Tetrahedron { edge: Some(a), .. } => a * SQRT6 / 4.0,
            ShapeSpec::Tetrahedron {
                vertices: Some(v), ..
            }
            | ShapeSpec::Polyhedron { vertices: v } => {
                v.iter().map(|p| p.vec3().norm()).fold(0.0, f64::max)
            }
            ShapeSpec::Tetrahedron { .. } => 0.0,
            ShapeSpec::Rod { length, radius } => 0.5 * length + radius,
            ShapeSpec::MassPoints { points, radius, .. } => {
                points.iter().map(|p| p.vec3().norm()).fold(0.0, f64::max) + radius
            }
        }
    }

    /// Radius of the largest ball centred at the shape-frame origin that lies inside the
    /// shape (m); 0 if the origin is not inside. Two bodies whose centres are closer than
    /// the sum of these radii certainly overlap. Assumes [`ShapeSpec::check`] passed.
    pub fn inscribed_radius(&self) -> f64 {
        match self {
            ShapeSpec::Sphere { radius } => *radius,
            ShapeSpec::Cube { edge } => 0.5 * edge,
            ShapeSpec::Cuboid { .. } => self.half_extents().min(),
            // The central c × c × c cube is common to the three bars.
            ShapeSpec::Cross { size } => 0.5 * size / 3.0,
            ShapeSpec::Ellipsoid { semi_axes } => semi_axes.vec3().min(),
            // Inradius of a regular tetrahedron: a √6 / 12.
            ShapeSpec::Tetrahedron { edge: Some(a), .. } => a * SQRT6 / 12.0,
            ShapeSpec::Tetrahedron {
                vertices: Some(v), ..
            }
            | ShapeSpec::Polyhedron { vertices: v } => hull_inradius(v),
            ShapeSpec::Tetrahedron { .. } => 0.0,
            ShapeSpec::Rod { radius, .. } => *radius,
            // The balls need not cover the origin: never claim an overlap.
            ShapeSpec::MassPoints { .. } => 0.0,
        }
    }

    /// Half-extents of a cube or cuboid (zero for other shapes).
    fn half_extents(&self) -> Vec3 {
        match self {
            ShapeSpec::Cube { edge } => Vec3::repeat(0.5 * edge),
            ShapeSpec::Cuboid { size: Some(s), .. } => 0.5 * s.vec3(),
            ShapeSpec::Cuboid {
                half_extents: Some(h),
                ..
            } => h.vec3(),
            _ => Vec3::zeros(),
        }
    }

    /// The physics core's shape (in the shape frame). Polyhedra are hulled here, so this
    /// can fail on vertex sets [`ShapeSpec::check`] accepts only if the hull builder
    /// disagrees about degeneracy.
    pub fn to_shape(&self) -> Result<Shape, String> {
        self.check()
            .map_err(|(f, m)| if f.is_empty() { m } else { format!("{f}: {m}") })?;
        Ok(match self {
            ShapeSpec::Sphere { radius } => Shape::Sphere { radius: *radius },
            ShapeSpec::Cube { .. } | ShapeSpec::Cuboid { .. } => Shape::Cuboid {
                half_extents: self.half_extents(),
            },
            ShapeSpec::Cross { size } => Shape::Cross { c: size / 3.0 },
            ShapeSpec::Ellipsoid { semi_axes } => Shape::Ellipsoid {
                semi_axes: semi_axes.vec3(),
            },
            ShapeSpec::Tetrahedron { edge: Some(a), .. } => Shape::regular_tetrahedron(*a),
            ShapeSpec::Tetrahedron {
                vertices: Some(v), ..
            }
            | ShapeSpec::Polyhedron { vertices: v } => {
                let pts: Vec<Vec3> = v.iter().map(V3::vec3).collect();
                Shape::ConvexPolyhedron(ConvexPolyhedron::from_points(&pts)?)
            }
            ShapeSpec::Tetrahedron { .. } => {
                return Err("give exactly one of `edge` or `vertices`".into());
            }
            ShapeSpec::Rod { length, radius } => Shape::Rod {
                length: *length,
                radius: *radius,
            },
            ShapeSpec::MassPoints { .. } => self.to_core_unchecked(),
        })
    }
}

/// Vertices must be finite, at least 4 and span a solid (not all on one plane).
fn check_solid(field: &'static str, v: &[V3]) -> Result<(), (&'static str, Option<usize>, String)> {
    if let Some((i, bad)) = v.iter().enumerate().find(|(_, p)| !p.is_finite()) {
        return Err((
            field,
            Some(i),
            format!("every vertex must be finite, got {bad}"),
        ));
    }
    if v.len() < 4 {
        return Err((
            field,
            None,
            format!("need at least 4 vertices, got {}", v.len()),
        ));
    }
    let pts: Vec<Vec3> = v.iter().map(V3::vec3).collect();
    let scale = pts.iter().map(|p| (p - pts[0]).norm()).fold(0.0, f64::max);
    // Greedy affine-span test: farthest point from p0, then from the line, then from the
    // plane. The last distance is 0 exactly when all points are coplanar.
    let p0 = pts[0];
    let p1 = *pts
        .iter()
        .max_by(|a, b| (*a - p0).norm().total_cmp(&(*b - p0).norm()))
        .unwrap_or(&p0);
    let d = (p1 - p0).normalize();
    let off_line = |p: &Vec3| ((p - p0) - d * d.dot(&(p - p0))).norm();
    let p2 = *pts
        .iter()
        .max_by(|a, b| off_line(a).total_cmp(&off_line(b)))
        .unwrap_or(&p0);
    let n = (p1 - p0).cross(&(p2 - p0));
    let height = if n.norm() > 0.0 {
        let n = n.normalize();
        pts.iter()
            .map(|p| n.dot(&(p - p0)).abs())
            .fold(0.0, f64::max)
    } else {
        0.0
    };
    if !(scale > 0.0 && height > 1e-9 * scale) {
        return Err((
            field,
            None,
            "the vertices are all on one plane (or line): the solid has no volume".into(),
        ));
    }
    Ok(())
}

/// Largest origin-centred ball inside the convex hull of `v`: the smallest distance from
/// the origin to a hull face plane (0 if the origin is outside). Faces are found by brute
/// force (a triple spans a face plane when no vertex lies beyond it): O(n⁴), so hulls of
/// more than 64 vertices get the safe answer 0 (no overlap is ever reported for them).
fn hull_inradius(v: &[V3]) -> f64 {
    let n = v.len();
    if !(4..=64).contains(&n) {
        return 0.0;
    }
    let p: Vec<Vec3> = v.iter().map(V3::vec3).collect();
    let scale = p
        .iter()
        .map(|q| q.norm())
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let tol = 1e-12 * scale;
    let mut best = f64::INFINITY;
    for i in 0..n {
        for j in i + 1..n {
            for k in j + 1..n {
                let normal = (p[j] - p[i]).cross(&(p[k] - p[i]));
                if normal.norm() <= 1e-12 * scale * scale {
                    continue;
                }
                let m = normal.normalize();
                let (mut lo, mut hi) = (0.0f64, 0.0f64);
                for q in &p {
                    let d = m.dot(&(q - p[i]));
                    lo = lo.min(d);
                    hi = hi.max(d);
                }
                // Outward normal: the side with no vertices.
                let outward = if hi <= tol {
                    m
                } else if lo >= -tol {
                    -m
                } else {
                    continue;
                };
                // Distance from the origin to the plane, positive when the origin is inside.
                best = best.min(outward.dot(&p[i]));
            }
        }
    }
    if best.is_finite() { best.max(0.0) } else { 0.0 }
}

/// How a body is turned, applied to its shape frame.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Orientation", deny_unknown_fields)]
pub enum OrientationSpec {
    /// Not rotated.
    #[default]
    Identity,
    /// Rotation by `angle_deg` degrees about `axis` (any non-zero length), right-handed.
    AxisAngle { axis: V3, angle_deg: f64 },
    /// Roll about x, then pitch about y, then yaw about z (fixed world axes), in degrees:
    /// R = R_z(yaw) R_y(pitch) R_x(roll), as nalgebra's `from_euler_angles`.
    Euler {
        #[serde(default)]
        roll_deg: f64,
        #[serde(default)]
        pitch_deg: f64,
        #[serde(default)]
        yaw_deg: f64,
    },
    /// Unit quaternion w + xi + yj + zk (normalised on load; |q| must be within 1e-3 of 1).
    Quaternion { w: f64, x: f64, y: f64, z: f64 },
    /// Uniformly random, drawn from the scene seed.
    Random,
}

impl OrientationSpec {
    /// Check the numbers; on error returns the sub-field and what is wrong.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let fin = |f: &'static str, x: f64| {
            if x.is_finite() {
                Ok(())
            } else {
                Err((f, format!("must be finite, got {x}")))
            }
        };
        match self {
            OrientationSpec::Identity | OrientationSpec::Random => Ok(()),
            OrientationSpec::AxisAngle { axis, angle_deg } => {
                if !axis.is_finite() || axis.vec3().norm() < 1e-12 {
                    return Err((
                        "axis",
                        format!("must be a finite, non-zero vector, got {axis}"),
                    ));
                }
                fin("angle_deg", *angle_deg)
            }
            OrientationSpec::Euler {
                roll_deg,
                pitch_deg,
                yaw_deg,
            } => fin("roll_deg", *roll_deg)
                .and(fin("pitch_deg", *pitch_deg))
                .and(fin("yaw_deg", *yaw_deg)),
            OrientationSpec::Quaternion { w, x, y, z } => {
                fin("w", *w)
                    .and(fin("x", *x))
                    .and(fin("y", *y))
                    .and(fin("z", *z))?;
                let norm = (w * w + x * x + y * y + z * z).sqrt();
                if (norm - 1.0).abs() > 1e-3 {
                    return Err((
                        "",
                        format!("quaternion must have unit length (±1e-3), got |q| = {norm}"),
                    ));
                }
                Ok(())
            }
        }
    }

    /// The rotation, or `None` for [`OrientationSpec::Random`]. Assumes `check` passed.
    pub fn fixed(&self) -> Option<Quat> {
        use nalgebra::{Quaternion, Unit};
        Some(match self {
            OrientationSpec::Identity => Quat::identity(),
            OrientationSpec::AxisAngle { axis, angle_deg } => {
                Quat::from_axis_angle(&Unit::new_normalize(axis.vec3()), angle_deg.to_radians())
            }
            OrientationSpec::Euler {
                roll_deg,
                pitch_deg,
                yaw_deg,
            } => Quat::from_euler_angles(
                roll_deg.to_radians(),
                pitch_deg.to_radians(),
                yaw_deg.to_radians(),
            ),
            OrientationSpec::Quaternion { w, x, y, z } => {
                let q = Quaternion::new(*w, *x, *y, *z);
                // Unit to rounding (|q|² within 4 ε of 1, as a saved state's is): kept as
                // written, so that a saved orientation loads bit for bit.
                if (q.norm_squared() - 1.0).abs() <= 4.0 * f64::EPSILON {
                    Quat::new_unchecked(q)
                } else {
                    Quat::from_quaternion(q)
                }
            }
            OrientationSpec::Random => return None,
        })
    }
}

fn yes() -> bool {
    true
}

fn up() -> V3 {
    V3::new(0.0, 0.0, 1.0)
}

fn plus_x() -> V3 {
    V3::new(1.0, 0.0, 0.0)
}

/// Which of a box's four side walls are present (all by default).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Walls", deny_unknown_fields)]
pub struct Walls {
    #[serde(default = "yes")]
    pub neg_x: bool,
    #[serde(default = "yes")]
    pub pos_x: bool,
    #[serde(default = "yes")]
    pub neg_y: bool,
    #[serde(default = "yes")]
    pub pos_y: bool,
}

impl Default for Walls {
    fn default() -> Self {
        Walls {
            neg_x: true,
            pos_x: true,
            neg_y: true,
            pos_y: true,
        }
    }
}

/// A published angle of repose a scene cites (`Scene::reference_angle`): the angle in
/// degrees, in [0, 90], and where it comes from (non-empty).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "ReferenceAngle", deny_unknown_fields)]
pub struct ReferenceAngle {
    pub angle_deg: f64,
    pub source: String,
}

/// A removable internal wall of a box: the plane x = `x` (world, m).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Divider", deny_unknown_fields)]
pub struct DividerSpec {
    pub x: f64,
    /// Whether the divider is in place at the start. Default: true.
    #[serde(default = "yes")]
    pub present: bool,
}

/// A static container or obstacle surface. The world's vertical is +z.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Container", deny_unknown_fields)]
pub enum ContainerSpec {
    /// One-sided infinite plane through `point` (default origin); bodies stay on the side
    /// `normal` (default +z) points to. `Plane()` is the ground z = 0.
    Plane {
        #[serde(default)]
        point: V3,
        #[serde(default = "up")]
        normal: V3,
    },
    /// Ground tilted by `angle_deg` ∈ [0, 90) degrees, through `point` (default origin),
    /// going down towards the horizontal direction `downhill` (default +x). Becomes a
    /// plane with normal cos θ ẑ + sin θ d̂.
    Slope {
        angle_deg: f64,
        #[serde(default)]
        point: V3,
        #[serde(default = "plus_x")]
        downhill: V3,
    },
    /// Open-top box: floor centre `center`, inner half-widths `half_size = (hx, hy)`,
    /// wall height `height`, side `walls`, removable `dividers` across x.
    Box {
        #[serde(default)]
        center: V3,
        half_size: V2,
        height: f64,
        #[serde(default)]
        walls: Walls,
        #[serde(default)]
        dividers: Vec<DividerSpec>,
    },
    /// Cylinder with closed bottom, axis +z, floor centre `base`.
    Cylinder {
        #[serde(default)]
        base: V3,
        radius: f64,
        height: f64,
    },
    /// Truncated-cone hopper open at both ends: radius `bottom_radius` at `base`, growing
    /// linearly to `top_radius` at height `height`.
    Hopper {
        #[serde(default)]
        base: V3,
        bottom_radius: f64,
        top_radius: f64,
        height: f64,
    },
}

impl ContainerSpec {
    pub fn kind_name(&self) -> &'static str {
        match self {
            ContainerSpec::Plane { .. } => "plane",
            ContainerSpec::Slope { .. } => "slope",
            ContainerSpec::Box { .. } => "box",
            ContainerSpec::Cylinder { .. } => "cylinder",
            ContainerSpec::Hopper { .. } => "hopper",
        }
    }

    /// Check the numbers; on error returns the sub-field and what is wrong.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        fn fin3(f: &'static str, v: &V3) -> Result<(), (&'static str, String)> {
            if v.is_finite() {
                Ok(())
            } else {
                Err((f, format!("must be finite, got {v}")))
            }
        }
        fn pos(f: &'static str, x: f64) -> Result<(), (&'static str, String)> {
            if x.is_finite() && x > 0.0 {
                Ok(())
            } else {
                Err((f, format!("must be finite and > 0, got {x}")))
            }
        }
        match self {
            ContainerSpec::Plane { point, normal } => {
                fin3("point", point)?;
                fin3("normal", normal)?;
                if normal.vec3().norm() < 1e-12 {
                    return Err(("normal", "must be non-zero".into()));
                }
                Ok(())
            }
            ContainerSpec::Slope {
                angle_deg,
                point,
                downhill,
            } => {
                if !(angle_deg.is_finite() && (0.0..90.0).contains(angle_deg)) {
                    return Err((
                        "angle_deg",
                        format!("must be in [0, 90) degrees, got {angle_deg}"),
                    ));
                }
                fin3("point", point)?;
                fin3("downhill", downhill)?;
                let d = downhill.vec3();
                if d.norm() < 1e-12 || d.z.abs() > 1e-9 * d.norm() {
                    return Err((
                        "downhill",
                        format!("must be a non-zero horizontal vector (z = 0), got {downhill}"),
                    ));
                }
                Ok(())
            }
            ContainerSpec::Box {
                center,
                half_size,
                height,
                dividers,
                ..
            } => {
                fin3("center", center)?;
                if !half_size.0.iter().all(|x| x.is_finite() && *x > 0.0) {
                    return Err((
                        "half_size",
                        format!("both half-widths must be finite and > 0, got {half_size}"),
                    ));
                }
                pos("height", *height)?;
                for d in dividers {
                    if !(d.x.is_finite() && (d.x - center.0[0]).abs() < half_size.0[0]) {
                        return Err((
                            "dividers",
                            format!(
                                "x = {} must lie strictly inside the box, between {} and {}",
                                d.x,
                                center.0[0] - half_size.0[0],
                                center.0[0] + half_size.0[0]
                            ),
                        ));
                    }
                }
                Ok(())
            }
            ContainerSpec::Cylinder {
                base,
                radius,
                height,
            } => {
                fin3("base", base)?;
                pos("radius", *radius)?;
                pos("height", *height)
            }
            ContainerSpec::Hopper {
                base,
                bottom_radius,
                top_radius,
                height,
            } => {
                fin3("base", base)?;
                pos("bottom_radius", *bottom_radius)?;
                pos("top_radius", *top_radius)?;
                pos("height", *height)
            }
        }
    }

    /// The physics core's container. A slope becomes a plane. Assumes `check` passed.
    pub fn to_container(&self) -> Container {
        match self {
            ContainerSpec::Plane { point, normal } => Container::Plane {
                point: point.vec3(),
                normal: normal.vec3().normalize(),
            },
            ContainerSpec::Slope {
                angle_deg,
                point,
                downhill,
            } => {
                let d = downhill.vec3().normalize();
                let t = angle_deg.to_radians();
                // n = cos θ ẑ + sin θ d̂: the surface z = −tan θ (d̂·x) falls along d̂.
                Container::Plane {
                    point: point.vec3(),
                    normal: (Vec3::z() * t.cos() + d * t.sin()).normalize(),
                }
            }
            ContainerSpec::Box {
                center,
                half_size,
                height,
                walls,
                dividers,
            } => Container::Box {
                center: center.vec3(),
                half_size: half_size.0,
                height: *height,
                walls: [walls.neg_x, walls.pos_x, walls.neg_y, walls.pos_y],
                dividers: dividers
                    .iter()
                    .map(|d| Divider {
                        x: d.x,
                        present: d.present,
                    })
                    .collect(),
            },
            ContainerSpec::Cylinder {
                base,
                radius,
                height,
            } => Container::Cylinder {
                base: base.vec3(),
                radius: *radius,
                height: *height,
            },
            ContainerSpec::Hopper {
                base,
                bottom_radius,
                top_radius,
                height,
            } => Container::Hopper {
                base: base.vec3(),
                bottom_radius: *bottom_radius,
                top_radius: *top_radius,
                height: *height,
            },
        }
    }
}

fn default_density() -> f64 {
    1000.0
}

/// One body written out in the scene.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Body", deny_unknown_fields)]
pub struct BodySpec {
    pub shape: ShapeSpec,
    /// Uniform density (kg/m³). Default: 1000.
    #[serde(default = "default_density")]
    pub density: f64,
    /// World position of the shape-frame origin (m). Default: (0, 0, 0).
    #[serde(default)]
    pub position: V3,
    /// Default: Identity.
    #[serde(default)]
    pub orientation: OrientationSpec,
    /// Initial velocity (m/s). Default: 0.
    #[serde(default)]
    pub velocity: V3,
    /// Initial angular velocity (rad/s, world frame). Default: 0.
    #[serde(default)]
    pub angular_velocity: V3,
    /// A static obstacle never moves (infinite mass). Default: false.
    #[serde(default, rename = "static")]
    pub is_static: bool,
    /// Constant point force applied every step (N, world frame), e.g. paper 002 §5.4's F.
    /// Default: (0, 0, 0).
    #[serde(default)]
    pub force: V3,
    /// Where `force` acts: offset from the centre of mass (m, world-aligned, constant), so
    /// the torque is offset × force. Default: (0, 0, 0).
    #[serde(default)]
    pub force_offset: V3,
}

/// One entry of a generator's shape mix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Mix", deny_unknown_fields)]
pub struct MixEntry {
    pub shape: ShapeSpec,
    /// Relative share of the bodies (normalised over the mix). Default: 1.
    #[serde(default = "one")]
    pub fraction: f64,
}

fn one() -> f64 {
    1.0
}

/// An axis-aligned box region (m).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Region", deny_unknown_fields)]
pub struct Region {
    pub min: V3,
    pub max: V3,
}

fn random_orientation() -> OrientationSpec {
    OrientationSpec::Random
}

/// Generators of many bodies at once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Generator", deny_unknown_fields)]
pub enum GeneratorSpec {
    /// `count` bodies on a cubic lattice of pitch `spacing` inside `region`: sites at
    /// min + (i + ½) spacing along each axis, filled x first, then y, then z (bottom
    /// layer first). Shapes from `shape` (one shape) or `mix` (several, with fractions).
    Lattice {
        count: usize,
        #[serde(default, with = "bare_option", skip_serializing_if = "Option::is_none")]
        shape: Option<ShapeSpec>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        mix: Vec<MixEntry>,
        /// Default: 1000 kg/m³.
        #[serde(default = "default_density")]
        density: f64,
        region: Region,
        spacing: f64,
        /// Default: Random.
        #[serde(default = "random_orientation")]
        orientation: OrientationSpec,
        /// Common initial velocity (m/s). Default: 0.
        #[serde(default)]
        velocity: V3,
        /// Each velocity component gets a uniform random offset in [−j, j] (m/s).
        /// Default: 0.
        #[serde(default)]
        velocity_jitter: f64,
        /// Each angular velocity component is uniform in [−j, j] (rad/s). Default: 0.
        #[serde(default)]
        angular_velocity_jitter: f64,
    },
}
