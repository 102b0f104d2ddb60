//! The admin listener (`-o metrics_port`): Prometheus `/metrics` and the
//! dashboard (`/` and its versioned JSON API `/api/v1/...`) with its history
//! sampler, served by hyper ([`server`]) behind the access rules of
//! [`auth`] (docs/admin-listener.md).

pub mod auth;
pub mod dashboard;
pub mod history;
pub mod json;
pub mod metrics;
pub mod server;
