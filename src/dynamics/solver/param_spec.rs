//! The one table of the tunable solver parameters ([`SolverParams`]' fields): each
//! field's symbol, unit, valid range, the Solver panel's slider range and a one-line
//! meaning. [`SolverParams::problems`] validates against it, `impulse-lab run --help`
//! prints it ([`help_table`]), `run --set FIELD=VALUE` sets any of its numeric fields, and
//! the app's Solver panel draws its sliders from it; tests/params.rs checks that these
//! and docs/scene-format.md list the same fields with the same units and ranges.

use super::{MAX_CONTACT_SWEEPS, MAX_ITERATIONS, MAX_LAMBDA, Param, SolverParams};

/// One end of a real parameter's valid range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// The value itself is allowed.
    Closed(f64),
    /// Only values strictly inside.
    Open(f64),
    /// No bound on this side (the value must still be finite).
    Unbounded,
}

/// The values a parameter takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Domain {
    /// A finite real number between two bounds.
    Real { min: Bound, max: Bound },
    /// An integer in `min..=max`.
    Count { min: u32, max: u32 },
    /// On or off.
    Switch,
    /// One of the named variants (as a scene file writes them).
    Choice(&'static [&'static str]),
}

/// The Solver panel's slider for a numeric parameter: its range (inside the valid one)
/// and whether it is logarithmic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slider {
    pub min: f64,
    pub max: f64,
    pub log: bool,
}

/// One tunable field of [`SolverParams`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParamSpec {
    /// The field's name in [`SolverParams`], scene files (`params: (...)`) and
    /// `run --set`.
    pub field: &'static str,
    /// Its name in words as the panel labels it, before the symbol ("" when the symbol
    /// says it all).
    pub name: &'static str,
    /// The [`Param`] that names it to the methods' capability lists; `None` for the soft
    /// resting model's settings, which only scene files and `run --set` change.
    pub param: Option<Param>,
    /// Its mathematical symbol ("" when the field name is all there is).
    pub symbol: &'static str,
    /// Its SI unit ("" for a dimensionless number, a switch or a choice).
    pub unit: &'static str,
    pub domain: Domain,
    /// `None`: not a slider (a switch, a choice or a scene-file-only setting).
    pub slider: Option<Slider>,
    /// What it does, in one line.
    pub summary: &'static str,
}

const fn real(min: Bound, max: Bound) -> Domain {
    Domain::Real { min, max }
}

const fn slider(min: f64, max: f64) -> Option<Slider> {
    Some(Slider {
        min,
        max,
        log: false,
    })
}

const fn log_slider(min: f64, max: f64) -> Option<Slider> {
    Some(Slider {
        min,
        max,
        log: true,
    })
}

use Bound::{Closed, Open, Unbounded};

