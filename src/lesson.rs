//! Lessons: guided experiments, one RON file each in `lessons/`.
//!
//! A lesson names a scene, says what it demonstrates (`summary`), what to look at
//! (`look_at`) and which figure to expect (`expected`, with its source: a paper's figure
//! or equation, or an analytic formula), optionally presets compare mode (`compare`, a
//! list of solver names), a camera ([`CameraHint`]: eye, target, a radius to keep in view,
//! a body to follow) and how the run starts ([`StartHint`]: paused, time scale, pause at
//! the next impact), and carries a machine-checkable [`Check`] that
//! computes exactly the figure the text states. `impulse-lab lesson NAME` runs the check
//! headless; `tests/lessons.rs` runs every lesson. [`Lesson::run_check_observed`] shows
//! every state the check steps through, so `tests/lesson_view.rs` can check that the
//! lesson's camera keeps its subject bodies in view until the figure is measured; the
//! same test steps the lesson's scene for the lesson's whole run ([`Lesson::duration`])
//! and keeps every moving body inside the scene's region of interest in view.
//!
//! Files are loaded like scenes: syntax and type errors come from `ron` with their
//! position, later errors are located by [`SourceMap`], so every error names file, line,
//! column and field (a [`SceneError`]). A lesson is validated against its scene (the body
//! a check watches exists; figures the text quotes from the scene, such as V0 or μ, are
//! the scene's).

use crate::dynamics::solver::{SolverError, SolverKind};
use crate::math::{Mat3, Vec3};
use crate::microscope;
use crate::repose::{ReposeConfig, ReposeError, ReposeExperiment};
use crate::scene::locate::SourceMap;
use crate::scene::{FieldPath, Scene, SceneError, SceneErrorKind, V3};
use crate::shapes::Shape;
use crate::world::World;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// A lesson file (module doc). Every field is required except `compare`, `camera`,
/// `start` and `duration`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename = "Lesson", deny_unknown_fields)]
pub struct Lesson {
    pub title: String,
    /// A bundled scene name (`etm_tetrahedra`) or a path (relative paths are tried
    /// against the lesson's folder first).
    pub scene: String,
    /// What the lesson demonstrates.
    pub summary: String,
    /// What to look at while it runs.
    pub look_at: String,
    /// The figure to expect and where it comes from.
    pub expected: Expected,
    /// Solvers to preset compare mode with (2 or 3 names, e.g. ["etm", "sqm", "smm"]);
    /// empty: no compare mode. Default: [].
    #[serde(default)]
    pub compare: Vec<String>,
    /// Where to put the camera. Default: the app's.
    #[serde(default)]
    pub camera: Option<CameraHint>,
    /// How the app starts the run: paused, slow motion, pausing at the next impact.
    /// Default: running at 1×.
    #[serde(default)]
    pub start: StartHint,
    /// How long the lesson's run lasts (s, at least the scene's time step): the moment
    /// it is about and what follows while the class watches. The lesson's camera keeps
    /// every moving body inside the scene's region of interest in view for this long
    /// (`tests/lesson_view.rs`). Default: the scene's `duration`.
    #[serde(default)]
    pub duration: Option<f64>,
    /// The machine-checkable figure.
    pub check: Check,
    #[serde(skip)]
    source: Option<(String, String)>,
}

/// The figure a lesson expects, in words, and its source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    pub figure: String,
    pub source: String,
}

/// A camera placement (m, world frame): the app's perspective camera at `eye` looking at
/// `target`, z up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraHint {
    pub eye: V3,
    pub target: V3,
    /// Keep a sphere of this radius (m) around the target in view whatever the view's
    /// shape: in a view too narrow for it (side by side in compare mode) the camera backs
    /// off along `eye − target` until the sphere fits the narrower half-angle θ of the
    /// view, at distance 1.05 r / sin θ. Default: `eye` as written.
    #[serde(default)]
    pub radius: Option<f64>,
    /// Follow this body: eye and target move with it (they keep their offset from the
    /// body's position at step 0). Default: a fixed camera.
    #[serde(default)]
    pub follow: Option<usize>,
}

/// How the app starts a lesson's run, so that the moment the lesson is about happens
/// while the class watches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StartHint {
    /// Open paused: Play (space) starts the run. Default: false.
    pub paused: bool,
    /// Simulated seconds per real second (below 1: slow motion), in
    /// [[`StartHint::MIN_TIME_SCALE`], [`StartHint::MAX_TIME_SCALE`]]. Default: 1.
    pub time_scale: f64,
    /// Pause the run at the next impact (a contact changes a body's velocity sharply,
    /// `crate::microscope::ImpactWatch`). Default: false.
    pub pause_at_impact: bool,
}

