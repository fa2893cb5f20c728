//! The `resume` section of a scene: what a saved run carries besides its bodies, so that
//! the loaded world continues bit for bit as the saved one ([`super::save`]).
//!
//! It holds the step count and time, the island-sleeping settings and state (which
//! bodies sleep, each body's still timer, a pending wake), the world's contact margin
//! and impact timing, the kept contact manifolds (`collision::manifold_cache`), the
//! contact pass's warm-start impulses and last projection, the
//! method's warm-start impulses (CCP, MDP: [`CollisionSolver::keeps_impulses`]) and the
//! energy ledger's running totals. Every number is an `f64` written in RON's shortest
//! round-trip form, so it loads back with the same bits.
//!
//! A warm-start impulse is one contact's accumulated impulse at the end of the saved
//! step (`dynamics::warm_start`): its pair (body `a` and body `b` or a `container`), the
//! `feature` ids of the two sides that touch (`collision::FeatureId`, unique within
//! the pair: the contact's identity), its normal impulse on a (N s, ≥ 0) and its
//! tangential impulse on a (N s, world frame). The contact pass's and the method's are
//! listed apart (`contact_impulses`, `solver.impulses`); a contact in both lists is one
//! contact with both impulses. A `point` (the contact point in a's body frame, m) that
//! files may carry is checked and not read: the identity alone finds a contact.
//!
//! [`CollisionSolver::keeps_impulses`]: crate::dynamics::solver::CollisionSolver::keeps_impulses

use super::expand::{Errors, PlacedBody};
use super::locate::FieldPath;
use super::spec::{V3, Vector, bare_option, solver_name};
use super::{Scene, SceneError};
use crate::collision::manifold_cache::CachedPoint;
use crate::collision::{FeatureId, ManifoldCache};
use crate::dynamics::solver::SolverKind;
use crate::dynamics::warm_start::{ContactImpulses, ImpulseMemory, PointImpulse, Remembered};
use crate::energy::EnergyLedger;
use crate::math::{Iso3, Quat};
use crate::world::{CarriedState, SleepParams, World};
use nalgebra::Quaternion;
use serde::{Deserialize, Serialize};

fn is_false(b: &bool) -> bool {
    !*b
}

fn default_margin() -> f64 {
    0.005
}

fn yes() -> bool {
    true
}

/// The state a saved run carries besides its bodies (module doc).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Resume", deny_unknown_fields)]
pub struct ResumeSpec {
    /// Steps taken before the save.
    pub step: u64,
    /// Simulated time at the save (s).
    pub time: f64,
    /// Island sleeping settings. Default: the world's (enabled, 0.01 m/s, 0.5 s).
    #[serde(default)]
    pub sleep: SleepSpec,
    /// Contact generation distance (m). Default: 0.005.
    #[serde(default = "default_margin")]
    pub contact_margin: f64,
    /// Whether impacts of speculative contacts are timed (`dynamics::impact`).
    /// Default: true.
    #[serde(default = "yes")]
    pub impact_timing: bool,
    /// Indices of the bodies asleep, increasing. Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub asleep: Vec<usize>,
    /// Per body: how long it has been still (s); one per body, or empty for all 0.
    #[serde(default)]
    pub still_time: Vec<f64>,
    /// The containers or gravity changed since the last step: the next step wakes every
    /// body. Default: false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub wake_pending: bool,
    /// The contact pass's warm-start impulses. Default: none.
    #[serde(default)]
    pub contact_impulses: Vec<ImpulseSpec>,
    /// The contact pass's last position projection per body, (Δx (m), Δθ (rad)); one per
    /// body, or empty. Default: empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub projection: Vec<(V3, V3)>,
    /// The kept contact manifolds of the flat-faced pairs
    /// (`collision::manifold_cache`), by pair ascending. Default: none (every pair's
    /// manifold is computed afresh in the first step).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifolds: Vec<ManifoldSpec>,
    /// The method's own warm-start impulses (CCP and MDP keep them). Default: none.
    #[serde(default, with = "bare_option", skip_serializing_if = "Option::is_none")]
    pub solver: Option<SolverWarmSpec>,
    /// The energy ledger's running totals. Default: none (the ledger starts anew at the
    /// loaded state).
    #[serde(default, with = "bare_option", skip_serializing_if = "Option::is_none")]
    pub ledger: Option<EnergyLedger>,
}