/// Every tunable field of [`SolverParams`], in the order of its fields.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        field: "restitution",
        name: "restitution",
        param: Some(Param::Restitution),
        symbol: "e",
        unit: "",
        domain: real(Closed(0.0), Closed(1.0)),
        slider: slider(0.0, 1.0),
        summary: "coefficient of restitution (Newton's for jolt, SQM, SMM; Stronge's energetic one for ETM, paper 000 eq. 65)",
    },
    ParamSpec {
        field: "friction",
        name: "friction",
        param: Some(Param::Friction),
        symbol: "μ",
        unit: "",
        domain: real(Closed(0.0), Unbounded),
        slider: slider(0.0, 1.5),
        summary: "Coulomb friction coefficient: tangential impulse at most μ times the normal one",
    },
    ParamSpec {
        field: "lambda",
        name: "",
        param: Some(Param::Lambda),
        symbol: "λ",
        unit: "",
        domain: real(Closed(1.0), Closed(MAX_LAMBDA)),
        slider: log_slider(1.0, 500.0),
        summary: "ETM's increments in which stored elastic energy is released (paper 000 eq. 62)",
    },
    ParamSpec {
        field: "kp",
        name: "",
        param: Some(Param::Kp),
        symbol: "k_p",
        unit: "",
        domain: real(Closed(0.0), Closed(1.0)),
        slider: slider(0.0, 1.0),
        summary: "position-projection factor: fraction of an overlap removed per step, stable below 0.5 (paper 001 eqs. 5.27, B.22)",
    },
    ParamSpec {
        field: "max_iterations",
        name: "iterations",
        param: Some(Param::MaxIterations),
        symbol: "",
        unit: "sweeps",
        domain: Domain::Count {
            min: 1,
            max: MAX_ITERATIONS,
        },
        slider: log_slider(1.0, 1000.0),
        summary: "iteration cap of the iterative methods",
    },
    ParamSpec {
        field: "contact_sweeps",
        name: "contact sweeps",
        param: Some(Param::ContactSweeps),
        symbol: "",
        unit: "sweeps",
        domain: Domain::Count {
            min: 1,
            max: MAX_CONTACT_SWEEPS,
        },
        slider: log_slider(1.0, 1000.0),
        summary: "most Gauss-Seidel sweeps of the shared contact pass per step",
    },
    ParamSpec {
        field: "tolerance",
        name: "tolerance",
        param: Some(Param::Tolerance),
        symbol: "",
        unit: "",
        domain: real(Open(0.0), Unbounded),
        slider: log_slider(1e-12, 1e-2),
        summary: "relative convergence tolerance of the iterations",
    },
    ParamSpec {
        field: "rest_velocity",
        name: "rest velocity",
        param: Some(Param::RestVelocity),
        symbol: "",
        unit: "m/s",
        domain: real(Closed(0.0), Unbounded),
        slider: slider(0.0, 1.0),
        summary: "approach speeds up to this are resting contact: no restitution, left to the contact pass",
    },
    ParamSpec {
        field: "contact_pass",
        name: "contact pass",
        param: Some(Param::ContactPass),
        symbol: "",
        unit: "",
        domain: Domain::Switch,
        slider: None,
        summary: "run the shared contact pass after the method (piles come to rest)",
    },
    ParamSpec {
        field: "cohesion",
        name: "cohesion",
        param: Some(Param::Cohesion),
        symbol: "c",
        unit: "N",
        domain: real(Closed(0.0), Unbounded),
        slider: slider(0.0, 1000.0),
        summary: "CCP: inner cohesion; shear limit μ p_n + c (paper 002 eqs. 31, 57)",
    },
    ParamSpec {
        field: "equivalent_friction",
        name: "equivalent friction",
        param: Some(Param::EquivalentFriction),
        symbol: "μ*",
        unit: "",
        domain: real(Closed(0.0), Unbounded),
        slider: slider(0.0, 1.5),
        summary: "CCP: when > 0 the shear limit is μ* p_n (paper 002 eq. 40); 0 derives it from μ and c",
    },
    ParamSpec {
        field: "ccp_omega",
        name: "relaxation",
        param: Some(Param::CcpOmega),
        symbol: "ω",
        unit: "",
        domain: real(Open(0.0), Open(2.0)),
        slider: slider(0.01, 1.99),
        summary: "CCP: relaxation of the fixed-point step (paper 002 eq. 52)",
    },
    ParamSpec {
        field: "ccp_tau",
        name: "relaxation",
        param: Some(Param::CcpTau),
        symbol: "τ",
        unit: "",
        domain: real(Open(0.0), Closed(1.0)),
        slider: slider(0.01, 1.0),
        summary: "CCP: relaxation of the update (paper 002 eq. 52)",
    },
    ParamSpec {
        field: "mdp_friction",
        name: "friction law",
        param: Some(Param::MdpFriction),
        symbol: "",
        unit: "",
        domain: Domain::Choice(&["MaximumDissipation", "Coulomb"]),
        slider: None,
        summary: "MDP's impulsive friction law (paper 003 eq. 5, or Coulomb's for comparison)",
    },
    ParamSpec {
        field: "error_reduction",
        name: "error reduction",
        param: Some(Param::ErrorReduction),
        symbol: "ε",
        unit: "",
        domain: real(Closed(0.0), Closed(1.0)),
        slider: slider(0.0, 1.0),
        summary: "MDP: fraction of an overlap closed per step (paper 003 §3.1)",
    },
    ParamSpec {
        field: "rolling_friction",
        name: "rolling resistance",
        param: Some(Param::RollingFriction),
        symbol: "μ_r",
        unit: "m",
        domain: real(Closed(0.0), Unbounded),
        slider: slider(0.0, 0.1),
        summary: "rolling resistance: torque up to μ_r times the normal force (contact pass)",
    },
    ParamSpec {
        field: "spinning_friction",
        name: "spinning friction",
        param: Some(Param::SpinningFriction),
        symbol: "μ_s",
        unit: "m",
        domain: real(Closed(0.0), Unbounded),
        slider: slider(0.0, 0.1),
        summary: "spinning friction: torque about the normal up to μ_s times the normal force (contact pass)",
    },
    ParamSpec {
        field: "resting_model",
        name: "resting contacts",
        param: Some(Param::RestingModel),
        symbol: "",
        unit: "",
        domain: Domain::Choice(&["Hard", "Soft"]),
        slider: None,
        summary: "how the contact pass holds resting contacts (Soft needs rest_velocity > 0)",
    },
    ParamSpec {
        field: "contact_hertz",
        name: "contact frequency",
        param: None,
        symbol: "f",
        unit: "Hz",
        domain: real(Open(0.0), Unbounded),
        slider: None,
        summary: "Soft: the contacts' natural frequency, capped at 1/(4 dt)",
    },
    ParamSpec {
        field: "contact_damping_ratio",
        name: "contact damping ratio",
        param: None,
        symbol: "ζ",
        unit: "",
        domain: real(Closed(0.0), Unbounded),
        slider: None,
        summary: "Soft: the contacts' damping ratio",
    },
    ParamSpec {
        field: "contact_push_speed",
        name: "push speed",
        param: None,
        symbol: "",
        unit: "m/s",
        domain: real(Open(0.0), Unbounded),
        slider: None,
        summary: "Soft: fastest speed at which the bias pushes overlapping bodies apart",
    },
];

