//! The contact graph of one step: bodies are its nodes, contacts its edges. The world
//! builds it once a step from the step's contacts ([`ContactGraph::build`]) and every
//! method and the contact pass read it (`SolverContext::graph`); no method builds its
//! own. It holds
//!
//! - **islands**: the groups of contacts whose dynamic bodies touch, directly or through
//!   other dynamic bodies. Static bodies and containers do not join islands (a floor
//!   does not make one island of everything on it), so two islands share no dynamic body
//!   and can be solved independently, in any order, with the same result (Box2D's and
//!   Rapier's islands; paper 000 solves each island of touching bodies on its own).
//!   Islands are numbered in the order of their first contact and list their contacts in
//!   increasing index, so the grouping is deterministic whatever the union-find's
//!   internals. The world uses them for sleeping too (rebuilt over the awake contacts
//!   only when some islands sleep);
//! - **per-body contact lists**: for each dynamic body, the contacts that touch it, in
//!   increasing index (compressed rows, built by a counting sort that allocates nothing
//!   once the buffers have grown). SQM and ETM re-key the neighbours of an impulse from
//!   them; the contact pass walks them to rank bodies by their distance from a support.
//!
//! The sequential methods' priority queue is its companion, [`crate::dynamics::queue`].

use crate::body::RigidBody;
use crate::collision::Contact;

/// Disjoint sets over body indices with path halving; the root of a set is its
/// smallest index.
#[derive(Clone, Debug, Default)]
struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    /// `n` singletons.
    fn reset(&mut self, n: usize) {
        self.parent.clear();
        self.parent.extend(0..n);
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra.max(rb)] = ra.min(rb);
        }
    }
}

/// The contact graph of one step's contacts (see the module doc). A contact with no
/// dynamic body (between two static bodies, or a static body and a container) is in no
/// island and in no body's list.
#[derive(Clone, Debug, Default)]
pub struct ContactGraph {
    sets: UnionFind,
    /// Per body: its island's number, if its set has been numbered (scratch).
    island_of_root: Vec<usize>,
    /// Per contact: its island, or `usize::MAX` (scratch).
    island_of_contact: Vec<usize>,
    /// Island k's contacts are `contacts[start[k]..start[k + 1]]`.
    start: Vec<usize>,
    contacts: Vec<usize>,
    /// Body k's contacts are `body_contacts[body_start[k]..body_start[k + 1]]`.
    body_start: Vec<u32>,
    body_contacts: Vec<u32>,
}

impl ContactGraph {
    /// The graph of `contacts` over `bodies`.
    pub fn of(bodies: &[RigidBody], contacts: &[Contact]) -> Self {
        let mut graph = ContactGraph::default();
        graph.build(bodies, contacts);
        graph
    }

    /// Rebuild for `contacts` over `bodies`, reusing the buffers.
    pub fn build(&mut self, bodies: &[RigidBody], contacts: &[Contact]) {
        let nb = bodies.len();
        let dynamic = |i: usize| !bodies[i].is_static();
        self.sets.reset(nb);
        for c in contacts {
            if let Some(b) = c.b
                && dynamic(c.a)
                && dynamic(b)
            {
                self.sets.union(c.a, b);
            }
        }
        self.island_of_root.clear();
        self.island_of_root.resize(nb, usize::MAX);
        self.island_of_contact.clear();
        let mut n = 0;
        for c in contacts {
            let body = if dynamic(c.a) {
                Some(c.a)
            } else {
                c.b.filter(|&b| dynamic(b))
            };
            let Some(body) = body else {
                self.island_of_contact.push(usize::MAX);
                continue;
            };
            let root = self.sets.find(body);
            if self.island_of_root[root] == usize::MAX {
                self.island_of_root[root] = n;
                n += 1;
            }
            self.island_of_contact.push(self.island_of_root[root]);
        }
        // Bucket the contacts by island (counting sort: increasing index within each).
        self.start.clear();
        self.start.resize(n + 1, 0);
        for &k in self.island_of_contact.iter().filter(|&&k| k != usize::MAX) {
            self.start[k + 1] += 1;
        }
        for k in 0..n {
            self.start[k + 1] += self.start[k];
        }
        self.contacts.clear();
        self.contacts.resize(self.start[n], 0);
        for (ci, &k) in self.island_of_contact.iter().enumerate() {
            if k != usize::MAX {
                // `start[k]` serves as island k's fill cursor here, and is restored below.
                self.contacts[self.start[k]] = ci;
                self.start[k] += 1;
            }
        }
        for k in (1..=n).rev() {
            self.start[k] = self.start[k - 1];
        }
        self.start[0] = 0;
        self.build_body_contacts(bodies, contacts);
    }

