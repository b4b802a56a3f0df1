//! Single sign-on with OpenID Connect (docs/design.md §4): the
//! authorization code flow with PKCE, `state` and `nonce`, through the
//! `openidconnect` crate, and what an ID token makes of an account.
//!
//! - [`Provider`] holds the issuer's discovery document and JWKS, fetched
//!   once and kept; an ID token signed with a key the cached set does not
//!   have (the provider rotated its keys) fetches them again — once for
//!   any number of such tokens arriving together, and never otherwise.
//!   Only the provider's own token endpoint hands this server ID tokens,
//!   each for a code of a finished sign-in, so nobody can make it fetch
//!   at will.
//! - [`Provider::start`] stores one `oidc_logins` row (the state's hash,
//!   the nonce, the PKCE verifier) and answers the provider's address.
//! - [`Provider::finish`] takes that row back exactly once (a replayed or
//!   forged `state` finds nothing), redeems the code with the verifier and
//!   checks the ID token: signature (asymmetric algorithms only: no
//!   `none`, no HMAC), `iss`, `aud`, `azp`, `exp`, `iat`, `nonce`.
//! - [`account_for`] turns the checked [`Identity`] into an account, keyed
//!   by `(issuer, sub)` and never by e-mail alone: a known identity signs
//!   in; an unknown one whose e-mail belongs to no account creates one
//!   when its domain is allowed; one whose e-mail belongs to a password
//!   account is linked only after the provider vouched for the address
//!   (`email_verified`) and the person proved that account's password.
//!   The admin and approver groups decide `is_admin` and `is_approver` at
//!   every sign-in.

use crate::{
    auth::{AuthError, Email, PasswordHasher, session::token_hash},
    config::OidcSettings,
    db::{self, Tx},
};
use openidconnect::{
    AuthenticationFlow, AuthorizationCode, ClientId, ClientSecret, CsrfToken, IssuerUrl, Nonce,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, Scope, TokenResponse,
    core::{
        CoreClient, CoreIdTokenVerifier, CoreJsonWebKeySet, CoreJwsSigningAlgorithm,
        CoreProviderMetadata, CoreResponseType,
    },
};
use sqlx::PgPool;
use std::time::{Duration, Instant};
use tokio::sync::RwLock;
use uuid::Uuid;

/// How long a sign-in may take at the provider before its `state` is void.
const LOGIN_TTL: Duration = Duration::from_secs(10 * 60);

/// An ID token issued longer ago than this is refused (its `iat`).
const MAX_TOKEN_AGE: Duration = Duration::from_secs(10 * 60);

/// Clock skew allowed between the provider and this server.
const SKEW: Duration = Duration::from_secs(60);

/// Bytes of a provider's answer read at most.
const MAX_BODY: usize = 256 * 1024;

/// The signature algorithms an ID token may use: asymmetric ones only.
const ALLOWED_ALGS: [CoreJwsSigningAlgorithm; 9] = [
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha384,
    CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha512,
    CoreJwsSigningAlgorithm::RsaSsaPssSha256,
    CoreJwsSigningAlgorithm::RsaSsaPssSha384,
    CoreJwsSigningAlgorithm::RsaSsaPssSha512,
    CoreJwsSigningAlgorithm::EcdsaP256Sha256,
    CoreJwsSigningAlgorithm::EcdsaP384Sha384,
    CoreJwsSigningAlgorithm::EdDsa,
];

/// Whether `groups` holds one of `role` (`None` when `role` is empty: the
/// provider decides nothing).
fn member(role: &[String], groups: &[String]) -> Option<bool> {
    (!role.is_empty()).then(|| groups.iter().any(|g| role.contains(g)))
}

/// Comma-separated words, trimmed, lower-cased, blanks dropped.
fn list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
        .collect()
}

