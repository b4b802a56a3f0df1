//! Which models a user can use, and how to reach the one a chat names:
//! provider keys (the user's own, encrypted at rest, else the deployment's),
//! base URLs, and the model list of `GET /api/models`.

use crate::{
    AppState,
    config::Secret,
    db::{
        self,
        trip::{Arg, As, Part, Statement},
    },
    llm::{self, LlmError, Provider},
    secrets::{Sealed, SecretBox, SecretError},
};
use countersign_api::{ModelInfo, ProviderKeyStatus};
use sqlx::{Row as _, postgres::PgRow};
use std::time::Duration;
use uuid::Uuid;

/// Providers that take a key.
pub const KEYED_PROVIDERS: [&str; 2] = ["anthropic", "openai"];

/// Errors of key storage.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Not `anthropic` or `openai`.
    #[error("Unknown provider \"{0}\".")]
    UnknownProvider(String),
    /// Empty or absurd key.
    #[error("The API key must be 1 to 500 printable characters.")]
    InvalidKey,
    /// `COUNTERSIGN_SECRET_KEY` is not configured.
    #[error("This server cannot store keys yet: ask your administrator to set up its secret key.")]
    NoSecretKey,
    /// Crypto failure.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// Database failure.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// The associated data binding a provider key to its owner and provider
/// (also what `secrets::rotate` re-seals it with).
pub(crate) fn aad(user_id: Uuid, provider: &str) -> Vec<u8> {
    format!("provider_key/{user_id}/{provider}").into_bytes()
}

fn secret_box(state: &AppState) -> Result<&SecretBox, KeyError> {
    state.secrets.as_ref().ok_or(KeyError::NoSecretKey)
}

fn check_provider(provider: &str) -> Result<(), KeyError> {
    if KEYED_PROVIDERS.contains(&provider) {
        Ok(())
    } else {
        Err(KeyError::UnknownProvider(provider.to_owned()))
    }
}