    /// Per dynamic body, its contacts in increasing index (counting sort).
    fn build_body_contacts(&mut self, bodies: &[RigidBody], contacts: &[Contact]) {
        let nb = bodies.len();
        let dynamic_sides = |c: &Contact| {
            [Some(c.a), c.b]
                .into_iter()
                .flatten()
                .filter(|&k| !bodies[k].is_static())
        };
        let start = &mut self.body_start;
        start.clear();
        start.resize(nb + 1, 0);
        for c in contacts {
            for body in dynamic_sides(c) {
                start[body + 1] += 1;
            }
        }
        for k in 0..nb {
            start[k + 1] += start[k];
        }
        let list = &mut self.body_contacts;
        list.clear();
        list.resize(start[nb] as usize, 0);
        // Fill from the back, so that each list keeps increasing contact order;
        // `start[k + 1]` serves as body k's cursor and ends at body k's start.
        for (ci, c) in contacts.iter().enumerate().rev() {
            for body in dynamic_sides(c) {
                start[body + 1] -= 1;
                list[start[body + 1] as usize] = ci as u32;
            }
        }
        for k in 0..nb {
            start[k] = start[k + 1];
        }
        start[nb] = list.len() as u32;
    }

    /// The contacts touching `body`, in increasing index; empty for a static body.
    #[inline]
    pub fn body_contacts(&self, body: usize) -> &[u32] {
        &self.body_contacts[self.body_start[body] as usize..self.body_start[body + 1] as usize]
    }

    /// The set of bodies joined with `body` by the last build, by its smallest index (a
    /// body in no island is its own); the sets also hold bodies whose contacts are all
    /// with static bodies or containers.
    pub fn root(&mut self, body: usize) -> usize {
        self.sets.find(body)
    }

    /// Number of islands.
    pub fn island_count(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// The contacts of island `k`, in increasing index.
    pub fn island(&self, k: usize) -> &[usize] {
        &self.contacts[self.start[k]..self.start[k + 1]]
    }

    /// Every island's contacts, in island order.
    pub fn islands(&self) -> impl Iterator<Item = &[usize]> {
        (0..self.island_count()).map(|k| self.island(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{Quat, Vec3};
    use crate::shapes::Shape;

    fn contact(a: usize, b: Option<usize>) -> Contact {
        let container = if b.is_none() { Some(0) } else { None };
        Contact::of_pair(a, b, container, Default::default())
    }

    #[test]
    fn static_bodies_and_containers_do_not_join_islands() {
        let sphere = Shape::Sphere { radius: 0.5 };
        let mut bodies: Vec<RigidBody> = (0..6)
            .map(|i| {
                RigidBody::new(
                    &sphere,
                    1000.0,
                    Vec3::new(i as f64, 0.0, 0.0),
                    Quat::identity(),
                )
            })
            .collect();
        bodies[2].inv_mass = 0.0; // static (only the inverse mass is read)
        let contacts = [
            contact(3, Some(4)), // island 0
            contact(0, Some(2)), // 0 rests on the static 2: island 1
            contact(1, Some(2)), // 1 too, but 2 does not join it to 0: island 2
            contact(4, None),    // 4 on the container: island 0
            contact(5, Some(3)), // island 0
            contact(0, Some(1)), // joins 1 to 0: islands 1 and 2 are one
        ];
        let graph = ContactGraph::of(&bodies, &contacts);
        let got: Vec<Vec<usize>> = graph.islands().map(|s| s.to_vec()).collect();
        assert_eq!(got, vec![vec![0, 3, 4], vec![1, 2, 5]]);
        // Per body: its contacts in increasing index; the static body 2 has none.
        let lists: Vec<Vec<u32>> = (0..6).map(|k| graph.body_contacts(k).to_vec()).collect();
        assert_eq!(
            lists,
            vec![
                vec![1, 5],
                vec![2, 5],
                vec![],
                vec![0, 4],
                vec![0, 3],
                vec![4]
            ]
        );
    }

    #[test]
    fn body_lists_hold_each_dynamic_side_once_in_order() {
        // Random contact lists: every contact appears in the list of each of its dynamic
        // sides and nowhere else, each list increasing; a rebuild with fewer bodies and
        // contacts reuses the buffers and forgets the old lists.
        let sphere = Shape::Sphere { radius: 0.5 };
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        let mut graph = ContactGraph::default();
        for round in 0..20 {
            let nb = 2 + next(30);
            let mut bodies: Vec<RigidBody> = (0..nb)
                .map(|_| RigidBody::new(&sphere, 1000.0, Vec3::zeros(), Quat::identity()))
                .collect();
            for b in bodies.iter_mut() {
                if next(4) == 0 {
                    b.inv_mass = 0.0;
                }
            }
            let contacts: Vec<Contact> = (0..next(60))
                .map(|_| {
                    let a = next(nb);
                    let b = (a + 1 + next(nb - 1)) % nb;
                    contact(a, (next(3) != 0).then_some(b))
                })
                .collect();
            graph.build(&bodies, &contacts);
            for (k, body) in bodies.iter().enumerate() {
                let want: Vec<u32> = (0..contacts.len() as u32)
                    .filter(|&ci| {
                        let c = &contacts[ci as usize];
                        !body.is_static() && (c.a == k || c.b == Some(k))
                    })
                    .collect();
                assert_eq!(graph.body_contacts(k), &want[..], "round {round}, body {k}");
            }
        }
    }
}
