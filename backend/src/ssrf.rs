//! The SSRF guard for connector URLs (DESIGN §8): users type a URL, the
//! server connects to it, so the URL must not be a way into the server's own
//! network (loopback services, the cloud metadata endpoint, the database, the
//! office LAN).
//!
//! What it owns:
//!
//! - [`parse_target`]: the syntax rules. `https` only (plain `http` only for
//!   allow-listed destinations), no `user:pass@`, no port on the Fetch
//!   standard's "bad port" list, and IPv4 hosts only in canonical dotted-quad
//!   form: `2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`, `127。0。0。1` are
//!   refused, never interpreted.
//! - [`classify`]: which IP addresses are public. Everything else is refused
//!   with its class named (loopback, private, link-local, CGNAT, metadata,
//!   documentation, IPv4-embedding IPv6 forms, …).
//! - [`AllowList`]: `COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS`, the only thing
//!   that relaxes the rules, and only two of them: an allow-listed
//!   destination may be non-public and may use plain `http`.
//! - [`check`]: the pre-flight for the add-connector form, and the only
//!   constructor of [`GuardedTarget`].
//! - [`guarded_client`]: the only way to build the `reqwest::Client` that
//!   talks to connectors. Its resolver ([`GuardedResolver`]) classifies every
//!   address it hands to reqwest, so reqwest connects exactly to addresses
//!   that were checked for that very connection (DNS rebinding between
//!   [`check`] and connect is caught there), redirects are never followed,
//!   and no proxy from the environment is used (a proxy would resolve the
//!   name itself, out of the guard's sight).
//!
//! What it deliberately does not do: decide what a 3xx means (the MCP client
//! turns it into an error), time out whole requests (MCP streams are long;
//! per-request timeouts belong to the MCP client), or know about HTTP status
//! codes.
//!
//! # Architecture invariant
//!
//! **Every connection to a connector goes through [`check`] and a client from
//! [`guarded_client`].** Callers hold a [`GuardedTarget`] (only [`check`]
//! makes one) and send requests to [`GuardedTarget::url`] with the guarded
//! client. That includes every URL a server hands back (an SSE `endpoint`
//! event, OAuth metadata): each is checked before it is used.
//!
//! Why both: reqwest does not call the resolver for IP-literal hosts, so the
//! resolver alone cannot see `https://127.0.0.1/`; and [`check`] alone cannot
//! see what DNS answers at connect time. As a second line, the client also
//! carries a connector layer that re-applies the scheme, port and literal-IP
//! rules to every connection it opens, and tells the resolver the port and
//! scheme of the connection it is resolving for (allow-list entries can be
//! port-specific).
//!
//! The builder handed to [`guarded_client`] must not carry `resolve` /
//! `resolve_to_addrs` overrides: reqwest applies those on top of any
//! resolver, out of the guard's sight.
//!
//! # Layout
//!
//! One private module per step, each with its own "owns / does not" note:
//! `ssrf/syntax.rs` (the URL as typed), `ssrf/address_class.rs` (which addresses
//! are public), `ssrf/allow_list.rs` (the setting), `ssrf/resolve.rs` (the
//! address rules and [`check`]) and `ssrf/client.rs` ([`guarded_client`]).
//! This file holds the error type and re-exports the public API, so callers
//! write `ssrf::check`, never a submodule path.

use std::io;
use std::net::IpAddr;
use std::time::Duration;

mod address_class;
mod allow_list;
mod client;
mod resolve;
mod syntax;

pub use address_class::{AddressClass, Refusal, classify};
pub use allow_list::AllowList;
pub use client::{GuardedResolver, guarded_client};
pub use resolve::{GuardedTarget, HostResolver, Lookup, SystemResolver, check};
pub use syntax::{Host, Scheme, Target, parse_target};

/// The environment variable that lists allowed non-public destinations.
pub const ALLOW_ENV: &str = "COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS";

