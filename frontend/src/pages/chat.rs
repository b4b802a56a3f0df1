//! `/chats/:id`: one chat — its transcript, streamed live, the composer, the
//! model picker, Stop, rename and delete.
//!
//! How a chat is shown (DESIGN §7): `GET /api/chats/{id}` gives the finished
//! messages and `resume_after`; the stream is opened after it, so it replays
//! the running turn (if any) and then follows later ones. A reload, a second
//! tab and a reconnect all go through the same path, and
//! [`Transcript::apply`] skips what was already applied. The turn runs on the
//! server: leaving the page does not stop it, only Stop does.

use countersign_api::ModelInfo;
use leptos::html::Div;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos::wasm_bindgen::JsCast as _;
use leptos_router::hooks::use_params_map;

use crate::api;
use crate::chats::ChatList;
use crate::components::{ChatHeader, Composer, ModelPicker, TurnView, last_error, set_page_title};
use crate::model::transcript::Transcript;
use crate::session::SessionState;
use crate::sse::{EventStream, StreamItem};

/// The app path of chat `id`.
pub fn chat_path(id: &str) -> String {
    format!("/chats/{id}")
}

/// The route: rebuilds [`ChatView`] (and so its stream) whenever the id in
/// the address changes.
#[component]
pub fn ChatPage() -> impl IntoView {
    let params = use_params_map();
    let chat_id = Memo::new(move |_| params.with(|p| p.get("id").unwrap_or_default()));
    move || {
        let chat_id = chat_id.get();
        view! { <ChatView chat_id=chat_id /> }
    }
}

/// Loading the chat.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Load {
    Loading,
    Failed(String),
    Ready,
}

/// The live connection, as the page tells the user about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Live {
    Connecting,
    Open,
    Reconnecting,
    Closed,
}

/// How many animation frames a waiting card is looked for before giving
/// up (about two seconds): the card's code comes in a chunk of its own,
/// fetched when a card is first shown.
const CARD_FRAMES: u32 = 120;

/// Scrolls the element `selector` names to the top of its pane (and
/// focuses it when `focus`) once it is on the page, looking again each
/// frame for `frames` more frames.
fn bring_into_view(selector: String, focus: bool, frames: u32) {
    request_animation_frame(move || {
        let found = document()
            .query_selector(&selector)
            .ok()
            .flatten()
            .and_then(|card| card.dyn_into::<leptos::web_sys::HtmlElement>().ok());
        match found {
            Some(card) => {
                card.scroll_into_view_with_bool(true);
                if focus {
                    let _ = card.focus();
                }
            }
            None if frames > 0 => bring_into_view(selector, focus, frames - 1),
            None => {}
        }
    });
}

/// Pixels from the bottom that still count as "at the bottom".
const BOTTOM_SLACK: i32 = 48;

