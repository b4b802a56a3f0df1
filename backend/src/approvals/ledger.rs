//! The ledger's transitions and reads: every write of `mcp_pending_calls`
//! but the wait's own ([`super::wait`]: expiry and Stop) is here, each a
//! conditional UPDATE whose affected-row count is the answer — `propose`,
//! `decide`, `claim`, `record`, the denials of a re-pointed connector's or
//! a disabled user's calls, the `sweep` and start-up `recover`ery — and
//! the reads the gate and the API make of it (grants, the live list).
//!
//! It does not order them for a call: [`super::lifecycle`] does.

use super::{Row, keys::Binding};
use crate::{
    AppState,
    db::{
        self,
        trip::{Arg, As, Part, Statement},
    },
    digest::{canonical, sha256_hex},
    events,
    ids::{ChatId, ConnectorId, PendingCallId, ToolContext, TurnId, UserId},
    metrics::Decided,
};
use countersign_api::{
    ChatEvent, GrantKind, PendingCallStatus, Provenance, Resolution, ToolCallStatus,
};
use serde_json::Value;
use sqlx::{FromRow as _, Row as _, types::Json};
use std::time::Duration;
use uuid::Uuid;

/// A gated call to put before the user.
#[derive(Debug, Clone)]
pub struct Proposal<'a> {
    /// Who, where.
    pub ctx: ToolContext,
    /// The model's call id.
    pub call_id: &'a str,
    /// The kept tool's connector.
    pub connector_id: ConnectorId,
    /// Its name.
    pub connector_name: &'a str,
    /// Tool name on its server.
    pub tool_name: &'a str,
    /// Tool name as offered to the model.
    pub model_tool_name: &'a str,
    /// The arguments object, exactly as it would run.
    pub arguments: &'a Value,
    /// The tool's current descriptor digest.
    pub descriptor_digest: &'a str,
    /// The connector URL it may run against (the card shows its host).
    pub destination_url: &'a str,
    /// Why it asks.
    pub reason: &'a str,
    /// The grants the card offers (`gate::offered_grants`: only "Allow
    /// once" for a tool that changed since it was reviewed or that the
    /// policy says always asks; no "Always allow" under a policy that
    /// forbids it). "Allow once" is always among them.
    pub offered_grants: &'a [GrantKind],
    /// Where the arguments came from (stored with the row: positions and
    /// digests, never a copy of the matched text).
    pub provenance: &'a Provenance,
    /// The policy gives it a second approver (`gate::PolicyFacts`): the
    /// user's approve moves it to `awaiting_second`.
    pub second_approval: bool,
}

/// Writes a `pending` row, expiring `COUNTERSIGN_APPROVAL_TTL_SECS` from
/// the database's now, signed. Sweeps aged terminal rows first (best
/// effort).
pub async fn propose(state: &AppState, p: &Proposal<'_>) -> Result<Row, sqlx::Error> {
    if let Err(err) = sweep(state).await {
        tracing::warn!(error = %err, "approval ledger sweep failed");
    }
    let arguments_canonical = canonical(p.arguments);
    let arguments_digest = sha256_hex(&arguments_canonical);
    let id = PendingCallId::new_v4();
    let mut tx = db::service_tx(&state.db).await?;
    let times = sqlx::query!(
        r#"select date_trunc('microseconds', now() + make_interval(secs => $1::float8))
                  as "expires_at!",
                  date_trunc('microseconds', now() + make_interval(secs => least($1, $2)::float8))
                  as "decide_by!""#,
        state.config.approval_ttl_secs as f64,
        state.config.approval_wait_secs as f64,
    )
    .fetch_one(&mut *tx)
    .await?;
    let (expires_at, decide_by) = (times.expires_at, times.decide_by);
    let (hmac_key_id, hmac) = state.approval_keys.sign(&Binding {
        id,
        user_id: p.ctx.user_id,
        chat_id: p.ctx.chat_id,
        turn_id: p.ctx.turn_id,
        connector_id: p.connector_id,
        destination_url: p.destination_url,
        tool_name: p.tool_name,
        arguments_digest: &arguments_digest,
        expires_at_micros: expires_at.unix_timestamp_nanos() / 1000,
    });
    let offered_grants = stored_grants(p.offered_grants);
    let row = sqlx::query_as!(
        Row,
        r#"insert into mcp_pending_calls (id, user_id, chat_id, turn_id, call_id, connector_id,
             connector_name, tool_name, model_tool_name, arguments, arguments_canonical,
             arguments_digest, descriptor_digest, destination, destination_url, reason,
             offered_grants, hmac_key_id, hmac, expires_at, decide_by, provenance,
             second_approval)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                 $18, $19, $20, $21, $22, $23)
         returning id as "id: _", user_id as "user_id: _", chat_id as "chat_id: _",
                   turn_id as "turn_id: _", call_id, connector_id as "connector_id: _",
                   connector_name, tool_name, model_tool_name, arguments, arguments_canonical,
                   arguments_digest, descriptor_digest, destination, destination_url, reason,
                   offered_grants as offered_grants_stored, status as "status: _", grant_kind,
                   hmac_key_id, hmac, error, expires_at, decide_by, decided_at, claimed_at,
                   provenance as "provenance: Json<Provenance>""#,
        id as PendingCallId,
        p.ctx.user_id as UserId,
        p.ctx.chat_id as ChatId,
        p.ctx.turn_id as TurnId,
        p.call_id,
        p.connector_id as ConnectorId,
        p.connector_name,
        p.tool_name,
        p.model_tool_name,
        p.arguments,
        &arguments_canonical,
        &arguments_digest,
        p.descriptor_digest,
        destination(p.destination_url),
        p.destination_url,
        p.reason,
        &offered_grants as &[&str],
        &hmac_key_id,
        &hmac,
        expires_at,
        decide_by,
        Json(p.provenance) as _,
        p.second_approval,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(row)
}

