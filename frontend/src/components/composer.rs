//! The message box under a chat: write, send, or stop the reply being
//! written.

use leptos::ev::{KeyboardEvent, SubmitEvent};
use leptos::prelude::*;

use crate::components::FormError;

/// A labelled textarea with Send, and Stop while a turn runs. Enter sends,
/// Shift+Enter starts a new line. The page decides what sending and stopping
/// do; this only collects the text and the clicks.
#[component]
pub fn Composer(
    /// The text being written.
    draft: RwSignal<String>,
    /// Whether Send may be pressed now (text present, nothing running).
    can_send: Signal<bool>,
    /// A message is on its way to the server.
    #[prop(into)]
    sending: Signal<bool>,
    /// A reply is being written: Stop is shown.
    running: Signal<bool>,
    /// Stop was pressed and the turn has not ended yet.
    stopping: Signal<bool>,
    /// What the running turn waits for from the user (an approval, an
    /// input request), in words; `None` while the model writes.
    #[prop(into)]
    waiting: Signal<Option<String>>,
    /// Why the last send or stop failed, shown above the box.
    #[prop(into)]
    error: Signal<Option<String>>,
    /// Send the draft.
    on_send: Callback<()>,
    /// Stop the running turn.
    on_stop: Callback<()>,
) -> impl IntoView {
    let on_submit = move |event: SubmitEvent| {
        event.prevent_default();
        on_send.run(());
    };
    // Enter pressed while a reply runs: said, not silently dropped. Cleared
    // when the turn ends.
    let nudged = RwSignal::new(false);
    Effect::new(move |_| {
        if !running.get() {
            nudged.set(false);
        }
    });
    let on_keydown = move |event: KeyboardEvent| {
        // Enter sends; Shift+Enter (and Enter while an input method is
        // composing a character) is an ordinary newline.
        if event.key() == "Enter" && !event.shift_key() && !event.is_composing() {
            event.prevent_default();
            if running.get_untracked() && !can_send.get_untracked() {
                nudged.set(true);
            }
            on_send.run(());
        }
    };

    view! {
        <form class="composer" on:submit=on_submit data-testid="composer">
            <FormError message=error testid="composer-error" />
            <label for="composer-input" class="visually-hidden">
                "Message"
            </label>
            <textarea
                id="composer-input"
                class="composer-input"
                data-testid="composer-input"
                name="message"
                rows="3"
                placeholder="Write a message…"
                aria-describedby="composer-hint"
                bind:value=draft
                on:keydown=on_keydown
            ></textarea>
            <div class="composer-bar">
                <p id="composer-hint" class="hint" class:nudge=move || nudged.get()
                    data-testid="composer-hint" role="status">
                    {move || {
                        if nudged.get() && running.get() {
                            "Not sent yet: a reply is still running. Stop it, or wait for it to finish, then press Enter again.".to_owned()
                        } else if let Some(waiting) = waiting.get().filter(|_| running.get()) {
                            waiting
                        } else if running.get() {
                            "A reply is being written. Stop it, or wait for it to finish, to send another message.".to_owned()
                        } else {
                            "Enter sends · Shift+Enter adds a new line".to_owned()
                        }
                    }}
                </p>
                <div class="composer-buttons">
                    <Show when=move || running.get()>
                        <button
                            type="button"
                            class="button danger"
                            data-testid="stop-turn"
                            aria-label=move || (!stopping.get()).then_some("Stop the reply")
                            disabled=move || stopping.get()
                            on:click=move |_| on_stop.run(())
                        >
                            {move || if stopping.get() { "Stopping…" } else { "Stop" }}
                        </button>
                    </Show>
                    <button
                        type="submit"
                        class="button primary"
                        data-testid="composer-send"
                        disabled=move || !can_send.get()
                    >
                        {move || if sending.get() { "Sending…" } else { "Send" }}
                    </button>
                </div>
            </div>
        </form>
    }
}
