//! Convex polyhedra (tetrahedra and general hulls).
//! OWNER: shapes helper.

use crate::math::Vec3;
use serde::{Deserialize, Serialize};

/// A convex polyhedron: its vertices and a triangulation of its hull with outward normals
/// (counter-clockwise seen from outside).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConvexPolyhedron {
    pub vertices: Vec<Vec3>,
    pub triangles: Vec<[u32; 3]>,
}

impl ConvexPolyhedron {
    /// Convex hull of `points`. Errors if fewer than 4 non-coplanar points.
    pub fn from_points(points: &[Vec3]) -> Result<Self, String> {
        let _ = points;
        unimplemented!("shapes helper")
    }

    /// Regular tetrahedron of edge length `edge`, centroid at the origin, one face parallel
    /// to the xy plane and the opposite vertex on +z.
    pub fn regular_tetrahedron(edge: f64) -> Self {
        let _ = edge;
        unimplemented!("shapes helper")
    }

    /// Check finiteness and non-degeneracy (positive volume).
    pub fn validate(&self) -> Result<(), String> {
        unimplemented!("shapes helper")
    }
}