/// The grant words a row stores for a card offering `offered`: "Allow
/// once" first and always, then the others in their order, each once,
/// never `unknown`.
fn stored_grants(offered: &[GrantKind]) -> Vec<&'static str> {
    std::iter::once(GrantKind::Once)
        .chain(offered.iter().copied())
        .filter(|g| *g != GrantKind::Unknown)
        .fold(Vec::new(), |mut seen, g| {
            if !seen.contains(&g.as_str()) {
                seen.push(g.as_str());
            }
            seen
        })
}

/// The user's live (pending, unexpired) calls, oldest first, with the
/// seconds each has left until it expires and until its turn stops
/// waiting.
pub async fn live_for_user(
    state: &AppState,
    user_id: UserId,
) -> Result<Vec<(Row, f64, f64)>, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    // `now()` is the transaction's start, the same in both statements.
    let now = sqlx::query_scalar!(r#"select now() as "now!""#)
        .fetch_one(&mut *tx)
        .await?;
    let rows = sqlx::query_as!(
        Row,
        r#"select id as "id: _", user_id as "user_id: _", chat_id as "chat_id: _",
                  turn_id as "turn_id: _", call_id, connector_id as "connector_id: _",
                  connector_name, tool_name, model_tool_name, arguments, arguments_canonical,
                  arguments_digest, descriptor_digest, destination, destination_url, reason,
                  offered_grants as offered_grants_stored, status as "status: _", grant_kind,
                  hmac_key_id, hmac, error, expires_at, decide_by, decided_at, claimed_at,
                  provenance as "provenance: Json<Provenance>"
             from mcp_pending_calls
            where user_id = $1 and status = 'pending' and expires_at > now()
            order by created_at"#,
        user_id as UserId,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let left = (row.expires_at - now).as_seconds_f64();
            let to_decide = (row.decide_by - now).as_seconds_f64().max(0.0);
            (row, left, to_decide)
        })
        .collect())
}

