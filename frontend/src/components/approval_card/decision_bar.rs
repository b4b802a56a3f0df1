//! The card's decision bar: Allow once · Allow for this turn · Always
//! allow this tool · Decline · Decline and tell the assistant why.
//!
//! It leans safe (DESIGN §6.2): on a destructive or flagged card *Decline*
//! is the primary button and the allow choices sit behind one "Allow…"
//! control; on a risky card nothing is preselected; "Always allow" on a
//! risky tool asks once more. *Allow* waits while a long or flagged value
//! has not been shown in full, and says so.

use countersign_api::GrantKind;
use countersign_api::approvals::MAX_DECLINE_REASON_CHARS;
use leptos::html::{Button, Textarea};
use leptos::prelude::*;

use super::Card;
use super::edit_form::EditForm;
use super::rule_maker::RuleMaker;
use crate::model::approval::always_question;
use crate::model::transcript::{Decision, Grant};

/// Which button stands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Primary {
    /// *Allow once*: a declared-safe tool, nothing flagged.
    Allow,
    /// Nothing: a risky tool, nothing flagged — no button is the one to press.
    None,
    /// *Decline*: a destructive or flagged card; the allow choices are
    /// behind "Allow…".
    Decline,
}

fn primary(leans_safe: bool, risky: bool) -> Primary {
    if leans_safe {
        Primary::Decline
    } else if risky {
        Primary::None
    } else {
        Primary::Allow
    }
}

/// The line that says why *Allow* waits, while `unread` values must still
/// be read to their end.
fn read_wait_text(unread: usize) -> Option<String> {
    match unread {
        0 => None,
        1 => Some(
            "Allow waits until you have read the long value above to its end \
             (scroll its box, or \u{201c}Show all\u{201d})."
                .to_owned(),
        ),
        n => Some(format!(
            "Allow waits until you have read the {n} long values above to their end \
             (scroll each box, or \u{201c}Show all\u{201d})."
        )),
    }
}

/// The element ids of one card's bar.
struct Ids {
    wait: String,
    allow: String,
    turn: String,
    always: String,
    decline: String,
    menu: String,
    reason: String,
    reason_text: String,
    confirm: String,
    edit: String,
    edit_text: String,
}

impl Ids {
    fn new(approval_id: &str) -> Self {
        let id = |what: &str| format!("approval-{approval_id}-{what}");
        Self {
            wait: id("read-wait"),
            allow: id("allow-what"),
            turn: id("turn-what"),
            always: id("always-what"),
            decline: id("decline-what"),
            menu: id("allow-choices"),
            reason: id("reason"),
            reason_text: id("reason-text"),
            confirm: id("always-confirm"),
            edit: id("edit"),
            edit_text: id("edit-text"),
        }
    }
}

