//! Exact mass properties (volume, centre of mass, inertia tensor) of every shape.
//!
//! Steps of [`mass_properties`]:
//! 1. Symmetric shapes (sphere, cuboid, cross, ellipsoid, rod) have their centre of mass at
//!    the shape-frame origin and a diagonal inertia tensor: closed forms below, each with
//!    its derivation.
//! 2. Convex polyhedra: volume and centre of mass from the tetrahedra fanned from the
//!    vertex average to each hull triangle; then the inertia tensor about the centre of
//!    mass by Tonon's exact tetrahedron formulas (F. Tonon 2004, *Explicit exact formulas
//!    for the 3-D tetrahedron inertia tensor in terms of its vertex coordinates*, J. Math.
//!    Stat. 1(1)), summed over the tetrahedra fanned from the centre of mass itself.
//!
//! [`principal`] then diagonalises the inertia tensor (symmetric eigen-decomposition).

use super::{ConvexPolyhedron, PrincipalShape, Shape};
use crate::math::{Mat3, Quat, Vec3};
use nalgebra::{Rotation3, SymmetricEigen};
use std::f64::consts::PI;

/// Mass properties of a uniform-density body, in the shape frame.
#[derive(Clone, Debug, PartialEq)]
pub struct MassProperties {
    /// Volume in m³.
    pub volume: f64,
    /// Mass in kg (= density × volume).
    pub mass: f64,
    /// Centre of mass in the shape frame (m).
    pub center_of_mass: Vec3,
    /// Inertia tensor about the centre of mass, shape-frame axes (kg m²).
    pub inertia: Mat3,
}

impl MassProperties {
    /// Body centred on the origin with diagonal inertia `mass · k`, where `k` holds the
    /// squared radii of gyration about x, y, z.
    fn centred(volume: f64, density: f64, k: Vec3) -> Self {
        let mass = density * volume;
        MassProperties {
            volume,
            mass,
            center_of_mass: Vec3::zeros(),
            inertia: Mat3::from_diagonal(&(mass * k)),
        }
    }
}

pub(super) fn mass_properties(shape: &Shape, density: f64) -> MassProperties {
    match shape {
        Shape::Sphere { radius: r } => {
            // V = 4/3 π r³, I = 2/5 m r² about every axis.
            let k = 0.4 * r * r;
            MassProperties::centred(4.0 / 3.0 * PI * r.powi(3), density, Vec3::repeat(k))
        }
        Shape::Cuboid { half_extents: h } => {
            // Sides 2h: V = 8 hx hy hz, I_x = m ((2hy)² + (2hz)²)/12 = m (hy² + hz²)/3.
            let s = h.component_mul(h);
            let k = Vec3::new(s.y + s.z, s.z + s.x, s.x + s.y) / 3.0;
            MassProperties::centred(8.0 * h.x * h.y * h.z, density, k)
        }
        Shape::Cross { c } => cross(*c, density),
        Shape::Ellipsoid { semi_axes: a } => {
            // V = 4/3 π abc, I_x = m (b² + c²)/5 (and cyclically).
            let s = a.component_mul(a);
            let k = Vec3::new(s.y + s.z, s.z + s.x, s.x + s.y) / 5.0;
            MassProperties::centred(4.0 / 3.0 * PI * a.x * a.y * a.z, density, k)
        }
        Shape::Rod { length, radius } => capsule(*length, *radius, density),
        Shape::ConvexPolyhedron(p) => polyhedron(p, density),
        Shape::MassPoints {
            points,
            masses,
            radius,
        } => mass_points(points, masses, *radius),
    }
}

/// Point masses m_k at p_k (the density does not apply): m = Σ m_k, G = Σ m_k p_k / m,
/// I = Σ m_k (|q_k|² 1 − q_k q_kᵀ) with q_k = p_k − G. The volume is that of the contact
/// balls (massless).
fn mass_points(points: &[Vec3], masses: &[f64], radius: f64) -> MassProperties {
    let mass: f64 = masses.iter().sum();
    let com = points.iter().zip(masses).map(|(p, m)| p * *m).sum::<Vec3>() / mass;
    let mut inertia = Mat3::zeros();
    for (p, m) in points.iter().zip(masses) {
        let q = p - com;
        inertia += *m * (Mat3::identity() * q.norm_squared() - q * q.transpose());
    }
    MassProperties {
        volume: points.len() as f64 * 4.0 / 3.0 * PI * radius.powi(3),
        mass,
        center_of_mass: com,
        inertia,
    }
}

