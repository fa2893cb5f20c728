//! Broad phase: sweep and prune along x over bounding spheres.
//!
//! Each body is bounded by a ball of radius `reach[i]`: its shape's bounding radius
//! inflated by how far its surface can travel in one step (speculative contacts, see
//! [`super::CollisionPipeline`]). Balls are orientation-free, so nothing is refitted when
//! bodies spin. Bodies are sorted by the lower x bound (ties by index, so the pair list is
//! deterministic) and swept; a pair is kept when the two balls overlap. Static–static
//! pairs are skipped. Sorting is O(n log n); the sweep visits only bodies overlapping in
//! x (`cargo bench --bench pile` reports its cost per step).

use crate::body::RigidBody;

/// Candidate pairs `(i, j)` with `i < j`, in a deterministic order.
pub fn sweep_and_prune(
    bodies: &[RigidBody],
    reach: &[f64],
    order: &mut Vec<(f64, usize)>,
    pairs: &mut Vec<(usize, usize)>,
) {
    pairs.clear();
    order.clear();
    order.extend(
        bodies
            .iter()
            .enumerate()
            .map(|(i, b)| (b.position.x - reach[i], i)),
    );
    order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (k, &(_, i)) in order.iter().enumerate() {
        let bi = &bodies[i];
        let max_x = bi.position.x + reach[i];
        for &(min_x, j) in &order[k + 1..] {
            if min_x > max_x {
                break;
            }
            let bj = &bodies[j];
            if bi.is_static() && bj.is_static() {
                continue;
            }
            let r = reach[i] + reach[j];
            if (bi.position - bj.position).norm_squared() <= r * r {
                pairs.push((i.min(j), i.max(j)));
            }
        }
    }
    pairs.sort_unstable();
}