/// The calls waiting for a decision now — of `user`, or of every account
/// — oldest first, at most `limit`, as an administrator sees them: no
/// arguments, no chat (the destinations are read from the arguments here
/// and only they leave).
pub async fn waiting_across(
    state: &AppState,
    user: Option<UserId>,
    limit: i64,
) -> Result<Vec<countersign_api::AdminWaitingCall>, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let rows = sqlx::query!(
        r#"select p.id, p.user_id, u.email, p.connector_name, p.tool_name, p.arguments,
                  p.created_at, p.decide_by,
                  p.provenance as "provenance: Json<Provenance>"
             from mcp_pending_calls p
             join users u on u.id = p.user_id
            where ($1::uuid is null or p.user_id = $1)
              and p.status = 'pending' and p.expires_at > now()
            order by p.created_at
            limit $2"#,
        user.map(|u| u.0),
        limit,
    )
    .fetch_all(&mut *tx)
    .await?;
    db::end_read(tx);
    let rfc3339 = |at: time::OffsetDateTime| {
        at.format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    };
    Ok(rows
        .into_iter()
        .map(|r| countersign_api::AdminWaitingCall {
            id: r.id.to_string(),
            user_id: r.user_id.to_string(),
            user_email: r.email,
            connector_name: r.connector_name,
            tool_name: r.tool_name,
            waiting_since: rfc3339(r.created_at),
            decide_by: rfc3339(r.decide_by),
            destinations: crate::destinations::destinations(&r.arguments),
            flagged: r.provenance.is_some_and(|p| p.0.flagged()),
        })
        .collect())
}

/// How many calls wait for a decision now, on every instance (pending and
/// not yet expired): the `/metrics` gauge, read at scrape time only.
pub async fn pending_count(pool: &sqlx::PgPool) -> Result<i64, sqlx::Error> {
    let mut tx = db::service_tx(pool).await?;
    let count = sqlx::query_scalar!(
        r#"select count(*) as "count!" from mcp_pending_calls
            where status = 'pending' and expires_at > now()"#,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(count)
}

/// A user's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Approve,
    /// Do not.
    Deny,
}

impl Verdict {
    /// The ledger status it leads to.
    pub fn status(self) -> PendingCallStatus {
        match self {
            Self::Approve => PendingCallStatus::Approved,
            Self::Deny => PendingCallStatus::Denied,
        }
    }
}

/// Why a decision was not taken.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    /// Unknown, another user's, or already decided.
    #[error("No such pending tool call.")]
    NotFound,
    /// The owner decided too late.
    #[error("This tool call approval has expired.")]
    Expired,
    /// The digest is not the one of the stored arguments.
    #[error("The arguments changed since this card was shown; nothing was decided. Reload.")]
    DigestMismatch,
    /// The card does not offer this grant (the tool changed since it was
    /// reviewed: only "Allow once").
    #[error("grant_not_offered")]
    GrantNotOffered,
    /// Database failure.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Decides a pending call: one conditional UPDATE on id + user + pending +