/// Stores (or replaces) a user's key for `provider`, encrypted.
pub async fn set_key(
    state: &AppState,
    user_id: Uuid,
    provider: &str,
    key: &str,
) -> Result<(), KeyError> {
    check_provider(provider)?;
    let key = key.trim();
    if key.is_empty() || key.chars().count() > 500 || key.chars().any(char::is_control) {
        return Err(KeyError::InvalidKey);
    }
    let sealed = secret_box(state)?.seal(key.as_bytes(), &aad(user_id, provider));
    let mut tx = db::service_tx(&state.db).await?;
    sqlx::query!(
        "insert into provider_keys (user_id, provider, key_id, nonce, ciphertext)
         values ($1, $2, $3, $4, $5)
         on conflict (user_id, provider) do update
           set key_id = excluded.key_id, nonce = excluded.nonce,
               ciphertext = excluded.ciphertext, updated_at = now()",
        user_id,
        provider,
        &sealed.key_id,
        &sealed.nonce,
        &sealed.ciphertext,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Deletes a user's key. Deleting a missing key is fine.
pub async fn delete_key(state: &AppState, user_id: Uuid, provider: &str) -> Result<(), KeyError> {
    check_provider(provider)?;
    let mut tx = db::service_tx(&state.db).await?;
    sqlx::query!(
        "delete from provider_keys where user_id = $1 and provider = $2",
        user_id,
        provider,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The user's own key for `provider`, decrypted.
pub async fn user_key(
    state: &AppState,
    user_id: Uuid,
    provider: &str,
) -> Result<Option<Secret>, KeyError> {
    UserKeys::read(state, user_id).await?.open(state, provider)
}

/// A user's own provider keys, as stored (sealed): one read for every
/// provider, so a turn can read them before it knows its chat's model.
#[derive(Debug, Default)]
pub struct UserKeys {
    user_id: Uuid,
    sealed: Vec<(String, Sealed)>,
}

/// A user's provider keys, still sealed.
static SEALED_KEYS: Statement = Statement {
    name: "cs_sealed_keys",
    params: "(uuid)",
    sql: "select provider, key_id, nonce, ciphertext from provider_keys where user_id = $1",
};

/// The statements [`db::trip`] runs here, for the test that prepares them all.
pub static TRIPS: [&Statement; 1] = [&SEALED_KEYS];

impl UserKeys {
    /// Reads them, in one round trip ([`db::trip`]).
    pub async fn read(state: &AppState, user_id: Uuid) -> Result<Self, KeyError> {
        let rows = db::trip::run(&state.db, Self::part(user_id)).await?;
        Ok(Self::from_rows(user_id, &rows)?)
    }

    /// The read, as a part of a trip (a turn's, beside its history).
    pub fn part(user_id: Uuid) -> Part {
        Part {
            who: As::Service,
            statement: &SEALED_KEYS,
            args: vec![Arg::uuid(user_id)],
        }
    }

    /// The keys in the rows [`UserKeys::part`] read.
    pub fn from_rows(user_id: Uuid, rows: &[PgRow]) -> Result<Self, sqlx::Error> {
        let sealed = rows
            .iter()
            .map(|row| {
                Ok((
                    row.try_get("provider")?,
                    Sealed {
                        key_id: row.try_get("key_id")?,
                        nonce: row.try_get("nonce")?,
                        ciphertext: row.try_get("ciphertext")?,
                    },
                ))
            })
            .collect::<Result<_, sqlx::Error>>()?;
        Ok(Self { user_id, sealed })
    }

    /// The key for `provider`, decrypted (`None`: the user has none).
    pub fn open(&self, state: &AppState, provider: &str) -> Result<Option<Secret>, KeyError> {
        let Some((_, sealed)) = self.sealed.iter().find(|(p, _)| p == provider) else {
            return Ok(None);
        };
        let plain = secret_box(state)?.open(sealed, &aad(self.user_id, provider))?;
        Ok(Some(Secret::new(
            String::from_utf8_lossy(&plain).into_owned(),
        )))
    }
}

/// Which keys exist for the user (never the keys).
pub async fn key_status(
    state: &AppState,
    user_id: Uuid,
) -> Result<Vec<ProviderKeyStatus>, KeyError> {
    let mut tx = db::service_tx(&state.db).await?;
    let set: Vec<String> = sqlx::query_scalar!(
        "select provider from provider_keys where user_id = $1",
        user_id,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(KEYED_PROVIDERS
        .iter()
        .map(|p| ProviderKeyStatus {
            provider: (*p).to_owned(),
            is_set: set.iter().any(|s| s == p),
            deployment_key: match *p {
                "anthropic" => state.config.anthropic_api_key.is_some(),
                _ => state.config.openai_api_key.is_some(),
            },
        })
        .collect())
}

/// How to reach `model` (`provider/name`) for `user_id`, and the name the
/// provider knows it by.
pub async fn resolve(
    state: &AppState,
    user_id: Uuid,
    model: &str,
) -> Result<(Provider, String), LlmError> {
    let keys = match model.split_once('/') {
        Some((provider, _)) if KEYED_PROVIDERS.contains(&provider) => {
            UserKeys::read(state, user_id).await.unwrap_or_else(|err| {
                tracing::error!(error = %err, user.id = %user_id, "cannot read the user's keys");
                UserKeys::default()
            })
        }
        _ => UserKeys::default(),
    };
    resolve_with(state, &keys, model)
}

/// [`resolve`] with the user's keys already read.
pub fn resolve_with(
    state: &AppState,
    keys: &UserKeys,
    model: &str,
) -> Result<(Provider, String), LlmError> {
    let Some((provider, name)) = model.split_once('/') else {
        return Err(LlmError::UnknownModel(model.to_owned()));
    };
    let own_key = |p: &'static str| {
        keys.open(state, p).unwrap_or_else(|err| {
            tracing::error!(error = %err, user.id = %keys.user_id, provider = p, "cannot open the user's key");
            None
        })
    };
    let resolved = match provider {
        "offline" if name == "demo" => Provider::Offline {
            word_delay: Duration::from_millis(state.config.demo_word_delay_ms),
        },
        "anthropic" => {
            let api_key = match own_key("anthropic") {
                Some(k) => k,
                None => state.config.anthropic_api_key.clone().ok_or_else(|| {
                    LlmError::NotConfigured {
                        provider: "Anthropic".into(),
                    }
                })?,
            };
            Provider::Anthropic {
                base_url: state.config.anthropic_base_url.clone(),
                api_key,
            }
        }
        "openai" => {
            let api_key = match own_key("openai") {
                Some(k) => Some(k),
                None => state.config.openai_api_key.clone(),
            };
            if api_key.is_none() && state.config.openai_base_url.is_none() {
                return Err(LlmError::NotConfigured {
                    provider: "OpenAI".into(),
                });
            }
            Provider::OpenAi {
                base_url: state.config.openai_base().to_owned(),
                api_key,
            }
        }
        _ => return Err(LlmError::UnknownModel(model.to_owned())),
    };
    Ok((resolved, name.to_owned()))
}

fn csv(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// Models `user_id` can use now: the offline demo always; Anthropic's
/// configured list when a key exists; what the OpenAI-compatible endpoint's
/// `/models` lists (or `COUNTERSIGN_OPENAI_MODELS`) when it is reachable.
pub async fn available(state: &AppState, user_id: Uuid) -> Vec<ModelInfo> {
    let mut models = vec![ModelInfo {
        id: "offline/demo".into(),
        label: "Offline demo (not AI)".into(),
        provider: "offline".into(),
        offline_demo: true,
    }];
    if let Ok((_, _)) = resolve(state, user_id, "anthropic/probe").await {
        models.extend(csv(&state.config.anthropic_models).map(|m| ModelInfo {
            id: format!("anthropic/{m}"),
            label: format!("Anthropic · {m}"),
            provider: "anthropic".into(),
            offline_demo: false,
        }));
    }
    if let Ok((Provider::OpenAi { base_url, api_key }, _)) =
        resolve(state, user_id, "openai/probe").await
    {
        let listed = tokio::time::timeout(
            Duration::from_secs(5),
            llm::openai::list_models(&state.http, &base_url, api_key.as_ref()),
        )
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
        let names: Vec<String> = if listed.is_empty() {
            csv(&state.config.openai_models)
                .map(str::to_owned)
                .collect()
        } else {
            listed
        };
        models.extend(names.into_iter().map(|m| ModelInfo {
            label: format!("OpenAI-compatible · {m}"),
            id: format!("openai/{m}"),
            provider: "openai".into(),
            offline_demo: false,
        }));
    }
    models
}
