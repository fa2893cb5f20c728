//! One contact of the velocity pass: its prepared data, accumulated impulses and the
//! projected Gauss-Seidel update (steps 3-5 of the `contact_pass` module doc).

use super::friction::TangentMetric;
use super::{MANIFOLD_POINTS, NO_SLOT};
use crate::body::RigidBody;
use crate::collision::Contact;
use crate::dynamics::solver::prepared::{PreparedContact, collision_matrix};
use crate::dynamics::solver::{SolverParams, SolverReport};
use crate::dynamics::warm_start::PointImpulse;
use crate::math::{Mat3, Vec3};

/// One contact point of the pass as the sweeps read it: its frame, lever arms, masses,
/// the products of K a sweep needs, and its accumulated impulses. Nothing in it refers
/// to a body: a sweep reads the rows front to back and the bodies' velocities by slot.
/// What the pass reads once per pass (the bodies, the gap, the velocities at the
/// start) is the row's [`RowCold`], in an array of its own.
///
/// Laid out in declaration order (`repr(C)`): the fields every update reads
/// ([`Row::update`], [`Row::kick`]) first, then K (read by a manifold's weight), then
/// those of the friction cone's edge and of rolling and spinning resistance.
#[derive(Clone)]
#[repr(C)]
pub(super) struct Row {
    /// The contact normal n (from b to a) and tangents t₁, t₂.
    pub(super) n: Vec3,
    pub(super) t1: Vec3,
    pub(super) t2: Vec3,
    /// Lever arms from each body's centre of mass to the contact point.
    pub(super) r_a: Vec3,
    pub(super) r_b: Vec3,
    pub(super) inv_mass_a: f64,
    pub(super) inv_mass_b: f64,
    /// 1/(nᵀKn), 0 if the contact cannot take an impulse.
    pub(super) normal_mass: f64,
    /// nᵀKn: the change of u_n per unit normal impulse.
    pub(super) k_nn: f64,
    /// The normal velocity the update targets while it pushes: 0, or −gap/h for a
    /// speculative contact (gap > 0), which may close its gap within the step.
    pub(super) floor: f64,
    /// The soft contact's scales of the normal update (Catto's soft step, see
    /// `ContactPass::solve_soft`): Δλ_n = m_s (1/(nᵀKn)) (floor − u_n) − i_s λ_n. A hard
    /// contact has m_s = 1, i_s = 0.
    pub(super) mass_scale: f64,
    pub(super) impulse_scale: f64,
    pub(super) lambda_n: f64,
    pub(super) lambda_t: nalgebra::Vector2<f64>,
    /// K_tt⁻¹ (K_tt the tangent-plane block of K in (t₁, t₂)), if invertible.
    pub(super) tangent_mass: Option<nalgebra::Matrix2<f64>>,
    /// K t₁, K t₂ and (t₁·Kn, t₂·Kn), so that an update does no 3 × 3 product (Box2D
    /// keeps its rows' effective masses the same way).
    pub(super) k_t: [Vec3; 2],
    pub(super) kn_t: nalgebra::Vector2<f64>,
    /// I⁻¹ (r × d) of side a and of side b for d = n, t₁, t₂: the change of ω per unit
    /// impulse along d (zero for a static or frozen side).
    pub(super) turn_a: [Vec3; 3],
    pub(super) turn_b: [Vec3; 3],
    /// The sweeps' velocity slots of side a and side b (`ContactPass::vel`; `NO_SLOT`
    /// for a static body or a container).
    pub(super) slots: [u32; 2],
    /// Whether side b is a body (not a container).
    pub(super) two_sided: bool,
    /// Whether the contact takes part (it approached, or was warm started).
    pub(super) started: bool,
    /// Collision matrix K: u⁺ = u⁻ + K P for an impulse P on a (−P on b).
    pub(super) k: Mat3,
    /// The multiplier γ of the last friction update that met the cone's edge
    /// ([`TangentMetric::nearest_in_disk`]), where the next one starts.
    pub(super) gamma: f64,
    /// K_tt as its eigen-decomposition (the metric of the friction disk), computed when
    /// the cone first binds ([`Row::metric`]).
    pub(super) tangent_metric: Option<TangentMetric>,
    /// Accumulated spinning (about n) and rolling (tangent plane) angular impulses.
    pub(super) spin: f64,
    pub(super) roll: Vec3,
}

