//! Scenes: RON files in `scenes/`, validated on load (format: `docs/scene-format.md`).
//!
//! Loading a scene has three stages, each usable on its own:
//! 1. **parse** ([`parse_scene`], [`load_scene`]): RON → [`Scene`], then [`Scene::validate`];
//!    syntax errors, unknown fields/shapes/containers and wrong types come from `ron`
//!    with their position; every later error is located in the text by
//!    [`locate::SourceMap`], so each [`SceneError`] names file, line, column and field;
//! 2. **expand** ([`Scene::expand_bodies`]): generators become bodies, deterministically
//!    (ChaCha8 seeded from the scene `seed`, one stream per generator); nothing is built,
//!    so overlap checks and previews need no mass properties;
//! 3. **build** ([`Scene::build_world`]): the [`World`] with its containers and rigid
//!    bodies (mass properties from [`crate::shapes`]), and with a saved run's `resume`
//!    section ([`resume`]) the rest of that run's state, so it continues bit for bit.
//!
//! Overlap check: bodies are reported overlapping only when they certainly do, i.e. when
//! their centres are closer than the sum of their *inscribed* radii (largest ball about
//! the shape-frame origin inside the shape; see [`ShapeSpec::inscribed_radius`]). For two
//! spheres this is the exact test |x₁ − x₂| < r₁ + r₂; for other shapes overlaps that this
//! test cannot prove are not reported. Pairs of static bodies are not checked (obstacles
//! may be built from overlapping pieces). The same inscribed ball is tested against
//! every container: planes and slopes, the floors, walls and dividers of boxes, the
//! floors and walls of cylinders, the cones of hoppers; a body outside a box's present
//! wall, a cylinder or a hopper is refused too (`overlap`). The check's memory is
//! linear in the number of bodies whatever the overlaps: it lists the first
//! [`MAX_REPORTED`] errors and counts the rest.

mod error;
pub(crate) mod expand;
pub mod locate;
mod overlap;
pub mod region;
pub mod resume;
pub mod save;
mod spec;

pub use error::{MAX_REPORTED, SceneError, SceneErrorKind};
pub use expand::{BodyOrigin, MAX_BODIES, PlacedBody, body_limit, set_body_limit};
pub use locate::FieldPath;
pub use spec::{
    BodySpec, ContainerSpec, DividerSpec, GeneratorSpec, MixEntry, OrientationSpec, ReferenceAngle,
    Region, ShapeSpec, V2, V3, Vector, Walls,
};

use crate::body::RigidBody;
use crate::dynamics::rotation::RotationIntegrator;
use crate::dynamics::solver::{SolverKind, SolverParams};
use crate::world::World;
use locate::{LineCol, SourceMap};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn default_gravity() -> V3 {
    V3::new(0.0, 0.0, -9.81)
}

fn default_dt() -> f64 {
    1.0 / 600.0
}

