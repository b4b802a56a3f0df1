//! What waits for the user across chats (DESIGN §9: a waiting card is
//! never lost): the live approvals and input requests, as the chat list's
//! badges, the tab title's count and Home's "Waiting for you" show them.

use serde::Deserialize;

/// What the list reads of a live pending call or input request: the few
/// fields it shows (the rest of the body is skipped unread).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct WaitingWire {
    pub id: String,
    pub chat_id: String,
    pub connector_name: String,
    pub tool_name: String,
    #[serde(default)]
    pub decide_by: String,
    #[serde(default)]
    pub decide_in_secs: f64,
    /// A pending call's expiry, for an older server that sends no
    /// `decide_by`.
    #[serde(default)]
    pub expires_in_secs: f64,
}

/// One thing waiting for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    /// The approval's or the input request's id.
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
}

impl WaitingKind {
    /// For `data-kind`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approval => "approval",
            Self::Input => "input",
        }
    }

    /// What the user is asked, in words.
    pub fn words(self) -> &'static str {
        match self {
            Self::Approval => "wants to run",
            Self::Input => "asks you something",
        }
    }
}

/// Everything waiting, soonest deadline first.
pub fn waiting_list(calls: &[WaitingWire], inputs: &[WaitingWire]) -> Vec<Waiting> {
    let of = |w: &WaitingWire, kind| Waiting {
        id: w.id.clone(),
        chat_id: w.chat_id.clone(),
        kind,
        what: format!("{}: {}", w.connector_name, w.tool_name),
        decide_by: w.decide_by.clone(),
        decide_in_secs: if w.decide_by.is_empty() {
            w.expires_in_secs
        } else {
            w.decide_in_secs
        },
    };
    let mut all: Vec<Waiting> = calls
        .iter()
        .map(|c| of(c, WaitingKind::Approval))
        .chain(inputs.iter().map(|r| of(r, WaitingKind::Input)))
        .filter(|w| w.decide_in_secs > 0.0)
        .collect();
    all.sort_by(|a, b| a.decide_in_secs.total_cmp(&b.decide_in_secs));
    all
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

    fn call(id: &str, chat: &str, decide_in: f64) -> WaitingWire {
        serde_json::from_value(json!({
            "id": id, "chat_id": chat, "turn_id": "t", "call_id": "c", "connector_id": "k",
            "connector_name": "Demo", "tool_name": "delete_note", "arguments": {},
            "arguments_json": "{}", "arguments_digest": "d", "destination": "h", "reason": "r",
            "expires_at": "2026-12-06T10:02:00Z", "expires_in_secs": decide_in + 30.0,
            "decide_by": "2026-12-06T10:01:30Z", "decide_in_secs": decide_in
        }))
        .expect("a pending call")
    }

    fn input(id: &str, chat: &str, decide_in: f64) -> WaitingWire {
        serde_json::from_value(json!({
            "id": id, "chat_id": chat, "turn_id": "t", "call_id": "c",
            "connector_name": "Demo", "tool_name": "file_note", "mode": "form",
            "message": "m", "decide_by": "2026-12-06T10:01:00Z", "decide_in_secs": decide_in
        }))
        .expect("an input request")
    }

    #[test]
    fn everything_waiting_is_listed_soonest_first_and_nothing_past_its_time() {
        let all = waiting_list(
            &[call("a1", "chat1", 80.0), call("a2", "chat2", 0.0)],
            &[input("i1", "chat1", 20.0)],
        );
        let ids: Vec<&str> = all.iter().map(|w| w.id.as_str()).collect();
        assert_eq!(ids, ["i1", "a1"], "a2 is past its time");
        assert_eq!(all[0].kind, WaitingKind::Input);
        assert_eq!(all[1].what, "Demo: delete_note");
        assert_eq!(waiting_in(&all, "chat1"), 2);
        assert_eq!(waiting_in(&all, "chat2"), 0);
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
