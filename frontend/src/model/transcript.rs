//! What a chat page shows, as plain data: the finished messages from
//! `GET /api/chats/{id}`, then the stream's events applied one by one
//! (DESIGN §7).
//!
//! It owns the rules that keep a transcript right across reloads, second
//! tabs and reconnects: events are applied at most once (by sequence
//! number), a turn is built from its events (`turn_started` shows the
//! user's message, `text_delta` appends, tool blocks, errors in place,
//! `turn_finished` ends it), and event types this build does not know are
//! skipped. It knows nothing of the DOM or of HTTP, so it is unit-tested on
//! the host (`cargo test -p countersign-web --lib`); the chat page keeps one
//! in a signal and renders it.
//!
//! It also holds each gated call's approval card (DESIGN §6) on the tool
//! call it belongs to: `mcp_confirmation_required` puts the card on the
//! block of the `tool_call` with the same `call_id` (or adds a block),
//! `mcp_confirmation_resolved` and `mcp_tool_call` find it by `call_id` or
//! ledger id. What this page did meanwhile (pressed Allow once, got a 404
//! because another tab decided first) is a local state that only the
//! stream's `mcp_confirmation_resolved` replaces: the server decides, the
//! card only shows it.
//!
//! A call's server may ask the user for input while it runs (DESIGN §6a):
//! `mcp_input_required` puts an [`Input`] on the block of the tool call with
//! the same `call_id` (one per round, in order), `mcp_input_resolved` ends
//! it by id. As with approvals, what this page sent is a local state until
//! the stream says how it ended; the turn ending first closes it.
//!
//! Every MCP call that ran keeps its [`Origin`] from `mcp_tool_call`: the
//! card the user approved, or the rule that let it run without one (this
//! turn's grant, an always-allow rule, trusted annotations), for the chip
//! the transcript shows on it (DESIGN §5).

use countersign_api::{
    CallOrigin, ChatDetail, ChatEvent, GrantKind, InputAction, InputMode, InputRequestStatus,
    MessageStatus, Provenance, Resolution, ResultReviewStatus, RuleRef, RuleScope, ToolCallStatus,
    ToolRisk, TurnEnding,
};

/// The chat's turns, oldest first, and how far the stream has been applied.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcript {
    /// Turns in the order they started.
    pub turns: Vec<Turn>,
    /// The sequence number of the last event applied.
    pub last_seq: i64,
    /// A turn the server accepted (`POST …/messages` answered) whose
    /// `turn_started` has not arrived yet.
    accepted: Option<String>,
}

/// One turn: the user's message and the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The turn's id.
    pub turn_id: String,
    /// What the user wrote, once known.
    pub user: Option<String>,
    /// The answer, in the order it arrived: text, tool calls and errors.
    pub segments: Vec<Segment>,
    /// Where the turn stands.
    pub status: TurnStatus,
    /// Loaded from `GET /api/chats/{id}` (finished before the page opened):
    /// stream events never change it.
    pub from_history: bool,
}

/// A piece of an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    /// Markdown text from the model.
    Text(String),
    /// A tool call the model proposed, and what came of it.
    Tool(ToolCall),
    /// An error, in words the server chose.
    Error(String),
}

/// A tool call block.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Call id.
    pub id: String,
    /// Tool name as offered to the model.
    pub tool_name: String,
    /// Arguments as pretty JSON (empty when unknown).
    pub arguments: String,
    /// What happened to it.
    pub state: ToolState,
    /// Its approval card, when the call had to ask (DESIGN §6).
    pub approval: Option<Box<Approval>>,
    /// How long it ran, when the server said (`mcp_tool_call`).
    pub duration_ms: Option<u64>,
    /// How long the call waited, while it ran, for the user's answers
    /// (not in `duration_ms`).
    /// (Never zero: so the block stays small.)
    pub waited_ms: Option<std::num::NonZeroU64>,
    /// What let it run, when the server said (`mcp_tool_call`).
    pub origin: Option<Origin>,
    /// What its server asked the user while it ran, oldest first.
    pub inputs: Vec<Input>,
    /// It failed because its OAuth connector needs a new sign-in: the
    /// chat offers "Sign in to <connector> again".
    pub sign_in: Option<Box<SignInAgain>>,
    /// What it returned, as far as the server shows it.
    pub result: Option<Box<ToolResult>>,
    /// For people: "<connector>: <tool>" once the server named them
    /// (`mcp_tool_call`), instead of the model-facing slug.
    pub label: Option<Box<str>>,
    /// Its result, held for the user's review before the model read it
    /// (docs/design.md §6.5a).
    pub review: Option<Box<Review>>,
}

/// A result held for review (`mcp_result_review_required`): the card reads
/// its text, why it waits and until when from the server while it waits;
/// the event log never has the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    /// `POST /api/mcp-pending-calls/{id}/result` decides it.
    pub id: String,
    /// The connector whose result it is.
    pub connector_name: String,
    /// How it ended; `None` while it waits.
    pub status: Option<ResultReviewStatus>,
}

impl ToolCall {
    /// The name shown: the connector and tool when known, else the name
    /// the model used.
    pub fn shown_name(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.tool_name)
    }
}

/// The start of what a tool returned (`mcp_tool_call.result`), shown as
/// text, folded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// The text shown (cleaned and capped by the server).
    pub text: String,
    /// How many characters the whole result had.
    pub total_chars: u64,
    /// The server found text aimed at the assistant in it (and treated it
    /// as data).
    pub contains_instructions: bool,
}

impl ToolResult {
    /// The fold's label: "Result (12 characters)", or "Result (first
    /// 4000 of 9000 characters)" when the server cut it.
    pub fn label(&self) -> String {
        let shown = self.text.chars().count() as u64;
        if shown < self.total_chars {
            format!("Result (first {shown} of {} characters)", self.total_chars)
        } else {
            format!(
                "Result ({} character{})",
                self.total_chars,
                if self.total_chars == 1 { "" } else { "s" }
            )
        }
    }
}

/// The connector a failed call needs a new sign-in for
/// (`mcp_tool_call.sign_in_connector_id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInAgain {
    /// `POST /api/connectors/{id}/oauth/start` starts it.
    pub connector_id: String,
    /// Its name, for the button.
    pub connector_name: String,
}

/// What let an MCP call run: the `origin` of its `mcp_tool_call` event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The user approved its card, at `approved_at` (RFC 3339) when known.
    Approved {
        /// When, by the server's clock.
        approved_at: Option<String>,
    },
    /// "Allow for this turn" on an earlier card of the same turn.
    TurnGrant,
    /// The user's "always allow" rule for this tool.
    AlwaysGrant,
    /// The user trusts the server's annotations, and they declare the tool
    /// read-only and closed-world.
    TrustedAnnotations,
    /// An allow rule with conditions (DESIGN §5 "Rules").
    Rule {
        /// The rule in words, as the server wrote it.
        description: String,
        /// An administrator's rule for everyone, not the user's own.
        organisation: bool,
    },
}

impl Origin {
    /// The origin an event names; `None` for none or a word this build does
    /// not know (a newer server): no chip rather than a wrong one.
    /// A rule's run names its rule (`rule`); without one there is no chip.
    pub fn from_event(
        origin: Option<CallOrigin>,
        approved_at: Option<String>,
        rule: Option<Box<RuleRef>>,
    ) -> Option<Self> {
        match origin? {
            CallOrigin::Approved => Some(Self::Approved { approved_at }),
            CallOrigin::TurnGrant => Some(Self::TurnGrant),
            CallOrigin::AlwaysGrant => Some(Self::AlwaysGrant),
            CallOrigin::TrustedAnnotations => Some(Self::TrustedAnnotations),
            CallOrigin::Rule => rule.map(|rule| Self::Rule {
                organisation: rule.scope == RuleScope::Admin,
                description: rule.description,
            }),
            CallOrigin::Unknown => None,
        }
    }

    /// The wire word it came from.
    pub fn wire(&self) -> CallOrigin {
        match self {
            Self::Approved { .. } => CallOrigin::Approved,
            Self::TurnGrant => CallOrigin::TurnGrant,
            Self::AlwaysGrant => CallOrigin::AlwaysGrant,
            Self::TrustedAnnotations => CallOrigin::TrustedAnnotations,
            Self::Rule { .. } => CallOrigin::Rule,
        }
    }

    /// A stable name for tests and styles (`data-origin`): the wire word.
    pub fn key(&self) -> &'static str {
        self.wire().as_str()
    }
}

/// How far an approval reaches (the card's buttons; DESIGN §5, §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// "Allow once": this call only.
    Once,
    /// "Allow for this turn": this connector + tool for the rest of the
    /// turn, never beyond.
    Turn,
    /// "Always allow this tool": a durable rule for this tool as it is now,
    /// until revoked or the tool changes.
    Always,
}

impl Grant {
    /// The `grant` of `POST /api/mcp-pending-calls/{id}`.
    pub fn wire(self) -> GrantKind {
        match self {
            Self::Once => GrantKind::Once,
            Self::Turn => GrantKind::Turn,
            Self::Always => GrantKind::Always,
        }
    }

    /// The grant a `mcp_confirmation_resolved` names; `None` for a word
    /// this build does not know.
    pub fn from_wire(grant: GrantKind) -> Option<Self> {
        match grant {
            GrantKind::Once => Some(Self::Once),
            GrantKind::Turn => Some(Self::Turn),
            GrantKind::Always => Some(Self::Always),
            GrantKind::Unknown => None,
        }
    }
}

/// What the user pressed on a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// One of the Allow buttons.
    Approve(Grant),
    /// "Decline": the server is never contacted.
    Deny,
}

/// An approval card: the evidence the server stored for a gated call, and
/// where the decision stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    /// Ledger id: the decision is posted to it.
    pub id: String,
    /// The connector's id.
    pub connector_id: String,
    /// The connector's name.
    pub connector_name: String,
    /// The tool's name on its server.
    pub tool_name: String,
    /// The exact arguments that would run.
    pub arguments: serde_json::Value,
    /// Their digest, sent back with the decision.
    pub arguments_digest: String,
    /// The host the call goes to.
    pub destination: String,
    /// Why it asks.
    pub reason: String,
    /// RFC 3339; after it the call cannot be approved.
    pub expires_at: String,
    /// RFC 3339: the turn stops waiting then, so the card counts down to
    /// it (empty from an older server: count to `expires_at`).
    pub decide_by: String,
    /// The grants the card offers (`once` always; not `turn` or `always`
    /// for a tool that changed since it was reviewed).
    pub offered_grants: Vec<GrantKind>,
    /// The tool's title as reviewed.
    pub tool_title: Option<String>,
    /// Its description as reviewed.
    pub tool_description: Option<String>,
    /// Its input schema as reviewed: "Edit before allowing" draws a form
    /// from it when the form says the arguments exactly.
    pub tool_input_schema: Option<Box<serde_json::Value>>,
    /// Its risk as its reviewed annotations declare it (`None` from an
    /// older server: shown as risky).
    pub risk: Option<ToolRisk>,
    /// Where the arguments came from, and the flows that make it warn
    /// (`None` from an older server).
    pub provenance: Option<Box<Provenance>>,
    /// Arguments holding look-alike, invisible or bidi characters, as
    /// the server found them: the card flags each.
    pub character_warnings: Vec<countersign_api::CharacterWarning>,
    /// Where the call sends data, as the server read the arguments
    /// ("Sends to").
    pub destinations: Vec<countersign_api::Destination>,
    /// Where the decision stands.
    pub state: ApprovalState,
    /// Once approved: what the user allowed (from the server, or this
    /// page's own choice when an older server does not say).
    pub grant: Option<Grant>,
    /// Why this page's last decision did not go through (it can try again).
    pub problem: Option<String>,
    /// When it was decided (RFC 3339), once the server said.
    pub decided_at: Option<String>,
    /// A decline's reason, as the user gave it.
    pub decline_reason: Option<String>,
    /// Denied because the reply was stopped while it waited: nobody
    /// declined it.
    pub stopped: bool,
    /// Allowed with the user's edits: `arguments` are the edited ones.
    pub edited: bool,
    /// The policy asked for a second approval (an approver's after the
    /// user's): the story says an approver decided.
    pub second_approval: bool,
}

impl Approval {
    /// A pending card for `id` asking about `demo: search_notes` with
    /// `{"query": "lease"}`, for tests.
    #[cfg(test)]
    pub fn for_tests(id: &str) -> Self {
        Self {
            id: id.into(),
            connector_id: "c1".into(),
            connector_name: "Demo".into(),
            tool_name: "search_notes".into(),
            arguments: serde_json::json!({"query": "lease"}),
            arguments_digest: "d".into(),
            destination: "127.0.0.1:4600".into(),
            reason: "Every call asks.".into(),
            expires_at: "2026-12-06T10:02:00Z".into(),
            decide_by: "2026-12-06T10:01:30Z".into(),
            offered_grants: vec![GrantKind::Once, GrantKind::Turn, GrantKind::Always],
            tool_title: None,
            tool_description: None,
            tool_input_schema: None,
            risk: None,
            provenance: None,
            character_warnings: Vec::new(),
            destinations: Vec::new(),
            state: ApprovalState::Pending,
            grant: None,
            problem: None,
            decided_at: None,
            decline_reason: None,
            stopped: false,
            edited: false,
            second_approval: false,
        }
    }

    /// What the card counts down to: `decide_by`, or `expires_at` from a
    /// server that sends none.
    pub fn deadline(&self) -> &str {
        if self.decide_by.is_empty() {
            &self.expires_at
        } else {
            &self.decide_by
        }
    }
}