/// unexpired + matching digest; then `NOTIFY`. When it changes no row, a
/// read (which decides nothing) says why.
pub async fn decide(
    state: &AppState,
    user_id: UserId,
    id: PendingCallId,
    verdict: Verdict,
    grant: GrantKind,
    arguments_digest: &str,
    reason: Option<&str>,
) -> Result<PendingCallStatus, DecideError> {
    let status = verdict.status();
    // Only a deny carries the user's reason.
    let reason = reason.filter(|_| verdict == Verdict::Deny);
    let grant = (verdict == Verdict::Approve).then_some(grant.as_str());
    // The decision and its NOTIFY (to every instance, once committed) in
    // one statement, a transaction of its own in one round trip: a row
    // comes back only when the UPDATE changed one. The digest was checked
    // to be 64 hex digits, so it travels as the bytes they spell.
    let digest = hex::decode(arguments_digest)
        .ok()
        .filter(|bytes| hex::encode(bytes) == arguments_digest);
    let decided = match &digest {
        Some(digest) => db::trip::run(
            &state.db,
            Part {
                who: As::Service,
                statement: &DECIDE,
                args: vec![
                    Arg::uuid(id),
                    Arg::uuid(user_id),
                    Arg::bytes(digest),
                    Arg::word(status.as_str()),
                    grant.map_or_else(Arg::null, Arg::word),
                    // The user's own words: sent as bytes (hex), never as
                    // SQL text, and read back as UTF-8.
                    reason.map_or_else(Arg::null, |r| Arg::bytes(r.as_bytes())),
                ],
            },
        )
        .await?
        .first()
        .map(|row| row.try_get::<String, _>(0))
        .transpose()?
        .map(|word| PendingCallStatus::from_wire(&word)),
        None => None,
    };
    // An approve of a call the policy gives a second approver waits for
    // the approver: its turn goes on waiting.
    if decided == Some(PendingCallStatus::AwaitingSecond) {
        return Ok(PendingCallStatus::AwaitingSecond);
    }
    if decided.is_some() {
        // A turn of this instance that waits for it wakes now, without
        // the NOTIFY's hop and the watcher's read; any other instance's
        // watcher reads it on the NOTIFY. The status is what this very
        // conditional UPDATE committed, and the claim still decides.
        if state.config.approval_notify {
            state.watcher.settle(id, status);
        }
        state.metrics.decided(match verdict {
            Verdict::Approve => Decided::Approved,
            Verdict::Deny => Decided::Denied,
        });
        return Ok(status);
    }
    let mut tx = db::service_tx(&state.db).await?;
    let why = sqlx::query!(
        r#"select status as "status: PendingCallStatus", expires_at <= now() as "late!",
                  arguments_digest = $3 as "same!",
                  $4::text is null or $4 = any (offered_grants) as "offered!"
             from mcp_pending_calls where id = $1 and user_id = $2"#,
        id as PendingCallId,
        user_id as UserId,
        arguments_digest,
        grant,
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    use PendingCallStatus::{Expired, Pending};
    let why = why.map(|r| (r.status, r.late, r.same, r.offered));
    Err(match why {
        Some((Expired, _, _, _)) | Some((Pending, true, _, _)) => DecideError::Expired,
        Some((Pending, false, false, _)) => DecideError::DigestMismatch,
        Some((Pending, false, true, false)) => DecideError::GrantNotOffered,
        _ => DecideError::NotFound,
    })
}

/// [`decide`]'s conditional UPDATE with its NOTIFY: `$3` is the digest's
/// bytes, `$4` the status, `$5` the grant (or null), `$6` a deny's reason
/// as UTF-8 bytes (or null). An approve of a row the policy gave a second
/// approver becomes `awaiting_second` (the requester's approval, timed;
/// `decided_at` waits for the approver). Answers the status it wrote.
static DECIDE: Statement = Statement {
    name: "cs_decide",
    params: "(uuid, uuid, bytea, text, text, bytea)",
    sql: "with decided as ( \
            update mcp_pending_calls \
               set status = case when $4 = 'approved' and second_approval \
                                 then 'awaiting_second' else $4 end, \
                   grant_kind = $5, \
                   decided_at = case when $4 = 'approved' and second_approval \
                                     then null else now() end, \
                   requester_approved_at = case when $4 = 'approved' and second_approval \
                                                then now() end, \
                   decline_reason = convert_from($6, 'UTF8') \
             where id = $1 and user_id = $2 and status = 'pending' and expires_at > now() \
               and arguments_digest = encode($3, 'hex') \
               and ($5 is null or $5 = any (offered_grants)) \
            returning id, status) \
          select decided.status from decided, \
                 lateral (select pg_notify('countersign_approvals', decided.id::text)) as wake",
};

/// [`claim`]'s UPDATE: `approved → executing`, returning the row.
static CLAIM: Statement = Statement {
    name: "cs_claim",
    params: "(uuid)",
    sql: "update mcp_pending_calls set status = 'executing', claimed_at = now() \
           where id = $1 and status = 'approved' \
          returning id, user_id, chat_id, turn_id, call_id, connector_id, connector_name, \
                    tool_name, model_tool_name, arguments, arguments_canonical, \
                    arguments_digest, descriptor_digest, destination, destination_url, reason, \
                    offered_grants as offered_grants_stored, status, grant_kind, hmac_key_id, \
                    hmac, error, expires_at, decide_by, decided_at, claimed_at, provenance",
};

/// The statements [`db::trip`] runs here, for the test that prepares them all.
pub static TRIPS: [&Statement; 2] = [&DECIDE, &CLAIM];

/// `statement` on pending call `id`, as the service.
fn of_call(statement: &'static Statement, id: PendingCallId) -> Part {
    Part {
        who: As::Service,
        statement,
        args: vec![Arg::uuid(id)],
    }
}

/// `approved → executing`, exactly one winner. Returns the row as stored.
pub(super) async fn claim(state: &AppState, id: PendingCallId) -> Result<Option<Row>, sqlx::Error> {
    // A transaction of its own, in one round trip.
    let rows = db::trip::run(&state.db, of_call(&CLAIM, id)).await?;
    let row = rows.first().map(Row::from_row).transpose()?;
    // Both instants are the database's, whichever instance decided.
    if let Some(Row {
        decided_at: Some(decided),
        claimed_at: Some(claimed),
        ..
    }) = &row
    {
        let latency = (*claimed - *decided).max(time::Duration::ZERO);
        state
            .metrics
            .decision_to_execution(latency.try_into().unwrap_or_default());
    }
    Ok(row)
}

/// `executing → executed | failed`. A failure still spends the approval.
/// An executed call approved with "Always allow this tool" creates (or
/// re-pins to this descriptor) the user's rule, in the same transaction;
/// decline, failure and expiry never create one.
pub(super) async fn record(
    state: &AppState,
    id: PendingCallId,
    error: Option<&str>,
) -> Result<(), sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    sqlx::query!(
        "with done as (
             update mcp_pending_calls
                set status = case when $2::text is null then 'executed' else 'failed' end,
                    error = $2, executed_at = now()
              where id = $1 and status = 'executing'
              returning id, user_id, connector_id, tool_name, descriptor_digest, grant_kind, status)
         insert into tool_grants (id, user_id, connector_id, tool_name, descriptor_digest, created_from)
         select $3, d.user_id, d.connector_id, d.tool_name, d.descriptor_digest, d.id
           from done d
          where d.status = 'executed' and d.grant_kind = 'always'
            and exists (select 1 from connectors c
                         where c.id = d.connector_id and c.user_id = d.user_id)
         on conflict (connector_id, tool_name) do update
            set descriptor_digest = excluded.descriptor_digest,
                created_from = excluded.created_from, updated_at = now()",
        id as PendingCallId,
        error,
        Uuid::new_v4(),
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// How long [`record_until_stored`] keeps trying.
pub const RECORD_RETRY_FOR: Duration = Duration::from_secs(120);

/// [`record`], tried again (every 250 ms, then up to every 2 s) while the
/// database cannot take it, for at most [`RECORD_RETRY_FOR`]: the call ran
/// and its outcome is known, so a Postgres restart must not turn it into
/// "outcome unknown". Safe to repeat: `record` changes only an `executing`
/// row. Returns the last error when it gave up (the row then stays
/// `executing` until recovery fails it as "interrupted; outcome unknown").
pub(super) async fn record_until_stored(
    state: &AppState,
    id: PendingCallId,
    error: Option<&str>,
) -> Result<(), sqlx::Error> {
    let give_up = tokio::time::Instant::now() + RECORD_RETRY_FOR;
    let mut pause = Duration::from_millis(250);
    loop {
        match record(state, id, error).await {
            Ok(()) => return Ok(()),
            Err(err) if tokio::time::Instant::now() + pause < give_up => {
                tracing::warn!(
                    error = %err, pending.id = %id,
                    "cannot record a call's outcome yet; retrying (it ran: it is never re-run)"
                );
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            Err(err) => return Err(err),
        }
    }
}

/// Whether an earlier call of this turn to this connector + tool, **with
/// this descriptor digest**, was approved "for the rest of this turn" and
/// ran. A tool that changed (and was kept again) mid-turn asks again.
pub async fn turn_grant(
    state: &AppState,
    ctx: ToolContext,
    connector_id: ConnectorId,
    tool_name: &str,
    descriptor_digest: &str,
) -> Result<bool, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let granted = sqlx::query_scalar!(
        r#"select exists (select 1 from mcp_pending_calls
                           where turn_id = $1 and user_id = $2 and connector_id = $3
                             and tool_name = $4 and grant_kind = 'turn' and status = 'executed'
                             and descriptor_digest = $5) as "granted!""#,
        ctx.turn_id as TurnId,
        ctx.user_id as UserId,
        connector_id as ConnectorId,
        tool_name,
        descriptor_digest,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(granted)
}

/// How a call was decided, for `mcp_confirmation_resolved` (so every
/// tab's card says what was allowed, when, and why it was declined).
#[derive(Debug, Default)]
pub struct HowDecided {
    /// The grant an approval chose.
    pub grant: Option<GrantKind>,
    /// When, by the database's clock.
    pub decided_at: Option<time::OffsetDateTime>,
    /// A deny's reason, in the user's words.
    pub decline_reason: Option<String>,
    /// "Edit and allow": the arguments the user edited (what runs) and
    /// the digest of those the card showed.
    pub edited: Option<(Value, String)>,
    /// For a call the policy gave a second approver: who decided it
    /// (their e-mail then).
    pub second_approver: Option<String>,
}

/// How `id` was decided (`None` if it is gone).
pub async fn decided_of(
    state: &AppState,
    id: PendingCallId,
) -> Result<Option<HowDecided>, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let row = sqlx::query!(
        "select grant_kind, decided_at, decline_reason, shown_arguments_digest,
                case when edited_by is not null then arguments end as edited,
                second_approver_email
           from mcp_pending_calls where id = $1",
        id as PendingCallId,
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(row.map(|r| HowDecided {
        grant: r.grant_kind.as_deref().map(GrantKind::from_wire),
        decided_at: r.decided_at,
        decline_reason: r.decline_reason,
        edited: r.edited.zip(r.shown_arguments_digest),
        second_approver: r.second_approver_email,
    }))
}

/// Ends every pending call for `connector_id` as denied (its URL changed:
/// what the cards show is no longer where the calls would go), and wakes
/// the turns that wait for them. Returns how many. Rows already approved
/// but not claimed fail at the claim, whose destination check no longer
/// holds.
pub async fn deny_for_connector(
    tx: &mut db::Tx,
    user_id: UserId,
    connector_id: ConnectorId,
) -> Result<u64, sqlx::Error> {
    let ids = sqlx::query_scalar!(
        r#"update mcp_pending_calls set status = 'denied', decided_at = now()
            where user_id = $1 and connector_id = $2
              and status in ('pending', 'awaiting_second')
        returning id as "id: PendingCallId""#,
        user_id as UserId,
        connector_id as ConnectorId,
    )
    .fetch_all(&mut **tx)
    .await?;
    for id in &ids {
        events::notify_decided(tx, *id).await?;
    }
    Ok(ids.len() as u64)
}

/// Ends every pending call of `user_id` as denied (an administrator
/// disabled the account: nobody may approve them now), and wakes the
/// turns that wait for them. Returns how many.
pub async fn deny_for_user(tx: &mut db::Tx, user_id: UserId) -> Result<u64, sqlx::Error> {
    let ids = sqlx::query_scalar!(
        r#"update mcp_pending_calls set status = 'denied', decided_at = now()
            where user_id = $1 and status in ('pending', 'awaiting_second')
        returning id as "id: PendingCallId""#,
        user_id as UserId,
    )
    .fetch_all(&mut **tx)
    .await?;
    for id in &ids {
        events::notify_decided(tx, *id).await?;
    }
    Ok(ids.len() as u64)
}

/// `host[:port]` of a connector URL: the card's destination.
pub fn destination(url: &str) -> String {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| {
            let host = u.host_str()?.to_owned();
            Some(match u.port() {
                Some(port) => format!("{host}:{port}"),
                None => host,
            })
        })
        .unwrap_or_default()
}