fn default_duration() -> f64 {
    10.0
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

fn default_solver() -> SolverKind {
    SolverKind::Jolt
}

/// A scene file. Every field except `name` has a default; see `docs/scene-format.md`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename = "Scene", deny_unknown_fields)]
pub struct Scene {
    /// Short title shown in the app and the CLI.
    pub name: String,
    /// One line saying what the scene shows. Default: "".
    #[serde(default)]
    pub description: String,
    /// Gravitational acceleration (m/s²). Default: (0, 0, −9.81).
    #[serde(default = "default_gravity")]
    pub gravity: V3,
    /// Time step h (s). Default: 1/600 (paper 000, section 7).
    #[serde(default = "default_dt")]
    pub dt: f64,
    /// Default run length (s) for the CLI and the app's recorder. Default: 10.
    #[serde(default = "default_duration")]
    pub duration: f64,
    /// Collision method, a quoted name: "etm", "sqm", "smm", "jolt", "ccp", "mdp".
    /// Default: "jolt".
    #[serde(default = "default_solver", with = "spec::solver_name")]
    pub solver: SolverKind,
    /// Solver parameters; omitted ones take [`SolverParams`]'s defaults.
    #[serde(default)]
    pub params: SolverParams,
    /// Rotation integrator: `Theta(theta: 0.5)` or `SymplecticEuler`.
    /// Default: Theta(theta: 0.5).
    #[serde(default, with = "spec::rotation_spec")]
    pub rotation: RotationIntegrator,
    /// Seed of the random orientations and jitters. Default: 0.
    #[serde(default)]
    pub seed: u64,
    /// The angle-of-repose experiment's packing friction μ ≥ 0 (`impulse-lab repose`,
    /// the app's repose panel): the bodies pack at it and the wall's removal brings the
    /// run's μ back ([`crate::repose::ReposeConfig::pack_friction`]; paper 000 §7.5
    /// packs at μ = 0.3, Fig. 11). Written bare: `pack_friction: 0.3`. Default: none
    /// (packing at the run's μ).
    #[serde(
        default,
        with = "spec::bare_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub pack_friction: Option<f64>,
    /// A published angle of repose for this configuration: `impulse-lab repose` prints
    /// it beside each run's measured angle (it changes nothing in the run). Written
    /// bare: `reference_angle: (angle_deg: 19.7, source: "Zhou et al. 2002")`.
    /// Default: none.
    #[serde(
        default,
        with = "spec::bare_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub reference_angle: Option<ReferenceAngle>,
    /// The region of interest (m, world frame): the box where the scene's teaching
    /// moments happen; a moving body inside it stays in the app's view, one that has
    /// left it need not ([`region`]). Written bare: `region_of_interest: (min: (-2, -2,
    /// 0), max: (2, 2, 3))`, min below max on every axis. Default: the containers' and
    /// the bodies' initial bounds grown by the largest moving body's bounding diameter
    /// ([`Scene::region_of_interest`]).
    #[serde(
        default,
        with = "spec::bare_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub region_of_interest: Option<Region>,
    /// Whether loading rejects bodies that certainly overlap (module doc). A saved state
    /// ([`save::state_scene`]) writes `overlap_check: false`: its resting contacts
    /// overlap by what the solver left. Default: true.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub overlap_check: bool,
    #[serde(default)]
    pub containers: Vec<ContainerSpec>,
    #[serde(default)]
    pub bodies: Vec<BodySpec>,
    #[serde(default)]
    pub generators: Vec<GeneratorSpec>,
    /// A saved run's state besides its bodies (step, time, sleep, warm starts, ledger),
    /// so the loaded world continues it bit for bit ([`resume`], written by
    /// [`save::state_scene`]). Written bare. Default: none (the world starts at step 0,
    /// cold).
    #[serde(
        default,
        with = "spec::bare_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub resume: Option<resume::ResumeSpec>,
    /// The text the scene was parsed from, for locating errors.
    #[serde(skip)]
    source: Option<Arc<Source>>,
}

#[derive(Debug)]
struct Source {
    file: String,
    text: String,
}

/// A bundled data directory (`scenes`, `lessons`): `./NAME` if present, else the source
/// tree's.
pub fn data_dir(name: &str) -> PathBuf {
    let local = PathBuf::from(name);
    if local.is_dir() {
        local
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
    }
}

/// A file path as given, or the file `dir/NAME.ron` of a bundled name.
pub fn resolve_in(dir: &Path, name: &str) -> PathBuf {
    let p = PathBuf::from(name);
    if p.exists() || name.ends_with(".ron") || name.contains('/') {
        return p;
    }
    dir.join(format!("{name}.ron"))
}

/// The `*.ron` files in `dir`, sorted by name.
pub fn ron_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    entries.sort();
    Ok(entries)
}

/// Directory of the bundled scenes: `./scenes` if present, else the source tree's.
pub fn scenes_dir() -> PathBuf {
    data_dir("scenes")
}

/// A scene file path as given, or the bundled scene of that name (`pour_mixed` →
/// `scenes/pour_mixed.ron`).
pub fn resolve_scene(name: &str) -> PathBuf {
    resolve_in(&scenes_dir(), name)
}

/// The bundled scene files (`*.ron` in [`scenes_dir`]), sorted by name.
pub fn bundled_scenes() -> std::io::Result<Vec<PathBuf>> {
    ron_files(&scenes_dir())
}

/// Read and validate the scene file at `path`.
pub fn load_scene(path: &Path) -> Result<Scene, SceneError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        let (kind, message) = if e.kind() == std::io::ErrorKind::InvalidData {
            (SceneErrorKind::Syntax, "not UTF-8 text".into())
        } else {
            (SceneErrorKind::Io, format!("cannot read: {e}"))
        };
        SceneError::new(file.clone(), None, None, String::new(), kind, message)
    })?;
    parse_scene_text(text, &file)
}

/// A RON parse error of `text` (from file `file_name`) as a [`SceneError`] naming the
/// line, column and the field path at that place (scenes and lessons alike).
pub fn syntax_error(e: &ron::error::SpannedError, text: &str, file_name: &str) -> SceneError {
    let at = LineCol {
        line: e.span.start.line,
        column: e.span.start.col,
    };
    let (map, offset) = SourceMap::for_position(text, at);
    SceneError::new(
        file_name.to_string(),
        Some(at.line),
        Some(at.column),
        map.path_at(offset).to_string(),
        SceneErrorKind::Syntax,
        e.code.to_string(),
    )
}