impl StartHint {
    /// The slowest time scale the app runs at (100× slow motion).
    pub const MIN_TIME_SCALE: f64 = 0.01;
    /// The fastest.
    pub const MAX_TIME_SCALE: f64 = 4.0;
}

impl Default for StartHint {
    fn default() -> Self {
        StartHint {
            paused: false,
            time_scale: 1.0,
            pause_at_impact: false,
        }
    }
}

/// Bounds on ξ_ω = |ω⁺| / |v⁻| for one solver ([`Check::SpinAfterImpact`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpinBound {
    /// Solver name ("etm", "sqm", ...).
    pub solver: String,
    /// ξ_ω ≥ min (dimensionless, s/m·m: rad/s per m/s).
    pub min: f64,
    /// ξ_ω ≤ max.
    pub max: f64,
}

/// What a lesson measures and the bound it must meet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Check {
    /// Paper 000 §7.1 with the scene's solver (ETM), once per λ in `lambdas` (paper 000
    /// eq. 62), on the first impact: a single contact; K + W constant across the
    /// iterations, max |(K + W) − K₀| / K₀ ≤ `tol` (eq. 69's ξ_Et); the elastic peak
    /// equals the kinetic-energy drop at maximum compression, |W_mc − (K₀ − K_mc)| / W_mc
    /// ≤ `tol` (eqs. 62-64); the normal velocity leaves at −e u_n⁻ (Stronge's energetic
    /// e, eq. 65: W_release = e² W_mc), |u_n⁺ + e u_n⁻| / |u_n⁻| ≤ `tol`; and the
    /// number of compression increments grows with λ.
    SingleContactEnergy { lambdas: Vec<f64>, tol: f64 },
    /// For each solver: the scene with that solver, stepped until `body` first gets an
    /// impulse (at most `max_steps`), then on (at most `max_steps` more) until it has had
    /// no impulse for `quiet_steps` steps (the landing, which can take several impacts);
    /// ξ_ω = |ω⁺| / |v⁻| (paper 000 eq. 70 with
    /// ω_o = 0: the angular velocity after the landing over the speed before it) must
    /// lie in [min, max].
    SpinAfterImpact {
        body: usize,
        max_steps: u64,
        quiet_steps: u64,
        expect: Vec<SpinBound>,
    },
    /// A sphere sliding at V0 without spin on a plane (paper 002 §5.4, Fig. 26): friction
    /// μ m g decelerates it and spins it up until the contact point sticks at
    /// t = 2 V0 / (7 μ g), then it rolls at 5 V0 / 7. `v0`, `mu`, `g` must be the
    /// scene's. Onset: the first step whose slip is below one step's slip decrement
    /// (7/2) μ g h; within `tol_steps` steps of t. Speed (mean of the last two steps,
    /// 200 steps after t): within `tol_speed` relative of 5 V0 / 7.
    RollingTime {
        body: usize,
        v0: f64,
        mu: f64,
        g: f64,
        tol_steps: f64,
        tol_speed: f64,
    },
    /// Painlevé's rod (paper 003 §4.2): the first impact of `body` is a sticking
    /// impulse λ = −D⁻¹ b (the post-impulse contact velocity is zero: slip-stick), with
    /// D = m⁻¹ 1 − r̃ I⁻¹ r̃ the contact's Delassus matrix and b the pre-impulse contact
    /// velocity; it lies in the friction cone, |λ_t| ≤ μ λ_n, and μ is above the
    /// paradox threshold (I/m + r_x²)/(r_x r_z) (for a slender rod
    /// (1 + 3 cos²θ)/(3 sin θ cos θ), 4/3 at θ = atan 2). |λ − (−D⁻¹ b)| ≤ `tol` |λ|.
    PainleveStick { body: usize, tol: f64 },
    /// Angle-of-repose experiment (paper 000 §7.5, `crate::repose`) run twice, with
    /// friction `low_friction` and `high_friction`, each run's packing and slumping
    /// phases ended by the rest rule of the `repose` command ([`ReposeConfig`]'s
    /// defaults: K / ΔU below 10⁻⁶ for 0.5 s) or by the cap of `max_time` s per phase.
    /// Each phase must have come to rest (a capped phase fails the check), and the
    /// angles θ ± ε (ε: half the spread of the eight row angles, the measurement of
    /// `crate::repose::measure`) must differ by more than their error bars:
    /// θ_high − θ_low > ε_low + ε_high.
    ReposeAtRest {
        low_friction: f64,
        high_friction: f64,
        max_time: f64,
    },
}