/// What the pass reads of a row once per pass, outside the sweeps: the contact's bodies,
/// its gap, and the relative velocity and relative angular velocity ω_a − ω_b at the
/// start of the pass (for [`ContactPass::book_net_work`](super::ContactPass)).
#[derive(Clone, Default)]
pub(super) struct RowCold {
    pub(super) a: usize,
    pub(super) b: Option<usize>,
    pub(super) gap: f64,
    pub(super) u_start: Vec3,
    pub(super) w_start: Vec3,
}

/// A shock-propagation row (`ContactPass::shock_row`): the row of a contact whose
/// lower-level side is frozen (left out of K), its prepared contact, through which it
/// applies and books each impulse, and (body, lever arm, sign of P on it) of the single
/// moving side, if one is frozen.
pub(super) struct ShockRow {
    pub(super) row: Row,
    pub(super) p: PreparedContact,
    pub(super) moving: Option<(usize, Vec3, f64)>,
}

impl Default for Row {
    /// A row of no contact (zero masses), to be overwritten by [`Row::build`].
    fn default() -> Self {
        let z = Vec3::zeros();
        Row::with_k(
            [z; 3],
            [z; 2],
            [0.0; 2],
            [&Mat3::zeros(); 2],
            Mat3::zeros(),
            0.0,
            false,
            1.0,
        )
    }
}

impl AsRef<Row> for Row {
    fn as_ref(&self) -> &Row {
        self
    }
}

impl AsRef<Row> for ShockRow {
    fn as_ref(&self) -> &Row {
        &self.row
    }
}

