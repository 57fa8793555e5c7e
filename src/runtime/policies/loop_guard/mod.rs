//! The loop guard: one agent's repeats in a turn (`guard`), and its layer.

pub mod guard;
pub mod layer;
