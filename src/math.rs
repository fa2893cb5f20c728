//! Scalar and linear-algebra aliases used across the physics core.
//!
//! Physics is `f64` throughout; conversion to `f32` happens only at the rendering boundary.

pub type Real = f64;
pub type Vec3 = nalgebra::Vector3<f64>;
pub type Point3 = nalgebra::Point3<f64>;
pub type Mat3 = nalgebra::Matrix3<f64>;
pub type Quat = nalgebra::UnitQuaternion<f64>;
pub type Iso3 = nalgebra::Isometry3<f64>;

/// Cross-product (skew-symmetric) matrix `r̃` with `r̃ v = r × v`.
pub fn skew(r: &Vec3) -> Mat3 {
    Mat3::new(0.0, -r.z, r.y, r.z, 0.0, -r.x, -r.y, r.x, 0.0)
}

/// Two unit tangents `(t1, t2)` completing the unit normal `n` to a right-handed frame
/// `(t1, t2, n)`. Deterministic (depends only on `n`), continuous except near `n = ±z`
/// where it switches branch, as in Box2D/Rapier's `orthonormal_basis`.
pub fn tangent_basis(n: &Vec3) -> (Vec3, Vec3) {
    debug_assert!(
        (n.norm() - 1.0).abs() < 1e-9,
        "normal must be unit, |n| = {}",
        n.norm()
    );
    // Duff et al. (2017), "Building an orthonormal basis, revisited".
    let sign = 1.0f64.copysign(n.z);
    let a = -1.0 / (sign + n.z);
    let b = n.x * n.y * a;
    let t1 = Vec3::new(1.0 + sign * n.x * n.x * a, sign * b, -sign * n.x);
    let t2 = Vec3::new(b, sign + n.y * n.y * a, -n.y);
    (t1, t2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tangent_basis_is_orthonormal_and_right_handed() {
        for n in [
            Vec3::z(),
            -Vec3::z(),
            Vec3::x(),
            Vec3::new(1.0, -2.0, 0.3).normalize(),
        ] {
            let (t1, t2) = tangent_basis(&n);
            assert!((t1.norm() - 1.0).abs() < 1e-14 && (t2.norm() - 1.0).abs() < 1e-14);
            assert!(
                t1.dot(&n).abs() < 1e-14 && t2.dot(&n).abs() < 1e-14 && t1.dot(&t2).abs() < 1e-14
            );
            assert!((t1.cross(&t2) - n).norm() < 1e-14, "t1 x t2 must equal n");
        }
    }

    #[test]
    fn skew_matches_cross_product() {
        let r = Vec3::new(1.0, 2.0, 3.0);
        let v = Vec3::new(-0.5, 4.0, 0.25);
        assert!((skew(&r) * v - r.cross(&v)).norm() < 1e-14);
    }
}
