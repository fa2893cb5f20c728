//! Narrow-phase acceptance tests: contact manifolds have the right number of points,
//! normals and gaps for the configurations the issue names.

use impulse_lab::container::{Container, Divider};
use impulse_lab::math::{Quat, Vec3};
use impulse_lab::{RigidBody, Shape, SolverKind, SolverParams, World};

fn world() -> World {
    World::new(
        Vec3::new(0.0, 0.0, -9.81),
        1.0 / 600.0,
        SolverKind::Jolt,
        SolverParams::default(),
    )
    .unwrap()
}

fn ground() -> Container {
    Container::Plane {
        point: Vec3::zeros(),
        normal: Vec3::z(),
    }
}

#[test]
fn cube_flat_on_ground_has_four_contacts() {
    let mut w = world();
    w.add_container(ground());
    // Unit cube resting with a 1 mm overlap, rotated about z only (still flat).
    let cube = Shape::Cuboid {
        half_extents: Vec3::repeat(0.5),
    };
    w.add_body(RigidBody::new(
        &cube,
        1000.0,
        Vec3::new(0.3, -0.2, 0.499),
        Quat::from_euler_angles(0.0, 0.0, 0.7),
    ));
    let contacts = w.detect();
    assert_eq!(
        contacts.len(),
        4,
        "a flat cube touches the ground at its 4 bottom corners"
    );
    for c in contacts {
        assert_eq!(c.b, None);
        assert!(
            (c.normal - Vec3::z()).norm() < 1e-12,
            "normal must be the plane normal"
        );
        assert!(
            (c.gap + 0.001).abs() < 1e-12,
            "gap must be the 1 mm overlap, got {}",
            c.gap
        );
        assert!(
            (c.point.z - (-0.001)).abs() < 1e-12,
            "against a container the contact point is on the cube's surface, got {}",
            c.point.z
        );
    }
}

#[test]
fn cube_flat_on_cube_has_four_contacts() {
    let mut w = world();
    let cube = Shape::Cuboid {
        half_extents: Vec3::repeat(0.5),
    };
    w.add_body(RigidBody::new(
        &cube,
        1000.0,
        Vec3::new(0.0, 0.0, 0.5),
        Quat::identity(),
    ));
    // Upper cube shifted so its face overlaps half of the lower one, 1 mm overlap.
    w.add_body(RigidBody::new(
        &cube,
        1000.0,
        Vec3::new(0.5, 0.0, 1.499),
        Quat::identity(),
    ));
    let contacts = w.detect().to_vec();
    assert_eq!(
        contacts.len(),
        4,
        "face-face contact clips to a 4-point manifold: {contacts:#?}"
    );
    for c in &contacts {
        assert_eq!((c.a, c.b), (0, Some(1)));
        assert!(
            (c.normal + Vec3::z()).norm() < 1e-9,
            "normal points from b (upper) to a (lower)"
        );
        assert!((c.gap + 0.001).abs() < 1e-9, "gap {}", c.gap);
        assert!(
            c.point.x >= -1e-9 && c.point.x <= 0.5 + 1e-9,
            "points lie on the overlap of the faces"
        );
    }
    let xs: Vec<f64> = contacts.iter().map(|c| c.point.x).collect();
    assert!(
        xs.iter().any(|x| x.abs() < 1e-9) && xs.iter().any(|x| (x - 0.5).abs() < 1e-9),
        "manifold spans the overlap"
    );
}

#[test]
fn sphere_in_cylinder_touches_wall_and_floor() {
    let mut w = world();
    w.add_container(Container::Cylinder {
        base: Vec3::zeros(),
        radius: 2.0,
        height: 3.0,
    });
    // Sphere r = 0.5 pressed 1 cm into the wall at azimuth 30°, 2 mm into the floor.
    let phi = 30f64.to_radians();
    let rho = 2.0 - 0.5 + 0.01;
    w.add_body(RigidBody::new(
        &Shape::Sphere { radius: 0.5 },
        1000.0,
        Vec3::new(rho * phi.cos(), rho * phi.sin(), 0.498),
        Quat::identity(),
    ));
    let contacts = w.detect();
    assert_eq!(contacts.len(), 2);
    let floor = contacts
        .iter()
        .find(|c| c.normal.z > 0.5)
        .expect("floor contact");
    assert!((floor.gap + 0.002).abs() < 1e-12);
    let wall = contacts
        .iter()
        .find(|c| c.normal.z.abs() < 1e-12)
        .expect("wall contact");
    assert!((wall.gap + 0.01).abs() < 1e-12, "wall gap {}", wall.gap);
    let inward = -Vec3::new(phi.cos(), phi.sin(), 0.0);
    assert!(
        (wall.normal - inward).norm() < 1e-12,
        "wall normal points to the axis"
    );
}

