//! The user's kept MCP tools as the model's tool box (DESIGN §5, §6).
//!
//! Listing: every kept (or kept-then-changed) tool of the user's
//! connectors, under its stable model name, **as the user reviewed it**
//! (a changed tool's new description and schema are not offered); a tool
//! the gate would ask for carries the approval note in its description.
//!
//! Calling: the model may name anything, so each call re-reads the tool
//! as the user's own (RLS and an explicit owner check), kept and not
//! removed; an unknown or foreign name gets an error result, never a call.
//! The gate ([`crate::gate::decide`]) looks at the stored facts. A call
//! that asks goes through the ledger ([`crate::approvals`]): proposed,
//! shown as a card and waited for here; once approved, the ledger carries
//! it through claim → verify → execute → record
//! ([`approvals::run_approved`], in its own task, so nothing can cancel it
//! half-way), with this module's [`Approved`] bringing the tool's re-read,
//! the session and the call. Declining never contacts the server.

use super::{BoxFuture, NotRun, ToolBox, ToolOutcome, ToolRun, ToolsWith};
use crate::{
    AppState,
    approvals::{self, Waited},
    audit,
    connectors::session::{open_session_asking, refused},
    db::{
        self,
        trip::{Arg, As, Part, Statement},
    },
    digest,
    gate::{self, AlwaysGrant, Decision, Facts},
    ids::{ChatId, ConnectorId, TurnId, UserId},
    inputs::{Asking, CardAsker},
    llm::{ToolCall, ToolSpec},
    mcp::Elicitation,
    policy::{self, Policy},
    provenance::{self, Seen, SeenBy},
    results, rules,
    tools::ToolContext,
};
use countersign_api::{
    ActivityDecision, ActivityKind, ActivityOutcome, CallOrigin, ChatEvent, GrantKind, Provenance,
    Resolution, ResultReviewReason, ResultReviewStatus, RuleEffect, RuleRef, RuleScope,
    ToolCallStatus, provenance::Source,
};
use serde_json::{Map, Value, json};
use sqlx::{FromRow as _, Row as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::{sync::Arc, time::Instant};
use tokio::sync::watch;
use uuid::Uuid;

/// Appended to the description of every tool that asks.
pub const APPROVAL_NOTE: &str = "This tool pauses for the user's explicit approval before it \
executes; the user may decline.";

/// The tools of the user's connectors.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnectorTools;

/// A kept tool as stored, with its connector ([`KEPT`]'s row).
#[derive(Debug, Clone, sqlx::FromRow)]
struct Kept {
    connector_id: ConnectorId,
    connector_name: String,
    url: String,
    trust_annotations: bool,
    tool_name: String,
    model_name: String,
    /// The digest of what the server lists now.
    descriptor_digest: String,
    /// What the user kept.
    reviewed_descriptor: Option<Value>,
    reviewed_digest: Option<String>,
    requires_confirmation: Option<bool>,
    /// The user's "Review results first" on the connector.
    review_results: bool,
    /// Why this call's result waits for review whatever it says (the
    /// connector's switch or the admin policy), set at call time.
    #[sqlx(skip)]
    review: Option<ResultReviewReason>,
}

impl Kept {
    /// The server's descriptor is not the one the user kept (`changed`, or
    /// no reviewed copy at all: closed, never open).
    fn changed_since_review(&self) -> bool {
        self.reviewed_digest.as_deref() != Some(self.descriptor_digest.as_str())
            || self.reviewed_descriptor.is_none()
    }

    /// The descriptor the user reviewed: the only one the model is offered
    /// and the gate reads.
    fn reviewed(&self) -> &Value {
        static NONE: Value = Value::Null;
        self.reviewed_descriptor.as_ref().unwrap_or(&NONE)
    }

    /// The gate's facts for a call of this tool.
    fn facts(
        &self,
        (policy, addresses, destinations): (
            &Policy,
            &[std::net::IpAddr],
            &[countersign_api::Destination],
        ),
        turn_grant: bool,
        always_grant: AlwaysGrant,
        provenance: Option<&Provenance>,
        rule: Option<RuleEffect>,
    ) -> Facts<'_> {
        Facts {
            changed_since_review: self.changed_since_review(),
            annotations: self.reviewed().get("annotations"),
            trust_annotations: self.trust_annotations,
            requires_confirmation: self.requires_confirmation,
            turn_grant,
            always_grant,
            policy: policy.facts(&self.url, addresses, &self.tool_name, destinations),
            carries_results: provenance.is_some_and(Provenance::carries_results),
            follows_instructions: provenance.is_some_and(Provenance::follows_instructions),
            rule: rule.map(|effect| match effect {
                RuleEffect::Allow => gate::RuleSays::Allow,
                RuleEffect::Ask => gate::RuleSays::Ask,
                // Deny, and a word this build does not know: refused.
                _ => gate::RuleSays::Deny,
            }),
        }
    }

    /// The gate's verdict for a call that carries no tool result elsewhere
    /// and follows no instructions.
    fn decision(&self, policy: &Policy, turn_grant: bool, always_grant: AlwaysGrant) -> Decision {
        gate::decide(&self.facts((policy, &[], &[]), turn_grant, always_grant, None, None))
    }

    /// Where a call of this tool goes, for its provenance: the reviewed
    /// annotations say whether it is closed-world (never the server's new,
    /// unreviewed ones).
    fn target(&self) -> provenance::Target<'_> {
        provenance::Target {
            connector_id: self.connector_id,
            connector_name: &self.connector_name,
            tool_name: &self.tool_name,
            closed_world: provenance::Target::closed_world_in(self.reviewed().get("annotations")),
        }
    }

    /// What the card says about the tool: the reviewed title and
    /// description (never a changed tool's unreviewed new ones) and the
    /// risk its reviewed annotations declare.
    fn about(&self) -> approvals::AboutTool {
        let reviewed = self.reviewed();
        let annotations = reviewed.get("annotations");
        let text = |value: Option<&Value>| {
            value
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(|t| cut(t, approvals::ABOUT_MAX_CHARS))
        };
        approvals::AboutTool {
            title: text(reviewed.get("title"))
                .or_else(|| text(annotations.and_then(|a| a.get("title")))),
            description: text(reviewed.get("description")),
            risk: countersign_api::risk::assess(annotations),
            input_schema: reviewed
                .get("inputSchema")
                .filter(|schema| {
                    serde_json::to_vec(schema)
                        .is_ok_and(|bytes| bytes.len() <= approvals::INPUT_SCHEMA_MAX_BYTES)
                })
                .cloned(),
        }
    }

    fn spec(&self, policy: &Policy) -> ToolSpec {
        let reviewed = self.reviewed();
        let text = |key: &str| reviewed.get(key).and_then(Value::as_str);
        let mut description = text("description")
            .or_else(|| text("title"))
            .unwrap_or(&self.tool_name)
            .to_owned();
        if matches!(
            self.decision(policy, false, AlwaysGrant::None),
            Decision::Ask(_)
        ) {
            description = format!("{}\n\n{APPROVAL_NOTE}", description.trim_end());
        }
        let input_schema = match reviewed.get("inputSchema") {
            Some(schema @ Value::Object(_)) => schema.into(),
            _ => json!({"type": "object"}).into(),
        };
        ToolSpec {
            name: self.model_name.clone(),
            description,
            input_schema,
            label: format!("{}: {}", self.connector_name, self.tool_name),
        }
    }
}

