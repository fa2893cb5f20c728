//! Energy bookkeeping: what the system holds, what left it, and what nobody explains.
//!
//! Every step the world records an [`EnergySample`]:
//! - `total = kinetic + potential + elastic`, with `potential = −Σ mᵢ g·xᵢ` against the
//!   scene's gravity vector;
//! - cumulative *explained* changes: `external_work` (applied forces other than gravity),
//!   `dissipated_restitution` and `dissipated_friction` (reported by the solver, from the
//!   normal and tangential parts of its impulses), `integration`, the energy change
//!   caused by the time discretisation of the free flight (semi-implicit Euler gains
//!   −½ m|g|²h² per free-flight step; explicit gyroscopic terms change rotational energy),
//!   and `projection`, the energy the position projection adds by moving overlapping
//!   bodies apart without forces (its potential change and the spin change that keeps
//!   angular momentum, `dynamics::contact_pass`);
//! - `residual = (total − total₀) − (external_work − dissipated_restitution −
//!   dissipated_friction + integration + projection)`: the artificial energy the
//!   *solver* created (> 0) or destroyed (< 0) that none of these explains, e.g. by
//!   inexact iterations.

use serde::{Deserialize, Serialize};

/// One row of the energy trace (all energies in J, cumulative quantities since step 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct EnergySample {
    pub step: u64,
    pub time: f64,
    pub kinetic: f64,
    pub kinetic_translational: f64,
    pub kinetic_rotational: f64,
    pub potential: f64,
    pub elastic: f64,
    pub dissipated_restitution: f64,
    pub dissipated_friction: f64,
    pub external_work: f64,
    pub integration: f64,
    pub projection: f64,
    pub total: f64,
    pub residual: f64,
    pub contacts: usize,
}

/// Running totals behind the samples (J). A saved state carries them as its `ledger`
/// (`scene::resume`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename = "Ledger", deny_unknown_fields)]
pub struct EnergyLedger {
    /// Total energy at step 0 (reference for the residual).
    pub initial_total: f64,
    pub dissipated_restitution: f64,
    pub dissipated_friction: f64,
    pub external_work: f64,
    pub integration: f64,
    pub projection: f64,
}

/// Instantaneous energies of a state (J).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StateEnergy {
    pub kinetic_translational: f64,
    pub kinetic_rotational: f64,
    pub potential: f64,
    pub elastic: f64,
}

impl StateEnergy {
    pub fn total(&self) -> f64 {
        self.kinetic_translational + self.kinetic_rotational + self.potential + self.elastic
    }
}

impl EnergyLedger {
    /// Build the sample for a state with energies `e` and `contacts` contacts.
    pub fn sample(&self, step: u64, time: f64, e: StateEnergy, contacts: usize) -> EnergySample {
        let total = e.total();
        let explained = self.external_work - self.dissipated_restitution - self.dissipated_friction
            + self.integration
            + self.projection;
        EnergySample {
            step,
            time,
            kinetic: e.kinetic_translational + e.kinetic_rotational,
            kinetic_translational: e.kinetic_translational,
            kinetic_rotational: e.kinetic_rotational,
            potential: e.potential,
            elastic: e.elastic,
            dissipated_restitution: self.dissipated_restitution,
            dissipated_friction: self.dissipated_friction,
            external_work: self.external_work,
            integration: self.integration,
            projection: self.projection,
            total,
            residual: (total - self.initial_total) - explained,
            contacts,
        }
    }
}
