//! A long string value of the arguments (DESIGN §6.2: never cut): the
//! whole JSON string in a scrollable box, its length, and its end in
//! sight under the box. A value that must be read (over 500 characters,
//! or flagged) counts as read once its end was on screen: scrolled to, or
//! the box opened in full with "Show all", or short enough to fit.

use countersign_api::characters::visible;
use leptos::html::Div;
use leptos::prelude::*;

use crate::model::approval::{ArgRun, LongValue};

/// How close to the bottom (in CSS pixels) counts as having reached it:
/// a fractional scroll position never quite reaches the height.
const END_SLACK_PX: i32 = 2;

/// Whether a box scrolled to `top`, showing `visible` of `total` pixels,
/// shows its end.
fn shows_end(top: i32, visible: i32, total: i32) -> bool {
    top + visible >= total - END_SLACK_PX
}

/// The words under the box: how long the value is and whether it still
/// holds *Allow*.
fn length_words(chars: usize, must_read: bool, read: bool) -> String {
    match (must_read, read) {
        (true, false) => format!("{chars} characters \u{b7} read to the end before you allow"),
        (true, true) => format!("{chars} characters \u{b7} read to the end"),
        (false, _) => format!("{chars} characters"),
    }
}

#[component]
pub(super) fn LongValueBox(
    value: LongValue,
    /// Called once, when the value has been shown in full.
    on_read: Callback<()>,
) -> impl IntoView {
    let open = RwSignal::new(false);
    let read = RwSignal::new(false);
    let mark_read = move || {
        if !read.get_untracked() {
            read.set(true);
            on_read.run(());
        }
    };
    let scroller = NodeRef::<Div>::new();
    let check = move || {
        if let Some(el) = scroller.get_untracked()
            && shows_end(el.scroll_top(), el.client_height(), el.scroll_height())
        {
            mark_read();
        }
    };
    // A value that fits its box is in full sight as soon as it is laid out.
    Effect::new(move |_| {
        if scroller.get().is_some() {
            request_animation_frame(check);
        }
    });
    let LongValue {
        runs,
        chars,
        end,
        must_read,
        what,
    } = value;
    let label = format!("The value of {what}, {chars} characters");
    let words = move || length_words(chars, must_read, read.get());
    view! {
        <div
            class="arg-long"
            data-testid="approval-long-value"
            data-must-read=must_read.to_string()
            data-read=move || read.get().to_string()
            data-open=move || open.get().to_string()
        >
            // Focusable, so the keyboard scrolls it (arrows, Page Down, End).
            <div
                class="arg-box"
                class:open=move || open.get()
                role="region"
                aria-label=label
                tabindex="0"
                node_ref=scroller
                data-testid="approval-long-box"
                on:scroll=move |_| check()
            >
                {runs.into_iter().map(run_view).collect_view()}
            </div>
            <div class="arg-long-facts">
                <span class="arg-end" data-testid="approval-long-end">
                    "Ends with "<code>{visible(&end)}</code>
                </span>
                <span class="arg-length" data-testid="approval-long-length">{words}</span>
                // The path for a screen reader: it reads the box, then
                // this, which shows it whole and counts it as read.
                <button
                    type="button"
                    class="arg-toggle"
                    data-testid="approval-long-toggle"
                    aria-expanded=move || open.get().to_string()
                    on:click=move |_| {
                        open.update(|o| *o = !*o);
                        mark_read();
                    }
                >
                    {move || if open.get() {
                        "Fold this value".to_owned()
                    } else {
                        format!("Show all {chars} characters")
                    }}
                </button>
            </div>
        </div>
    }
}

/// One run of a value's JSON text: marked where it was seen before.
pub(super) fn run_view(run: ArgRun) -> AnyView {
    match run.mark {
        Some(mark) => view! {
            <mark
                class="arg-seen"
                class:flow=mark.flow
                data-origin=mark.origin.as_str()
                data-testid="approval-seen"
                title=mark.label
            >
                {visible(&run.text)}
            </mark>
        }
        .into_any(),
        None => view! { <span>{visible(&run.text)}</span> }.into_any(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_counts_as_seen_within_a_fraction_of_a_pixel_only() {
        assert!(shows_end(0, 200, 200), "fits: seen at once");
        assert!(shows_end(799, 200, 1000), "a rounding short of the end");
        assert!(
            !shows_end(790, 200, 1000),
            "ten pixels short is not the end"
        );
        assert!(!shows_end(0, 200, 1000));
    }

    #[test]
    fn the_length_line_says_whether_the_value_still_holds_allow() {
        assert_eq!(
            length_words(3690, true, false),
            "3690 characters \u{b7} read to the end before you allow"
        );
        assert_eq!(
            length_words(3690, true, true),
            "3690 characters \u{b7} read to the end"
        );
        assert_eq!(length_words(200, false, false), "200 characters");
    }
}
