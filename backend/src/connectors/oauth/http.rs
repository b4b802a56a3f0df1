//! [`GuardedOAuthHttp`]: rmcp's [`OAuthHttpClient`] over the connector
//! client, so every OAuth request (protected-resource and authorization
//! server discovery, registration, token, refresh, revocation) passes the
//! same SSRF guard as the MCP traffic itself (DESIGN §2, §8).
//!
//! What it owns: the pre-flight [`ssrf::check`] of every URL (scheme, host,
//! every resolved address, the private-connector allow-list) and, for the
//! server's sign-ins, the admin policy's allowed connector hosts
//! ([`GuardedOAuthHttp::with_policy`]), sending
//! through [`ssrf::guarded_client`] (which hands the connection only the
//! addresses it checked, so a rebinding between the check and the dial is
//! caught), redirects (followed only when rmcp asks for
//! [`OAuthHttpRedirectPolicy::Follow`], at most [`MAX_REDIRECTS`], each hop
//! checked again; never for token requests, which rmcp sends with
//! `Stop`), a whole-request timeout and a body cap.
//!
//! Why not rmcp's own client (`AuthorizationManager::new`): it filters
//! addresses by its own rules, which cannot follow our allow-list
//! (`COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS`) or our stub resolvers in tests,
//! and `with_client` would give up the `Stop` policy for token requests.

use crate::ssrf::{self, AllowList, HostResolver};
use futures_util::StreamExt as _;
use reqwest::Url;
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};
use std::{sync::Arc, time::Duration};

/// Redirects followed for one discovery request.
pub const MAX_REDIRECTS: usize = 5;
/// The largest OAuth response read (metadata documents and token answers
/// are a few KiB).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Longest any OAuth request may take, when rmcp suggests none.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Why an OAuth request was not sent or not read.
#[derive(Debug, thiserror::Error)]
pub enum OAuthHttpError {
    /// The guard refused the URL (or a redirect's target).
    #[error("refused {url}: {reason}")]
    Refused {
        /// Where it would have gone.
        url: String,
        /// What the guard said.
        reason: ssrf::SsrfError,
    },
    /// The admin policy's allowed connector hosts do not name the URL's
    /// host: an OAuth endpoint gets what the connector would, so it must
    /// be where a connector may point.
    #[error("refused {url}: the administrator's policy does not allow the host {host}")]
    ForbiddenByPolicy {
        /// Where it would have gone.
        url: String,
        /// Its host, normalised.
        host: String,
    },
    /// More than [`MAX_REDIRECTS`] redirects.
    #[error("more than {MAX_REDIRECTS} redirects")]
    TooManyRedirects,
    /// A redirect without a usable `Location`.
    #[error("a redirect without a usable Location")]
    BadRedirect,
    /// The body passed [`MAX_BODY_BYTES`].
    #[error("the response is larger than {MAX_BODY_BYTES} bytes")]
    TooLarge,
}

/// rmcp's OAuth HTTP client for one connector's OAuth traffic.
#[derive(Debug, Clone)]
pub struct GuardedOAuthHttp {
    client: reqwest::Client,
    resolver: Arc<dyn HostResolver>,
    allow: AllowList,
    /// The admin policy, whose allowed connector hosts every URL must
    /// pass too (the server's sign-ins; the operator's probe has none).
    policy: Option<Arc<crate::policy::Policy>>,
}

impl GuardedOAuthHttp {
    /// Sends through `client` (a [`ssrf::guarded_client`] built with the
    /// same resolver and allow-list), pre-checking with `resolver`.
    pub fn new(client: reqwest::Client, resolver: Arc<dyn HostResolver>, allow: AllowList) -> Self {
        Self {
            client,
            resolver,
            allow,
            policy: None,
        }
    }

    /// Also refuses every URL whose host `policy`'s allowed connector
    /// hosts do not name (discovery, registration, token, revocation,
    /// each redirect).
    #[must_use]
    pub fn with_policy(mut self, policy: crate::policy::Policy) -> Self {
        self.policy = Some(Arc::new(policy));
        self
    }

    async fn check(&self, url: &Url) -> Result<(), OAuthHttpError> {
        if let Some(policy) = &self.policy
            && !policy.allows_host(url.as_str())
        {
            return Err(OAuthHttpError::ForbiddenByPolicy {
                url: url.to_string(),
                host: crate::policy::host_of(url.as_str()).unwrap_or_default(),
            });
        }
        ssrf::check(url.as_str(), self.resolver.as_ref(), &self.allow)
            .await
            .map(|_| ())
            .map_err(|reason| OAuthHttpError::Refused {
                url: url.to_string(),
                reason,
            })
    }

    /// Sends `request` (its own timeout, else [`REQUEST_TIMEOUT`]) after
    /// the guard's pre-flight; with `follow`, follows up to
    /// [`MAX_REDIRECTS`] redirects of a GET, each checked again. Reads at
    /// most [`MAX_BODY_BYTES`].
    pub async fn fetch(
        &self,
        mut request: reqwest::Request,
        follow: bool,
    ) -> Result<axum::http::Response<Vec<u8>>, OAuthHttpClientError> {
        if request.timeout().is_none() {
            *request.timeout_mut() = Some(REQUEST_TIMEOUT);
        }
        let mut redirects = 0;
        let response = loop {
            self.check(request.url()).await?;
            // Only a body-less GET (discovery) is sent again elsewhere.
            let again = (follow && request.method() == reqwest::Method::GET)
                .then(|| request.try_clone())
                .flatten();
            let response = self.client.execute(request).await?;
            if !(follow && response.status().is_redirection()) {
                break response;
            }
            redirects += 1;
            if redirects > MAX_REDIRECTS {
                return Err(OAuthHttpError::TooManyRedirects.into());
            }
            let next = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| response.url().join(l).ok())
                .ok_or(OAuthHttpError::BadRedirect)?;
            let mut again = again.ok_or(OAuthHttpError::BadRedirect)?;
            *again.url_mut() = next;
            request = again;
        };
        let mut builder = axum::http::Response::builder()
            .status(response.status())
            .version(response.version());
        for (name, value) in response.headers() {
            builder = builder.header(name, value);
        }
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk?;
            if chunk.len() > MAX_BODY_BYTES - body.len() {
                return Err(OAuthHttpError::TooLarge.into());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(builder.body(body)?)
    }
}

impl OAuthHttpClient for GuardedOAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let follow = request.redirect_policy == OAuthHttpRedirectPolicy::Follow;
            let mut outgoing = reqwest::Request::try_from(request.request)?;
            *outgoing.timeout_mut() = request.timeout;
            self.fetch(outgoing, follow).await
        })
    }
}