/// What went wrong with single sign-on, in words a person can act on (the
/// provider's own details go to the log, not to the page).
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// No provider is configured.
    #[error("Single sign-on is not set up on this server.")]
    NotConfigured,
    /// The settings cannot work.
    #[error("Single sign-on is misconfigured: {0}")]
    Misconfigured(String),
    /// The provider could not be reached or answered nonsense.
    #[error("The sign-in provider could not be reached. Try again in a moment.")]
    Unreachable(String),
    /// The `state` is unknown, used or too old.
    #[error("This sign-in link is used or too old. Start again.")]
    UnknownState,
    /// The provider said no (the person cancelled, or it refused).
    #[error("The sign-in provider did not sign you in: {0}")]
    Refused(String),
    /// The ID token failed a check.
    #[error("The sign-in provider's answer failed a check, so nobody was signed in.")]
    BadToken(String),
    /// The e-mail's domain may not create an account.
    #[error("Accounts for {0} cannot be created here. Ask your administrator.")]
    DomainNotAllowed(String),
    /// The token names no e-mail address.
    #[error("The sign-in provider did not say your e-mail address.")]
    NoEmail,
    /// A password account has the address, and the provider did not say
    /// it verified it.
    #[error(
        "An account with this e-mail address exists here, and the sign-in provider did not confirm the address, so the two cannot be linked. Sign in with your password."
    )]
    UnverifiedEmail,
    /// The address belongs to an account that this provider already
    /// knows under another subject: the provider's `sub` changed, or
    /// someone else was given the address.
    #[error(
        "Your sign-in provider knows this e-mail address under another identity than the one already linked here. Ask your administrator."
    )]
    SubjectChanged,
    /// The account is disabled.
    #[error("account_disabled")]
    Disabled,
    /// Anything from the account side.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// The database.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// The provider's documents as last fetched.
struct Cached {
    metadata: CoreProviderMetadata,
    fetched_at: Instant,
}

/// The configured identity provider.
pub struct Provider {
    issuer: IssuerUrl,
    client_id: ClientId,
    client_secret: Option<ClientSecret>,
    scopes: Vec<String>,
    /// The button's words.
    pub button_label: String,
    allowed_domains: Vec<String>,
    admin_groups: Vec<String>,
    approver_groups: Vec<String>,
    groups_claim: String,
    http: Http,
    cached: RwLock<Option<Cached>>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provider")
            .field("issuer", &self.issuer.as_str())
            .field("client_id", &self.client_id.as_str())
            .finish_non_exhaustive()
    }
}

/// Why a sign-in was started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// To sign in.
    SignIn,
}

impl Purpose {
    fn as_str(self) -> &'static str {
        match self {
            Self::SignIn => "sign_in",
        }
    }
}

/// What a checked ID token says of the person.
#[derive(Debug, Clone)]
pub struct Identity {
    /// `iss`.
    pub issuer: String,
    /// `sub`.
    pub subject: String,
    /// `email`, lower-cased.
    pub email: Option<String>,
    /// `email_verified`.
    pub email_verified: bool,
    /// `name`.
    pub name: Option<String>,
    /// The configured groups claim.
    pub groups: Vec<String>,
    /// `amr`.
    pub amr: Vec<String>,
}

/// A finished sign-in: who, and where to go next.
#[derive(Debug)]
pub struct Finished {
    /// The checked identity.
    pub identity: Identity,
    /// The local path the sign-in started from.
    pub return_to: String,
}

/// An HTTP error of [`Http`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HttpError(String);

/// The crate's requests, sent through reqwest, reading at most
/// [`MAX_BODY`] bytes of an answer.
struct Http(reqwest::Client);

impl<'c> openidconnect::AsyncHttpClient<'c> for Http {
    type Error = HttpError;
    type Future = std::pin::Pin<
        Box<
            dyn std::future::Future<Output = Result<openidconnect::HttpResponse, HttpError>>
                + Send
                + Sync
                + 'c,
        >,
    >;

    fn call(&'c self, request: openidconnect::HttpRequest) -> Self::Future {
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let mut response = self
                .0
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body)
                .send()
                .await
                .map_err(|e| HttpError(e.to_string()))?;
            let status = response.status();
            let headers = response.headers().clone();
            let mut bytes = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|e| HttpError(e.to_string()))?
            {
                if bytes.len() + chunk.len() > MAX_BODY {
                    return Err(HttpError("the answer is too large".into()));
                }
                bytes.extend_from_slice(&chunk);
            }
            let mut out = openidconnect::HttpResponse::new(bytes);
            *out.status_mut() = status;
            *out.headers_mut() = headers;
            Ok(out)
        })
    }
}