/// Which of the user's kept tools to read, when not all of them.
#[derive(Debug, Clone, Copy)]
enum Which<'a> {
    /// The one offered to the model under this name.
    ModelName(&'a str),
    /// The one with this name on this connector.
    OnConnector(ConnectorId, &'a str),
}

/// The user's kept (or changed) tools that are not removed, with their
/// connectors: all of them (`$2`, `$3`, `$4` null), the one offered to
/// the model as `$2`, or tool `$4` on connector `$3`. One statement for
/// every case, so the columns and the "kept" rule are written once.
static KEPT: Statement = Statement {
    name: "cs_kept_tools",
    params: "(uuid, text, uuid, text)",
    sql: "select c.id as connector_id, c.name as connector_name, c.url, \
                 c.trust_annotations, t.name as tool_name, t.model_name, \
                 t.descriptor_digest, t.reviewed_descriptor, t.reviewed_digest, \
                 t.requires_confirmation, c.review_results \
            from connector_tools t join connectors c on c.id = t.connector_id \
           where t.user_id = $1 and c.user_id = $1 \
             and t.review_state in ('kept', 'changed') and not t.removed \
             and ($2::text is null or t.model_name = $2) \
             and ($3::uuid is null or (c.id = $3 and t.name = $4)) \
           order by t.model_name",
};

/// The user's connectors whose tool lists are older than `$2`
/// milliseconds (or were never checked) and hold kept tools.
static STALE: Statement = Statement {
    name: "cs_stale_connectors",
    params: "(uuid, int8)",
    sql: "select c.id from connectors c \
           where c.user_id = $1 \
             and (c.last_checked_at is null \
                  or c.last_checked_at < now() - make_interval(secs => $2 / 1000.0)) \
             and exists (select 1 from connector_tools t \
                          where t.connector_id = c.id and t.review_state in ('kept', 'changed'))",
};

/// The statements [`db::trip`] runs here, for the test that prepares them all.
pub static TRIPS: [&Statement; 2] = [&KEPT, &STALE];

/// All of the user's kept tools, as a part of a trip.
fn all_kept(user_id: UserId) -> Part {
    Part {
        who: As::User(user_id),
        statement: &KEPT,
        args: vec![Arg::uuid(user_id), Arg::null(), Arg::null(), Arg::null()],
    }
}

/// The user's connectors with old tool lists ([`STALE`]), as a part of a
/// trip.
fn stale(state: &AppState, user_id: UserId) -> Part {
    let max_age =
        i64::try_from(state.config.tools_max_age_secs.saturating_mul(1000)).unwrap_or(i64::MAX);
    Part {
        who: As::User(user_id),
        statement: &STALE,
        args: vec![Arg::uuid(user_id), Arg::int(max_age)],
    }
}

/// One kept tool ([`Which`]): a statement with text parameters (a name
/// the model chose), so bound, in a transaction, not a trip.
async fn kept(
    state: &AppState,
    user_id: UserId,
    which: Which<'_>,
) -> Result<Option<Kept>, sqlx::Error> {
    let (model_name, connector, tool_name) = match which {
        Which::ModelName(name) => (Some(name), None, None),
        Which::OnConnector(id, name) => (None, Some(id), Some(name)),
    };
    let mut tx = db::user_tx(&state.db, user_id).await?;
    let row = sqlx::query_as::<_, Kept>(sqlx::AssertSqlSafe(KEPT.sql))
        .bind(user_id)
        .bind(model_name)
        .bind(connector)
        .bind(tool_name)
        .fetch_optional(&mut *tx)
        .await?;
    db::end_read(tx);
    Ok(row)
}

/// All of the user's kept tools, in one round trip.
async fn kept_tools(state: &AppState, user_id: UserId) -> Result<Vec<Kept>, sqlx::Error> {
    db::trip::run(&state.db, all_kept(user_id))
        .await?
        .iter()
        .map(Kept::from_row)
        .collect()
}

async fn kept_by_model_name(
    state: &AppState,
    user_id: UserId,
    model_name: &str,
) -> Result<Option<Kept>, sqlx::Error> {
    kept(state, user_id, Which::ModelName(model_name)).await
}

async fn kept_by_connector(
    state: &AppState,
    user_id: UserId,
    connector_id: ConnectorId,
    tool_name: &str,
) -> Result<Option<Kept>, sqlx::Error> {
    kept(state, user_id, Which::OnConnector(connector_id, tool_name)).await
}

/// The user's always-allow rule for this tool, compared with its current
/// descriptor.
async fn always_grant(
    state: &AppState,
    user_id: UserId,
    tool: &Kept,
) -> Result<AlwaysGrant, sqlx::Error> {
    let mut tx = db::user_tx(&state.db, user_id).await?;
    let pinned: Option<String> = sqlx::query_scalar!(
        "select descriptor_digest from tool_grants
          where user_id = $1 and connector_id = $2 and tool_name = $3",
        user_id as UserId,
        tool.connector_id as ConnectorId,
        &tool.tool_name,
    )
    .fetch_optional(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(match pinned {
        None => AlwaysGrant::None,
        Some(digest) if digest == tool.descriptor_digest => AlwaysGrant::Current,
        Some(_) => AlwaysGrant::Stale,
    })
}

/// The user's connectors with kept tools whose tool list is older than
/// `COUNTERSIGN_TOOLS_MAX_AGE_SECS`: the ones [`refresh_connectors`] fetches again.
/// Refreshes connectors `ids` of the user (best effort: a connector that
/// cannot be reached keeps its stored list and records the error).
async fn refresh_connectors(state: &AppState, user_id: UserId, ids: Vec<Uuid>) {
    for id in ids {
        if let Err(err) = crate::connectors::refresh::refresh(state, user_id.into(), id).await {
            tracing::warn!(connector.id = %id, error = %err, "refresh of an old tool list failed");
        }
    }
}

/// Who a call's server may ask for input: the user, in the call's chat.
struct Asker<'a> {
    ctx: ToolContext,
    /// The model's id for the call.
    call_id: &'a str,
    /// The turn's Stop.
    cancel: watch::Receiver<bool>,
    /// Where the time its questions wait for the user adds up.
    waited: Arc<AtomicU64>,
}

/// Runs one call on the connector: `Ok(text)` or `Err(why)` (the tool's
/// own error result included). The server may ask the user for input
/// while it runs (DESIGN §6a): each question is a card in the chat.
async fn execute(
    state: &AppState,
    tool: &Kept,
    arguments: Map<String, Value>,
    asker: Asker<'_>,
) -> Result<String, String> {
    let user_id = asker.ctx.user_id;
    let card = CardTool::from(tool);
    let session = open_for(state, &card, asker).await?;
    call_on(state, user_id, &card, session, arguments).await
}

/// The tool a call is for, where it runs: for a call that asks, as its
/// card showed it.
#[derive(Debug, Clone)]
struct CardTool {
    connector_id: ConnectorId,
    connector_name: String,
    tool_name: String,
    /// The connector's URL: the only one the call may go to.
    url: String,
}

impl From<&Kept> for CardTool {
    fn from(tool: &Kept) -> Self {
        Self {
            connector_id: tool.connector_id,
            connector_name: tool.connector_name.clone(),
            tool_name: tool.tool_name.clone(),
            url: tool.url.clone(),
        }
    }
}

/// The session a call of `tool` runs on, with the user as the one its
/// server may ask for input. Opening it sends no tool call: only the
/// protocol's own set-up (discovery, or `initialize`).
async fn open_for(
    state: &AppState,
    tool: &CardTool,
    asker: Asker<'_>,
) -> Result<crate::mcp::McpSession, String> {
    let card = CardAsker::new(
        state.clone(),
        &Asking {
            ctx: asker.ctx,
            call_id: asker.call_id,
            connector_id: tool.connector_id,
            connector_name: &tool.connector_name,
            tool_name: &tool.tool_name,
        },
        asker.cancel,
        asker.waited,
    );
    open_session_asking(
        state,
        asker.ctx.user_id.into(),
        tool.connector_id.into(),
        &tool.url,
        Some(Elicitation::Ask(Arc::new(card))),
    )
    .await
    .map_err(|e| e.to_string())
}

/// Calls `tool` with `arguments` on `session`, then closes it.
async fn call_on(
    state: &AppState,
    user_id: UserId,
    tool: &CardTool,
    session: crate::mcp::McpSession,
    arguments: Map<String, Value>,
) -> Result<String, String> {
    let result = session.call_tool(&tool.tool_name, arguments).await;
    session.close().await;
    match result {
        Ok(r) if r.is_error => Err(if r.text.is_empty() {
            "The tool reported an error.".to_owned()
        } else {
            r.text
        }),
        Ok(r) => Ok(r.text),
        // A 401/403 means the call did not run; an OAuth connector's
        // step-up or new sign-in is recorded for the user's next sign-in.
        Err(e) => Err(refused(
            state,
            user_id.into(),
            tool.connector_id.into(),
            &tool.url,
            e,
        )
        .await
        .to_string()),
    }
}

/// Says "did not run" when the activity log cannot take the entry.
const UNAUDITED: &str =
    "Countersign could not write this call to the activity log, so it did not run.";

/// One call's lines in the activity log.
struct Activity {
    user_id: UserId,
    chat_id: ChatId,
    turn_id: TurnId,
    call_ref: String,
    connector_id: ConnectorId,
    connector_name: String,
    tool_name: String,
    arguments_digest: String,
    /// Where it sends data, and the flows provenance flagged: on the
    /// `decided` entry.
    evidence: audit::Evidence,
}

impl Activity {
    /// Before the call runs, or when it will not: what decided it. An
    /// error means the call must not run.
    async fn decided(
        &self,
        state: &AppState,
        decision: impl Into<ActivityDecision>,
        grant: Option<GrantKind>,
        outcome: ActivityOutcome,
    ) -> Result<(), sqlx::Error> {
        audit::append(
            &state.db,
            &audit::Entry {
                decision: Some(decision.into()),
                grant,
                evidence: &self.evidence,
                ..self.entry(ActivityKind::Decided, outcome)
            },
        )
        .await
        .map(|_| ())
        .inspect_err(|err| tracing::error!(error = %err, "cannot append to the activity log"))
    }

    /// A card that was not allowed: how it ended, with a decline's reason
    /// in the user's words as the entry's error (best effort: nothing
    /// runs either way).
    async fn decided_because(
        &self,
        state: &AppState,
        decision: Resolution,
        reason: Option<&str>,
    ) -> Result<(), sqlx::Error> {
        let error = reason.map(|r| format!("Declined: {r}"));
        audit::append(
            &state.db,
            &audit::Entry {
                decision: Some(decision.into()),
                error: error.as_deref(),
                evidence: &self.evidence,
                ..self.entry(ActivityKind::Decided, ActivityOutcome::NotRun)
            },
        )
        .await
        .map(|_| ())
    }

    /// After it ran (best effort: it already happened).
    async fn outcome(&self, state: &AppState, outcome: &Result<String, String>, duration_ms: u64) {
        let entry = audit::Entry {
            error: outcome.as_ref().err().map(String::as_str),
            duration_ms: Some(duration_ms),
            ..self.entry(ActivityKind::Outcome, status_of(outcome).into())
        };
        if let Err(err) = audit::append(&state.db, &entry).await {
            tracing::error!(error = %err, "cannot append a call's outcome to the activity log");
        }
    }

    /// An approved call's lines, under its ledger row's id.
    fn approved(user_id: UserId, row: &approvals::Row) -> Self {
        Self {
            user_id,
            chat_id: row.chat_id,
            turn_id: row.turn_id,
            call_ref: row.id.to_string(),
            connector_id: row.connector_id,
            connector_name: row.connector_name.clone(),
            tool_name: row.tool_name.clone(),
            arguments_digest: row.arguments_digest.clone(),
            evidence: audit::Evidence::of(
                crate::destinations::destinations(&row.arguments),
                row.provenance.as_ref().map(|p| &p.0),
            ),
        }
    }

    fn entry(&self, kind: ActivityKind, outcome: ActivityOutcome) -> audit::Entry<'_> {
        audit::Entry {
            kind,
            outcome,
            decision: None,
            grant: None,
            error: None,
            duration_ms: None,
            user_id: self.user_id,
            chat_id: self.chat_id,
            turn_id: self.turn_id,
            call_ref: &self.call_ref,
            connector_id: self.connector_id,
            connector_name: &self.connector_name,
            tool_name: &self.tool_name,
            arguments_digest: &self.arguments_digest,
            evidence: audit::Evidence::NONE,
        }
    }
}