/// Cross of three orthogonal 3c × c × c bars: their union is the central c³ cube plus six
/// c³ arm cubes centred at ±c along each axis (volume 7c³, not the 9c³ of the three bars).
///
/// Each cube of mass m₀ = ρc³ has I = m₀c²/6 · 1 about its own centre; an arm at offset d
/// adds m₀(|d|² 1 − d dᵀ) (parallel-axis theorem). Sum: I = 31/6 m₀c² = 31/42 m c² about
/// every axis.
fn cross(c: f64, density: f64) -> MassProperties {
    let m0 = density * c.powi(3);
    let mut inertia = Mat3::identity() * (7.0 * m0 * c * c / 6.0);
    for axis in 0..3 {
        for sign in [-1.0, 1.0] {
            let d = Vec3::ith(axis, sign * c);
            inertia += m0 * (Mat3::identity() * d.norm_squared() - d * d.transpose());
        }
    }
    MassProperties {
        volume: 7.0 * c.powi(3),
        mass: 7.0 * m0,
        center_of_mass: Vec3::zeros(),
        inertia,
    }
}

/// Capsule along z: a cylinder of length L and radius r between the cap centres, plus two
/// hemispheres of radius r.
///
/// Cylinder, m_c = ρπr²L: I_z = m_c r²/2, I_x = m_c (r²/4 + L²/12).
/// Hemisphere, m_h = 2/3 ρπr³: I_z = 2/5 m_h r². About its flat-face centre I_x = 2/5 m_h r²
/// (half a ball); its centre of mass lies 3r/8 from the flat face, so about its own centre
/// of mass I_x = (2/5 − 9/64) m_h r² = 83/320 m_h r², and that centre of mass is
/// L/2 + 3r/8 from the capsule centre (parallel-axis theorem).
fn capsule(length: f64, r: f64, density: f64) -> MassProperties {
    let l = length;
    let m_cyl = density * PI * r * r * l;
    let m_hemi = density * 2.0 / 3.0 * PI * r.powi(3);
    let offset = 0.5 * l + 3.0 / 8.0 * r;
    let axial = 0.5 * m_cyl * r * r + 2.0 * (0.4 * m_hemi * r * r);
    let transverse = m_cyl * (r * r / 4.0 + l * l / 12.0)
        + 2.0 * (83.0 / 320.0 * m_hemi * r * r + m_hemi * offset * offset);
    let volume = PI * r * r * l + 4.0 / 3.0 * PI * r.powi(3);
    MassProperties {
        volume,
        mass: density * volume,
        center_of_mass: Vec3::zeros(),
        inertia: Mat3::from_diagonal(&Vec3::new(transverse, transverse, axial)),
    }
}

/// Exact mass properties of a closed, outward-oriented triangulated surface.
///
/// Pass 1: fan tetrahedra (p, a, b, c) from the vertex average p; signed volumes
/// V_t = det(a − p, b − p, c − p)/6 and centroids (p + a + b + c)/4 give V = Σ V_t and the
/// centre of mass G = Σ V_t centroid_t / V. Pass 2: fan again from G and sum Tonon's tensor
/// with coordinates relative to G, so no parallel-axis shift (and its cancellation) is
/// needed; for a convex hull G is interior and every tetrahedron has positive volume,
/// and signed volumes keep the sum exact for any closed, consistently oriented surface.
fn polyhedron(p: &ConvexPolyhedron, density: f64) -> MassProperties {
    let tri = |t: &[u32; 3]| {
        t.map(|i| {
            p.vertices
                .get(i as usize)
                .copied()
                .unwrap_or(Vec3::repeat(f64::NAN))
        })
    };
    let origin = p.vertex_average();
    let (mut volume, mut moment) = (0.0, Vec3::zeros());
    for t in &p.triangles {
        let [a, b, c] = tri(t).map(|v| v - origin);
        let v = a.dot(&b.cross(&c)) / 6.0;
        volume += v;
        moment += v * (a + b + c) / 4.0;
    }
    let com = origin + moment / volume;
    let mut inertia = Mat3::zeros();
    for t in &p.triangles {
        let [a, b, c] = tri(t).map(|v| v - com);
        inertia += tonon_tetrahedron(&[Vec3::zeros(), a, b, c], density);
    }
    MassProperties {
        volume,
        mass: density * volume,
        center_of_mass: com,
        inertia,
    }
}

