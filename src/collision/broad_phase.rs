//! Broad phase: candidate pairs of bodies whose bounding balls overlap.
//!
//! Each body is bounded by a ball of radius `reach[i]`: its shape's bounding radius
//! inflated by how far its surface can travel in one step (speculative contacts, see
//! [`super::CollisionPipeline`]). Balls are orientation-free, so nothing is refitted when
//! bodies spin. Static–static pairs are skipped. Both functions return the pairs
//! `(i, j)`, `i < j`, sorted: the same list, whatever the layout.
//!
//! [`uniform_grid`] is the one the world uses: its cost grows linearly with the body
//! count in any layout. [`sweep_and_prune`] (sort along x, then sweep) is kept as the
//! reference the grid is tested and benchmarked against: its sweep visits every body
//! that overlaps in x, so a pile spread over a wide floor costs it O(n^1.5).

use crate::body::RigidBody;
use crate::math::Vec3;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Sweep and prune along x: candidate pairs `(i, j)`, `i < j`, sorted.
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
            if overlap(bodies, reach, i, j) {
                pairs.push((i.min(j), i.max(j)));
            }
        }
    }
    pairs.sort_unstable();
}

/// Whether the bounding balls of `i` and `j` overlap (and not both are static).
#[inline]
fn overlap(bodies: &[RigidBody], reach: &[f64], i: usize, j: usize) -> bool {
    let (bi, bj) = (&bodies[i], &bodies[j]);
    if bi.is_static() && bj.is_static() {
        return false;
    }
    let r = reach[i] + reach[j];
    (bi.position - bj.position).norm_squared() <= r * r
}

/// Scratch space of [`uniform_grid`], kept between steps to avoid allocation.
#[derive(Default)]
pub struct Grid {
    /// (cell key, body) of the bodies in the grid, sorted by key then body.
    entries: Vec<(u64, usize)>,
    /// Cell key → range of `entries`.
    cells: HashMap<u64, (u32, u32), BuildHasherDefault<KeyHasher>>,
    /// Bodies too large for the grid's cells, tested against every other body.
    large: Vec<usize>,
    /// Scratch copy of the reaches (for the median).
    reach: Vec<f64>,
}

/// Uniform grid: candidate pairs `(i, j)`, `i < j`, sorted (the same list as
/// [`sweep_and_prune`]); see [`ball_pairs`].
pub fn uniform_grid(
    bodies: &[RigidBody],
    reach: &[f64],
    grid: &mut Grid,
    pairs: &mut Vec<(usize, usize)>,
) {
    ball_pairs(
        |i| bodies[i].position,
        reach,
        |i| bodies[i].is_static(),
        grid,
        pairs,
    );
}

/// The pairs `(i, j)`, `i < j`, sorted, of balls (centre `centre(i)`, radius
/// `reach[i]`) that overlap or touch, |c_i − c_j| ≤ reach_i + reach_j, leaving out the
/// pairs of two `fixed` balls. Used by the broad phase and by scene validation.
///
/// The cell edge is s = 2 ρ, ρ the largest reach of the balls in the grid; each ball
/// sits in the cell of its centre. Two balls overlap only if their centres are at most
/// reach_i + reach_j ≤ 2ρ = s apart, i.e. in the same or an adjacent cell along each
/// axis, so each ball is tested against the balls of its own cell and of the 26 around
/// it, half of them (13 + the cell itself) from each side. A few very large balls
/// (reach above 8 × the median, such as a static slab) would make every cell coarse;
/// they stay out of the grid and are tested against every ball instead. With bounded
/// sizes a cell holds O(1) balls, so the cost is O(n) plus the sort of the n cell
/// keys, whatever the layout.
pub fn ball_pairs(
    centre: impl Fn(usize) -> Vec3 + Copy,
    reach: &[f64],
    fixed: impl Fn(usize) -> bool + Copy,
    grid: &mut Grid,
    pairs: &mut Vec<(usize, usize)>,
) {
    let overlap = |i: usize, j: usize| {
        if fixed(i) && fixed(j) {
            return false;
        }
        let r = reach[i] + reach[j];
        (centre(i) - centre(j)).norm_squared() <= r * r
    };
    pairs.clear();
    grid.entries.clear();
    grid.cells.clear();
    grid.large.clear();
    let n = reach.len();
    if n < 2 {
        return;
    }
    // The median reach (by selection, O(n)) sets what counts as large.
    grid.reach.clear();
    grid.reach.extend_from_slice(reach);
    let median = *grid.reach.select_nth_unstable_by(n / 2, f64::total_cmp).1;
    let large_above = 8.0 * median;
    let mut rho: f64 = 0.0;
    for (i, &r) in reach.iter().enumerate() {
        if r > large_above || !centre(i).iter().all(|x| x.is_finite()) {
            grid.large.push(i);
        } else {
            rho = rho.max(r);
        }
    }
    let cell = 2.0 * rho;
    if cell > 0.0 && cell.is_finite() {
        let inv = 1.0 / cell;
        let mut in_large = grid.large.iter().peekable();
        for i in 0..n {
            if in_large.peek() == Some(&&i) {
                in_large.next();
                continue;
            }
            let c = centre(i) * inv;
            grid.entries
                .push((cell_key(c.x.floor(), c.y.floor(), c.z.floor()), i));
        }
    } else {
        // Every ball in the grid is a point (reach 0): test all against all.
        grid.large.clear();
        grid.large.extend(0..n);
    }
    grid.entries.sort_unstable();
    let mut start = 0;
    while start < grid.entries.len() {
        let key = grid.entries[start].0;
        let mut end = start + 1;
        while end < grid.entries.len() && grid.entries[end].0 == key {
            end += 1;
        }
        grid.cells.insert(key, (start as u32, end as u32));
        start = end;
    }
    for (&key, &(s, e)) in &grid.cells {
        let here = &grid.entries[s as usize..e as usize];
        // Pairs inside the cell.
        for (k, &(_, i)) in here.iter().enumerate() {
            for &(_, j) in &here[k + 1..] {
                if overlap(i, j) {
                    pairs.push((i.min(j), i.max(j)));
                }
            }
        }
        // Pairs with the 13 neighbouring cells that come "after" this one.
        for offset in FORWARD {
            let Some(&(s2, e2)) = grid.cells.get(&neighbour(key, offset)) else {
                continue;
            };
            for &(_, i) in here {
                for &(_, j) in &grid.entries[s2 as usize..e2 as usize] {
                    if overlap(i, j) {
                        pairs.push((i.min(j), i.max(j)));
                    }
                }
            }
        }
    }
    // Large balls against every other ball (each pair once).
    for (k, &i) in grid.large.iter().enumerate() {
        for j in 0..n {
            let other_large = grid.large[..k].binary_search(&j).is_ok() || j == i;
            if !other_large && overlap(i, j) {
                pairs.push((i.min(j), i.max(j)));
            }
        }
    }
    pairs.sort_unstable();
}