/// `ok` or `error`, as the call went.
fn status_of(outcome: &Result<String, String>) -> ToolCallStatus {
    if outcome.is_ok() {
        ToolCallStatus::Ok
    } else {
        ToolCallStatus::Error
    }
}

fn millis(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// An approved call of the card's tool, as [`approvals::run_approved`]
/// carries it through claim → verify → execute → record (in its own task:
/// never cancelled half-way). What it adds at each step:
///
/// - beside the claim, the tool's re-read and the session's set-up at the
///   card's URL, which sends only the protocol's own set-up, with
///   credentials only while the connector still points there
///   (`connectors::load_auth_at`);
/// - once the row is claimed and verified, that the re-read tool is still
///   the user's, unchanged, at the card's URL, and the activity log's
///   entry;
/// - the call, on that session, only once `announced` resolved (the chat
///   was told of the decision: `mcp_confirmation_resolved`); otherwise the
///   session is closed unused.
struct Approved {
    state: AppState,
    /// The tool the card was for, at the card's URL.
    card: CardTool,
    /// The turn the call is for.
    ctx: ToolContext,
    /// The model's id for the call.
    call_id: String,
    /// Resolves once the chat was told of the decision.
    announced: tokio::sync::oneshot::Receiver<()>,
    /// The turn's Stop, for the server's questions while the call runs.
    cancel: watch::Receiver<bool>,
    /// The time its server's questions waited for the user.
    waited: Arc<AtomicU64>,
    /// "Edit and allow": what the log adds about the edit.
    edit: Option<EditFacts>,
    /// Who gave the second approval, when the policy asked for one.
    second_approver: Option<String>,
}

/// What the activity log's `decided` entry adds for an edited call: the
/// digest of the arguments the card showed, and the flows the edited
/// values were traced to (beside the proposal's).
struct EditFacts {
    shown_digest: String,
    flows: Vec<String>,
}

impl approvals::Execution for Approved {
    type Fresh = Result<Option<Kept>, sqlx::Error>;
    type Ready = Result<crate::mcp::McpSession, String>;

    fn shown(&self) -> approvals::Shown<'_> {
        approvals::Shown {
            user_id: self.ctx.user_id,
            connector_id: self.card.connector_id,
            tool_name: &self.card.tool_name,
        }
    }

    async fn read(&self) -> Self::Fresh {
        kept_by_connector(
            &self.state,
            self.ctx.user_id,
            self.card.connector_id,
            &self.card.tool_name,
        )
        .await
    }

    async fn prepare(&self) -> Self::Ready {
        let asker = Asker {
            ctx: self.ctx,
            call_id: &self.call_id,
            cancel: self.cancel.clone(),
            waited: self.waited.clone(),
        };
        open_for(&self.state, &self.card, asker).await
    }

    async fn admit(&self, row: &approvals::Row, fresh: Self::Fresh) -> Result<(), String> {
        still_as_approved(&self.card, row, fresh)?;
        let mut activity = Activity::approved(self.ctx.user_id, row);
        activity
            .evidence
            .second_approver
            .clone_from(&self.second_approver);
        if let Some(edit) = &self.edit {
            let evidence = &mut activity.evidence;
            evidence.shown_arguments_digest = Some(edit.shown_digest.clone());
            for flow in &edit.flows {
                if !evidence.flows.contains(flow) {
                    evidence.flows.push(flow.clone());
                }
            }
        }
        activity
            .decided(
                &self.state,
                ActivityDecision::Approved,
                row.grant(),
                ActivityOutcome::Running,
            )
            .await
            .map_err(|_| UNAUDITED.to_owned())
    }

    async fn execute(
        self,
        row: &approvals::Row,
        ready: Self::Ready,
        arguments: Map<String, Value>,
    ) -> Result<String, String> {
        let started = Instant::now();
        // A dropped sender (the turn went away) says as much: go on.
        let _ = self.announced.await;
        let outcome = match ready {
            Ok(session) => {
                call_on(
                    &self.state,
                    self.ctx.user_id,
                    &self.card,
                    session,
                    arguments,
                )
                .await
            }
            Err(why) => Err(why),
        };
        Activity::approved(self.ctx.user_id, row)
            .outcome(&self.state, &outcome, millis(started))
            .await;
        outcome
    }

    async fn abandon(self, ready: Self::Ready) {
        if let Ok(session) = ready {
            session.close().await;
        }
    }
}