impl Row {
    /// Write into `row` and `cold` the row of contact `c` with gap `gap` in a step `dt`
    /// and its cold part, from the bodies' world inverse inertias `inertia_a`,
    /// `inertia_b` (zero for a container); its slots are `NO_SLOT` until the caller sets
    /// them. Written in place: a row is built where the sweeps will read it.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn build(
        row: &mut Row,
        cold: &mut RowCold,
        bodies: &[RigidBody],
        c: &Contact,
        gap: f64,
        inertia_a: &Mat3,
        inertia_b: &Mat3,
        dt: f64,
    ) {
        let ba = &bodies[c.a];
        let inv_mass_b = c.b.map_or(0.0, |b| bodies[b].inv_mass);
        let k = collision_matrix(
            ba.inv_mass + inv_mass_b,
            &c.r_a,
            inertia_a,
            &c.r_b,
            inertia_b,
        );
        *row = Row::with_k(
            [c.normal, c.t1, c.t2],
            [c.r_a, c.r_b],
            [ba.inv_mass, inv_mass_b],
            [inertia_a, inertia_b],
            k,
            gap,
            c.b.is_some(),
            dt,
        );
        let ua = ba.velocity + ba.angular_velocity.cross(&c.r_a);
        let (u_start, w_start) = match c.b {
            Some(b) => {
                let bb = &bodies[b];
                (
                    ua - (bb.velocity + bb.angular_velocity.cross(&c.r_b)),
                    ba.angular_velocity - bb.angular_velocity,
                )
            }
            None => (ua, ba.angular_velocity - Vec3::zeros()),
        };
        *cold = RowCold {
            a: c.a,
            b: c.b,
            gap,
            u_start,
            w_start,
        };
    }

    /// The row of prepared contact `p` (whose K may leave a frozen side out) in a step
    /// `dt`.
    pub(super) fn from_prepared(p: &PreparedContact, dt: f64) -> Self {
        Row::with_k(
            [p.n, p.t1, p.t2],
            [p.r_a, p.r_b],
            [p.inv_mass_a, p.inv_mass_b],
            [&p.inv_inertia_a, &p.inv_inertia_b],
            p.k,
            p.gap,
            p.b.is_some(),
            dt,
        )
    }

    /// The row of a contact of frame `[n, t₁, t₂]`, lever arms, inverse masses and world
    /// inverse inertias, collision matrix `k` and gap `gap`: K n, K t₁ and K t₂ are each
    /// formed once, and nᵀKn, K_tt and (t₁·Kn, t₂·Kn) taken from them.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn with_k(
        [n, t1, t2]: [Vec3; 3],
        [r_a, r_b]: [Vec3; 2],
        [inv_mass_a, inv_mass_b]: [f64; 2],
        [inertia_a, inertia_b]: [&Mat3; 2],
        k: Mat3,
        gap: f64,
        two_sided: bool,
        dt: f64,
    ) -> Self {
        let (k_n, k_t1, k_t2) = (k * n, k * t1, k * t2);
        let knn = n.dot(&k_n);
        let ktt =
            nalgebra::Matrix2::new(t1.dot(&k_t1), t1.dot(&k_t2), t2.dot(&k_t1), t2.dot(&k_t2));
        let usable = knn > 0.0 && knn.is_finite();
        let dirs = [n, t1, t2];
        Row {
            n,
            t1,
            t2,
            r_a,
            r_b,
            inv_mass_a,
            inv_mass_b,
            normal_mass: if usable { 1.0 / knn } else { 0.0 },
            k_nn: knn,
            floor: Row::hard_floor(gap, dt),
            mass_scale: 1.0,
            impulse_scale: 0.0,
            lambda_n: 0.0,
            lambda_t: nalgebra::Vector2::zeros(),
            tangent_mass: ktt
                .try_inverse()
                .filter(|m| m.iter().all(|x| x.is_finite())),
            k_t: [k_t1, k_t2],
            kn_t: nalgebra::Vector2::new(t1.dot(&k_n), t2.dot(&k_n)),
            turn_a: dirs.map(|d| inertia_a * r_a.cross(&d)),
            turn_b: dirs.map(|d| inertia_b * r_b.cross(&d)),
            slots: [NO_SLOT; 2],
            two_sided,
            started: false,
            k,
            gamma: 0.0,
            tangent_metric: None,
            spin: 0.0,
            roll: Vec3::zeros(),
        }
    }

    /// The relative velocity of a with respect to b at the contact point (`cold`'s
    /// bodies; b at rest for a container).
    #[inline]
    pub(super) fn relative_velocity(&self, cold: &RowCold, bodies: &[RigidBody]) -> Vec3 {
        let ba = &bodies[cold.a];
        let va = ba.velocity + ba.angular_velocity.cross(&self.r_a);
        match cold.b {
            Some(b) => va - (bodies[b].velocity + bodies[b].angular_velocity.cross(&self.r_b)),
            None => va,
        }
    }

    /// The hard contact's target u_n⁺ for a contact of gap `gap` in a step `dt`: 0, or
    /// −gap/dt for a speculative contact (gap > 0), which may close its gap in the step.
    pub(super) fn hard_floor(gap: f64, dt: f64) -> f64 {
        if gap > 0.0 { -gap / dt } else { 0.0 }
    }

    /// The friction disk's metric ([`TangentMetric`] of K_tt), computed on first use:
    /// K_tt = [[t₁·Kt₁, t₁·Kt₂], [t₂·Kt₁, t₂·Kt₂]] from the row's K t₁, K t₂.
    #[inline]
    fn metric(&mut self) -> TangentMetric {
        let (t1, t2, [kt1, kt2]) = (self.t1, self.t2, self.k_t);
        *self.tangent_metric.get_or_insert_with(|| {
            TangentMetric::new(&nalgebra::Matrix2::new(
                t1.dot(&kt1),
                t1.dot(&kt2),
                t2.dot(&kt1),
                t2.dot(&kt2),
            ))
        })
    }

    /// Forget the accumulated impulses (for a pass that starts again).
    pub(super) fn reset(&mut self) {
        self.started = false;
        self.lambda_n = 0.0;
        self.lambda_t = nalgebra::Vector2::zeros();
        self.spin = 0.0;
        self.roll = Vec3::zeros();
    }

    /// Apply the impulse the same contact (same pair, same features) carried at the end
    /// of the last step, `remembered` (none: a new contact), to the bodies of `cold`
    /// through their world inverse inertias `inertia` (by body).
    pub(super) fn warm_start(
        &mut self,
        bodies: &mut [RigidBody],
        cold: &RowCold,
        inertia: &[Mat3],
        remembered: Option<&PointImpulse>,
        mu: f64,
        report: &mut SolverReport,
    ) {
        if self.normal_mass == 0.0 {
            return;
        }
        let Some(&PointImpulse {
            normal: ln,
            tangent: pt,
        }) = remembered
        else {
            return;
        };
        let mut lt = nalgebra::Vector2::new(pt.dot(&self.t1), pt.dot(&self.t2));
        if mu == 0.0 {
            lt = nalgebra::Vector2::zeros();
        } else if lt.norm() > mu * ln {
            lt *= mu * ln / lt.norm();
        }
        self.started = true;
        self.lambda_n = ln;
        self.lambda_t = lt;
        let impulse = ln * self.n + lt.x * self.t1 + lt.y * self.t2;
        report.impulses += 1;
        let ba = &mut bodies[cold.a];
        ba.velocity += impulse * self.inv_mass_a;
        ba.angular_velocity += inertia[cold.a] * self.r_a.cross(&impulse);
        if let Some(b) = cold.b {
            let bb = &mut bodies[b];
            bb.velocity -= impulse * self.inv_mass_b;
            bb.angular_velocity -= inertia[b] * self.r_b.cross(&impulse);
        }
    }

    /// One update of a sweep: the projected Gauss-Seidel update ([`Self::update`]),
    /// applied through the row's copied I⁻¹ (r × d) without booking (the sweeps book
    /// their net work), then, with `resist`, rolling and spinning resistance
    /// ([`Self::resistance`]), on the velocities of the row's slots in `vel` (slot s at
    /// `vel[s − offset]`; a side with no slot has zero velocity and is not written), read
    /// once and written once; resistance turns the bodies through their world inverse
    /// inertias by slot, `inertia[s]`. Returns the square of the largest velocity change the
    /// update made at the contact ((m/s)²; squared, so that a sweep takes no square root
    /// per contact).
    ///
    /// `stamps[s − offset]` is the last sweep that changed slot s by more than `tol` (at
    /// a contact: [`Self::marks`]). In a partial sweep (`partial`) a row neither of whose
    /// slots changed so in this sweep or the last one is skipped: its last update left
    /// its velocities at their target, and what moved them since is below the tolerance
    /// (see `ContactPass::solve_rows`). Rows that update mark their slots with `sweep`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sweep(
        &mut self,
        vel: &mut [[Vec3; 2]],
        stamps: &mut [u32],
        offset: usize,
        sweep: u32,
        partial: bool,
        mu: f64,
        tol: f64,
        resist: Option<&SolverParams>,
        inertia: &[Mat3],
        impulses: &mut u32,
    ) -> f64 {
        if self.normal_mass == 0.0 || skipped(self.slots, stamps, offset, sweep, partial) {
            return 0.0;
        }
        let mut v = load(self.slots, vel, offset);
        let u = self.p_velocity(&v);
        let mut change = 0.0;
        let mut moved = false;
        if let Some((dn, dt, c)) = self.update(u, mu, tol) {
            *impulses += 1;
            self.kick(&mut v, dn, dt);
            change = c;
            moved = true;
        }
        let mut turned = 0.0;
        if let Some(params) = resist
            && let Some(t) = self.resist(&mut v, params, inertia)
        {
            turned = t;
            moved = true;
        }
        if moved {
            store(
                self.slots,
                v,
                vel,
                stamps,
                offset,
                sweep,
                self.marks(change.max(turned), tol),
            );
        }
        change
    }

    /// The relative velocity at the contact of the slot velocities `v`
    /// ([va, wa], [vb, wb]; a side with no slot at rest).
    #[inline(always)]
    fn p_velocity(&self, v: &[[Vec3; 2]; 2]) -> Vec3 {
        let ua = v[0][0] + v[0][1].cross(&self.r_a);
        if self.two_sided {
            ua - (v[1][0] + v[1][1].cross(&self.r_b))
        } else {
            ua
        }
    }

    /// Apply the impulse (dn, dt) of this contact to the slot velocities `v` through the
    /// row's copied masses and I⁻¹ (r × d).
    #[inline(always)]
    fn kick(&self, v: &mut [[Vec3; 2]; 2], dn: f64, dt: nalgebra::Vector2<f64>) {
        let impulse = dn * self.n + dt.x * self.t1 + dt.y * self.t2;
        v[0][0] += impulse * self.inv_mass_a;
        v[0][1] += dn * self.turn_a[0] + dt.x * self.turn_a[1] + dt.y * self.turn_a[2];
        if self.two_sided {
            v[1][0] -= impulse * self.inv_mass_b;
            v[1][1] -= dn * self.turn_b[0] + dt.x * self.turn_b[1] + dt.y * self.turn_b[2];
        }
    }

    /// Rolling and spinning resistance ([`Self::resistance`]) applied to the slot
    /// velocities `v`, through the world inverse inertias by slot `inertia` (zero for a
    /// side with no slot); the square of the change it made at the contact points, or
    /// `None`.
    #[inline(always)]
    fn resist(
        &mut self,
        v: &mut [[Vec3; 2]; 2],
        params: &SolverParams,
        inertia: &[Mat3],
    ) -> Option<f64> {
        let of = |s: u32| match s {
            NO_SLOT => Mat3::zeros(),
            s => inertia[s as usize],
        };
        let (ia, ib) = (of(self.slots[0]), of(self.slots[1]));
        let tau = self.resistance(v[0][1] - v[1][1], &ia, &ib, params)?;
        let (dwa, dwb) = (ia * tau, ib * tau);
        v[0][1] += dwa;
        if self.two_sided {
            v[1][1] -= dwb;
        }
        // The change of the contact points' velocities the turn made.
        Some((dwa.cross(&self.r_a) + dwb.cross(&self.r_b)).norm_squared())
    }

    /// One update of a sweep for the points of one manifold (`rows`, all with the same
    /// slots, more than one): each point's projected Gauss-Seidel update is computed
    /// from the same velocities, and the changes are applied with one weight in [1/m, 1]
    /// (m the points that update; [`manifold_weight`]). A mirror-symmetric set of points
    /// then stays
    /// symmetric; visited in turn, the first corner of a face would take all the load
    /// and tip the body. Returns the square of the largest velocity change at a point.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sweep_manifold(
        rows: &mut [Row],
        vel: &mut [[Vec3; 2]],
        stamps: &mut [u32],
        offset: usize,
        sweep: u32,
        partial: bool,
        mu: f64,
        tol: f64,
        resist: Option<&SolverParams>,
        inertia: &[Mat3],
        impulses: &mut u32,
    ) -> f64 {
        let slots = rows[0].slots;
        if skipped(slots, stamps, offset, sweep, partial) {
            return 0.0;
        }
        let mut v = load(slots, vel, offset);
        let mut deltas = [(0.0, nalgebra::Vector2::zeros(), 0.0); MANIFOLD_POINTS];
        let mut active = [false; MANIFOLD_POINTS];
        let mut m = 0usize;
        for (i, row) in rows.iter_mut().enumerate().take(MANIFOLD_POINTS) {
            if row.normal_mass == 0.0 {
                continue;
            }
            let u = row.p_velocity(&v);
            if let Some(d) = row.update(u, mu, tol) {
                deltas[i] = d;
                active[i] = true;
                m += 1;
            }
        }
        let mut change: f64 = 0.0;
        let mut moved = false;
        if m > 0 {
            let (w, t) = manifold_weight(rows, &deltas, &active, m, false);
            for (side, ts) in v.iter_mut().zip(&t) {
                side[0] += w * ts[0];
                side[1] += w * ts[1];
            }
            for (i, row) in rows.iter_mut().enumerate().take(MANIFOLD_POINTS) {
                if !active[i] {
                    continue;
                }
                let (dn, dt, c) = deltas[i];
                if w < 1.0 {
                    row.lambda_n -= (1.0 - w) * dn;
                    row.lambda_t -= (1.0 - w) * dt;
                }
                *impulses += 1;
                change = change.max(w * w * c);
            }
            moved = true;
        }
        let mut turned: f64 = 0.0;
        if let Some(params) = resist {
            for row in rows.iter_mut() {
                if let Some(t) = row.resist(&mut v, params, inertia) {
                    turned = turned.max(t);
                    moved = true;
                }
            }
        }
        if moved {
            let mark = rows[0].marks(change.max(turned), tol);
            store(slots, v, vel, stamps, offset, sweep, mark);
        }
        change
    }

    /// Whether an update whose squared velocity change at the contact is `change2` marks
    /// its slots as moved: a change above the tolerance, the pass's own measure of an
    /// update that matters (below it the sweeps would stop).
    #[inline(always)]
    fn marks(&self, change2: f64, tol: f64) -> bool {
        change2 > tol * tol
    }

    /// The normal and tangential impulse changes (dn, dt) of one projected Gauss-Seidel
    /// update at relative velocity `u` (see the module doc), accumulated into the row,
    /// and the square of the largest velocity change they make at the contact; `None`
    /// if the contact does not take part or nothing changes.
    #[inline(always)]
    pub(super) fn update(
        &mut self,
        u: Vec3,
        mu: f64,
        tol: f64,
    ) -> Option<(f64, nalgebra::Vector2<f64>, f64)> {
        let un = u.dot(&self.n);
        let floor = self.floor;
        if !self.started {
            if un >= floor - tol {
                return None;
            }
            self.started = true;
        }
        // Normal row: λ_n ≥ 0, u_n⁺ = floor while pushing (softened by the scales of a
        // soft contact; exactly the hard update when m_s = 1, i_s = 0).
        let new_n = (self.lambda_n + self.normal_mass * self.mass_scale * (floor - un)
            - self.impulse_scale * self.lambda_n)
            .max(0.0);
        let dn = new_n - self.lambda_n;
        self.lambda_n = new_n;
        let du_n = dn * self.k_nn;
        let mut change = du_n * du_n;
        // Tangent rows: stop the slip, |λ_t| ≤ μ λ_n; if the cone does not allow it,
        // the nearest impulse of the cone in K_tt's metric (friction opposite the slip
        // it leaves: see `nearest_in_disk`). The slip after the normal impulse is
        // u_t + dn (t·K n).
        let mut dt = nalgebra::Vector2::zeros();
        if mu > 0.0
            && let Some(m) = self.tangent_mass
        {
            let ut = nalgebra::Vector2::new(u.dot(&self.t1), u.dot(&self.t2)) + dn * self.kn_t;
            let mut new_t = self.lambda_t - m * ut;
            let limit = mu * self.lambda_n;
            if new_t.norm_squared() > limit * limit {
                (new_t, self.gamma) = self.metric().nearest_in_disk(&new_t, limit, self.gamma);
            }
            dt = new_t - self.lambda_t;
            self.lambda_t = new_t;
            change = change.max((dt.x * self.k_t[0] + dt.y * self.k_t[1]).norm_squared());
        }
        if dn == 0.0 && dt == nalgebra::Vector2::zeros() {
            return None;
        }
        Some((dn, dt, change))
    }

    /// Rolling and spinning resistance (see `SolverParams::rolling_friction`) at the
    /// relative angular velocity `w` = ω_a − ω_b (world inverse inertias `inertia_a`,
    /// `inertia_b`): the change τ of the accumulated angular
    /// impulses on a (−τ on b) that stop the relative rotation, clamped to
    /// |τ_n| ≤ μ_s λ_n about the normal and |τ_t| ≤ μ_r λ_n about the tangent plane.
    /// Their work τ·(ω_rel⁻ + ω_rel⁺)/2 is booked as friction dissipation, with the
    /// pass's net work ([`ContactPass::book_net_work`]). `None` when τ = 0.
    fn resistance(
        &mut self,
        w: Vec3,
        inertia_a: &Mat3,
        inertia_b: &Mat3,
        params: &SolverParams,
    ) -> Option<Vec3> {
        if self.lambda_n <= 0.0 {
            return None;
        }
        // I_a⁻¹ + I_b⁻¹, the change of ω_a − ω_b per unit angular impulse, and
        // nᵀ(I_a⁻¹ + I_b⁻¹)n.
        let inv = &(inertia_a + inertia_b);
        let n = self.n;
        let mut tau = Vec3::zeros();
        // Spin about n.
        let kn = n.dot(&(inv * n));
        if params.spinning_friction > 0.0 && kn > 0.0 {
            let limit = params.spinning_friction * self.lambda_n;
            let new = (self.spin - n.dot(&w) / kn).clamp(-limit, limit);
            tau += (new - self.spin) * n;
            self.spin = new;
        }
        // Rolling about the tangent plane: along the rolling direction d = w_t/|w_t|
        // the impulse −w_t/(dᵀ I⁻¹ d) = −w_t |w_t|²/(w_tᵀ I⁻¹ w_t) stops it (written so,
        // a sweep takes no square root here unless the limit binds).
        let wt = w - n.dot(&w) * n;
        let slip2 = wt.norm_squared();
        if params.rolling_friction > 0.0 && slip2 > 0.0 {
            let q = wt.dot(&(inv * wt));
            if q > 0.0 {
                let limit = params.rolling_friction * self.lambda_n;
                let mut new = self.roll - wt * (slip2 / q);
                let size2 = new.norm_squared();
                if size2 > limit * limit {
                    new *= limit / size2.sqrt();
                }
                tau += new - self.roll;
                self.roll = new;
            }
        }
        (tau != Vec3::zeros()).then_some(tau)
    }
}

