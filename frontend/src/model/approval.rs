//! What the approval card (DESIGN §6, §9) puts into words, as plain Rust
//! unit-tested on the host: the status line of a card from its
//! [`ApprovalState`] and the call's [`ToolState`], the countdown to
//! `expires_at`, and the arguments as pretty JSON with long string values
//! foldable; and the chip that says what let an MCP call run (its
//! [`Origin`]).
//!
//! It decides nothing: whether a call asks, and whether a decision counts,
//! is the server's. The only thing judged here is the local clock reaching
//! `expires_at`, which disables the buttons early (the server would answer
//! 410 anyway) — never the other way round.

use countersign_api::provenance::Span;
use countersign_api::{
    PendingCallStatus, Provenance, RiskFlag, SpanEncoding, ToolCallStatus, ToolRisk, ValueOrigin,
};
use serde_json::Value;

use crate::model::transcript::{ApprovalState, Grant, Origin, ToolState};
use crate::model::when::{clock_text, parse_rfc3339_ms};

// The card's `data-state` words that are the ledger's and the call's own.
const PENDING: &str = PendingCallStatus::Pending.as_str();
const APPROVED: &str = PendingCallStatus::Approved.as_str();
const EXPIRED: &str = PendingCallStatus::Expired.as_str();
const RAN_OK: &str = ToolCallStatus::Ok.as_str();
const RAN_WITH_ERROR: &str = ToolCallStatus::Error.as_str();

/// String values longer than this (in characters) sit in a scrollable box
/// with their length, start and end in sight.
pub const BOX_AFTER_CHARS: usize = 160;

/// A value longer than this (in characters), or a flagged one, must have
/// been shown in full before *Allow* can be pressed (DESIGN §6.2).
pub const READ_AFTER_CHARS: usize = 500;

/// How many characters of a boxed value's end the card shows under it.
const END_CHARS: usize = 60;

/// How a card stands, for its status line, its `data-state` and its buttons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardStatus {
    /// A stable name for tests and styles (`data-state`).
    pub key: &'static str,
    /// The words shown.
    pub text: String,
    /// Whether Allow/Decline can be pressed.
    pub buttons_enabled: bool,
    /// Whether the buttons are shown at all (gone once decided).
    pub buttons_shown: bool,
    /// Whether the countdown is shown.
    pub counting_down: bool,
    /// Whether this is a problem the user should act on (shown as an alert).
    pub problem: bool,
}

impl CardStatus {
    fn new(key: &'static str, text: impl Into<String>) -> Self {
        Self {
            key,
            text: text.into(),
            buttons_enabled: false,
            buttons_shown: false,
            counting_down: false,
            problem: false,
        }
    }
}

/// The card's status from the approval's state, the grant it was approved
/// with (when known), the call's result and the seconds left before the
/// card's deadline (`None` when unknown).
pub fn card_status(
    approval: &ApprovalState,
    grant: Option<Grant>,
    tool: &ToolState,
    remaining_secs: Option<i64>,
) -> CardStatus {
    let expired_locally = remaining_secs.is_some_and(|secs| secs <= 0);
    match approval {
        ApprovalState::Pending if expired_locally => CardStatus {
            buttons_shown: true,
            ..CardStatus::new(EXPIRED, "Expired without a decision")
        },
        ApprovalState::Pending => CardStatus {
            buttons_enabled: true,
            buttons_shown: true,
            counting_down: true,
            ..CardStatus::new(PENDING, "Waiting for your decision")
        },
        ApprovalState::Approving(grant) => CardStatus {
            buttons_shown: true,
            ..CardStatus::new(
                "approving",
                match grant {
                    Grant::Once => "Approving…",
                    Grant::Turn => "Approving for the rest of this reply…",
                    Grant::Always => "Approving, and always allowing this tool…",
                },
            )
        },
        ApprovalState::Declining => CardStatus {
            buttons_shown: true,
            ..CardStatus::new("declining", "Declining…")
        },
        ApprovalState::AwaitingSecond if expired_locally => {
            CardStatus::new(EXPIRED, "Expired without a second approval")
        }
        ApprovalState::AwaitingSecond => CardStatus {
            counting_down: true,
            ..CardStatus::new(
                "awaiting-second",
                "You allowed it. Waiting for an approver to allow it too; nothing runs until then",
            )
        },
        ApprovalState::DecidedElsewhere => CardStatus {
            buttons_shown: true,
            ..CardStatus::new("decided-elsewhere", "Already decided elsewhere — updating…")
        },
        ApprovalState::Approved => {
            // What was allowed: "Always allow" must not read like "once".
            let allowed = match grant {
                Some(Grant::Once) => "Allowed once",
                Some(Grant::Turn) => "Allowed for this turn",
                Some(Grant::Always) => "Always allowed",
                None => "Approved",
            };
            let (key, what) = match tool {
                ToolState::Running => (APPROVED, "running"),
                ToolState::Ok => (RAN_OK, "ran successfully"),
                ToolState::Error(_) => (RAN_WITH_ERROR, "the call failed"),
                ToolState::Unfinished => ("unfinished", "the turn ended before a result"),
            };
            CardStatus::new(key, format!("{allowed} — {what}"))
        }
        ApprovalState::Denied => CardStatus::new("declined", "Declined"),
        ApprovalState::Expired => CardStatus::new(EXPIRED, "Expired without a decision"),
        ApprovalState::Ended => {
            CardStatus::new("ended", "The turn ended before a decision; nothing ran")
        }
        ApprovalState::Changed => CardStatus {
            problem: true,
            ..CardStatus::new(
                "changed",
                "This request changed since it was shown, so nothing was decided. Reload the page to see the current request.",
            )
        },
    }
}

/// What the card says about a tool's risk: whether to treat the call as
/// risky (its own style, no preselected "Allow once", "Always allow" asks
/// to confirm) and one plain line per thing its annotations declare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RiskView {
    /// Anything but declared read-only and closed-world.
    pub risky: bool,
    /// The lines, most important first.
    pub lines: Vec<RiskLine>,
    /// What makes it risky, as phrases to follow "It" ("can delete or
    /// change data").
    pub concerns: Vec<&'static str>,
}

/// One line of a [`RiskView`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RiskLine {
    pub text: &'static str,
    /// A reason for caution ("Can reach outside its server"), shown in the
    /// danger colour on a risky card; `false` for a reassuring claim
    /// ("Stays within its server, as it declares"), which is never red.
    pub concern: bool,
}

/// The question "Always allow" on a risky tool asks before it sends.
pub fn always_question(tool: &str, connector: &str, risk: &RiskView) -> String {
    let concerns = match risk.concerns.as_slice() {
        [] => String::new(),
        [one] => format!(" It {one}."),
        [first, rest @ ..] => format!(" It {first}, and {}.", rest.join(", ")),
    };
    format!(
        "Always allow {tool} on {connector}?{concerns} Every later call, with any arguments, \
         will run without asking until you revoke the rule in Settings or the tool changes."
    )
}

