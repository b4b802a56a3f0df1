//! The SSRF guard (`countersign::ssrf`, DESIGN §8), end to end through
//! reqwest.
//!
//! Nothing here sends a packet anywhere but 127.0.0.1: names resolve through
//! a stub ([`helpers::StubResolver`]), and clients carry a recording
//! connector layer ([`helpers::Recorder`]) that writes down where reqwest
//! would connect and only dials loopback literals. Real connections go to
//! [`helpers::Loopback`], an axum server on `127.0.0.1:0`.
//!
//! - [`hostile`]: the table of URLs that must be refused, each with a reason.
//! - [`allowed`]: public destinations pass, and reqwest would dial exactly
//!   the checked address.
//! - [`allow_list`]: `COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS` against real
//!   loopback servers.
//! - [`redirects`]: 3xx responses are returned, never followed.
//! - [`rebinding`]: every connection's addresses are checked when it is made.
//! - [`oauth`]: the OAuth HTTP client follows discovery redirects only
//!   through the same guard, and bounds what it reads.

mod allow_list;
mod allowed;
mod helpers;
mod hostile;
mod oauth;
mod rebinding;
mod redirects;
