//! Field checks, generator expansion and the initial-overlap check of a [`Scene`].

use super::locate::FieldPath;
use super::spec::{ContainerSpec, GeneratorSpec, ShapeSpec, V3};
use super::{Scene, SceneError};
use crate::dynamics::rotation::RotationIntegrator;
use crate::math::{Quat, Vec3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::f64::consts::TAU;

/// Most bodies a scene may hold (explicit plus generated).
pub const MAX_BODIES: usize = 1_000_000;

/// Relative slack of the overlap tests, so that bodies placed exactly in contact (up to
/// rounding of the numbers in the file) are not reported.
const CONTACT_SLACK: f64 = 1e-9;

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

fn root() -> FieldPath {
    FieldPath::root()
}

impl Scene {
    /// Check every field's value (not overlaps). Errors in file order.
    pub(super) fn check_fields(&self) -> Check {
        let r = root();
        if self.name.trim().is_empty() {
            return Err(self.invalid(&r.field("name"), "must not be empty".into()));
        }
        if self.description.contains('\n') {
            return Err(self.invalid(&r.field("description"), "must be a single line".into()));
        }
        self.finite3(&r.field("gravity"), &self.gravity)?;
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return Err(self.invalid(
                &r.field("dt"),
                format!("time step must be finite and > 0, got {}", self.dt),
            ));
        }
        if !(self.duration.is_finite() && self.duration >= self.dt) {
            return Err(self.invalid(
                &r.field("duration"),
                format!(
                    "must be finite and at least one time step ({} s), got {}",
                    self.dt, self.duration
                ),
            ));
        }
        if let Err((field, msg)) = self.params.validate() {
            return Err(self.invalid(&r.field("params").field(field), msg));
        }
        if let Some(mu) = self.pack_friction
            && !(mu.is_finite() && mu >= 0.0)
        {
            return Err(self.invalid(
                &r.field("pack_friction"),
                format!("μ must be finite and ≥ 0, got {mu}"),
            ));
        }
        if let RotationIntegrator::Theta { theta } = self.rotation
            && !(theta.is_finite() && (0.0..=1.0).contains(&theta))
        {
            return Err(self.invalid(
                &r.field("rotation").field("theta"),
                format!("θ must be in [0, 1], got {theta}"),
            ));
        }
        for (i, c) in self.containers.iter().enumerate() {
            self.sub(&r.field("containers").index(i), c.check())?;
        }
        let mut total = self.bodies.len();
        for (i, b) in self.bodies.iter().enumerate() {
            let p = r.field("bodies").index(i);
            self.shape(&p.field("shape"), &b.shape)?;
            self.positive(&p.field("density"), b.density)?;
            self.finite3(&p.field("position"), &b.position)?;
            self.sub(&p.field("orientation"), b.orientation.check())?;
            self.finite3(&p.field("velocity"), &b.velocity)?;
            self.finite3(&p.field("angular_velocity"), &b.angular_velocity)?;
            self.finite3(&p.field("force"), &b.force)?;
            self.finite3(&p.field("force_offset"), &b.force_offset)?;
            if b.is_static
                && (b.velocity.vec3() != Vec3::zeros()
                    || b.angular_velocity.vec3() != Vec3::zeros())
            {
                return Err(self.invalid(
                    &p.field("static"),
                    "a static body cannot have a velocity".into(),
                ));
            }
            if b.is_static && b.force.vec3() != Vec3::zeros() {
                return Err(self.invalid(
                    &p.field("force"),
                    "a static body cannot carry a force".into(),
                ));
            }
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
            if *count == 0 || *count > MAX_BODIES {
                return Err(self.invalid(
                    &p.field("count"),
                    format!("must be in 1..={MAX_BODIES}, got {count}"),
                ));
            }
            match (shape, mix.is_empty()) {
                (Some(s), true) => self.shape(&p.field("shape"), s)?,
                (None, false) => {
                    for (k, m) in mix.iter().enumerate() {
                        let mp = p.field("mix").index(k);
                        self.shape(&mp.field("shape"), &m.shape)?;
                        if !(m.fraction.is_finite() && m.fraction >= 0.0) {
                            return Err(self.invalid(
                                &mp.field("fraction"),
                                format!("must be finite and ≥ 0, got {}", m.fraction),
                            ));
                        }
                    }
                    if mix.iter().map(|m| m.fraction).sum::<f64>() <= 0.0 {
                        return Err(
                            self.invalid(&p.field("mix"), "the fractions must not all be 0".into())
                        );
                    }
                }
                _ => {
                    return Err(self.invalid(
                        &p,
                        "give exactly one of `shape` (one shape) or `mix` (several shapes)".into(),
                    ));
                }
            }
            self.positive(&p.field("density"), *density)?;
            self.finite3(&p.field("region").field("min"), &region.min)?;
            self.finite3(&p.field("region").field("max"), &region.max)?;
            if (0..3).any(|k| region.min.0[k] >= region.max.0[k]) {
                return Err(self.invalid(
                    &p.field("region"),
                    format!(
                        "min {} must be below max {} on every axis",
                        region.min, region.max
                    ),
                ));
            }
            self.positive(&p.field("spacing"), *spacing)?;
            let capacity = lattice_dims(&region.min, &region.max, *spacing)
                .iter()
                .product::<f64>();
            if capacity < *count as f64 {
                return Err(self.invalid(
                    &p.field("count"),
                    format!("the region holds only {capacity} lattice sites at spacing {spacing}, fewer than {count}"),
                ));
            }
            self.sub(&p.field("orientation"), orientation.check())?;
            self.finite3(&p.field("velocity"), velocity)?;
            for (name, j) in [
                ("velocity_jitter", velocity_jitter),
                ("angular_velocity_jitter", angular_velocity_jitter),
            ] {
                if !(j.is_finite() && *j >= 0.0) {
                    return Err(
                        self.invalid(&p.field(name), format!("must be finite and ≥ 0, got {j}"))
                    );
                }
            }
            total += count;
            if total > MAX_BODIES {
                return Err(self.invalid(
                    &p.field("count"),
                    format!("the scene would hold more than {MAX_BODIES} bodies"),
                ));
            }
        }
        Ok(())
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

    /// Report the first pair of bodies that certainly overlap (see the module doc), and
    /// bodies certainly poking through a plane, slope or container floor.
    pub(super) fn check_overlaps(&self, bodies: &[PlacedBody]) -> Check {
        // Sweep along x: a pair can only overlap if |Δx| < r_a + r_b ≤ r_a + r_max.
        let mut order: Vec<usize> = (0..bodies.len())
            .filter(|&i| bodies[i].inscribed_radius > 0.0)
            .collect();
        order.sort_by(|&a, &b| bodies[a].position.x.total_cmp(&bodies[b].position.x));
        let r_max = order
            .iter()
            .map(|&i| bodies[i].inscribed_radius)
            .fold(0.0, f64::max);
        let mut worst: Option<(usize, usize)> = None;
        for (k, &a) in order.iter().enumerate() {
            let (pa, ra) = (bodies[a].position, bodies[a].inscribed_radius);
            for &b in &order[k + 1..] {
                let pb = bodies[b].position;
                if pb.x - pa.x >= ra + r_max {
                    break;
                }
                if bodies[a].is_static && bodies[b].is_static {
                    continue;
                }
                let reach = (ra + bodies[b].inscribed_radius) * (1.0 - CONTACT_SLACK);
                if (pb - pa).norm_squared() < reach * reach {
                    // Report the pair that comes first in the file: smallest later index.
                    let pair = (a.max(b), a.min(b));
                    if worst.is_none_or(|w| pair < w) {
                        worst = Some(pair);
                    }
                }
            }
        }
        if let Some((b, a)) = worst {
            let (pa, pb) = (&bodies[a], &bodies[b]);
            let path = match pb.origin {
                BodyOrigin::Body(i) => root().field("bodies").index(i).field("position"),
                BodyOrigin::Generated { generator, .. }
                    if pa.origin_generator() == Some(generator) =>
                {
                    root().field("generators").index(generator).field("spacing")
                }
                BodyOrigin::Generated { generator, .. } => {
                    root().field("generators").index(generator).field("region")
                }
            };
            let d = (pb.position - pa.position).norm();
            return Err(self.invalid(
                &path,
                format!(
                    "{} at {} overlaps {} at {}: centres {d} m apart, closer than their inscribed radii {} + {} m",
                    pb.describe(),
                    V3::from(pb.position),
                    pa.describe(),
                    V3::from(pa.position),
                    pb.inscribed_radius,
                    pa.inscribed_radius
                ),
            ));
        }
        for b in bodies
            .iter()
            .filter(|b| !b.is_static && b.inscribed_radius > 0.0)
        {
            for (c, container) in self.containers.iter().enumerate() {
                if let Some(why) = penetrates(container, b.position, b.inscribed_radius) {
                    let path = match b.origin {
                        BodyOrigin::Body(i) => root().field("bodies").index(i).field("position"),
                        BodyOrigin::Generated { generator, .. } => {
                            root().field("generators").index(generator).field("region")
                        }
                    };
                    return Err(self.invalid(
                        &path,
                        format!(
                            "{} at {} reaches through containers[{c}] ({why})",
                            b.describe(),
                            V3::from(b.position)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn shape(&self, path: &FieldPath, s: &ShapeSpec) -> Check {
        s.check()
            .map_err(|(rel, msg)| self.invalid(&path.join(&rel), msg))
    }

    fn sub(&self, path: &FieldPath, r: Result<(), (&'static str, String)>) -> Check {
        r.map_err(|(field, msg)| {
            self.invalid(
                &if field.is_empty() {
                    path.clone()
                } else {
                    path.field(field)
                },
                msg,
            )
        })
    }

    fn finite3(&self, path: &FieldPath, v: &V3) -> Check {
        if v.is_finite() {
            Ok(())
        } else {
            Err(self.invalid(path, format!("must be finite, got {v}")))
        }
    }

    fn positive(&self, path: &FieldPath, x: f64) -> Check {
        if x.is_finite() && x > 0.0 {
            Ok(())
        } else {
            Err(self.invalid(path, format!("must be finite and > 0, got {x}")))
        }
    }
}

impl PlacedBody {
    fn origin_generator(&self) -> Option<usize> {
        match self.origin {
            BodyOrigin::Generated { generator, .. } => Some(generator),
            BodyOrigin::Body(_) => None,
        }
    }
}

/// Whether the ball of radius `r` about `x` certainly crosses the surface of `c`: its
/// signed distance to a plane/slope, or height above a box/cylinder floor within the
/// floor's footprint, is below r.
fn penetrates(c: &ContainerSpec, x: Vec3, r: f64) -> Option<String> {
    let r = r * (1.0 - CONTACT_SLACK);
    match c.to_container() {
        crate::Container::Plane { point, normal } => {
            let s = normal.dot(&(x - point));
            (s < r).then(|| {
                format!(
                    "{} plane: signed distance {s} m < inscribed radius {r} m",
                    c.kind_name()
                )
            })
        }
        crate::Container::Box {
            center, half_size, ..
        } => {
            let d = x - center;
            let inside = d.x.abs() < half_size[0] && d.y.abs() < half_size[1];
            (inside && d.z < r)
                .then(|| format!("box floor: height {} m < inscribed radius {r} m", d.z))
        }
        crate::Container::Cylinder { base, radius, .. } => {
            let d = x - base;
            let inside = d.xy().norm() < radius;
            (inside && d.z < r)
                .then(|| format!("cylinder floor: height {} m < inscribed radius {r} m", d.z))
        }
        crate::Container::Hopper { .. } => None,
    }
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
fn random_rotation(rng: &mut ChaCha8Rng) -> Quat {
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