/// Island sleeping settings (`world::SleepParams`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Sleep", deny_unknown_fields)]
pub struct SleepSpec {
    pub enabled: bool,
    /// m/s.
    pub velocity: f64,
    /// s.
    pub time: f64,
}

impl Default for SleepSpec {
    fn default() -> Self {
        SleepSpec::from(&SleepParams::default())
    }
}

impl From<&SleepParams> for SleepSpec {
    fn from(p: &SleepParams) -> Self {
        SleepSpec {
            enabled: p.enabled,
            velocity: p.velocity,
            time: p.time,
        }
    }
}

/// One contact's warm-start impulse (module doc).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Impulse", deny_unknown_fields)]
pub struct ImpulseSpec {
    pub a: usize,
    /// The other body (or `container`).
    #[serde(default, with = "bare_option", skip_serializing_if = "Option::is_none")]
    pub b: Option<usize>,
    #[serde(default, with = "bare_option", skip_serializing_if = "Option::is_none")]
    pub container: Option<usize>,
    /// The features of a and of b (or the container) that touch: with the pair, the
    /// contact's identity (unique within the pair).
    pub feature: (u64, u64),
    /// The contact point in a's body frame (m): optional, checked and not read (the
    /// identity finds the contact).
    #[serde(default, with = "bare_option", skip_serializing_if = "Option::is_none")]
    pub point: Option<V3>,
    /// Normal impulse on a (N s, ≥ 0).
    pub normal: f64,
    /// Tangential impulse on a (N s, world frame).
    pub tangent: V3,
}

/// One pair's kept contact manifold (`collision::manifold_cache`), in the bodies'
/// frames.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Manifold", deny_unknown_fields)]
pub struct ManifoldSpec {
    /// The pair's bodies, a < b.
    pub a: usize,
    pub b: usize,
    /// b's position (m) and orientation (unit quaternion w, x, y, z) in a's body frame
    /// when the manifold was computed.
    pub position: V3,
    pub orientation: Vector<4>,
    /// The prediction distance it was computed with (m).
    pub prediction: f64,
    #[serde(default)]
    pub points: Vec<ManifoldPointSpec>,
}

/// One point of a kept manifold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Point", deny_unknown_fields)]
pub struct ManifoldPointSpec {
    /// The features of a and of b that touch (unique within the pair).
    pub feature: (u64, u64),
    /// The point on a's surface in a's body frame (m).
    pub on_a: V3,
    /// The point on b's surface in b's body frame (m).
    pub on_b: V3,
    /// The unit normal from b to a, in a's body frame.
    pub normal: V3,
}

fn manifold_specs(cache: &ManifoldCache) -> Vec<ManifoldSpec> {
    cache
        .manifolds()
        .iter()
        .map(|m| {
            let q = m.pose.rotation.quaternion();
            ManifoldSpec {
                a: m.a,
                b: m.b,
                position: m.pose.translation.vector.into(),
                orientation: Vector([q.w, q.i, q.j, q.k]),
                prediction: m.prediction,
                points: cache
                    .points_of(m)
                    .iter()
                    .map(|p| ManifoldPointSpec {
                        feature: (p.feature.a, p.feature.b),
                        on_a: p.local_a.into(),
                        on_b: p.local_b.into(),
                        normal: p.normal.into(),
                    })
                    .collect(),
            }
        })
        .collect()
}

fn manifold_cache_of(specs: &[ManifoldSpec]) -> ManifoldCache {
    let mut cache = ManifoldCache::default();
    let mut points = Vec::new();
    for m in specs {
        let [w, x, y, z] = m.orientation.0;
        let q = Quaternion::new(w, x, y, z);
        // Unit to rounding as saved: kept as written, so that it loads bit for bit.
        let rotation = if (q.norm_squared() - 1.0).abs() <= 4.0 * f64::EPSILON {
            Quat::new_unchecked(q)
        } else {
            Quat::from_quaternion(q)
        };
        let pose = Iso3::from_parts(m.position.vec3().into(), rotation);
        points.clear();
        points.extend(m.points.iter().map(|p| CachedPoint {
            feature: FeatureId {
                a: p.feature.0,
                b: p.feature.1,
            },
            local_a: p.on_a.vec3(),
            local_b: p.on_b.vec3(),
            normal: p.normal.vec3(),
        }));
        cache.push(m.a, m.b, pose, m.prediction, &points);
    }
    cache
}

