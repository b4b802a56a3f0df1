//! Reading a provider's `text/event-stream` body, for the two network
//! providers ([`super::anthropic`], [`super::openai`]).
//!
//! The parsing is `sse-stream`'s (WHATWG "event stream interpretation":
//! <https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation>;
//! chunk boundaries anywhere, CR / LF / CRLF, comments, a leading BOM,
//! unterminated final events dropped). What it owns on top:
//!
//! - `EventReader`: the thin adapter over `sse-stream`, kept only where the
//!   crate falls short of what we need from a model's stream:
//!   - **invalid UTF-8 is replaced, not fatal.** The crate ends the stream
//!     with an error at the first invalid byte in a field; the spec (and
//!     our tests) decode with U+FFFD, so one bad byte from a proxy does not
//!     cost the user the rest of the answer. Bytes pass through
//!     `Utf8Lossy` first (a character split across chunks waits for its
//!     other half).
//!   - **the dispatch rules of an `EventSource`.** The crate returns raw
//!     blocks: metadata-only blocks too, and ids that do not carry over.
//!     The reader drops blocks without data (forgetting their `event:`) and
//!     carries the last event id forward, as a browser does.
//!   - **a memory bound.** The crate buffers an event of any size; the reader
//!     gives up when more than `MAX_EVENT_BYTES` arrive without an event
//!     completing.
//!   - **an idle timeout** between two chunks, and errors in our words.
//! - the task that drives a provider's `Decoder` and feeds the
//!   [`LlmStream`] channel (`spawn`), stopping as soon as the receiver is
//!   dropped.
//!
//! It knows nothing of either provider's JSON (their modules) nor of HTTP
//! status codes and requests (`http.rs`).

use super::http::{malformed, network, seconds};
use super::{LlmError, LlmEvent, LlmStream};
use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt as _};
use reqwest::Response;
use sse_stream_v03::{Sse, SseByteStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
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

/// Most bytes we read without an event completing before giving up on a
/// stream (comments count: they are bytes we were made to read).
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

/// Reads a streaming response body event by event (see the module doc for
/// what it adds to `sse-stream`).
pub(crate) struct EventReader {
    provider: &'static str,
    blocks: BoxStream<'static, Result<Sse, sse_stream_v03::Error>>,
    /// Bytes received since the last block completed; the chunk source
    /// refuses to read on past [`MAX_EVENT_BYTES`].
    unfinished: Arc<AtomicUsize>,
    /// The last event id buffer.
    last_id: Option<String>,
}

impl std::fmt::Debug for EventReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventReader")
            .field("provider", &self.provider)
            .field("last_id", &self.last_id)
            .finish_non_exhaustive()
    }
}

impl EventReader {
    /// Reads `response`'s body; a silence longer than `idle_timeout` between
    /// two chunks is an error.
    pub(crate) fn new(provider: &'static str, response: Response, idle_timeout: Duration) -> Self {
        let chunks = stream::unfold(response, move |mut response| async move {
            let chunk = match tokio::time::timeout(idle_timeout, response.chunk()).await {
                Err(_elapsed) => Err(network(
                    provider,
                    format!("no data for {}", seconds(idle_timeout)),
                )),
                Ok(Err(error)) => {
                    tracing::debug!(provider, error = %error.without_url(), "stream read failed");
                    Err(network(provider, "the stream was interrupted"))
                }
                Ok(Ok(None)) => return None,
                Ok(Ok(Some(chunk))) => Ok(chunk),
            };
            Some((chunk, response))
        });
        Self::from_chunks(provider, chunks)
    }

    /// Reads the events of a body that arrives as `chunks`.
    fn from_chunks(
        provider: &'static str,
        chunks: impl futures_util::Stream<Item = Result<Bytes, LlmError>> + Send + 'static,
    ) -> Self {
        let unfinished = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&unfinished);
        let mut lossy = Utf8Lossy::default();
        let chunks = chunks.map(move |chunk| {
            // Checked before the next chunk is handed over: by then the
            // crate has returned every event the earlier ones completed.
            if counted.load(Ordering::Relaxed) > MAX_EVENT_BYTES {
                return Err(malformed(provider, "an event larger than 8 MiB"));
            }
            let chunk = chunk?;
            counted.fetch_add(chunk.len(), Ordering::Relaxed);
            Ok(lossy.push(chunk))
        });
        Self {
            provider,
            blocks: SseByteStream::new(chunks).boxed(),
            unfinished,
            last_id: None,
        }
    }

    /// The next event; `None` at the end of the body.
    pub(crate) async fn next(&mut self) -> Result<Option<SseEvent>, LlmError> {
        loop {
            let block = match self.blocks.next().await {
                None => return Ok(None),
                Some(Ok(block)) => block,
                Some(Err(sse_stream_v03::Error::Body(error))) => {
                    return Err(match error.downcast::<LlmError>() {
                        Ok(error) => *error,
                        Err(_) => network(self.provider, "the stream was interrupted"),
                    });
                }
                // Not reached: every byte went through `Utf8Lossy` and the
                // `strict-fields` feature is off.
                Some(Err(_)) => return Err(malformed(self.provider, "an unreadable event")),
            };
            self.unfinished.store(0, Ordering::Relaxed);
            if block.id.is_some() {
                self.last_id = block.id;
            }
            // As an EventSource dispatches: a block without data is no
            // event, and its `event:` is forgotten.
            if let Some(data) = block.data {
                return Ok(Some(SseEvent {
                    event: block.event,
                    data,
                    id: self.last_id.clone(),
                }));
            }
        }
    }
}

