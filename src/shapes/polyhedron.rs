//! Convex polyhedra (tetrahedra and general hulls).
//!
//! A [`ConvexPolyhedron`] stores its vertices and a triangulation of its hull whose
//! triangles are counter-clockwise seen from outside, so `(b − a) × (c − a)` is an outward
//! normal. Its exact mass properties (Tonon 2004) are computed in `mass.rs`.

use std::collections::BTreeMap;

use crate::math::{Point3, Vec3};
use serde::{Deserialize, Serialize};

/// Relative tolerance of the convexity test in [`ConvexPolyhedron::validate`]: a vertex may
/// lie outside a face plane by at most this fraction of the polyhedron's size (rounding of
/// hull vertices and of scene files, never a real concavity).
const CONVEXITY_TOLERANCE: f64 = 1e-9;

/// Smallest accepted volume as a fraction of `size³` (`size` = largest distance of a
/// vertex from the vertex average): flatter hulls are treated as degenerate.
const MIN_RELATIVE_VOLUME: f64 = 1e-12;

/// A convex polyhedron: its vertices and a triangulation of its hull with outward normals
/// (counter-clockwise seen from outside).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConvexPolyhedron {
    pub vertices: Vec<Vec3>,
    pub triangles: Vec<[u32; 3]>,
}

impl ConvexPolyhedron {
    /// Convex hull of `points`. Errors if fewer than 4 non-coplanar points.
    ///
    /// The hull is computed by parry's quickhull; its triangles are then re-oriented, if
    /// needed, so that each one is counter-clockwise seen from outside (positive signed
    /// volume of the tetrahedron it spans with the vertex average, an interior point of a
    /// convex hull), and the result is checked with [`ConvexPolyhedron::validate`].
    pub fn from_points(points: &[Vec3]) -> Result<Self, String> {
        if points.len() < 4 {
            return Err(format!(
                "a convex polyhedron needs at least 4 points, got {}",
                points.len()
            ));
        }
        if let Some(i) = points.iter().position(|p| !p.iter().all(|x| x.is_finite())) {
            return Err(format!("point {i} is not finite: {:?}", points[i]));
        }
        let input: Vec<Point3> = points.iter().map(|p| Point3::from(*p)).collect();
        let (hull_points, triangles) = parry3d_f64::transformation::try_convex_hull(&input)
            .map_err(|e| format!("convex hull failed (are the points coplanar?): {e}"))?;
        let mut poly = ConvexPolyhedron {
            vertices: hull_points.iter().map(|p| p.coords).collect(),
            triangles,
        };
        poly.orient_outward();
        poly.validate()
            .map_err(|e| format!("convex hull of the points is degenerate: {e}"))?;
        Ok(poly)
    }

    /// Regular tetrahedron of edge length `edge`, centroid at the origin, one face parallel
    /// to the xy plane and the opposite vertex on +z.
    ///
    /// Height `H = a √(2/3)`; the centroid lies `H/4` above the base, whose vertices are on
    /// the circle of radius `a/√3` at angles 0°, 120°, 240° (vertex 0 on +x).
    pub fn regular_tetrahedron(edge: f64) -> Self {
        let a = edge;
        let h = a * (2.0f64 / 3.0).sqrt();
        let r = a / 3.0f64.sqrt();
        let zb = -0.25 * h;
        let vertices = vec![
            Vec3::new(r, 0.0, zb),
            Vec3::new(-0.5 * r, 0.5 * a, zb),
            Vec3::new(-0.5 * r, -0.5 * a, zb),
            Vec3::new(0.0, 0.0, 0.75 * h),
        ];
        // Base 0,1,2 is counter-clockwise seen from +z, so from outside (below) it is 0,2,1.
        let triangles = vec![[0, 2, 1], [0, 1, 3], [1, 2, 3], [2, 0, 3]];
        ConvexPolyhedron {
            vertices,
            triangles,
        }
    }

    /// Average of the vertices: an interior point of a non-degenerate convex hull.
    pub fn vertex_average(&self) -> Vec3 {
        let n = self.vertices.len().max(1) as f64;
        self.vertices.iter().sum::<Vec3>() / n
    }