/// The problems of the kept manifolds at `path`.
fn check_manifolds(errs: &mut Errors, path: &FieldPath, specs: &[ManifoldSpec], bodies: usize) {
    for (k, m) in specs.iter().enumerate() {
        let p = path.index(k);
        if !(m.a < m.b && m.b < bodies) {
            errs.push(
                &p,
                format!(
                    "needs two bodies a < b of the scene ({bodies} bodies), got a = {}, b = {}",
                    m.a, m.b
                ),
            );
        }
        if k > 0 && (specs[k - 1].a, specs[k - 1].b) >= (m.a, m.b) {
            errs.push(&p, "the pairs (a, b) must increase".into());
        }
        finite3(errs, &p.field("position"), &m.position);
        let norm = m.orientation.0.iter().map(|x| x * x).sum::<f64>().sqrt();
        if !(m.orientation.is_finite() && (norm - 1.0).abs() <= 1e-3) {
            errs.push(
                &p.field("orientation"),
                format!("must be a unit quaternion (±1e-3), got {}", m.orientation),
            );
        }
        finite_at_least(errs, &p.field("prediction"), m.prediction, 0.0, " m");
        for (j, q) in m.points.iter().enumerate() {
            let pp = p.field("points").index(j);
            finite3(errs, &pp.field("on_a"), &q.on_a);
            finite3(errs, &pp.field("on_b"), &q.on_b);
            let n = q.normal.vec3().norm();
            if !(q.normal.is_finite() && (n - 1.0).abs() <= 1e-6) {
                errs.push(
                    &pp.field("normal"),
                    format!("must be a unit vector (±1e-6), got {}", q.normal),
                );
            }
            if m.points[..j].iter().any(|o| o.feature == q.feature) {
                errs.push(
                    &pp.field("feature"),
                    format!(
                        "{:?} is already a feature of this manifold (unique within a pair)",
                        q.feature
                    ),
                );
            }
        }
    }
}

/// The method's own warm-start impulses, with the method that made them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename = "SolverWarmStart", deny_unknown_fields)]
pub struct SolverWarmSpec {
    #[serde(with = "solver_name")]
    pub method: SolverKind,
    #[serde(default)]
    pub impulses: Vec<ImpulseSpec>,
}

/// One stage's impulses (`stage` picks it) of the remembered contacts, sorted by pair
/// and feature.
fn impulses_of(
    memory: &ImpulseMemory,
    stage: impl Fn(&ContactImpulses) -> Option<PointImpulse>,
) -> Vec<ImpulseSpec> {
    memory
        .entries()
        .iter()
        .filter_map(|e| {
            let i = stage(&e.impulses)?;
            Some(ImpulseSpec {
                a: e.key.0,
                b: e.key.1,
                container: e.key.2,
                feature: (e.feature.a, e.feature.b),
                point: None,
                normal: i.normal,
                tangent: i.tangent.into(),
            })
        })
        .collect()
}

/// The memory of the contact pass's impulses `pass` and the method's `method` (a
/// contact listed in both is one contact with both).
fn memory_of(pass: &[ImpulseSpec], method: &[ImpulseSpec]) -> ImpulseMemory {
    let entry = |i: &ImpulseSpec, method: bool| {
        let impulse = Some(PointImpulse {
            normal: i.normal,
            tangent: i.tangent.vec3(),
        });
        Remembered {
            key: (i.a, i.b, i.container),
            feature: FeatureId {
                a: i.feature.0,
                b: i.feature.1,
            },
            impulses: if method {
                ContactImpulses {
                    method: impulse,
                    pass: None,
                }
            } else {
                ContactImpulses {
                    method: None,
                    pass: impulse,
                }
            },
        }
    };
    ImpulseMemory::from_entries(
        pass.iter()
            .map(|i| entry(i, false))
            .chain(method.iter().map(|i| entry(i, true))),
    )
}