/// Inertia tensor about the coordinate origin of the tetrahedron with vertices `v`
/// (Tonon 2004), for density μ:
///
/// a = μ DetJ (Σ_{i≤j} yᵢyⱼ + Σ_{i≤j} zᵢzⱼ)/60  (I_xx; b, c cyclically),
/// a' = μ DetJ (2 Σᵢ yᵢzᵢ + Σ_{i≠j} yᵢzⱼ)/120   (= ∫ y z dm; b' = ∫ x z dm, c' = ∫ x y dm),
///
/// where DetJ = det(v₂ − v₁, v₃ − v₁, v₄ − v₁) = 6V, taken signed here so that fans of
/// tetrahedra add up exactly. The tensor is
/// `[[a, −c', −b'], [−c', b, −a'], [−b', −a', c]]`: the product of inertia I_xy = −∫xy dm
/// = −c' (the paper's worked example, reproduced in tests/mass_properties.rs, confirms
/// that c' is the xy product and b' the xz product).
fn tonon_tetrahedron(v: &[Vec3; 4], density: f64) -> Mat3 {
    let det_j = (v[1] - v[0]).dot(&(v[2] - v[0]).cross(&(v[3] - v[0])));
    // Σ_{i≤j} uᵢuⱼ and 2 Σᵢ uᵢwᵢ + Σ_{i≠j} uᵢwⱼ, written as sums over all (i, j) pairs:
    // Σ_{i≤j} uᵢuⱼ = ½ (Σᵢ uᵢ² + (Σᵢ uᵢ)²), and 2 Σ uᵢwᵢ + Σ_{i≠j} uᵢwⱼ = Σ uᵢwᵢ + Σᵢ uᵢ Σⱼ wⱼ.
    let s: Vec3 = v.iter().sum();
    let mut p = s * s.transpose();
    for x in v {
        p += x * x.transpose();
    }
    // p[(k, l)] = Σᵢ xₖᵢxₗᵢ + (Σᵢ xₖᵢ)(Σᵢ xₗᵢ); diagonal sums are 2 Σ_{i≤j}.
    let f = density * det_j;
    let (sxx, syy, szz) = (p[(0, 0)] / 2.0, p[(1, 1)] / 2.0, p[(2, 2)] / 2.0);
    let a = f * (syy + szz) / 60.0;
    let b = f * (sxx + szz) / 60.0;
    let c = f * (sxx + syy) / 60.0;
    let a_p = f * p[(1, 2)] / 120.0;
    let b_p = f * p[(0, 2)] / 120.0;
    let c_p = f * p[(0, 1)] / 120.0;
    Mat3::new(a, -c_p, -b_p, -c_p, b, -a_p, -b_p, -a_p, c)
}

pub(super) fn principal(shape: &Shape, density: f64) -> PrincipalShape {
    let mp = mass_properties(shape, density);
    match shape {
        Shape::ConvexPolyhedron(p) => {
            let (inertia, rotation) = principal_axes(&mp.inertia);
            let com = mp.center_of_mass;
            // Principal-frame coordinates x' = Rᵀ (x − G).
            let vertices = p
                .vertices
                .iter()
                .map(|v| rotation.inverse_transform_vector(&(v - com)))
                .collect();
            // A proper rotation keeps the triangles' counter-clockwise orientation.
            let moved = ConvexPolyhedron {
                vertices,
                triangles: p.triangles.clone(),
            };
            PrincipalShape {
                shape: Shape::ConvexPolyhedron(moved),
                mass: mp.mass,
                inertia,
                center_of_mass: com,
                rotation,
            }
        }
        Shape::MassPoints {
            points,
            masses,
            radius,
        } => {
            let (inertia, rotation) = principal_axes(&mp.inertia);
            let com = mp.center_of_mass;
            let moved = points
                .iter()
                .map(|v| rotation.inverse_transform_vector(&(v - com)))
                .collect();
            PrincipalShape {
                shape: Shape::MassPoints {
                    points: moved,
                    masses: masses.clone(),
                    radius: *radius,
                },
                mass: mp.mass,
                inertia,
                center_of_mass: com,
                rotation,
            }
        }
        // Symmetric shapes: the shape frame is already principal (diagonal tensor, centre of
        // mass at the origin), so the shape is kept as is.
        _ => PrincipalShape {
            shape: shape.clone(),
            mass: mp.mass,
            inertia: mp.inertia.diagonal(),
            center_of_mass: mp.center_of_mass,
            rotation: Quat::identity(),
        },
    }
}

/// Off-diagonal entries below this fraction of the trace count as zero in
/// [`principal_axes`]: the rounding of the summed tensor is ~1e-16 of the trace, and a
/// principal moment then errs by at most this fraction.
const DIAGONAL_TOLERANCE: f64 = 1e-13;

