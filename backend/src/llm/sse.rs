//! Server-sent events for the two network providers.
//!
//! Owns two things both [`super::anthropic`] and [`super::openai`] need:
//!
//! - [`SseParser`], an incremental `text/event-stream` parser that follows
//!   the WHATWG "event stream interpretation" rules
//!   (<https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation>),
//!   and `EventReader`, which reads a body event by event with an idle
//!   timeout;
//! - the task that drives a provider's `Decoder` and feeds the
//!   [`LlmStream`] channel (`spawn`), stopping as soon as the receiver is
//!   dropped.
//!
//! It knows nothing of either provider's JSON (their modules) nor of
//! requests and status codes ([`super::http`]).

use super::http::{malformed, network, seconds};
use super::{LlmError, LlmEvent, LlmStream};
use reqwest::Response;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::sync::mpsc;

/// One dispatched event of an event stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the event had one (the spec's default type
    /// `message` is left as `None`).
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The last event id seen in the stream so far (per the spec it carries
    /// over to later events that set none).
    pub id: Option<String>,
}

/// An incremental `text/event-stream` parser: feed it bytes as they arrive,
/// get back the events they complete.
///
/// Chunk boundaries may fall anywhere, including between a `\r` and its `\n`
/// or inside a multi-byte UTF-8 character: lines are split on bytes and only
/// decoded once complete. An event still unterminated when the stream ends is
/// never returned, as the spec requires.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the line being received.
    line: Vec<u8>,
    /// The last byte seen was a `\r`: a `\n` right after it is part of the
    /// same line ending.
    after_cr: bool,
    /// At least one line has been processed (the first may start with a BOM).
    seen_line: bool,
    /// The `event:` field of the event being built.
    event: Option<String>,
    /// The data buffer of the event being built (each line plus `\n`).
    data: String,
    /// The last event id buffer.
    last_id: Option<String>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes of the stream; returns the events they complete,
    /// in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut rest = bytes;
        if rest.is_empty() {
            return events;
        }
        if self.after_cr {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&rest[..end]);
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, &mut events);
            // Keep the allocation for the next line.
            self.line = line;
            self.line.clear();
            if rest[end] == b'\r' {
                match rest.get(end + 1) {
                    Some(b'\n') => rest = &rest[end + 2..],
                    Some(_) => rest = &rest[end + 1..],
                    None => {
                        self.after_cr = true;
                        rest = &[];
                    }
                }
            } else {
                rest = &rest[end + 1..];
            }
        }
        self.line.extend_from_slice(rest);
        events
    }

    /// Bytes held for an event not yet complete (to bound memory against a
    /// stream that never ends its lines or events).
    pub fn buffered_len(&self) -> usize {
        self.line.len() + self.data.len()
    }

    fn process_line(&mut self, line: &[u8], events: &mut Vec<SseEvent>) {
        let mut line = line;
        if !self.seen_line {
            self.seen_line = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(events);
            return;
        }
        if line[0] == b':' {
            return; // A comment (keep-alives use these).
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match field {
            b"event" => self.event = Some(value.into_owned()),
            b"data" => {
                self.data.push_str(&value);
                self.data.push('\n');
            }
            b"id" if !value.contains('\0') => self.last_id = Some(value.into_owned()),
            // `retry` only matters to reconnecting clients; we never reconnect
            // a model's stream. Unknown fields are ignored per the spec.
            _ => {}
        }
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if self.data.is_empty() {
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop(); // The spec drops the data buffer's last `\n`.
        events.push(SseEvent {
            event,
            data,
            id: self.last_id.clone(),
        });
    }
}

/// What a provider's decoder does with the events of one response.
pub(crate) trait Decoder: Send + 'static {
    /// Handles one event; returns what to send on. A
    /// [`LlmEvent::Finished`] among them ends the stream.
    fn on_event(&mut self, event: SseEvent) -> Result<Vec<LlmEvent>, LlmError>;

    /// The body ended: the events that close the stream (ending in
    /// [`LlmEvent::Finished`]), or why ending here is an error.
    fn on_eof(&mut self) -> Result<Vec<LlmEvent>, LlmError>;
}

/// Items buffered between the reading task and the consumer.
const CHANNEL_CAPACITY: usize = 64;

/// Longest event (or line) we hold in memory before giving up on a stream.
const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// Runs `decoder` over `reader` in a task; returns the receiving end.
///
/// The task sends `Ok` events and then exactly one `Finished`, or stops at
/// the first `Err`. It ends quietly as soon as the receiver is dropped, even
/// while waiting for the network: that is how a turn is stopped.
pub(crate) fn spawn(reader: EventReader, decoder: impl Decoder) -> LlmStream {
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    tokio::spawn(pump(reader, decoder, tx));
    rx
}