/// The [`RiskView`] of a card's `risk` (`None`: an older server said
/// nothing, which reads as the riskiest kind, never as safe).
pub fn risk_view(risk: Option<&ToolRisk>) -> RiskView {
    let Some(risk) = risk else {
        return RiskView {
            risky: true,
            lines: vec![RiskLine {
                text: "No risk information came with this request: treat it as able to change data and reach outside",
                concern: true,
            }],
            concerns: vec!["came with no risk information"],
        };
    };
    let concerns = risk
        .flags
        .iter()
        .filter_map(|flag| match flag {
            RiskFlag::DeclaresNothing => Some("declares nothing about what it does"),
            RiskFlag::DeletesData => Some("can delete or change data"),
            RiskFlag::ChangesData => Some("can change data"),
            RiskFlag::ReachesOutside => Some("can reach outside its server"),
            RiskFlag::ReadOnly | RiskFlag::StaysInside | RiskFlag::Unknown => None,
        })
        .collect();
    let concern = |text| RiskLine {
        text,
        concern: true,
    };
    let reassuring = |text| RiskLine {
        text,
        concern: false,
    };
    let lines = risk
        .flags
        .iter()
        .filter_map(|flag| match flag {
            RiskFlag::DeclaresNothing => Some(concern(
                "Declares nothing about what it does: treat it as able to delete or change data and reach outside",
            )),
            RiskFlag::DeletesData => Some(concern("Can delete or change data")),
            RiskFlag::ChangesData => Some(concern("Can change data (it declares it deletes nothing)")),
            RiskFlag::ReadOnly => Some(reassuring("Only reads data, as its server declares")),
            RiskFlag::ReachesOutside => Some(concern("Can reach outside its server")),
            RiskFlag::StaysInside => Some(reassuring("Stays within its server, as it declares")),
            RiskFlag::Unknown => None,
        })
        .collect();
    RiskView {
        risky: risk.risky,
        lines,
        concerns,
    }
}

/// A decided card's story (DESIGN §9): who decided, when and how, what a
/// decline told the assistant, and the tool's own run time apart from the
/// time it waited for the user's answers. `when` writes an RFC 3339 time
/// for people. `None` while undecided.
pub fn decided_story(
    approval: &crate::model::transcript::Approval,
    tool: &ToolState,
    duration_ms: Option<u64>,
    waited_ms: Option<u64>,
    when: impl Fn(&str) -> String,
) -> Option<String> {
    let at = approval
        .decided_at
        .as_deref()
        .map(|at| format!(" at {}", when(at)))
        .unwrap_or_default();
    match approval.state {
        ApprovalState::Approved => {
            let how = match approval.grant {
                Some(Grant::Once) => "Allowed once",
                Some(Grant::Turn) => "Allowed for the rest of this reply",
                Some(Grant::Always) => "Always allowed (a rule you can revoke in Settings)",
                None => "Approved",
            };
            // The policy's second approval: the approver's is the
            // decision's time.
            let mut story = if approval.second_approval {
                format!("{how} by you, then by an approver{at}.")
            } else {
                format!("{how} by you{at}.")
            };
            if approval.edited {
                story.push_str(" You edited the arguments first: shown here is what ran.");
            }
            if *tool != ToolState::Running
                && let Some(ms) = duration_ms
            {
                story.push_str(&format!(" It ran for {} on its server", duration_text(ms)));
                match waited_ms.filter(|w| *w > 0) {
                    Some(w) => story.push_str(&format!(
                        ", and waited {} for your answers.",
                        duration_text(w)
                    )),
                    None => story.push('.'),
                }
            }
            Some(story)
        }
        ApprovalState::Denied if approval.stopped => Some(format!(
            "Not decided: the reply was stopped{at} while this call waited; nothing ran."
        )),
        ApprovalState::Denied if approval.second_approval => {
            Some(match approval.decline_reason.as_deref() {
                Some(reason) => format!(
                    "You allowed it; an approver declined it{at}, so nothing ran. They told the \
                     assistant: \u{201c}{reason}\u{201d}"
                ),
                None => format!("You allowed it; an approver declined it{at}, so nothing ran."),
            })
        }
        ApprovalState::Denied => Some(match approval.decline_reason.as_deref() {
            Some(reason) => format!(
                "Declined by you{at}; nothing ran. You told the assistant: \u{201c}{reason}\u{201d}"
            ),
            None => format!("Declined by you{at}; nothing ran."),
        }),
        ApprovalState::Expired => Some("Nobody decided in time; nothing ran.".to_owned()),
        _ => None,
    }
}

/// Whether a card leans safe (DESIGN §6.2: *Decline* primary, the allow
/// choices behind "Allow…"): the tool can delete data or declares nothing
/// (or the server sent no risk), or something on the card is flagged — a
/// flow of a tool's result elsewhere, instructions in a result of this
/// reply, look-alike, invisible or bidi characters.
pub fn leans_safe(approval: &crate::model::transcript::Approval) -> bool {
    let destructive = approval.risk.as_ref().is_none_or(|r| {
        r.flags
            .iter()
            .any(|f| matches!(f, RiskFlag::DeletesData | RiskFlag::DeclaresNothing))
    });
    let flagged = !approval.character_warnings.is_empty()
        || approval
            .provenance
            .as_deref()
            .is_some_and(|p| !p.flows.is_empty() || !p.instructions_in.is_empty());
    destructive || flagged
}

/// The card's title for a status `key` of [`card_status`]: "<connector>:
/// <tool> wants to run" while it waits, then what became of the call —
/// never "wants to run" after it ran.
pub fn card_title(connector: &str, tool: &str, key: &str) -> String {
    let what = match key {
        APPROVED => "is running",
        RAN_OK => "ran",
        RAN_WITH_ERROR => "failed",
        "declined" => "was declined",
        EXPIRED | "ended" => "did not run",
        "unfinished" => "did not finish",
        "awaiting-second" => "waits for an approver",
        _ => "wants to run",
    };
    format!("{connector}: {tool} {what}")
}

/// Whole seconds left until `expires_at` at `server_now_ms` (the local
/// clock corrected by what the server said), rounded up so "0:00" means
/// the time is over; `None` if `expires_at` cannot be read.
pub fn remaining_secs(expires_at: &str, server_now_ms: f64) -> Option<i64> {
    let left_ms = parse_rfc3339_ms(expires_at)? - server_now_ms;
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the ceiling of a few minutes in seconds fits in i64"
    )]
    Some((left_ms / 1000.0).ceil() as i64)
}

/// "Expires in 1:42".
pub fn countdown_text(remaining_secs: i64) -> String {
    let secs = remaining_secs.max(0);
    format!("Expires in {}:{:02}", secs / 60, secs % 60)
}

/// How far the server's clock is ahead of this one, in milliseconds, from a
/// pending call's `expires_at` and the `expires_in_secs` the server read at
/// (about) `local_now_ms`. Adding it to the local clock gives the server's.
pub fn clock_offset_ms(expires_at: &str, expires_in_secs: f64, local_now_ms: f64) -> Option<f64> {
    let server_now = parse_rfc3339_ms(expires_at)? - expires_in_secs * 1000.0;
    let offset = server_now - local_now_ms;
    offset.is_finite().then_some(offset)
}

/// How long a call took, in words: "42 ms", "1.3 s".
pub fn duration_text(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{}.{} s", ms / 1000, (ms % 1000) / 100)
    }
}