/// Principal moments and the proper rotation R (columns = principal axes in the shape
/// frame) with `inertia = R diag(moments) Rᵀ`.
///
/// Deterministic: an already diagonal tensor keeps the identity (so an axis-aligned box
/// or the regular tetrahedron, whose tensor is isotropic, are not turned by rounding
/// noise); otherwise the moments are sorted ascending, each axis is signed so that its
/// largest component (first on ties) is positive, and the last axis is flipped if needed
/// to make det R = +1. A non-finite tensor (invalid shape) is returned unrotated.
fn principal_axes(inertia: &Mat3) -> (Vec3, Quat) {
    let diagonal = inertia.diagonal();
    let off = inertia[(0, 1)]
        .abs()
        .max(inertia[(0, 2)].abs())
        .max(inertia[(1, 2)].abs());
    let finite = inertia.iter().all(|x| x.is_finite());
    if !finite || off <= DIAGONAL_TOLERANCE * diagonal.sum().abs() {
        return (diagonal, Quat::identity());
    }
    let Some(eigen) = SymmetricEigen::try_new(*inertia, f64::EPSILON, 10_000) else {
        return (diagonal, Quat::identity());
    };
    let mut order = [0usize, 1, 2];
    order.sort_by(|&i, &j| eigen.eigenvalues[i].total_cmp(&eigen.eigenvalues[j]));
    let moments = Vec3::from_fn(|k, _| eigen.eigenvalues[order[k]]);
    let mut axes = order.map(|i| {
        let axis = eigen.eigenvectors.column(i).normalize();
        let largest = axis.iamax();
        if axis[largest] < 0.0 { -axis } else { axis }
    });
    if axes[0].cross(&axes[1]).dot(&axes[2]) < 0.0 {
        axes[2] = -axes[2];
    }
    let rotation = Quat::from_rotation_matrix(&Rotation3::from_basis_unchecked(&axes));
    (moments, rotation)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Relative closeness of two tensors in the Frobenius norm.
    fn rel(a: &Mat3, b: &Mat3) -> f64 {
        (a - b).norm() / b.norm()
    }

    #[test]
    fn tonon_matches_covariance_formula_for_a_unit_corner_tetrahedron() {
        // Corner tetrahedron (0, e_x, e_y, e_z): V = 1/6, ∫x² dV = 1/60, ∫xy dV = 1/120
        // (direct integration), so I_xx = 2/60, I_xy = −1/120.
        let v = [Vec3::zeros(), Vec3::x(), Vec3::y(), Vec3::z()];
        let i = tonon_tetrahedron(&v, 1.0);
        let want = Mat3::new(
            1.0 / 30.0,
            -1.0 / 120.0,
            -1.0 / 120.0,
            -1.0 / 120.0,
            1.0 / 30.0,
            -1.0 / 120.0,
            -1.0 / 120.0,
            -1.0 / 120.0,
            1.0 / 30.0,
        );
        assert!(rel(&i, &want) < 1e-15, "{i} vs {want}");
        // Reversing the orientation flips the sign (signed volume).
        let flipped = tonon_tetrahedron(&[v[0], v[2], v[1], v[3]], 1.0);
        assert!(rel(&(-flipped), &want) < 1e-15);
    }

    #[test]
    fn principal_axes_is_a_proper_rotation_and_reconstructs() {
        let i = Mat3::new(3.0, 0.4, -0.2, 0.4, 2.0, 0.1, -0.2, 0.1, 1.5);
        let (moments, q) = principal_axes(&i);
        assert!(
            moments[0] <= moments[1] && moments[1] <= moments[2],
            "sorted ascending"
        );
        let r = q.to_rotation_matrix();
        assert!((r.matrix().determinant() - 1.0).abs() < 1e-14);
        let back = r.matrix() * Mat3::from_diagonal(&moments) * r.matrix().transpose();
        assert!(rel(&back, &i) < 1e-14, "{back} vs {i}");
        // Deterministic: same input, bit-identical output.
        assert_eq!(principal_axes(&i), (moments, q));
    }

    #[test]
    fn principal_axes_leaves_diagonal_and_invalid_tensors_alone() {
        let d = Mat3::from_diagonal(&Vec3::new(3.0, 1.0, 2.0));
        assert_eq!(
            principal_axes(&d),
            (Vec3::new(3.0, 1.0, 2.0), Quat::identity())
        );
        let nan = Mat3::from_element(f64::NAN);
        assert_eq!(principal_axes(&nan).1, Quat::identity());
    }
}