#[test]
fn cross_in_box_corner_touches_floor_and_two_walls() {
    let mut w = world();
    w.add_container(Container::Box {
        center: Vec3::zeros(),
        half_size: [5.0, 5.0],
        height: 4.0,
        walls: [true; 4],
        dividers: vec![],
    });
    // Cross with 3c = 3.78 m (c = 1.26) in the (−x, −y) corner, 1 mm into floor and walls.
    let c = 1.26;
    let pos = Vec3::new(
        -5.0 + 1.5 * c - 0.001,
        -5.0 + 1.5 * c - 0.001,
        1.5 * c - 0.001,
    );
    w.add_body(RigidBody::new(
        &Shape::Cross { c },
        2400.0,
        pos,
        Quat::identity(),
    ));
    let contacts = w.detect();
    let count = |n: Vec3| {
        contacts
            .iter()
            .filter(|k| (k.normal - n).norm() < 1e-12)
            .count()
    };
    // Each arm tip is a c × c square: 4 corners touch each of the floor and the two walls.
    assert_eq!(count(Vec3::z()), 4, "floor");
    assert_eq!(count(Vec3::x()), 4, "-x wall");
    assert_eq!(count(Vec3::y()), 4, "-y wall");
    assert_eq!(contacts.len(), 12);
    assert!(contacts.iter().all(|k| (k.gap + 0.001).abs() < 1e-12));
}

#[test]
fn removed_wall_and_divider_stop_acting() {
    let mut w = world();
    let box_ = |walls, present| Container::Box {
        center: Vec3::zeros(),
        half_size: [5.0, 2.0],
        height: 3.0,
        walls,
        dividers: vec![Divider { x: 0.0, present }],
    };
    w.add_container(box_([true; 4], true));
    // Sphere straddling the divider from the +x side and touching the −x... no: touching
    // the divider only.
    w.add_body(RigidBody::new(
        &Shape::Sphere { radius: 0.5 },
        1000.0,
        Vec3::new(0.49, 0.0, 1.0),
        Quat::identity(),
    ));
    let with = w.detect().to_vec();
    assert_eq!(with.len(), 1);
    assert!((with[0].normal - Vec3::x()).norm() < 1e-12 && (with[0].gap + 0.01).abs() < 1e-12);
    w.containers[0] = box_([true; 4], false);
    assert!(w.detect().is_empty(), "divider removed: no contact");
}

/// An ellipsoid leaning into a hopper's cone wall: the contact (SAGI, paper 002 A3) must
/// agree with dense sampling of the ellipsoid surface — the deepest penetration into the
/// cone and the inward cone normal there.
#[test]
fn ellipsoid_on_cone_wall_matches_dense_sampling() {
    let (r0, r1, height) = (1.0, 3.0, 2.0);
    let mut w = world();
    w.add_container(Container::Hopper {
        base: Vec3::zeros(),
        bottom_radius: r0,
        top_radius: r1,
        height,
    });
    let semi = Vec3::new(0.5, 0.4, 0.3);
    let q = Quat::from_euler_angles(0.3, -0.2, 0.9);
    // Centre at height 1 (cone radius 2 there), pushed out towards the wall.
    let centre = Vec3::new(1.55, 0.2, 1.0);
    w.add_body(RigidBody::new(
        &Shape::Ellipsoid { semi_axes: semi },
        1000.0,
        centre,
        q,
    ));
    let contacts = w.detect().to_vec();
    assert_eq!(
        contacts.len(),
        1,
        "one contact with the cone wall: {contacts:#?}"
    );
    let c = &contacts[0];

    // Independent: signed distance of surface samples to the cone surface (> 0 inside).
    let l = (height * height + (r1 - r0) * (r1 - r0)).sqrt();
    let dist = |p: Vec3| {
        let rho = (p.x * p.x + p.y * p.y).sqrt();
        height / l * (r0 + (r1 - r0) * p.z / height - rho)
    };
    let mut deepest = f64::INFINITY;
    let mut at = Vec3::zeros();
    let n = 1200;
    for i in 0..=n {
        let theta = std::f64::consts::PI * i as f64 / n as f64;
        for j in 0..2 * n {
            let phi = std::f64::consts::PI * j as f64 / n as f64;
            let local = Vec3::new(
                semi.x * theta.sin() * phi.cos(),
                semi.y * theta.sin() * phi.sin(),
                semi.z * theta.cos(),
            );
            let p = centre + q * local;
            let d = dist(p);
            if d < deepest {
                deepest = d;
                at = p;
            }
        }
    }
    assert!(deepest < 0.0, "the set-up must penetrate the wall");
    // The grid's spacing (~1.3e-3 m) bounds the sampled depth error quadratically.
    assert!(
        (c.gap - deepest).abs() < 1e-5,
        "gap {} vs sampled {deepest}",
        c.gap
    );
    // Against a container the contact point is on the ellipsoid's surface: its deepest
    // point.
    let deepest_point = c.point;
    assert!(
        (deepest_point - at).norm() < 5e-3,
        "deepest point {deepest_point:?} vs sampled {at:?}"
    );
    let rho_hat = Vec3::new(at.x, at.y, 0.0).normalize();
    let inward = (-height * rho_hat + Vec3::new(0.0, 0.0, r1 - r0)) / l;
    assert!(
        (c.normal - inward).norm() < 5e-3,
        "normal {:?} vs inward cone normal {inward:?}",
        c.normal
    );
    assert_eq!(c.b, None);
}