impl ResumeSpec {
    /// The section for `world`'s current state.
    pub fn of_world(world: &World) -> ResumeSpec {
        let carried = world.carried_state();
        let l = &world.ledger;
        ResumeSpec {
            step: world.step_index,
            time: world.time,
            sleep: SleepSpec::from(&world.sleep),
            contact_margin: world.contact_margin,
            impact_timing: world.impact_timing,
            asleep: (0..carried.sleeping.len())
                .filter(|&i| carried.sleeping[i])
                .collect(),
            still_time: if carried.still_time.iter().all(|&t| t == 0.0) {
                Vec::new()
            } else {
                carried.still_time
            },
            wake_pending: carried.wake_pending,
            contact_impulses: impulses_of(&carried.impulses, |i| i.pass),
            manifolds: manifold_specs(&carried.manifolds),
            projection: carried
                .projection
                .iter()
                .map(|(dx, dth)| ((*dx).into(), (*dth).into()))
                .collect(),
            solver: world.solver().keeps_impulses().then(|| SolverWarmSpec {
                method: world.solver_kind(),
                impulses: impulses_of(&carried.impulses, |i| i.method),
            }),
            ledger: Some(l.clone()),
        }
    }

    /// Put the section into `world`, built from the same scene (checked by
    /// [`Scene::check_resume`]). The method's impulses go to the world's method only if
    /// it is the one that made them: a run with another method (`--solver`) starts that
    /// method cold, as switching methods in the app does.
    pub(super) fn apply(&self, world: &mut World) {
        let n = world.bodies.len();
        world.step_index = self.step;
        world.time = self.time;
        world.sleep = SleepParams {
            enabled: self.sleep.enabled,
            velocity: self.sleep.velocity,
            time: self.sleep.time,
        };
        world.contact_margin = self.contact_margin;
        world.impact_timing = self.impact_timing;
        let mut sleeping = vec![false; n];
        for &i in &self.asleep {
            sleeping[i] = true;
        }
        let still_time = if self.still_time.is_empty() {
            vec![0.0; n]
        } else {
            self.still_time.clone()
        };
        let method_impulses = self
            .solver
            .as_ref()
            .filter(|s| s.method == world.solver_kind())
            .map_or(&[][..], |s| &s.impulses[..]);
        world.set_carried_state(CarriedState {
            sleeping,
            still_time,
            wake_pending: self.wake_pending,
            impulses: memory_of(&self.contact_impulses, method_impulses),
            projection: self
                .projection
                .iter()
                .map(|(dx, dth)| (dx.vec3(), dth.vec3()))
                .collect(),
            manifolds: manifold_cache_of(&self.manifolds),
        });
        if let Some(l) = &self.ledger {
            world.resume_ledger(l.clone());
        }
    }
}

fn finite_at_least(errs: &mut Errors, path: &FieldPath, x: f64, min: f64, unit: &str) {
    if !(x.is_finite() && x >= min) {
        errs.push(path, format!("must be finite and ≥ {min}{unit}, got {x}"));
    }
}

fn finite3(errs: &mut Errors, path: &FieldPath, v: &V3) {
    if !v.is_finite() {
        errs.push(path, format!("must be finite, got {v}"));
    }
}

/// The problems of a list of impulses at `path`.
fn check_impulses(
    errs: &mut Errors,
    path: &FieldPath,
    impulses: &[ImpulseSpec],
    bodies: usize,
    containers: usize,
) {
    for (k, i) in impulses.iter().enumerate() {
        let p = path.index(k);
        if i.a >= bodies {
            errs.push(
                &p.field("a"),
                format!("body {} does not exist (the scene has {bodies})", i.a),
            );
        }
        match (i.b, i.container) {
            (Some(b), None) if b >= bodies || b == i.a => errs.push(
                &p.field("b"),
                format!(
                    "body {b} is not another body of the scene (a = {}, {bodies} bodies)",
                    i.a
                ),
            ),
            (None, Some(c)) if c >= containers => errs.push(
                &p.field("container"),
                format!("container {c} does not exist (the scene has {containers})"),
            ),
            (Some(_), None) | (None, Some(_)) => {}
            _ => errs.push(&p, "needs exactly one of `b` and `container`".into()),
        }
        if let Some(point) = &i.point {
            finite3(errs, &p.field("point"), point);
        }
        finite_at_least(errs, &p.field("normal"), i.normal, 0.0, " N s");
        finite3(errs, &p.field("tangent"), &i.tangent);
    }
    // A contact's features are unique within its pair (they are its identity).
    let id = |k: usize| {
        let i = &impulses[k];
        (i.a, i.b, i.container, i.feature)
    };
    let mut order: Vec<usize> = (0..impulses.len()).collect();
    order.sort_by_key(|&k| (id(k), k));
    for w in order.windows(2) {
        if id(w[0]) == id(w[1]) {
            errs.push(
                &path.index(w[1]).field("feature"),
                format!(
                    "{:?} is already the feature of impulse {} of the same pair (a \
                     contact's features are unique within its pair)",
                    impulses[w[1]].feature, w[0]
                ),
            );
        }
    }
}

