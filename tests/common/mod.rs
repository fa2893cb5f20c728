//! Shared test helpers: the random multi-contact collision set of the impulse solvers
//! (paper 000's methods in `tests/sqm_smm.rs`, MDP in `tests/mdp.rs`).
#![allow(dead_code)] // each test crate uses its own subset

use impulse_lab::collision::Contact;
use impulse_lab::math::{Quat, Vec3};
use impulse_lab::{RigidBody, Shape, SolverKind, SolverParams, World};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Random shapes for the collision set: cube, sphere or regular tetrahedron.
pub fn random_shape(rng: &mut ChaCha8Rng) -> Shape {
    match rng.random_range(0..3) {
        0 => Shape::Cuboid {
            half_extents: Vec3::new(
                rng.random_range(0.3..0.7),
                rng.random_range(0.3..0.7),
                rng.random_range(0.3..0.7),
            ),
        },
        1 => Shape::Sphere {
            radius: rng.random_range(0.3..0.7),
        },
        _ => Shape::regular_tetrahedron(rng.random_range(0.8..1.6)),
    }
}

pub fn random_unit(rng: &mut ChaCha8Rng) -> Vec3 {
    loop {
        let v = Vec3::new(
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
        );
        let n = v.norm();
        if n > 0.1 && n <= 1.0 {
            return v / n;
        }
    }
}

/// Move body `k` along `d` (from body `anchor`) until the pair overlaps by 0.01-1 mm.
/// Uses the narrow phase with a large margin, so the returned gap is the distance.
pub fn place_touching(w: &mut World, anchor: usize, k: usize, d: &Vec3) -> bool {
    let reach = w.bodies[anchor].shape.bounding_radius() + w.bodies[k].shape.bounding_radius();
    let mut s = reach + 0.05;
    w.contact_margin = 2.0 * reach;
    for _ in 0..40 {
        w.bodies[k].position = w.bodies[anchor].position + s * d;
        let pair =
            |c: &&Contact| (c.a == anchor && c.b == Some(k)) || (c.a == k && c.b == Some(anchor));
        let Some(c) = w
            .detect()
            .iter()
            .filter(pair)
            .min_by(|x, y| x.gap.total_cmp(&y.gap))
            .cloned()
        else {
            s *= 0.9;
            continue;
        };
        if (-1e-3..=-1e-5).contains(&c.gap) {
            w.contact_margin = 0.005;
            return true;
        }
        // The gap shrinks at rate |n·d| as k moves along −d.
        let rate = c.normal.dot(d).abs().max(0.2);
        s -= (c.gap + 5e-4) / rate;
    }
    w.contact_margin = 0.005;
    false
}

/// One draw of the random multi-contact collision set.
pub struct RandomCollision {
    pub world: World,
    pub params: SolverParams,
    pub contacts: Vec<Contact>,
}

/// Draw one collision of the set: 2 or 3 bodies among cubes, spheres and tetrahedra,
/// placed in contact (aligned poses half the time, so faces meet and give 3-4 point
/// manifolds), sometimes against a static body, with random velocities (approaching),
/// e ∈ [0, 1] and μ ∈ {0} ∪ [0, 1] (kp = 0). `None` when the placement failed or no
/// contact approaches (the draw is skipped). The world steps with `kind`.
pub fn random_multi_contact_collision(
    rng: &mut ChaCha8Rng,
    kind: SolverKind,
) -> Option<RandomCollision> {
    let e = rng.random_range(0.0..=1.0);
    let mu = if rng.random_bool(0.3) {
        0.0
    } else {
        rng.random_range(0.0..1.0)
    };
    let params = SolverParams {
        restitution: e,
        friction: mu,
        kp: 0.0,
        ..Default::default()
    };
    let mut w = World::new(Vec3::zeros(), 1.0 / 600.0, kind, params.clone()).unwrap();
    let aligned = rng.random_bool(0.5);
    let n_bodies = if rng.random_bool(0.6) { 2 } else { 3 };
    for k in 0..n_bodies {
        let shape = random_shape(rng);
        let q = if aligned {
            Quat::identity()
        } else {
            Quat::from_scaled_axis(random_unit(rng) * rng.random_range(0.0..3.1))
        };
        let mut body = RigidBody::new(&shape, rng.random_range(500.0..3000.0), Vec3::zeros(), q);
        if k == 0 && rng.random_bool(0.25) {
            body = body.into_static();
        }
        w.add_body(body);
    }
    let mut placed = true;
    for k in 1..n_bodies {
        let d = if aligned {
            (Vec3::z() + 0.3 * random_unit(rng)).normalize()
        } else {
            random_unit(rng)
        };
        placed &= place_touching(&mut w, k - 1, k, &d);
    }
    if !placed {
        return None;
    }
    for k in 0..n_bodies {
        if w.bodies[k].is_static() {
            continue;
        }
        // Towards the centroid (approach), plus a random part and spin.
        let centroid: Vec3 = w.bodies.iter().map(|b| b.position).sum::<Vec3>() / n_bodies as f64;
        let to_c = centroid - w.bodies[k].position;
        w.bodies[k].velocity = rng.random_range(0.5..5.0)
            * to_c.try_normalize(1e-12).unwrap_or(Vec3::z())
            + 2.0 * random_unit(rng);
        w.bodies[k].angular_velocity = rng.random_range(0.0..5.0) * random_unit(rng);
    }
    let contacts = w.detect().to_vec();
    let approaching = contacts
        .iter()
        .filter(|c| impulse_lab::collision::relative_velocity(&w.bodies, c).dot(&c.normal) < 0.0)
        .count();
    if approaching == 0 {
        return None;
    }
    Some(RandomCollision {
        world: w,
        params,
        contacts,
    })
}