/// Checks a claimed, verified row against the tool re-read after the
/// decision: still the user's, unchanged, at the URL on the card (signed
/// with the row; the session was opened there). Why it does not run, if
/// it does not.
fn still_as_approved(
    card: &CardTool,
    row: &approvals::Row,
    reread: Result<Option<Kept>, sqlx::Error>,
) -> Result<(), String> {
    let tool = reread
        .map_err(|_| "Countersign could not read the tool; the call did not run.".to_owned())?
        .ok_or_else(|| {
            "The connector or tool was removed while the call waited; it did not run.".to_owned()
        })?;
    if tool.descriptor_digest != row.descriptor_digest {
        return Err("The tool changed while the call waited; it did not run. Ask again.".into());
    }
    // The URL on the card (signed with the row) is the only one it runs
    // against: a connector re-pointed since goes nowhere.
    if tool.url != row.destination_url || card.url != row.destination_url {
        return Err(
            "The connector's address changed while the call waited; it did not run.".into(),
        );
    }
    Ok(())
}

impl ToolBox for ConnectorTools {
    fn tools_for<'a>(&'a self, state: &'a AppState, user_id: Uuid) -> BoxFuture<'a, Vec<ToolSpec>> {
        Box::pin(async move { self.tools_with(state, user_id, Vec::new(), None).await.0 })
    }

    fn tools_with<'a>(
        &'a self,
        state: &'a AppState,
        user_id: Uuid,
        beside: Vec<Part>,
        first_check: Option<Part>,
    ) -> BoxFuture<'a, ToolsWith> {
        Box::pin(async move {
            let user_id = UserId::from(user_id);
            // Three independent reads, in one round trip: which tool lists
            // are old, the kept tools, the policy (and the caller's reads
            // beside them). Mostly none is old, and the tools read is the
            // one to use; otherwise those connectors are fetched again and
            // the tools read again, after the refresh.
            let mut parts = vec![stale(state, user_id), all_kept(user_id), policy::now()];
            parts.extend(beside);
            let mut rows = match db::trip::run_parts(&state.db, parts).await {
                Ok(rows) => rows,
                Err(err) => {
                    tracing::error!(error = %err, "cannot list a user's connector tools");
                    return (Vec::new(), Err(err));
                }
            };
            let beside = rows.split_off(3);
            let read = (|| {
                let stale = rows[0]
                    .iter()
                    .map(|row| row.try_get(0))
                    .collect::<Result<Vec<Uuid>, _>>()?;
                let tools = rows[1]
                    .iter()
                    .map(Kept::from_row)
                    .collect::<Result<Vec<_>, _>>()?;
                Ok::<_, sqlx::Error>((stale, tools, policy::policy_in(&rows[2])?))
            })();
            let read = match read {
                Ok((stale, _, policy)) if !stale.is_empty() => {
                    // Fetching and recording are done on the user's
                    // behalf: the caller's check first.
                    if let Some(check) = first_check
                        && let Err(err) = db::trip::run(&state.db, check).await
                    {
                        return (Vec::new(), Err(err));
                    }
                    refresh_connectors(state, user_id, stale).await;
                    kept_tools(state, user_id)
                        .await
                        .map(|tools| (tools, policy))
                }
                Ok((_, tools, policy)) => Ok((tools, policy)),
                Err(err) => Err(err),
            };
            let tools = match read {
                Ok((tools, policy)) => tools.iter().map(|t| t.spec(&policy)).collect(),
                Err(err) => {
                    tracing::error!(error = %err, "cannot list a user's connector tools");
                    Vec::new()
                }
            };
            (tools, Ok(beside))
        })
    }

    fn call<'a>(&'a self, run: &'a ToolRun<'a>, call: &'a ToolCall) -> BoxFuture<'a, ToolOutcome> {
        Box::pin(async move {
            match call_tool(run, call).await {
                Ok(outcome) => outcome,
                Err(err) => {
                    tracing::error!(error = %err, "tool call failed on the database");
                    ToolOutcome::error("Countersign could not run this tool call. Try again.")
                }
            }
        })
    }
}