/// Regression: a tetrahedron's vertex resting on the triangulated face of another came
/// back once per adjacent hull triangle (found by the ETM §7.1 test); the duplicates
/// would make a solver apply the same impulse twice.
#[test]
fn vertex_on_face_contact_is_reported_once() {
    let mut w = world();
    let t = Shape::regular_tetrahedron(1.0);
    // b apex-down (flat face on top at z = 0.204), a apex-down touching it by 1 mm.
    let flip = Quat::from_euler_angles(std::f64::consts::PI, 0.0, 0.0);
    w.add_body(RigidBody::new(
        &t,
        1000.0,
        Vec3::new(0.0, 0.0, 0.8154),
        flip,
    ));
    w.add_body(RigidBody::new(
        &t,
        1000.0,
        Vec3::new(0.05, -0.03, 0.0),
        flip,
    ));
    let contacts = w.detect().to_vec();
    assert_eq!(contacts.len(), 1, "one vertex, one contact: {contacts:#?}");
    assert!((contacts[0].normal - Vec3::z()).norm() < 1e-9);
}

/// A column of three cubes resting on the ground (sleeping off, so every step detects
/// them awake) recycles both cube–cube manifolds once they are kept; a fourth cube
/// dropped on top at 2 m/s meets the column with a freshly computed manifold, and its
/// pair recycles only once the impact is over. With `rest_velocity` 0 (every approach
/// an impact) nothing is recycled.
#[test]
fn resting_cubes_recycle_their_manifolds_and_an_impact_never_does() {
    let cube = Shape::Cuboid {
        half_extents: Vec3::repeat(0.25),
    };
    let column = |rest_velocity: f64| {
        let mut w = World::new(
            Vec3::new(0.0, 0.0, -9.81),
            1.0 / 600.0,
            SolverKind::Jolt,
            SolverParams {
                rest_velocity,
                ..SolverParams::default()
            },
        )
        .unwrap();
        w.sleep.enabled = false;
        w.add_container(ground());
        for k in 0..3 {
            let z = 0.25 + 0.5 * f64::from(k) - 1e-4 * f64::from(k + 1);
            w.add_body(RigidBody::new(
                &cube,
                1000.0,
                Vec3::new(0.0, 0.0, z),
                Quat::identity(),
            ));
        }
        w.start_ledger();
        w
    };
    let mut w = column(0.05);
    w.step().unwrap();
    assert_eq!(
        w.manifold_counts().new,
        2,
        "the first step keeps both manifolds"
    );
    for _ in 0..60 {
        w.step().unwrap();
        assert_eq!(w.manifold_counts().recycled, 2, "step {}", w.step_index);
    }
    // The fourth cube: 2 m/s down, 3 mm above the column's top.
    let top = w.bodies[2].position.z + 0.5 + 0.003;
    let mut falling = RigidBody::new(&cube, 1000.0, Vec3::new(0.05, 0.0, top), Quat::identity());
    falling.velocity = Vec3::new(0.0, 0.0, -2.0);
    w.add_body(falling);
    let mut fresh_at_impact = false;
    for _ in 0..120 {
        w.record_trace = true;
        w.step().unwrap();
        let c = w.manifold_counts();
        // The struck pair's normal velocities after the kick, as the method saw them.
        let frame = &w.trace_frame;
        let struck = frame
            .contacts
            .iter()
            .zip(&frame.normal_velocity_before)
            .any(|(c, &u)| c.a == 2 && c.b == Some(3) && u < -0.05);
        if struck {
            // Approaching faster than the rest velocity: never recycled.
            assert!(
                c.recycled <= 2 && c.new + c.recomputed >= 1,
                "step {}: the struck pair is computed afresh ({c:?})",
                w.step_index
            );
            fresh_at_impact = true;
        }
    }
    assert!(fresh_at_impact, "the falling cube must strike the column");
    assert_eq!(
        w.manifold_counts().recycled,
        3,
        "at rest again, all three pairs recycle"
    );

    let mut off = column(0.0);
    for _ in 0..30 {
        off.step().unwrap();
        let c = off.manifold_counts();
        assert_eq!(
            c.recycled + c.recomputed + c.new,
            0,
            "rest velocity 0: nothing kept"
        );
    }
}
