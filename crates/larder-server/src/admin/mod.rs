//! The admin listener (`-o metrics_port`): Prometheus `/metrics` and the
//! dashboard (`/`, `/api/stats`, `/api/history`) with its history sampler.

pub mod dashboard;
pub mod history;
pub mod json;
pub mod metrics;