/// Where an approval stands. `Pending`, `Approving`, `Declining`,
/// `DecidedElsewhere` and `Changed` are this page's view while the server
/// has not said more; `Approved`, `Denied` and `Expired` are the server's
/// word (`mcp_confirmation_resolved`); `Ended` means the turn finished
/// without one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalState {
    /// Waiting for the user.
    Pending,
    /// This page sent "approve" with this grant; the stream will confirm.
    Approving(Grant),
    /// This page sent "deny"; the stream will confirm.
    Declining,
    /// The user allowed it; the policy asks an approver to allow it too
    /// (`mcp_second_approval_required`), within the same deadline.
    AwaitingSecond,
    /// The server no longer knows it as pending (404): decided elsewhere,
    /// e.g. in another tab; the stream will say how.
    DecidedElsewhere,
    /// The stored request no longer matches the card (409): nothing was
    /// decided; a reload shows the current one.
    Changed,
    /// Approved: the call runs (its result is the tool call's state).
    Approved,
    /// Declined: the server never contacted.
    Denied,
    /// Nobody decided in time.
    Expired,
    /// The turn finished with no decision recorded.
    Ended,
}

impl ApprovalState {
    /// Whether the server has said how it ended.
    pub fn is_resolved(&self) -> bool {
        matches!(self, Self::Approved | Self::Denied | Self::Expired)
    }

    /// Whether nothing more will change it.
    pub fn is_final(&self) -> bool {
        self.is_resolved() || matches!(self, Self::Ended | Self::Changed)
    }

    /// The state a `mcp_confirmation_resolved` decision names.
    fn from_decision(decision: Resolution) -> Option<Self> {
        match decision {
            Resolution::Approved => Some(Self::Approved),
            Resolution::Denied => Some(Self::Denied),
            Resolution::Expired => Some(Self::Expired),
            Resolution::Unknown => None,
        }
    }
}

/// What the server answered to this page's decision
/// (`POST /api/mcp-pending-calls/{id}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecisionAnswer {
    /// 200: recorded; the stream's `mcp_confirmation_resolved` follows.
    Recorded,
    /// 404: not pending any more — someone (another tab) decided first.
    AlreadyDecided,
    /// 410: it expired.
    Expired,
    /// 409: the request changed since the card was shown.
    Changed,
    /// 403 `mfa_required`: "always allow" needs a two-factor step-up first;
    /// nothing was decided.
    StepUpRequired,
    /// Anything else: nothing was decided; the server's words.
    Failed(String),
}

impl DecisionAnswer {
    /// The answer for an error response with `status` (`None`: no answer
    /// arrived) and the server's `detail`.
    pub fn from_error(status: Option<u16>, detail: String) -> Self {
        match status {
            Some(404) => Self::AlreadyDecided,
            Some(410) => Self::Expired,
            Some(409) => Self::Changed,
            Some(403) if detail == "mfa_required" => Self::StepUpRequired,
            _ => Self::Failed(detail),
        }
    }
}

/// A server's request for input during a call (DESIGN §6a), as its
/// `mcp_input_required` event stored it, and where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// The input request's id: the answer is posted to it.
    pub id: String,
    /// The connector that asks.
    pub connector_name: String,
    /// The tool whose call asks.
    pub tool_name: String,
    /// `form` or `url`.
    pub mode: InputMode,
    /// The server's message (plain text).
    pub message: String,
    /// Form mode: the requested schema.
    pub requested_schema: Option<serde_json::Value>,
    /// URL mode: the URL as sent.
    pub url: Option<String>,
    /// URL mode: its host, as the server read it.
    pub url_host: Option<String>,
    /// RFC 3339; the turn stops waiting then.
    pub decide_by: String,
    /// Form mode: the fields that ask for a secret, as the server judged.
    pub secret_fields: Vec<String>,
    /// Where it stands.
    pub state: InputState,
    /// Why this page's last answer did not go through (the user can try
    /// again): the server's words, e.g. a 422 naming the field.
    pub problem: Option<String>,
    /// Once accepted: what the user sent, secrets masked, as the server
    /// recorded it.
    pub answers: Option<serde_json::Value>,
    /// When it was answered (RFC 3339).
    pub answered_at: Option<String>,
}

/// Where an input request stands. `Pending`, `Sending` and
/// `AnsweredElsewhere` are this page's view; `Accepted` … `Expired` the
/// server's (`mcp_input_resolved`, or its 200 to this page's answer);
/// `Ended` means the turn finished without either.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputState {
    /// Waiting for the user.
    Pending,
    /// This page sent this answer; the server has not said yet.
    Sending(InputAction),
    /// The server no longer knows it as pending (404): answered elsewhere,
    /// e.g. in another tab; the stream will say how.
    AnsweredElsewhere,
    /// The user answered (the content went to the server, or the page was
    /// opened).
    Accepted,
    /// The user said no.
    Declined,
    /// The user dismissed it, or the turn stopped.
    Cancelled,
    /// Nobody answered in time.
    Expired,
    /// The turn finished with no answer recorded.
    Ended,
}

impl InputState {
    /// Whether nothing more will change it.
    pub fn is_final(&self) -> bool {
        !matches!(
            self,
            Self::Pending | Self::Sending(_) | Self::AnsweredElsewhere
        )
    }

    /// The state a status word names (`None` for `pending` and words this
    /// build does not know).
    fn from_status(status: InputRequestStatus) -> Option<Self> {
        match status {
            InputRequestStatus::Accepted => Some(Self::Accepted),
            InputRequestStatus::Declined => Some(Self::Declined),
            InputRequestStatus::Cancelled => Some(Self::Cancelled),
            InputRequestStatus::Expired => Some(Self::Expired),
            InputRequestStatus::Pending | InputRequestStatus::Unknown => None,
        }
    }
}

/// What the server answered to this page's answer
/// (`POST /api/mcp-input-requests/{id}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputReply {
    /// 200 with the status it now has.
    Recorded(InputRequestStatus),
    /// 404: not pending any more (answered in another tab, or gone).
    AlreadyAnswered,
    /// 410: past `decide_by`.
    Expired,
    /// 422: the content does not fit the schema; the server's words, which
    /// name the field. Nothing was answered.
    Invalid(String),
    /// Anything else: nothing was answered; the server's words.
    Failed(String),
}

impl InputReply {
    /// The reply for an error response with `status` (`None`: no answer
    /// arrived) and the server's `detail`.
    pub fn from_error(status: Option<u16>, detail: String) -> Self {
        match status {
            Some(404) => Self::AlreadyAnswered,
            Some(410) => Self::Expired,
            Some(422) => Self::Invalid(detail),
            _ => Self::Failed(detail),
        }
    }
}

/// Where a tool call stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolState {
    /// Proposed, no result yet.
    Running,
    /// It ran and succeeded.
    Ok,
    /// It failed or could not run; the server's reason, if any.
    Error(Option<String>),
    /// The turn ended before a result arrived.
    Unfinished,
}

/// Where a turn stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnStatus {
    /// The server is still writing it.
    Running,
    /// Finished normally.
    Complete,
    /// The user pressed Stop.
    Stopped,
    /// It failed.
    Failed,
}

impl TurnStatus {
    fn from_message(status: MessageStatus) -> Self {
        match status {
            MessageStatus::Stopped => Self::Stopped,
            MessageStatus::Failed => Self::Failed,
            MessageStatus::Complete | MessageStatus::Unknown => Self::Complete,
        }
    }

    fn from_finished(status: TurnEnding) -> Self {
        match status {
            TurnEnding::Cancelled => Self::Stopped,
            TurnEnding::Failed => Self::Failed,
            TurnEnding::Done | TurnEnding::Unknown => Self::Complete,
        }
    }
}

/// What applying one event did, so the page can react (e.g. refresh the
/// chat list when a turn starts or ends).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Applied {
    /// The event was already applied (or belongs to a finished turn).
    pub duplicate: bool,
    /// A turn started.
    pub turn_started: bool,
    /// A turn finished.
    pub turn_finished: bool,
    /// A call now waits for the user's decision.
    pub approval_required: bool,
    /// A call's server now waits for the user's input.
    pub input_required: bool,
}

impl Turn {
    fn live(turn_id: &str) -> Self {
        Self {
            turn_id: turn_id.to_owned(),
            user: None,
            segments: Vec::new(),
            status: TurnStatus::Running,
            from_history: false,
        }
    }

    /// Whether an answer block is worth showing: anything arrived, or the
    /// turn is still running or did not complete.
    pub fn has_answer(&self) -> bool {
        !self.segments.is_empty() || self.status != TurnStatus::Complete
    }

