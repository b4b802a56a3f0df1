//! Where a connector's OAuth state lives: Postgres, sealed, service-only
//! (`connector_oauth`, `oauth_states`; see their migration).
//!
//! - [`PgCredentialStore`] is rmcp's `CredentialStore` for one user's
//!   connector *at one URL*: it loads tokens only when they were issued for
//!   that URL (`resource`), saves them only while the connector still
//!   points there and belongs to that user, and coordinates refreshes
//!   across instances with a transaction-scoped advisory lock
//!   ([`CredentialStore::acquire_refresh_guard`]): rmcp holds it from the
//!   load through the token request to the save, so two instances never
//!   spend the same refresh token.
//! - [`save_client`] records the client a sign-in uses (keyed by issuer).
//! - [`save_state`] / [`take_state`]: an authorization request in flight,
//!   stored under the SHA-256 of its `state`; taking it deletes it in the
//!   same statement (single use) and never returns one past its expiry.
//!
//! Every sealed value's additional data names its table, user and
//! connector, so a ciphertext copied to another row does not open.

use crate::{
    db,
    digest::sha256_hex,
    ids::{ConnectorId, UserId},
    secrets::{Sealed, SecretBox},
};
use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, CredentialRefreshGuard, CredentialStore, OAuthClientConfig,
    StoredAuthorizationState, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use std::time::Duration;

/// How long a refresh waits for another refresh of the same connector
/// (on any instance) to finish.
const REFRESH_LOCK_WAIT: Duration = Duration::from_secs(30);

/// How long an authorization request may take, start to callback.
pub const STATE_TTL: Duration = Duration::from_secs(600);

/// The associated data of a sealed value in `table` (`connector_oauth_client`,
/// `connector_oauth_tokens`, `oauth_states`): its owner and connector (also
/// what `secrets::rotate` re-seals it with).
pub(crate) fn aad(table: &str, user_id: UserId, connector_id: ConnectorId) -> Vec<u8> {
    format!("{table}/{user_id}/{connector_id}").into_bytes()
}

fn store_error(err: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(err.to_string())
}

fn seal_json<T: Serialize>(
    secrets: &SecretBox,
    value: &T,
    aad: &[u8],
) -> Result<Sealed, AuthError> {
    let json = serde_json::to_vec(value).map_err(store_error)?;
    Ok(secrets.seal(&json, aad))
}

fn open_json<T: for<'de> Deserialize<'de>>(
    secrets: &SecretBox,
    sealed: &Sealed,
    aad: &[u8],
) -> Result<T, AuthError> {
    let plain = secrets.open(sealed, aad).map_err(store_error)?;
    serde_json::from_slice(&plain).map_err(store_error)
}

/// The client a connector signs in as: what the user entered, or what
/// dynamic registration returned (rmcp's `OAuthClientConfig`, which is not
/// serde).
#[derive(Clone, Serialize, Deserialize)]
pub struct ClientRecord {
    /// `client_id` at the authorization server.
    pub client_id: String,
    /// Its secret, for a confidential client.
    pub client_secret: Option<String>,
    /// Scopes asked for.
    pub scopes: Vec<String>,
    /// Where the authorization server sends the browser back.
    pub redirect_uri: String,
    /// Step-ups made since the user last disconnected (`scopes::step_up`):
    /// while above 0, `scopes` is the union the next sign-in asks for.
    #[serde(default)]
    pub step_ups: u32,
    /// The `resource` parameter (RFC 8707) of its last authorization
    /// request, exactly as sent (the protected-resource metadata's
    /// `resource`), which token requests send again; `None` in records
    /// stored before it was kept (the connector URL is sent then).
    #[serde(default)]
    pub resource_indicator: Option<String>,
}

impl std::fmt::Debug for ClientRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRecord")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field("scopes", &self.scopes)
            .field("redirect_uri", &self.redirect_uri)
            .field("step_ups", &self.step_ups)
            .field("resource_indicator", &self.resource_indicator)
            .finish()
    }
}