impl Provider {
    /// The provider of `settings`, or `None` when no issuer is set.
    /// Nothing is fetched yet: the first sign-in does.
    pub fn from_settings(settings: &OidcSettings) -> Result<Option<Self>, OidcError> {
        let Some(issuer) = settings.issuer.as_deref().filter(|s| !s.trim().is_empty()) else {
            return Ok(None);
        };
        let issuer = IssuerUrl::new(issuer.trim().to_owned())
            .map_err(|e| OidcError::Misconfigured(format!("COUNTERSIGN_OIDC_ISSUER: {e}")))?;
        let client_id = settings
            .client_id
            .as_deref()
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| {
                OidcError::Misconfigured("COUNTERSIGN_OIDC_CLIENT_ID is not set.".into())
            })?;
        let http = reqwest::Client::builder()
            // A redirect would let the provider's answer send this server
            // elsewhere (the crate's own warning).
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| OidcError::Misconfigured(e.to_string()))?;
        let mut scopes: Vec<String> = settings
            .scopes
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        scopes.retain(|s| s != "openid");
        Ok(Some(Self {
            issuer,
            client_id: ClientId::new(client_id.trim().to_owned()),
            client_secret: settings
                .client_secret
                .as_ref()
                .map(|s| ClientSecret::new(s.expose().to_owned())),
            scopes,
            button_label: settings.button_label.clone(),
            allowed_domains: list(&settings.allowed_domains),
            admin_groups: list(&settings.admin_groups),
            approver_groups: list(&settings.approver_groups),
            groups_claim: settings.groups_claim.trim().to_owned(),
            http: Http(http),
            cached: RwLock::new(None),
        }))
    }

    /// The issuer, as configured.
    pub fn issuer(&self) -> &str {
        self.issuer.as_str()
    }

    /// The discovery document and keys, with when they were fetched:
    /// cached, or fetched now when there are none yet, or when `stale` is
    /// the fetch time of a copy whose keys lacked a token's key (and no
    /// other request has fetched them again since: concurrent misses make
    /// one fetch).
    async fn metadata(
        &self,
        stale: Option<Instant>,
    ) -> Result<(CoreProviderMetadata, Instant), OidcError> {
        let fresh_enough = |cached: &Cached| stale.is_none_or(|seen| cached.fetched_at > seen);
        if let Some(cached) = self.cached.read().await.as_ref()
            && fresh_enough(cached)
        {
            return Ok((cached.metadata.clone(), cached.fetched_at));
        }
        let mut slot = self.cached.write().await;
        if let Some(cached) = slot.as_ref()
            && fresh_enough(cached)
        {
            return Ok((cached.metadata.clone(), cached.fetched_at));
        }
        let metadata = CoreProviderMetadata::discover_async(self.issuer.clone(), &self.http)
            .await
            .map_err(|e| OidcError::Unreachable(format!("discovery: {e}")))?;
        tracing::info!(issuer = %self.issuer.as_str(), "fetched the identity provider's keys");
        let fetched_at = Instant::now();
        *slot = Some(Cached {
            metadata: metadata.clone(),
            fetched_at,
        });
        Ok((metadata, fetched_at))
    }

    /// The crate's client for `metadata`, sending the browser back to
    /// `redirect_uri`.
    fn client(
        &self,
        metadata: CoreProviderMetadata,
        redirect_uri: &str,
    ) -> Result<
        CoreClient<
            openidconnect::EndpointSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointNotSet,
            openidconnect::EndpointMaybeSet,
            openidconnect::EndpointMaybeSet,
        >,
        OidcError,
    > {
        let redirect = RedirectUrl::new(redirect_uri.to_owned())
            .map_err(|e| OidcError::Misconfigured(format!("redirect URI: {e}")))?;
        Ok(CoreClient::from_provider_metadata(
            metadata,
            self.client_id.clone(),
            self.client_secret.clone(),
        )
        .set_redirect_uri(redirect))
    }

    /// Starts a sign-in: stores its state, nonce and PKCE verifier, and
    /// answers the provider's address to send the browser to and the
    /// state (for the browser's cookie).
    pub async fn start(
        &self,
        pool: &PgPool,
        redirect_uri: &str,
        purpose: Purpose,
        return_to: &str,
    ) -> Result<(String, String), OidcError> {
        let (metadata, _) = self.metadata(None).await?;
        let client = self.client(metadata, redirect_uri)?;
        let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
        let mut request = client
            .authorize_url(
                AuthenticationFlow::<CoreResponseType>::AuthorizationCode,
                CsrfToken::new_random,
                Nonce::new_random,
            )
            .set_pkce_challenge(challenge);
        for scope in &self.scopes {
            request = request.add_scope(Scope::new(scope.clone()));
        }
        let (url, state, nonce) = request.url();
        let mut tx = db::service_tx(pool).await?;
        sqlx::query!(
            "insert into oidc_logins (state_hash, nonce, pkce_verifier, purpose, return_to, expires_at)
             values ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))",
            token_hash(state.secret()),
            nonce.secret(),
            verifier.secret(),
            purpose.as_str(),
            return_to,
            LOGIN_TTL.as_secs_f64(),
        )
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok((url.to_string(), state.secret().clone()))
    }

    /// Finishes a sign-in: takes its stored state back (once), redeems the
    /// code and checks the ID token.
    pub async fn finish(
        &self,
        pool: &PgPool,
        redirect_uri: &str,
        state: &str,
        code: &str,
    ) -> Result<Finished, OidcError> {
        let mut tx = db::service_tx(pool).await?;
        let row = sqlx::query!(
            "delete from oidc_logins where state_hash = $1
             returning nonce, pkce_verifier, return_to, expires_at > now() as \"live!\"",
            token_hash(state),
        )
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        let row = row.filter(|r| r.live).ok_or(OidcError::UnknownState)?;

        let (metadata, fetched_at) = self.metadata(None).await?;
        let keys = metadata.jwks().clone();
        let client = self.client(metadata, redirect_uri)?;
        let response = client
            .exchange_code(AuthorizationCode::new(code.to_owned()))
            .map_err(|e| OidcError::Misconfigured(e.to_string()))?
            .set_pkce_verifier(PkceCodeVerifier::new(row.pkce_verifier))
            .request_async(&self.http)
            .await
            .map_err(|e| OidcError::Refused(format!("token endpoint: {e}")))?;
        let id_token = response
            .id_token()
            .ok_or_else(|| OidcError::BadToken("no id_token in the answer".into()))?;
        let nonce = Nonce::new(row.nonce);

        let check = |keys: CoreJsonWebKeySet| {
            let verifier = self.verifier(keys);
            id_token.claims(&verifier, &nonce).cloned()
        };
        let claims = match check(keys) {
            Err(openidconnect::ClaimsVerificationError::SignatureVerification(
                openidconnect::SignatureVerificationError::NoMatchingKey,
            )) => {
                // A key this server has not seen: the provider may have
                // rotated its keys.
                let (fresh, _) = self.metadata(Some(fetched_at)).await?;
                check(fresh.jwks().clone())
            }
            other => other,
        }
        .map_err(|e| OidcError::BadToken(e.to_string()))?;

        // The groups claim is not one the crate knows: read from the very
        // payload whose signature was just checked.
        let payload = id_token.to_string();
        let groups = payload
            .split('.')
            .nth(1)
            .and_then(|part| {
                use base64::Engine as _;
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(part)
                    .ok()
            })
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .and_then(|value| value.get(&self.groups_claim).cloned())
            .map(|value| match value {
                serde_json::Value::Array(items) => items
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_lowercase))
                    .collect(),
                serde_json::Value::String(one) => vec![one.to_lowercase()],
                _ => Vec::new(),
            })
            .unwrap_or_default();

        Ok(Finished {
            identity: Identity {
                issuer: claims.issuer().as_str().to_owned(),
                subject: claims.subject().as_str().to_owned(),
                email: claims.email().map(|e| e.as_str().to_lowercase()),
                email_verified: claims.email_verified() == Some(true),
                name: claims
                    .name()
                    .and_then(|n| n.get(None))
                    .map(|n| n.as_str().to_owned()),
                groups,
                amr: claims
                    .auth_method_refs()
                    .map(|amr| amr.iter().map(|m| m.as_str().to_owned()).collect())
                    .unwrap_or_default(),
            },
            return_to: row.return_to,
        })
    }

    /// The ID token checks: this client's audience, the issuer, the keys
    /// given, asymmetric signatures only, and an `iat` neither in the
    /// future nor older than [`MAX_TOKEN_AGE`] (`exp` and `nonce` are the
    /// crate's own checks).
    fn verifier(&self, keys: CoreJsonWebKeySet) -> CoreIdTokenVerifier<'static> {
        CoreIdTokenVerifier::new_public_client(self.client_id.clone(), self.issuer.clone(), keys)
            .set_allowed_algs(ALLOWED_ALGS)
            .set_issue_time_verifier_fn(|iat| {
                let now = chrono::Utc::now();
                let skew = chrono::Duration::from_std(SKEW).unwrap_or_default();
                let age = chrono::Duration::from_std(MAX_TOKEN_AGE).unwrap_or_default();
                if iat > now + skew {
                    Err("issued in the future".to_owned())
                } else if iat < now - age {
                    Err("issued too long ago".to_owned())
                } else {
                    Ok(())
                }
            })
    }

    /// Whether `email`'s domain may create an account.
    fn domain_allowed(&self, email: &str) -> bool {
        self.allowed_domains.is_empty()
            || email
                .rsplit_once('@')
                .is_some_and(|(_, domain)| self.allowed_domains.iter().any(|d| d == domain))
    }

    /// Whether `groups` make an administrator; `None` when no admin groups
    /// are configured (the provider decides no role).
    fn admin_by_groups(&self, groups: &[String]) -> Option<bool> {
        member(&self.admin_groups, groups)
    }

    /// Whether `groups` make an approver (second approvals); `None` when
    /// no approver groups are configured.
    fn approver_by_groups(&self, groups: &[String]) -> Option<bool> {
        member(&self.approver_groups, groups)
    }
}