impl Check {
    /// The check's name as written in a lesson file.
    pub fn name(&self) -> &'static str {
        match self {
            Check::SingleContactEnergy { .. } => "SingleContactEnergy",
            Check::SpinAfterImpact { .. } => "SpinAfterImpact",
            Check::RollingTime { .. } => "RollingTime",
            Check::PainleveStick { .. } => "PainleveStick",
            Check::ReposeAtRest { .. } => "ReposeAtRest",
        }
    }
}

/// One measured figure of a check.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub name: String,
    pub measured: f64,
    /// The expected value or bound, in words (`≤ 1e-12`, `0.2857 s ± 2 steps`).
    pub expected: String,
    pub pass: bool,
}

/// What a check measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckOutcome {
    pub figures: Vec<Figure>,
}

impl CheckOutcome {
    pub fn passed(&self) -> bool {
        !self.figures.is_empty() && self.figures.iter().all(|f| f.pass)
    }

    fn push(&mut self, name: impl Into<String>, measured: f64, expected: String, pass: bool) {
        self.figures.push(Figure {
            name: name.into(),
            measured,
            expected,
            pass,
        });
    }
}

impl fmt::Display for CheckOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for fig in &self.figures {
            writeln!(
                f,
                "  {:<52} {:>14.6e}   expected {:<28} {}",
                fig.name,
                fig.measured,
                fig.expected,
                if fig.pass { "ok" } else { "FAIL" }
            )?;
        }
        write!(f, "{}", if self.passed() { "PASS" } else { "FAIL" })
    }
}

/// A lesson's check could not run.
#[derive(Debug, thiserror::Error)]
pub enum LessonError {
    #[error(transparent)]
    Load(#[from] SceneError),
    #[error("{0}")]
    Solver(#[from] SolverError),
    #[error("{0}")]
    Repose(#[from] ReposeError),
}

/// Directory of the bundled lessons: `./lessons` if present, else the source tree's.
pub fn lessons_dir() -> PathBuf {
    crate::scene::data_dir("lessons")
}

/// A lesson file path as given, or the bundled lesson of that name.
pub fn resolve_lesson(name: &str) -> PathBuf {
    crate::scene::resolve_in(&lessons_dir(), name)
}

/// The bundled lesson files, sorted by name.
pub fn bundled_lessons() -> std::io::Result<Vec<PathBuf>> {
    crate::scene::ron_files(&lessons_dir())
}

/// Read and validate the lesson file at `path` (its scene is loaded to check it).
pub fn load_lesson(path: &Path) -> Result<Lesson, SceneError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        SceneError::new(
            file.clone(),
            None,
            None,
            String::new(),
            SceneErrorKind::Io,
            format!("cannot read: {e}"),
        )
    })?;
    parse_lesson(&text, &file)
}

/// Parse and validate lesson text; `file_name` is used in messages and to find a
/// scene given by a relative path.
pub fn parse_lesson(text: &str, file_name: &str) -> Result<Lesson, SceneError> {
    let options =
        ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
    let mut lesson: Lesson = options
        .from_str(text)
        .map_err(|e| crate::scene::syntax_error(&e, text, file_name))?;
    lesson.source = Some((file_name.to_string(), text.to_string()));
    lesson.validate()?;
    Ok(lesson)
}

