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

use countersign_api::{ChatDetail, ChatEvent};

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
    fn from_message(status: &str) -> Self {
        match status {
            "stopped" => Self::Stopped,
            "failed" => Self::Failed,
            _ => Self::Complete,
        }
    }

    fn from_finished(status: &str) -> Self {
        match status {
            "cancelled" => Self::Stopped,
            "failed" => Self::Failed,
            _ => Self::Complete,
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
                turn.status = TurnStatus::from_message(&message.status);
            }
        }
        // How each finished turn ended, and its tool blocks and errors
        // (the messages carry only text), shown before its text.
        for record in &detail.turns {
            let index = match turns.iter().position(|t| t.turn_id == record.turn_id) {
                Some(index) => index,
                None => {
                    turns.push(Turn::live(&record.turn_id));
                    turns.len() - 1
                }
            };
            let mut replay = Self::default();
            for event in &record.events {
                replay.apply(None, event.clone());
            }
            let turn = &mut turns[index];
            let mut segments: Vec<Segment> = replay
                .turns
                .into_iter()
                .flat_map(|t| t.segments)
                .map(|segment| match segment {
                    Segment::Tool(mut call) if call.state == ToolState::Running => {
                        call.state = ToolState::Unfinished;
                        Segment::Tool(call)
                    }
                    other => other,
                })
                .collect();
            segments.append(&mut turn.segments);
            turn.segments = segments;
            turn.status = TurnStatus::from_finished(&record.status);
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
                let state = if status == "ok" {
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
                    })),
                }
            }
            ChatEvent::Error { message, .. } => turn.segments.push(Segment::Error(message)),
            ChatEvent::TurnFinished { status, .. } => {
                turn.status = TurnStatus::from_finished(&status);
                for segment in &mut turn.segments {
                    if let Segment::Tool(call) = segment
                        && call.state == ToolState::Running
                    {
                        call.state = ToolState::Unfinished;
                    }
                }
                applied.turn_finished = true;
            }
            ChatEvent::Unknown => {}
        }
        applied
    }
}

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

    fn finished(turn: &str, status: &str) -> ChatEvent {
        ChatEvent::TurnFinished {
            turn_id: turn.into(),
            status: status.into(),
            no_prose_reason: None,
            message_id: None,
        }
    }

    fn message(turn: &str, role: &str, content: &str, status: &str) -> ChatMessage {
        ChatMessage {
            id: format!("{turn}-{role}"),
            turn_id: turn.into(),
            role: role.into(),
            content: content.into(),
            status: status.into(),
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
            (Some(first + 3), finished("t1", "done")),
        ]
    }

    #[test]
    fn a_reloaded_chat_shows_finished_turns_tool_blocks_errors_and_endings() {
        let message = |turn: &str, role: &str, content: &str, status: &str| ChatMessage {
            id: format!("{turn}-{role}"),
            turn_id: turn.into(),
            role: role.into(),
            content: content.into(),
            status: status.into(),
            created_at: String::new(),
        };
        let mut detail = detail(
            vec![
                message("t1", "user", "use notes.search with {}", "complete"),
                message("t1", "assistant", "Found 3 notes.", "complete"),
                message("t2", "user", "hello", "complete"),
            ],
            9,
        );
        detail.turns = vec![
            countersign_api::TurnRecord {
                turn_id: "t1".into(),
                status: "done".into(),
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
                        status: "ok".into(),
                        error: None,
                    },
                ],
            },
            countersign_api::TurnRecord {
                turn_id: "t2".into(),
                status: "failed".into(),
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

        let applied = transcript.apply(Some(4), finished("t1", "done"));
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
                message("t1", "user", "First", "complete"),
                message("t1", "assistant", "Answer one", "complete"),
                message("t2", "user", "Second", "complete"),
                message("t2", "assistant", "Half an ans", "stopped"),
                message("t3", "user", "Third", "complete"),
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
        transcript.apply(Some(3), finished("t1", "cancelled"));
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
                status: "error".into(),
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
        transcript.apply(Some(7), finished("t1", "failed"));

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
        transcript.apply(Some(3), finished("t1", "cancelled"));
        match &transcript.turns[0].segments[0] {
            Segment::Tool(call) => assert_eq!(call.state, ToolState::Unfinished),
            other => panic!("expected a tool block, got {other:?}"),
        }
    }

    #[test]
    fn unknown_events_are_skipped_but_counted() {
        let mut transcript = Transcript::default();
        let event: ChatEvent = serde_json::from_str(
            r#"{"type":"mcp_confirmation_required","turn_id":"t1","pending_call_id":"p"}"#,
        )
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
        transcript.apply(Some(2), finished("t1", "done"));
        assert_eq!(transcript.running_turn(), None);

        // The answer to the POST may arrive after the turn already ended.
        transcript.accepted("t1");
        assert_eq!(transcript.running_turn(), None);
    }
}
