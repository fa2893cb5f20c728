//! A scene's region of interest: the axis-aligned box where its teaching moments happen.
//!
//! A moving body whose centre lies inside the region must stay in the app's view (the
//! lesson's camera, or the framing of a compare start; `tests/lesson_view.rs` checks
//! it at every step); a body that has left it (a cube sliding off along an endless
//! plane, a tetrahedron flying away after its impact) no longer needs to be.
//!
//! A scene states it as `region_of_interest: (min: (..), max: (..))`. Without one it is
//! [`Scene::region_of_interest`]'s default: the box around every container (a box from
//! its floor to the top of its walls, a cylinder or hopper the square prism around its
//! widest rim from base to top; planes and slopes are unbounded and left out) and
//! every body's bounding sphere at the start, static bodies included, grown on every
//! side by the largest bounding diameter of a moving body. So a body that bounces over
//! a wall or off the floor by up to its own size is still in the scene; one that has
//! gone further than that has left it.

use super::{ContainerSpec, Region, Scene, SceneError, V3};
use crate::container::Container;
use crate::math::Vec3;

impl Region {
    /// Whether `p` lies in the box (faces included).
    pub fn contains(&self, p: &Vec3) -> bool {
        (0..3).all(|k| self.min.0[k] <= p[k] && p[k] <= self.max.0[k])
    }

    /// The eight corners of the box.
    pub fn corners(&self) -> [Vec3; 8] {
        std::array::from_fn(|k| {
            let pick = |axis: usize| {
                if k & (1 << axis) == 0 {
                    self.min.0[axis]
                } else {
                    self.max.0[axis]
                }
            };
            Vec3::new(pick(0), pick(1), pick(2))
        })
    }
}

/// The bounding box `(lo, hi)` of a container; `None` for a plane or slope (unbounded).
fn container_bounds(c: &Container) -> Option<(Vec3, Vec3)> {
    match c {
        Container::Plane { .. } => None,
        Container::Box {
            center,
            half_size,
            height,
            ..
        } => Some((
            center - Vec3::new(half_size[0], half_size[1], 0.0),
            center + Vec3::new(half_size[0], half_size[1], *height),
        )),
        Container::Cylinder {
            base,
            radius,
            height,
        } => Some((
            base - Vec3::new(*radius, *radius, 0.0),
            base + Vec3::new(*radius, *radius, *height),
        )),
        Container::Hopper {
            base,
            bottom_radius,
            top_radius,
            height,
        } => {
            let r = bottom_radius.max(*top_radius);
            Some((base - Vec3::new(r, r, 0.0), base + Vec3::new(r, r, *height)))
        }
    }
}

impl Scene {
    /// The region of interest (module doc): the scene's `region_of_interest`, or the
    /// default built from its containers and its bodies at the start.
    pub fn region_of_interest(&self) -> Result<Region, SceneError> {
        if let Some(r) = &self.region_of_interest {
            return Ok(r.clone());
        }
        let bodies = self.expand_bodies()?;
        let (mut lo, mut hi) = (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY));
        let mut grow = |a: Vec3, b: Vec3| {
            lo = lo.inf(&a);
            hi = hi.sup(&b);
        };
        for c in &self.containers {
            if let Some((a, b)) = container_bounds(&ContainerSpec::to_container(c)) {
                grow(a, b);
            }
        }
        let mut margin: f64 = 0.0;
        for b in &bodies {
            let r = Vec3::repeat(b.bounding_radius);
            grow(b.position - r, b.position + r);
            if !b.is_static {
                margin = margin.max(2.0 * b.bounding_radius);
            }
        }
        if !lo.iter().all(|x| x.is_finite()) {
            // Nothing bounded in the scene: an empty box at the origin.
            return Ok(Region {
                min: V3::default(),
                max: V3::default(),
            });
        }
        let m = Vec3::repeat(margin);
        Ok(Region {
            min: (lo - m).into(),
            max: (hi + m).into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::math::Vec3;
    use crate::scene::parse_scene;

    #[test]
    fn default_region_holds_containers_and_bodies_grown_by_a_body() {
        let s = parse_scene(
            "Scene(name: \"r\", containers: [Plane(), Box(center: (0, 0, 0), half_size: (3, 2), height: 2.5)], \
             bodies: [Body(shape: Sphere(radius: 0.5), position: (0, 0, 10))])",
            "r.ron",
        )
        .unwrap();
        let r = s.region_of_interest().unwrap();
        // Box x ∈ [−3, 3], y ∈ [−2, 2], z ∈ [0, 2.5]; sphere up to z = 10.5; margin 1.
        assert_eq!(r.min.vec3(), Vec3::new(-4.0, -3.0, -1.0));
        assert_eq!(r.max.vec3(), Vec3::new(4.0, 3.0, 11.5));
        assert!(r.contains(&Vec3::new(3.9, 0.0, 0.0)));
        assert!(!r.contains(&Vec3::new(4.1, 0.0, 0.0)));
    }

    #[test]
    fn a_stated_region_is_taken_as_written() {
        let s = parse_scene(
            "Scene(name: \"r\", region_of_interest: (min: (-1, -1, 0), max: (1, 1, 2)), \
             bodies: [Body(shape: Sphere(radius: 0.5), position: (0, 0, 10))])",
            "r.ron",
        )
        .unwrap();
        let r = s.region_of_interest().unwrap();
        assert_eq!(r.max.vec3(), Vec3::new(1.0, 1.0, 2.0));
        assert_eq!(r.corners().len(), 8);
    }
}
