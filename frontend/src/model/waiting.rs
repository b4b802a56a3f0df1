//! What waits for the user across chats (DESIGN §9: a waiting card is
//! never lost): the live approvals, input requests and results held for
//! review, as the chat list's badges, the tab title's count and Home's
//! "Waiting for you" show them.

use serde::Deserialize;

/// A row of `GET /api/waiting` (`countersign_api::WaitingItem`), read
/// with a plain string for its kind: the vocabulary's reader would cost
/// the main module more than the three words it tells apart.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WaitingWire {
    pub kind: String,
    pub id: String,
    pub chat_id: String,
    pub connector_name: String,
    pub tool_name: String,
    pub decide_by: String,
    pub decide_in_secs: f64,
}

/// One thing waiting for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    /// The approval's, input request's or review's id.
    pub id: String,
    /// The chat it waits in.
    pub chat_id: String,
    /// A call to allow or decline, or a server's question to answer.
    pub kind: WaitingKind,
    /// "Demo: search_notes".
    pub what: String,
    /// RFC 3339: the turn stops waiting then.
    pub decide_by: String,
    /// Seconds left when it was read, by the server's clock.
    pub decide_in_secs: f64,
}

/// What kind of decision waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitingKind {
    /// A tool call to allow or decline.
    Approval,
    /// A form or a link a server asks the user to fill in or open.
    Input,
    /// A tool's result to pass, redact or withhold before the model reads
    /// it.
    Review,
}

impl WaitingKind {
    /// For `data-kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approval => "approval",
            Self::Input => "input",
            Self::Review => "review",
        }
    }

    /// What the user is asked, in words.
    pub fn words(self) -> &'static str {
        match self {
            Self::Approval => "wants to run",
            Self::Input => "asks you something",
            Self::Review => "has a result for you to review",
        }
    }
}

/// Everything waiting, in the server's order (soonest deadline first);
/// nothing past its time.
pub fn waiting_list(items: &[WaitingWire]) -> Vec<Waiting> {
    items
        .iter()
        .filter(|w| w.decide_in_secs > 0.0)
        .map(|w| Waiting {
            id: w.id.clone(),
            chat_id: w.chat_id.clone(),
            kind: match w.kind.as_str() {
                "input" => WaitingKind::Input,
                "review" => WaitingKind::Review,
                _ => WaitingKind::Approval,
            },
            what: format!("{}: {}", w.connector_name, w.tool_name),
            decide_by: w.decide_by.clone(),
            decide_in_secs: w.decide_in_secs,
        })
        .collect()
}

/// How many wait in `chat_id`.
pub fn waiting_in(all: &[Waiting], chat_id: &str) -> usize {
    all.iter().filter(|w| w.chat_id == chat_id).count()
}

/// The tab's title: the count first while anything waits ("(1) waiting ·
/// Countersign"), else the page's own ("Home · Countersign").
pub fn tab_title(page: &str, waiting: usize) -> String {
    match (waiting, page.is_empty()) {
        (0, true) => "Countersign".to_owned(),
        (0, false) => format!("{page} \u{b7} Countersign"),
        (n, _) => format!("({n}) waiting \u{b7} Countersign"),
    }
}

/// The chat list's badge for `count` waiting in a chat, for a screen
/// reader ("1 call waiting for you").
pub fn badge_label(count: usize) -> String {
    match count {
        1 => "1 decision waiting for you".to_owned(),
        n => format!("{n} decisions waiting for you"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(kind: &str, id: &str, chat: &str, tool: &str, decide_in: f64) -> WaitingWire {
        serde_json::from_value(json!({
            "kind": kind, "id": id, "chat_id": chat, "connector_name": "Demo",
            "tool_name": tool, "decide_by": "2026-12-06T10:01:30Z", "decide_in_secs": decide_in
        }))
        .expect("a row of /api/waiting")
    }

    #[test]
    fn everything_waiting_is_listed_by_kind_and_nothing_past_its_time() {
        let all = waiting_list(&[
            item("input", "i1", "chat1", "file_note", 20.0),
            item("review", "r1", "chat2", "search_notes", 30.0),
            item("approval", "a1", "chat1", "delete_note", 80.0),
            item("approval", "a2", "chat2", "delete_note", 0.0),
            item("a_newer_word", "x1", "chat3", "echo", 90.0),
        ]);
        let ids: Vec<&str> = all.iter().map(|w| w.id.as_str()).collect();
        assert_eq!(ids, ["i1", "r1", "a1", "x1"], "a2 is past its time");
        let kinds: Vec<WaitingKind> = all.iter().map(|w| w.kind).collect();
        assert_eq!(
            kinds,
            [
                WaitingKind::Input,
                WaitingKind::Review,
                WaitingKind::Approval,
                WaitingKind::Approval
            ],
            "a word this app does not know is still a decision that waits"
        );
        assert_eq!(all[1].what, "Demo: search_notes");
        assert_eq!(waiting_in(&all, "chat1"), 2);
        assert_eq!(waiting_in(&all, "chat2"), 1);
    }

    #[test]
    fn the_tab_title_counts_what_waits_before_the_page_name() {
        assert_eq!(tab_title("Home", 0), "Home \u{b7} Countersign");
        assert_eq!(tab_title("", 0), "Countersign");
        assert_eq!(tab_title("Home", 1), "(1) waiting \u{b7} Countersign");
        assert_eq!(
            tab_title("Lease review", 3),
            "(3) waiting \u{b7} Countersign"
        );
    }

    #[test]
    fn the_badge_says_how_many_decisions_wait() {
        assert_eq!(badge_label(1), "1 decision waiting for you");
        assert_eq!(badge_label(2), "2 decisions waiting for you");
    }
}
