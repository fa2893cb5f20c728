//! Scenes: RON files in `scenes/`, validated on load. OWNER: scene helper.
