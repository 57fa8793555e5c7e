//! Pausing the whole team (`gate`), and the layer that holds each model call at it.

pub mod gate;
pub mod layer;