#[component]
fn ChatView(chat_id: String) -> impl IntoView {
    let session = SessionState::expect();
    let chats = ChatList::expect();
    let chat_id = StoredValue::new(chat_id);

    let load = RwSignal::new(Load::Loading);
    let transcript = RwSignal::new(Transcript::default());
    let title = RwSignal::new(String::new());
    let model = RwSignal::new(String::new());
    let live = RwSignal::new(Live::Connecting);
    let stream = StoredValue::new_local(None::<EventStream>);
    let models = LocalResource::new(api::list_models);

    // Applies what the stream reports; a turn starting or ending changes the
    // chat list (title, order).
    let on_item = move |item: StreamItem| match item {
        StreamItem::Event { seq, event } => {
            live.set(Live::Open);
            let mut applied = None;
            transcript.update(|t| applied = Some(t.apply(seq, *event)));
            if applied.is_some_and(|a| a.turn_started || a.turn_finished) {
                chats.refresh();
            }
        }
        StreamItem::Open => live.set(Live::Open),
        StreamItem::Reconnecting => live.set(Live::Reconnecting),
        StreamItem::Closed => live.set(Live::Closed),
    };
    // (Re)opens the stream after the last applied event.
    let open_stream = move || {
        let Some(after) = transcript.try_with_untracked(|t| t.last_seq) else {
            return;
        };
        stream.set_value(None);
        live.set(Live::Connecting);
        let url = api::chat_stream_url(&chat_id.get_value(), after);
        match EventStream::open(&url, on_item) {
            Ok(opened) => stream.set_value(Some(opened)),
            Err(_) => live.set(Live::Closed),
        }
    };
    let load_chat = move || {
        load.set(Load::Loading);
        // Not a resource: loading is the first half of opening the stream —
        // fill the transcript, then open the stream after its last event,
        // once per load and in that order — and `load` says where that
        // stands; a resource would hold the detail but still need this
        // hand-off.
        spawn_local(async move {
            let Some(id) = chat_id.try_get_value() else {
                return;
            };
            match api::get_chat(&id).await {
                Ok(detail) => {
                    if load.is_disposed() {
                        return;
                    }
                    title.set(detail.title.clone());
                    model.set(detail.model.clone());
                    transcript.set(Transcript::from_detail(&detail));
                    load.set(Load::Ready);
                    open_stream();
                }
                Err(error) => _ = load.try_set(Load::Failed(error.detail)),
            }
        });
    };
    load_chat();

    // The title as the list knows it (it follows renames in other tabs and
    // the title the server gives the first message), else as loaded.
    let shown_title = Memo::new(move |_| {
        let listed = chats.title_of(&chat_id.get_value());
        let title = listed.unwrap_or_else(|| title.get());
        if title.trim().is_empty() {
            "New chat".to_owned()
        } else {
            title
        }
    });
    Effect::new(move |_| set_page_title(&shown_title.get()));

    let running = Memo::new(move |_| transcript.with(|t| t.running_turn().map(str::to_owned)));
    let offline = Memo::new(move |_| {
        let model = model.get();
        let listed: Option<ModelInfo> = models
            .get()
            .and_then(Result::ok)
            .and_then(|list| list.models.into_iter().find(|m| m.id == model));
        listed.map_or(model.starts_with("offline/"), |m| m.offline_demo)
    });

    // ---- Auto-scroll: follow the answer while the reader is at the bottom;
    // stop when they scroll up, start again when they come back down.
    let scroller = NodeRef::<Div>::new();
    let follow = RwSignal::new(true);
    // Where our own last scroll put the view. Growing content moves the
    // bottom away without any scrolling, so only a position *above* this
    // means the reader scrolled up.
    let auto_top = StoredValue::new(0);
    let scroll_to_bottom = move || {
        request_animation_frame(move || {
            // The reader may have scrolled up between the request and this
            // frame (scroll events run before animation frames): their
            // position wins. Seen as a flaky e2e run: a text delta landing
            // in the same frame as the scroll-up pulled the view back down.
            // The chat may be gone by this frame (another chat opened):
            // its signals are disposed then, and reading one would panic.
            if follow.try_get_untracked() != Some(true) {
                return;
            }
            if let Some(el) = scroller.try_get_untracked().flatten() {
                el.set_scroll_top(el.scroll_height());
                auto_top.try_set_value(el.scroll_top());
            }
        });
    };
    // The card waiting for the user, if any (see "never lost" below).
    let waiting_card = Memo::new(move |_| transcript.with(Transcript::waiting_card));
    Effect::new(move |_| {
        transcript.track();
        // While a card waits, it holds the view: nothing new streams in
        // (the turn waits too), and the bottom is not where to look.
        if follow.get_untracked() && waiting_card.with_untracked(Option::is_none) {
            scroll_to_bottom();
        }
    });
    let on_scroll = move |_| {
        let Some(el) = scroller.get_untracked() else {
            return;
        };
        let top = el.scroll_top();
        let at_bottom = el.scroll_height() - top - el.client_height() <= BOTTOM_SLACK;
        if at_bottom {
            if !follow.get_untracked() {
                follow.set(true);
            }
        } else if top < auto_top.get_value() - 2 && follow.get_untracked() {
            follow.set(false);
        }
    };
    let jump_to_latest = move |_| {
        follow.set(true);
        scroll_to_bottom();
    };

    // ---- A waiting card is never lost (DESIGN §9). Opening a chat (or a
    // card arriving) brings its waiting card into view, top first, and
    // stops following the bottom; a button just before the composer (one
    // Shift+Tab away) goes back to it. The list across chats follows.
    let waiting_list = crate::waiting::WaitingList::expect();
    let go_to_card = move |focus: bool| {
        let Some((selector, _)) = waiting_card.get_untracked() else {
            return;
        };
        follow.set(false);
        bring_into_view(selector, focus, CARD_FRAMES);
    };
    Effect::new(move |shown: Option<Option<String>>| {
        let now = waiting_card.with(|w| w.as_ref().map(|(selector, _)| selector.clone()));
        if shown.as_ref() != Some(&now) {
            waiting_list.refresh();
            if now.is_some() {
                go_to_card(false);
            }
        }
        now
    });

    // ---- Sending and stopping.
    // A chat just made by "New chat" (or the home page's "Try" button,
    // with its phrase): the keyboard goes to the composer, the phrase in
    // it, never sent by itself.
    let handed =
        crate::chats::StartDraft::get().and_then(|handed| handed.take(&chat_id.get_value()));
    let focus_composer = handed.is_some();
    let draft = RwSignal::new(handed.unwrap_or_default());
    if focus_composer {
        Effect::new(move |done: Option<bool>| {
            if done == Some(true) {
                return true;
            }
            let ready = load.with(|l| matches!(l, Load::Ready));
            if ready {
                request_animation_frame(|| {
                    crate::components::focus_by_id("composer-input");
                });
            }
            ready
        });
    }
    // The turn Stop was pressed for; it stays until that turn ends.
    let stopping = RwSignal::new(None::<String>);

    let send_message = Action::new_local(move |content: &String| {
        let content = content.clone();
        let token = session.csrf_token().unwrap_or_default();
        let id = chat_id.get_value();
        async move {
            match api::send_message(&token, &id, &content).await {
                Ok(accepted) => {
                    transcript.update(|t| t.accepted(&accepted.turn_id));
                    Ok(())
                }
                Err(error) => {
                    // Give the text back, unless the user already typed more.
                    draft.update(|d| {
                        if d.is_empty() {
                            *d = content;
                        }
                    });
                    Err(error.detail)
                }
            }
        }
    });
    let cancel_turn = Action::new_local(move |turn_id: &String| {
        let turn_id = turn_id.clone();
        let token = session.csrf_token().unwrap_or_default();
        let id = chat_id.get_value();
        async move {
            match api::cancel_turn(&token, &id, &turn_id).await {
                // The stream brings `turn_finished` (cancelled).
                Ok(()) => {}
                // Already over: the stream brings (or brought) how it ended.
                Err(error) if error.is_conflict() => {
                    transcript.update(|t| t.settled(&turn_id));
                }
                Err(error) => {
                    stopping.set(None);
                    return Err(error.detail);
                }
            }
            Ok(())
        }
    });
    let sending = send_message.pending();
    // One line for both: starting either clears the other's failure.
    let (send_error, stop_error) = (last_error(send_message), last_error(cancel_turn));
    let action_error = Signal::derive(move || send_error.get().or_else(|| stop_error.get()));

    let can_send = Signal::derive(move || {
        !sending.get() && running.get().is_none() && !draft.with(|d| d.trim().is_empty())
    });
    let send = Callback::new(move |()| {
        if !can_send.get_untracked() {
            return;
        }
        let content = draft.get_untracked().trim().to_owned();
        draft.set(String::new());
        follow.set(true);
        cancel_turn.clear();
        send_message.dispatch_local(content);
    });
    let stop = Callback::new(move |()| {
        let Some(turn_id) = running.get_untracked() else {
            return;
        };
        if stopping.get_untracked().as_deref() == Some(turn_id.as_str()) {
            return;
        }
        stopping.set(Some(turn_id.clone()));
        send_message.clear();
        cancel_turn.dispatch_local(turn_id);
    });
    let is_stopping = Signal::derive(move || {
        let running = running.get();
        running.is_some() && stopping.get() == running
    });

    let turn_count = Memo::new(move |_| transcript.with(|t| t.turns.len()));
    let model_signal = model;

    let body = move || {
        match load.get() {
        Load::Loading => view! {
            <p class="loading" role="status">
                "Loading the chat…"
            </p>
        }
        .into_any(),
        Load::Failed(message) => view! {
            <div class="page">
                <h1>"This chat could not be opened"</h1>
                <p class="form-error" role="alert" data-testid="chat-load-error">
                    {message}
                </p>
                <button type="button" class="button secondary" on:click=move |_| load_chat()>
                    "Try again"
                </button>
            </div>
        }
        .into_any(),
        Load::Ready => view! {
            <div class="chat-page" data-testid="chat-page">
                // Told to screen readers when a card starts waiting.
                <p class="visually-hidden" role="status" data-testid="card-announcer">
                    {move || transcript.with(Transcript::announcement)}
                </p>
                <ChatHeader chat_id=chat_id.get_value() title=shown_title on_renamed=move |t| title.set(t)>
                    <ModelPicker chat_id=chat_id.get_value() model=model_signal models=models />
                </ChatHeader>
                <div
                    class="transcript"
                    node_ref=scroller
                    on:scroll=on_scroll
                    data-testid="transcript"
                    tabindex="0"
                    role="region"
                    aria-label="Conversation"
                >
                    <Show when=move || offline.get()>
                        <p class="offline-notice">
                            <span class="offline-badge" data-testid="offline-badge">
                                "Offline demo, not AI"
                            </span>
                            " Replies come from a built-in script, so you can try Countersign without a language model. Pick another model above to chat with an AI."
                        </p>
                    </Show>
                    <Show when=move || turn_count.get() == 0>
                        <p class="transcript-empty muted" data-testid="transcript-empty">
                            "No messages yet. Write one below to start."
                        </p>
                    </Show>
                    <For each=move || 0..turn_count.get() key=|index| *index let:index>
                        <TurnView transcript=transcript index=index />
                    </For>
                </div>
                {move || waiting_card.get().map(|(_, words)| view! {
                    <div class="waiting-bar">
                        // Last before the composer: one Shift+Tab away.
                        <button
                            type="button"
                            class="button secondary go-to-waiting"
                            data-testid="go-to-waiting"
                            on:click=move |_| go_to_card(true)
                        >
                            {words}" \u{2191}"
                        </button>
                    </div>
                })}
                <Show when=move || !follow.get() && waiting_card.with(Option::is_none)>
                    <button
                        type="button"
                        class="button secondary jump-latest"
                        data-testid="scroll-latest"
                        on:click=jump_to_latest
                    >
                        "Jump to latest ↓"
                    </button>
                </Show>
                {move || match live.get() {
                    Live::Reconnecting => Some(
                        view! {
                            <p class="live-status muted" role="status" data-testid="stream-status">
                                "Connection lost. Reconnecting…"
                            </p>
                        }
                        .into_any(),
                    ),
                    Live::Closed => Some(
                        view! {
                            <div class="form-error live-error" role="alert" data-testid="stream-error">
                                <span>"Live updates stopped. Replies will not appear until you reconnect."</span>
                                <button
                                    type="button"
                                    class="button secondary small"
                                    data-testid="stream-reconnect"
                                    on:click=move |_| open_stream()
                                >
                                    "Reconnect"
                                </button>
                            </div>
                        }
                        .into_any(),
                    ),
                    Live::Connecting | Live::Open => None,
                }}
                <Composer
                    draft=draft
                    can_send=can_send
                    sending=sending
                    running=Signal::derive(move || running.get().is_some())
                    stopping=is_stopping
                    waiting=Signal::derive(move || transcript.with(Transcript::waiting_text))
                    error=action_error
                    on_send=send
                    on_stop=stop
                />
            </div>
        }
        .into_any(),
    }
    };

    view! { <div class="chat-route">{body}</div> }
}
