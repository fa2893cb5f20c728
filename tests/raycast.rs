//! Ray casts (the app's mouse picking) against analytic hit distances.

use impulse_lab::RigidBody;
use impulse_lab::collision::Collider;
use impulse_lab::collision::raycast::{cast_ray, pick};
use impulse_lab::math::{Quat, Vec3};
use impulse_lab::shapes::Shape;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn body(shape: Shape, at: Vec3, q: Quat) -> RigidBody {
    RigidBody::new(&shape, 1000.0, at, q)
}

fn hit(b: &RigidBody, o: Vec3, d: Vec3) -> Option<f64> {
    cast_ray(b, &Collider::new(&b.shape), &o, &d)
}

#[test]
fn sphere_hit_distance_is_exact() {
    let b = body(
        Shape::Sphere { radius: 0.5 },
        Vec3::new(1.0, 2.0, 3.0),
        Quat::identity(),
    );
    // From 10 m away along x, through the centre: hits at 10 − r.
    let t = hit(&b, Vec3::new(-9.0, 2.0, 3.0), Vec3::new(2.0, 0.0, 0.0)).unwrap();
    assert!((t - 9.5).abs() < 1e-12, "{t}");
    // Offset by 0.3 from the centre line: t = 10 − √(r² − 0.3²).
    let t = hit(&b, Vec3::new(-9.0, 2.3, 3.0), Vec3::x()).unwrap();
    assert!((t - (10.0 - (0.25f64 - 0.09).sqrt())).abs() < 1e-12, "{t}");
    // Just outside the silhouette, and pointing away: misses.
    assert!(hit(&b, Vec3::new(-9.0, 2.5001, 3.0), Vec3::x()).is_none());
    assert!(hit(&b, Vec3::new(-9.0, 2.0, 3.0), -Vec3::x()).is_none());
    // From inside: t = 0.
    assert_eq!(hit(&b, Vec3::new(1.1, 2.0, 3.0), Vec3::z()), Some(0.0));
}

/// A rotated ellipsoid: the hit point must lie on its surface (x'ᵀ S⁻² x' = 1 in the
/// body frame) and on the ray, checked for 1,000 random rays that meet it.
#[test]
fn ellipsoid_hits_lie_on_the_surface() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let axes = Vec3::new(1.2, 0.7, 0.4);
    let q = Quat::from_euler_angles(0.3, -0.8, 1.1);
    let c = Vec3::new(0.5, -1.0, 2.0);
    let b = body(Shape::Ellipsoid { semi_axes: axes }, c, q);
    let mut hits = 0;
    for _ in 0..1000 {
        let o = c + 6.0
            * Vec3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                1.0,
            );
        let aim = c + 0.28
            * Vec3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                0.0,
            );
        let d = (aim - o).normalize();
        // The aim point is within 0.28·√2 < 0.4 m (the smallest semi-axis) of the centre,
        // so inside the ellipsoid: every ray from outside through it must hit.
        let t = hit(&b, o, d).expect("ray aimed at the centre missed");
        let p = b
            .orientation
            .inverse_transform_vector(&(o + t * d - b.position));
        let level = p.component_div(&b.shape_semi_axes()).norm_squared();
        assert!((level - 1.0).abs() < 1e-10, "hit off the surface: {level}");
        hits += 1;
    }
    assert_eq!(hits, 1000);
}

trait SemiAxes {
    fn shape_semi_axes(&self) -> Vec3;
}
impl SemiAxes for RigidBody {
    /// The ellipsoid's semi-axes in its principal frame.
    fn shape_semi_axes(&self) -> Vec3 {
        match &self.shape {
            Shape::Ellipsoid { semi_axes } => *semi_axes,
            _ => panic!("not an ellipsoid"),
        }
    }
}

#[test]
fn cube_and_cross_hit_their_faces() {
    let cube = body(
        Shape::Cuboid {
            half_extents: Vec3::repeat(0.5),
        },
        Vec3::zeros(),
        Quat::identity(),
    );
    let t = hit(&cube, Vec3::new(0.2, 0.1, 5.0), -Vec3::z()).unwrap();
    assert!((t - 4.5).abs() < 1e-12, "{t}");
    // A cross (c = 1): the bar along x is 3 long, 1 thick. A ray down at x = 1.2 meets
    // that bar's top at z = 0.5; at (1.2, 1.2) it passes between the arms.
    let cross = body(Shape::Cross { c: 1.0 }, Vec3::zeros(), Quat::identity());
    let t = hit(&cross, Vec3::new(1.2, 0.0, 5.0), -Vec3::z()).unwrap();
    assert!((t - 4.5).abs() < 1e-12, "{t}");
    assert!(hit(&cross, Vec3::new(1.2, 1.2, 5.0), -Vec3::z()).is_none());
}

#[test]
fn pick_returns_the_nearest_body_and_can_skip_static_ones() {
    let s = Shape::Sphere { radius: 0.5 };
    let bodies = vec![
        body(s.clone(), Vec3::new(0.0, 0.0, 4.0), Quat::identity()),
        body(s.clone(), Vec3::new(0.0, 0.0, 1.0), Quat::identity()).into_static(),
        body(s, Vec3::new(0.0, 0.0, 2.0), Quat::identity()),
    ];
    let o = Vec3::new(0.0, 0.0, -10.0);
    let (i, t) = pick(&bodies, &o, &Vec3::z(), false).unwrap();
    assert_eq!(i, 1);
    assert!((t - 10.5).abs() < 1e-12);
    let (i, t) = pick(&bodies, &o, &Vec3::z(), true).unwrap();
    assert_eq!(i, 2);
    assert!((t - 11.5).abs() < 1e-12);
    assert!(pick(&bodies, &o, &Vec3::x(), false).is_none());
    assert!(pick(&bodies, &o, &Vec3::zeros(), false).is_none());
}