/// What [`account_for`] made of an identity.
#[derive(Debug)]
pub enum Account {
    /// This account signs in.
    User(Uuid),
    /// A password account has the address: link after its password.
    NeedsPassword {
        /// The account.
        user_id: Uuid,
        /// Its e-mail, for the page.
        email: String,
    },
}

/// Finds or creates the account of `identity` (see the module's notes),
/// and sets its administrator role from the groups.
pub async fn account_for(
    tx: &mut Tx,
    provider: &Provider,
    identity: &Identity,
    hasher: &PasswordHasher,
) -> Result<Account, OidcError> {
    let known = sqlx::query_scalar!(
        "select user_id from user_identities where issuer = $1 and subject = $2",
        identity.issuer,
        identity.subject,
    )
    .fetch_optional(&mut **tx)
    .await?;
    let user_id = match known {
        Some(user_id) => user_id,
        None => {
            let email = identity.email.as_deref().ok_or(OidcError::NoEmail)?;
            let email = Email::parse(email).map_err(|_| OidcError::NoEmail)?;
            let existing =
                sqlx::query_scalar!("select id from users where email = $1", email.as_str())
                    .fetch_optional(&mut **tx)
                    .await?;
            if let Some(user_id) = existing {
                let linked_here = sqlx::query_scalar!(
                    r#"select exists (select 1 from user_identities
                                       where user_id = $1 and issuer = $2) as "linked!""#,
                    user_id,
                    identity.issuer,
                )
                .fetch_one(&mut **tx)
                .await?;
                if linked_here {
                    return Err(OidcError::SubjectChanged);
                }
                if !identity.email_verified {
                    return Err(OidcError::UnverifiedEmail);
                }
                return Ok(Account::NeedsPassword {
                    user_id,
                    email: email.as_str().to_owned(),
                });
            }
            if !provider.domain_allowed(email.as_str()) {
                let domain = email.as_str().rsplit_once('@').map_or("", |(_, d)| d);
                return Err(OidcError::DomainNotAllowed(domain.to_owned()));
            }
            create_user(tx, identity, &email, hasher).await?
        }
    };
    let disabled = sqlx::query_scalar!(
        r#"select disabled_at is not null as "disabled!" from users where id = $1"#,
        user_id
    )
    .fetch_one(&mut **tx)
    .await?;
    if disabled {
        return Err(OidcError::Disabled);
    }
    if let Some(is_admin) = provider.admin_by_groups(&identity.groups) {
        sqlx::query!(
            "update users set is_admin = $2 where id = $1 and is_admin <> $2",
            user_id,
            is_admin
        )
        .execute(&mut **tx)
        .await?;
    }
    if let Some(is_approver) = provider.approver_by_groups(&identity.groups) {
        sqlx::query!(
            "update users set is_approver = $2 where id = $1 and is_approver <> $2",
            user_id,
            is_approver
        )
        .execute(&mut **tx)
        .await?;
    }
    sqlx::query!(
        "update user_identities set last_sign_in_at = now(), email = $3
          where issuer = $1 and subject = $2",
        identity.issuer,
        identity.subject,
        identity.email,
    )
    .execute(&mut **tx)
    .await?;
    Ok(Account::User(user_id))
}