/// Replaces invalid UTF-8 with U+FFFD across chunk boundaries, as
/// `String::from_utf8_lossy` would over the whole body: an incomplete
/// character at the end of a chunk waits for the next one.
#[derive(Debug, Default)]
struct Utf8Lossy {
    /// The start of a character cut by the end of the last chunk.
    carry: Vec<u8>,
}

impl Utf8Lossy {
    fn push(&mut self, chunk: Bytes) -> Bytes {
        if self.carry.is_empty() && std::str::from_utf8(&chunk).is_ok() {
            return chunk; // The usual case: nothing to copy.
        }
        let mut bytes = std::mem::take(&mut self.carry);
        bytes.extend_from_slice(&chunk);
        let mut out = Vec::with_capacity(bytes.len());
        let mut rest = &bytes[..];
        while let Err(error) = std::str::from_utf8(rest) {
            let (valid, after) = rest.split_at(error.valid_up_to());
            out.extend_from_slice(valid);
            let Some(invalid) = error.error_len() else {
                self.carry = after.to_vec();
                return Bytes::from(out);
            };
            out.extend_from_slice("\u{FFFD}".as_bytes());
            rest = &after[invalid..];
        }
        out.extend_from_slice(rest);
        Bytes::from(out)
    }
}

/// The events of a whole body, for the providers' decoder tests.
#[cfg(test)]
pub(crate) fn events_of(body: &[u8]) -> Vec<SseEvent> {
    parse_chunks(std::iter::once(body))
}

/// The events of a body that arrives in these chunks (all in memory, so
/// reading never waits).
#[cfg(test)]
fn parse_chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<SseEvent> {
    use futures_util::FutureExt as _;
    let chunks: Vec<Result<Bytes, LlmError>> = chunks
        .into_iter()
        .map(|chunk| Ok(Bytes::copy_from_slice(chunk)))
        .collect();
    let mut reader = EventReader::from_chunks("test", stream::iter(chunks));
    let mut events = Vec::new();
    while let Some(event) = reader
        .next()
        .now_or_never()
        .expect("an in-memory body never waits")
        .expect("a readable body")
    {
        events.push(event);
    }
    events
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
        parse_chunks(chunks.iter().copied())
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
        let byte_by_byte = parse_chunks(body.as_bytes().chunks(1));
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
        let events = parse_chunks(body.as_bytes().chunks(1));
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
    fn an_event_over_8_mib_is_refused_and_the_bound_resets_with_every_event() {
        use futures_util::FutureExt as _;
        let read = |chunks: Vec<Bytes>| {
            let mut reader = EventReader::from_chunks(
                "P",
                stream::iter(chunks.into_iter().map(Ok::<_, LlmError>)),
            );
            let mut events = 0;
            loop {
                match reader.next().now_or_never().expect("in memory") {
                    Ok(Some(_)) => events += 1,
                    Ok(None) => return Ok(events),
                    Err(error) => return Err(error),
                }
            }
        };
        let mib = |n: usize| Bytes::from(vec![b'x'; n * 1024 * 1024]);
        let one_event = [vec![Bytes::from_static(b"data: ")], vec![mib(1); 9]].concat();
        assert_eq!(
            read(one_event),
            Err(malformed("P", "an event larger than 8 MiB")),
            "one 9 MiB event"
        );
        let event_of = |n| {
            vec![
                Bytes::from_static(b"data: "),
                mib(n),
                Bytes::from_static(b"\n\n"),
            ]
        };
        assert_eq!(
            read([event_of(5), event_of(5)].concat()),
            Ok(2),
            "two 5 MiB events in a row"
        );
    }
}
