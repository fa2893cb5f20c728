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

/// Scratch space of [`ball_pairs`], kept between steps to avoid allocation.
#[derive(Clone, Default)]
pub struct Grid {
    /// (cell, ball) of the balls in the grid, sorted by cell (x, y, z
    /// lexicographically, packed by [`pack`]) then ball.
    items: Vec<(u64, usize)>,
    /// The grid's balls in the order of `items`: centre, reach, fixed, index.
    balls: Vec<(Vec3, f64, bool, usize)>,
    /// Occupied cells: the cell and its range in `items`.
    cells: Vec<(u64, usize, usize)>,
    /// Balls too large for the grid's cells, tested against every other ball.
    large: Vec<usize>,
    /// Scratch copy of the reaches (for the median), and each grid ball's cell.
    reach: Vec<f64>,
    coords: Vec<[i64; 3]>,
    /// Scratch of the radix sorts.
    item_scratch: Vec<(u64, usize)>,
    pair_keys: Vec<u64>,
    pair_scratch: Vec<u64>,
}

/// Bits of each cell coordinate in a packed cell key.
const CELL_BITS: u32 = 21;
const CELL_MAX: i64 = (1 << CELL_BITS) - 1;

/// A cell (x, y, z), each coordinate in 0..=[`CELL_MAX`], as one key whose order is the
/// lexicographic order of (x, y, z).
#[inline]
fn pack(c: [i64; 3]) -> u64 {
    ((c[0] as u64) << (2 * CELL_BITS)) | ((c[1] as u64) << CELL_BITS) | c[2] as u64
}