async fn pump(
    mut reader: EventReader,
    mut decoder: impl Decoder,
    tx: mpsc::Sender<Result<LlmEvent, LlmError>>,
) {
    loop {
        let next = tokio::select! {
            biased;
            () = tx.closed() => return,
            next = reader.next() => next,
        };
        let (outcome, at_eof) = match next {
            Ok(Some(event)) => (decoder.on_event(event), false),
            Ok(None) => (decoder.on_eof(), true),
            Err(error) => (Err(error), true),
        };
        match outcome {
            Ok(events) => {
                for event in events {
                    let finished = matches!(event, LlmEvent::Finished(_));
                    if tx.send(Ok(event)).await.is_err() || finished {
                        return;
                    }
                }
                if at_eof {
                    // A decoder that neither finished nor failed at EOF would
                    // leave the consumer waiting for a `Finished` forever.
                    let _ = tx
                        .send(Err(network(reader.provider, "the stream ended early")))
                        .await;
                    return;
                }
            }
            Err(error) => {
                // The receiver may be gone already; nothing left to tell.
                let _ = tx.send(Err(error)).await;
                return;
            }
        }
    }
}

/// Reads a streaming response body event by event.
#[derive(Debug)]
pub(crate) struct EventReader {
    provider: &'static str,
    response: Response,
    parser: SseParser,
    pending: VecDeque<SseEvent>,
    idle_timeout: Duration,
}

impl EventReader {
    /// Reads `response`'s body; a silence longer than `idle_timeout` between
    /// two chunks is an error.
    pub(crate) fn new(provider: &'static str, response: Response, idle_timeout: Duration) -> Self {
        Self {
            provider,
            response,
            parser: SseParser::new(),
            pending: VecDeque::new(),
            idle_timeout,
        }
    }