/// One call from the model: find the kept tool, refuse what cannot be
/// carried exactly, read the facts, and let the gate choose between
/// [`run_unasked`] and [`ask_and_wait`].
///
/// A call that asks spends its life parked in [`approvals::wait`] (with a
/// thousand others, DESIGN §6), and a future is as large as its largest
/// state: so every database round trip, the card, the report and the
/// execution are boxed here and in [`ask_and_wait`] — their state exists
/// only while they run — and the waiting call keeps neither the reviewed
/// descriptor nor the proposed row (`docs/operations.md`, "Where the
/// memory goes").
async fn call_tool(run: &ToolRun<'_>, call: &ToolCall) -> Result<ToolOutcome, sqlx::Error> {
    let state = run.state;
    let user_id = run.ctx.user_id;
    let Some(mut tool) = Box::pin(kept_by_model_name(state, user_id, &call.name)).await? else {
        return Ok(ToolOutcome::error(format!(
            "There is no tool named \"{}\".",
            call.name
        )));
    };
    let Value::Object(arguments) = &call.arguments else {
        return Ok(ToolOutcome::error("The arguments must be a JSON object."));
    };
    // Shown = signed = sent: a number JCS would change is refused before
    // any card or call, and the model is told how to pass it.
    if let Some((path, number)) = digest::inexact_number(&call.arguments) {
        let outcome = Err(format!(
            "The argument `{path}` is the number {number}, which cannot be carried exactly \
             (integers must lie within ±9007199254740992, and -0 is not allowed). Pass it as \
             a string instead."
        ));
        // Nothing let it run: no origin.
        let origin = Origin {
            kind: None,
            approved_at: None,
            rule: None,
        };
        return Ok(Box::pin(report(
            run,
            &tool,
            &call.id,
            &call.id,
            outcome,
            (Instant::now(), 0),
            origin,
        ))
        .await);
    }
    // The facts, read now: grants from the ledger, the user's always
    // rules, the policy, and the rules with conditions.
    let (turn_grant, always, policy, stored_rules) = Box::pin(async {
        let turn_grant = approvals::turn_grant(
            state,
            run.ctx,
            tool.connector_id,
            &tool.tool_name,
            &tool.descriptor_digest,
        )
        .await?;
        let always = always_grant(state, user_id, &tool).await?;
        let policy = policy::current(&state.db).await?;
        let rules = rules::for_user(&state.db, user_id).await?;
        Ok::<_, sqlx::Error>((turn_grant, always, policy, rules))
    })
    .await?;
    // A pattern naming an address covers every name of it (and a rule
    // that narrows: `rules`).
    let addresses = if policy.always_ask_tools.is_empty()
        && policy.review_results_tools.is_empty()
        && policy.second_approval_tools.is_empty()
        && !rules::match_addresses(&stored_rules)
    {
        Vec::new()
    } else {
        Box::pin(addresses_of(state, &tool.url)).await
    };
    // Whose results wait for review whatever they say (docs/design.md
    // §6.5a): the admin's patterns, then the user's switch.
    tool.review = if policy.reviews_results(&tool.url, &addresses, &tool.tool_name) {
        Some(ResultReviewReason::Policy)
    } else if tool.review_results {
        Some(ResultReviewReason::Connector)
    } else {
        None
    };
    // Where the arguments came from, read now: a flow asks, whatever else.
    // What the chat has seen is dropped here, before any wait.
    // Boxed, like the reads above: the waiting future stays small.
    let provenance = Box::pin(async {
        let seen = seen_in_chat(run).await?;
        Ok::<_, sqlx::Error>(provenance::trace(
            &call.arguments,
            &seen,
            &tool.target(),
            &state.config.provenance(),
            run.seen.instructions_in(),
        ))
    })
    .await?;
    // A flow whose connector and every destination are inside the firm
    // (admin policy `internal_destinations`) is shown, not flagged.
    let destinations = crate::destinations::destinations(&call.arguments);
    let mut provenance = provenance;
    provenance.flows.retain(|flow| {
        !policy::stays_inside(&policy, &tool.url, &destinations, !flow.reaches_outside)
    });
    let host = policy::host_of(&tool.url);
    let address_hosts: Vec<String> = addresses
        .iter()
        .map(|ip| policy::address_text(*ip))
        .collect();
    let rule = rules::deciding(
        &stored_rules,
        &rules::Call {
            host: host.as_deref(),
            addresses: &address_hosts,
            tool: &tool.tool_name,
            arguments: &call.arguments,
            destinations: &destinations,
        },
        policy.forbid_always_allow,
    )
    .map(rules::reference);
    drop(stored_rules);
    let facts = tool.facts(
        (&policy, &addresses, &destinations),
        turn_grant,
        always,
        Some(&provenance),
        rule.as_ref().map(|r| r.effect),
    );
    let second_approval = facts.policy.second_approval;
    match gate::decide(&facts) {
        Decision::Run(because) => {
            Ok(Box::pin(run_unasked(run, call, &tool, arguments, because, rule)).await)
        }
        Decision::Refuse => Ok(Box::pin(refuse(run, call, &tool, rule)).await),
        Decision::Ask(because) => {
            let offered = gate::offered_grants(&facts);
            let about = tool.about();
            // Past the card nothing reads the reviewed descriptor.
            tool.reviewed_descriptor = None;
            let reason = match (&rule, because) {
                (Some(rule), gate::AskBecause::RuleAsks) => format!(
                    "{} asks for this call: \u{201c}{}\u{201d}",
                    rule_owner(rule),
                    rule.description
                ),
                _ => because.text().to_owned(),
            };
            let asking = CardAsks {
                reason: &reason,
                offered_grants: offered,
                second_approval,
            };
            ask_and_wait(run, call, &tool, about, &asking, &provenance).await
        }
    }
}

/// "Your rule" or "Your organisation's rule".
fn rule_owner(rule: &RuleRef) -> &'static str {
    if rule.scope == RuleScope::Admin {
        "Your organisation's rule"
    } else {
        "Your rule"
    }
}

/// A call a deny rule refuses: logged as decided (best effort: nothing
/// runs either way), reported to the chat and to the model as not run.
async fn refuse(
    run: &ToolRun<'_>,
    call: &ToolCall,
    tool: &Kept,
    rule: Option<RuleRef>,
) -> ToolOutcome {
    let words = rule.as_ref().map_or_else(String::new, |r| {
        format!(
            " ({}: \u{201c}{}\u{201d})",
            rule_owner(r).to_lowercase(),
            r.description
        )
    });
    let why = format!("A rule refuses this call{words}; nobody was asked and nothing ran.");
    let mut activity = activity(run, call, tool, call.id.clone(), None);
    activity.evidence.rule = rule.clone();
    let _ = activity
        .decided(
            run.state,
            ActivityDecision::DeniedByRule,
            None,
            ActivityOutcome::NotRun,
        )
        .await;
    let origin = Origin {
        kind: None,
        approved_at: None,
        rule,
    };
    let mut outcome = report(
        run,
        tool,
        &call.id,
        &call.id,
        Err(why),
        (Instant::now(), 0),
        origin,
    )
    .await;
    outcome.not_run = Some(NotRun::Declined);
    outcome
}

/// The addresses the host of `url` resolves to, through the resolver the
/// connection is dialled with (an IP literal is its own); none when it
/// does not resolve within two seconds (the dial would fail too).
async fn addresses_of(state: &AppState, url: &str) -> Vec<std::net::IpAddr> {
    let Some(host) = reqwest::Url::parse(url).ok().and_then(|u| match u.host()? {
        url::Host::Domain(name) => Some(Err(name.to_owned())),
        url::Host::Ipv4(ip) => Some(Ok(std::net::IpAddr::V4(ip))),
        url::Host::Ipv6(ip) => Some(Ok(std::net::IpAddr::V6(ip))),
    }) else {
        return Vec::new();
    };
    match host {
        Ok(ip) => vec![ip],
        Err(name) => {
            let lookup = state.resolver.lookup(&name);
            match tokio::time::timeout(std::time::Duration::from_secs(2), lookup).await {
                Ok(Ok(addresses)) => addresses,
                _ => Vec::new(),
            }
        }
    }
}

/// What the chat has seen, for a call's provenance: the user's messages,
/// the results of earlier turns as the chat stores them (the start of each,
/// `mcp_tool_call.result`, or the whole `error`), and this turn's results
/// and errors as the model got them.
async fn seen_in_chat(run: &ToolRun<'_>) -> Result<Vec<Seen>, sqlx::Error> {
    let ctx = run.ctx;
    let mut tx = db::user_tx(&run.state.db, ctx.user_id).await?;
    let typed = sqlx::query_scalar!(
        "select content from messages where chat_id = $1 and role = 'user' order by created_at",
        ctx.chat_id as ChatId,
    )
    .fetch_all(&mut *tx)
    .await?;
    let earlier = sqlx::query!(
        r#"select data, created_at from chat_events
            where chat_id = $1 and type = 'mcp_tool_call' and turn_id is distinct from $2
              and (data ? 'result' or data ? 'error')
            order by seq"#,
        ctx.chat_id as ChatId,
        ctx.turn_id as TurnId,
    )
    .fetch_all(&mut *tx)
    .await?;
    tx.commit().await?;
    let mut seen: Vec<Seen> = typed
        .into_iter()
        .map(|text| Seen {
            by: SeenBy::User,
            text,
        })
        .collect();
    for row in earlier {
        // An error's text reached the model as a result's does.
        let Ok(ChatEvent::McpToolCall {
            id,
            connector_id,
            connector_name,
            tool_name,
            result,
            error,
            ..
        }) = serde_json::from_value::<ChatEvent>(row.data)
        else {
            continue;
        };
        let Some(text) = result.or(error) else {
            continue;
        };
        // An event from before connector ids were recorded: its connector
        // is unknown, so any flow from it counts as another connector's.
        let connector_id = connector_id
            .and_then(|id| id.parse::<Uuid>().ok())
            .map_or(ConnectorId(Uuid::nil()), ConnectorId);
        seen.push(Seen {
            by: SeenBy::Tool {
                source: Source {
                    call: id,
                    connector_name,
                    tool_name,
                    at: rfc3339(row.created_at),
                },
                connector_id,
            },
            text,
        });
    }
    seen.extend(run.seen.results());
    Ok(seen)
}