/// Sort `items` by `key`, stably, in O(n): least-significant-digit radix sort with 8-bit
/// digits, skipping the digits on which all keys agree (a grid's cell keys vary in a few
/// of their bytes). `scratch` is reused between calls (no allocation once grown).
pub fn radix_sort_by_key<T: Copy>(
    items: &mut Vec<T>,
    scratch: &mut Vec<T>,
    key: impl Fn(&T) -> u64,
) {
    let n = items.len();
    if n < 2 {
        return;
    }
    let mut counts = [[0u32; 256]; 8];
    for item in items.iter() {
        let k = key(item);
        for (d, c) in counts.iter_mut().enumerate() {
            c[((k >> (8 * d)) & 0xff) as usize] += 1;
        }
    }
    scratch.clear();
    scratch.extend_from_slice(items);
    for (d, c) in counts.iter_mut().enumerate() {
        if c.iter().any(|&m| m as usize == n) {
            continue; // every key has the same digit d
        }
        let mut sum = 0;
        for m in c.iter_mut() {
            let here = *m;
            *m = sum;
            sum += here;
        }
        for item in items.iter() {
            let slot = &mut c[((key(item) >> (8 * d)) & 0xff) as usize];
            scratch[*slot as usize] = *item;
            *slot += 1;
        }
        std::mem::swap(items, scratch);
    }
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
/// axis (27 cells about each). The balls are sorted by cell and each occupied cell is
/// paired with the occupied neighbours after it; for each of the 9 (Δx, Δy) offsets the
/// neighbours (x + Δx, y + Δy, z − 1 ..= z + 1) are one run of that order, found by a
/// cursor that only moves forward. A few very large balls (reach above 8 × the median,
/// such as a static slab) would make every cell coarse; they stay out of the grid and
/// are tested against every ball instead. With bounded sizes a cell holds O(1) balls,
/// so the cost is O(n) whatever the layout (a plane, a line, a lattice): the cells and
/// the pairs are sorted by radix sorts ([`radix_sort_by_key`]), and the balls are
/// copied into cell order so that the pair tests read memory in order.
///
/// Cell coordinates are taken relative to the lowest occupied cell and clamped to
/// 0..=2²¹ − 1 so that a cell packs into one 64-bit key (`pack`); balls beyond that
/// range (more than two million cells from the lowest) share the edge cells. Clamping
/// is monotonic, so two balls in neighbouring cells stay in the same or neighbouring
/// cells: slower, still correct.
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
    grid.items.clear();
    grid.balls.clear();
    grid.cells.clear();
    grid.large.clear();
    grid.coords.clear();
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
        // Cell coordinates, clamped so that the offsets below cannot overflow.
        let coord = |x: f64| ((x / cell).floor() as i64).clamp(-(1 << 60), 1 << 60);
        let mut low = [i64::MAX; 3];
        let mut in_large = grid.large.iter().peekable();
        for i in 0..n {
            if in_large.peek() == Some(&&i) {
                in_large.next();
                continue;
            }
            let c = centre(i);
            let k = [coord(c.x), coord(c.y), coord(c.z)];
            for a in 0..3 {
                low[a] = low[a].min(k[a]);
            }
            grid.coords.push(k);
            grid.items.push((0, i));
        }
        // Relative to the lowest cell, from 1 so that the neighbour below is ≥ 0, and
        // at most CELL_MAX − 1 so that the one above is ≤ CELL_MAX.
        for (item, k) in grid.items.iter_mut().zip(&grid.coords) {
            item.0 = pack(std::array::from_fn(|a| {
                (k[a] - low[a] + 1).min(CELL_MAX - 1)
            }));
        }
    } else {
        // Every ball in the grid is a point (reach 0): test all against all.
        grid.large.clear();
        grid.large.extend(0..n);
    }
    radix_sort_by_key(&mut grid.items, &mut grid.item_scratch, |item| item.0);
    grid.balls.extend(
        grid.items
            .iter()
            .map(|&(_, i)| (centre(i), reach[i], fixed(i), i)),
    );
    for (k, &(key, _)) in grid.items.iter().enumerate() {
        match grid.cells.last_mut() {
            Some(c) if c.0 == key => c.2 = k + 1,
            _ => grid.cells.push((key, k, k + 1)),
        }
    }
    let test = |a: &(Vec3, f64, bool, usize), b: &(Vec3, f64, bool, usize)| {
        let r = a.1 + b.1;
        !(a.2 && b.2) && (a.0 - b.0).norm_squared() <= r * r
    };
    let (balls, cells) = (&grid.balls, &grid.cells);
    let mut cursors = [0usize; 9];
    let field = |key: u64, a: u32| ((key >> (a * CELL_BITS)) & CELL_MAX as u64) as i64;
    for (ci, &(key, start, end)) in cells.iter().enumerate() {
        let own = &balls[start..end];
        // Pairs inside the cell.
        for (k, a) in own.iter().enumerate() {
            for b in &own[k + 1..] {
                if test(a, b) {
                    pairs.push((a.3.min(b.3), a.3.max(b.3)));
                }
            }
        }
        // Pairs with the neighbouring cells after this one.
        let (x, y, z) = (field(key, 2), field(key, 1), field(key, 0));
        for (o, cursor) in cursors.iter_mut().enumerate() {
            let (dx, dy) = (o as i64 / 3 - 1, o as i64 % 3 - 1);
            let lo = pack([x + dx, y + dy, z - 1]);
            let hi = pack([x + dx, y + dy, z + 1]);
            while *cursor < cells.len() && cells[*cursor].0 < lo {
                *cursor += 1;
            }
            let mut m = *cursor;
            while m < cells.len() && cells[m].0 <= hi {
                if m > ci {
                    for a in own {
                        for b in &balls[cells[m].1..cells[m].2] {
                            if test(a, b) {
                                pairs.push((a.3.min(b.3), a.3.max(b.3)));
                            }
                        }
                    }
                }
                m += 1;
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
    // Sort the pairs (i < j < 2³² for the packed key; a larger world sorts by comparison).
    if n <= u32::MAX as usize {
        grid.pair_keys.clear();
        grid.pair_keys
            .extend(pairs.iter().map(|&(i, j)| ((i as u64) << 32) | j as u64));
        radix_sort_by_key(&mut grid.pair_keys, &mut grid.pair_scratch, |&k| k);
        for (p, &k) in pairs.iter_mut().zip(&grid.pair_keys) {
            *p = ((k >> 32) as usize, (k & 0xffff_ffff) as usize);
        }
    } else {
        pairs.sort_unstable();
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

    #[test]
    fn radix_sort_is_the_stable_sort_by_key() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut scratch = Vec::new();
        for n in [0, 1, 2, 3, 100, 5000] {
            for spread in [1u64, 1000, u64::MAX] {
                let mut items: Vec<(u64, usize)> = (0..n)
                    .map(|i| (rng.random_range(0..=spread) << (i % 3 * 7), i))
                    .collect();
                let mut expected = items.clone();
                expected.sort_by_key(|x| x.0); // stable
                radix_sort_by_key(&mut items, &mut scratch, |x| x.0);
                assert_eq!(items, expected, "n = {n}, spread = {spread}");
            }
        }
    }

    /// Balls more than 2²¹ cells apart share the edge cells: the list stays the
    /// all-pairs one.
    #[test]
    fn far_apart_balls_share_the_edge_cells_and_keep_every_pair() {
        let centres = [
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(0.5, 0.0, 0.0),
            Vec3::new(1e9, 0.0, 0.0),
            Vec3::new(1e9 + 0.5, 0.0, 0.0),
            Vec3::new(2e9, -3e9, 1e9),
            Vec3::new(2e9, -3e9, 1e9 + 0.9),
            Vec3::new(1e9 + 3.0, 0.0, 0.0),
        ];
        let reach = [0.5; 7];
        let mut pairs = Vec::new();
        ball_pairs(
            |i| centres[i],
            &reach,
            |_| false,
            &mut Grid::default(),
            &mut pairs,
        );
        assert_eq!(pairs, vec![(0, 1), (2, 3), (4, 5)]);
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