#[component]
pub(super) fn DecisionBar(card: Card, approval_id: String) -> impl IntoView {
    let buttons_enabled = card.flag(|s| s.buttons_enabled);
    let risky = move || card.risk.with(|r| r.risky);
    let layout = move || primary(card.leans_safe.get(), risky());
    let allow_enabled = move || buttons_enabled() && card.all_read();
    let offers = move |grant: GrantKind| {
        move || {
            card.approval.with(|a| {
                a.as_ref()
                    .is_some_and(|a| a.offered_grants.contains(&grant))
            })
        }
    };
    let connector = card.field(|a| a.connector_name.clone());
    let tool = card.field(|a| a.tool_name.clone());
    let decide = card.decide;

    // "Allow…" on a card that leans safe.
    let allow_open = RwSignal::new(false);
    let allow_shown = move || layout() != Primary::Decline || allow_open.get();
    let first_allow = NodeRef::<Button>::new();
    // "Always allow" on a risky tool asks once more, in place.
    let confirming_always = RwSignal::new(false);
    let confirm_yes = NodeRef::<Button>::new();
    // "Decline and tell the assistant why".
    let telling = RwSignal::new(false);
    let reason = RwSignal::new(String::new());
    let reason_box = NodeRef::<Textarea>::new();
    // "Edit before allowing": the arguments, the user's to change.
    let editing = RwSignal::new(false);
    let focus_after_render = |node: NodeRef<Button>| {
        request_animation_frame(move || {
            if let Some(el) = node.try_get_untracked().flatten() {
                let _ = el.focus();
            }
        });
    };
    Effect::new(move |_| {
        if confirming_always.get() {
            focus_after_render(confirm_yes);
        }
    });
    Effect::new(move |_| {
        if telling.get() {
            request_animation_frame(move || {
                if let Some(el) = reason_box.try_get_untracked().flatten() {
                    let _ = el.focus();
                }
            });
        }
    });

    let wait_text = move || card.unread.with(|u| read_wait_text(u.len()));
    // Read inside `<Show>`, which may render more than once.
    let ids = StoredValue::new(Ids::new(&approval_id));
    let described = move |own: fn(&Ids) -> &String| {
        move || {
            ids.with_value(|ids| {
                if card.all_read() {
                    own(ids).clone()
                } else {
                    format!("{} {}", own(ids), ids.wait)
                }
            })
        }
    };
    let id = move |own: fn(&Ids) -> &String| move || ids.with_value(|ids| own(ids).clone());

    let decline_button = move || {
        view! {
            <button
                type="button"
                class="button"
                class:primary=move || layout() == Primary::Decline
                class:secondary=move || layout() != Primary::Decline
                data-testid="approval-decline"
                aria-describedby=id(|ids| &ids.decline)
                disabled=move || !buttons_enabled()
                on:click=move |_| decide.run((Decision::Deny, None, None))
            >
                "Decline"
            </button>
        }
    };

    view! {
        <div class="approval-decide">
        // Sticky at the pane's bottom while the card scrolls past: the
        // line saying why Allow waits, the buttons, and "Always allow"'s
        // question. Kept short, so the evidence stays in sight above it.
        <div class="approval-decision" data-testid="approval-decision">
            {move || wait_text().map(|text| view! {
                <p class="approval-read-wait" id=id(|ids| &ids.wait) data-testid="approval-read-wait">
                    {text}
                </p>
            })}
            <div class="approval-actions">
                {move || (layout() == Primary::Decline).then(decline_button)}
                <Show when=move || layout() == Primary::Decline>
                    <button
                        type="button"
                        class="button secondary"
                        data-testid="approval-allow-menu"
                        aria-expanded=move || allow_open.get().to_string()
                        aria-controls=id(|ids| &ids.menu)
                        disabled=move || !buttons_enabled()
                        on:click=move |_| {
                            allow_open.update(|open| *open = !*open);
                            if allow_open.get_untracked() {
                                focus_after_render(first_allow);
                            }
                        }
                    >
                        "Allow\u{2026}"
                    </button>
                </Show>
                <div
                    class="approval-allow-choices"
                    id=id(|ids| &ids.menu)
                    role="group"
                    aria-label="Allow"
                    data-testid="approval-allow-choices"
                    hidden=move || !allow_shown()
                >
                    <button
                        type="button"
                        class="button"
                        class:primary=move || layout() == Primary::Allow
                        class:secondary=move || layout() != Primary::Allow
                        data-testid="approval-allow-once"
                        node_ref=first_allow
                        aria-describedby=described(|ids| &ids.allow)
                        disabled=move || !allow_enabled()
                        on:click=move |_| decide.run((Decision::Approve(Grant::Once), None, None))
                    >
                        "Allow once"
                    </button>
                    // Not offered for a tool that changed since it was
                    // reviewed: only this one call can be allowed.
                    <Show when=offers(GrantKind::Turn)>
                        <button
                            type="button"
                            class="button secondary"
                            data-testid="approval-allow-turn"
                            aria-describedby=described(|ids| &ids.turn)
                            disabled=move || !allow_enabled()
                            on:click=move |_| decide.run((Decision::Approve(Grant::Turn), None, None))
                        >
                            "Allow for this turn"
                        </button>
                    </Show>
                    <Show when=offers(GrantKind::Always)>
                        <button
                            type="button"
                            class="button secondary"
                            data-testid="approval-allow-always"
                            aria-describedby=described(|ids| &ids.always)
                            aria-expanded=move || risky().then(|| confirming_always.get().to_string())
                            disabled=move || !allow_enabled() || confirming_always.get()
                            on:click=move |_| {
                                if risky() {
                                    confirming_always.set(true);
                                } else {
                                    decide.run((Decision::Approve(Grant::Always), None, None));
                                }
                            }
                        >
                            "Always allow this tool"
                        </button>
                    </Show>
                </div>
                {move || (layout() != Primary::Decline).then(decline_button)}
                // What the buttons do, for assistive technology
                // (descriptions may point at hidden elements).
                <span id=id(|ids| &ids.allow) hidden>
                    {move || format!("Allow this one call to {} on {}", tool(), connector())}
                </span>
                <span id=id(|ids| &ids.turn) hidden>
                    {move || format!(
                        "Allow calls to {} on {} for the rest of this reply",
                        tool(),
                        connector(),
                    )}
                </span>
                <span id=id(|ids| &ids.always) hidden>
                    {move || format!(
                        "Always allow {} on {} until you revoke it or the tool changes",
                        tool(),
                        connector(),
                    )}
                </span>
                <span id=id(|ids| &ids.decline) hidden>
                    "Decline this call"
                </span>
            </div>
            <Show when=move || confirming_always.get() && allow_enabled()>
                <div
                    class="approval-confirm"
                    role="group"
                    aria-labelledby=id(|ids| &ids.confirm)
                    data-testid="approval-always-confirm"
                >
                    <p id=id(|ids| &ids.confirm)>
                        {move || card.risk.with(|r| always_question(&tool(), &connector(), r))}
                    </p>
                    <div class="approval-actions">
                        <button
                            type="button"
                            class="button danger"
                            data-testid="approval-always-confirm-yes"
                            node_ref=confirm_yes
                            on:click=move |_| {
                                confirming_always.set(false);
                                decide.run((Decision::Approve(Grant::Always), None, None));
                            }
                        >
                            "Yes, always allow"
                        </button>
                        <button
                            type="button"
                            class="button secondary"
                            data-testid="approval-always-confirm-cancel"
                            on:click=move |_| confirming_always.set(false)
                        >
                            "Cancel"
                        </button>
                    </div>
                </div>
            </Show>
        </div>
        // Below the bar, not in it: with a decline, the user's words.
        <button
            type="button"
            class="approval-why"
            data-testid="approval-decline-why"
            aria-expanded=move || telling.get().to_string()
            aria-controls=id(|ids| &ids.reason)
            disabled=move || !buttons_enabled()
            on:click=move |_| telling.update(|t| *t = !*t)
        >
            "Decline and tell the assistant why"
        </button>
        <button
            type="button"
            class="approval-why"
            data-testid="approval-edit"
            aria-expanded=move || editing.get().to_string()
            aria-controls=id(|ids| &ids.edit)
            disabled=move || !allow_enabled()
            on:click=move |_| editing.update(|e| *e = !*e)
        >
            "Edit before allowing"
        </button>
        <Show when=move || editing.get() && allow_enabled()>
            <EditForm card=card id=id(|ids| &ids.edit)() text_id=id(|ids| &ids.edit_text)() editing=editing />
        </Show>
        <Show when=move || telling.get() && buttons_enabled()>
            <form
                class="approval-reason"
                id=id(|ids| &ids.reason)
                data-testid="approval-reason-form"
                on:submit=move |ev| {
                    ev.prevent_default();
                    let text = reason.get_untracked().trim().to_owned();
                    if !text.is_empty() {
                        telling.set(false);
                        decide.run((Decision::Deny, Some(text), None));
                    }
                }
            >
                <label for=id(|ids| &ids.reason_text)>
                    "Why you decline (the assistant reads this; nothing runs)"
                </label>
                <textarea
                    id=id(|ids| &ids.reason_text)
                    rows="2"
                    maxlength=MAX_DECLINE_REASON_CHARS.to_string()
                    data-testid="approval-reason-text"
                    node_ref=reason_box
                    prop:value=move || reason.get()
                    on:input=move |ev| reason.set(event_target_value(&ev))
                ></textarea>
                <div class="approval-actions">
                    <button
                        type="submit"
                        class="button danger"
                        data-testid="approval-reason-send"
                        disabled=move || reason.with(|r| r.trim().is_empty())
                    >
                        "Decline and send"
                    </button>
                    <button
                        type="button"
                        class="button secondary"
                        on:click=move |_| telling.set(false)
                    >
                        "Cancel"
                    </button>
                </div>
            </form>
        </Show>
        <RuleMaker card=card approval_id=approval_id.clone() />
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_destructive_or_flagged_card_makes_decline_the_primary_button() {
        assert_eq!(primary(true, true), Primary::Decline);
        assert_eq!(
            primary(true, false),
            Primary::Decline,
            "flagged, though declared safe"
        );
        assert_eq!(
            primary(false, true),
            Primary::None,
            "risky: nothing preselected"
        );
        assert_eq!(primary(false, false), Primary::Allow);
    }

    #[test]
    fn the_bar_says_why_allow_waits_until_every_value_was_read() {
        assert_eq!(read_wait_text(0), None);
        assert!(read_wait_text(1).is_some_and(|t| t.contains("the long value above")));
        assert!(read_wait_text(2).is_some_and(|t| t.contains("the 2 long values")));
    }
}