/// The chip on an MCP call that ran: what let it run, in a few words.
/// `minutes_east_at` gives the local zone's offset from UTC at an instant
/// (ms since the epoch), for the time the user approved.
pub fn origin_text(origin: &Origin, minutes_east_at: impl Fn(f64) -> i64) -> String {
    match origin {
        Origin::Approved { approved_at } => {
            match approved_at.as_deref().and_then(parse_rfc3339_ms) {
                Some(ms) => format!("You approved at {}", clock_text(ms, minutes_east_at(ms))),
                None => "You approved it".into(),
            }
        }
        Origin::TurnGrant => "Allowed for this turn".into(),
        Origin::AlwaysGrant => "Ran under your always-allow rule".into(),
        Origin::TrustedAnnotations => {
            "Ran without asking: you trust this server's annotations".into()
        }
        Origin::Rule {
            description,
            organisation,
        } => format!(
            "Ran under {} rule \u{201c}{description}\u{201d}",
            if *organisation {
                "your organisation's"
            } else {
                "your"
            }
        ),
    }
}

/// A piece of the arguments as the card lays them out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgPiece {
    /// Pretty JSON shown as is.
    Code(String),
    /// A short string (or key, or number) that carries text from a tool's
    /// result: its JSON text in runs, the seen ones marked (typed parts
    /// too), inline.
    Marked(Vec<ArgRun>),
    /// A long string value, whole, in a box of its own.
    Long(LongValue),
}

/// A string value longer than [`BOX_AFTER_CHARS`]: the card shows all of
/// it in a scrollable box, its length and its end beside it, and holds
/// *Allow* until it was shown in full when `must_read`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LongValue {
    /// The whole JSON string literal (quotes and escapes included), in
    /// runs: the parts seen before marked, as in [`ArgPiece::Marked`].
    pub runs: Vec<ArgRun>,
    /// How many characters the value has.
    pub chars: usize,
    /// The literal's last characters, starting with "…".
    pub end: String,
    /// Whether it must be shown in full before *Allow*: longer than
    /// [`READ_AFTER_CHARS`], or flagged (text from a tool's result,
    /// look-alike, invisible or bidi characters).
    pub must_read: bool,
    /// The argument, in words (`body`, `to/0`).
    pub what: String,
}

impl LongValue {
    /// The whole JSON string literal.
    pub fn literal(&self) -> String {
        self.runs.iter().map(|run| run.text.as_str()).collect()
    }
}

/// The argument at the RFC 6901 pointer `path`, in words (`to/0`).
pub fn pointer_words(path: &str) -> String {
    path.trim_start_matches('/')
        .replace("~1", "/")
        .replace("~0", "~")
}

/// A run of a marked string's JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgRun {
    /// The JSON text (escaped as in the literal; quotes in the first and
    /// last runs).
    pub text: String,
    /// Where it was seen, if it was.
    pub mark: Option<ArgMark>,
}

/// What a marked run is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgMark {
    /// `typed` or `tool_result`.
    pub origin: ValueOrigin,
    /// In words: "Typed by you", "From Demo: search_notes", with the
    /// encoding it was found under.
    pub label: String,
    /// The text would leave for elsewhere (one of the card's flows).
    pub flow: bool,
}

/// `value` as pretty JSON (exactly `serde_json::to_string_pretty`'s text
/// when the pieces' texts are joined), with every string longer than
/// [`BOX_AFTER_CHARS`] as a piece of its own. Nothing is ever cut.
pub fn argument_pieces(value: &Value) -> Vec<ArgPiece> {
    argument_pieces_with(value, None, &[])
}

/// [`argument_pieces`], with the parts `provenance` traced marked, and
/// the long values that it traced or that `warnings` flag to be read in
/// full.
pub fn argument_pieces_with(
    value: &Value,
    provenance: Option<&Provenance>,
    warnings: &[countersign_api::CharacterWarning],
) -> Vec<ArgPiece> {
    let mut pieces = Vec::new();
    let mut code = String::new();
    let marks = Marks(provenance, warnings);
    write_value(value, 0, &mut String::new(), &marks, &mut code, &mut pieces);
    if !code.is_empty() {
        pieces.push(ArgPiece::Code(code));
    }
    pieces
}

/// The spans of a card's provenance, and its character warnings, by
/// pointer.
struct Marks<'a>(
    Option<&'a Provenance>,
    &'a [countersign_api::CharacterWarning],
);

impl Marks<'_> {
    /// Whether the value at `path` holds look-alike, invisible or bidi
    /// characters.
    fn odd_characters(&self, path: &str) -> bool {
        self.1.iter().any(|w| !w.key && w.path == path)
    }

    /// The runs of `text` (a key, a string's content or a number's JSON
    /// text) at `path`, when any part of it was seen before.
    fn runs(&self, path: &str, key: bool, text: &str, quoted: bool) -> Option<Vec<ArgRun>> {
        let provenance = self.0?;
        // Only a string that carries a tool's result is marked (and so
        // shown whole): one the user typed folds like any other, its origin
        // named in the list under the arguments.
        let value = provenance.values.iter().find(|v| {
            v.path == path
                && v.key == key
                && v.spans.iter().any(|s| s.origin == ValueOrigin::ToolResult)
        })?;
        let chars: Vec<char> = text.chars().collect();
        let escape = |part: &[char]| {
            let part: String = part.iter().collect();
            if quoted {
                let lit = literal(&part);
                lit[1..lit.len() - 1].to_owned()
            } else {
                part
            }
        };
        let mut runs = Vec::new();
        if quoted {
            runs.push(ArgRun {
                text: "\"".into(),
                mark: None,
            });
        }
        let mut at = 0;
        for span in &value.spans {
            let (start, end) = (span.start as usize, (span.end as usize).min(chars.len()));
            if start < at || start >= end {
                continue;
            }
            if start > at {
                runs.push(ArgRun {
                    text: escape(&chars[at..start]),
                    mark: None,
                });
            }
            runs.push(ArgRun {
                text: escape(&chars[start..end]),
                mark: Some(mark_of(provenance, span)),
            });
            at = end;
        }
        if at < chars.len() {
            runs.push(ArgRun {
                text: escape(&chars[at..]),
                mark: None,
            });
        }
        if quoted {
            runs.push(ArgRun {
                text: "\"".into(),
                mark: None,
            });
        }
        Some(runs)
    }
}

fn mark_of(provenance: &Provenance, span: &Span) -> ArgMark {
    let encoded = match span.encoding {
        SpanEncoding::Base64 => ", base64-encoded",
        SpanEncoding::Percent => ", URL-encoded",
        SpanEncoding::Hex => ", hex-encoded",
        _ => "",
    };
    match &span.source {
        Some(source) if span.origin == ValueOrigin::ToolResult => ArgMark {
            origin: ValueOrigin::ToolResult,
            label: format!(
                "From {}: {}{encoded}",
                source.connector_name, source.tool_name
            ),
            flow: provenance.flows.iter().any(|f| f.from.call == source.call),
        },
        _ => ArgMark {
            origin: ValueOrigin::Typed,
            label: format!("Typed by you{encoded}"),
            flow: false,
        },
    }
}

