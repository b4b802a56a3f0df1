//! A chat's live event stream: the browser's `EventSource` on
//! `GET /api/chats/{id}/stream` (URL from [`crate::api::chat_stream_url`]).
//!
//! It owns the wire format of the stream (DESIGN §7): every event's `id:` is
//! its sequence number in the chat and its `data:` one [`ChatEvent`] as JSON,
//! with no `event:` name, so everything arrives through `onmessage`. The
//! browser reconnects by itself after a dropped connection and sends
//! `Last-Event-ID`, which the server honours; this module only reports that
//! it happens. It deliberately does not deduplicate or interpret events:
//! the chat page does, by sequence number.

use std::fmt;
use std::rc::Rc;

use countersign_api::ChatEvent;
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;
use web_sys::{Event, EventSource, MessageEvent};

/// What the stream reports.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamItem {
    /// One event of the chat.
    Event {
        /// Its sequence number (`id:`), when the server sent a readable one.
        seq: Option<i64>,
        /// The event; types this build does not know are
        /// [`ChatEvent::Unknown`], and so is a `data:` it cannot read.
        /// (Boxed: an approval card's event is far larger than the rest.)
        event: Box<ChatEvent>,
    },
    /// The connection is (again) open.
    Open,
    /// The connection dropped; the browser is reconnecting by itself.
    Reconnecting,
    /// The browser gave up (e.g. the server answered 401 or 404): nothing
    /// more will arrive unless the stream is opened again.
    Closed,
}

/// An open stream. Dropping it closes the connection.
pub struct EventStream {
    source: EventSource,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(Event)>,
    _on_open: Closure<dyn FnMut(Event)>,
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("url", &self.source.url())
            .field("ready_state", &self.source.ready_state())
            .finish()
    }
}

impl EventStream {
    /// Opens `url` and calls `on_item` for everything that happens on it,
    /// until the returned value is dropped.
    pub fn open(url: &str, on_item: impl Fn(StreamItem) + 'static) -> Result<Self, String> {
        let source = EventSource::new(url)
            .map_err(|_| "This browser could not open the live connection.".to_owned())?;
        let on_item = Rc::new(on_item);

        let on_message = {
            let on_item = Rc::clone(&on_item);
            Closure::<dyn FnMut(MessageEvent)>::new(move |message: MessageEvent| {
                on_item(parse(&message));
            })
        };
        let on_error = {
            let on_item = Rc::clone(&on_item);
            let source = source.clone();
            Closure::<dyn FnMut(Event)>::new(move |_: Event| {
                on_item(if source.ready_state() == EventSource::CLOSED {
                    StreamItem::Closed
                } else {
                    StreamItem::Reconnecting
                });
            })
        };
        let on_open = Closure::<dyn FnMut(Event)>::new(move |_: Event| on_item(StreamItem::Open));

        source.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        Ok(Self {
            source,
            _on_message: on_message,
            _on_error: on_error,
            _on_open: on_open,
        })
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        // Detach first: the closures are freed with `self`, and a late event
        // must not call into freed memory.
        self.source.set_onmessage(None);
        self.source.set_onerror(None);
        self.source.set_onopen(None);
        self.source.close();
    }
}

fn parse(message: &MessageEvent) -> StreamItem {
    let seq = message.last_event_id().trim().parse::<i64>().ok();
    let event = message
        .data()
        .as_string()
        .and_then(|data| serde_json::from_str::<ChatEvent>(&data).ok())
        .unwrap_or(ChatEvent::Unknown);
    StreamItem::Event {
        seq,
        event: Box::new(event),
    }
}
