//! OAuth 2.1 for connectors (DESIGN §2 "Connector authorization"), on
//! rmcp's `auth` module. Built in pieces (issue 11): `http` is the SSRF-
//! guarded HTTP client every OAuth request goes through; `store` is where
//! clients, tokens and requests in flight live (Postgres, sealed).

pub mod http;
pub mod store;