fn write_value(
    value: &Value,
    depth: usize,
    path: &mut String,
    marks: &Marks<'_>,
    code: &mut String,
    pieces: &mut Vec<ArgPiece>,
) {
    let marked = |runs: Vec<ArgRun>, code: &mut String, pieces: &mut Vec<ArgPiece>| {
        if !code.is_empty() {
            pieces.push(ArgPiece::Code(std::mem::take(code)));
        }
        pieces.push(ArgPiece::Marked(runs));
    };
    match value {
        Value::Object(map) if !map.is_empty() => {
            code.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    code.push(',');
                }
                code.push('\n');
                indent(code, depth + 1);
                let len = path.len();
                path.push('/');
                path.push_str(&key.replace('~', "~0").replace('/', "~1"));
                match marks.runs(path, true, key, true) {
                    Some(runs) => marked(runs, code, pieces),
                    None => code.push_str(&literal(key)),
                }
                code.push_str(": ");
                write_value(item, depth + 1, path, marks, code, pieces);
                path.truncate(len);
            }
            code.push('\n');
            indent(code, depth);
            code.push('}');
        }
        Value::Array(items) if !items.is_empty() => {
            code.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    code.push(',');
                }
                code.push('\n');
                indent(code, depth + 1);
                let len = path.len();
                path.push('/');
                path.push_str(&index.to_string());
                write_value(item, depth + 1, path, marks, code, pieces);
                path.truncate(len);
            }
            code.push('\n');
            indent(code, depth);
            code.push(']');
        }
        Value::String(text) if text.chars().count() > BOX_AFTER_CHARS => {
            if !code.is_empty() {
                pieces.push(ArgPiece::Code(std::mem::take(code)));
            }
            let chars = text.chars().count();
            let seen = marks.runs(path, false, text, true);
            let flagged = seen.is_some() || marks.odd_characters(path);
            let whole = literal(text);
            let tail: Vec<char> = whole.chars().collect();
            let end = format!(
                "…{}",
                tail[tail.len().saturating_sub(END_CHARS)..]
                    .iter()
                    .collect::<String>()
            );
            pieces.push(ArgPiece::Long(LongValue {
                runs: seen.unwrap_or_else(|| {
                    vec![ArgRun {
                        text: whole,
                        mark: None,
                    }]
                }),
                chars,
                end,
                must_read: flagged || chars > READ_AFTER_CHARS,
                what: pointer_words(path),
            }));
        }
        Value::String(text) if let Some(runs) = marks.runs(path, false, text, true) => {
            marked(runs, code, pieces);
        }
        Value::Number(n) if let Some(runs) = marks.runs(path, false, &n.to_string(), false) => {
            marked(runs, code, pieces);
        }
        other => code.push_str(&serde_json::to_string(other).unwrap_or_default()),
    }
}

/// What the card says under a flow's warning.
pub const FLOW_NOTE: &str = "Calls like this always ask: no \u{201c}Allow for this turn\u{201d}, \
\u{201c}Always allow\u{201d} or trusted annotations let them run unseen.";

/// One argument's origin, in words, for the list under the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginLine {
    /// The argument (`text`, `to/0`; a key says so).
    pub what: String,
    /// "typed by you", "from Demo: search_notes (result at 04:10)",
    /// "written by the model" — the parts, when several.
    pub words: String,
    /// Some of it would leave for elsewhere.
    pub flow: bool,
}

/// Each string's origin, for every string with a part seen before (the
/// rest: "Everything else was written by the model").
pub fn origin_lines(provenance: &Provenance, minutes_east: impl Fn(f64) -> i64) -> Vec<OriginLine> {
    provenance
        .values
        .iter()
        .filter(|v| !v.spans.is_empty())
        .map(|v| {
            let mut parts: Vec<String> = Vec::new();
            let mut flow = false;
            for span in &v.spans {
                let part = match &span.source {
                    Some(source) if span.origin == ValueOrigin::ToolResult => {
                        flow |= provenance.flows.iter().any(|f| f.from.call == source.call);
                        let at = parse_rfc3339_ms(&source.at)
                            .map(|ms| format!(" (result at {})", clock_text(ms, minutes_east(ms))))
                            .unwrap_or_default();
                        format!("from {}: {}{at}", source.connector_name, source.tool_name)
                    }
                    _ => "typed by you".to_owned(),
                };
                if !parts.contains(&part) {
                    parts.push(part);
                }
            }
            let path = pointer_words(&v.path);
            OriginLine {
                what: if v.key {
                    format!("{path} (the key)")
                } else {
                    path
                },
                words: parts.join("; "),
                flow,
            }
        })
        .collect()
}