    /// The answer's text, all text segments joined.
    pub fn text(&self) -> String {
        self.segments
            .iter()
            .filter_map(|segment| match segment {
                Segment::Text(text) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    fn tools_mut(&mut self) -> impl Iterator<Item = &mut ToolCall> {
        self.segments
            .iter_mut()
            .filter_map(|segment| match segment {
                Segment::Tool(call) => Some(call),
                _ => None,
            })
    }

    /// The turn is over: what still waited never will.
    fn settle(&mut self) {
        for call in self.tools_mut() {
            if call.state == ToolState::Running {
                call.state = ToolState::Unfinished;
            }
            if let Some(approval) = &mut call.approval
                && !approval.state.is_final()
            {
                approval.state = ApprovalState::Ended;
            }
            for input in &mut call.inputs {
                if !input.state.is_final() {
                    input.state = InputState::Ended;
                    input.problem = None;
                }
            }
            // An unreviewed result was withheld.
            if let Some(review) = &mut call.review
                && review.status.is_none()
            {
                review.status = Some(ResultReviewStatus::Expired);
            }
        }
    }

    /// The input request `id`, on whichever call of this turn holds it.
    fn input_mut(&mut self, id: &str) -> Option<&mut Input> {
        self.tools_mut()
            .flat_map(|call| call.inputs.iter_mut())
            .find(|input| input.id == id)
    }

    /// The block of a call: by the model's call id, else by the ledger id
    /// of its card, else by a block id equal to `ledger_id` (a block the
    /// card created when it came without a call id).
    fn call_mut(&mut self, call_id: &str, ledger_id: &str) -> Option<&mut ToolCall> {
        let index = self.segments.iter().position(|segment| {
            matches!(segment, Segment::Tool(call) if !call_id.is_empty() && call.id == call_id)
        });
        let index = index.or_else(|| {
            self.segments.iter().position(|segment| {
                matches!(segment, Segment::Tool(call)
                    if call.approval.as_ref().is_some_and(|a| a.id == ledger_id))
            })
        });
        let index = index.or_else(|| {
            self.segments
                .iter()
                .position(|segment| matches!(segment, Segment::Tool(call) if call.id == ledger_id))
        })?;
        match &mut self.segments[index] {
            Segment::Tool(call) => Some(call),
            _ => None,
        }
    }
}

/// Takes the text segments out of a history turn (its stored answer),
/// joined; other segments stay.
fn take_text(segments: &mut Vec<Segment>) -> String {
    let mut text = String::new();
    segments.retain(|segment| match segment {
        Segment::Text(t) => {
            text.push_str(t);
            false
        }
        _ => true,
    });
    text
}

/// `text` split after its first `chars` characters (all of it if shorter).
fn split_chars(text: &str, chars: usize) -> (&str, &str) {
    let at = text
        .char_indices()
        .nth(chars)
        .map_or(text.len(), |(at, _)| at);
    text.split_at(at)
}

impl Transcript {
    /// The transcript of a chat as `GET /api/chats/{id}` returned it; the
    /// stream should then be opened after [`Transcript::last_seq`].
    pub fn from_detail(detail: &ChatDetail) -> Self {
        let mut turns: Vec<Turn> = Vec::new();
        for message in &detail.messages {
            let index = match turns.iter().position(|t| t.turn_id == message.turn_id) {
                Some(index) => index,
                None => {
                    let mut turn = Turn::live(&message.turn_id);
                    turn.status = TurnStatus::Complete;
                    turn.from_history = true;
                    turns.push(turn);
                    turns.len() - 1
                }
            };
            let turn = &mut turns[index];
            if message.role == "user" {
                turn.user = Some(message.content.clone());
            } else {
                turn.segments.push(Segment::Text(message.content.clone()));
                turn.status = TurnStatus::from_message(message.status);
            }
        }
        // How each finished turn ended, and its tool blocks and errors
        // (the messages carry only text): with the answer's text put back
        // where it streamed, as the live page showed it; from an older
        // server (no `text_before`), the blocks before the text.
        for record in &detail.turns {
            let index = match turns.iter().position(|t| t.turn_id == record.turn_id) {
                Some(index) => index,
                None => {
                    turns.push(Turn::live(&record.turn_id));
                    turns.len() - 1
                }
            };
            let turn = &mut turns[index];
            let placed = record.text_before.len() == record.events.len();
            let answer = if placed {
                take_text(&mut turn.segments)
            } else {
                String::new()
            };
            let mut rest = answer.as_str();
            let mut taken = 0;
            let mut replay = Self::default();
            for (i, event) in record.events.iter().enumerate() {
                if placed {
                    let upto = usize::try_from(record.text_before[i]).unwrap_or(usize::MAX);
                    let (text, after) = split_chars(rest, upto.saturating_sub(taken));
                    taken += text.chars().count();
                    rest = after;
                    if !text.is_empty() {
                        replay.apply(
                            None,
                            ChatEvent::TextDelta {
                                turn_id: record.turn_id.clone(),
                                text: text.to_owned(),
                            },
                        );
                    }
                }
                replay.apply(None, event.clone());
            }
            if !rest.is_empty() {
                replay.apply(
                    None,
                    ChatEvent::TextDelta {
                        turn_id: record.turn_id.clone(),
                        text: rest.to_owned(),
                    },
                );
            }
            let mut segments: Vec<Segment> = replay
                .turns
                .into_iter()
                .flat_map(|mut t| {
                    t.settle();
                    t.segments
                })
                .collect();
            segments.append(&mut turn.segments);
            turn.segments = segments;
            turn.status = TurnStatus::from_finished(record.status);
            turn.from_history = true;
        }
        Self {
            turns,
            last_seq: detail.resume_after,
            accepted: None,
        }
    }

    /// The turn still running (or accepted and about to start), if any.
    pub fn running_turn(&self) -> Option<&str> {
        self.turns
            .iter()
            .rev()
            .find(|turn| turn.status == TurnStatus::Running)
            .map(|turn| turn.turn_id.as_str())
            .or(self.accepted.as_deref())
    }

    /// Records that the server accepted a message and will run `turn_id`,
    /// so the page counts it as running before its first event arrives.
    pub fn accepted(&mut self, turn_id: &str) {
        if !self.turns.iter().any(|turn| turn.turn_id == turn_id) {
            self.accepted = Some(turn_id.to_owned());
        }
    }

    /// Forgets an accepted turn the server says is over (e.g. Stop answered
    /// 409), so the page stops counting it as running. A turn the stream
    /// already showed keeps the status its events gave it.
    pub fn settled(&mut self, turn_id: &str) {
        if self.accepted.as_deref() == Some(turn_id) {
            self.accepted = None;
        }
    }

    /// Applies one stream event. `seq` is its SSE id: an event at or below
    /// [`Transcript::last_seq`] was applied already (a replay after a
    /// reconnect) and is skipped.
    pub fn apply(&mut self, seq: Option<i64>, event: ChatEvent) -> Applied {
        if let Some(seq) = seq {
            if seq <= self.last_seq {
                return Applied {
                    duplicate: true,
                    ..Applied::default()
                };
            }
            self.last_seq = seq;
        }
        let turn_id = match &event {
            ChatEvent::TurnStarted { turn_id, .. }
            | ChatEvent::TextDelta { turn_id, .. }
            | ChatEvent::ToolCall { turn_id, .. }
            | ChatEvent::ToolResult { turn_id, .. }
            | ChatEvent::McpConfirmationRequired { turn_id, .. }
            | ChatEvent::McpConfirmationResolved { turn_id, .. }
            | ChatEvent::McpSecondApprovalRequired { turn_id, .. }
            | ChatEvent::McpToolCall { turn_id, .. }
            | ChatEvent::McpInputRequired { turn_id, .. }
            | ChatEvent::McpInputResolved { turn_id, .. }
            | ChatEvent::McpResultReviewRequired { turn_id, .. }
            | ChatEvent::McpResultReviewResolved { turn_id, .. }
            | ChatEvent::Error { turn_id, .. }
            | ChatEvent::TurnFinished { turn_id, .. } => turn_id.clone(),
            ChatEvent::Unknown => return Applied::default(),
        };
        if self.accepted.as_deref() == Some(turn_id.as_str()) {
            self.accepted = None;
        }
        let index = match self.turns.iter().position(|t| t.turn_id == turn_id) {
            Some(index) => index,
            None => {
                self.turns.push(Turn::live(&turn_id));
                self.turns.len() - 1
            }
        };
        let turn = &mut self.turns[index];
        if turn.from_history {
            // Finished before the page loaded: already shown in full.
            return Applied {
                duplicate: true,
                ..Applied::default()
            };
        }

        let mut applied = Applied::default();
        match event {
            ChatEvent::TurnStarted { user_message, .. } => {
                turn.user = Some(user_message.content);
                applied.turn_started = true;
            }
            ChatEvent::TextDelta { text, .. } => match turn.segments.last_mut() {
                Some(Segment::Text(existing)) => existing.push_str(&text),
                _ => turn.segments.push(Segment::Text(text)),
            },
            ChatEvent::ToolCall {
                id,
                tool_name,
                arguments,
                ..
            } => {
                let arguments = serde_json::to_string_pretty(&arguments)
                    .unwrap_or_else(|_| arguments.to_string());
                match tool_mut(turn, &id) {
                    Some(call) => {
                        call.tool_name = tool_name;
                        call.arguments = arguments;
                    }
                    None => turn.segments.push(Segment::Tool(ToolCall {
                        id,
                        tool_name,
                        arguments,
                        state: ToolState::Running,
                        approval: None,
                        duration_ms: None,
                        waited_ms: None,
                        origin: None,
                        inputs: Vec::new(),
                        sign_in: None,
                        result: None,
                        label: None,
                        review: None,
                    })),
                }
            }
            ChatEvent::ToolResult {
                id,
                tool_name,
                status,
                error,
                ..
            } => {
                let state = if status == ToolCallStatus::Ok {
                    ToolState::Ok
                } else {
                    ToolState::Error(error)
                };
                match tool_mut(turn, &id) {
                    Some(call) => call.state = state,
                    None => turn.segments.push(Segment::Tool(ToolCall {
                        id,
                        tool_name,
                        arguments: String::new(),
                        state,
                        approval: None,
                        duration_ms: None,
                        waited_ms: None,
                        origin: None,
                        inputs: Vec::new(),
                        sign_in: None,
                        result: None,
                        label: None,
                        review: None,
                    })),
                }
            }
            ChatEvent::McpConfirmationRequired {
                id,
                call_id,
                connector_id,
                connector_name,
                tool_name,
                arguments,
                arguments_json,
                arguments_digest,
                destination,
                reason,
                expires_at,
                decide_by,
                offered_grants,
                tool_title,
                tool_description,
                tool_input_schema,
                risk,
                provenance,
                character_warnings,
                destinations,
                ..
            } => {
                let evidence = Approval {
                    destinations,
                    offered_grants,
                    tool_title,
                    tool_description,
                    tool_input_schema,
                    risk: risk.map(|r| *r),
                    provenance,
                    character_warnings,
                    id: id.clone(),
                    connector_id,
                    connector_name,
                    tool_name: tool_name.clone(),
                    arguments,
                    arguments_digest,
                    destination,
                    reason,
                    expires_at,
                    decide_by,
                    state: ApprovalState::Pending,
                    grant: None,
                    problem: None,
                    decided_at: None,
                    decline_reason: None,
                    stopped: false,
                    edited: false,
                    second_approval: false,
                };
                if turn.call_mut(&call_id, &id).is_none() {
                    turn.segments.push(Segment::Tool(ToolCall {
                        id: if call_id.is_empty() {
                            id.clone()
                        } else {
                            call_id.clone()
                        },
                        tool_name,
                        arguments: String::new(),
                        state: ToolState::Running,
                        approval: None,
                        duration_ms: None,
                        waited_ms: None,
                        origin: None,
                        inputs: Vec::new(),
                        sign_in: None,
                        result: None,
                        label: None,
                        review: None,
                    }));
                }
                if let Some(call) = turn.call_mut(&call_id, &id) {
                    if call.arguments.is_empty() {
                        call.arguments = arguments_json;
                    }
                    match &mut call.approval {
                        // The same card again (a replay): new evidence never
                        // undoes a decision already seen.
                        Some(existing) if existing.id == evidence.id => {
                            let state = existing.state.clone();
                            let problem = existing.problem.take();
                            **existing = Approval {
                                state,
                                problem,
                                ..evidence
                            };
                        }
                        slot => {
                            *slot = Some(Box::new(evidence));
                            applied.approval_required = true;
                        }
                    }
                }
            }
            ChatEvent::McpConfirmationResolved {
                id,
                decision,
                grant,
                decided_at,
                decline_reason,
                stopped,
                edited_arguments,
                ..
            } => {
                if let Some(state) = ApprovalState::from_decision(decision)
                    && let Some(approval) = turn
                        .call_mut("", &id)
                        .and_then(|call| call.approval.as_mut())
                {
                    if state == ApprovalState::Approved {
                        let chosen_here = match approval.state {
                            ApprovalState::Approving(grant) => Some(grant),
                            _ => None,
                        };
                        approval.grant = grant.and_then(Grant::from_wire).or(chosen_here);
                    }
                    approval.state = state;
                    approval.problem = None;
                    approval.decided_at = decided_at;
                    approval.decline_reason = decline_reason;
                    approval.stopped = stopped;
                    // "Edit and allow": the card shows what ran.
                    if let Some(edited) = edited_arguments {
                        approval.arguments = edited;
                        approval.edited = true;
                    }
                }
            }
            ChatEvent::McpSecondApprovalRequired { id, .. } => {
                if let Some(approval) = turn
                    .call_mut("", &id)
                    .and_then(|call| call.approval.as_mut())
                    .filter(|a| !a.state.is_final())
                {
                    approval.state = ApprovalState::AwaitingSecond;
                    approval.second_approval = true;
                    approval.problem = None;
                }
            }
            ChatEvent::McpToolCall {
                id,
                call_id,
                connector_name,
                tool_name,
                status,
                error,
                duration_ms,
                waited_ms,
                origin,
                approved_at,
                sign_in_connector_id,
                result,
                result_chars,
                contains_instructions,
                rule,
                ..
            } => {
                let result = result.map(|text| {
                    Box::new(ToolResult {
                        total_chars: result_chars.unwrap_or(text.chars().count() as u64),
                        text,
                        contains_instructions,
                    })
                });
                let state = if status == ToolCallStatus::Ok {
                    ToolState::Ok
                } else {
                    ToolState::Error(error)
                };
                let origin = Origin::from_event(origin, approved_at, rule);
                let label = Some(format!("{connector_name}: {tool_name}").into_boxed_str());
                let sign_in = sign_in_connector_id.map(|connector_id| {
                    Box::new(SignInAgain {
                        connector_id,
                        connector_name,
                    })
                });
                match turn.call_mut(&call_id, &id) {
                    Some(call) => {
                        call.state = state;
                        call.duration_ms = Some(duration_ms);
                        call.waited_ms = waited_ms.and_then(std::num::NonZeroU64::new);
                        call.origin = origin;
                        call.sign_in = sign_in;
                        call.result = result;
                        call.label = label;
                    }
                    None => turn.segments.push(Segment::Tool(ToolCall {
                        id: if call_id.is_empty() { id } else { call_id },
                        tool_name,
                        arguments: String::new(),
                        state,
                        approval: None,
                        duration_ms: Some(duration_ms),
                        waited_ms: waited_ms.and_then(std::num::NonZeroU64::new),
                        origin,
                        inputs: Vec::new(),
                        sign_in,
                        result,
                        label,
                        review: None,
                    })),
                }
            }
            ChatEvent::Error { message, .. } => turn.segments.push(Segment::Error(message)),
            ChatEvent::TurnFinished { status, .. } => {
                turn.status = TurnStatus::from_finished(status);
                turn.settle();
                applied.turn_finished = true;
            }
            ChatEvent::McpInputRequired {
                id,
                call_id,
                connector_name,
                tool_name,
                mode,
                message,
                requested_schema,
                url,
                url_host,
                decide_by,
                secret_fields,
                ..
            } => {
                let asked = Input {
                    id: id.clone(),
                    connector_name,
                    tool_name: tool_name.clone(),
                    mode,
                    message,
                    requested_schema,
                    url,
                    url_host,
                    decide_by,
                    secret_fields,
                    state: InputState::Pending,
                    problem: None,
                    answers: None,
                    answered_at: None,
                };
                // A replay of the same request: new words never undo an
                // answer already seen.
                if let Some(existing) = turn.input_mut(&id) {
                    let state = existing.state.clone();
                    let problem = existing.problem.take();
                    *existing = Input {
                        state,
                        problem,
                        ..asked
                    };
                    return applied;
                }
                // Under the call that asks; without one (an unknown call
                // id), on a block of its own, found again by that id.
                let block = if call_id.is_empty() { id } else { call_id };
                if tool_mut(turn, &block).is_none() {
                    turn.segments.push(Segment::Tool(ToolCall {
                        id: block.clone(),
                        tool_name,
                        arguments: String::new(),
                        state: ToolState::Running,
                        approval: None,
                        duration_ms: None,
                        waited_ms: None,
                        origin: None,
                        inputs: Vec::new(),
                        sign_in: None,
                        result: None,
                        label: None,
                        review: None,
                    }));
                }
                if let Some(call) = tool_mut(turn, &block) {
                    call.inputs.push(asked);
                    applied.input_required = true;
                }
            }
            ChatEvent::McpResultReviewRequired {
                id,
                call_id,
                connector_name,
                ..
            } => {
                // Under its call's block (`tool_call` always comes first; the
                // card reads the rest from the server).
                if let Some(call) = tool_mut(turn, &call_id) {
                    // A replay never undoes how it ended.
                    let status = call.review.as_ref().and_then(|r| r.status);
                    call.review = Some(Box::new(Review {
                        id,
                        connector_name,
                        status,
                    }));
                    applied.input_required = status.is_none();
                }
            }
            ChatEvent::McpResultReviewResolved { id, status, .. } => {
                if let Some(review) = turn
                    .tools_mut()
                    .filter_map(|call| call.review.as_deref_mut())
                    .find(|review| review.id == id)
                {
                    review.status = Some(status);
                }
            }
            ChatEvent::McpInputResolved {
                id,
                status,
                answers,
                answered_at,
                ..
            } => {
                if let Some(state) = InputState::from_status(status)
                    && let Some(input) = turn.input_mut(&id)
                {
                    input.state = state;
                    input.problem = None;
                    input.answers = answers;
                    input.answered_at = answered_at;
                }
            }
            ChatEvent::Unknown => {}
        }
        applied
    }
}

impl Transcript {
    /// The approval card with ledger id `id`, wherever it is.
    pub fn approval(&self, id: &str) -> Option<&Approval> {
        self.turns
            .iter()
            .flat_map(|turn| &turn.segments)
            .find_map(|segment| match segment {
                Segment::Tool(call) => call.approval.as_deref().filter(|a| a.id == id),
                _ => None,
            })
    }

    fn approval_mut(&mut self, id: &str) -> Option<&mut Approval> {
        self.turns
            .iter_mut()
            .flat_map(|turn| turn.segments.iter_mut())
            .find_map(|segment| match segment {
                Segment::Tool(call) => call.approval.as_deref_mut().filter(|a| a.id == id),
                _ => None,
            })
    }

    /// This page is sending `decision` on card `id`. Returns whether it
    /// should: only a pending card can be decided, once.
    pub fn decision_sent(&mut self, id: &str, decision: Decision) -> bool {
        match self.approval_mut(id) {
            Some(approval) if approval.state == ApprovalState::Pending => {
                approval.state = match decision {
                    Decision::Approve(grant) => ApprovalState::Approving(grant),
                    Decision::Deny => ApprovalState::Declining,
                };
                approval.problem = None;
                true
            }
            _ => false,
        }
    }

    /// The server answered this page's decision on card `id`. A state the
    /// stream already brought is never overwritten.
    pub fn decision_answered(&mut self, id: &str, answer: DecisionAnswer) {
        let Some(approval) = self.approval_mut(id) else {
            return;
        };
        let waiting = matches!(
            approval.state,
            ApprovalState::Approving(_) | ApprovalState::Declining
        );
        match answer {
            // The stream's `mcp_confirmation_resolved` says the rest.
            DecisionAnswer::Recorded => {}
            DecisionAnswer::AlreadyDecided if waiting => {
                approval.state = ApprovalState::DecidedElsewhere;
            }
            DecisionAnswer::Expired if !approval.state.is_final() => {
                approval.state = ApprovalState::Expired;
            }
            DecisionAnswer::Changed if waiting => approval.state = ApprovalState::Changed,
            // Nothing was decided: the card waits again, saying why.
            DecisionAnswer::StepUpRequired if waiting => {
                approval.state = ApprovalState::Pending;
                approval.problem = Some(STEP_UP_NEEDED.to_owned());
            }
            DecisionAnswer::Failed(detail) if waiting => {
                approval.state = ApprovalState::Pending;
                approval.problem = Some(detail);
            }
            _ => {}
        }
    }
}

impl Transcript {
    /// The input request with id `id`, wherever it is.
    pub fn input(&self, id: &str) -> Option<&Input> {
        self.turns
            .iter()
            .flat_map(|turn| &turn.segments)
            .find_map(|segment| match segment {
                Segment::Tool(call) => call.inputs.iter().find(|input| input.id == id),
                _ => None,
            })
    }

    fn input_mut(&mut self, id: &str) -> Option<&mut Input> {
        self.turns.iter_mut().find_map(|turn| turn.input_mut(id))
    }

    /// The result review `id`, wherever it is, with the call's name.
    pub fn review(&self, id: &str) -> Option<(&Review, &ToolCall)> {
        self.turns
            .iter()
            .flat_map(|turn| &turn.segments)
            .find_map(|segment| match segment {
                Segment::Tool(call) => call
                    .review
                    .as_deref()
                    .filter(|review| review.id == id)
                    .map(|review| (review, call)),
                _ => None,
            })
    }

    /// This page is sending `action` for input request `id`. Returns
    /// whether it should: only a pending request is answered, once.
    pub fn input_sent(&mut self, id: &str, action: InputAction) -> bool {
        match self.input_mut(id) {
            Some(input) if input.state == InputState::Pending => {
                input.state = InputState::Sending(action);
                input.problem = None;
                true
            }
            _ => false,
        }
    }

    /// The server answered this page's answer to input request `id`. A
    /// state the stream already brought is never overwritten.
    pub fn input_answered(&mut self, id: &str, reply: InputReply) {
        let Some(input) = self.input_mut(id) else {
            return;
        };
        let sending = matches!(input.state, InputState::Sending(_));
        match reply {
            InputReply::Recorded(status) if sending => {
                if let Some(state) = InputState::from_status(status) {
                    input.state = state;
                }
            }
            InputReply::AlreadyAnswered if sending => {
                input.state = InputState::AnsweredElsewhere;
            }
            InputReply::Expired if !input.state.is_final() => input.state = InputState::Expired,
            // Nothing was answered: the card waits again, saying why (the
            // form keeps what was typed).
            InputReply::Invalid(detail) | InputReply::Failed(detail) if sending => {
                input.state = InputState::Pending;
                input.problem = Some(detail);
            }
            _ => {}
        }
    }

    /// The first thing of the running turn that waits for the user: an
    /// input request not yet answered, or a card not yet decided.
    fn waiting_for(&self) -> Option<WaitingFor<'_>> {
        let running = self.running_turn()?;
        let turn = self.turns.iter().find(|turn| turn.turn_id == running)?;
        turn.segments.iter().find_map(|segment| {
            let Segment::Tool(call) = segment else {
                return None;
            };
            if let Some(input) = call.inputs.iter().find(|input| !input.state.is_final()) {
                return Some(WaitingFor::Input(input));
            }
            if let Some(review) = call.review.as_deref().filter(|r| r.status.is_none()) {
                return Some(WaitingFor::Review(review));
            }
            call.approval
                .as_deref()
                .filter(|approval| !approval.state.is_final())
                .map(WaitingFor::Approval)
        })
    }

    /// What a screen reader is told when a card starts waiting: which
    /// connector and tool want to run (or ask), so the user knows without
    /// looking; `None` while nothing waits, and once the user acted.
    pub fn announcement(&self) -> Option<String> {
        match self.waiting_for()? {
            WaitingFor::Input(input) => Some(format!(
                "{} asks for your answer before the reply goes on.",
                input.connector_name
            )),
            WaitingFor::Approval(approval) if approval.state == ApprovalState::Pending => {
                Some(format!(
                    "{}: {} wants to run and waits for your decision.",
                    approval.connector_name, approval.tool_name
                ))
            }
            WaitingFor::Approval(_) => None,
            WaitingFor::Review(review) => Some(format!(
                "A result from {} waits for your review.",
                review.connector_name
            )),
        }
    }

    /// The card that waits for the user, as a CSS selector of its element
    /// (`[data-approval-id="…"]`, `[data-input-id="…"]`), with what it
    /// asks in words for the button that goes to it; `None` once nothing
    /// waits, or the user already acted on it.
    pub fn waiting_card(&self) -> Option<(String, &'static str)> {
        // Ids are the server's UUIDs; anything else is never put in a
        // selector.
        let safe = |id: &str| id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        match self.waiting_for()? {
            WaitingFor::Input(input) if input.state == InputState::Pending && safe(&input.id) => {
                Some((
                    format!("[data-input-id=\"{}\"]", input.id),
                    "Go to the waiting question",
                ))
            }
            WaitingFor::Approval(approval)
                if approval.state == ApprovalState::Pending && safe(&approval.id) =>
            {
                Some((
                    format!("[data-approval-id=\"{}\"]", approval.id),
                    "Go to the waiting call",
                ))
            }
            WaitingFor::Review(review) if safe(&review.id) => Some((
                format!("[data-review-id=\"{}\"]", review.id),
                "Go to the result to review",
            )),
            _ => None,
        }
    }

    /// What the running turn waits for from the user, in words for the
    /// composer (`None` when it waits for nothing: the model is writing).
    pub fn waiting_text(&self) -> Option<String> {
        Some(match self.waiting_for()? {
            WaitingFor::Input(input) => format!(
                "{} is waiting for your answer above. The reply goes on once you answer.",
                input.connector_name
            ),
            WaitingFor::Approval(approval) if approval.state == ApprovalState::AwaitingSecond => {
                "You allowed the call above; it waits for an approver. The reply goes on once they decide."
                    .to_owned()
            }
            WaitingFor::Approval(_) => {
                "A tool call is waiting for your decision above. The reply goes on once you decide."
                    .to_owned()
            }
            WaitingFor::Review(_) => {
                "A tool's result is waiting for your review above. The reply goes on once you decide."
                    .to_owned()
            }
        })
    }
}

/// What a running turn waits for ([`Transcript::waiting_for`]).
enum WaitingFor<'a> {
    /// An input request not yet answered.
    Input(&'a Input),
    /// An approval card not yet decided.
    Approval(&'a Approval),
    /// A result not yet reviewed.
    Review(&'a Review),
}

/// What the card says when "always allow" needs a two-factor step-up
/// (403 `mfa_required`).
pub const STEP_UP_NEEDED: &str = "This needs a two-factor step-up before you can always allow a tool. Nothing was decided: you can still allow once, allow for this turn, or decline.";

fn tool_mut<'a>(turn: &'a mut Turn, id: &str) -> Option<&'a mut ToolCall> {
    turn.segments.iter_mut().find_map(|segment| match segment {
        Segment::Tool(call) if call.id == id => Some(call),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use countersign_api::{ChatEventMessage, ChatMessage};

    const ONCE: Decision = Decision::Approve(Grant::Once);

    fn started(turn: &str, content: &str) -> ChatEvent {
        ChatEvent::TurnStarted {
            turn_id: turn.into(),
            model: "offline/demo".into(),
            user_message: ChatEventMessage {
                id: format!("{turn}-user"),
                content: content.into(),
            },
        }
    }

    fn delta(turn: &str, text: &str) -> ChatEvent {
        ChatEvent::TextDelta {
            turn_id: turn.into(),
            text: text.into(),
        }
    }

    fn finished(turn: &str, status: TurnEnding) -> ChatEvent {
        ChatEvent::TurnFinished {
            turn_id: turn.into(),
            status,
            no_prose_reason: None,
            message_id: None,
        }
    }

    fn message(turn: &str, role: &str, content: &str, status: MessageStatus) -> ChatMessage {
        ChatMessage {
            id: format!("{turn}-{role}"),
            turn_id: turn.into(),
            role: role.into(),
            content: content.into(),
            status,
            created_at: "2026-01-01T00:00:00Z".into(),
        }
    }

    fn detail(messages: Vec<ChatMessage>, resume_after: i64) -> ChatDetail {
        ChatDetail {
            turns: Vec::new(),
            id: "chat".into(),
            title: String::new(),
            model: "offline/demo".into(),
            created_at: String::new(),
            updated_at: String::new(),
            messages,
            running_turn_id: None,
            resume_after,
        }
    }

    /// The events of one turn, with sequence numbers from `first`.
    fn turn_events(first: i64) -> Vec<(Option<i64>, ChatEvent)> {
        vec![
            (Some(first), started("t1", "Hello")),
            (Some(first + 1), delta("t1", "Hi")),
            (Some(first + 2), delta("t1", " there")),
            (Some(first + 3), finished("t1", TurnEnding::Done)),
        ]
    }

    #[test]
    fn a_reloaded_chat_shows_finished_turns_tool_blocks_errors_and_endings() {
        let message = |turn: &str, role: &str, content: &str, status: MessageStatus| ChatMessage {
            id: format!("{turn}-{role}"),
            turn_id: turn.into(),
            role: role.into(),
            content: content.into(),
            status,
            created_at: String::new(),
        };
        let mut detail = detail(
            vec![
                message(
                    "t1",
                    "user",
                    "use notes.search with {}",
                    MessageStatus::Complete,
                ),
                message("t1", "assistant", "Found 3 notes.", MessageStatus::Complete),
                message("t2", "user", "hello", MessageStatus::Complete),
            ],
            9,
        );
        detail.turns = vec![
            countersign_api::TurnRecord {
                text_before: Vec::new(),
                turn_id: "t1".into(),
                status: TurnEnding::Done,
                events: vec![
                    ChatEvent::ToolCall {
                        turn_id: "t1".into(),
                        id: "c1".into(),
                        tool_name: "notes__search".into(),
                        arguments: serde_json::json!({}),
                    },
                    ChatEvent::ToolResult {
                        turn_id: "t1".into(),
                        id: "c1".into(),
                        tool_name: "notes__search".into(),
                        status: ToolCallStatus::Ok,
                        error: None,
                    },
                ],
            },
            countersign_api::TurnRecord {
                text_before: Vec::new(),
                turn_id: "t2".into(),
                status: TurnEnding::Failed,
                events: vec![ChatEvent::Error {
                    turn_id: "t2".into(),
                    message: "No API key is set for Anthropic.".into(),
                }],
            },
        ];
        let transcript = Transcript::from_detail(&detail);
        let first = &transcript.turns[0];
        assert!(matches!(&first.segments[0], Segment::Tool(call) if call.state == ToolState::Ok));
        assert_eq!(first.segments[1], Segment::Text("Found 3 notes.".into()));
        let second = &transcript.turns[1];
        assert_eq!(
            second.status,
            TurnStatus::Failed,
            "a failed turn without text keeps its label"
        );
        assert_eq!(
            second.segments,
            vec![Segment::Error("No API key is set for Anthropic.".into())]
        );
        assert!(transcript.turns.iter().all(|t| t.from_history));
    }

    #[test]
    fn a_reload_keeps_the_text_where_it_streamed_around_the_blocks() {
        let call = ChatEvent::ToolCall {
            turn_id: "t1".into(),
            id: "c1".into(),
            tool_name: "notes__search".into(),
            arguments: serde_json::json!({}),
        };
        let result = ChatEvent::ToolResult {
            turn_id: "t1".into(),
            id: "c1".into(),
            tool_name: "notes__search".into(),
            status: ToolCallStatus::Ok,
            error: None,
        };
        // Non-ASCII on purpose: offsets count characters, not bytes.
        let (intro, outro) = ("I will call notes__search — «now».", " Found 3 notes.");
        let mut live = Transcript::default();
        live.apply(Some(1), started("t1", "find"));
        live.apply(Some(2), delta("t1", intro));
        live.apply(Some(3), call.clone());
        live.apply(Some(4), result.clone());
        live.apply(Some(5), delta("t1", outro));
        live.apply(Some(6), finished("t1", TurnEnding::Done));

        let message = |role: &str, content: &str| ChatMessage {
            id: role.into(),
            turn_id: "t1".into(),
            role: role.into(),
            content: content.into(),
            status: MessageStatus::Complete,
            created_at: String::new(),
        };
        let mut detail = detail(
            vec![
                message("user", "find"),
                message("assistant", &format!("{intro}{outro}")),
            ],
            6,
        );
        let n = intro.chars().count() as u64;
        detail.turns = vec![countersign_api::TurnRecord {
            turn_id: "t1".into(),
            status: TurnEnding::Done,
            events: vec![call, result],
            text_before: vec![n, n],
        }];
        let reloaded = Transcript::from_detail(&detail);
        assert_eq!(reloaded.turns[0].segments, live.turns[0].segments);
        assert!(matches!(
            &reloaded.turns[0].segments[..],
            [Segment::Text(a), Segment::Tool(_), Segment::Text(b)] if a == intro && b == outro
        ));

        // Offsets past the text (a stored answer shorter than what
        // streamed) lose nothing: every character is shown once.
        detail.turns[0].text_before = vec![500, 900];
        let short = Transcript::from_detail(&detail);
        assert_eq!(short.turns[0].text(), format!("{intro}{outro}"));
    }

    #[test]
    fn a_streamed_turn_shows_the_user_message_then_the_growing_answer() {
        let mut transcript = Transcript::default();
        let applied = transcript.apply(Some(1), started("t1", "Hello"));
        assert!(applied.turn_started);
        assert_eq!(transcript.running_turn(), Some("t1"));
        transcript.apply(Some(2), delta("t1", "Hi"));
        transcript.apply(Some(3), delta("t1", " there"));
        let turn = &transcript.turns[0];
        assert_eq!(turn.user.as_deref(), Some("Hello"));
        assert_eq!(turn.text(), "Hi there");
        assert_eq!(turn.status, TurnStatus::Running);

        let applied = transcript.apply(Some(4), finished("t1", TurnEnding::Done));
        assert!(applied.turn_finished);
        assert_eq!(transcript.turns[0].status, TurnStatus::Complete);
        assert_eq!(transcript.running_turn(), None);
    }

    #[test]
    fn replayed_events_are_applied_once() {
        let mut transcript = Transcript::default();
        for (seq, event) in turn_events(1) {
            transcript.apply(seq, event);
        }
        // A reconnect replays from an older point: nothing doubles.
        for (seq, event) in turn_events(1) {
            assert!(transcript.apply(seq, event).duplicate);
        }
        assert_eq!(transcript.turns.len(), 1);
        assert_eq!(transcript.turns[0].text(), "Hi there");
        assert_eq!(transcript.last_seq, 4);
    }

    #[test]
    fn a_reload_mid_turn_rebuilds_the_same_turn_from_the_replay() {
        // Before the reload: the page saw the start and one delta.
        let mut before = Transcript::default();
        for (seq, event) in turn_events(11).into_iter().take(2) {
            before.apply(seq, event);
        }
        // After: `GET` has no messages of the running turn and resumes at
        // 10, so the stream replays the whole turn.
        let mut after = Transcript::from_detail(&detail(vec![], 10));
        for (seq, event) in turn_events(11) {
            after.apply(seq, event);
        }
        assert_eq!(after.turns.len(), 1);
        assert_eq!(after.turns[0].user.as_deref(), Some("Hello"));
        assert_eq!(after.turns[0].text(), "Hi there");
        assert_eq!(after.turns[0].status, TurnStatus::Complete);
    }

    #[test]
    fn history_is_grouped_by_turn_and_never_changed_by_late_events() {
        let mut transcript = Transcript::from_detail(&detail(
            vec![
                message("t1", "user", "First", MessageStatus::Complete),
                message("t1", "assistant", "Answer one", MessageStatus::Complete),
                message("t2", "user", "Second", MessageStatus::Complete),
                message("t2", "assistant", "Half an ans", MessageStatus::Stopped),
                message("t3", "user", "Third", MessageStatus::Complete),
            ],
            42,
        ));
        assert_eq!(transcript.turns.len(), 3);
        assert_eq!(transcript.turns[1].status, TurnStatus::Stopped);
        assert!(
            !transcript.turns[2].has_answer(),
            "a turn with no stored answer shows none"
        );
        assert_eq!(transcript.running_turn(), None);

        let applied = transcript.apply(Some(43), delta("t1", " again"));
        assert!(applied.duplicate);
        assert_eq!(transcript.turns[0].text(), "Answer one");
    }

    #[test]
    fn stop_keeps_the_partial_answer_and_marks_it_stopped() {
        let mut transcript = Transcript::default();
        transcript.apply(Some(1), started("t1", "Hello"));
        transcript.apply(Some(2), delta("t1", "Partial"));
        transcript.apply(Some(3), finished("t1", TurnEnding::Cancelled));
        let turn = &transcript.turns[0];
        assert_eq!(turn.status, TurnStatus::Stopped);
        assert_eq!(turn.text(), "Partial");
        assert!(turn.has_answer());
    }

    #[test]
    fn tool_calls_and_errors_appear_in_place() {
        let mut transcript = Transcript::default();
        transcript.apply(Some(1), started("t1", "use notes.search"));
        transcript.apply(Some(2), delta("t1", "Let me look."));
        transcript.apply(
            Some(3),
            ChatEvent::ToolCall {
                turn_id: "t1".into(),
                id: "c1".into(),
                tool_name: "notes_search".into(),
                arguments: serde_json::json!({"query": "lease"}),
            },
        );
        transcript.apply(
            Some(4),
            ChatEvent::ToolResult {
                turn_id: "t1".into(),
                id: "c1".into(),
                tool_name: "notes_search".into(),
                status: ToolCallStatus::Error,
                error: Some("Unknown tool.".into()),
            },
        );
        transcript.apply(
            Some(5),
            ChatEvent::Error {
                turn_id: "t1".into(),
                message: "The model failed.".into(),
            },
        );
        transcript.apply(Some(6), delta("t1", "Sorry."));
        transcript.apply(Some(7), finished("t1", TurnEnding::Failed));

        let turn = &transcript.turns[0];
        assert_eq!(turn.status, TurnStatus::Failed);
        assert_eq!(turn.segments.len(), 4, "{:?}", turn.segments);
        assert_eq!(turn.segments[0], Segment::Text("Let me look.".into()));
        match &turn.segments[1] {
            Segment::Tool(call) => {
                assert_eq!(call.tool_name, "notes_search");
                assert_eq!(call.arguments, "{\n  \"query\": \"lease\"\n}");
                assert_eq!(call.state, ToolState::Error(Some("Unknown tool.".into())));
            }
            other => panic!("expected a tool block, got {other:?}"),
        }
        assert_eq!(turn.segments[2], Segment::Error("The model failed.".into()));
        assert_eq!(turn.segments[3], Segment::Text("Sorry.".into()));
    }

    #[test]
    fn a_tool_call_without_a_result_is_unfinished_when_the_turn_ends() {
        let mut transcript = Transcript::default();
        transcript.apply(Some(1), started("t1", "x"));
        transcript.apply(
            Some(2),
            ChatEvent::ToolCall {
                turn_id: "t1".into(),
                id: "c1".into(),
                tool_name: "t".into(),
                arguments: serde_json::json!({}),
            },
        );
        transcript.apply(Some(3), finished("t1", TurnEnding::Cancelled));
        match &transcript.turns[0].segments[0] {
            Segment::Tool(call) => assert_eq!(call.state, ToolState::Unfinished),
            other => panic!("expected a tool block, got {other:?}"),
        }
    }

    #[test]
    fn unknown_events_are_skipped_but_counted() {
        let mut transcript = Transcript::default();
        let event: ChatEvent =
            serde_json::from_str(r#"{"type":"grant_used","turn_id":"t1","grant_id":"g"}"#)
                .expect("unknown types parse as Unknown");
        assert_eq!(event, ChatEvent::Unknown);
        let applied = transcript.apply(Some(5), event);
        assert_eq!(applied, Applied::default());
        assert!(transcript.turns.is_empty());
        assert_eq!(transcript.last_seq, 5);
    }

    #[test]
    fn an_accepted_turn_counts_as_running_until_it_finishes() {
        let mut transcript = Transcript::default();
        transcript.accepted("t1");
        assert_eq!(transcript.running_turn(), Some("t1"));
        transcript.apply(Some(1), started("t1", "Hello"));
        transcript.apply(Some(2), finished("t1", TurnEnding::Done));
        assert_eq!(transcript.running_turn(), None);

        // The answer to the POST may arrive after the turn already ended.
        transcript.accepted("t1");
        assert_eq!(transcript.running_turn(), None);
    }

    // ---- Approval cards (DESIGN §6).

    fn tool_call(turn: &str, id: &str) -> ChatEvent {
        ChatEvent::ToolCall {
            turn_id: turn.into(),
            id: id.into(),
            tool_name: "countersign_demo__search_notes".into(),
            arguments: serde_json::json!({"query": "lease"}),
        }
    }

    fn required(turn: &str, ledger: &str, call_id: &str) -> ChatEvent {
        ChatEvent::McpConfirmationRequired {
            turn_id: turn.into(),
            id: ledger.into(),
            call_id: call_id.into(),
            connector_id: "conn".into(),
            connector_name: "Countersign demo".into(),
            tool_name: "search_notes".into(),
            arguments: serde_json::json!({"query": "lease"}),
            arguments_json: "{\n  \"query\": \"lease\"\n}".into(),
            arguments_digest: "d1g3st".into(),
            destination: "127.0.0.1:3100".into(),
            reason: "This tool asks before it runs.".into(),
            expires_at: "2026-05-01T12:02:00Z".into(),
            decide_by: "2026-05-01T12:01:30Z".into(),
            offered_grants: countersign_api::approvals::every_grant(),
            tool_title: Some("Search notes".into()),
            tool_description: Some("Searches the notes.".into()),
            tool_input_schema: None,
            risk: None,
            provenance: None,
            character_warnings: Vec::new(),
            destinations: Vec::new(),
        }
    }

    fn resolved(turn: &str, ledger: &str, decision: Resolution) -> ChatEvent {
        ChatEvent::McpConfirmationResolved {
            turn_id: turn.into(),
            id: ledger.into(),
            decision,
            grant: None,
            decided_at: None,
            decline_reason: None,
            stopped: false,
            edited_arguments: None,
            second_approver: None,
        }
    }

    fn ran(turn: &str, ledger: &str, call_id: &str, error: Option<&str>) -> ChatEvent {
        ChatEvent::McpToolCall {
            turn_id: turn.into(),
            id: ledger.into(),
            call_id: call_id.into(),
            connector_name: "Countersign demo".into(),
            tool_name: "search_notes".into(),
            status: if error.is_some() {
                ToolCallStatus::Error
            } else {
                ToolCallStatus::Ok
            },
            error: error.map(Into::into),
            duration_ms: 42,
            waited_ms: None,
            origin: Some(CallOrigin::Approved),
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

    /// A live transcript in which `t1` proposed `c1` and it waits at `p1`.
    fn waiting() -> Transcript {
        let mut transcript = Transcript::default();
        transcript.apply(Some(1), started("t1", "use search_notes with {}"));
        transcript.apply(Some(2), delta("t1", "I will call it."));
        transcript.apply(Some(3), tool_call("t1", "c1"));
        let applied = transcript.apply(Some(4), required("t1", "p1", "c1"));
        assert!(applied.approval_required);
        transcript
    }

    fn review_required(id: &str, call_id: &str) -> ChatEvent {
        ChatEvent::McpResultReviewRequired {
            turn_id: "t1".into(),
            id: id.into(),
            call_id: call_id.into(),
            connector_name: "Countersign demo".into(),
            tool_name: "search_notes".into(),
            reason: countersign_api::ResultReviewReason::Instructions,
            result_chars: 120,
            decide_by: "2026-12-07T10:00:00Z".into(),
        }
    }

    #[test]
    fn a_result_held_for_review_waits_under_its_call_and_is_never_lost() {
        let mut transcript = Transcript::default();
        transcript.apply(Some(1), started("t1", "use search_notes with {}"));
        transcript.apply(Some(2), tool_call("t1", "c1"));
        let applied = transcript.apply(Some(3), review_required("r1", "c1"));
        assert!(applied.input_required);
        let (review, call) = transcript.review("r1").expect("under its call");
        assert_eq!((review.status, call.id.as_str()), (None, "c1"));
        assert_eq!(
            transcript.waiting_card().map(|(selector, _)| selector),
            Some("[data-review-id=\"r1\"]".to_owned())
        );
        assert!(transcript.waiting_text().is_some());
        assert!(transcript.announcement().is_some());
        transcript.apply(
            Some(4),
            ChatEvent::McpResultReviewResolved {
                turn_id: "t1".into(),
                id: "r1".into(),
                status: ResultReviewStatus::Redacted,
                decided_at: None,
            },
        );
        assert_eq!(
            transcript.review("r1").and_then(|(r, _)| r.status),
            Some(ResultReviewStatus::Redacted)
        );
        assert_eq!(transcript.waiting_card(), None);
        // A replay of the request never undoes how it ended.
        transcript.apply(Some(5), review_required("r1", "c1"));
        assert_eq!(
            transcript.review("r1").and_then(|(r, _)| r.status),
            Some(ResultReviewStatus::Redacted)
        );
    }

    #[test]
    fn a_result_still_waiting_when_its_turn_ends_was_withheld() {
        let mut transcript = Transcript::default();
        transcript.apply(Some(1), started("t1", "use search_notes with {}"));
        transcript.apply(Some(2), tool_call("t1", "c1"));
        transcript.apply(Some(3), review_required("r1", "c1"));
        transcript.apply(Some(4), finished("t1", TurnEnding::Cancelled));
        assert_eq!(
            transcript.review("r1").and_then(|(r, _)| r.status),
            Some(ResultReviewStatus::Expired)
        );
    }

    fn only_call(transcript: &Transcript) -> &ToolCall {
        let calls: Vec<&ToolCall> = transcript
            .turns
            .iter()
            .flat_map(|turn| &turn.segments)
            .filter_map(|segment| match segment {
                Segment::Tool(call) => Some(call),
                _ => None,
            })
            .collect();
        assert_eq!(calls.len(), 1, "exactly one tool block: {calls:?}");
        calls[0]
    }

    #[test]
    fn an_edited_approval_shows_the_arguments_that_ran() {
        let mut transcript = waiting();
        let edited = serde_json::json!({"query": "lease 2026"});
        transcript.apply(
            Some(5),
            ChatEvent::McpConfirmationResolved {
                turn_id: "t1".into(),
                id: "p1".into(),
                decision: Resolution::Approved,
                grant: Some(GrantKind::Once),
                decided_at: None,
                decline_reason: None,
                stopped: false,
                edited_arguments: Some(edited.clone()),
                second_approver: None,
            },
        );
        let approval = only_call(&transcript).approval.clone().expect("the card");
        assert_eq!(approval.state, ApprovalState::Approved);
        assert!(approval.edited);
        assert_eq!(approval.arguments, edited);
    }

    fn approval_state(transcript: &Transcript) -> ApprovalState {
        only_call(transcript)
            .approval
            .as_ref()
            .expect("the block carries its card")
            .state
            .clone()
    }

    #[test]
    fn the_card_sits_on_its_tool_call_with_the_stored_evidence() {
        let transcript = waiting();
        let call = only_call(&transcript);
        assert_eq!(call.id, "c1");
        assert_eq!(call.state, ToolState::Running);
        let approval = call.approval.as_ref().expect("a card");
        assert_eq!(approval.id, "p1");
        assert_eq!(approval.connector_name, "Countersign demo");
        assert_eq!(approval.tool_name, "search_notes");
        assert_eq!(approval.arguments, serde_json::json!({"query": "lease"}));
        assert_eq!(approval.arguments_digest, "d1g3st");
        assert_eq!(approval.destination, "127.0.0.1:3100");
        assert_eq!(approval.state, ApprovalState::Pending);
        assert_eq!(transcript.approval("p1"), Some(&**approval));
        assert_eq!(
            transcript.turns[0].segments.len(),
            2,
            "text, then the one block"
        );
    }

    #[test]
    fn allow_once_goes_approving_then_approved_then_the_result() {
        for (error, expected) in [
            (None, ToolState::Ok),
            (
                Some("The server refused."),
                ToolState::Error(Some("The server refused.".into())),
            ),
        ] {
            let mut transcript = waiting();
            assert!(transcript.decision_sent("p1", ONCE));
            assert_eq!(
                approval_state(&transcript),
                ApprovalState::Approving(Grant::Once)
            );
            transcript.decision_answered("p1", DecisionAnswer::Recorded);
            assert_eq!(
                approval_state(&transcript),
                ApprovalState::Approving(Grant::Once),
                "the 200 alone does not resolve the card: the stream does"
            );
            transcript.apply(Some(5), resolved("t1", "p1", Resolution::Approved));
            assert_eq!(approval_state(&transcript), ApprovalState::Approved);
            assert_eq!(only_call(&transcript).state, ToolState::Running);
            transcript.apply(Some(6), ran("t1", "p1", "c1", error));
            let call = only_call(&transcript);
            assert_eq!(call.state, expected, "{error:?}");
            assert_eq!(call.duration_ms, Some(42));
            assert_eq!(approval_state(&transcript), ApprovalState::Approved);
            transcript.apply(Some(7), finished("t1", TurnEnding::Done));
            assert_eq!(
                only_call(&transcript).state,
                expected,
                "the turn's end keeps it"
            );
        }
    }

    #[test]
    fn decline_and_expiry_come_from_the_stream() {
        for (decision, expected) in [
            (Resolution::Denied, ApprovalState::Denied),
            (Resolution::Expired, ApprovalState::Expired),
        ] {
            let mut transcript = waiting();
            transcript.apply(Some(5), resolved("t1", "p1", decision));
            transcript.apply(
                Some(6),
                ran("t1", "p1", "c1", Some("The user declined this tool call.")),
            );
            transcript.apply(Some(7), finished("t1", TurnEnding::Done));
            assert_eq!(approval_state(&transcript), expected, "{decision}");
            assert!(
                !transcript.decision_sent("p1", ONCE),
                "a resolved card cannot be decided"
            );
        }
        let mut transcript = waiting();
        assert!(transcript.decision_sent("p1", Decision::Deny));
        assert_eq!(approval_state(&transcript), ApprovalState::Declining);
        transcript.apply(Some(5), resolved("t1", "p1", Resolution::Denied));
        assert_eq!(approval_state(&transcript), ApprovalState::Denied);
    }

    #[test]
    fn a_decision_is_sent_once() {
        let mut transcript = waiting();
        assert!(transcript.decision_sent("p1", ONCE));
        assert!(!transcript.decision_sent("p1", ONCE), "a double click");
        assert!(!transcript.decision_sent("p1", Decision::Deny));
        assert!(!transcript.decision_sent("nope", ONCE), "an unknown card");
    }

    #[test]
    fn the_servers_refusals_become_states_the_card_can_show() {
        let cases = [
            (Some(410), ApprovalState::Expired, None, "410: expired"),
            (
                Some(409),
                ApprovalState::Changed,
                None,
                "409: the request changed",
            ),
            (
                Some(404),
                ApprovalState::DecidedElsewhere,
                None,
                "404: decided in another tab",
            ),
            (
                Some(500),
                ApprovalState::Pending,
                Some("Boom."),
                "500: nothing decided, try again",
            ),
            (
                None,
                ApprovalState::Pending,
                Some("Boom."),
                "no answer: nothing decided, try again",
            ),
        ];
        for (status, state, problem, why) in cases {
            let mut transcript = waiting();
            transcript.decision_sent("p1", ONCE);
            transcript.decision_answered("p1", DecisionAnswer::from_error(status, "Boom.".into()));
            let approval = transcript.approval("p1").expect("a card");
            assert_eq!(approval.state, state, "{why}");
            assert_eq!(approval.problem.as_deref(), problem, "{why}");
        }
        // After a failure the user can try again; the problem goes.
        let mut transcript = waiting();
        transcript.decision_sent("p1", ONCE);
        transcript.decision_answered("p1", DecisionAnswer::Failed("Offline.".into()));
        assert!(transcript.decision_sent("p1", ONCE));
        assert_eq!(
            transcript.approval("p1").and_then(|a| a.problem.clone()),
            None
        );
    }

    #[test]
    fn a_late_answer_never_overrides_what_the_stream_said() {
        let mut transcript = waiting();
        transcript.decision_sent("p1", ONCE);
        transcript.apply(Some(5), resolved("t1", "p1", Resolution::Approved));
        for answer in [
            DecisionAnswer::Recorded,
            DecisionAnswer::AlreadyDecided,
            DecisionAnswer::Expired,
            DecisionAnswer::Changed,
            DecisionAnswer::Failed("x".into()),
        ] {
            transcript.decision_answered("p1", answer.clone());
            assert_eq!(
                approval_state(&transcript),
                ApprovalState::Approved,
                "{answer:?}"
            );
        }
    }

    #[test]
    fn a_decision_from_another_tab_updates_this_one() {
        // This tab pressed Allow once too late: 404, then the stream says
        // the other tab declined.
        let mut transcript = waiting();
        transcript.decision_sent("p1", ONCE);
        transcript.decision_answered("p1", DecisionAnswer::AlreadyDecided);
        assert_eq!(approval_state(&transcript), ApprovalState::DecidedElsewhere);
        transcript.apply(Some(5), resolved("t1", "p1", Resolution::Denied));
        assert_eq!(approval_state(&transcript), ApprovalState::Denied);

        // A tab that did nothing just follows the stream.
        let mut idle = waiting();
        idle.apply(Some(5), resolved("t1", "p1", Resolution::Approved));
        assert_eq!(approval_state(&idle), ApprovalState::Approved);
    }

    #[test]
    fn replayed_approval_events_change_nothing() {
        let mut transcript = waiting();
        transcript.decision_sent("p1", ONCE);
        // The same card again without a sequence number (e.g. from a
        // reconnect that lost ids) keeps this page's state.
        let applied = transcript.apply(None, required("t1", "p1", "c1"));
        assert!(!applied.approval_required, "not a new card");
        assert_eq!(
            approval_state(&transcript),
            ApprovalState::Approving(Grant::Once)
        );
        transcript.apply(Some(5), resolved("t1", "p1", Resolution::Approved));
        transcript.apply(Some(6), ran("t1", "p1", "c1", None));
        // A replay from an older point: skipped by sequence number.
        for (seq, event) in [
            (Some(3), tool_call("t1", "c1")),
            (Some(4), required("t1", "p1", "c1")),
            (Some(5), resolved("t1", "p1", Resolution::Approved)),
        ] {
            assert!(transcript.apply(seq, event).duplicate);
        }
        // Even unnumbered, a repeated card does not reopen a decided one.
        transcript.apply(None, required("t1", "p1", "c1"));
        transcript.apply(None, resolved("t1", "p1", Resolution::Approved));
        assert_eq!(approval_state(&transcript), ApprovalState::Approved);
        assert_eq!(only_call(&transcript).state, ToolState::Ok);
    }

    #[test]
    fn a_reload_while_pending_brings_the_same_card_back_and_it_still_decides() {
        // The running turn has no stored messages; the stream replays it
        // from `resume_after`.
        let mut reloaded = Transcript::from_detail(&detail(vec![], 0));
        for (seq, event) in [
            (Some(1), started("t1", "use search_notes with {}")),
            (Some(2), delta("t1", "I will call it.")),
            (Some(3), tool_call("t1", "c1")),
            (Some(4), required("t1", "p1", "c1")),
        ] {
            reloaded.apply(seq, event);
        }
        assert_eq!(
            reloaded,
            waiting(),
            "the same transcript as before the reload"
        );
        assert_eq!(approval_state(&reloaded), ApprovalState::Pending);
        assert!(reloaded.decision_sent("p1", ONCE));
    }

    #[test]
    fn a_reloaded_chat_shows_how_each_card_ended() {
        let mut detail = detail(
            vec![
                message(
                    "t1",
                    "user",
                    "use search_notes with {}",
                    MessageStatus::Complete,
                ),
                message("t1", "assistant", "Found it.", MessageStatus::Complete),
                message(
                    "t2",
                    "user",
                    "use search_notes with {}",
                    MessageStatus::Complete,
                ),
                message(
                    "t3",
                    "user",
                    "use search_notes with {}",
                    MessageStatus::Complete,
                ),
            ],
            20,
        );
        detail.turns = vec![
            countersign_api::TurnRecord {
                text_before: Vec::new(),
                turn_id: "t1".into(),
                status: TurnEnding::Done,
                events: vec![
                    tool_call("t1", "c1"),
                    required("t1", "p1", "c1"),
                    resolved("t1", "p1", Resolution::Approved),
                    ran("t1", "p1", "c1", None),
                ],
            },
            countersign_api::TurnRecord {
                text_before: Vec::new(),
                turn_id: "t2".into(),
                status: TurnEnding::Done,
                events: vec![
                    tool_call("t2", "c2"),
                    required("t2", "p2", "c2"),
                    resolved("t2", "p2", Resolution::Denied),
                ],
            },
            countersign_api::TurnRecord {
                text_before: Vec::new(),
                turn_id: "t3".into(),
                status: TurnEnding::Cancelled,
                events: vec![tool_call("t3", "c3"), required("t3", "p3", "c3")],
            },
        ];
        let transcript = Transcript::from_detail(&detail);
        let card = |id: &str| transcript.approval(id).expect("a card").state.clone();
        assert_eq!(card("p1"), ApprovalState::Approved);
        assert_eq!(card("p2"), ApprovalState::Denied);
        assert_eq!(
            card("p3"),
            ApprovalState::Ended,
            "a card of a finished turn with no decision is over, not pending"
        );
        match &transcript.turns[0].segments[0] {
            Segment::Tool(call) => assert_eq!(call.state, ToolState::Ok),
            other => panic!("expected the tool block first, got {other:?}"),
        }
        assert_eq!(
            transcript.turns[0].segments[1],
            Segment::Text("Found it.".into())
        );
    }

    #[test]
    fn a_turn_that_ends_while_a_card_waits_closes_the_card() {
        let mut transcript = waiting();
        transcript.decision_sent("p1", ONCE);
        transcript.apply(Some(5), finished("t1", TurnEnding::Cancelled));
        assert_eq!(approval_state(&transcript), ApprovalState::Ended);
        assert_eq!(only_call(&transcript).state, ToolState::Unfinished);
        assert_eq!(transcript.running_turn(), None);
    }

    #[test]
    fn a_card_without_a_matching_call_gets_its_own_block_found_by_ledger_id() {
        let mut transcript = Transcript::default();
        transcript.apply(Some(1), started("t1", "x"));
        transcript.apply(Some(2), required("t1", "p1", ""));
        let call = only_call(&transcript);
        assert_eq!(call.id, "p1");
        assert_eq!(call.tool_name, "search_notes");
        assert_eq!(call.arguments, "{\n  \"query\": \"lease\"\n}");
        transcript.apply(Some(3), resolved("t1", "p1", Resolution::Approved));
        transcript.apply(Some(4), ran("t1", "p1", "", None));
        assert_eq!(approval_state(&transcript), ApprovalState::Approved);
        assert_eq!(only_call(&transcript).state, ToolState::Ok);
    }

    #[test]
    fn an_mcp_call_that_did_not_ask_shows_its_result_on_its_block() {
        // A trusted read-only tool runs without a card: `mcp_tool_call`
        // instead of `tool_result`, matched by call id.
        let mut transcript = Transcript::default();
        transcript.apply(Some(1), started("t1", "x"));
        transcript.apply(Some(2), tool_call("t1", "c1"));
        transcript.apply(Some(3), ran("t1", "c1", "c1", None));
        let call = only_call(&transcript);
        assert_eq!(call.state, ToolState::Ok);
        assert_eq!(call.approval, None);
    }

    #[test]
    fn the_card_counts_down_to_decide_by_or_to_expires_at_from_an_older_server() {
        let transcript = waiting();
        let approval = only_call(&transcript).approval.clone().expect("a card");
        assert_eq!(approval.deadline(), "2026-05-01T12:01:30Z");
        let older = Approval {
            decide_by: String::new(),
            ..*approval
        };
        assert_eq!(older.deadline(), "2026-05-01T12:02:00Z");
    }

    #[test]
    fn a_call_that_needs_a_new_sign_in_offers_it_for_its_connector() {
        let mut transcript = Transcript::default();
        transcript.apply(Some(1), started("t1", "x"));
        transcript.apply(Some(2), tool_call("t1", "c1"));
        transcript.apply(
            Some(3),
            ChatEvent::McpToolCall {
                turn_id: "t1".into(),
                id: "c1".into(),
                call_id: "c1".into(),
                connector_name: "Matter notes".into(),
                tool_name: "search_notes".into(),
                status: ToolCallStatus::Error,
                error: Some("Sign in to this connector again.".into()),
                duration_ms: 3,
                waited_ms: None,
                origin: None,
                approved_at: None,
                sign_in_connector_id: Some("k1".into()),
                result: None,
                result_chars: None,
                contains_instructions: false,
                connector_id: None,
                rule: None,
                result_review: None,
            },
        );
        let call = only_call(&transcript);
        assert_eq!(
            call.state,
            ToolState::Error(Some("Sign in to this connector again.".into()))
        );
        assert_eq!(
            call.sign_in,
            Some(Box::new(SignInAgain {
                connector_id: "k1".into(),
                connector_name: "Matter notes".into(),
            }))
        );
        // Any other outcome offers none.
        transcript.apply(Some(4), ran("t1", "c1", "c1", None));
        assert_eq!(only_call(&transcript).sign_in, None);
    }

    #[test]
    fn an_unknown_decision_word_changes_nothing() {
        let mut transcript = waiting();
        transcript.apply(Some(5), resolved("t1", "p1", Resolution::Unknown));
        assert_eq!(approval_state(&transcript), ApprovalState::Pending);
    }

    // ---- Grants and origins (DESIGN §5).

    fn ran_under(turn: &str, call_id: &str, origin: Option<CallOrigin>) -> ChatEvent {
        ChatEvent::McpToolCall {
            turn_id: turn.into(),
            id: call_id.into(),
            call_id: call_id.into(),
            connector_name: "Countersign demo".into(),
            tool_name: "search_notes".into(),
            status: ToolCallStatus::Ok,
            error: None,
            duration_ms: 7,
            waited_ms: None,
            origin,
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

    fn origin_of(transcript: &Transcript, call_id: &str) -> Option<Origin> {
        transcript
            .turns
            .iter()
            .flat_map(|turn| &turn.segments)
            .find_map(|segment| match segment {
                Segment::Tool(call) if call.id == call_id => Some(call.origin.clone()),
                _ => None,
            })
            .expect("the call's block")
    }

    #[test]
    fn each_allow_button_sends_its_grant_and_the_card_shows_it_approving() {
        for grant in [Grant::Once, Grant::Turn, Grant::Always] {
            let mut transcript = waiting();
            assert!(transcript.decision_sent("p1", Decision::Approve(grant)));
            assert_eq!(
                approval_state(&transcript),
                ApprovalState::Approving(grant),
                "{grant:?}"
            );
            assert!(
                !transcript.decision_sent("p1", Decision::Approve(Grant::Always)),
                "{grant:?}: one decision per card"
            );
        }
        let wire: Vec<GrantKind> = [Grant::Once, Grant::Turn, Grant::Always]
            .into_iter()
            .map(Grant::wire)
            .collect();
        assert_eq!(wire, [GrantKind::Once, GrantKind::Turn, GrantKind::Always]);
    }

    #[test]
    fn a_call_is_named_by_its_connector_and_tool_once_the_server_reports_it() {
        let mut transcript = Transcript::default();
        transcript.apply(Some(1), started("t1", "x"));
        transcript.apply(Some(2), tool_call("t1", "c1"));
        assert_eq!(
            only_call(&transcript).shown_name(),
            "countersign_demo__search_notes"
        );
        transcript.apply(Some(3), ran("t1", "c1", "c1", None));
        assert_eq!(
            only_call(&transcript).shown_name(),
            "Countersign demo: search_notes"
        );
    }

    #[test]
    fn a_tool_result_is_labelled_with_its_length_and_whether_it_was_cut() {
        let result = |text: &str, total_chars| ToolResult {
            text: text.into(),
            total_chars,
            contains_instructions: false,
        };
        assert_eq!(result("3 notes", 7).label(), "Result (7 characters)");
        assert_eq!(result("x", 1).label(), "Result (1 character)");
        assert_eq!(
            result("abc", 9000).label(),
            "Result (first 3 of 9000 characters)"
        );
    }

    #[test]
    fn a_waiting_card_is_announced_by_its_connector_and_tool_until_decided() {
        let mut transcript = waiting();
        assert_eq!(
            transcript.announcement().as_deref(),
            Some("Countersign demo: search_notes wants to run and waits for your decision.")
        );
        assert!(transcript.decision_sent("p1", Decision::Approve(Grant::Once)));
        assert_eq!(transcript.announcement(), None);
        assert_eq!(Transcript::default().announcement(), None);
    }

    #[test]
    fn an_approved_card_knows_the_grant_from_the_server_or_from_this_page() {
        let grant_of = |transcript: &Transcript| {
            only_call(transcript)
                .approval
                .as_ref()
                .expect("a card")
                .grant
        };
        // Another tab (or a reload): the event says which grant.
        let mut elsewhere = waiting();
        elsewhere.apply(
            Some(9),
            ChatEvent::McpConfirmationResolved {
                turn_id: "t1".into(),
                id: "p1".into(),
                decision: Resolution::Approved,
                grant: Some(GrantKind::Always),
                decided_at: None,
                decline_reason: None,
                stopped: false,
                edited_arguments: None,
                second_approver: None,
            },
        );
        assert_eq!(approval_state(&elsewhere), ApprovalState::Approved);
        assert_eq!(grant_of(&elsewhere), Some(Grant::Always));
        // An older server says nothing: this page's own choice stands.
        let mut here = waiting();
        assert!(here.decision_sent("p1", Decision::Approve(Grant::Turn)));
        here.apply(Some(9), resolved("t1", "p1", Resolution::Approved));
        assert_eq!(grant_of(&here), Some(Grant::Turn));
        // Neither: unknown, never guessed.
        let mut unknown = waiting();
        unknown.apply(Some(9), resolved("t1", "p1", Resolution::Approved));
        assert_eq!(grant_of(&unknown), None);
        // A decline carries none.
        let mut declined = waiting();
        declined.apply(Some(9), resolved("t1", "p1", Resolution::Denied));
        assert_eq!(grant_of(&declined), None);
    }

    #[test]
    fn a_step_up_refusal_reopens_the_card_with_the_reason_and_decides_nothing() {
        assert_eq!(
            DecisionAnswer::from_error(Some(403), "mfa_required".into()),
            DecisionAnswer::StepUpRequired
        );
        assert_eq!(
            DecisionAnswer::from_error(Some(403), "Cross-origin requests are not allowed.".into()),
            DecisionAnswer::Failed("Cross-origin requests are not allowed.".into()),
            "another 403 is the server's words"
        );
        let mut transcript = waiting();
        transcript.decision_sent("p1", Decision::Approve(Grant::Always));
        transcript.decision_answered("p1", DecisionAnswer::StepUpRequired);
        let approval = transcript.approval("p1").expect("a card");
        assert_eq!(approval.state, ApprovalState::Pending);
        assert_eq!(approval.problem.as_deref(), Some(STEP_UP_NEEDED));
        assert!(STEP_UP_NEEDED.contains("two-factor step-up"));
        // The other buttons still work, and the problem goes.
        assert!(transcript.decision_sent("p1", Decision::Approve(Grant::Turn)));
        assert_eq!(
            transcript.approval("p1").and_then(|a| a.problem.clone()),
            None
        );
        // A step-up answer after the stream decided changes nothing.
        transcript.apply(Some(5), resolved("t1", "p1", Resolution::Approved));
        transcript.decision_answered("p1", DecisionAnswer::StepUpRequired);
        assert_eq!(approval_state(&transcript), ApprovalState::Approved);
    }

    #[test]
    fn every_call_that_ran_keeps_what_let_it_run() {
        let cases = [
            (
                Some(CallOrigin::TurnGrant),
                Some(Origin::TurnGrant),
                "this turn's grant",
            ),
            (
                Some(CallOrigin::AlwaysGrant),
                Some(Origin::AlwaysGrant),
                "an always-allow rule",
            ),
            (
                Some(CallOrigin::TrustedAnnotations),
                Some(Origin::TrustedAnnotations),
                "trusted annotations",
            ),
            (
                Some(CallOrigin::Approved),
                Some(Origin::Approved { approved_at: None }),
                "a card, time unknown",
            ),
            (
                Some(CallOrigin::Unknown),
                None,
                "a word this build does not know: no chip",
            ),
            (None, None, "an older server: no chip"),
        ];
        for (wire, expected, why) in cases {
            let mut transcript = Transcript::default();
            transcript.apply(Some(1), started("t1", "x"));
            transcript.apply(Some(2), tool_call("t1", "c1"));
            transcript.apply(Some(3), ran_under("t1", "c1", wire));
            assert_eq!(origin_of(&transcript, "c1"), expected, "{why}");
            assert_eq!(only_call(&transcript).approval, None, "{why}: no card");
            if let Some(origin) = &expected {
                assert_eq!(
                    Some(origin.key()),
                    wire.map(CallOrigin::as_str),
                    "{why}: the key is the wire word"
                );
            }
        }
    }

    #[test]
    fn a_call_a_rule_let_run_names_the_rule_and_one_without_its_rule_has_no_chip() {
        let rule = |scope| {
            Box::new(RuleRef {
                id: "r1".into(),
                scope,
                effect: countersign_api::RuleEffect::Allow,
                description: "Allow Demo: send_email when to ends with @firm.example".into(),
            })
        };
        for (given, expected) in [
            (
                Some(rule(RuleScope::User)),
                Some(Origin::Rule {
                    description: "Allow Demo: send_email when to ends with @firm.example".into(),
                    organisation: false,
                }),
            ),
            (
                Some(rule(RuleScope::Admin)),
                Some(Origin::Rule {
                    description: "Allow Demo: send_email when to ends with @firm.example".into(),
                    organisation: true,
                }),
            ),
            (None, None),
        ] {
            let mut transcript = Transcript::default();
            transcript.apply(Some(1), started("t1", "x"));
            transcript.apply(Some(2), tool_call("t1", "c1"));
            let mut ran = ran_under("t1", "c1", Some(CallOrigin::Rule));
            if let ChatEvent::McpToolCall { rule, .. } = &mut ran {
                *rule = given;
            }
            transcript.apply(Some(3), ran);
            assert_eq!(origin_of(&transcript, "c1"), expected);
            assert_eq!(only_call(&transcript).approval, None, "no card");
        }
    }

    #[test]
    fn a_turn_grant_shows_one_card_and_the_later_call_says_the_grant_let_it_run() {
        let approved_at = "2026-05-01T12:03:00.5Z";
        let events = vec![
            tool_call("t1", "c1"),
            required("t1", "p1", "c1"),
            resolved("t1", "p1", Resolution::Approved),
            ChatEvent::McpToolCall {
                turn_id: "t1".into(),
                id: "p1".into(),
                call_id: "c1".into(),
                connector_name: "Countersign demo".into(),
                tool_name: "search_notes".into(),
                status: ToolCallStatus::Ok,
                error: None,
                duration_ms: 9,
                waited_ms: None,
                origin: Some(CallOrigin::Approved),
                approved_at: Some(approved_at.into()),
                sign_in_connector_id: None,
                result: None,
                result_chars: None,
                contains_instructions: false,
                connector_id: None,
                rule: None,
                result_review: None,
            },
            tool_call("t1", "c2"),
            ran_under("t1", "c2", Some(CallOrigin::TurnGrant)),
        ];
        let mut live = Transcript::default();
        live.apply(Some(1), started("t1", "use search_notes … then …"));
        for (seq, event) in (2..).zip(events.clone()) {
            live.apply(Some(seq), event);
        }
        live.apply(Some(20), finished("t1", TurnEnding::Done));

        let mut detail = detail(
            vec![message(
                "t1",
                "user",
                "use search_notes … then …",
                MessageStatus::Complete,
            )],
            20,
        );
        detail.turns = vec![countersign_api::TurnRecord {
            text_before: Vec::new(),
            turn_id: "t1".into(),
            status: TurnEnding::Done,
            events,
        }];
        let reloaded = Transcript::from_detail(&detail);

        for (transcript, when) in [(&live, "live"), (&reloaded, "after a reload")] {
            let first = origin_of(transcript, "c1");
            assert_eq!(
                first,
                Some(Origin::Approved {
                    approved_at: Some(approved_at.into())
                }),
                "{when}"
            );
            assert_eq!(
                origin_of(transcript, "c2"),
                Some(Origin::TurnGrant),
                "{when}"
            );
            let cards = transcript.turns[0]
                .segments
                .iter()
                .filter(|s| matches!(s, Segment::Tool(call) if call.approval.is_some()))
                .count();
            assert_eq!(cards, 1, "{when}: one card only");
        }
    }

    // ---- Input requests (DESIGN §6a).

    fn input_required(turn: &str, id: &str, call_id: &str) -> ChatEvent {
        ChatEvent::McpInputRequired {
            turn_id: turn.into(),
            id: id.into(),
            call_id: call_id.into(),
            connector_name: "Countersign demo".into(),
            tool_name: "file_note".into(),
            mode: InputMode::Form,
            message: "Which matter should \"Engagement letter\" be filed under?".into(),
            requested_schema: Some(serde_json::json!({"type": "object", "properties": {}})),
            url: None,
            url_host: None,
            decide_by: "2026-05-01T12:02:00Z".into(),
            secret_fields: Vec::new(),
        }
    }

    fn input_resolved(turn: &str, id: &str, status: InputRequestStatus) -> ChatEvent {
        ChatEvent::McpInputResolved {
            turn_id: turn.into(),
            id: id.into(),
            status,
            answers: None,
            answered_at: None,
        }
    }

    /// `waiting()`, approved, and the call's server asking at `i1`.
    fn asking() -> Transcript {
        let mut transcript = waiting();
        transcript.apply(Some(5), resolved("t1", "p1", Resolution::Approved));
        let applied = transcript.apply(Some(6), input_required("t1", "i1", "c1"));
        assert!(applied.input_required);
        transcript
    }

    fn input_state(transcript: &Transcript, id: &str) -> InputState {
        transcript
            .input(id)
            .expect("the input request")
            .state
            .clone()
    }

    #[test]
    fn an_input_request_sits_under_the_call_that_asks() {
        let transcript = asking();
        let call = only_call(&transcript);
        assert_eq!(call.id, "c1");
        assert!(call.approval.is_some(), "the approval card stays");
        assert_eq!(call.inputs.len(), 1);
        let input = &call.inputs[0];
        assert_eq!(input.id, "i1");
        assert_eq!(input.connector_name, "Countersign demo");
        assert_eq!(input.tool_name, "file_note");
        assert_eq!(input.mode, InputMode::Form);
        assert!(input.message.contains("Engagement letter"));
        assert_eq!(input.state, InputState::Pending);
        assert_eq!(
            transcript.waiting_text().as_deref(),
            Some(
                "Countersign demo is waiting for your answer above. The reply goes on once you answer."
            )
        );
    }

    #[test]
    fn an_answer_is_sent_once_and_folds_on_the_servers_word() {
        let mut transcript = asking();
        assert!(transcript.input_sent("i1", InputAction::Accept));
        assert!(!transcript.input_sent("i1", InputAction::Decline), "once");
        assert_eq!(
            input_state(&transcript, "i1"),
            InputState::Sending(InputAction::Accept)
        );
        transcript.input_answered("i1", InputReply::Recorded(InputRequestStatus::Accepted));
        assert_eq!(input_state(&transcript, "i1"), InputState::Accepted);
        transcript.apply(
            Some(7),
            input_resolved("t1", "i1", InputRequestStatus::Accepted),
        );
        transcript.apply(Some(8), ran("t1", "p1", "c1", None));
        assert_eq!(input_state(&transcript, "i1"), InputState::Accepted);
        assert_eq!(only_call(&transcript).state, ToolState::Ok);
        assert_eq!(
            transcript.waiting_text(),
            None,
            "the model is writing again"
        );
        transcript.apply(Some(9), finished("t1", TurnEnding::Done));
        assert_eq!(
            input_state(&transcript, "i1"),
            InputState::Accepted,
            "an answer survives the end"
        );
    }

    #[test]
    fn the_servers_refusals_keep_the_card_or_close_it() {
        // 422: nothing answered; the card waits again with the server's words.
        let mut transcript = asking();
        transcript.input_sent("i1", InputAction::Accept);
        transcript.input_answered(
            "i1",
            InputReply::from_error(Some(422), "matter: must not be empty".into()),
        );
        let input = transcript.input("i1").expect("input");
        assert_eq!(input.state, InputState::Pending);
        assert_eq!(input.problem.as_deref(), Some("matter: must not be empty"));
        // Sending again clears it.
        assert!(transcript.input_sent("i1", InputAction::Accept));
        assert_eq!(transcript.input("i1").and_then(|i| i.problem.clone()), None);
        // 404: answered in another tab; the stream says how.
        transcript.input_answered("i1", InputReply::from_error(Some(404), String::new()));
        assert_eq!(
            input_state(&transcript, "i1"),
            InputState::AnsweredElsewhere
        );
        transcript.apply(
            Some(7),
            input_resolved("t1", "i1", InputRequestStatus::Declined),
        );
        assert_eq!(input_state(&transcript, "i1"), InputState::Declined);

        // 410: too late.
        let mut late = asking();
        late.input_sent("i1", InputAction::Decline);
        late.input_answered("i1", InputReply::from_error(Some(410), "expired".into()));
        assert_eq!(input_state(&late, "i1"), InputState::Expired);

        // Anything else: the card waits again, saying why.
        let mut offline = asking();
        offline.input_sent("i1", InputAction::Cancel);
        offline.input_answered(
            "i1",
            InputReply::from_error(None, "Could not reach the server.".into()),
        );
        assert_eq!(input_state(&offline, "i1"), InputState::Pending);
        assert_eq!(
            offline
                .input("i1")
                .and_then(|i| i.problem.clone())
                .as_deref(),
            Some("Could not reach the server.")
        );
    }

    #[test]
    fn a_late_reply_never_overrides_what_the_stream_said() {
        let mut transcript = asking();
        transcript.input_sent("i1", InputAction::Accept);
        transcript.apply(
            Some(7),
            input_resolved("t1", "i1", InputRequestStatus::Expired),
        );
        transcript.input_answered("i1", InputReply::Recorded(InputRequestStatus::Accepted));
        assert_eq!(input_state(&transcript, "i1"), InputState::Expired);
        transcript.input_answered("i1", InputReply::Invalid("x".into()));
        assert_eq!(input_state(&transcript, "i1"), InputState::Expired);
    }

    #[test]
    fn an_answer_from_another_tab_folds_this_tabs_card() {
        let mut transcript = asking();
        transcript.apply(
            Some(7),
            input_resolved("t1", "i1", InputRequestStatus::Cancelled),
        );
        assert_eq!(input_state(&transcript, "i1"), InputState::Cancelled);
        assert!(
            !transcript.input_sent("i1", InputAction::Accept),
            "nothing left to answer"
        );
        // An unknown word (a newer server) changes nothing.
        let mut newer = asking();
        newer.apply(
            Some(7),
            input_resolved("t1", "i1", InputRequestStatus::Unknown),
        );
        assert_eq!(input_state(&newer, "i1"), InputState::Pending);
    }

    #[test]
    fn replayed_input_events_change_nothing_and_new_rounds_add_cards() {
        let mut transcript = asking();
        transcript.input_sent("i1", InputAction::Accept);
        // The same request again without a sequence number (a turn record).
        transcript.apply(None, input_required("t1", "i1", "c1"));
        assert_eq!(only_call(&transcript).inputs.len(), 1);
        assert_eq!(
            input_state(&transcript, "i1"),
            InputState::Sending(InputAction::Accept)
        );
        // A second round of the same call is a second card, in order.
        transcript.apply(
            Some(7),
            input_resolved("t1", "i1", InputRequestStatus::Accepted),
        );
        transcript.apply(Some(8), input_required("t1", "i2", "c1"));
        let ids: Vec<&str> = only_call(&transcript)
            .inputs
            .iter()
            .map(|i| i.id.as_str())
            .collect();
        assert_eq!(ids, ["i1", "i2"]);
    }

    #[test]
    fn a_reload_while_pending_brings_the_same_request_back_and_a_finished_one_folded() {
        // Pending: the running turn replays from the stream.
        let mut after = Transcript::from_detail(&detail(vec![], 0));
        for (seq, event) in [
            (1, started("t1", "use file_note with {}")),
            (2, tool_call("t1", "c1")),
            (3, required("t1", "p1", "c1")),
            (4, resolved("t1", "p1", Resolution::Approved)),
            (5, input_required("t1", "i1", "c1")),
        ] {
            after.apply(Some(seq), event);
        }
        assert_eq!(input_state(&after, "i1"), InputState::Pending);
        assert!(
            after.input_sent("i1", InputAction::Accept),
            "it still answers"
        );

        // Finished: the turn record holds both events.
        let mut finished_detail = detail(
            vec![message(
                "t1",
                "user",
                "use file_note with {}",
                MessageStatus::Complete,
            )],
            9,
        );
        finished_detail.turns = vec![countersign_api::TurnRecord {
            text_before: Vec::new(),
            turn_id: "t1".into(),
            status: TurnEnding::Done,
            events: vec![
                tool_call("t1", "c1"),
                required("t1", "p1", "c1"),
                resolved("t1", "p1", Resolution::Approved),
                input_required("t1", "i1", "c1"),
                input_resolved("t1", "i1", InputRequestStatus::Accepted),
                input_required("t1", "i2", "c1"),
                ran("t1", "p1", "c1", None),
            ],
        }];
        let reloaded = Transcript::from_detail(&finished_detail);
        assert_eq!(input_state(&reloaded, "i1"), InputState::Accepted);
        assert_eq!(
            input_state(&reloaded, "i2"),
            InputState::Ended,
            "a request the record never resolved ended with its turn"
        );
    }

    #[test]
    fn a_turn_that_ends_while_a_request_waits_closes_it() {
        let mut transcript = asking();
        transcript.input_sent("i1", InputAction::Accept);
        transcript.apply(Some(7), finished("t1", TurnEnding::Cancelled));
        assert_eq!(input_state(&transcript, "i1"), InputState::Ended);
        assert_eq!(transcript.waiting_text(), None);
    }

    #[test]
    fn a_request_without_a_matching_call_gets_its_own_block() {
        let mut transcript = Transcript::default();
        transcript.apply(Some(1), started("t1", "x"));
        transcript.apply(Some(2), input_required("t1", "i1", ""));
        transcript.apply(Some(3), input_required("t1", "i2", "elsewhere"));
        transcript.apply(
            Some(4),
            input_resolved("t1", "i1", InputRequestStatus::Declined),
        );
        assert_eq!(input_state(&transcript, "i1"), InputState::Declined);
        assert_eq!(input_state(&transcript, "i2"), InputState::Pending);
        let blocks: Vec<&str> = transcript.turns[0]
            .segments
            .iter()
            .filter_map(|s| match s {
                Segment::Tool(call) => Some(call.id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(blocks, ["i1", "elsewhere"]);
    }

    #[test]
    fn the_composer_says_what_the_turn_waits_for() {
        let mut transcript = waiting();
        assert_eq!(
            transcript.waiting_text().as_deref(),
            Some(
                "A tool call is waiting for your decision above. The reply goes on once you decide."
            )
        );
        transcript.apply(Some(5), resolved("t1", "p1", Resolution::Approved));
        assert_eq!(transcript.waiting_text(), None, "approved: running");
    }

    #[test]
    fn a_call_waiting_for_an_approver_is_not_waiting_for_the_user() {
        let mut transcript = waiting();
        transcript.apply(
            Some(5),
            ChatEvent::McpSecondApprovalRequired {
                turn_id: "t1".into(),
                id: "p1".into(),
            },
        );
        assert_eq!(
            transcript.waiting_text().as_deref(),
            Some(
                "You allowed the call above; it waits for an approver. The reply goes on once they decide."
            )
        );
        assert_eq!(
            transcript.waiting_card(),
            None,
            "nothing for the user to go to"
        );
        assert_eq!(transcript.announcement(), None);
    }

    #[test]
    fn the_waiting_card_is_found_until_the_user_acts_on_it() {
        let mut transcript = waiting();
        assert_eq!(
            transcript.waiting_card(),
            Some((
                "[data-approval-id=\"p1\"]".to_owned(),
                "Go to the waiting call"
            ))
        );
        assert!(transcript.decision_sent("p1", ONCE));
        assert_eq!(transcript.waiting_card(), None, "pressed: nothing to go to");

        let mut asking = asking();
        transcript = asking.clone();
        // The card of the call was decided; its server now asks.
        assert_eq!(
            transcript.waiting_card().map(|(selector, _)| selector),
            Some("[data-input-id=\"i1\"]".to_owned())
        );
        assert!(asking.input_sent("i1", InputAction::Accept));
        assert_eq!(asking.waiting_card(), None);
    }
}