/// Cell coordinates are packed 21 bits each (offset by 2²⁰), so a scene spans
/// ±2²⁰ cells along each axis; coordinates beyond wrap, which only adds candidate
/// pairs that the ball test then rejects.
fn cell_key(x: f64, y: f64, z: f64) -> u64 {
    const OFFSET: i64 = 1 << 20;
    const MASK: u64 = (1 << 21) - 1;
    let pack = |v: f64| ((v as i64).wrapping_add(OFFSET) as u64) & MASK;
    (pack(x) << 42) | (pack(y) << 21) | pack(z)
}

/// The key of the cell `offset` away from the cell `key` (with the same wrapping).
fn neighbour(key: u64, offset: [i64; 3]) -> u64 {
    const MASK: u64 = (1 << 21) - 1;
    let shift = |part: u64, d: i64| (part as i64 + d) as u64 & MASK;
    (shift((key >> 42) & MASK, offset[0]) << 42)
        | (shift((key >> 21) & MASK, offset[1]) << 21)
        | shift(key & MASK, offset[2])
}

/// Half of the 26 neighbours: those lexicographically after (0, 0, 0), so each pair of
/// adjacent cells is visited once.
const FORWARD: [[i64; 3]; 13] = [
    [0, 0, 1],
    [0, 1, -1],
    [0, 1, 0],
    [0, 1, 1],
    [1, -1, -1],
    [1, -1, 0],
    [1, -1, 1],
    [1, 0, -1],
    [1, 0, 0],
    [1, 0, 1],
    [1, 1, -1],
    [1, 1, 0],
    [1, 1, 1],
];

/// Multiplicative (Fibonacci) hashing of a packed cell key (std's default SipHash is several times
/// slower, and the keys are not attacker-chosen).
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, k: u64) {
        // The product's low bits depend only on the key's low bits (one cell
        // coordinate); folding the high half in makes every bit of the hash depend on
        // all three (the table indexes by the low bits).
        let h = k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::Quat;
    use crate::shapes::Shape;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn brute(bodies: &[RigidBody], reach: &[f64]) -> Vec<(usize, usize)> {
        let mut pairs = Vec::new();
        for i in 0..bodies.len() {
            for j in i + 1..bodies.len() {
                if overlap(bodies, reach, i, j) {
                    pairs.push((i, j));
                }
            }
        }
        pairs
    }

    /// Random layouts (clustered, spread on a plane, with a few huge and static bodies
    /// and zero reaches): the grid, sweep and prune and the all-pairs test give the same
    /// sorted pair list.
    #[test]
    fn grid_gives_the_all_pairs_list_in_any_layout() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut grid = Grid::default();
        let (mut order, mut sap, mut pairs) = (Vec::new(), Vec::new(), Vec::new());
        for case in 0..60 {
            let n = rng.random_range(0..300);
            let spread = [1.0, 10.0, 100.0][case % 3];
            let flat = case % 4 == 0;
            let mut bodies = Vec::new();
            let mut reach = Vec::new();
            for k in 0..n {
                let p = Vec3::new(
                    rng.random_range(-spread..spread),
                    rng.random_range(-spread..spread),
                    if flat {
                        0.0
                    } else {
                        rng.random_range(-spread..spread)
                    },
                );
                let mut b =
                    RigidBody::new(&Shape::Sphere { radius: 0.5 }, 1000.0, p, Quat::identity());
                if k % 17 == 3 {
                    b.inv_mass = 0.0; // static
                }
                bodies.push(b);
                reach.push(match k % 29 {
                    0 => 50.0 * rng.random_range(0.5..1.0), // huge
                    1 => 0.0,
                    _ => rng.random_range(0.1..2.0),
                });
            }
            let expected = brute(&bodies, &reach);
            uniform_grid(&bodies, &reach, &mut grid, &mut pairs);
            assert_eq!(pairs, expected, "case {case}: grid");
            sweep_and_prune(&bodies, &reach, &mut order, &mut sap);
            assert_eq!(sap, expected, "case {case}: sweep and prune");
        }
    }
}