impl ShockRow {
    /// The shock-propagation row of prepared contact `p` in a step `dt`, `moving` as in
    /// [`ShockRow`].
    pub(super) fn new(p: PreparedContact, moving: Option<(usize, Vec3, f64)>, dt: f64) -> Self {
        ShockRow {
            row: Row::from_prepared(&p, dt),
            p,
            moving,
        }
    }

    /// One projected Gauss-Seidel update (see the module doc) applied to the bodies with
    /// [`Self::apply`] (the shock-propagation sweep's rows, which book each impulse;
    /// `drift` as there); returns the square of the largest velocity change it made at
    /// the contact.
    pub(super) fn solve(
        &mut self,
        bodies: &mut [RigidBody],
        mu: f64,
        tol: f64,
        drift: &Vec3,
        report: &mut SolverReport,
    ) -> f64 {
        if self.row.normal_mass == 0.0 {
            return 0.0;
        }
        let u = self.p.relative_velocity(bodies);
        let Some((dn, dt, change)) = self.row.update(u, mu, tol) else {
            return 0.0;
        };
        let p = &self.p;
        let impulse = dn * p.n + dt.x * p.t1 + dt.y * p.t2;
        self.apply(bodies, &impulse, drift, report);
        change
    }

    /// Apply `impulse` (through the prepared contact) and book its work against the moving side's point velocity (one
    /// side frozen) or the relative velocity: ΔK = P·(v⁻ + v⁺)/2 (paper 000, eq. 16).
    /// Under a Newmark drift, `drift` is that velocity's (vₙ − v⁻)/2 (linear part,
    /// [`ContactPass::set_newmark_drift`](super::ContactPass::set_newmark_drift)): the
    /// impulse's work over the step is then P·(v⁻ + v⁺)/2 + P·drift, and P·drift, its
    /// share of the drift, is added to `SolverReport::drift_work`. Zero otherwise.
    pub(super) fn apply(
        &self,
        bodies: &mut [RigidBody],
        impulse: &Vec3,
        drift: &Vec3,
        report: &mut SolverReport,
    ) {
        let p = &self.p;
        report.impulses += 1;
        let moving = self.moving;
        let point_velocity = |bodies: &[RigidBody]| match moving {
            Some((i, r, _)) => bodies[i].velocity + bodies[i].angular_velocity.cross(&r),
            None => p.relative_velocity(bodies),
        };
        let sign = moving.map_or(1.0, |m| m.2);
        let v_before = point_velocity(bodies);
        p.apply_impulse(bodies, impulse);
        // The moving point's velocity changes by K (sign P) (the row's K has the frozen
        // side left out), so the mean of before and after is v⁻ + ½ K (sign P).
        let pw = sign * impulse;
        let pn = pw.dot(&p.n) * p.n;
        let avg = v_before + 0.5 * (p.k * pw) + drift;
        report.drift_work += pw.dot(drift);
        let w_normal = pn.dot(&avg);
        let w_total = pw.dot(&avg);
        report.dissipated_restitution -= w_normal;
        report.dissipated_friction -= w_total - w_normal;
    }
}

