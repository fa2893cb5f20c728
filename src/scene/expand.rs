//! Field checks and generator expansion of a [`Scene`] (the overlap check is in
//! [`super::overlap`]).

use super::locate::FieldPath;
use super::spec::{GeneratorSpec, ShapeSpec, V3};
use super::{Scene, SceneError};
use crate::dynamics::rotation::RotationIntegrator;
use crate::math::{Quat, Vec3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::f64::consts::TAU;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Most bodies a scene may hold (explicit plus generated) unless [`set_body_limit`]
/// says otherwise (the CLI's `--max-bodies`).
pub const MAX_BODIES: usize = 1_000_000;

static BODY_LIMIT: AtomicUsize = AtomicUsize::new(MAX_BODIES);

/// How to raise the limit, appended to its messages.
const LIMIT_HINT: &str = "(see --max-bodies)";

/// The most bodies a scene may hold in this process (default [`MAX_BODIES`]).
pub fn body_limit() -> usize {
    BODY_LIMIT.load(Ordering::Relaxed)
}

/// Set the most bodies a scene may hold, for every scene loaded afterwards in this
/// process (a scene above the memory the machine has is refused whatever the limit).
pub fn set_body_limit(n: usize) {
    BODY_LIMIT.store(n, Ordering::Relaxed);
}

/// Rough memory needed per body while a scene is checked and built: the expanded body,
/// the rigid body, and the world's per-body arrays and broad-phase entries (counted as
/// twice the rigid body). An estimate for refusing hopeless scenes up front, not a
/// bound.
fn bytes_per_body() -> usize {
    std::mem::size_of::<PlacedBody>() + 3 * std::mem::size_of::<crate::RigidBody>()
}

/// Refuse `bodies` if their estimated memory exceeds what the machine has available
/// (Linux `MemAvailable`; unchecked elsewhere, and below 10⁵ bodies).
fn check_memory(bodies: usize) -> Result<(), String> {
    if bodies < 100_000 {
        return Ok(());
    }
    let need = bodies as f64 * bytes_per_body() as f64;
    let Some(available) = available_memory() else {
        return Ok(());
    };
    if need > available as f64 {
        return Err(format!(
            "{bodies} bodies need about {:.1} GB, more than the {:.1} GB of memory available",
            need / 1e9,
            available as f64 / 1e9
        ));
    }
    Ok(())
}

/// `MemAvailable` of /proc/meminfo in bytes.
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Relative slack of the overlap tests, so that bodies placed exactly in contact (up to
/// rounding of the numbers in the file) are not reported.
pub(super) const CONTACT_SLACK: f64 = 1e-9;

/// Where a body of the expanded list comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyOrigin {
    /// `bodies[i]` of the scene.
    Body(usize),
    /// Body number `index` of `generators[generator]`.
    Generated { generator: usize, index: usize },
}

/// A body ready to be built: generator output and explicit bodies alike.
#[derive(Clone, Debug, PartialEq)]
pub struct PlacedBody {
    pub shape: ShapeSpec,
    /// Density (kg/m³).
    pub density: f64,
    /// World position of the shape-frame origin (m); [`crate::RigidBody::new`] moves the
    /// body to its centre of mass.
    pub position: Vec3,
    /// Shape frame → world.
    pub orientation: Quat,
    /// m/s.
    pub velocity: Vec3,
    /// rad/s, world frame.
    pub angular_velocity: Vec3,
    pub is_static: bool,
    pub origin: BodyOrigin,
    /// [`ShapeSpec::inscribed_radius`] (m).
    pub inscribed_radius: f64,
    /// [`ShapeSpec::bounding_radius`] (m).
    pub bounding_radius: f64,
}

impl PlacedBody {
    /// Path of the field this body's shape was given in.
    pub fn shape_path(&self) -> FieldPath {
        match self.origin {
            BodyOrigin::Body(i) => FieldPath::root().field("bodies").index(i).field("shape"),
            BodyOrigin::Generated { generator, .. } => {
                FieldPath::root().field("generators").index(generator)
            }
        }
    }

    /// Human-readable name: `bodies[3]` or `generators[0] body #17`.
    pub fn describe(&self) -> String {
        match self.origin {
            BodyOrigin::Body(i) => format!("bodies[{i}]"),
            BodyOrigin::Generated { generator, index } => {
                format!("generators[{generator}] body #{index}")
            }
        }
    }
}

type Check = Result<(), SceneError>;

/// A problem found by a check: the field and what is wrong with it.
type Bad = (FieldPath, String);
type Found = Result<(), Bad>;

/// The problems found while checking a scene, in check order: the fields in the order
/// of the format (`scenes/README.md`), list items in order, then overlaps, then bodies
/// at odds with containers. Holds the first [`super::MAX_REPORTED`] and counts the
/// rest, so its memory is bounded whatever the number of problems.
#[derive(Default)]
pub(super) struct Errors {
    listed: Vec<Bad>,
    total: usize,
}

impl Errors {
    pub(super) fn push(&mut self, path: &FieldPath, message: String) {
        self.total += 1;
        if self.has_room() {
            self.listed.push((path.clone(), message));
        }
    }

    /// Whether a further problem would be listed (not only counted): callers skip
    /// formatting a message that would not be shown.
    pub(super) fn has_room(&self) -> bool {
        self.listed.len() < super::MAX_REPORTED
    }

    /// Count a problem that is not listed (see [`Errors::has_room`]).
    pub(super) fn count_one(&mut self) {
        self.total += 1;
    }

    /// Keep the problem of `r`, if any; whether `r` was fine.
    fn add(&mut self, r: Found) -> bool {
        match r {
            Ok(()) => true,
            Err((path, message)) => {
                self.push(&path, message);
                false
            }
        }
    }

    /// The listed problems located in the file (one pass over the text), in check
    /// order, with the count of the others.
    pub(super) fn into_check(self, scene: &Scene) -> Check {
        let total = self.total;
        let errors = scene.invalid_all(self.listed.into_iter());
        match SceneError::collect(errors) {
            None => Ok(()),
            Some(mut e) => {
                let more = e.more().to_vec();
                let omitted = total - 1 - more.len();
                e.set_more(more, omitted);
                Err(e)
            }
        }
    }
}

fn root() -> FieldPath {
    FieldPath::root()
}

impl Scene {
    /// Check every field's value (not overlaps). Every error is reported (up to
    /// [`super::MAX_REPORTED`]), in check order ([`Errors`]).
    pub(super) fn check_fields(&self) -> Check {
        let mut errs = Errors::default();
        self.collect_field_errors(&mut errs);
        errs.into_check(self)
    }

    fn collect_field_errors(&self, errs: &mut Errors) {
        let r = root();
        if self.name.trim().is_empty() {
            errs.push(&r.field("name"), "must not be empty".into());
        }
        if self.description.contains('\n') {
            errs.push(&r.field("description"), "must be a single line".into());
        }
        errs.add(self.finite3(&r.field("gravity"), &self.gravity));
        let dt_ok = self.dt.is_finite() && self.dt > 0.0;
        if !dt_ok {
            errs.push(
                &r.field("dt"),
                format!("time step must be finite and > 0, got {}", self.dt),
            );
        }
        if dt_ok && self.duration.is_finite() && self.duration / self.dt > super::MAX_STEPS as f64 {
            errs.push(
                &r.field("duration"),
                format!(
                    "{} s is {:e} steps of {} s, more than the {} a run may take",
                    super::short_number(self.duration),
                    self.duration / self.dt,
                    self.dt,
                    super::MAX_STEPS
                ),
            );
        } else if !(self.duration.is_finite() && (self.duration >= self.dt || !dt_ok)) {
            errs.push(
                &r.field("duration"),
                format!(
                    "must be finite and at least one time step ({} s), got {}",
                    self.dt, self.duration
                ),
            );
        }
        for (field, msg) in self.params.problems() {
            errs.push(&r.field("params").field(field), msg);
        }
        if let Some(mu) = self.pack_friction
            && !(mu.is_finite() && mu >= 0.0)
        {
            errs.push(
                &r.field("pack_friction"),
                format!("μ must be finite and ≥ 0, got {mu}"),
            );
        }
        if let Some(reference) = &self.reference_angle {
            let a = reference.angle_deg;
            if !(a.is_finite() && (0.0..=90.0).contains(&a)) {
                errs.push(
                    &r.field("reference_angle").field("angle_deg"),
                    format!("the angle must be in [0, 90] degrees, got {a}"),
                );
            }
            if reference.source.trim().is_empty() {
                errs.push(
                    &r.field("reference_angle").field("source"),
                    "must name where the angle comes from".to_string(),
                );
            }
        }
        if let Some(region) = &self.region_of_interest {
            let at = r.field("region_of_interest");
            let min_ok = errs.add(self.finite3(&at.field("min"), &region.min));
            let max_ok = errs.add(self.finite3(&at.field("max"), &region.max));
            if min_ok && max_ok && (0..3).any(|k| region.min.0[k] >= region.max.0[k]) {
                errs.push(
                    &at,
                    format!(
                        "min {} must be below max {} on every axis",
                        region.min, region.max
                    ),
                );
            }
        }
        if let RotationIntegrator::Theta { theta } = self.rotation
            && !(theta.is_finite() && (0.0..=1.0).contains(&theta))
        {
            errs.push(
                &r.field("rotation").field("theta"),
                format!("θ must be in [0, 1], got {theta}"),
            );
        }
        for (i, c) in self.containers.iter().enumerate() {
            errs.add(self.sub(&r.field("containers").index(i), c.check()));
        }
        let limit = body_limit();
        let mut total = self.bodies.len();
        for (i, b) in self.bodies.iter().enumerate() {
            // The path is built only for a body with a problem (10⁶ bodies, 10⁷ paths).
            let fine = b.shape.check().is_ok()
                && b.density.is_finite()
                && b.density > 0.0
                && [
                    b.position,
                    b.velocity,
                    b.angular_velocity,
                    b.force,
                    b.force_offset,
                ]
                .iter()
                .all(V3::is_finite)
                && b.orientation.check().is_ok()
                && !b.is_static;
            if fine {
                errs.add(mass_check(
                    &|| r.field("bodies").index(i),
                    &b.shape,
                    b.density,
                ));
                continue;
            }
            let p = r.field("bodies").index(i);
            let shape_ok = errs.add(self.shape(&p.field("shape"), &b.shape));
            let density_ok = errs.add(self.positive(&p.field("density"), b.density));
            if shape_ok && density_ok {
                errs.add(mass_check(&|| p.clone(), &b.shape, b.density));
            }
            errs.add(self.finite3(&p.field("position"), &b.position));
            errs.add(self.sub(&p.field("orientation"), b.orientation.check()));
            errs.add(self.finite3(&p.field("velocity"), &b.velocity));
            errs.add(self.finite3(&p.field("angular_velocity"), &b.angular_velocity));
            errs.add(self.finite3(&p.field("force"), &b.force));
            errs.add(self.finite3(&p.field("force_offset"), &b.force_offset));
            if b.is_static
                && (b.velocity.vec3() != Vec3::zeros()
                    || b.angular_velocity.vec3() != Vec3::zeros())
            {
                errs.push(
                    &p.field("static"),
                    "a static body cannot have a velocity".into(),
                );
            }
            if b.is_static && b.force.vec3() != Vec3::zeros() {
                errs.push(
                    &p.field("force"),
                    "a static body cannot carry a force".into(),
                );
            }
        }
        if total > limit {
            errs.push(
                &r.field("bodies"),
                format!("{total} bodies, more than the limit of {limit} {LIMIT_HINT}"),
            );
        }
        for (g, generator) in self.generators.iter().enumerate() {
            let p = r.field("generators").index(g);
            let GeneratorSpec::Lattice {
                count,
                shape,
                mix,
                density,
                region,
                spacing,
                orientation,
                velocity,
                velocity_jitter,
                angular_velocity_jitter,
            } = generator;
            let count_ok = *count >= 1 && *count <= limit;
            if !count_ok {
                errs.push(
                    &p.field("count"),
                    format!("must be in 1..={limit}, got {count} {LIMIT_HINT}"),
                );
            }
            let density_ok = density.is_finite() && *density > 0.0;
            match (shape, mix.is_empty()) {
                (Some(s), true) => {
                    if errs.add(self.shape(&p.field("shape"), s)) && density_ok {
                        errs.add(mass_check(&|| p.clone(), s, *density));
                    }
                }
                (None, false) => {
                    for (k, m) in mix.iter().enumerate() {
                        let mp = p.field("mix").index(k);
                        if errs.add(self.shape(&mp.field("shape"), &m.shape)) && density_ok {
                            errs.add(mass_check(&|| mp.clone(), &m.shape, *density));
                        }
                        if !(m.fraction.is_finite() && m.fraction >= 0.0) {
                            errs.push(
                                &mp.field("fraction"),
                                format!("must be finite and ≥ 0, got {}", m.fraction),
                            );
                        }
                    }
                    // Only when every fraction is valid (a bad one is reported above).
                    let valid = mix
                        .iter()
                        .all(|m| m.fraction.is_finite() && m.fraction >= 0.0);
                    if valid && mix.iter().map(|m| m.fraction).sum::<f64>() <= 0.0 {
                        errs.push(&p.field("mix"), "the fractions must not all be 0".into());
                    }
                }
                _ => {
                    errs.push(
                        &p,
                        "give exactly one of `shape` (one shape) or `mix` (several shapes)".into(),
                    );
                }
            }
            errs.add(self.positive(&p.field("density"), *density));
            let min_ok = errs.add(self.finite3(&p.field("region").field("min"), &region.min));
            let max_ok = errs.add(self.finite3(&p.field("region").field("max"), &region.max));
            let mut region_ok = min_ok && max_ok;
            if region_ok && (0..3).any(|k| region.min.0[k] >= region.max.0[k]) {
                region_ok = false;
                errs.push(
                    &p.field("region"),
                    format!(
                        "min {} must be below max {} on every axis",
                        region.min, region.max
                    ),
                );
            }
            let spacing_ok = errs.add(self.positive(&p.field("spacing"), *spacing));
            if count_ok && region_ok && spacing_ok {
                let capacity = lattice_dims(&region.min, &region.max, *spacing)
                    .iter()
                    .product::<f64>();
                if capacity < *count as f64 {
                    errs.push(
                        &p.field("count"),
                        format!("the region holds only {capacity} lattice sites at spacing {spacing}, fewer than {count}"),
                    );
                }
            }
            errs.add(self.sub(&p.field("orientation"), orientation.check()));
            errs.add(self.finite3(&p.field("velocity"), velocity));
            for (name, j) in [
                ("velocity_jitter", velocity_jitter),
                ("angular_velocity_jitter", angular_velocity_jitter),
            ] {
                if !(j.is_finite() && *j >= 0.0) {
                    errs.push(&p.field(name), format!("must be finite and ≥ 0, got {j}"));
                }
            }
            if count_ok {
                let before = total;
                total = total.saturating_add(*count);
                if total > limit && before <= limit {
                    errs.push(
                        &p.field("count"),
                        format!("the scene would hold {total} bodies, more than the limit of {limit} {LIMIT_HINT}"),
                    );
                }
            }
        }
        if total <= limit
            && let Err(why) = check_memory(total)
        {
            errs.push(&r, why);
        }
    }

    /// Expand generators (fields already checked).
    pub(super) fn expand_checked(&self) -> Result<Vec<PlacedBody>, SceneError> {
        let mut out = Vec::new();
        // Stream 0: explicit bodies' random orientations; stream g + 1: generator g. Editing
        // one generator therefore does not change the others' bodies.
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        for (i, b) in self.bodies.iter().enumerate() {
            let orientation = b
                .orientation
                .fixed()
                .unwrap_or_else(|| random_rotation(&mut rng));
            out.push(PlacedBody {
                shape: b.shape.clone(),
                density: b.density,
                position: b.position.vec3(),
                orientation,
                velocity: b.velocity.vec3(),
                angular_velocity: b.angular_velocity.vec3(),
                is_static: b.is_static,
                origin: BodyOrigin::Body(i),
                inscribed_radius: b.shape.inscribed_radius(),
                bounding_radius: b.shape.bounding_radius(),
            });
        }
        for (g, generator) in self.generators.iter().enumerate() {
            let GeneratorSpec::Lattice {
                count,
                shape,
                mix,
                density,
                region,
                spacing,
                orientation,
                velocity,
                velocity_jitter,
                angular_velocity_jitter,
            } = generator;
            let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
            rng.set_stream(g as u64 + 1);
            let count = *count;
            let shapes: Vec<(&ShapeSpec, f64)> = match shape {
                Some(s) => vec![(s, 1.0)],
                None => mix.iter().map(|m| (&m.shape, m.fraction)).collect(),
            };
            let radii: Vec<(f64, f64)> = shapes
                .iter()
                .map(|(s, _)| (s.inscribed_radius(), s.bounding_radius()))
                .collect();
            let mut kinds = apportion(count, &shapes.iter().map(|s| s.1).collect::<Vec<_>>());
            // Fisher-Yates shuffle, so that a mix is well mixed over the lattice.
            for i in (1..kinds.len()).rev() {
                let j = rng.random_range(0..=i);
                kinds.swap(i, j);
            }
            let dims = lattice_dims(&region.min, &region.max, *spacing);
            // Only the first `count` sites are used, so capping each dimension at `count`
            // keeps the same sites and avoids overflow.
            let nx = (dims[0] as usize).clamp(1, count);
            let ny = (dims[1] as usize).clamp(1, count);
            let min = region.min.vec3();
            for (k, &kind) in kinds.iter().enumerate() {
                let site = Vec3::new(
                    (k % nx) as f64,
                    ((k / nx) % ny) as f64,
                    (k / (nx * ny)) as f64,
                );
                let position = min + (site + Vec3::repeat(0.5)) * *spacing;
                // Always draw the same numbers per body, so the stream layout does not
                // depend on which options are on.
                let random_q = random_rotation(&mut rng);
                let dv = jitter(&mut rng, *velocity_jitter);
                let w = jitter(&mut rng, *angular_velocity_jitter);
                out.push(PlacedBody {
                    shape: shapes[kind].0.clone(),
                    density: *density,
                    position,
                    orientation: orientation.fixed().unwrap_or(random_q),
                    velocity: velocity.vec3() + dv,
                    angular_velocity: w,
                    is_static: false,
                    origin: BodyOrigin::Generated {
                        generator: g,
                        index: k,
                    },
                    inscribed_radius: radii[kind].0,
                    bounding_radius: radii[kind].1,
                });
            }
        }
        Ok(out)
    }

    fn shape(&self, path: &FieldPath, s: &ShapeSpec) -> Found {
        s.check().map_err(|(rel, msg)| (path.join(&rel), msg))
    }

    fn sub(&self, path: &FieldPath, r: Result<(), (&'static str, String)>) -> Found {
        r.map_err(|(field, msg)| {
            (
                if field.is_empty() {
                    path.clone()
                } else {
                    path.field(field)
                },
                msg,
            )
        })
    }

    fn finite3(&self, path: &FieldPath, v: &V3) -> Found {
        if v.is_finite() {
            Ok(())
        } else {
            Err((path.clone(), format!("must be finite, got {v}")))
        }
    }

    fn positive(&self, path: &FieldPath, x: f64) -> Found {
        if x.is_finite() && x > 0.0 {
            Ok(())
        } else {
            Err((path.clone(), format!("must be finite and > 0, got {x}")))
        }
    }
}

/// The body at `path` (a body or a generator's shape) with `shape` (checked) at
/// `density` (finite, > 0) must have a mass and principal moments of inertia that are
/// finite and > 0: a radius of 10²⁰⁰ m overflows its mass to infinity (the body would
/// never move and drop out of the energy sums), one of 10⁻²⁰⁰ m underflows it to 0.
fn mass_check(path: &dyn Fn() -> FieldPath, shape: &ShapeSpec, density: f64) -> Found {
    let Ok(core) = shape.to_shape() else {
        return Ok(()); // reported by the shape check or when the world is built
    };
    let p = core.principal(density);
    let good = |x: f64| x.is_finite() && x > 0.0;
    if good(p.mass) && p.inertia.iter().all(|&i| good(i)) {
        return Ok(());
    }
    Err((
        path(),
        format!(
            "its mass {} kg or a moment of inertia ({}, {}, {}) kg m² is not finite and > 0 \
             (a {} of density {} kg/m³): the sizes or the density are out of range",
            super::short_number(p.mass),
            super::short_number(p.inertia.x),
            super::short_number(p.inertia.y),
            super::short_number(p.inertia.z),
            shape.kind_name(),
            super::short_number(density)
        ),
    ))
}

/// Lattice sites per axis in a region, as floats (may be huge).
fn lattice_dims(min: &V3, max: &V3, spacing: f64) -> [f64; 3] {
    // The 1e-9 absorbs rounding when the region is an exact multiple of the spacing.
    std::array::from_fn(|k| ((max.0[k] - min.0[k]) / spacing + 1e-9).floor().max(0.0))
}

/// Split `n` items over weights by the largest-remainder method: counts differ from
/// n wₖ/Σw by less than 1 and sum to n. Returns the kind index of each item, grouped.
fn apportion(n: usize, weights: &[f64]) -> Vec<usize> {
    let total: f64 = weights.iter().sum();
    let quotas: Vec<f64> = weights.iter().map(|w| n as f64 * w / total).collect();
    let mut counts: Vec<usize> = quotas.iter().map(|q| q.floor() as usize).collect();
    let mut rest: Vec<usize> = (0..weights.len()).collect();
    // Largest fractional part first; ties to the earlier entry (stable sort).
    rest.sort_by(|&a, &b| {
        (quotas[b] - quotas[b].floor()).total_cmp(&(quotas[a] - quotas[a].floor()))
    });
    let assigned: usize = counts.iter().sum();
    for &k in rest.iter().cycle().take(n.saturating_sub(assigned)) {
        counts[k] += 1;
    }
    counts
        .iter()
        .enumerate()
        .flat_map(|(k, &c)| std::iter::repeat_n(k, c))
        .collect()
}

/// Uniformly distributed rotation (Shoemake, "Uniform random rotations", Graphics Gems
/// III, 1992): q = (√(1−u₁) sin 2πu₂, √(1−u₁) cos 2πu₂, √u₁ sin 2πu₃, √u₁ cos 2πu₃).
pub(crate) fn random_rotation(rng: &mut ChaCha8Rng) -> Quat {
    let (u1, u2, u3): (f64, f64, f64) = (rng.random(), rng.random(), rng.random());
    let (a, b) = ((1.0 - u1).sqrt(), u1.sqrt());
    Quat::from_quaternion(nalgebra::Quaternion::new(
        b * (TAU * u3).cos(),
        a * (TAU * u2).sin(),
        a * (TAU * u2).cos(),
        b * (TAU * u3).sin(),
    ))
}

/// A vector with components uniform in [−j, j].
fn jitter(rng: &mut ChaCha8Rng, j: f64) -> Vec3 {
    let u: [f64; 3] = [rng.random(), rng.random(), rng.random()];
    Vec3::new(u[0], u[1], u[2]).map(|x| j * (2.0 * x - 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apportion_matches_quotas() {
        // 10 bodies at 1:1:1 → 4, 3, 3 (largest remainder; ties to the first entry).
        let k = apportion(10, &[1.0, 1.0, 1.0]);
        let count = |i| k.iter().filter(|&&x| x == i).count();
        assert_eq!((count(0), count(1), count(2)), (4, 3, 3));
        // Zero weight gets none; counts always sum to n.
        let k = apportion(7, &[0.0, 0.25, 0.75]);
        assert_eq!(k.len(), 7);
        assert_eq!(k.iter().filter(|&&x| x == 0).count(), 0);
        assert_eq!(
            k.iter().filter(|&&x| x == 2).count(),
            5,
            "7 × 0.75 = 5.25 → 5"
        );
    }

    #[test]
    fn random_rotations_are_unit_and_unbiased() {
        // The mean of R e_z over uniform rotations is 0; with 20000 samples each component
        // has standard deviation 1/√(3·20000) ≈ 0.004, so |mean| < 0.02 is a 5σ bound.
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let n = 20_000;
        let mut mean = Vec3::zeros();
        for _ in 0..n {
            let q = random_rotation(&mut rng);
            assert!((q.quaternion().norm() - 1.0).abs() < 1e-12);
            mean += q * Vec3::z();
        }
        mean /= n as f64;
        assert!(mean.norm() < 0.02 * 3f64.sqrt(), "mean axis {mean:?}");
    }
}
