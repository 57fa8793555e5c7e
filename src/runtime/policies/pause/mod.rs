//! Pausing the whole team (`gate`), the layer that holds each model and tool call at it,
//! and the user's control of the team's run it owns: `Op::Pause`, `Op::Resume`, and
//! `Op::Stop` (`stop`, which lifts a pause).

pub mod gate;
pub mod layer;
pub mod stop;
