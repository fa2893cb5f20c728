//! Contacts keep their identity from step to step: a body pair plus the features of the
//! two sides that touch (`collision::FeatureId`), and the warm start finds last step's
//! impulse of every contact by it.

use impulse_lab::collision::{CollisionPipeline, FeatureId};
use impulse_lab::container::Container;
use impulse_lab::dynamics::warm_start::{PointImpulse, Remembered};
use impulse_lab::math::{Quat, Vec3};
use impulse_lab::{RigidBody, Shape, SolverKind, SolverParams, World};

type Identity = (usize, Option<usize>, Option<usize>, FeatureId);

/// A resting stack on the ground: a unit cube on the floor (vertex–plane contacts), a
/// second cube on it, turned (a parry cuboid–cuboid manifold), a cross on the floor beside them
/// (a compound: one manifold per bar) and a sphere on the floor (one point).
fn stack(kind: SolverKind) -> World {
    let mut w = World::new(
        Vec3::new(0.0, 0.0, -9.81),
        1.0 / 600.0,
        kind,
        SolverParams::default(),
    )
    .unwrap();
    w.sleep.enabled = false;
    w.add_container(Container::Plane {
        point: Vec3::zeros(),
        normal: Vec3::z(),
    });
    let cube = Shape::Cuboid {
        half_extents: Vec3::repeat(0.5),
    };
    let cross = Shape::Cross { c: 0.3 };
    let sphere = Shape::Sphere { radius: 0.4 };
    let place = |shape: &Shape, x: f64, z: f64, turn: f64| {
        let q = Quat::from_euler_angles(0.0, 0.0, turn);
        RigidBody::new(shape, 1000.0, Vec3::new(x, 0.0, z), q)
    };
    w.add_body(place(&cube, 0.0, 0.5, 0.0));
    // Turned 0.4 rad about z: the faces' edges cross at 8 points, none of them
    // coincide (coincident edges would make the clipping's topology, hence the
    // features, flip with round-off).
    w.add_body(place(&cube, 0.0, 1.5, 0.4));
    // The cross's bars are 3c long and c thick: it lies on a bar, its centre c/2 up.
    w.add_body(place(&cross, 3.0, 0.15, 0.0));
    w.add_body(place(&sphere, -3.0, 0.4, 0.0));
    w
}

fn identities(w: &World) -> Vec<Identity> {
    let mut ids: Vec<Identity> = w
        .contacts
        .iter()
        .map(|c| (c.a, c.b, c.container, c.feature))
        .collect();
    ids.sort();
    ids
}

/// No identity of the sorted list `ids` repeats (`at` names the step).
fn assert_unique(ids: &[Identity], at: &str) {
    assert!(
        ids.windows(2).all(|p| p[0] != p[1]),
        "{at}: an identity repeats within the step: {ids:?}"
    );
}

/// The impulses a resting stack's contacts warm-start from, with their identities: the
/// contact pass's for the methods that leave resting contacts to it (jolt, SQM, MDP: MDP
/// keeps its own impulses only for contacts that approach or slip faster than
/// `rest_velocity`), the method's own otherwise.
fn warm_cache(w: &World) -> Vec<(Identity, PointImpulse)> {
    let pass = w.solver().uses_contact_pass() || !w.solver().keeps_impulses();
    let stage = |e: &Remembered| {
        if pass {
            e.impulses.pass
        } else {
            e.impulses.method
        }
    };
    w.carried_state()
        .impulses
        .entries()
        .iter()
        .filter_map(|e| Some(((e.key.0, e.key.1, e.key.2, e.feature), stage(e)?)))
        .collect()
}

/// Per contact identity of the world's last step, the contact point in a's body frame.
fn body_points(w: &World) -> Vec<(Identity, Vec3)> {
    w.contacts
        .iter()
        .map(|c| {
            (
                (c.a, c.b, c.container, c.feature),
                w.bodies[c.a].orientation.inverse() * c.r_a,
            )
        })
        .collect()
}