/// "An earlier result in this reply contains instructions: …", when one
/// did.
pub fn instructions_note(provenance: &Provenance) -> Option<String> {
    let mut names: Vec<String> = Vec::new();
    for source in &provenance.instructions_in {
        let name = format!("{}: {}", source.connector_name, source.tool_name);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    (!names.is_empty()).then(|| {
        let one = names.len() == 1;
        format!(
            "{} earlier in this reply contain{} instructions aimed at the assistant ({}); \
             Countersign treated them as data. Check that this call is what you asked for.",
            if one { "A result" } else { "Results" },
            if one { "s" } else { "" },
            names.join(", ")
        )
    })
}

fn indent(code: &mut String, depth: usize) {
    for _ in 0..depth {
        code.push_str("  ");
    }
}

fn literal(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn provenance_of(value: serde_json::Value) -> Provenance {
        serde_json::from_value(value).expect("provenance")
    }

    fn source(call: &str) -> serde_json::Value {
        json!({"call": call, "connector_name": "Matter notes", "tool_name": "read_matter",
               "at": "2026-12-02T04:10:00Z"})
    }

    #[test]
    fn seen_parts_of_strings_keys_and_numbers_are_marked_and_the_json_is_unchanged() {
        let value = json!({"body": "FYI: the \"ceiling\" is 2.4M\nBest", "n": 4481229117_u64, "to": "x@y.example"});
        let p = provenance_of(json!({
            "values": [
                {"path": "/body", "origin": "tool_result", "spans": [
                    {"start": 5, "end": 31, "origin": "tool_result", "source": source("c1"),
                     "encoding": "plain", "digest": "d"}]},
                {"path": "/n", "origin": "tool_result", "spans": [
                    {"start": 0, "end": 10, "origin": "tool_result", "source": source("c1"),
                     "encoding": "plain", "digest": "d"}]},
                {"path": "/to", "origin": "typed", "spans": [
                    {"start": 0, "end": 11, "origin": "typed", "encoding": "plain", "digest": "d"}]}
            ],
            "flows": [{"from": source("c1"), "to_connector_name": "Mail", "to_tool_name": "send",
                       "reaches_outside": true, "other_connector": true, "text": "t"}]
        }));
        let pieces = argument_pieces_with(&value, Some(&p), &[]);
        assert_eq!(
            joined(&pieces),
            serde_json::to_string_pretty(&value).expect("serializes"),
            "marks change no character of the JSON"
        );
        let marked: Vec<(&str, &ArgMark)> = pieces
            .iter()
            .filter_map(|piece| match piece {
                ArgPiece::Marked(runs) => Some(runs),
                _ => None,
            })
            .flatten()
            .filter_map(|run| run.mark.as_ref().map(|m| (run.text.as_str(), m)))
            .collect();
        assert_eq!(marked.len(), 2, "{pieces:?}");
        assert_eq!(marked[0].0, "the \\\"ceiling\\\" is 2.4M\\nBest");
        assert_eq!(marked[0].1.label, "From Matter notes: read_matter");
        assert!(marked[0].1.flow);
        assert_eq!(marked[1].0, "4481229117");
        // What the user typed is not marked: it folds like any value
        // (DESIGN §6.2), its origin listed under the arguments.
        let long = "typed ".repeat(40);
        let typed = provenance_of(
            json!({"values": [{"path": "/to", "origin": "typed", "spans": [
            {"start": 0, "end": 200, "origin": "typed", "encoding": "plain", "digest": "d"}]}]}),
        );
        let pieces = argument_pieces_with(&json!({"to": long}), Some(&typed), &[]);
        assert!(
            pieces
                .iter()
                .any(|p| matches!(p, ArgPiece::Long(long) if !long.must_read)),
            "{pieces:?}"
        );
        // Without provenance, nothing is marked.
        assert!(
            argument_pieces(&value)
                .iter()
                .all(|p| !matches!(p, ArgPiece::Marked(_)))
        );
    }

    #[test]
    fn origins_and_instructions_are_put_in_words() {
        let p = provenance_of(json!({
            "values": [
                {"path": "/body", "origin": "tool_result", "spans": [
                    {"start": 0, "end": 5, "origin": "typed", "encoding": "plain", "digest": "d"},
                    {"start": 6, "end": 30, "origin": "tool_result", "source": source("c1"),
                     "encoding": "base64", "digest": "d"}]},
                {"path": "/a~1b", "key": true, "origin": "typed", "spans": [
                    {"start": 0, "end": 3, "origin": "typed", "encoding": "plain", "digest": "d"}]},
                {"path": "/subject", "origin": "model", "spans": []}
            ],
            "flows": [{"from": source("c1"), "to_connector_name": "Mail", "to_tool_name": "send",
                       "reaches_outside": true, "other_connector": true, "text": "t"}],
            "instructions_in": [source("c1"), source("c2")]
        }));
        let lines = origin_lines(&p, |_| 0);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].what, "body");
        assert_eq!(
            lines[0].words,
            "typed by you; from Matter notes: read_matter (result at 04:10)"
        );
        assert!(lines[0].flow);
        assert_eq!(lines[1].what, "a/b (the key)");
        assert_eq!(
            instructions_note(&p).as_deref(),
            Some(
                "A result earlier in this reply contains instructions aimed at the assistant \
                 (Matter notes: read_matter); Countersign treated them as data. Check that this \
                 call is what you asked for."
            )
        );
        assert_eq!(instructions_note(&Provenance::default()), None);
    }

    fn joined(pieces: &[ArgPiece]) -> String {
        pieces
            .iter()
            .map(|piece| match piece {
                ArgPiece::Code(code) => code.clone(),
                ArgPiece::Long(long) => long.literal(),
                ArgPiece::Marked(runs) => runs.iter().map(|r| r.text.as_str()).collect(),
            })
            .collect()
    }

    #[test]
    fn short_arguments_are_exactly_serde_jsons_pretty_text_in_one_piece() {
        let cases = [
            json!({}),
            json!({"query": "lease"}),
            json!({"a": [], "b": {}, "c": [1, 2.5, null, true], "d": {"e": "\"quoted\"\n"}}),
            json!([{"x": 1}, "y"]),
            json!("just a string"),
        ];
        for value in cases {
            let pieces = argument_pieces(&value);
            let expected = serde_json::to_string_pretty(&value).expect("serializes");
            assert_eq!(pieces, vec![ArgPiece::Code(expected)], "{value}");
        }
    }

    fn longs(pieces: &[ArgPiece]) -> Vec<&LongValue> {
        pieces
            .iter()
            .filter_map(|piece| match piece {
                ArgPiece::Long(long) => Some(long),
                ArgPiece::Code(_) | ArgPiece::Marked(_) => None,
            })
            .collect()
    }

    #[test]
    fn long_strings_are_boxed_whole_with_their_end_in_sight() {
        let long = format!("{}\"end\"", "word ".repeat(60));
        let value = json!({"body": long, "title": "Lease", "tags": [long.clone()]});
        let pieces = argument_pieces(&value);
        assert_eq!(
            joined(&pieces),
            serde_json::to_string_pretty(&value).expect("serializes"),
            "joined, the pieces are the exact pretty JSON"
        );
        let longs = longs(&pieces);
        assert_eq!(longs.len(), 2, "both long values are boxed: {pieces:?}");
        assert_eq!(longs[0].chars, long.chars().count());
        assert_eq!(longs[0].what, "body");
        assert_eq!(longs[1].what, "tags/0");
        assert!(
            longs[0].literal().ends_with("\\\"end\\\"\""),
            "escapes kept: {}",
            longs[0].literal()
        );
        assert!(
            longs[0].end.starts_with('…') && longs[0].end.ends_with("word \\\"end\\\"\""),
            "the end as the box would end: {}",
            longs[0].end
        );
        assert_eq!(longs[0].end.chars().count(), 1 + 60);
        assert!(
            !pieces.iter().any(
                |p| matches!(p, ArgPiece::Code(code) if code.contains("Lease") && code.contains("word"))
            ),
            "no long value is left inside a code piece"
        );
    }

    #[test]
    fn a_value_over_500_characters_or_a_flagged_one_must_be_read_before_allow() {
        // The case: the tail that matters is past any first glance.
        let tail = format!(
            "{}wire $50,000 to account 12345678",
            "Routine filing. ".repeat(40)
        );
        let mid = "m".repeat(READ_AFTER_CHARS);
        let over = "o".repeat(READ_AFTER_CHARS + 1);
        let value = json!({"a_mid": mid, "b_over": over, "c_tail": tail});
        let pieces = argument_pieces(&value);
        let read: Vec<(&str, bool)> = longs(&pieces)
            .iter()
            .map(|l| (l.what.as_str(), l.must_read))
            .collect();
        assert_eq!(
            read,
            [("a_mid", false), ("b_over", true), ("c_tail", true)],
            "500 characters may be glanced at; 501 must be read"
        );
        assert!(longs(&pieces)[2].end.ends_with("12345678\""));

        // Flagged: text from a tool's result, even under 500 characters.
        let body = "n".repeat(BOX_AFTER_CHARS + 10);
        let traced = provenance_of(json!({"values": [{"path": "/body", "origin": "tool_result",
            "spans": [{"start": 0, "end": 20, "origin": "tool_result", "source": source("c1"),
                       "encoding": "plain", "digest": "d"}]}]}));
        let pieces = argument_pieces_with(&json!({"body": body}), Some(&traced), &[]);
        let long = longs(&pieces)[0].clone();
        assert!(long.must_read, "{long:?}");
        assert!(
            long.runs.iter().any(|r| r.mark.is_some()),
            "marks kept in the box"
        );
        assert_eq!(long.literal(), literal(&body));

        // Flagged: look-alike characters in it.
        let warning = countersign_api::CharacterWarning {
            path: "/body".into(),
            key: false,
            characters: Vec::new(),
            ascii: None,
        };
        let pieces =
            argument_pieces_with(&json!({"body": body}), None, std::slice::from_ref(&warning));
        assert!(longs(&pieces)[0].must_read);
        // A warning about another value, or about the key, flags nothing here.
        let elsewhere = countersign_api::CharacterWarning {
            path: "/to".into(),
            ..warning.clone()
        };
        let on_key = countersign_api::CharacterWarning {
            key: true,
            ..warning
        };
        let pieces = argument_pieces_with(&json!({"body": body}), None, &[elsewhere, on_key]);
        assert!(!longs(&pieces)[0].must_read);
    }

    #[test]
    fn a_string_at_the_limit_is_not_boxed() {
        let value = json!({"s": "é".repeat(BOX_AFTER_CHARS)});
        assert_eq!(argument_pieces(&value).len(), 1, "counted in characters");
    }

    #[test]
    fn the_countdown_rounds_up_and_stops_at_zero() {
        let expires = "2026-05-01T12:02:00Z";
        let at = |offset_ms: f64| 1_777_636_800_000.0 + offset_ms;
        assert_eq!(remaining_secs(expires, at(0.0)), Some(120));
        assert_eq!(remaining_secs(expires, at(17_500.0)), Some(103));
        assert_eq!(remaining_secs(expires, at(119_001.0)), Some(1));
        assert_eq!(remaining_secs(expires, at(120_000.0)), Some(0));
        assert_eq!(remaining_secs(expires, at(150_000.0)), Some(-30));
        assert_eq!(remaining_secs("soon", at(0.0)), None);
        assert_eq!(countdown_text(102), "Expires in 1:42");
        assert_eq!(countdown_text(9), "Expires in 0:09");
        assert_eq!(countdown_text(-4), "Expires in 0:00");
    }

    #[test]
    fn origin_chips_say_what_let_a_call_run() {
        let utc = |_ms: f64| 0;
        let cases = [
            (Origin::AlwaysGrant, "Ran under your always-allow rule"),
            (Origin::TurnGrant, "Allowed for this turn"),
            (
                Origin::Rule {
                    description: "Allow Demo: search_notes".into(),
                    organisation: false,
                },
                "Ran under your rule \u{201c}Allow Demo: search_notes\u{201d}",
            ),
            (
                Origin::Rule {
                    description: "Allow every read".into(),
                    organisation: true,
                },
                "Ran under your organisation's rule \u{201c}Allow every read\u{201d}",
            ),
            (
                Origin::TrustedAnnotations,
                "Ran without asking: you trust this server's annotations",
            ),
            (
                Origin::Approved {
                    approved_at: Some("2026-05-01T12:03:59.9Z".into()),
                },
                "You approved at 12:03",
            ),
            (Origin::Approved { approved_at: None }, "You approved it"),
            (
                Origin::Approved {
                    approved_at: Some("a while ago".into()),
                },
                "You approved it",
            ),
        ];
        for (origin, expected) in cases {
            assert_eq!(origin_text(&origin, utc), expected, "{origin:?}");
        }
        // The local zone is asked about the instant approved (DST aware).
        let approved = Origin::Approved {
            approved_at: Some("2026-05-01T12:03:00Z".into()),
        };
        let asked = std::cell::Cell::new(0.0);
        let text = origin_text(&approved, |ms| {
            asked.set(ms);
            120
        });
        assert_eq!(text, "You approved at 14:03");
        assert!((asked.get() - 1_777_636_980_000.0).abs() < 0.01);
    }

    #[test]
    fn durations_read_as_words() {
        assert_eq!(duration_text(42), "42 ms");
        assert_eq!(duration_text(999), "999 ms");
        assert_eq!(duration_text(1_350), "1.3 s");
        assert_eq!(duration_text(61_000), "61.0 s");
    }

    #[test]
    fn the_servers_clock_corrects_a_wrong_local_clock() {
        // The server read 100 s left at 12:00:20 its time; this machine's
        // clock says 12:03:20 (three minutes fast).
        let local_now = 1_777_636_800_000.0 + 200_000.0;
        let offset = clock_offset_ms("2026-05-01T12:02:00Z", 100.0, local_now).expect("a time");
        assert!((offset + 180_000.0).abs() < 0.01, "{offset}");
        assert_eq!(
            remaining_secs("2026-05-01T12:02:00Z", local_now + offset),
            Some(100)
        );
    }

    #[test]
    fn the_title_says_what_became_of_the_call() {
        use ApprovalState as A;
        use ToolState as T;
        let title = |approval: A, tool: T| {
            card_title(
                "Notes",
                "search",
                card_status(&approval, None, &tool, Some(30)).key,
            )
        };
        assert_eq!(title(A::Pending, T::Running), "Notes: search wants to run");
        assert_eq!(
            title(A::Approving(Grant::Once), T::Running),
            "Notes: search wants to run"
        );
        assert_eq!(
            title(A::AwaitingSecond, T::Running),
            "Notes: search waits for an approver"
        );
        assert_eq!(title(A::Approved, T::Running), "Notes: search is running");
        assert_eq!(title(A::Approved, T::Ok), "Notes: search ran");
        assert_eq!(title(A::Approved, T::Error(None)), "Notes: search failed");
        assert_eq!(title(A::Denied, T::Running), "Notes: search was declined");
        assert_eq!(title(A::Expired, T::Running), "Notes: search did not run");
        assert_eq!(title(A::Ended, T::Running), "Notes: search did not run");
        assert_eq!(
            title(A::Approved, T::Unfinished),
            "Notes: search did not finish"
        );
    }

    #[test]
    fn card_status_follows_the_approval_and_the_result() {
        use ApprovalState as A;
        use ToolState as T;
        /// State, result, seconds left; then key, text, enabled, shown.
        type Case = (A, T, Option<i64>, &'static str, &'static str, bool, bool);
        let cases: [Case; 16] = [
            (
                A::Pending,
                T::Running,
                Some(30),
                PENDING,
                "Waiting for your decision",
                true,
                true,
            ),
            (
                A::Pending,
                T::Running,
                None,
                PENDING,
                "Waiting for your decision",
                true,
                true,
            ),
            (
                A::Pending,
                T::Running,
                Some(0),
                EXPIRED,
                "Expired without a decision",
                false,
                true,
            ),
            (
                A::Approving(Grant::Once),
                T::Running,
                Some(30),
                "approving",
                "Approving…",
                false,
                true,
            ),
            (
                A::Approving(Grant::Turn),
                T::Running,
                Some(30),
                "approving",
                "Approving for the rest of this reply…",
                false,
                true,
            ),
            (
                A::Approving(Grant::Always),
                T::Running,
                Some(30),
                "approving",
                "Approving, and always allowing this tool…",
                false,
                true,
            ),
            (
                A::Declining,
                T::Running,
                Some(30),
                "declining",
                "Declining…",
                false,
                true,
            ),
            (
                A::DecidedElsewhere,
                T::Running,
                Some(30),
                "decided-elsewhere",
                "Already decided elsewhere — updating…",
                false,
                true,
            ),
            (
                A::Approved,
                T::Running,
                Some(30),
                APPROVED,
                "Approved — running",
                false,
                false,
            ),
            (
                A::Approved,
                T::Running,
                Some(-5),
                APPROVED,
                "Approved — running",
                false,
                false,
            ),
            (
                A::Approved,
                T::Ok,
                None,
                RAN_OK,
                "Approved — ran successfully",
                false,
                false,
            ),
            (
                A::Approved,
                T::Error(Some("boom".into())),
                None,
                RAN_WITH_ERROR,
                "Approved — the call failed",
                false,
                false,
            ),
            (
                A::Denied,
                T::Error(None),
                None,
                "declined",
                "Declined",
                false,
                false,
            ),
            (
                A::Expired,
                T::Running,
                Some(10),
                EXPIRED,
                "Expired without a decision",
                false,
                false,
            ),
            (
                A::Ended,
                T::Unfinished,
                None,
                "ended",
                "The turn ended before a decision; nothing ran",
                false,
                false,
            ),
            (
                A::Approved,
                T::Unfinished,
                None,
                "unfinished",
                "Approved — the turn ended before a result",
                false,
                false,
            ),
        ];
        for (approval, tool, remaining, key, text, enabled, shown) in cases {
            let status = card_status(&approval, None, &tool, remaining);
            let why = format!("{approval:?} / {tool:?} / {remaining:?}");
            assert_eq!(status.key, key, "{why}");
            assert_eq!(status.text, text, "{why}");
            assert_eq!(status.buttons_enabled, enabled, "{why}");
            assert_eq!(status.buttons_shown, shown, "{why}");
        }
        let changed = card_status(&A::Changed, None, &T::Running, Some(30));
        assert!(changed.problem && !changed.buttons_enabled && changed.text.contains("Reload"));
    }

    #[test]
    fn the_risk_reads_plainly_and_nothing_declared_is_never_safe() {
        use RiskFlag::*;
        let view = |risky, flags: Vec<RiskFlag>| risk_view(Some(&ToolRisk { risky, flags }));
        assert_eq!(
            view(false, vec![ReadOnly, StaysInside]),
            RiskView {
                risky: false,
                lines: vec![
                    RiskLine {
                        text: "Only reads data, as its server declares",
                        concern: false
                    },
                    RiskLine {
                        text: "Stays within its server, as it declares",
                        concern: false
                    },
                ],
                concerns: vec![],
            }
        );
        assert_eq!(
            always_question(
                "add_note",
                "Notes",
                &view(true, vec![ChangesData, StaysInside])
            ),
            "Always allow add_note on Notes? It can change data. Every later call, with any \
             arguments, will run without asking until you revoke the rule in Settings or the \
             tool changes."
        );
        assert!(
            always_question(
                "echo",
                "Notes",
                &view(true, vec![DeclaresNothing, ReachesOutside])
            )
            .contains("It declares nothing about what it does, and can reach outside its server.")
        );
        let nothing = view(true, vec![DeclaresNothing, ReachesOutside]);
        assert!(nothing.risky);
        assert!(nothing.lines[0].text.starts_with("Declares nothing"));
        assert_eq!(
            nothing.lines[1],
            RiskLine {
                text: "Can reach outside its server",
                concern: true
            }
        );
        assert_eq!(
            view(true, vec![DeletesData, StaysInside]).lines,
            vec![
                RiskLine {
                    text: "Can delete or change data",
                    concern: true
                },
                // A risky card still says what is reassuring, not in red.
                RiskLine {
                    text: "Stays within its server, as it declares",
                    concern: false
                },
            ]
        );
        assert_eq!(
            view(true, vec![ChangesData, StaysInside]).lines[0].text,
            "Can change data (it declares it deletes nothing)"
        );
        // A word this build does not know adds no line, and changes no
        // verdict: the server's `risky` stands.
        assert_eq!(view(true, vec![Unknown]).lines, Vec::<RiskLine>::new());
        // An older server: risky, and says why.
        let none = risk_view(None);
        assert!(none.risky);
        assert_eq!(none.lines.len(), 1);
    }

    #[test]
    fn an_approved_card_says_what_was_allowed() {
        use ApprovalState as A;
        use ToolState as T;
        let text = |grant, tool: T| card_status(&A::Approved, grant, &tool, None).text;
        assert_eq!(
            text(Some(Grant::Once), T::Ok),
            "Allowed once — ran successfully"
        );
        assert_eq!(
            text(Some(Grant::Turn), T::Running),
            "Allowed for this turn — running"
        );
        assert_eq!(
            text(Some(Grant::Always), T::Ok),
            "Always allowed — ran successfully"
        );
        assert_eq!(
            text(Some(Grant::Always), T::Error(None)),
            "Always allowed — the call failed"
        );
        // Unknown (an older server, another tab): no claim either way.
        assert_eq!(text(None, T::Ok), "Approved — ran successfully");
        // The grant never changes the key tests and styles use.
        assert_eq!(
            card_status(&A::Approved, Some(Grant::Always), &T::Ok, None).key,
            RAN_OK
        );
    }
}