fn rfc3339(at: time::OffsetDateTime) -> String {
    at.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The call's lines in the activity log, under `call_ref` (the model's
/// call id, or the ledger row's id once there is a card), with its
/// provenance when it was traced for a card.
fn activity(
    run: &ToolRun<'_>,
    call: &ToolCall,
    tool: &Kept,
    call_ref: String,
    provenance: Option<&Provenance>,
) -> Activity {
    Activity {
        user_id: run.ctx.user_id,
        chat_id: run.ctx.chat_id,
        turn_id: run.ctx.turn_id,
        call_ref,
        connector_id: tool.connector_id,
        connector_name: tool.connector_name.clone(),
        tool_name: tool.tool_name.clone(),
        arguments_digest: digest::sha256_hex(digest::canonical(&call.arguments)),
        evidence: audit::Evidence::of(
            crate::destinations::destinations(&call.arguments),
            provenance,
        ),
    }
}

/// A call the gate lets run without a card (a read-only tool the user
/// trusts, a turn or always grant): logged as decided first (no log, no
/// run), then run and reported.
async fn run_unasked(
    run: &ToolRun<'_>,
    call: &ToolCall,
    tool: &Kept,
    arguments: &Map<String, Value>,
    because: gate::RunBecause,
    rule: Option<RuleRef>,
) -> ToolOutcome {
    let state = run.state;
    tracing::info!(?because, tool = %tool.model_name, "tool call runs without a card");
    // Never flagged: a flagged call always asks. The rule is named only
    // when it is what let the call run.
    let rule = rule.filter(|_| because == gate::RunBecause::Rule);
    let mut activity = activity(run, call, tool, call.id.clone(), None);
    activity.evidence.rule = rule.clone();
    let started = Instant::now();
    let waited = Arc::new(AtomicU64::new(0));
    let outcome = match activity
        .decided(state, because.origin(), None, ActivityOutcome::Running)
        .await
    {
        Ok(()) => {
            let asker = Asker {
                ctx: run.ctx,
                call_id: &call.id,
                cancel: run.cancel.clone(),
                waited: waited.clone(),
            };
            let outcome = execute(state, tool, arguments.clone(), asker).await;
            activity.outcome(state, &outcome, millis(started)).await;
            outcome
        }
        Err(_) => Err(UNAUDITED.to_owned()),
    };
    let origin = Origin {
        kind: Some(because.origin()),
        approved_at: None,
        rule,
    };
    let waited = waited.load(Ordering::Relaxed);
    report(
        run,
        tool,
        &call.id,
        &call.id,
        outcome,
        (started, waited),
        origin,
    )
    .await
}

/// A call that asks: propose it to the ledger, put the card before the
/// user, wait for the decision (or Stop, or expiry), and run it only
/// through [`approvals::run_approved`], in its own task so it is never
/// cancelled half-way.
async fn ask_and_wait(
    run: &ToolRun<'_>,
    call: &ToolCall,
    tool: &Kept,
    about: approvals::AboutTool,
    asking: &CardAsks<'_>,
    provenance: &Provenance,
) -> Result<ToolOutcome, sqlx::Error> {
    let state = run.state;
    // The row, once its card is out, is only its id.
    let id = Box::pin(async {
        let row = approvals::propose(
            state,
            &approvals::Proposal {
                ctx: run.ctx,
                call_id: &call.id,
                connector_id: tool.connector_id,
                connector_name: &tool.connector_name,
                tool_name: &tool.tool_name,
                model_tool_name: &tool.model_name,
                arguments: &call.arguments,
                descriptor_digest: &tool.descriptor_digest,
                destination_url: &tool.url,
                reason: asking.reason,
                offered_grants: asking.offered_grants,
                provenance,
                second_approval: asking.second_approval,
            },
        )
        .await?;
        run.events.emit(row.required_event(&about)).await;
        Ok::<_, sqlx::Error>(row.id)
    })
    .await?;
    drop(about);

    let mut cancel = run.cancel.clone();
    let waited = approvals::wait(state, id, &mut cancel).await?;
    let decision = match &waited {
        Waited::Approved => Resolution::Approved,
        Waited::Denied | Waited::Cancelled => Resolution::Denied,
        Waited::Expired => Resolution::Expired,
        Waited::Gone(_) => Resolution::Expired,
    };
    // How it was decided, read once: the grant an approval chose, when,
    // and a decline's reason in the user's words — for the card's story,
    // the model and the activity log (a failed read says less, never
    // more).
    let approvals::HowDecided {
        grant,
        decided_at,
        decline_reason,
        edited,
        second_approver,
    } = if decision == Resolution::Expired {
        approvals::HowDecided::default()
    } else {
        Box::pin(approvals::decided_of(state, id))
            .await
            .ok()
            .flatten()
            .unwrap_or_default()
    };
    let grant = grant.filter(|_| decision == Resolution::Approved);
    let edited = edited.filter(|_| decision == Resolution::Approved);
    // "Edit and allow": the edited values are traced too, and what they
    // flag joins the log's entry (an edit never unflags: the row keeps the
    // proposal's provenance). The reviewed descriptor was dropped before
    // the wait, so the tool counts as open-world here: more flags, never
    // fewer.
    let edit = match &edited {
        None => None,
        Some((arguments, shown_digest)) => {
            let traced = Box::pin(async {
                let seen = seen_in_chat(run).await?;
                Ok::<_, sqlx::Error>(provenance::trace(
                    arguments,
                    &seen,
                    &tool.target(),
                    &state.config.provenance(),
                    run.seen.instructions_in(),
                ))
            })
            .await?;
            Some(EditFacts {
                shown_digest: shown_digest.clone(),
                flows: traced.flows.into_iter().map(|flow| flow.text).collect(),
            })
        }
    };
    let edited_arguments = edited.map(|(arguments, _)| arguments);
    let decline_reason = decline_reason.filter(|_| matches!(waited, Waited::Denied));
    if decision != Resolution::Approved {
        // Nothing runs either way; the log is best effort here.
        let mut activity = activity(run, call, tool, id.to_string(), Some(provenance));
        activity.evidence.second_approver = second_approver.clone();
        let _ =
            Box::pin(activity.decided_because(state, decision, decline_reason.as_deref())).await;
    }
    // The card's resolution, with what was read above.
    let decided_at = decided_at.and_then(|at| {
        at.format(&time::format_description::well_known::Rfc3339)
            .ok()
    });
    let announced_reason = decline_reason.clone();
    let stopped = matches!(waited, Waited::Cancelled);
    let announced_edit = edited_arguments.clone();
    let announced_approver = second_approver.clone();
    let announce = |decision| async move {
        if let Some(hook) = &state.approval_hooks.before_resolved {
            hook(id.into()).await;
        }
        run.events
            .emit(ChatEvent::McpConfirmationResolved {
                turn_id: run.ctx.turn_id.to_string(),
                id: id.to_string(),
                decision,
                grant,
                decided_at,
                decline_reason: announced_reason,
                stopped,
                edited_arguments: announced_edit,
                second_approver: announced_approver,
            })
            .await;
    };
    let not_run = |content: &str, why| ToolOutcome {
        ok: false,
        content: content.to_owned(),
        reported: true,
        not_run: Some(why),
    };
    Ok(match waited {
        Waited::Approved => {
            let started = Instant::now();
            let asked = Arc::new(AtomicU64::new(0));
            // The call's lifecycle starts at once (claim, re-read, audit
            // record: the way to execution) while the chat is told of the
            // decision; it runs the call only once it was told.
            let (told, announced) = tokio::sync::oneshot::channel();
            let running = approvals::run_approved(
                state,
                id,
                Approved {
                    state: state.clone(),
                    card: CardTool::from(tool),
                    ctx: run.ctx,
                    call_id: call.id.clone(),
                    announced,
                    cancel: run.cancel.clone(),
                    waited: asked.clone(),
                    edit,
                    second_approver,
                },
            );
            Box::pin(announce(decision)).await;
            let _ = told.send(());
            let approvals::Ran {
                approved_at,
                outcome,
            } = running.await;
            let origin = Origin {
                kind: Some(CallOrigin::Approved),
                approved_at,
                rule: None,
            };
            let mut reported = Box::pin(report(
                run,
                tool,
                &id.to_string(),
                &call.id,
                outcome,
                (started, asked.load(Ordering::Relaxed)),
                origin,
            ))
            .await;
            // The model learns the call ran with the user's edits.
            if let Some(arguments) = &edited_arguments {
                reported.content = format!(
                    "{}\n\n{}",
                    approvals::ran_with_edits(arguments),
                    reported.content
                );
            }
            reported
        }
        Waited::Denied | Waited::Cancelled => {
            Box::pin(announce(decision)).await;
            match decline_reason {
                Some(reason) => not_run(&approvals::declined_because(&reason), NotRun::Declined),
                None => not_run(approvals::DECLINED, NotRun::Declined),
            }
        }
        Waited::Expired | Waited::Gone(_) => {
            Box::pin(announce(decision)).await;
            not_run(approvals::EXPIRED, NotRun::Expired)
        }
    })
}

/// Why a card asks, and what it offers.
struct CardAsks<'a> {
    reason: &'a str,
    offered_grants: &'a [GrantKind],
    /// The policy gives the call a second approver.
    second_approval: bool,
}