impl ClientRecord {
    /// As rmcp configures its client (`application_type` "web", DESIGN §2).
    pub fn config(&self) -> OAuthClientConfig {
        let config = OAuthClientConfig::new(&self.client_id, &self.redirect_uri)
            .with_scopes(self.scopes.clone())
            .with_application_type("web");
        match &self.client_secret {
            Some(secret) => config.with_client_secret(secret),
            None => config,
        }
    }
}

/// Stores the client (and the metadata and issuer it belongs to) for the
/// connector at `resource`, replacing any other; its tokens go, unless the
/// issuer and resource are the ones they were issued by and for.
pub async fn save_client(
    pool: &PgPool,
    secrets: &SecretBox,
    (user_id, connector_id): (UserId, ConnectorId),
    resource: &str,
    metadata: &AuthorizationMetadata,
    client: &ClientRecord,
) -> Result<(), AuthError> {
    let sealed = seal_json(
        secrets,
        client,
        &aad("connector_oauth_client", user_id, connector_id),
    )?;
    let metadata = serde_json::to_value(metadata).map_err(store_error)?;
    let issuer = metadata
        .get("issuer")
        .and_then(|i| i.as_str())
        .map(str::to_owned);
    let mut tx = db::service_tx(pool).await.map_err(store_error)?;
    sqlx::query!(
        "insert into connector_oauth (connector_id, user_id, issuer, resource, metadata,
                                      client_key_id, client_nonce, client_ciphertext)
         select c.id, c.user_id, $3, $4, $5, $6, $7, $8
           from connectors c where c.id = $1 and c.user_id = $2 and c.url = $4
         on conflict (connector_id) do update
            set issuer = excluded.issuer, resource = excluded.resource,
                metadata = excluded.metadata, client_key_id = excluded.client_key_id,
                client_nonce = excluded.client_nonce,
                client_ciphertext = excluded.client_ciphertext,
                tokens_key_id = case when connector_oauth.issuer is not distinct from excluded.issuer
                                      and connector_oauth.resource = excluded.resource
                                     then connector_oauth.tokens_key_id end,
                tokens_nonce = case when connector_oauth.issuer is not distinct from excluded.issuer
                                     and connector_oauth.resource = excluded.resource
                                    then connector_oauth.tokens_nonce end,
                tokens_ciphertext = case when connector_oauth.issuer is not distinct from excluded.issuer
                                          and connector_oauth.resource = excluded.resource
                                         then connector_oauth.tokens_ciphertext end,
                updated_at = now()",
        connector_id as ConnectorId,
        user_id as UserId,
        issuer,
        resource,
        metadata,
        sealed.key_id,
        sealed.nonce,
        sealed.ciphertext,
    )
    .execute(&mut *tx)
    .await
    .map_err(store_error)?;
    tx.commit().await.map_err(store_error)
}

/// A connector's stored client, when it was registered with `issuer` for
/// `resource` (a sign-in reuses it instead of registering again).
pub async fn client_for(
    pool: &PgPool,
    secrets: &SecretBox,
    (user_id, connector_id): (UserId, ConnectorId),
    resource: &str,
    issuer: Option<&str>,
) -> Result<Option<ClientRecord>, AuthError> {
    let mut tx = db::service_tx(pool).await.map_err(store_error)?;
    let row = sqlx::query_as!(
        Sealed,
        r#"select client_key_id as key_id, client_nonce as nonce, client_ciphertext as ciphertext
             from connector_oauth
            where connector_id = $1 and user_id = $2 and resource = $3
              and issuer is not distinct from $4"#,
        connector_id as ConnectorId,
        user_id as UserId,
        resource,
        issuer,
    )
    .fetch_optional(&mut *tx)
    .await
    .map_err(store_error)?;
    tx.commit().await.map_err(store_error)?;
    row.map(|sealed| {
        open_json(
            secrets,
            &sealed,
            &aad("connector_oauth_client", user_id, connector_id),
        )
    })
    .transpose()
}

