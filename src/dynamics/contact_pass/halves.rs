//! The sweeps' two halves: a large pass splits its bodies by a vertical plane, so that
//! the contacts on either side touch disjoint bodies and sweep side by side on two
//! threads, and only the contacts across the plane wait for both.
//!
//! **Order.** Bodies get solver slots: those left of the plane (the median of their
//! positions along the horizontal axis of largest spread) first, then the right ones,
//! each in body order. The bottom-up rows are cut into **bands** of whole levels, each of
//! at least [`BAND_ROWS`] rows; within a band they keep the bottom-up order in three
//! groups: rows whose dynamic bodies are all on the left (A), all on the right (B), then
//! the rows that join the two (C). A sweep visits the bands bottom up, each as A and B
//! side by side (they share no body, so neither sees the other's updates and the result
//! does not depend on which runs first or whether they run at once), then C. The split
//! depends on the positions only, never on the number of threads, so one thread and two
//! give the same result bit for bit.
//!
//! **Why a vertical plane, and bands.** A pile's weight runs down its columns; each half
//! keeps its columns whole and bottom up, so the shock-propagating order of the sweeps
//! (`contact_pass` module doc, step 2) holds within each half. The contacts crossing the
//! plane come after their band's halves, not after the whole sweep: with them last in
//! every sweep, the bodies on the plane were supported only after everything above them
//! had pushed down, and pour_mixed under jolt and SQM was still moving at 8 s.
//!
//! A pass of fewer than [`SPLIT_ROWS`] rows does not split: its rows sweep in the
//! bottom-up order alone.

use super::{ContactPass, NO_SLOT};
use crate::body::RigidBody;
use crate::collision::Contact;
use crate::math::Vec3;

/// Fewest rows for which the pass splits into halves (below it a sweep is too short for
/// a second thread to pay for being woken).
pub const SPLIT_ROWS: usize = 512;

/// Fewest rows of a band of levels (see the module doc).
pub const BAND_ROWS: usize = 192;

impl ContactPass {
    /// Give every dynamic body of `contacts` a slot in `self.vel`, reorder `self.order`
    /// (bottom up) into the groups A, B and C of the module doc, and record where each
    /// bottom-up position went (`self.bottom_up`).
    pub(super) fn split_halves(&mut self, bodies: &[RigidBody], contacts: &[Contact], up: Vec3) {
        let n = bodies.len();
        let rows = self.order.len();
        self.slot.clear();
        self.slot.resize(n, NO_SLOT);
        self.touched.clear();
        for c in contacts {
            for i in std::iter::once(c.a).chain(c.b) {
                if !bodies[i].is_static() {
                    self.slot[i] = 0;
                }
            }
        }
        // Ascending body order.
        self.touched
            .extend((0..n).filter(|&i| self.slot[i] != NO_SLOT));
        self.bottom_up.clear();
        if rows < SPLIT_ROWS || self.touched.len() < 2 {
            for (s, &i) in self.touched.iter().enumerate() {
                self.slot[i] = s as u32;
            }
            self.left_slots = self.touched.len();
            self.bands.clear();
            self.bands.push([rows; 3]);
            return;
        }
        // The horizontal axis of largest spread (any axis without gravity).
        let (lo, hi) = self.touched.iter().fold(
            (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY)),
            |(lo, hi), &i| (lo.inf(&bodies[i].position), hi.sup(&bodies[i].position)),
        );
        let spread = hi - lo;
        let axis = (0..3)
            .filter(|&k| up == Vec3::zeros() || up[k].abs() < up.amax())
            .max_by(|&k, &l| spread[k].total_cmp(&spread[l]))
            .unwrap_or(0);
        // Left: the lower half by position along the axis (ties by body index).
        self.keyed.clear();
        self.keyed
            .extend(self.touched.iter().map(|&i| (bodies[i].position[axis], i)));
        // The order is total (ties by index), so the lower half is one set, whatever
        // the order within it.
        let half = self.keyed.len() / 2;
        self.keyed
            .select_nth_unstable_by(half, |x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        for (k, &(_, i)) in self.keyed.iter().enumerate() {
            self.slot[i] = u32::from(k >= half); // 0 left, 1 right, for now
        }
        let (mut left, mut right) = (0u32, half as u32);
        for &i in &self.touched {
            if self.slot[i] == 0 {
                self.slot[i] = left;
                left += 1;
            } else {
                self.slot[i] = right;
                right += 1;
            }
        }
        self.left_slots = half;
        // Group the rows: 0 = A, 1 = B, 2 = C.
        let side = |i: usize| -> Option<bool> {
            let s = self.slot[i];
            (s != NO_SLOT).then_some(s as usize >= half)
        };
        let group = |c: &Contact| -> u8 {
            let sides = [Some(c.a), c.b].map(|i| i.and_then(side));
            match sides {
                [Some(x), Some(y)] if x != y => 2,
                [Some(x), _] | [None, Some(x)] => u8::from(x),
                [None, None] => 0,
            }
        };
        // Bands of whole levels, each of at least BAND_ROWS rows (the last may have
        // fewer), and within each band its rows by group, each group in bottom-up
        // order: (band, group, position) ascending.
        self.grouped.clear();
        let mut band = 0u32;
        let mut band_start = 0;
        for j in 0..=rows {
            let ends_band = j == rows
                || (j - band_start >= BAND_ROWS && self.order[j].0 != self.order[j - 1].0);
            if !ends_band {
                continue;
            }
            for g in 0..3 {
                for (i, &(_, k)) in self.order[band_start..j].iter().enumerate() {
                    if group(&contacts[k]) == g {
                        self.grouped.push((band, g, band_start + i));
                    }
                }
            }
            band += 1;
            band_start = j;
        }
        self.bottom_up.resize(rows, 0);
        self.reordered.clear();
        self.bands.clear();
        for (pos, &(band, g, j)) in self.grouped.iter().enumerate() {
            self.bottom_up[j] = pos as u32;
            self.reordered.push(self.order[j]);
            if self.bands.len() <= band as usize {
                self.bands.push([pos; 3]);
            }
            let ends = &mut self.bands[band as usize];
            for end in &mut ends[usize::from(g)..] {
                *end = pos + 1;
            }
        }
        std::mem::swap(&mut self.order, &mut self.reordered);
    }

