//! The admin listener (`-o metrics_port`): Prometheus `/metrics`.

pub mod metrics;