/// At rest, every contact of a step is a contact of the step before with the same
/// identity, identities are unique within a step, and the warm start finds every
/// impulse the last step kept (every contact that pressed, λ_n > 0) by the identity
/// alone, at the same point of the body. If the ids were not persistent (a fresh
/// number per step, or one id for all points of a pair) the sets would differ or
/// repeat, and the lookups would miss or land on another point.
#[test]
fn a_resting_stack_keeps_its_contact_ids_and_the_warm_start_finds_them() {
    for kind in [
        SolverKind::Jolt,
        SolverKind::Sqm,
        SolverKind::Ccp,
        SolverKind::Mdp,
    ] {
        let mut w = stack(kind);
        // Let the stack settle (the contacts' impulses build up over the first steps).
        for _ in 0..120 {
            w.step().unwrap();
        }
        let mut last = identities(&w);
        let mut cache = warm_cache(&w);
        let mut points = body_points(&w);
        // 4 cube corners on the floor, the upper cube's face on the lower one (at least
        // 4 of its 8 edge crossings are within the margin), the cross's bar on the
        // floor (4 corners), the sphere's point.
        assert!(
            last.len() >= 13,
            "{kind:?}: {} contacts at rest",
            last.len()
        );
        let (mut found, mut kept) = (0, 0);
        for step in 0..240 {
            w.step().unwrap();
            let ids = identities(&w);
            assert_unique(&ids, &format!("{kind:?} step {step}"));
            assert_eq!(
                ids, last,
                "{kind:?} step {step}: the contacts changed identity"
            );
            // Floor corners, cross corners and the sphere press at rest at least.
            assert!(
                cache.len() >= 9,
                "{kind:?} step {step}: {} kept",
                cache.len()
            );
            kept += cache.len();
            for c in &w.contacts {
                let id = (c.a, c.b, c.container, c.feature);
                if !cache.iter().any(|(kept, _)| *kept == id) {
                    continue;
                }
                found += 1;
                // The same material point of body a as where the impulse was taken: at
                // rest it has not moved (1 mm is far below the 0.3-1 m features; the
                // stack creeps by microns).
                let then = points.iter().find(|(p, _)| *p == id).unwrap().1;
                let here = w.bodies[c.a].orientation.inverse() * c.r_a;
                assert!(
                    (then - here).norm() < 1e-3,
                    "{kind:?} step {step}: id {:?} of pair ({}, {:?}) matched a point \
                     {} m away",
                    c.feature,
                    c.a,
                    c.b,
                    (then - here).norm()
                );
            }
            last = ids;
            cache = warm_cache(&w);
            points = body_points(&w);
        }
        assert_eq!(
            found, kept,
            "{kind:?}: the warm start found {found} of the {kept} kept impulses by id"
        );
    }
}

/// In a pour of every shape kind, no two contacts of a step share an identity: an
/// ellipsoid against a cross touches up to three of its bars, one contact per bar, each
/// its own identity (a repeated one would warm-start both contacts from one impulse).
#[test]
fn every_contact_of_a_pour_has_its_own_identity() {
    let text = include_str!("fixtures/mixed_pour.ron");
    let scene = impulse_lab::scene::parse_scene(text, "mixed_pour.ron").unwrap();
    let mut w = scene.build_world().unwrap();
    let ellipsoid_cross = |w: &World, a: usize, b: usize| {
        let kinds = [a, b].map(|k| w.bodies[k].shape.kind_name());
        kinds.contains(&"ellipsoid") && kinds.contains(&"cross")
    };
    let mut several = 0;
    for step in 0..600 {
        w.step().unwrap();
        let ids = identities(&w);
        assert_unique(&ids, &format!("step {step}"));
        // Steps where an ellipsoid touches a cross at more than one bar.
        several += usize::from(ids.windows(2).any(|p| {
            let ((a, b, _, _), (a2, b2, _, _)) = (p[0], p[1]);
            (a, b) == (a2, b2) && b.is_some_and(|b| ellipsoid_cross(&w, a, b))
        }));
    }
    assert!(several > 0, "no ellipsoid touched a cross at two bars");
}

/// A pair of still bodies (pose and travel bit-identical to the last detection, as when
/// both sleep) gets last step's contacts copied, and a still body its container
/// contacts; they are the contacts a fresh
/// detection finds, bit for bit, so a saved and reloaded world (which keeps none)
/// continues the same.
#[test]
fn contacts_kept_for_still_pairs_are_those_a_fresh_detection_finds() {
    let mut w = stack(SolverKind::Jolt);
    w.sleep.enabled = true;
    let mut asleep = 0;
    for _ in 0..6000 {
        w.step().unwrap();
        asleep = w.sleeping_bodies();
        if asleep == w.bodies.len() {
            break;
        }
    }
    assert_eq!(asleep, w.bodies.len(), "the stack falls asleep within 10 s");
    let detect = |p: &mut CollisionPipeline, w: &World| {
        let mut out = Vec::new();
        p.broad_phase(&w.bodies, w.contact_margin, w.dt);
        p.narrow_phase(&w.bodies, &w.containers, w.contact_margin, None, &mut out);
        out
    };
    // A body is still from its second detection at the same pose on, and its pairs'
    // contacts are kept from then: the third detection copies them.
    let mut kept = CollisionPipeline::default();
    detect(&mut kept, &w);
    w.step().unwrap();
    detect(&mut kept, &w);
    assert_eq!(kept.reused_pairs, 0, "nothing kept yet");
    w.step().unwrap();
    let again = detect(&mut kept, &w);
    // The one body–body pair (cube on cube) is still: its contacts were copied, and
    // so were the four bodies' contacts with the floor.
    assert_eq!(kept.reused_pairs, 1, "the still pair reused its contacts");
    assert_eq!(
        kept.reused_bodies, 4,
        "the still bodies reused their floor contacts"
    );
    let fresh = detect(&mut CollisionPipeline::default(), &w);
    assert!(!fresh.is_empty());
    assert_eq!(
        again, fresh,
        "copied contacts differ from a fresh detection"
    );
}