impl Scene {
    /// Check the `resume` section against the scene's `bodies` (expanded) and
    /// containers; with `method`, also that its method impulses were made by the
    /// scene's method (a file that says otherwise is inconsistent; a method chosen
    /// after loading, `--solver`, starts cold instead, [`ResumeSpec::apply`]).
    pub(super) fn check_resume(
        &self,
        bodies: &[PlacedBody],
        method: bool,
    ) -> Result<(), SceneError> {
        let Some(r) = &self.resume else {
            return Ok(());
        };
        let mut errs = Errors::default();
        let path = FieldPath::root().field("resume");
        let (n, nc) = (bodies.len(), self.containers.len());
        if r.step > super::MAX_STEPS {
            errs.push(
                &path.field("step"),
                format!(
                    "must be at most {} (2⁵³: step counts and times t = step × dt stay exact), got {}",
                    super::MAX_STEPS,
                    r.step
                ),
            );
        }
        finite_at_least(&mut errs, &path.field("time"), r.time, 0.0, " s");
        let sp = path.field("sleep");
        finite_at_least(
            &mut errs,
            &sp.field("velocity"),
            r.sleep.velocity,
            0.0,
            " m/s",
        );
        finite_at_least(&mut errs, &sp.field("time"), r.sleep.time, 0.0, " s");
        finite_at_least(
            &mut errs,
            &path.field("contact_margin"),
            r.contact_margin,
            0.0,
            " m",
        );
        for (k, &i) in r.asleep.iter().enumerate() {
            let p = path.field("asleep").index(k);
            if i >= n {
                errs.push(&p, format!("body {i} does not exist (the scene has {n})"));
            } else if bodies[i].is_static {
                errs.push(&p, format!("body {i} is static: only moving bodies sleep"));
            } else if k > 0 && i <= r.asleep[k - 1] {
                errs.push(&p, "the indices must increase".into());
            }
        }
        if !(r.still_time.is_empty() || r.still_time.len() == n) {
            errs.push(
                &path.field("still_time"),
                format!(
                    "needs one time per body ({n}) or none, got {}",
                    r.still_time.len()
                ),
            );
        }
        for (k, &t) in r.still_time.iter().enumerate() {
            finite_at_least(&mut errs, &path.field("still_time").index(k), t, 0.0, " s");
        }
        check_impulses(
            &mut errs,
            &path.field("contact_impulses"),
            &r.contact_impulses,
            n,
            nc,
        );
        check_manifolds(&mut errs, &path.field("manifolds"), &r.manifolds, n);
        if !(r.projection.is_empty() || r.projection.len() == n) {
            errs.push(
                &path.field("projection"),
                format!(
                    "needs one displacement per body ({n}) or none, got {}",
                    r.projection.len()
                ),
            );
        }
        for (k, (dx, dth)) in r.projection.iter().enumerate() {
            if !(dx.is_finite() && dth.is_finite()) {
                errs.push(
                    &path.field("projection").index(k),
                    format!("must be finite, got ({dx}, {dth})"),
                );
            }
        }
        if let Some(s) = &r.solver {
            let p = path.field("solver");
            if method && s.method != self.solver {
                errs.push(
                    &p.field("method"),
                    format!(
                        "the impulses were saved with {}, but the scene's solver is {}",
                        s.method, self.solver
                    ),
                );
            } else if !s.method.create().keeps_impulses() {
                errs.push(
                    &p.field("method"),
                    format!("{} keeps no warm-start impulses of its own", s.method),
                );
            }
            check_impulses(&mut errs, &p.field("impulses"), &s.impulses, n, nc);
        }
        if let Some(l) = &r.ledger {
            let p = path.field("ledger");
            for (field, x) in [
                ("initial_total", l.initial_total),
                ("dissipated_restitution", l.dissipated_restitution),
                ("dissipated_friction", l.dissipated_friction),
                ("external_work", l.external_work),
                ("integration", l.integration),
                ("projection", l.projection),
            ] {
                if !x.is_finite() {
                    errs.push(&p.field(field), format!("must be finite, got {x} J"));
                }
            }
        }
        errs.into_check(self)
    }
}