/// ω_a − ω_b of a contact's bodies (ω_b = 0 for a container).
pub(super) fn relative_angular_velocity(cold: &RowCold, bodies: &[RigidBody]) -> Vec3 {
    bodies[cold.a].angular_velocity - cold.b.map_or(Vec3::zeros(), |b| bodies[b].angular_velocity)
}

/// Leave body a out of the contact's collision matrix (treat it as infinitely heavy).
pub(super) fn freeze_a(p: &mut PreparedContact) {
    p.inv_mass_a = 0.0;
    p.inv_inertia_a = Mat3::zeros();
    p.k = collision_matrix(
        p.inv_mass_b,
        &p.r_a,
        &Mat3::zeros(),
        &p.r_b,
        &p.inv_inertia_b,
    );
}

/// Leave body b out of the contact's collision matrix (treat it as infinitely heavy).
pub(super) fn freeze_b(p: &mut PreparedContact) {
    p.inv_mass_b = 0.0;
    p.inv_inertia_b = Mat3::zeros();
    p.k = collision_matrix(
        p.inv_mass_a,
        &p.r_a,
        &p.inv_inertia_a,
        &p.r_b,
        &Mat3::zeros(),
    );
}

/// The weight of a manifold's Jacobi update ([`Row::sweep_manifold`],
/// `ContactPass::shock_manifold`) and the bodies' velocity changes
/// [[Δv_a, Δω_a], [Δv_b, Δω_b]] if every point's update Δ_i applied in full. Along Δ,
/// with e_i = K_i Δ_i the velocity change each update makes alone at its own point and
/// du_i the change all make together there, ω = Σ Δ_i·e_i / Σ Δ_i·du_i minimises the
/// contact problem's quadratic (MDP's pair weight), clamped to [1/m, 1] (1/m converges
/// since the manifold's Delassus block D ≤ m blockdiag(D)); 1 for a single update.
///
/// e_i is K_i Δ_i in the sweeps; with `e_by_kick` (shock propagation, whose frozen rows
/// differ from the sweeps') it is Δ_i applied alone through the row's masses, the same
/// vector up to rounding.
#[inline(always)]
pub(super) fn manifold_weight<R: AsRef<Row>>(
    rows: &[R],
    deltas: &[(f64, nalgebra::Vector2<f64>, f64)],
    active: &[bool],
    m: usize,
    e_by_kick: bool,
) -> (f64, [[Vec3; 2]; 2]) {
    let mut t = [[Vec3::zeros(); 2]; 2];
    let mut own = 0.0;
    let mut imps = [Vec3::zeros(); MANIFOLD_POINTS];
    for (i, row) in rows.iter().enumerate().take(MANIFOLD_POINTS) {
        if !active[i] {
            continue;
        }
        let row = row.as_ref();
        let (dn, dt, _) = deltas[i];
        let imp = dn * row.n + dt.x * row.t1 + dt.y * row.t2;
        imps[i] = imp;
        row.kick(&mut t, dn, dt);
        if m > 1 {
            own += imp.dot(&if e_by_kick {
                let mut alone = [[Vec3::zeros(); 2]; 2];
                row.kick(&mut alone, dn, dt);
                row.p_velocity(&alone)
            } else {
                row.k * imp
            });
        }
    }
    if m == 1 {
        return (1.0, t);
    }
    let mut joint = 0.0;
    for (i, row) in rows.iter().enumerate().take(MANIFOLD_POINTS) {
        if active[i] {
            joint += imps[i].dot(&row.as_ref().p_velocity(&t));
        }
    }
    let floor_w = 1.0 / m as f64;
    let w = if joint > 0.0 {
        (own / joint).clamp(floor_w, 1.0)
    } else {
        floor_w
    };
    (w, t)
}