/// The connector's stored client, whatever resource or issuer it was
/// stored for, with that issuer: what an entered client id is bound to
/// once a sign-in started with it (`oauth::start`).
pub async fn stored_client(
    pool: &PgPool,
    secrets: &SecretBox,
    (user_id, connector_id): (UserId, ConnectorId),
) -> Result<Option<(Option<String>, ClientRecord)>, AuthError> {
    let mut tx = db::service_tx(pool).await.map_err(store_error)?;
    let row = sqlx::query!(
        r#"select issuer, client_key_id as key_id, client_nonce as nonce,
                  client_ciphertext as ciphertext
             from connector_oauth
            where connector_id = $1 and user_id = $2"#,
        connector_id as ConnectorId,
        user_id as UserId,
    )
    .fetch_optional(&mut *tx)
    .await
    .map_err(store_error)?;
    tx.commit().await.map_err(store_error)?;
    row.map(|row| {
        let sealed = Sealed {
            key_id: row.key_id,
            nonce: row.nonce,
            ciphertext: row.ciphertext,
        };
        open_json(
            secrets,
            &sealed,
            &aad("connector_oauth_client", user_id, connector_id),
        )
        .map(|client| (row.issuer, client))
    })
    .transpose()
}

/// A connector's sign-in, as [`signed_in`] reads it.
#[derive(Debug, Clone)]
pub struct SignedIn {
    /// The authorization server's metadata.
    pub metadata: AuthorizationMetadata,
    /// The client it signed in as.
    pub client: ClientRecord,
}

/// The connector's sign-in at `resource`, when it is connected (it has
/// tokens for that URL, and no refresh was refused since).
pub async fn signed_in(
    pool: &PgPool,
    secrets: &SecretBox,
    (user_id, connector_id): (UserId, ConnectorId),
    resource: &str,
) -> Result<Option<SignedIn>, AuthError> {
    let mut tx = db::service_tx(pool).await.map_err(store_error)?;
    let row = sqlx::query!(
        "select metadata, client_key_id, client_nonce, client_ciphertext
           from connector_oauth
          where connector_id = $1 and user_id = $2 and resource = $3
            and status = 'connected' and tokens_key_id is not null",
        connector_id as ConnectorId,
        user_id as UserId,
        resource,
    )
    .fetch_optional(&mut *tx)
    .await
    .map_err(store_error)?;
    tx.commit().await.map_err(store_error)?;
    let Some(row) = row else {
        return Ok(None);
    };
    let sealed = Sealed {
        key_id: row.client_key_id,
        nonce: row.client_nonce,
        ciphertext: row.client_ciphertext,
    };
    Ok(Some(SignedIn {
        metadata: serde_json::from_value(row.metadata).map_err(store_error)?,
        client: open_json(
            secrets,
            &sealed,
            &aad("connector_oauth_client", user_id, connector_id),
        )?,
    }))
}

/// rmcp's credential store for one user's connector at one URL.
#[derive(Debug, Clone)]
pub struct PgCredentialStore {
    pool: PgPool,
    secrets: SecretBox,
    user_id: UserId,
    connector_id: ConnectorId,
    resource: String,
}

impl PgCredentialStore {
    /// The store for `connector_id` of `user_id`, whose URL is `resource`.
    pub fn new(
        pool: PgPool,
        secrets: SecretBox,
        (user_id, connector_id): (UserId, ConnectorId),
        resource: &str,
    ) -> Self {
        Self {
            pool,
            secrets,
            user_id,
            connector_id,
            resource: resource.to_owned(),
        }
    }

    fn aad(&self) -> Vec<u8> {
        aad("connector_oauth_tokens", self.user_id, self.connector_id)
    }

    /// Marks the connector as needing a new sign-in (a refused refresh, or
    /// the server refused its token).
    pub async fn needs_sign_in(&self) -> Result<(), AuthError> {
        let mut tx = db::service_tx(&self.pool).await.map_err(store_error)?;
        sqlx::query!(
            "update connector_oauth set status = 'needs_sign_in', updated_at = now()
              where connector_id = $1 and user_id = $2",
            self.connector_id as ConnectorId,
            self.user_id as UserId,
        )
        .execute(&mut *tx)
        .await
        .map_err(store_error)?;
        tx.commit().await.map_err(store_error)
    }
}