/// One flagged argument on the card: which one, what its characters are,
/// and its ASCII form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CharacterLine {
    /// The argument (`to`, `cc/0`; a key says so).
    pub what: String,
    /// Each flagged character in words.
    pub words: String,
    /// An address in ASCII, when it differs.
    pub ascii: Option<String>,
}

/// The card's lines for the server's `character_warnings` (issue 44):
/// "a letter of another script that looks like “i” (U+0456)", "an
/// invisible character (U+200B)", "a direction control that reorders
/// the text (U+202E)".
pub fn character_lines(warnings: &[countersign_api::CharacterWarning]) -> Vec<CharacterLine> {
    use countersign_api::vocab::CharacterKind;
    warnings
        .iter()
        .map(|w| {
            let name = pointer_words(&w.path);
            let words: Vec<String> = w
                .characters
                .iter()
                .map(|c| match c.kind {
                    CharacterKind::LookAlike => format!(
                        "a letter of another script that looks like \u{201c}{}\u{201d} ({})",
                        c.looks_like.as_deref().unwrap_or("?"),
                        c.code
                    ),
                    CharacterKind::Invisible => format!("an invisible character ({})", c.code),
                    CharacterKind::Bidi => {
                        format!("a direction control that reorders the text ({})", c.code)
                    }
                    _ => format!("an unusual character ({})", c.code),
                })
                .collect();
            CharacterLine {
                what: if w.key {
                    format!("{name} (its name)")
                } else {
                    name
                },
                words: format!("holds {}", words.join(", ")),
                ascii: w.ascii.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod character_tests {
    use super::*;
    use countersign_api::{CharacterWarning, UnusualCharacter, vocab::CharacterKind};

    #[test]
    fn each_flagged_argument_is_one_line_naming_its_characters_and_its_ascii_form() {
        let lines = character_lines(&[CharacterWarning {
            path: "/to".into(),
            key: false,
            characters: vec![
                UnusualCharacter {
                    code: "U+0456".into(),
                    kind: CharacterKind::LookAlike,
                    looks_like: Some("i".into()),
                },
                UnusualCharacter {
                    code: "U+200B".into(),
                    kind: CharacterKind::Invisible,
                    looks_like: None,
                },
            ],
            ascii: Some("partner@xn--frm-jhd.example".into()),
        }]);
        assert_eq!(
            lines,
            [CharacterLine {
                what: "to".into(),
                words: "holds a letter of another script that looks like \u{201c}i\u{201d} \
                        (U+0456), an invisible character (U+200B)"
                    .into(),
                ascii: Some("partner@xn--frm-jhd.example".into()),
            }]
        );
    }
}

/// One destination as the card's "Sends to" shows it: the ASCII form,
/// and the form as written beside it when that differs
/// (`xn--frm-jhd.example (fіrm.example)`).
pub fn destination_text(destination: &countersign_api::Destination) -> String {
    match &destination.unicode {
        Some(written) => format!(
            "{} ({})",
            destination.ascii,
            countersign_api::characters::visible(written)
        ),
        None => destination.ascii.clone(),
    }
}

#[cfg(test)]
mod destination_tests {
    use super::*;
    use countersign_api::{Destination, vocab::DestinationKind};

    #[test]
    fn a_destination_reads_in_ascii_with_its_written_form_beside_it() {
        let d = |ascii: &str, unicode: Option<&str>| Destination {
            kind: DestinationKind::Email,
            ascii: ascii.into(),
            unicode: unicode.map(str::to_owned),
            path: "/to".into(),
        };
        assert_eq!(
            destination_text(&d("a@firm.example", None)),
            "a@firm.example"
        );
        assert_eq!(
            destination_text(&d("a@xn--frm-jhd.example", Some("a@f\u{0456}rm.example"))),
            "a@xn--frm-jhd.example (a@f\u{0456}rm.example)"
        );
    }
}

#[cfg(test)]
mod leans_safe_tests {
    use super::*;
    use crate::model::transcript::Approval;
    use serde_json::json;

    fn risk(flags: &[RiskFlag]) -> Option<ToolRisk> {
        Some(ToolRisk {
            risky: !flags.contains(&RiskFlag::ReadOnly),
            flags: flags.to_vec(),
        })
    }

    #[test]
    fn a_card_leans_safe_when_the_tool_can_delete_or_declares_nothing_or_anything_is_flagged() {
        let mut card = Approval::for_tests("a1");
        assert!(leans_safe(&card), "no risk sent: the riskiest kind");
        card.risk = risk(&[RiskFlag::DeclaresNothing, RiskFlag::ReachesOutside]);
        assert!(leans_safe(&card));
        card.risk = risk(&[RiskFlag::DeletesData, RiskFlag::StaysInside]);
        assert!(leans_safe(&card));
        card.risk = risk(&[RiskFlag::ChangesData, RiskFlag::ReachesOutside]);
        assert!(
            !leans_safe(&card),
            "risky, but neither destructive nor flagged"
        );
        card.risk = risk(&[RiskFlag::ReadOnly, RiskFlag::StaysInside]);
        assert!(!leans_safe(&card));

        // Flagged, on a tool declared safe.
        let mut flagged = card.clone();
        flagged.character_warnings = vec![countersign_api::CharacterWarning {
            path: "/to".into(),
            key: false,
            characters: Vec::new(),
            ascii: None,
        }];
        assert!(leans_safe(&flagged));
        let mut flow = card.clone();
        flow.provenance = Some(Box::new(
            serde_json::from_value(json!({"values": [], "flows": [{"from": {"call": "c1",
                "connector_name": "N", "tool_name": "t", "at": "2026-12-06T10:00:00Z"},
                "to_connector_name": "M", "to_tool_name": "send", "reaches_outside": true,
                "other_connector": true, "text": "t"}]}))
            .expect("a provenance"),
        ));
        assert!(leans_safe(&flow));
        let mut empty = card;
        empty.provenance = Some(Box::default());
        assert!(
            !leans_safe(&empty),
            "a provenance with nothing in it flags nothing"
        );
    }
}

#[cfg(test)]
mod story_tests {
    use super::*;
    use crate::model::transcript::Approval;

    fn at(text: &str) -> String {
        format!("<{text}>")
    }

    #[test]
    fn a_second_approval_is_waited_for_and_named_once_given_or_refused() {
        let mut card = Approval::for_tests("a1");
        card.state = ApprovalState::AwaitingSecond;
        let status = card_status(&card.state, None, &ToolState::Running, Some(20));
        assert_eq!(status.key, "awaiting-second");
        assert!(
            status
                .text
                .starts_with("You allowed it. Waiting for an approver")
        );
        assert!(status.counting_down && !status.buttons_shown);
        assert_eq!(
            decided_story(&card, &ToolState::Running, None, None, at),
            None
        );
        let late = card_status(&card.state, None, &ToolState::Running, Some(0));
        assert_eq!(late.text, "Expired without a second approval");

        card.state = ApprovalState::Approved;
        card.grant = Some(Grant::Once);
        card.decided_at = Some("T1".into());
        card.second_approval = true;
        assert_eq!(
            decided_story(&card, &ToolState::Running, None, None, at).as_deref(),
            Some("Allowed once by you, then by an approver at <T1>.")
        );
        card.state = ApprovalState::Denied;
        card.decline_reason = Some("Not yet.".into());
        assert_eq!(
            decided_story(&card, &ToolState::Running, None, None, at).as_deref(),
            Some(
                "You allowed it; an approver declined it at <T1>, so nothing ran. They told the \
                 assistant: \u{201c}Not yet.\u{201d}"
            )
        );
    }

    #[test]
    fn a_decided_card_says_who_when_how_and_the_tools_own_time() {
        let mut card = Approval::for_tests("a1");
        assert_eq!(
            decided_story(&card, &ToolState::Running, None, None, at),
            None
        );

        card.state = ApprovalState::Approved;
        card.grant = Some(Grant::Once);
        card.decided_at = Some("T1".into());
        assert_eq!(
            decided_story(&card, &ToolState::Running, None, None, at).as_deref(),
            Some("Allowed once by you at <T1>.")
        );
        assert_eq!(
            decided_story(&card, &ToolState::Ok, Some(1200), Some(8100), at).as_deref(),
            Some(
                "Allowed once by you at <T1>. It ran for 1.2 s on its server, and waited 8.1 s for your answers."
            )
        );
        assert_eq!(
            decided_story(&card, &ToolState::Ok, Some(300), None, at).as_deref(),
            Some("Allowed once by you at <T1>. It ran for 300 ms on its server.")
        );

        card.state = ApprovalState::Denied;
        card.grant = None;
        card.decline_reason = Some("Archive it instead.".into());
        assert_eq!(
            decided_story(&card, &ToolState::Ok, None, None, at).as_deref(),
            Some(
                "Declined by you at <T1>; nothing ran. You told the assistant: \u{201c}Archive it instead.\u{201d}"
            )
        );
        card.decided_at = None;
        card.decline_reason = None;
        assert_eq!(
            decided_story(&card, &ToolState::Ok, None, None, at).as_deref(),
            Some("Declined by you; nothing ran.")
        );
        // Edited, then allowed: the story says the arguments are the edit.
        card.state = ApprovalState::Approved;
        card.grant = Some(Grant::Once);
        card.decided_at = None;
        card.edited = true;
        assert_eq!(
            decided_story(&card, &ToolState::Running, None, None, at).as_deref(),
            Some("Allowed once by you. You edited the arguments first: shown here is what ran.")
        );
        card.edited = false;
        card.state = ApprovalState::Denied;
        card.grant = None;
        // A Stop while it waited denies it, but nobody declined it.
        card.stopped = true;
        card.decided_at = Some("T2".into());
        assert_eq!(
            decided_story(&card, &ToolState::Ok, None, None, at).as_deref(),
            Some("Not decided: the reply was stopped at <T2> while this call waited; nothing ran.")
        );
    }
}