    /// Signed volume enclosed by the triangles (divergence theorem): the sum of the signed
    /// volumes `det(a − p, b − p, c − p) / 6` of the tetrahedra fanned from the vertex
    /// average `p`. Positive when the triangles face outward. Assumes valid indices.
    pub fn signed_volume(&self) -> f64 {
        let p = self.vertex_average();
        self.triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| self.vertices[i as usize] - p);
                a.dot(&b.cross(&c)) / 6.0
            })
            .sum()
    }

    /// Check finiteness and non-degeneracy (positive volume).
    ///
    /// Also checks that the triangles form a closed, consistently oriented surface (every
    /// directed edge used once, its reverse once), that each faces outward and that every
    /// vertex lies behind every face plane (convexity), since the mass properties and the
    /// collision code rely on all of these. Never panics.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.vertices.len();
        if n < 4 {
            return Err(format!(
                "a convex polyhedron needs at least 4 vertices, got {n}"
            ));
        }
        if let Some(i) = self
            .vertices
            .iter()
            .position(|v| !v.iter().all(|x| x.is_finite()))
        {
            return Err(format!("vertex {i} is not finite: {:?}", self.vertices[i]));
        }
        if self.triangles.len() < 4 {
            return Err(format!(
                "a closed polyhedron needs at least 4 triangles, got {}",
                self.triangles.len()
            ));
        }
        for (k, t) in self.triangles.iter().enumerate() {
            if let Some(&i) = t.iter().find(|&&i| i as usize >= n) {
                return Err(format!(
                    "triangle {k} uses vertex {i}, but there are only {n} vertices"
                ));
            }
            if t[0] == t[1] || t[1] == t[2] || t[2] == t[0] {
                return Err(format!("triangle {k} repeats a vertex: {t:?}"));
            }
        }

        // Closed and consistently oriented: each directed edge once, paired with its reverse.
        let mut edges: BTreeMap<(u32, u32), usize> = BTreeMap::new();
        for t in &self.triangles {
            for e in 0..3 {
                *edges.entry((t[e], t[(e + 1) % 3])).or_insert(0) += 1;
            }
        }
        for (&(i, j), &count) in &edges {
            if count != 1 {
                return Err(format!(
                    "directed edge {i}->{j} is used by {count} triangles (inconsistent orientation)"
                ));
            }
            if !edges.contains_key(&(j, i)) {
                return Err(format!(
                    "edge {i}-{j} belongs to only one triangle: the surface is not closed"
                ));
            }
        }

        let p = self.vertex_average();
        let size = self
            .vertices
            .iter()
            .map(|v| (v - p).norm())
            .fold(0.0, f64::max);
        let volume = self.signed_volume();
        if volume.is_nan() || volume <= MIN_RELATIVE_VOLUME * size.powi(3) {
            return Err(format!(
                "volume {volume:e} is not positive (size {size:e}): the points are coplanar or the triangles face inward"
            ));
        }

        // Convexity: every vertex on the inner side of every face plane.
        let tolerance = CONVEXITY_TOLERANCE * size;
        for (k, t) in self.triangles.iter().enumerate() {
            let [a, b, c] = t.map(|i| self.vertices[i as usize]);
            let normal = (b - a).cross(&(c - a));
            let area2 = normal.norm();
            if area2 == 0.0 {
                // A zero-area triangle (e.g. a split coplanar face) bounds nothing.
                continue;
            }
            let normal = normal / area2;
            if normal.dot(&(a - p)) <= 0.0 {
                return Err(format!("triangle {k} faces inward"));
            }
            for (i, v) in self.vertices.iter().enumerate() {
                let d = normal.dot(&(v - a));
                if d > tolerance {
                    return Err(format!(
                        "not convex: vertex {i} lies {d:e} outside the plane of triangle {k}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Flip every triangle that faces the vertex average instead of away from it.
    fn orient_outward(&mut self) {
        let p = self.vertex_average();
        for t in &mut self.triangles {
            let [a, b, c] = t.map(|i| self.vertices[i as usize] - p);
            if a.dot(&b.cross(&c)) < 0.0 {
                t.swap(1, 2);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_tetrahedron_geometry() {
        let a = 1.7;
        let t = ConvexPolyhedron::regular_tetrahedron(a);
        t.validate().expect("regular tetrahedron is valid");
        // All six edges have length a (rounding of sqrt: a few ulps).
        for i in 0..4 {
            for j in i + 1..4 {
                let d = (t.vertices[i] - t.vertices[j]).norm();
                assert!((d / a - 1.0).abs() < 1e-15, "edge {i}-{j} = {d}, want {a}");
            }
        }
        assert!(t.vertex_average().norm() < 1e-15 * a, "centroid at origin");
        assert!(
            t.vertices[..3].iter().all(|v| v.z == t.vertices[0].z),
            "base parallel to xy"
        );
        assert!(t.vertices[3].x == 0.0 && t.vertices[3].y == 0.0 && t.vertices[3].z > 0.0);
        // V = a³ / (6√2).
        let v = a.powi(3) / (6.0 * 2.0f64.sqrt());
        assert!((t.signed_volume() / v - 1.0).abs() < 1e-14);
    }

    #[test]
    fn from_points_builds_outward_hull_of_a_cube_with_interior_points() {
        let mut pts = Vec::new();
        for x in [-1.0, 1.0] {
            for y in [-2.0, 2.0] {
                for z in [-0.5, 0.5] {
                    pts.push(Vec3::new(x, y, z));
                }
            }
        }
        pts.push(Vec3::new(0.1, 0.2, 0.3)); // interior points are discarded
        pts.push(Vec3::zeros());
        let hull = ConvexPolyhedron::from_points(&pts).expect("valid hull");
        assert_eq!(
            hull.vertices.len(),
            8,
            "interior points are not hull vertices"
        );
        assert!((hull.signed_volume() - 8.0).abs() < 1e-14 * 8.0);
        for t in &hull.triangles {
            let [a, b, c] = t.map(|i| hull.vertices[i as usize]);
            let centroid = (a + b + c) / 3.0;
            assert!(
                (b - a).cross(&(c - a)).dot(&centroid) > 0.0,
                "triangle {t:?} faces outward"
            );
        }
    }

    #[test]
    fn from_points_rejects_bad_input() {
        let flat = [
            Vec3::zeros(),
            Vec3::x(),
            Vec3::y(),
            Vec3::new(1.0, 1.0, 0.0),
        ];
        assert!(
            ConvexPolyhedron::from_points(&flat).is_err(),
            "coplanar points"
        );
        assert!(
            ConvexPolyhedron::from_points(&flat[..3]).is_err(),
            "too few points"
        );
        let nan = [
            Vec3::zeros(),
            Vec3::x(),
            Vec3::y(),
            Vec3::new(0.0, 0.0, f64::NAN),
        ];
        let err = ConvexPolyhedron::from_points(&nan).unwrap_err();
        assert!(err.contains("not finite"), "{err}");
    }

    #[test]
    fn validate_reports_each_problem() {
        let good = ConvexPolyhedron::regular_tetrahedron(1.0);
        let check = |p: ConvexPolyhedron, needle: &str| {
            let err = p.validate().expect_err(needle);
            assert!(err.contains(needle), "expected '{needle}' in '{err}'");
        };
        let mut p = good.clone();
        p.vertices[2].x = f64::INFINITY;
        check(p, "not finite");
        let mut p = good.clone();
        p.vertices.pop();
        check(p, "at least 4 vertices");
        let mut p = good.clone();
        p.triangles[1] = [0, 1, 7];
        check(p, "only 4 vertices");
        let mut p = good.clone();
        p.triangles.iter_mut().for_each(|t| t.swap(1, 2));
        check(p, "not positive");
        let mut p = good.clone();
        p.triangles[0].swap(1, 2);
        check(p, "directed edge");
        let mut p = good.clone();
        p.vertices.iter_mut().for_each(|v| v.z = 0.0);
        check(p, "not positive");
        let mut concave = good.clone();
        // Replace face 1,2,3 by a dent towards the centre at its centroid.
        let dent = (concave.vertices[1] + concave.vertices[2] + concave.vertices[3]) / 3.0 * 0.8;
        concave.vertices.push(dent);
        concave.triangles = vec![
            [0, 2, 1],
            [0, 1, 3],
            [2, 0, 3],
            [1, 2, 4],
            [2, 3, 4],
            [3, 1, 4],
        ];
        check(concave, "not convex");
    }
}