impl Lesson {
    /// The lesson's name: its file stem (`None` if built in code).
    pub fn name(&self) -> Option<String> {
        self.source.as_ref().map(|(f, _)| {
            Path::new(f)
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
    }

    /// The scene file this lesson runs.
    pub fn scene_path(&self) -> PathBuf {
        let p = Path::new(&self.scene);
        if p.is_relative()
            && (self.scene.contains('/') || self.scene.ends_with(".ron"))
            && let Some((file, _)) = &self.source
            && let Some(dir) = Path::new(file).parent()
            && dir.join(p).exists()
        {
            return dir.join(p);
        }
        crate::scene::resolve_scene(&self.scene)
    }

    /// The lesson's scene, loaded and validated.
    pub fn load_scene(&self) -> Result<Scene, SceneError> {
        let path = self.scene_path();
        if !path.exists() {
            return Err(self.error(
                &FieldPath::root().field("scene"),
                format!("{}: no such scene file", path.display()),
            ));
        }
        crate::scene::load_scene(&path)
    }

    /// The lesson's run length (s): its `duration`, else the scene's.
    pub fn run_duration(&self, scene: &Scene) -> f64 {
        self.duration.unwrap_or(scene.duration)
    }

    /// The compare-mode preset (empty: none).
    pub fn compare_solvers(&self) -> Vec<SolverKind> {
        self.compare.iter().filter_map(|s| s.parse().ok()).collect()
    }

    /// Check every field and the check's parameters against the scene.
    pub fn validate(&self) -> Result<(), SceneError> {
        let root = FieldPath::root();
        for (field, v) in [
            ("title", &self.title),
            ("scene", &self.scene),
            ("summary", &self.summary),
            ("look_at", &self.look_at),
        ] {
            if v.trim().is_empty() {
                return Err(self.error(&root.field(field), "must not be empty".into()));
            }
        }
        for (field, v) in [
            ("figure", &self.expected.figure),
            ("source", &self.expected.source),
        ] {
            if v.trim().is_empty() {
                return Err(self.error(
                    &root.field("expected").field(field),
                    "must not be empty".into(),
                ));
            }
        }
        if !self.compare.is_empty() && !(2..=crate::compare::MAX_RUNS).contains(&self.compare.len())
        {
            return Err(self.error(
                &root.field("compare"),
                format!(
                    "compare mode takes 2 to {} solvers, got {}",
                    crate::compare::MAX_RUNS,
                    self.compare.len()
                ),
            ));
        }
        for (i, s) in self.compare.iter().enumerate() {
            s.parse::<SolverKind>()
                .map_err(|m| self.error(&root.field("compare").index(i), m))?;
        }
        if let Some(c) = &self.camera {
            let cam = root.field("camera");
            for (field, v) in [("eye", &c.eye), ("target", &c.target)] {
                if !Vec3::from(*v).iter().all(|x| x.is_finite()) {
                    return Err(self.error(&cam.field(field), "must be finite".into()));
                }
            }
            if Vec3::from(c.eye) == Vec3::from(c.target) {
                return Err(self.error(&cam.field("target"), "must differ from eye".into()));
            }
            if let Some(r) = c.radius
                && !(r.is_finite() && r > 0.0)
            {
                return Err(self.error(
                    &cam.field("radius"),
                    format!("must be finite and > 0, got {r}"),
                ));
            }
        }
        let s = &self.start;
        if !(StartHint::MIN_TIME_SCALE..=StartHint::MAX_TIME_SCALE).contains(&s.time_scale) {
            return Err(self.error(
                &root.field("start").field("time_scale"),
                format!(
                    "must be in [{}, {}], got {}",
                    StartHint::MIN_TIME_SCALE,
                    StartHint::MAX_TIME_SCALE,
                    s.time_scale
                ),
            ));
        }
        let scene = self.load_scene()?;
        if let Some(d) = self.duration
            && !(d.is_finite() && d >= scene.dt)
        {
            return Err(self.error(
                &root.field("duration"),
                format!(
                    "must be finite and at least the scene's time step ({} s), got {d}",
                    scene.dt
                ),
            ));
        }
        if let Some(body) = self.camera.as_ref().and_then(|c| c.follow) {
            let bodies = scene.expand_bodies()?;
            let at = root.field("camera").field("follow");
            match bodies.get(body) {
                None => {
                    return Err(self.error(
                        &at,
                        format!("the scene has {} bodies, no body {body}", bodies.len()),
                    ));
                }
                Some(b) if b.is_static => {
                    return Err(self.error(&at, format!("body {body} is static")));
                }
                Some(_) => {}
            }
        }
        self.validate_check(&scene)
    }

    fn validate_check(&self, scene: &Scene) -> Result<(), SceneError> {
        let at = FieldPath::root().field("check");
        let positive = |field: &str, v: f64| -> Result<(), SceneError> {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(self.error(&at.field(field), format!("must be finite and > 0, got {v}")))
            }
        };
        let n_bodies = scene.expand_bodies()?.len();
        let body_ok = |body: usize| -> Result<(), SceneError> {
            if body < n_bodies {
                Ok(())
            } else {
                Err(self.error(
                    &at.field("body"),
                    format!("the scene has {n_bodies} bodies, no body {body}"),
                ))
            }
        };
        let same = |field: &str, stated: f64, actual: f64, what: &str| {
            if (stated - actual).abs() <= 1e-12 * actual.abs().max(1.0) {
                Ok(())
            } else {
                Err(self.error(
                    &at.field(field),
                    format!("{stated} is not the scene's {what} ({actual})"),
                ))
            }
        };
        match &self.check {
            Check::SingleContactEnergy { lambdas, tol } => {
                positive("tol", *tol)?;
                if scene.solver != SolverKind::Etm {
                    return Err(self.error(
                        &FieldPath::root().field("scene"),
                        format!(
                            "SingleContactEnergy needs an ETM scene, got '{}'",
                            scene.solver
                        ),
                    ));
                }
                if lambdas.len() < 2 {
                    return Err(self.error(
                        &at.field("lambdas"),
                        "needs at least two values of λ".into(),
                    ));
                }
                for (i, &l) in lambdas.iter().enumerate() {
                    let ok = l.is_finite() && l >= 1.0 && (i == 0 || l > lambdas[i - 1]);
                    if !ok {
                        return Err(self.error(
                            &at.field("lambdas").index(i),
                            format!("λ must be finite, ≥ 1 and increasing, got {l}"),
                        ));
                    }
                }
            }
            Check::SpinAfterImpact {
                body,
                max_steps,
                quiet_steps,
                expect,
            } => {
                if *quiet_steps == 0 {
                    return Err(self.error(&at.field("quiet_steps"), "must be ≥ 1".into()));
                }
                body_ok(*body)?;
                if *max_steps == 0 {
                    return Err(self.error(&at.field("max_steps"), "must be ≥ 1".into()));
                }
                if expect.is_empty() {
                    return Err(self.error(&at.field("expect"), "needs a solver".into()));
                }
                for (i, b) in expect.iter().enumerate() {
                    let p = at.field("expect").index(i);
                    b.solver
                        .parse::<SolverKind>()
                        .map_err(|m| self.error(&p.field("solver"), m))?;
                    if !(b.min.is_finite() && b.max.is_finite() && 0.0 <= b.min && b.min <= b.max) {
                        return Err(self.error(
                            &p.field("max"),
                            format!("need 0 ≤ min ≤ max, got [{}, {}]", b.min, b.max),
                        ));
                    }
                }
            }
            Check::RollingTime {
                body,
                v0,
                mu,
                g,
                tol_steps,
                tol_speed,
            } => {
                body_ok(*body)?;
                for (field, v) in [
                    ("v0", *v0),
                    ("g", *g),
                    ("tol_steps", *tol_steps),
                    ("tol_speed", *tol_speed),
                ] {
                    positive(field, v)?;
                }
                positive("mu", *mu)?;
                let spec = &scene.expand_bodies()?[*body];
                if !matches!(spec.shape.to_shape(), Ok(Shape::Sphere { .. })) {
                    return Err(self.error(&at.field("body"), "must be a sphere".into()));
                }
                same("v0", *v0, Vec3::from(spec.velocity).norm(), "initial speed")?;
                same("mu", *mu, scene.params.friction, "friction")?;
                same("g", *g, Vec3::from(scene.gravity).norm(), "|gravity|")?;
            }
            Check::PainleveStick { body, tol } => {
                body_ok(*body)?;
                positive("tol", *tol)?;
                if scene.solver != SolverKind::Mdp {
                    return Err(self.error(
                        &FieldPath::root().field("scene"),
                        format!("PainleveStick needs an MDP scene, got '{}'", scene.solver),
                    ));
                }
            }
            Check::ReposeAtRest {
                low_friction,
                high_friction,
                max_time,
            } => {
                positive("max_time", *max_time)?;
                if !(low_friction.is_finite() && *low_friction >= 0.0) {
                    return Err(self.error(
                        &at.field("low_friction"),
                        format!("must be finite and ≥ 0, got {low_friction}"),
                    ));
                }
                if !(high_friction.is_finite() && high_friction > low_friction) {
                    return Err(self.error(
                        &at.field("high_friction"),
                        format!("must be finite and > low_friction, got {high_friction}"),
                    ));
                }
            }
        }
        Ok(())
    }

    fn error(&self, path: &FieldPath, message: String) -> SceneError {
        let (file, at) = match &self.source {
            Some((file, text)) => (file.clone(), SourceMap::new(text).locate(path)),
            None => (format!("<lesson '{}'>", self.title), None),
        };
        SceneError::new(
            file,
            at.map(|a| a.line),
            at.map(|a| a.column),
            path.to_string(),
            SceneErrorKind::Invalid,
            message,
        )
    }

    /// Run the lesson's check headless and return the measured figures.
    pub fn run_check(&self) -> Result<CheckOutcome, LessonError> {
        self.run_check_observed(&mut |_, _| {})
    }

    /// [`Lesson::run_check`], calling `observe` with every world the check steps, at its
    /// step 0 and after each of its steps, until the figure is measured (see
    /// [`Observer`]).
    pub fn run_check_observed(
        &self,
        observe: &mut Observer<'_>,
    ) -> Result<CheckOutcome, LessonError> {
        let scene = self.load_scene()?;
        let steps_of_scene = (scene.duration / scene.dt).ceil().max(1.0) as u64;
        let mut out = CheckOutcome::default();
        match &self.check {
            Check::SingleContactEnergy { lambdas, tol } => {
                single_contact_energy(&scene, lambdas, *tol, steps_of_scene, &mut out, observe)?
            }
            Check::SpinAfterImpact {
                body,
                max_steps,
                quiet_steps,
                expect,
            } => spin_after_impact(
                &scene,
                *body,
                (*max_steps, *quiet_steps),
                expect,
                &mut out,
                observe,
            )?,
            Check::RollingTime {
                body,
                v0,
                mu,
                g,
                tol_steps,
                tol_speed,
            } => rolling_time(
                &scene,
                *body,
                (*v0, *mu, *g),
                (*tol_steps, *tol_speed),
                &mut out,
                observe,
            )?,
            Check::PainleveStick { body, tol } => {
                painleve_stick(&scene, *body, *tol, steps_of_scene, &mut out, observe)?
            }
            Check::ReposeAtRest {
                low_friction,
                high_friction,
                max_time,
            } => repose_at_rest(
                &scene,
                (*low_friction, *high_friction),
                *max_time,
                &mut out,
                observe,
            )?,
        }
        Ok(out)
    }
}

/// What [`Lesson::run_check_observed`] calls with each world a check steps and the
/// world's subject bodies: the dynamic ones (in the repose check, those still in the
/// container: the pile the angle is measured on).
pub type Observer<'a> = dyn FnMut(&World, &[usize]) + 'a;

fn world_of(scene: &Scene) -> Result<World, SceneError> {
    let mut w = scene.build_world()?;
    w.start_ledger();
    Ok(w)
}

/// `observe` the world with its dynamic bodies as subjects.
fn show(w: &World, observe: &mut Observer<'_>) {
    let dynamic: Vec<usize> = (0..w.bodies.len())
        .filter(|&i| !w.bodies[i].is_static())
        .collect();
    observe(w, &dynamic);
}

fn single_contact_energy(
    scene: &Scene,
    lambdas: &[f64],
    tol: f64,
    max_steps: u64,
    out: &mut CheckOutcome,
    observe: &mut Observer<'_>,
) -> Result<(), LessonError> {
    let e = scene.params.restitution;
    let (mut drift, mut peak, mut reversal) = (0.0f64, 0.0f64, 0.0f64);
    let mut counts = Vec::new();
    let mut single = true;
    for &lambda in lambdas {
        let mut s = scene.clone();
        s.params.lambda = lambda;
        let mut w = world_of(&s)?;
        show(&w, observe);
        let mut caught = None;
        for _ in 0..max_steps {
            let r = microscope::record_step(&mut w)?;
            show(&w, observe);
            if r.has_impulse(None) {
                caught = Some(r);
                break;
            }
        }
        let Some(r) = caught else {
            out.push(
                format!("impact within {max_steps} steps (λ = {lambda})"),
                0.0,
                "1".into(),
                false,
            );
            return Ok(());
        };
        single &= r.contacts.len() == 1;
        let sm = &r.summary;
        drift = drift.max(sm.energy_drift_relative);
        // W_mc = K₀ + W₀ − K_mc at maximum compression (eqs. 62-64).
        let drop = sm.kinetic_before + sm.elastic_before
            - sm.kinetic_at_max_compression.unwrap_or(f64::NAN);
        peak = peak.max(((sm.elastic_peak - drop) / sm.elastic_peak).abs());
        let c = &r.contacts[0];
        reversal = reversal.max(
            ((c.normal_velocity_after + e * c.normal_velocity_before) / c.normal_velocity_before)
                .abs(),
        );
        counts.push(sm.compression_iterations);
    }
    out.push(
        "contacts in the impact (every λ)",
        if single { 1.0 } else { 0.0 },
        "1".into(),
        single,
    );
    out.push(
        "max |(K+W) − K0| / K0 over iterations (eq. 69)",
        drift,
        format!("≤ {tol:e}"),
        drift <= tol,
    );
    out.push(
        "|W_peak − (K0 − K_mc)| / W_peak (eqs. 62-64)",
        peak,
        format!("≤ {tol:e}"),
        peak <= tol,
    );
    out.push(
        format!("|u_n⁺ + e u_n⁻| / |u_n⁻| (e = {e})"),
        reversal,
        format!("≤ {tol:e}"),
        reversal <= tol,
    );
    let grows = counts.windows(2).all(|p| p[1] > p[0]);
    for (l, n) in lambdas.iter().zip(&counts) {
        out.push(
            format!("compression iterations at λ = {l}"),
            *n as f64,
            "grows with λ".into(),
            grows,
        );
    }
    Ok(())
}

fn spin_after_impact(
    scene: &Scene,
    body: usize,
    (max_steps, quiet_steps): (u64, u64),
    expect: &[SpinBound],
    out: &mut CheckOutcome,
    observe: &mut Observer<'_>,
) -> Result<(), LessonError> {
    for b in expect {
        let kind: SolverKind = b.solver.parse().expect("validated");
        let mut s = scene.clone();
        s.solver = kind;
        let mut w = world_of(&s)?;
        show(&w, observe);
        let mut found = None;
        for _ in 0..max_steps {
            let v_before = w.bodies[body].velocity.norm();
            let r = microscope::record_step(&mut w)?;
            show(&w, observe);
            if r.has_impulse(Some(body)) {
                // The landing may take several impacts (SQM leaves the box spinning and
                // a corner hits again a few steps later): step on until the body has
                // gone `quiet_steps` steps without an impulse.
                let mut quiet = 0;
                for _ in 0..max_steps {
                    if quiet >= quiet_steps {
                        break;
                    }
                    let hit = microscope::record_step(&mut w)?.has_impulse(Some(body));
                    show(&w, observe);
                    if hit {
                        quiet = 0;
                    } else {
                        quiet += 1;
                    }
                }
                found = Some(w.bodies[body].angular_velocity.norm() / v_before);
                break;
            }
        }
        let name = format!("{kind}: ξ_ω = |ω⁺|/|v⁻| of body {body}");
        match found {
            Some(xi) => out.push(
                name,
                xi,
                format!("in [{:e}, {:e}]", b.min, b.max),
                (b.min..=b.max).contains(&xi),
            ),
            None => out.push(
                name,
                f64::NAN,
                format!("an impact within {max_steps} steps"),
                false,
            ),
        }
    }
    Ok(())
}

fn rolling_time(
    scene: &Scene,
    body: usize,
    (v0, mu, g): (f64, f64, f64),
    (tol_steps, tol_speed): (f64, f64),
    out: &mut CheckOutcome,
    observe: &mut Observer<'_>,
) -> Result<(), LessonError> {
    let mut w = world_of(scene)?;
    show(&w, observe);
    let h = w.dt;
    let Shape::Sphere { radius } = w.bodies[body].shape else {
        unreachable!("validated: a sphere")
    };
    let down = w.gravity.normalize();
    // While sliding, friction μ m g changes the slip s = v + ω × (R down) by
    // (1/m + R²/I) μ m g = (7/2) μ g per second (I = 2/5 m R²).
    let decrement = 3.5 * mu * g * h;
    let t_exact = 2.0 * v0 / (7.0 * mu * g);
    let steps = (t_exact / h).ceil() as u64 + 200;
    let mut onset = None;
    let mut speeds = Vec::with_capacity(steps as usize);
    for _ in 0..steps {
        w.step()?;
        show(&w, observe);
        let b = &w.bodies[body];
        let slip = b.velocity + b.angular_velocity.cross(&(radius * down));
        if onset.is_none() && slip.norm() < decrement {
            onset = Some(w.time);
        }
        speeds.push(b.velocity.norm());
    }
    let onset = onset.unwrap_or(f64::NAN);
    let n = speeds.len();
    let speed = 0.5 * (speeds[n - 1] + speeds[n - 2]);
    let v_roll = 5.0 * v0 / 7.0;
    out.push(
        "time to rolling (s)",
        onset,
        format!("2V0/(7μg) = {t_exact:.4} ± {tol_steps} steps"),
        (onset - t_exact).abs() <= tol_steps * h + 1e-12,
    );
    let err = (speed - v_roll).abs() / v_roll;
    out.push(
        "rolling speed (m/s)",
        speed,
        format!("5V0/7 = {v_roll:.6} ± {tol_speed:e} rel."),
        err <= tol_speed,
    );
    Ok(())
}

fn painleve_stick(
    scene: &Scene,
    body: usize,
    tol: f64,
    max_steps: u64,
    out: &mut CheckOutcome,
    observe: &mut Observer<'_>,
) -> Result<(), LessonError> {
    let mut w = world_of(scene)?;
    show(&w, observe);
    let mu = w.params.friction;
    let mut found = None;
    for _ in 0..max_steps {
        // The rod at the start of the step; after the velocity kick (gravity, no torque)
        // its velocity is v + h g: the pre-impulse state b is taken from there.
        let mut rod = w.bodies[body].clone();
        rod.velocity += w.dt * w.gravity;
        let r = microscope::record_step(&mut w)?;
        show(&w, observe);
        if r.has_impulse(Some(body)) {
            found = Some((r, rod));
            break;
        }
    }
    let Some((r, rod)) = found else {
        out.push(
            "impact of the rod",
            0.0,
            format!("within {max_steps} steps"),
            false,
        );
        return Ok(());
    };
    out.push(
        "contacts in the rod's impact",
        r.contacts.len() as f64,
        "1 (the tip)".into(),
        r.contacts.len() == 1,
    );
    let c = &r.contacts[0];
    // Impulses and normals are recorded for body a; look from the rod.
    let sign = if c.a == body { 1.0 } else { -1.0 };
    let arm = c.point - rod.position;
    let b = rod.velocity + rod.angular_velocity.cross(&arm);
    // Delassus matrix of the contact: D = m⁻¹ 1 − r̃ I⁻¹ r̃ (paper 003, eq. 2).
    let rx = arm.cross_matrix();
    let d = Mat3::identity() * rod.inv_mass - rx * rod.inv_inertia_world() * rx;
    let lambda_exact = -d.try_inverse().expect("D is positive definite") * b;
    let lambda = sign * r.total_impulses()[0];
    let n = c.normal * sign;
    let (ln, lt) = (lambda.dot(&n), (lambda - lambda.dot(&n) * n).norm());
    let sticking = r.rows.iter().filter(|row| row.stage == "sticking").count();
    out.push(
        "rows in the sticking branch / rows",
        sticking as f64 / r.rows.len().max(1) as f64,
        "1".into(),
        sticking == r.rows.len() && sticking > 0,
    );
    let err = (lambda - lambda_exact).norm() / lambda_exact.norm();
    out.push(
        "|λ − (−D⁻¹b)| / |λ| (sticking impulse)",
        err,
        format!("≤ {tol:e}"),
        err <= tol,
    );
    let u_after = (b + d * lambda).norm() / b.norm();
    out.push(
        "|u⁺| / |u⁻| at the tip (slip stops)",
        u_after,
        format!("≤ {tol:e}"),
        u_after <= tol,
    );
    out.push(
        "|λ_t| / λ_n",
        lt / ln,
        format!("≤ μ = {mu}"),
        ln > 0.0 && lt <= mu * ln,
    );
    // Paradox threshold of the 2-D rod: lever arm (r_x, r_z) in the plane of the slide.
    let q = rod.inertia_world();
    let horizontal = Vec3::new(arm.x, arm.y, 0.0).norm();
    let axis = Vec3::new(-arm.y, arm.x, 0.0).normalize();
    let i_over_m = (axis.transpose() * q * axis)[0] / rod.mass;
    let threshold = (i_over_m + horizontal * horizontal) / (horizontal * arm.z.abs());
    out.push(
        "paradox threshold (I/m + r_x²)/(r_x r_z)",
        threshold,
        format!("< μ = {mu} (slender rod: 4/3)"),
        threshold < mu,
    );
    Ok(())
}

fn repose_at_rest(
    scene: &Scene,
    (low, high): (f64, f64),
    max_time: f64,
    out: &mut CheckOutcome,
    observe: &mut Observer<'_>,
) -> Result<(), LessonError> {
    let mut angles = Vec::new();
    for mu in [low, high] {
        let mut s = scene.clone();
        s.params.friction = mu;
        let world = world_of(&s)?;
        let config = ReposeConfig {
            max_time,
            ..ReposeConfig::for_scene(&s)
        };
        let rest = format!(
            "K/ΔU < {:e} for {} s within {max_time} s",
            config.ke_ratio, config.hold
        );
        let mut exp = ReposeExperiment::new(world, config)?;
        let pile = |e: &ReposeExperiment| -> Vec<usize> {
            (0..e.world.bodies.len())
                .filter(|&i| !e.world.bodies[i].is_static() && !e.is_lost(i))
                .collect()
        };
        observe(&exp.world, &pile(&exp));
        let r = exp.run(|e| observe(&e.world, &pile(e)))?;
        for (phase, report) in [("packing", &r.packing), ("slumping", &r.slumping)] {
            out.push(
                format!("{phase} at μ = {mu}: time to rest (s)"),
                report.duration,
                rest.clone(),
                report.settled,
            );
        }
        let m = &r.measurement;
        let settled = r.packing.settled && r.slumping.settled;
        out.push(
            format!("angle of repose at μ = {mu} (deg)"),
            m.angle_deg,
            format!("± {:.2}° (ε), at rest", m.error_deg),
            m.angle_deg.is_finite() && settled,
        );
        out.push(
            format!("error bar ε at μ = {mu} (deg, row spread / 2)"),
            m.error_deg,
            "finite".into(),
            m.error_deg.is_finite(),
        );
        angles.push((m.angle_deg, m.error_deg));
    }
    let ((lo, e_lo), (hi, e_hi)) = (angles[0], angles[1]);
    let bars = e_lo + e_hi;
    out.push(
        format!("θ(μ = {high}) − θ(μ = {low}) (deg)"),
        hi - lo,
        format!("> ε sum = {bars:.2}°"),
        hi - lo > bars,
    );
    Ok(())
}