/// Links `identity` to the password account `user_id` (its password was
/// just proved).
pub async fn link(tx: &mut Tx, identity: &Identity, user_id: Uuid) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "insert into user_identities (issuer, subject, user_id, email, last_sign_in_at)
         values ($1, $2, $3, $4, now())",
        identity.issuer,
        identity.subject,
        user_id,
        identity.email,
    )
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Creates the account of a first sign-in (just in time): a password
/// nobody knows (the hash of 32 random bytes, never shown), the identity
/// linked, and the first account of the server is its admin as with
/// sign-up.
async fn create_user(
    tx: &mut Tx,
    identity: &Identity,
    email: &Email,
    hasher: &PasswordHasher,
) -> Result<Uuid, OidcError> {
    let random: [u8; 32] = rand::random();
    let unusable_hash = hasher.hash(&hex::encode(random)).await?;
    // Serialise with sign-up, so exactly one account can be the first.
    sqlx::query!("select pg_advisory_xact_lock(7305447302)")
        .execute(&mut **tx)
        .await?;
    let is_first: bool =
        sqlx::query_scalar!(r#"select not exists (select 1 from users) as "exists!""#)
            .fetch_one(&mut **tx)
            .await?;
    let user_id = Uuid::new_v4();
    sqlx::query!(
        "insert into users (id, email, password_hash, is_admin) values ($1, $2, $3, $4)",
        user_id,
        email.as_str(),
        unusable_hash,
        is_first,
    )
    .execute(&mut **tx)
    .await?;
    let display_name = identity
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| n.chars().take(80).collect::<String>())
        .unwrap_or_else(|| email.as_str().split('@').next().unwrap_or("").to_owned());
    sqlx::query!(
        "insert into profiles (user_id, display_name) values ($1, $2)",
        user_id,
        display_name,
    )
    .execute(&mut **tx)
    .await?;
    link(tx, identity, user_id).await?;
    tracing::info!(user.id = %user_id, user.is_admin = is_first, "account created by single sign-on");
    Ok(user_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(domains: &str, admins: &str) -> Provider {
        Provider::from_settings(&OidcSettings {
            issuer: Some("https://id.firm.example".into()),
            client_id: Some("countersign".into()),
            scopes: "openid email profile".into(),
            allowed_domains: domains.into(),
            admin_groups: admins.into(),
            groups_claim: "groups".into(),
            ..OidcSettings::default()
        })
        .expect("valid")
        .expect("configured")
    }

    #[test]
    fn no_issuer_is_no_single_sign_on_and_an_issuer_needs_a_client_id() {
        assert!(
            Provider::from_settings(&OidcSettings::default())
                .expect("ok")
                .is_none()
        );
        let err = Provider::from_settings(&OidcSettings {
            issuer: Some("https://id.firm.example".into()),
            ..OidcSettings::default()
        })
        .expect_err("no client id");
        assert!(
            err.to_string().contains("COUNTERSIGN_OIDC_CLIENT_ID"),
            "{err}"
        );
    }

    #[test]
    fn a_domain_is_allowed_by_its_whole_name_only() {
        let p = provider("firm.example, Partner.example", "");
        assert!(p.domain_allowed("ann@firm.example"));
        assert!(p.domain_allowed("bo@partner.example"));
        assert!(!p.domain_allowed("eve@evilfirm.example"));
        assert!(!p.domain_allowed("eve@firm.example.evil.example"));
        assert!(!p.domain_allowed("eve@sub.firm.example"));
        assert!(provider("", "").domain_allowed("anyone@anywhere.example"));
    }

    #[test]
    fn approver_groups_decide_that_role_apart_from_admin() {
        let mut settings = OidcSettings {
            issuer: Some("https://id.firm.example".into()),
            client_id: Some("countersign".into()),
            ..OidcSettings::default()
        };
        settings.approver_groups = "Partners".into();
        let p = Provider::from_settings(&settings)
            .expect("valid")
            .expect("configured");
        assert_eq!(p.approver_by_groups(&["partners".into()]), Some(true));
        assert_eq!(p.approver_by_groups(&["associates".into()]), Some(false));
        assert_eq!(p.admin_by_groups(&["partners".into()]), None);
    }

    #[test]
    fn admin_groups_decide_the_role_only_when_configured() {
        let p = provider("", "Legal-IT, admins");
        assert_eq!(p.admin_by_groups(&["legal-it".into()]), Some(true));
        assert_eq!(p.admin_by_groups(&["lawyers".into()]), Some(false));
        assert_eq!(p.admin_by_groups(&[]), Some(false));
        assert_eq!(provider("", "").admin_by_groups(&["admins".into()]), None);
    }
}