/// What let a call run, for its origin chip.
struct Origin {
    kind: Option<CallOrigin>,
    approved_at: Option<String>,
    /// The rule that allowed or refused it.
    rule: Option<RuleRef>,
}

/// Emits `mcp_tool_call` and turns the outcome into the model's result.
async fn report(
    run: &ToolRun<'_>,
    tool: &Kept,
    id: &str,
    call_id: &str,
    outcome: Result<String, String>,
    (started, waited_ms): (Instant, u64),
    origin: Origin,
) -> ToolOutcome {
    // The tool's own time: what its questions waited for the user is
    // counted apart.
    let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let duration_ms = elapsed.saturating_sub(waited_ms);
    run.state
        .metrics
        .tool_call(status_of(&outcome), origin.kind);
    let ids = (run.ctx.user_id, tool.connector_id);
    let sign_in = outcome.is_err()
        && crate::connectors::oauth::needs_sign_in(run.state, ids, &tool.url).await;
    // What the model will see of a result is what later calls of this
    // turn are traced against, and what is searched for instructions. An
    // error is read by the model too, and its text may be the server's
    // (`isError: true`, a JSON-RPC error's message): a server that hands
    // back a memo as an error must not escape provenance.
    let marked = {
        let (Ok(text) | Err(text)) = &outcome;
        let seen: String = text
            .chars()
            .take(crate::turns::MAX_TOOL_RESULT_CHARS)
            .collect();
        provenance::contains_instructions(&seen)
    };
    // A marked result, and one the connector's switch or the policy names,
    // waits for the user first; what they let through is all the model,
    // the provenance of later calls and the transcript get.
    let reason = if marked {
        Some(ResultReviewReason::Instructions)
    } else {
        tool.review
    };
    let (outcome, result_review) = match reason {
        None => (outcome, None),
        Some(reason) => {
            let (outcome, status) =
                Box::pin(review_result(run, tool, (id, call_id), outcome, reason)).await;
            (outcome, Some(status))
        }
    };
    let withheld = matches!(
        result_review,
        Some(ResultReviewStatus::Withheld | ResultReviewStatus::Expired)
    );
    let (result, result_chars) = match &outcome {
        Ok(text) if !withheld => {
            let (shown, chars) = result_preview(text);
            (Some(shown), Some(chars))
        }
        _ => (None, None),
    };
    let contains_instructions = marked && !withheld;
    if !withheld {
        let (Ok(text) | Err(text)) = &outcome;
        let seen: String = text
            .chars()
            .take(crate::turns::MAX_TOOL_RESULT_CHARS)
            .collect();
        run.seen.add(
            Source {
                call: id.to_owned(),
                connector_name: tool.connector_name.clone(),
                tool_name: tool.tool_name.clone(),
                at: rfc3339(time::OffsetDateTime::now_utc()),
            },
            tool.connector_id,
            seen,
            marked,
        );
    }
    run.events
        .emit(ChatEvent::McpToolCall {
            turn_id: run.ctx.turn_id.to_string(),
            id: id.to_owned(),
            call_id: call_id.to_owned(),
            connector_name: tool.connector_name.clone(),
            tool_name: tool.tool_name.clone(),
            status: status_of(&outcome),
            error: outcome.as_ref().err().cloned(),
            duration_ms,
            waited_ms: (waited_ms > 0).then_some(waited_ms),
            origin: origin.kind,
            approved_at: origin.approved_at,
            rule: origin.rule.map(Box::new),
            sign_in_connector_id: sign_in.then(|| tool.connector_id.to_string()),
            result,
            result_chars,
            contains_instructions,
            connector_id: Some(tool.connector_id.to_string()),
            result_review,
        })
        .await;
    let mut result = match outcome {
        Ok(text) => ToolOutcome::ok(text),
        Err(why) => ToolOutcome::error(why),
    };
    result.reported = true;
    result
}

/// Holds a call's result for the user's review (docs/design.md §6.5a) and
/// returns what the model may read of it, with how the review ended. The
/// reviewed text is what the model would read — control and
/// direction-changing characters removed, cut where the model's copy is
/// cut — so what the user passes is exactly what the model gets. Anything
/// short of a pass or a redaction (withheld, expired, stopped, a failed
/// write or read) withholds it: the model reads only that.
async fn review_result(
    run: &ToolRun<'_>,
    tool: &Kept,
    (call_ref, call_id): (&str, &str),
    outcome: Result<String, String>,
    reason: ResultReviewReason,
) -> (Result<String, String>, ResultReviewStatus) {
    let state = run.state;
    let is_error = outcome.is_err();
    let (Ok(text) | Err(text)) = outcome;
    let text: String = readable(&text)
        .chars()
        .take(crate::turns::MAX_TOOL_RESULT_CHARS)
        .collect();
    let reviewing = results::Reviewing {
        ctx: run.ctx,
        call_id,
        connector_id: tool.connector_id,
        connector_name: &tool.connector_name,
        tool_name: &tool.tool_name,
    };
    let reviewed = match results::open(state, &reviewing, reason, &text, is_error).await {
        Ok(row) => {
            run.events.emit(row.required_event()).await;
            let mut cancel = run.cancel.clone();
            let reviewed = results::wait(state, row.id, &mut cancel)
                .await
                .unwrap_or_else(|err| {
                    tracing::error!(error = %err, "cannot read a result review; withholding it");
                    results::Reviewed::Expired
                });
            run.events
                .emit(ChatEvent::McpResultReviewResolved {
                    turn_id: run.ctx.turn_id.to_string(),
                    id: row.id.to_string(),
                    status: reviewed.status(),
                    decided_at: Some(rfc3339(time::OffsetDateTime::now_utc())),
                })
                .await;
            reviewed
        }
        Err(err) => {
            tracing::error!(error = %err, "cannot store a result for review; withholding it");
            results::Reviewed::Expired
        }
    };
    let status = reviewed.status();
    // The choice enters the activity chain beside the call's own entries
    // (best effort: the result is decided either way).
    let entry = audit::Entry {
        user_id: run.ctx.user_id,
        chat_id: run.ctx.chat_id,
        turn_id: run.ctx.turn_id,
        call_ref,
        kind: ActivityKind::ResultReviewed,
        connector_id: tool.connector_id,
        connector_name: &tool.connector_name,
        tool_name: &tool.tool_name,
        // On the call's `decided` entry, which shares `call_ref`.
        arguments_digest: "",
        decision: None,
        grant: None,
        outcome: if is_error {
            ActivityOutcome::Error
        } else {
            ActivityOutcome::Ok
        },
        error: None,
        duration_ms: None,
        evidence: &audit::Evidence {
            result_review: Some(status),
            ..audit::Evidence::default()
        },
    };
    if let Err(err) = audit::append(&state.db, &entry).await {
        tracing::error!(error = %err, "cannot append a result review to the activity log");
    }
    let read = reviewed.apply(&text).unwrap_or_else(|| {
        if status == ResultReviewStatus::Withheld {
            results::WITHHELD.to_owned()
        } else {
            results::UNREVIEWED.to_owned()
        }
    });
    let read = if is_error { Err(read) } else { Ok(read) };
    (read, status)
}