/// How long [`guarded_client`] waits for a TCP + TLS connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What an administrator can do about a refusal; ends every refusal message.
const ALLOW_HINT: &str = "Countersign does not connect to private networks. \
     If this server should be reachable, ask your administrator to allow it.";

/// Why a connector URL or destination was refused. The messages are meant
/// for the user who typed the URL: they say why, and name at most the host
/// and the address.
#[derive(Debug, thiserror::Error)]
pub enum SsrfError {
    /// Not a URL at all, or one the URL parser rejects.
    #[error(
        "this is not a valid connector URL ({reason}); write it like https://mcp.example.com/mcp"
    )]
    InvalidUrl {
        /// What is wrong, in the URL parser's words.
        reason: String,
    },
    /// A scheme other than `https` and `http`.
    #[error("connector URLs must use https (not {scheme}:)")]
    SchemeNotAllowed {
        /// The scheme as written, lowercased.
        scheme: String,
    },
    /// Plain `http` to a destination that is not allow-listed.
    #[error(
        "connector URLs must use https; plain http is only for destinations your \
         administrator allows"
    )]
    HttpNotAllowed,
    /// `user:pass@` in the URL.
    #[error(
        "connector URLs must not contain a user name or password; \
         use the connector's authentication settings instead"
    )]
    Userinfo,
    /// A percent-encoded host name.
    #[error("connector host names must be written plainly, without %-encoding")]
    PercentEncodedHost,
    /// An IPv4 address in a spelling other than four decimal numbers.
    #[error(
        "{host} looks like an IP address written in a non-standard form; \
         write IPv4 addresses as four decimal numbers (like 203.0.113.7)"
    )]
    NonCanonicalIpv4 {
        /// The host as written.
        host: String,
    },
    /// Port 0, or a port that browsers refuse too (the Fetch standard's "bad
    /// ports": SMTP, SSH, IRC, …), so a connector cannot be aimed at a mail
    /// server.
    #[error("port {port} is not allowed for connectors")]
    PortNotAllowed {
        /// The refused port.
        port: u16,
    },
    /// A name that is local by definition (`localhost`, `*.localhost`) or a
    /// cloud metadata name.
    #[error("{host} is a local or cloud-metadata host name: {ALLOW_HINT}")]
    LocalName {
        /// The host as parsed.
        host: String,
    },
    /// An IP-literal host that is not public.
    #[error("{addr} is {refusal}: {ALLOW_HINT}")]
    RefusedAddress {
        /// The address.
        addr: IpAddr,
        /// Why it is not public.
        refusal: Refusal,
    },
    /// A name that resolves to a non-public address (one is enough).
    #[error("{host} resolves to {addr}, {refusal}: {ALLOW_HINT}")]
    RefusedName {
        /// The host as parsed.
        host: String,
        /// The first refused address it resolved to.
        addr: IpAddr,
        /// Why that address is not public.
        refusal: Refusal,
    },
    /// The name did not resolve. The resolver's own error is kept as the
    /// source for logs and left out of the message.
    #[error("could not resolve {host}")]
    Unresolvable {
        /// The host as parsed.
        host: String,
        /// What the resolver said.
        #[source]
        source: io::Error,
    },
    /// The name resolved to nothing.
    #[error("{host} does not resolve to any address")]
    NoAddresses {
        /// The host as parsed.
        host: String,
    },
    /// A connection whose destination the guard could not read. Only the
    /// connector layer of [`guarded_client`] returns it; it fails closed.
    #[error("refused a connection whose destination could not be determined")]
    UnknownDestination,
    /// A bad `COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS` entry.
    #[error("COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS: {entry:?} is not allowed: {reason}")]
    InvalidAllowEntry {
        /// The entry as written.
        entry: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl SsrfError {
    /// The address refusal inside, if this is one.
    pub fn refusal(&self) -> Option<Refusal> {
        match self {
            Self::RefusedAddress { refusal, .. } | Self::RefusedName { refusal, .. } => {
                Some(*refusal)
            }
            _ => None,
        }
    }
}