    /// The next event; `None` at the end of the body.
    pub(crate) async fn next(&mut self) -> Result<Option<SseEvent>, LlmError> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Ok(Some(event));
            }
            let chunk = match tokio::time::timeout(self.idle_timeout, self.response.chunk()).await {
                Err(_elapsed) => {
                    return Err(network(
                        self.provider,
                        format!("no data for {}", seconds(self.idle_timeout)),
                    ));
                }
                Ok(Err(error)) => {
                    tracing::debug!(provider = self.provider, error = %error.without_url(), "stream read failed");
                    return Err(network(self.provider, "the stream was interrupted"));
                }
                Ok(Ok(None)) => return Ok(None),
                Ok(Ok(Some(chunk))) => chunk,
            };
            self.pending.extend(self.parser.push(&chunk));
            if self.parser.buffered_len() > MAX_EVENT_BYTES {
                return Err(malformed(self.provider, "an event larger than 8 MiB"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn event(event: Option<&str>, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
            id: id.map(str::to_owned),
        }
    }

    fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        chunks.iter().flat_map(|chunk| parser.push(chunk)).collect()
    }

    #[test]
    fn whole_streams_parse_into_the_events_the_spec_describes() {
        let cases: &[(&str, &str, Vec<SseEvent>)] = &[
            (
                "a single data line ended by a blank line",
                "data: hello\n\n",
                vec![event(None, "hello", None)],
            ),
            (
                "an event name and data",
                "event: ping\ndata: {}\n\n",
                vec![event(Some("ping"), "{}", None)],
            ),
            (
                "the space after the colon is optional",
                "event:ping\ndata:{}\n\n",
                vec![event(Some("ping"), "{}", None)],
            ),
            (
                "only one leading space is removed",
                "data:  two\n\n",
                vec![event(None, " two", None)],
            ),
            (
                "multi-line data is joined with newlines",
                "data: one\ndata: two\ndata:\n\n",
                vec![event(None, "one\ntwo\n", None)],
            ),
            (
                "CRLF line endings",
                "event: a\r\ndata: x\r\n\r\n",
                vec![event(Some("a"), "x", None)],
            ),
            (
                "CR line endings",
                "event: a\rdata: x\r\rdata: y\r\r",
                vec![event(Some("a"), "x", None), event(None, "y", None)],
            ),
            (
                "mixed line endings",
                "data: a\r\n\ndata: b\r\rdata: c\n\r\n",
                vec![
                    event(None, "a", None),
                    event(None, "b", None),
                    event(None, "c", None),
                ],
            ),
            (
                "comments are ignored, also between fields",
                ": keep-alive\n\ndata: a\n: OPENROUTER PROCESSING\ndata: b\n\n",
                vec![event(None, "a\nb", None)],
            ),
            (
                "an event with no data is not dispatched, and its name is forgotten",
                "event: lonely\n\ndata: x\n\n",
                vec![event(None, "x", None)],
            ),
            (
                "a data field with no colon is an empty data line",
                "data\n\n",
                vec![event(None, "", None)],
            ),
            (
                "unknown fields and retry are ignored",
                "retry: 10\nfoo: bar\ndata: x\n\n",
                vec![event(None, "x", None)],
            ),
            (
                "the last event id carries over to later events",
                "id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",
                vec![
                    event(None, "a", Some("7")),
                    event(None, "b", Some("7")),
                    event(None, "c", Some("")),
                ],
            ),
            (
                "an id containing NUL is ignored",
                "id: 1\ndata: a\n\nid: x\0y\ndata: b\n\n",
                vec![event(None, "a", Some("1")), event(None, "b", Some("1"))],
            ),
            (
                "a final event without a trailing blank line is dropped",
                "data: done\n\ndata: partial\n",
                vec![event(None, "done", None)],
            ),
            (
                "a leading byte order mark is skipped",
                "\u{FEFF}data: x\n\n",
                vec![event(None, "x", None)],
            ),
            (
                "colons after the first one belong to the value",
                "data: {\"a\":\"b:c\"}\n\n",
                vec![event(None, "{\"a\":\"b:c\"}", None)],
            ),
            (
                "the data line [DONE] is just data",
                "data: [DONE]\n\n",
                vec![event(None, "[DONE]", None)],
            ),
        ];
        for (message, input, expected) in cases {
            assert_eq!(&parse_all(&[input.as_bytes()]), expected, "{message}");
        }
    }

    #[test]
    fn events_split_at_every_possible_point_parse_the_same() {
        let cases: &[(&str, &str)] = &[
            (
                "CRLF split between CR and LF",
                "event: a\r\ndata: x\r\n\r\ndata: y\r\n\r\n",
            ),
            ("CR-only endings", "data: x\r\rdata: y\r\r"),
            (
                "a multi-byte character in the data",
                "data: caf\u{e9} \u{1F600} \u{65e5}\n\n",
            ),
            ("a comment then an event", ": ping\n\nevent: e\ndata: 1\n\n"),
        ];
        for (message, input) in cases {
            let expected = parse_all(&[input.as_bytes()]);
            assert!(!expected.is_empty(), "{message}: the case yields events");
            let bytes = input.as_bytes();
            for split in 0..=bytes.len() {
                let (head, tail) = bytes.split_at(split);
                assert_eq!(
                    parse_all(&[head, tail]),
                    expected,
                    "{message}, split at byte {split}"
                );
            }
        }
    }

    #[test]
    fn a_multi_byte_character_split_across_chunks_is_decoded_whole() {
        let input = "data: \u{1F600}\n\n".as_bytes();
        // The emoji is four bytes starting at offset 6: cut inside it.
        let events = parse_all(&[&input[..7], &input[7..9], &input[9..]]);
        assert_eq!(events, vec![event(None, "\u{1F600}", None)]);
    }

    #[test]
    fn invalid_utf8_is_replaced_rather_than_dropped() {
        let events = parse_all(&[b"data: a\xFFb\n\n"]);
        assert_eq!(events, vec![event(None, "a\u{FFFD}b", None)]);
    }

    #[test]
    fn a_real_anthropic_body_fed_one_byte_at_a_time_gives_every_event() {
        let body = include_str!("../../tests/providers/fixtures/anthropic_tool_use.sse");
        let whole = parse_all(&[body.as_bytes()]);
        let mut parser = SseParser::new();
        let mut byte_by_byte = Vec::new();
        for byte in body.as_bytes() {
            byte_by_byte.extend(parser.push(std::slice::from_ref(byte)));
        }
        assert_eq!(byte_by_byte, whole);
        assert_eq!(
            whole.first().and_then(|e| e.event.as_deref()),
            Some("message_start")
        );
        assert_eq!(
            whole.last().and_then(|e| e.event.as_deref()),
            Some("message_stop")
        );
        assert!(
            whole.iter().all(|e| {
                let event = e.event.as_deref().unwrap_or_default();
                serde_json::from_str::<Value>(&e.data)
                    .ok()
                    .and_then(|data| data["type"].as_str().map(|t| t == event))
                    .unwrap_or(false)
            }),
            "every event's name matches the type in its JSON data"
        );
    }

    #[test]
    fn a_real_openai_body_fed_one_byte_at_a_time_gives_every_chunk() {
        let body = include_str!("../../tests/providers/fixtures/openai_tool_calls.sse");
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        for byte in body.as_bytes() {
            events.extend(parser.push(std::slice::from_ref(byte)));
        }
        assert_eq!(events, parse_all(&[body.as_bytes()]));
        assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
        assert!(
            events[..events.len() - 1]
                .iter()
                .all(|e| e.event.is_none() && serde_json::from_str::<Value>(&e.data).is_ok()),
            "every chunk before [DONE] is unnamed JSON"
        );
    }

    #[test]
    fn buffered_bytes_grow_with_an_unfinished_event_and_drop_once_it_is_dispatched() {
        let mut parser = SseParser::new();
        assert!(parser.push(b"data: abc\ndata: de").is_empty());
        assert_eq!(parser.buffered_len(), "abc\n".len() + "data: de".len());
        assert_eq!(parser.push(b"\n\n").len(), 1);
        assert_eq!(parser.buffered_len(), 0);
    }
}