#[async_trait::async_trait]
impl CredentialStore for PgCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let mut tx = db::service_tx(&self.pool).await.map_err(store_error)?;
        let row = sqlx::query!(
            r#"select tokens_key_id as "key_id!", tokens_nonce as "nonce!",
                      tokens_ciphertext as "ciphertext!"
                 from connector_oauth
                where connector_id = $1 and user_id = $2 and resource = $3
                  and tokens_key_id is not null"#,
            self.connector_id as ConnectorId,
            self.user_id as UserId,
            self.resource,
        )
        .fetch_optional(&mut *tx)
        .await
        .map_err(store_error)?;
        tx.commit().await.map_err(store_error)?;
        row.map(|r| {
            let sealed = Sealed {
                key_id: r.key_id,
                nonce: r.nonce,
                ciphertext: r.ciphertext,
            };
            open_json(&self.secrets, &sealed, &self.aad())
        })
        .transpose()
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let sealed = seal_json(&self.secrets, &credentials, &self.aad())?;
        let connected = credentials.token_response.is_some();
        let mut tx = db::service_tx(&self.pool).await.map_err(store_error)?;
        // Only while the connector still points at the resource the tokens
        // are for, and only over the client row a sign-in wrote.
        sqlx::query!(
            "update connector_oauth o
                set tokens_key_id = $4, tokens_nonce = $5, tokens_ciphertext = $6,
                    status = case when $7 then 'connected' else 'needs_sign_in' end,
                    updated_at = now()
               from connectors c
              where o.connector_id = $1 and o.user_id = $2 and o.resource = $3
                and c.id = o.connector_id and c.user_id = o.user_id and c.url = o.resource",
            self.connector_id as ConnectorId,
            self.user_id as UserId,
            self.resource,
            sealed.key_id,
            sealed.nonce,
            sealed.ciphertext,
            connected,
        )
        .execute(&mut *tx)
        .await
        .map_err(store_error)?;
        tx.commit().await.map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let mut tx = db::service_tx(&self.pool).await.map_err(store_error)?;
        sqlx::query!(
            "update connector_oauth
                set tokens_key_id = null, tokens_nonce = null, tokens_ciphertext = null,
                    status = 'needs_sign_in', updated_at = now()
              where connector_id = $1 and user_id = $2",
            self.connector_id as ConnectorId,
            self.user_id as UserId,
        )
        .execute(&mut *tx)
        .await
        .map_err(store_error)?;
        tx.commit().await.map_err(store_error)
    }

    async fn on_refresh_token_rejected(
        &self,
        _credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        self.needs_sign_in().await
    }

    /// A transaction holding `pg_advisory_xact_lock` on this connector:
    /// dropping it rolls back (sqlx flushes the rollback when the
    /// connection returns to the pool), which releases the lock.
    ///
    /// Taken with `pg_try_advisory_xact_lock`, retried every 20–60 ms for
    /// at most [`REFRESH_LOCK_WAIT`]: a waiter holds no pooled connection
    /// while it waits. (A blocking lock would: enough calls of one
    /// connector waiting at once would hold every connection of the pool,
    /// and the refresh holding the lock could not get one to load or save
    /// its tokens.)
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let deadline = tokio::time::Instant::now() + REFRESH_LOCK_WAIT;
        loop {
            let mut tx = db::service_tx(&self.pool).await.map_err(store_error)?;
            let locked = sqlx::query_scalar!(
                r#"select pg_try_advisory_xact_lock(
                       hashtextextended('connector_oauth/' || $1::text, 0)) as "locked!""#,
                self.connector_id.to_string(),
            )
            .fetch_one(&mut *tx)
            .await
            .map_err(store_error)?;
            if locked {
                return Ok(Some(CredentialRefreshGuard::new(tx)));
            }
            tx.rollback().await.map_err(store_error)?;
            if tokio::time::Instant::now() >= deadline {
                return Err(AuthError::InternalError(
                    "another refresh of this connector's token did not finish in time".into(),
                ));
            }
            let pause = 20 + rand::random::<u64>() % 40;
            tokio::time::sleep(Duration::from_millis(pause)).await;
        }
    }
}