/// Most steps a run may take from step 0: times t = step × dt are exact multiples of
/// dt up to 2⁵³ steps, and step counts cannot overflow.
pub const MAX_STEPS: u64 = 1 << 53;

/// `x` as written by a person: plain from 10⁻⁴ to 10⁶, else in exponent form (`1e300`,
/// not 301 digits).
pub fn short_number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-4..1e6).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// Shortest time step accepted (s).
pub const MIN_DT: f64 = 1e-9;

/// Check the time step `dt` (finite and > 0) against the scene's bodies: at least
/// [`MIN_DT`], and no moving body may start faster than its smallest inscribed radius
/// per step (it would cross another body or a wall between two detections). The
/// message says what dt would do.
pub fn check_dt(dt: f64, bodies: &[PlacedBody]) -> Result<(), String> {
    if dt < MIN_DT {
        return Err(format!(
            "time step {} s is below the shortest accepted, {MIN_DT:e} s",
            short_number(dt)
        ));
    }
    let moving = || bodies.iter().filter(|b| !b.is_static);
    let Some(small) = moving()
        .filter(|b| b.inscribed_radius > 0.0)
        .min_by(|a, b| a.inscribed_radius.total_cmp(&b.inscribed_radius))
    else {
        return Ok(());
    };
    let Some(fast) = moving().max_by(|a, b| {
        a.velocity
            .norm_squared()
            .total_cmp(&b.velocity.norm_squared())
    }) else {
        return Ok(());
    };
    let (v, r) = (fast.velocity.norm(), small.inscribed_radius);
    if v * dt > r {
        return Err(format!(
            "time step {} s is too long: {} starts at {v} m/s and moves {} m per step, more than the inscribed radius {r} m of {}; use a time step of at most {} s",
            short_number(dt),
            fast.describe(),
            v * dt,
            small.describe(),
            r / v
        ));
    }
    Ok(())
}

/// Parse and validate scene text; `file_name` is used in error messages only. A UTF-8
/// byte-order mark at the start is skipped (editors on Windows write one).
pub fn parse_scene(text: &str, file_name: &str) -> Result<Scene, SceneError> {
    parse_scene_text(text.to_string(), file_name)
}

/// [`parse_scene`] on text the scene keeps (for its error positions) without a copy.
fn parse_scene_text(mut text: String, file_name: &str) -> Result<Scene, SceneError> {
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    if text.trim().is_empty() {
        return Err(SceneError::new(
            file_name.to_string(),
            None,
            None,
            String::new(),
            SceneErrorKind::Syntax,
            "the file is empty (a scene file holds `Scene(name: ..., ...)`)".into(),
        ));
    }
    let mut scene: Scene = ron::Options::default()
        .from_str(&text)
        .map_err(|e| syntax_error(&e, &text, file_name))?;
    scene.source = Some(Arc::new(Source {
        file: file_name.to_string(),
        text,
    }));
    scene.validate()?;
    Ok(scene)
}

impl Scene {
    /// A scene with every default and nothing in it (for building scenes in code).
    pub fn new(name: &str) -> Scene {
        Scene {
            name: name.to_string(),
            description: String::new(),
            gravity: default_gravity(),
            dt: default_dt(),
            duration: default_duration(),
            solver: default_solver(),
            params: SolverParams::default(),
            rotation: RotationIntegrator::default(),
            seed: 0,
            pack_friction: None,
            reference_angle: None,
            region_of_interest: None,
            containers: Vec::new(),
            bodies: Vec::new(),
            generators: Vec::new(),
            resume: None,
            overlap_check: true,
            source: None,
        }
    }

    /// File name the scene was parsed from (`None` if built in code).
    pub fn file_name(&self) -> Option<&str> {
        self.source.as_ref().map(|s| s.file.as_str())
    }

    /// The scene as pretty RON (a loadable scene file; comments are not kept).
    pub fn to_ron(&self) -> Result<String, ron::Error> {
        ron::ser::to_string_pretty(self, ron::ser::PrettyConfig::default().struct_names(true))
    }

    /// Check every field, expand the generators and check for certain overlaps; the
    /// `resume` section's method impulses must come from the scene's method.
    pub fn validate(&self) -> Result<(), SceneError> {
        let bodies = self.validated_bodies()?;
        self.check_resume(&bodies, true)
    }

