//! Test helpers shared by several acceptance-test files (each test file includes this
//! module with `mod common;` and uses part of it).
#![allow(dead_code)]

use impulse_lab::body::total_angular_momentum;
use impulse_lab::collision::Contact;
use impulse_lab::dynamics::graph::ContactGraph;
use impulse_lab::dynamics::solver::{CollisionSolver, SolverContext, SolverError};
use impulse_lab::dynamics::warm_start::ContactImpulses;
use impulse_lab::math::{Quat, Vec3};
use impulse_lab::{RigidBody, Shape, SolverKind, SolverParams, World};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Random shapes for the collision set: cube, sphere or regular tetrahedron.
fn random_shape(rng: &mut ChaCha8Rng) -> Shape {
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

fn random_unit(rng: &mut ChaCha8Rng) -> Vec3 {
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
fn place_touching(w: &mut World, anchor: usize, k: usize, d: &Vec3) -> bool {
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

/// One case of the random multi-contact collision set (see [`random_collision`]).
pub struct RandomCollision {
    /// The bodies with their pre-collision velocities (no gravity, no containers).
    pub world: World,
    /// The contacts at the bodies' positions (`World::detect`).
    pub contacts: Vec<Contact>,
    pub params: SolverParams,
    /// The drawn coefficient of restitution e ∈ [0, 1] and friction μ ∈ {0} ∪ [0, 1).
    pub e: f64,
    pub mu: f64,
}

/// The random multi-contact collision set the impulse solvers are tested on: 2 or 3
/// bodies among cubes, spheres and tetrahedra, placed in contact (aligned poses half the
/// time, so faces meet and give 3-4 point manifolds), sometimes against a static body,
/// with random approaching velocities and spins, e ∈ [0, 1] and μ ∈ {0} ∪ [0, 1), k_p = 0.
/// `None` when the draw could not be placed in contact or nothing approaches (the caller
/// counts it as skipped and draws again). The world's time step is `dt`.
pub fn random_collision(rng: &mut ChaCha8Rng, dt: f64) -> Option<RandomCollision> {
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
    let mut w = World::new(Vec3::zeros(), dt, SolverKind::Sqm, params.clone()).unwrap();
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
        contacts,
        params,
        e,
        mu,
    })
}

/// The isolated cluster of the momentum tests: five bodies (spheres, boxes, a
/// tetrahedron) of different masses on a ring about the origin, overlapping their
/// neighbours' bounding balls, thrown inwards with random spins (seeded, no gravity, no
/// walls): they collide with each other only.
pub fn add_isolated_cluster(w: &mut World) {
    let shapes = [
        Shape::Sphere { radius: 0.5 },
        Shape::Cuboid {
            half_extents: Vec3::new(0.5, 0.4, 0.3),
        },
        Shape::regular_tetrahedron(1.2),
        Shape::Cuboid {
            half_extents: Vec3::repeat(0.45),
        },
        Shape::Sphere { radius: 0.35 },
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for (k, s) in shapes.iter().enumerate() {
        let angle = k as f64 * std::f64::consts::TAU / shapes.len() as f64;
        let pos = 0.95 * Vec3::new(angle.cos(), angle.sin(), 0.2 * (k as f64 - 2.0));
        let q = Quat::from_euler_angles(
            rng.random_range(0.0..3.0),
            rng.random_range(0.0..3.0),
            rng.random_range(0.0..3.0),
        );
        let i = w.add_body(RigidBody::new(s, 1000.0 + 300.0 * k as f64, pos, q));
        w.bodies[i].velocity = -2.0 * pos
            + Vec3::new(
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
                0.0,
            );
        w.bodies[i].angular_velocity = Vec3::new(
            rng.random_range(-2.0..2.0),
            rng.random_range(-2.0..2.0),
            rng.random_range(-2.0..2.0),
        );
    }
}

/// One resolve of the world's current contacts at fixed positions, on a copy of the
/// bodies: the relative change of the angular momentum about the origin it causes,
/// ‖ΔL‖ / Σᵢ (|xᵢ| mᵢ |vᵢ| + |I_i ωᵢ|) (an impulse law must keep it to round-off).
pub fn resolve_angular_momentum_change(
    w: &mut World,
    solver: &mut dyn CollisionSolver,
    params: &SolverParams,
) -> Result<f64, SolverError> {
    let contacts = w.detect().to_vec();
    let l0 = total_angular_momentum(&w.bodies);
    let l_scale: f64 = w
        .bodies
        .iter()
        .map(|b| {
            b.position.norm() * b.mass * b.velocity.norm()
                + (b.inertia_world() * b.angular_velocity).norm()
        })
        .sum();
    let mut bodies = w.bodies.clone();
    let graph = ContactGraph::of(&bodies, &contacts);
    solver.resolve(SolverContext {
        bodies: &mut bodies,
        contacts: &contacts,
        graph: &graph,
        impulses: &mut vec![ContactImpulses::default(); contacts.len()],
        params,
        dt: w.dt,
        trace: None,
    })?;
    Ok((total_angular_momentum(&bodies) - l0).norm() / l_scale)
}

/// Every body's full state equal, exactly (bit patterns, so −0.0 ≠ 0.0 and NaN = NaN):
/// position, orientation, velocity, angular velocity.
pub fn assert_same_state(a: &[RigidBody], b: &[RigidBody], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: body count");
    let bits = |v: &Vec3| v.map(f64::to_bits);
    for (j, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(
            bits(&x.position),
            bits(&y.position),
            "{what}: body {j} position"
        );
        assert_eq!(
            x.orientation.coords.map(f64::to_bits),
            y.orientation.coords.map(f64::to_bits),
            "{what}: body {j} orientation"
        );
        assert_eq!(
            bits(&x.velocity),
            bits(&y.velocity),
            "{what}: body {j} velocity"
        );
        assert_eq!(
            bits(&x.angular_velocity),
            bits(&y.angular_velocity),
            "{what}: body {j} angular velocity"
        );
    }
}

/// A body's state in the order `impulse-lab run --final-state` writes it: position,
/// orientation (w, x, y, z), velocity, angular velocity.
pub fn body_state(b: &RigidBody) -> [f64; 13] {
    let q = b.orientation.quaternion();
    let (x, v, w) = (b.position, b.velocity, b.angular_velocity);
    [
        x.x, x.y, x.z, q.w, q.i, q.j, q.k, v.x, v.y, v.z, w.x, w.y, w.z,
    ]
}

/// The same thirteen numbers of one body of a `--final-state` JSON file (serde_json
/// writes the shortest text that reads back to the same f64, so they are exact).
pub fn json_body_state(j: &serde_json::Value) -> [f64; 13] {
    let f = |key: &str, k: usize| j[key][k].as_f64().unwrap();
    [
        f("position", 0),
        f("position", 1),
        f("position", 2),
        f("orientation", 0),
        f("orientation", 1),
        f("orientation", 2),
        f("orientation", 3),
        f("velocity", 0),
        f("velocity", 1),
        f("velocity", 2),
        f("angular_velocity", 0),
        f("angular_velocity", 1),
        f("angular_velocity", 2),
    ]
}

/// Run `impulse-lab ARGS --final-state FILE` in the crate's directory (so bundled scene
/// names resolve), with FILE in `dir`; panic with its stderr if it fails; the parsed JSON.
pub fn cli_final_state(args: &[&str], dir: &std::path::Path) -> serde_json::Value {
    let state = dir.join("final-state.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_impulse-lab"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .arg("--final-state")
        .arg(&state)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "impulse-lab {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap()
}

/// Helpers of the app's headless tests.
#[cfg(feature = "app")]
pub mod app {
    use bevy::prelude::*;
    use impulse_lab::app::messages::SimCommand;
    use impulse_lab::app::simulation::{SimControl, Simulation};
    use std::path::Path;

    /// A bundled scene (`scenes/NAME.ron`) loaded as the app loads it.
    pub fn sim(name: &str) -> Simulation {
        Simulation::load(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scenes")
                .join(format!("{name}.ron"))
                .to_str()
                .unwrap(),
            None,
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// Take `n` steps through the plugin's step requests, a frame at a time (the clock
    /// may spread them over several frames).
    pub fn step_app(app: &mut App, n: u64) {
        app.world_mut().write_message(SimCommand::Step(n));
        app.update();
        for _ in 0..100_000 {
            if app.world().resource::<SimControl>().pending_steps() == 0 {
                return;
            }
            app.update();
        }
        panic!("steps never completed");
    }

    /// Send `command` to the physics thread and run one frame (which carries it out).
    pub fn command(app: &mut App, command: SimCommand) {
        app.world_mut().write_message(command);
        app.update();
    }
}

/// The xvfb-run binary for the tests that run the app's real window, or `None` (and a
/// note on stderr) when the machine has none: off CI such a machine skips them; on CI
/// (`CI` set) it is a failure, since `.ci/run` installs Xvfb.
pub fn xvfb_run() -> Option<std::path::PathBuf> {
    let found = ["/usr/bin/xvfb-run", "/usr/local/bin/xvfb-run"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install xvfb (see .ci/run)"
        );
        eprintln!("SKIPPED: xvfb-run not found; install xvfb and mesa-vulkan-drivers");
    }
    found
}

/// Run `impulse-lab gui ARGS` under Xvfb in a window of `size` (logical pixels) with
/// extra environment `env`, writing its log to `out_dir/app.log`; returns its exit status
/// and everything it wrote (stdout and stderr). Fails if it runs over 20 minutes.
pub fn run_gui_in_xvfb(
    xvfb: &std::path::Path,
    out_dir: &std::path::Path,
    (w, h): (u32, u32),
    args: &[&str],
    env: &[(&str, &std::path::Path)],
) -> (std::process::ExitStatus, String) {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    std::fs::create_dir_all(out_dir).unwrap();
    let log_path = out_dir.join("app.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut cmd = Command::new(xvfb);
    cmd.args(["-a", "-s", &format!("-screen 0 {w}x{h}x24")])
        .arg(env!("CARGO_BIN_EXE_impulse-lab"))
        .args(["gui", "--size", &format!("{w}x{h}")])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("WGPU_BACKEND", "vulkan")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(1200) {
            let _ = child.kill();
            panic!("the app did not exit within 1200 s");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    (
        status,
        std::fs::read_to_string(&log_path).unwrap_or_default(),
    )
}

/// 64-bit FNV-1a (Fowler, Noll and Vo), fed 64-bit words little-endian.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn word(&mut self, x: u64) {
        for byte in x.to_le_bytes() {
            self.0 ^= u64::from(byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn f(&mut self, xs: &[f64]) {
        xs.iter().for_each(|x| self.word(x.to_bits()));
    }
}

/// The pinned-state hash of `tests/determinism.rs`'s module doc: 64-bit FNV-1a over
/// every body's state, the ledger's cumulative columns and the last step's contacts.
pub fn state_hash(w: &World) -> u64 {
    let mut h = Fnv::new();
    for b in &w.bodies {
        h.f(b.position.as_slice());
        h.f(b.orientation.coords.as_slice());
        h.f(b.velocity.as_slice());
        h.f(b.angular_velocity.as_slice());
    }
    let l = &w.ledger;
    h.f(&[
        l.dissipated_restitution,
        l.dissipated_friction,
        l.external_work,
        l.integration,
        l.projection,
    ]);
    h.word(w.contacts.len() as u64);
    for c in &w.contacts {
        h.word(c.a as u64);
        h.word(c.b.map_or(u64::MAX, |b| b as u64));
        h.word(c.container.map_or(u64::MAX, |k| k as u64));
        h.word(c.feature.a);
        h.word(c.feature.b);
        h.f(c.point.as_slice());
        h.f(c.normal.as_slice());
        h.f(&[c.gap]);
    }
    h.0
}