/// What an authorization request in flight carries to its callback.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InFlight {
    /// rmcp's PKCE verifier, expected issuer and requested scopes.
    pub state: StoredAuthorizationState,
    /// The client it signs in as.
    pub client: ClientRecord,
    /// The authorization server's metadata as discovered at the start.
    pub metadata: AuthorizationMetadata,
    /// The connector URL it was started for.
    pub resource: String,
}

/// Stores an authorization request under `state` (the `state` parameter,
/// of which only the SHA-256 is kept), expiring after [`STATE_TTL`].
pub async fn save_state(
    pool: &PgPool,
    secrets: &SecretBox,
    (user_id, connector_id): (UserId, ConnectorId),
    state: &str,
    in_flight: &InFlight,
) -> Result<(), AuthError> {
    let sealed = seal_json(
        secrets,
        in_flight,
        &aad("oauth_states", user_id, connector_id),
    )?;
    let mut tx = db::service_tx(pool).await.map_err(store_error)?;
    sqlx::query!("delete from oauth_states where expires_at <= now() - interval '1 hour'",)
        .execute(&mut *tx)
        .await
        .map_err(store_error)?;
    sqlx::query!(
        "insert into oauth_states (state_hash, user_id, connector_id, key_id, nonce, ciphertext,
                                   expires_at)
         values ($1, $2, $3, $4, $5, $6, now() + make_interval(secs => $7))",
        sha256_hex(state),
        user_id as UserId,
        connector_id as ConnectorId,
        sealed.key_id,
        sealed.nonce,
        sealed.ciphertext,
        STATE_TTL.as_secs_f64(),
    )
    .execute(&mut *tx)
    .await
    .map_err(store_error)?;
    tx.commit().await.map_err(store_error)
}

/// Forgets the authorization request stored under `state` (the
/// authorization server refused it), without reading it.
pub async fn discard_state(pool: &PgPool, state: &str) -> Result<(), AuthError> {
    let mut tx = db::service_tx(pool).await.map_err(store_error)?;
    sqlx::query!(
        "delete from oauth_states where state_hash = $1",
        sha256_hex(state),
    )
    .execute(&mut *tx)
    .await
    .map_err(store_error)?;
    tx.commit().await.map_err(store_error)
}

/// Takes the authorization request stored under `state`, once: the row is
/// deleted by the statement that reads it, so a replayed callback finds
/// nothing. `None` for an unknown, used or expired state.
pub async fn take_state(
    pool: &PgPool,
    secrets: &SecretBox,
    state: &str,
) -> Result<Option<(UserId, ConnectorId, InFlight)>, AuthError> {
    let mut tx = db::service_tx(pool).await.map_err(store_error)?;
    let row = sqlx::query!(
        r#"delete from oauth_states where state_hash = $1
           returning user_id as "user_id: UserId", connector_id as "connector_id: ConnectorId",
                     key_id, nonce, ciphertext, expires_at > now() as "live!""#,
        sha256_hex(state),
    )
    .fetch_optional(&mut *tx)
    .await
    .map_err(store_error)?;
    tx.commit().await.map_err(store_error)?;
    let Some(row) = row.filter(|r| r.live) else {
        return Ok(None);
    };
    let sealed = Sealed {
        key_id: row.key_id,
        nonce: row.nonce,
        ciphertext: row.ciphertext,
    };
    let in_flight = open_json(
        secrets,
        &sealed,
        &aad("oauth_states", row.user_id, row.connector_id),
    )?;
    Ok(Some((row.user_id, row.connector_id, in_flight)))
}