impl ParamSpec {
    /// The panel's label: name, symbol and SI unit, e.g. "restitution e",
    /// "rest velocity (m/s)", "rolling resistance μ_r (m)", "λ", "iterations".
    pub fn label(&self) -> String {
        let mut label = [self.name, self.symbol]
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if !self.unit.is_empty() && !matches!(self.domain, Domain::Count { .. }) {
            label = format!("{label} ({})", self.unit);
        }
        label
    }
}

/// The spec of the field named `field`, if it is one.
pub fn spec(field: &str) -> Option<&'static ParamSpec> {
    PARAMS.iter().find(|s| s.field == field)
}

impl Param {
    /// This parameter's row of [`PARAMS`].
    pub fn spec(self) -> &'static ParamSpec {
        PARAMS
            .iter()
            .find(|s| s.param == Some(self))
            .expect("every Param has a row in PARAMS")
    }
}

/// A number as people write it: 1e4 rather than 10000, 1e-8 rather than 0.00000001.
fn number(v: f64) -> String {
    if v.abs() >= 1e4 || (v != 0.0 && v.abs() < 1e-3) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

impl Bound {
    /// (whether the value itself is allowed, the value); `None` for no bound.
    fn end(self) -> Option<(bool, f64)> {
        match self {
            Closed(x) => Some((true, x)),
            Open(x) => Some((false, x)),
            Unbounded => None,
        }
    }
}

impl Domain {
    /// Whether `v` lies in the domain (a count or a switch as a number: an integer in
    /// range, or 0 and 1).
    pub fn contains(&self, v: f64) -> bool {
        if !v.is_finite() {
            return false;
        }
        match *self {
            Domain::Real { min, max } => {
                let above = min
                    .end()
                    .is_none_or(|(closed, m)| if closed { v >= m } else { v > m });
                let below = max
                    .end()
                    .is_none_or(|(closed, m)| if closed { v <= m } else { v < m });
                above && below
            }
            Domain::Count { min, max } => {
                v.fract() == 0.0 && v >= f64::from(min) && v <= f64::from(max)
            }
            Domain::Switch => v == 0.0 || v == 1.0,
            Domain::Choice(_) => false,
        }
    }

    /// The domain in words: "in [0, 1]", "≥ 0", "> 0", "in (0, 2)", "an integer in
    /// [1, 1e5]", "true or false", "Hard or Soft".
    pub fn text(&self) -> String {
        match *self {
            Domain::Real { min, max } => match (min.end(), max.end()) {
                (None, None) => "finite".to_string(),
                (Some((closed, a)), None) => {
                    format!("{} {}", if closed { "≥" } else { ">" }, number(a))
                }
                (None, Some((closed, b))) => {
                    format!("{} {}", if closed { "≤" } else { "<" }, number(b))
                }
                (Some((ca, a)), Some((cb, b))) => format!(
                    "in {}{}, {}{}",
                    if ca { '[' } else { '(' },
                    number(a),
                    number(b),
                    if cb { ']' } else { ')' }
                ),
            },
            Domain::Count { min, max } => format!(
                "an integer in [{}, {}]",
                number(f64::from(min)),
                number(f64::from(max))
            ),
            Domain::Switch => "true or false".to_string(),
            Domain::Choice(names) => names.join(" or "),
        }
    }
}

impl SolverParams {
    /// The numeric value of `field` (a switch as 0 or 1); `None` for a choice or an
    /// unknown name.
    pub fn value(&self, field: &str) -> Option<f64> {
        Some(match field {
            "restitution" => self.restitution,
            "friction" => self.friction,
            "lambda" => self.lambda,
            "kp" => self.kp,
            "max_iterations" => f64::from(self.max_iterations),
            "contact_sweeps" => f64::from(self.contact_sweeps),
            "tolerance" => self.tolerance,
            "rest_velocity" => self.rest_velocity,
            "contact_pass" => f64::from(u8::from(self.contact_pass)),
            "cohesion" => self.cohesion,
            "equivalent_friction" => self.equivalent_friction,
            "ccp_omega" => self.ccp_omega,
            "ccp_tau" => self.ccp_tau,
            "error_reduction" => self.error_reduction,
            "rolling_friction" => self.rolling_friction,
            "spinning_friction" => self.spinning_friction,
            "contact_hertz" => self.contact_hertz,
            "contact_damping_ratio" => self.contact_damping_ratio,
            "contact_push_speed" => self.contact_push_speed,
            _ => return None,
        })
    }

    /// Set `field` from its text as a scene file or `run --set` writes it ("0.3",
    /// "100", "true", "Soft"). The value is checked against the field's domain; the
    /// error names the field, its domain and the value.
    pub fn set(&mut self, field: &str, text: &str) -> Result<(), String> {
        let spec = spec(field).ok_or_else(|| {
            let known: Vec<&str> = PARAMS.iter().map(|s| s.field).collect();
            format!(
                "unknown parameter '{field}'; the parameters are {}",
                known.join(", ")
            )
        })?;
        let text = text.trim();
        let bad = || format!("{field} must be {}, got '{text}'", spec.domain.text());
        match spec.domain {
            Domain::Choice(_) => match (field, text) {
                ("mdp_friction", "MaximumDissipation") => {
                    self.mdp_friction = super::mdp::FrictionLaw::MaximumDissipation;
                }
                ("mdp_friction", "Coulomb") => self.mdp_friction = super::mdp::FrictionLaw::Coulomb,
                ("resting_model", "Hard") => self.resting_model = super::RestingModel::Hard,
                ("resting_model", "Soft") => self.resting_model = super::RestingModel::Soft,
                _ => return Err(bad()),
            },
            Domain::Switch => match text {
                "true" => self.contact_pass = true,
                "false" => self.contact_pass = false,
                _ => return Err(bad()),
            },
            Domain::Count { .. } | Domain::Real { .. } => {
                let v: f64 = text.parse().map_err(|_| bad())?;
                if !spec.domain.contains(v) {
                    return Err(bad());
                }
                match field {
                    // A count in its domain is an integer ≤ u32::MAX.
                    "max_iterations" => self.max_iterations = v as u32,
                    "contact_sweeps" => self.contact_sweeps = v as u32,
                    "restitution" => self.restitution = v,
                    "friction" => self.friction = v,
                    "lambda" => self.lambda = v,
                    "kp" => self.kp = v,
                    "tolerance" => self.tolerance = v,
                    "rest_velocity" => self.rest_velocity = v,
                    "cohesion" => self.cohesion = v,
                    "equivalent_friction" => self.equivalent_friction = v,
                    "ccp_omega" => self.ccp_omega = v,
                    "ccp_tau" => self.ccp_tau = v,
                    "error_reduction" => self.error_reduction = v,
                    "rolling_friction" => self.rolling_friction = v,
                    "spinning_friction" => self.spinning_friction = v,
                    "contact_hertz" => self.contact_hertz = v,
                    "contact_damping_ratio" => self.contact_damping_ratio = v,
                    "contact_push_speed" => self.contact_push_speed = v,
                    _ => unreachable!("every numeric row of PARAMS is set above"),
                }
            }
        }
        Ok(())
    }

    /// The value of `field` as a scene file writes it.
    pub fn text(&self, field: &str) -> Option<String> {
        match field {
            "mdp_friction" => Some(format!("{:?}", self.mdp_friction)),
            "resting_model" => Some(format!("{:?}", self.resting_model)),
            "contact_pass" => Some(self.contact_pass.to_string()),
            _ => self.value(field).map(number),
        }
    }
}

/// The parameter table as `impulse-lab run --help` prints it: field, unit, domain,
/// default and meaning, one parameter per line.
pub fn help_table() -> String {
    let defaults = SolverParams::default();
    let mut out = String::from(
        "Solver parameters (set any with --set FIELD=VALUE, or in the scene's params): \
         field, symbol, [unit; - for a pure number], valid values, default, meaning.\n",
    );
    for s in PARAMS {
        let unit = if s.unit.is_empty() { "-" } else { s.unit };
        let symbol = if s.symbol.is_empty() {
            String::new()
        } else {
            format!(" {}", s.symbol)
        };
        out.push_str(&format!(
            "  {}{symbol} [{unit}] {}; default {}: {}\n",
            s.field,
            s.domain.text(),
            defaults.text(s.field).unwrap_or_default(),
            s.summary
        ));
    }
    out
}
