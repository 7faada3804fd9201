//! nxvk-fusion: the graph compiler of nxvk.
//!
//! placeholder docs (rewritten below once the planner lands).

mod builder;
mod encoding;
mod graph;

pub use builder::GraphBuilder;
pub use encoding::{MAGIC, MAX_DEPTH, VERSION, decode, encode};
pub use graph::{CondClause, DotAxes, Graph, Node, NodeId, NodeType, Op, TensorType};