/// Whether a partial sweep (`partial`) skips a row on `slots`: neither slot changed by
/// more than the tolerance in sweep `sweep` or the one before (`stamps`, slot s at
/// `stamps[s − offset]`).
#[inline(always)]
fn skipped(slots: [u32; 2], stamps: &[u32], offset: usize, sweep: u32, partial: bool) -> bool {
    let last = |s: u32| match s {
        NO_SLOT => 0,
        s => stamps[s as usize - offset],
    };
    partial && last(slots[0]).max(last(slots[1])) + 1 < sweep
}

/// The velocities [[v_a, ω_a], [v_b, ω_b]] of `slots` (zero for a side with no slot).
#[inline(always)]
fn load(slots: [u32; 2], vel: &[[Vec3; 2]], offset: usize) -> [[Vec3; 2]; 2] {
    slots.map(|s| match s {
        NO_SLOT => [Vec3::zeros(); 2],
        s => vel[s as usize - offset],
    })
}

/// Write `v` back to `slots` and, with `mark`, stamp them with `sweep`.
#[inline(always)]
fn store(
    slots: [u32; 2],
    v: [[Vec3; 2]; 2],
    vel: &mut [[Vec3; 2]],
    stamps: &mut [u32],
    offset: usize,
    sweep: u32,
    mark: bool,
) {
    for (s, v) in slots.into_iter().zip(v) {
        if s != NO_SLOT {
            vel[s as usize - offset] = v;
            if mark {
                stamps[s as usize - offset] = sweep;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes a sweep streams per contact point: the hot row alone (the cold part and
    /// the shock-propagation rows live elsewhere).
    #[test]
    fn a_row_fits_its_budget() {
        let size = std::mem::size_of::<Row>();
        assert!(size <= 616, "Row is {size} bytes");
    }
}