/// Deletes terminal rows (and their arguments) older than the retention,
/// at most 500 at a time. Returns how many.
pub async fn sweep(state: &AppState) -> Result<u64, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    let deleted = sqlx::query!(
        "delete from mcp_pending_calls where id in (
             select id from mcp_pending_calls
              where status in ('executed', 'failed', 'denied', 'expired')
                and created_at < now() - make_interval(secs => $1::float8)
              limit 500)",
        state.config.approval_retention_secs as f64,
    )
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(deleted.rows_affected())
}

/// What [`recover`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovered {
    /// `executing → failed` (outcome unknown).
    pub executing: u64,
    /// `approved → failed` (never ran).
    pub approved: u64,
    /// `pending → expired`.
    pub pending: u64,
}

/// Start-up recovery, the only other transitions: rows whose turn no
/// longer runs anywhere (finished, or its heartbeat is older than
/// `stale_secs`) are closed. Nothing is retried or re-executed. The chat
/// hears of each, so no card stays open.
pub async fn recover(state: &AppState, stale_secs: f64) -> Result<Recovered, sqlx::Error> {
    let mut tx = db::service_tx(&state.db).await?;
    struct Closed {
        id: PendingCallId,
        user_id: UserId,
        chat_id: ChatId,
        turn_id: TurnId,
        was: PendingCallStatus,
        call_id: String,
        connector_name: String,
        tool_name: String,
    }
    let rows = sqlx::query_as!(
        Closed,
        r#"with orphaned as (
             select p.id, p.status as was from mcp_pending_calls p
               left join turns t on t.id = p.turn_id
              where p.status in ('pending', 'awaiting_second', 'approved', 'executing')
                and (t.id is null or t.status <> 'running'
                     or t.heartbeat_at < now() - make_interval(secs => $1::float8))
              for update of p skip locked)
         update mcp_pending_calls p
            set status = case when o.was in ('pending', 'awaiting_second') then 'expired'
                              else 'failed' end,
                error = case o.was
                          when 'executing' then 'interrupted; outcome unknown'
                          when 'approved' then 'interrupted before it ran'
                          else null end,
                decided_at = coalesce(p.decided_at, now()),
                executed_at = case when o.was in ('pending', 'awaiting_second') then null
                                   else now() end
           from orphaned o
          where p.id = o.id
          returning p.id as "id: _", p.user_id as "user_id: _", p.chat_id as "chat_id: _",
                    p.turn_id as "turn_id: _", o.was as "was!: _", p.call_id,
                    p.connector_name, p.tool_name"#,
        stale_secs,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;

    let mut recovered = Recovered::default();
    for Closed {
        id,
        user_id,
        chat_id,
        turn_id,
        was,
        call_id,
        connector_name,
        tool_name,
    } in rows
    {
        let turn = turn_id.to_string();
        let event = match was {
            PendingCallStatus::Pending | PendingCallStatus::AwaitingSecond => {
                recovered.pending += 1;
                state.metrics.decided(Decided::Expired);
                ChatEvent::McpConfirmationResolved {
                    turn_id: turn,
                    id: id.to_string(),
                    decision: Resolution::Expired,
                    grant: None,
                    decided_at: None,
                    decline_reason: None,
                    stopped: false,
                    edited_arguments: None,
                    second_approver: None,
                }
            }
            _ => {
                if was == PendingCallStatus::Executing {
                    recovered.executing += 1;
                } else {
                    recovered.approved += 1;
                }
                ChatEvent::McpToolCall {
                    turn_id: turn,
                    id: id.to_string(),
                    call_id,
                    connector_name,
                    tool_name,
                    status: ToolCallStatus::Error,
                    error: Some(if was == PendingCallStatus::Executing {
                        "Interrupted: the server stopped while this call ran; its outcome is unknown."
                            .into()
                    } else {
                        "Interrupted: the server stopped before this call ran.".into()
                    }),
                    duration_ms: 0,
                    waited_ms: None,
                    origin: None,
                    approved_at: None,
                    sign_in_connector_id: None,
                    result: None,
                    result_chars: None,
                    contains_instructions: false,
                    connector_id: None,
                    rule: None,
                    result_review: None,
                }
            }
        };
        let result = async {
            let mut tx = db::user_tx(&state.db, user_id).await?;
            events::append(&mut tx, chat_id, Some(turn_id), &event).await?;
            tx.commit().await
        }
        .await;
        if let Err(err) = result {
            tracing::warn!(error = %err, "cannot tell a chat about a recovered tool call");
        }
    }
    if recovered != Recovered::default() {
        tracing::warn!(
            ?recovered,
            "approval ledger: closed calls of turns that stopped running"
        );
    }
    Ok(recovered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_wakes_the_approvals_channel() {
        assert!(
            DECIDE
                .sql
                .contains(&format!("pg_notify('{}',", events::APPROVALS_CHANNEL))
        );
    }

    #[test]
    fn a_row_offers_allow_once_first_and_each_grant_once() {
        let cases: [(&[GrantKind], &[&str], &str); 4] = [
            (&[], &["once"], "nothing offered: once all the same"),
            (
                &[GrantKind::Turn, GrantKind::Always],
                &["once", "turn", "always"],
                "in the order offered, after once",
            ),
            (
                &[GrantKind::Always, GrantKind::Once, GrantKind::Always],
                &["once", "always"],
                "no word twice",
            ),
            (
                &[GrantKind::Unknown, GrantKind::Turn],
                &["once", "turn"],
                "never unknown",
            ),
        ];
        for (offered, stored, why) in cases {
            assert_eq!(stored_grants(offered), stored, "{why}");
        }
    }

    #[test]
    fn a_verdict_leads_to_its_own_status() {
        assert_eq!(Verdict::Approve.status(), PendingCallStatus::Approved);
        assert_eq!(Verdict::Deny.status(), PendingCallStatus::Denied);
    }
}