/// `text` without control characters (but newlines and tabs) and
/// bidirectional overrides: a hostile server must not make the text read
/// differently from what the model gets.
fn readable(text: &str) -> String {
    text.chars()
        .filter(|&c| {
            matches!(c, '\n' | '\t')
                || !(c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}'))
        })
        .collect()
}

/// What `mcp_tool_call.result` shows of a tool's result, and the whole
/// result's length in characters: control characters (but newlines and
/// tabs) and bidirectional overrides removed — a hostile server must not
/// make the text read differently from what the model got — and cut at
/// [`countersign_api::events::RESULT_PREVIEW_CHARS`].
fn result_preview(text: &str) -> (String, u64) {
    let chars = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
    let clean: String = readable(text)
        .chars()
        .take(countersign_api::events::RESULT_PREVIEW_CHARS)
        .collect();
    (clean, chars)
}

/// `text` cut to at most `max` characters, with "…" when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", text[..at].trim_end()),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::PendingCallId;

    #[test]
    fn destinations_are_the_connectors_host_and_explicit_port() {
        use approvals::destination;
        assert_eq!(
            destination("https://mcp.example.com/mcp"),
            "mcp.example.com"
        );
        assert_eq!(destination("http://127.0.0.1:3100/mcp"), "127.0.0.1:3100");
        assert_eq!(destination("not a url"), "");
    }

    fn kept(annotations: Value, trust: bool) -> Kept {
        let descriptor =
            json!({"name": "search", "description": "Search.", "annotations": annotations});
        Kept {
            connector_id: ConnectorId(Uuid::nil()),
            connector_name: "Docs".into(),
            url: "https://docs.example/mcp".into(),
            trust_annotations: trust,
            tool_name: "search".into(),
            model_name: "docs__search".into(),
            reviewed_descriptor: Some(descriptor),
            descriptor_digest: "0".repeat(64),
            reviewed_digest: Some("0".repeat(64)),
            requires_confirmation: None,
            review_results: false,
            review: None,
        }
    }

    /// A call waiting for a decision (a thousand at once, DESIGN §6) is a
    /// boxed `call_tool` future parked in `approvals::wait`: its database
    /// work, card and execution are boxed (see [`call_tool`]). Unboxed it
    /// was ~13 KiB in a release build. Sizes, not times (debug build here:
    /// 1,152 and 472 B when this was written).
    #[test]
    fn a_waiting_calls_future_is_small() {
        fn size<A, B, F>(_: fn(A, B) -> F) -> usize {
            std::mem::size_of::<F>()
        }
        fn size3<A, B, C, F>(_: fn(A, B, C) -> F) -> usize {
            std::mem::size_of::<F>()
        }
        let call =
            size(|run: &'static ToolRun<'static>, call: &'static ToolCall| call_tool(run, call));
        let wait = size3(
            |state: &'static AppState,
             id: PendingCallId,
             cancel: &'static mut watch::Receiver<bool>| {
                approvals::wait(state, id, cancel)
            },
        );
        assert!(call <= 3072, "call_tool's future is {call} B");
        assert!(wait <= 1024, "approvals::wait's future is {wait} B");
    }

    #[test]
    fn tools_that_ask_carry_the_approval_note() {
        let safe = json!({"readOnlyHint": true, "openWorldHint": false});
        let open = Policy::default();
        let asks = kept(safe.clone(), false).spec(&open);
        assert!(
            asks.description.ends_with(APPROVAL_NOTE),
            "{}",
            asks.description
        );
        assert_eq!(asks.input_schema, json!({"type": "object"}).into());
        let trusted = kept(safe.clone(), true).spec(&open);
        assert_eq!(trusted.description, "Search.");
        // A tool the policy says always asks says so to the model, trusted
        // or not.
        let strict = Policy {
            always_ask_tools: vec!["docs.example/*".into()],
            ..Policy::default()
        };
        assert!(
            kept(safe, true)
                .spec(&strict)
                .description
                .ends_with(APPROVAL_NOTE)
        );
    }

    #[test]
    fn a_changed_tool_is_offered_as_reviewed_and_asks() {
        let mut tool = kept(json!({"destructiveHint": true}), true);
        // The server now lists something else (say, claiming safety).
        tool.descriptor_digest = "1".repeat(64);
        let spec = tool.spec(&Policy::default());
        assert!(
            spec.description.starts_with("Search."),
            "{}",
            spec.description
        );
        assert!(spec.description.ends_with(APPROVAL_NOTE));
        assert_eq!(spec.input_schema, json!({"type": "object"}).into());
        assert_eq!(
            tool.decision(&Policy::default(), true, AlwaysGrant::Current),
            Decision::Ask(gate::AskBecause::ChangedSinceReviewed)
        );
        // No reviewed copy at all: asks, never runs.
        tool.reviewed_descriptor = None;
        tool.reviewed_digest = None;
        assert!(tool.changed_since_review());
    }

    #[test]
    fn a_result_is_shown_without_control_or_direction_tricks_and_capped() {
        assert_eq!(
            result_preview("3 notes\n\tok"),
            ("3 notes\n\tok".into(), 11)
        );
        // "evil\u{202e}txt.exe" would read "exe.txt" backwards.
        assert_eq!(
            result_preview("a\u{202e}b\u{2066}c\u{7}d\u{1b}[31me"),
            ("abcd[31me".into(), 13)
        );
        let long = "é".repeat(countersign_api::events::RESULT_PREVIEW_CHARS + 5);
        let (shown, chars) = result_preview(&long);
        assert_eq!(
            shown.chars().count(),
            countersign_api::events::RESULT_PREVIEW_CHARS
        );
        assert_eq!(
            chars,
            countersign_api::events::RESULT_PREVIEW_CHARS as u64 + 5
        );
    }

    #[test]
    fn long_texts_are_cut_at_a_character_with_an_ellipsis() {
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("abcdef", 3), "abc…");
        assert_eq!(cut("ab  cdef", 3), "ab…");
        assert_eq!(cut("ééééé", 2), "éé…");
    }
}