    /// Every body of the scene, generators expanded (explicit bodies first, then each
    /// generator's in order). Deterministic: the same scene gives bit-identical output.
    /// Checks the fields it uses, but not overlaps (see [`Scene::validate`]).
    pub fn expand_bodies(&self) -> Result<Vec<PlacedBody>, SceneError> {
        self.check_fields()?;
        self.expand_checked()
    }

    /// The world described by the scene, its bodies at their initial state, or at the
    /// saved run's state with its `resume` section. Call [`World::start_ledger`] before
    /// stepping (it keeps a resumed ledger).
    pub fn build_world(&self) -> Result<World, SceneError> {
        let bodies = self.validated_bodies()?;
        let mut world = World::new(
            self.gravity.vec3(),
            self.dt,
            self.solver,
            self.params.clone(),
        )
        .map_err(|e| {
            self.error(
                &FieldPath::root().field("solver"),
                SceneErrorKind::Unsupported,
                e.to_string(),
            )
        })?;
        world.rotation = self.rotation;
        for c in &self.containers {
            world.add_container(c.to_container());
        }
        for b in bodies {
            let shape = b
                .shape
                .to_shape()
                .map_err(|m| self.error(&b.shape_path(), SceneErrorKind::Invalid, m))?;
            let mut body = RigidBody::new(&shape, b.density, b.position, b.orientation);
            body.velocity = b.velocity;
            body.angular_velocity = b.angular_velocity;
            if b.is_static {
                body = body.into_static();
            }
            let index = world.add_body(body);
            if let BodyOrigin::Body(i) = b.origin {
                let spec = &self.bodies[i];
                if spec.force.vec3() != crate::math::Vec3::zeros() {
                    world.forces.push(crate::world::AppliedForce {
                        body: index,
                        force: spec.force.vec3(),
                        offset: spec.force_offset.vec3(),
                    });
                }
            }
        }
        if let Some(r) = &self.resume {
            r.apply(&mut world);
        }
        Ok(world)
    }

    fn validated_bodies(&self) -> Result<Vec<PlacedBody>, SceneError> {
        let bodies = self.expand_bodies()?;
        if let Err(why) = check_dt(self.dt, self.dt_bodies(&bodies)) {
            return Err(self.error(&FieldPath::root().field("dt"), SceneErrorKind::Invalid, why));
        }
        if self.overlap_check {
            self.check_overlaps(&bodies)?;
        }
        self.check_resume(&bodies, false)?;
        Ok(bodies)
    }

    /// The bodies whose speeds [`check_dt`] checks the time step against: all of them,
    /// or none for a saved run (`resume`), which continues at speeds its own run
    /// reached with that time step.
    pub fn dt_bodies<'b>(&self, bodies: &'b [PlacedBody]) -> &'b [PlacedBody] {
        if self.resume.is_some() { &[] } else { bodies }
    }

    /// An error at `path`, located in the source text when the scene came from one.
    fn error(&self, path: &FieldPath, kind: SceneErrorKind, message: String) -> SceneError {
        let (file, at) = match &self.source {
            Some(src) => (
                src.file.clone(),
                SourceMap::for_paths(&src.text, std::slice::from_ref(path)).locate(path),
            ),
            None => (format!("<scene '{}'>", self.name), None),
        };
        SceneError::new(
            file,
            at.map(|a| a.line),
            at.map(|a| a.column),
            path.to_string(),
            kind,
            message,
        )
    }

    /// [`SceneErrorKind::Invalid`] errors at each path, located with one pass over the
    /// source text (none when there are no errors).
    fn invalid_all(&self, bad: impl Iterator<Item = (FieldPath, String)>) -> Vec<SceneError> {
        let bad: Vec<(FieldPath, String)> = bad.collect();
        let paths: Vec<FieldPath> = bad.iter().map(|b| b.0.clone()).collect();
        let map = match &self.source {
            Some(src) if !bad.is_empty() => Some(SourceMap::for_paths(&src.text, &paths)),
            _ => None,
        };
        let file = match &self.source {
            Some(src) => src.file.clone(),
            None => format!("<scene '{}'>", self.name),
        };
        bad.into_iter()
            .map(|(path, message)| {
                let at = map.as_ref().and_then(|m| m.locate(&path));
                SceneError::new(
                    file.clone(),
                    at.map(|a| a.line),
                    at.map(|a| a.column),
                    path.to_string(),
                    SceneErrorKind::Invalid,
                    message,
                )
            })
            .collect()
    }
}