    /// Rows of the last pass touching only the left half's bodies, only the right
    /// half's, and both (all in the first when it did not split), and its number of bands.
    pub fn halves_rows(&self) -> ([usize; 3], usize) {
        let mut rows = [0; 3];
        let mut start = 0;
        for &[a, b, c] in &self.bands {
            rows[0] += a - start;
            rows[1] += b - a;
            rows[2] += c - b;
            start = c;
        }
        (rows, self.bands.len())
    }

    /// Position in `self.order` and `self.rows` of the `j`-th contact bottom up.
    pub(super) fn bottom_up(&self, j: usize) -> usize {
        self.bottom_up.get(j).map_or(j, |&p| p as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::make_contact;
    use crate::dynamics::solver::{SolverParams, SolverReport};
    use crate::dynamics::warm_start::ContactImpulses;
    use crate::math::Quat;
    use crate::shapes::Shape;

    /// A 24 × 24 grid of unit spheres in three layers on the floor, each touching its
    /// neighbours: more than `SPLIT_ROWS` rows. Every row of a band's left group touches
    /// only left slots, of its right group only right slots, every row of its joining
    /// group one of each; `bottom_up` is a permutation that lists the contacts by
    /// non-decreasing rank; and each body's velocity after the pass does not depend on
    /// the thread count.
    #[test]
    fn the_halves_touch_disjoint_bodies_and_keep_the_bottom_up_order() {
        let shape = Shape::Sphere { radius: 0.5 };
        let mut bodies = Vec::new();
        for z in 0..3 {
            for y in 0..12 {
                for x in 0..16 {
                    let p = Vec3::new(x as f64, y as f64, 0.5 + z as f64);
                    let mut b = RigidBody::new(&shape, 1000.0, p, Quat::identity());
                    b.velocity = Vec3::new(0.01 * (x % 3) as f64, 0.0, -0.1);
                    bodies.push(b);
                }
            }
        }
        let index = |x: usize, y: usize, z: usize| (z * 12 + y) * 16 + x;
        let mut contacts = Vec::new();
        for z in 0..3 {
            for y in 0..12 {
                for x in 0..16 {
                    let i = index(x, y, z);
                    let at = bodies[i].position;
                    if z == 0 {
                        let p = at - Vec3::new(0.0, 0.0, 0.5);
                        contacts.push(make_contact(&bodies, i, None, p, p, Vec3::z(), 0.0));
                    }
                    for (dx, dy, dz) in [(1, 0, 0), (0, 1, 0), (0, 0, 1)] {
                        let (u, v, w) = (x + dx, y + dy, z + dz);
                        if u < 16 && v < 12 && w < 3 {
                            let j = index(u, v, w);
                            let d = bodies[j].position - at;
                            let p = at + 0.5 * d;
                            // Normal from b (j) to a (i).
                            contacts.push(make_contact(&bodies, i, Some(j), p, p, -d, 0.0));
                        }
                    }
                }
            }
        }
        assert!(contacts.len() >= SPLIT_ROWS, "{} contacts", contacts.len());
        let params = SolverParams::default();
        let run = |threads: usize| {
            let mut bodies = bodies.clone();
            let mut pass = ContactPass::default();
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                super::super::tests::run(
                    &mut pass,
                    &mut bodies,
                    &contacts,
                    &mut vec![ContactImpulses::default(); contacts.len()],
                    &params,
                    1.0 / 600.0,
                    &mut SolverReport::default(),
                )
            });
            (pass, bodies)
        };
        let (pass, one) = run(1);
        assert!(pass.bands.len() > 1, "{} bands", pass.bands.len());
        let mut start = 0;
        for &[a_end, b_end, c_end] in &pass.bands {
            let left = |s: u32| (s as usize) < pass.left_slots;
            for (r, row) in pass.rows[start..c_end].iter().enumerate() {
                let slots: Vec<u32> = row.slots.into_iter().filter(|&s| s != NO_SLOT).collect();
                let at = start + r;
                if at < a_end {
                    assert!(slots.iter().all(|&s| left(s)), "row {at}: {slots:?}");
                } else if at < b_end {
                    assert!(slots.iter().all(|&s| !left(s)), "row {at}: {slots:?}");
                } else {
                    assert!(
                        slots.len() == 2 && left(slots[0]) != left(slots[1]),
                        "row {at}"
                    );
                }
            }
            assert!(
                a_end > start && b_end > a_end && c_end > b_end,
                "{:?}",
                pass.bands
            );
            start = c_end;
        }
        assert_eq!(start, contacts.len());
        let mut seen = vec![false; contacts.len()];
        let mut last_rank = 0;
        for j in 0..contacts.len() {
            let pos = pass.bottom_up(j);
            assert!(!seen[pos]);
            seen[pos] = true;
            assert!(pass.order[pos].0 >= last_rank);
            last_rank = pass.order[pos].0;
        }
        let (_, two) = run(2);
        for (a, b) in one.iter().zip(&two) {
            assert_eq!(a.velocity.map(f64::to_bits), b.velocity.map(f64::to_bits));
            assert_eq!(
                a.angular_velocity.map(f64::to_bits),
                b.angular_velocity.map(f64::to_bits)
            );
        }
    }
}
