//! The card's countdown, by the server's clock: this clock plus the offset
//! learnt from `GET /api/mcp-pending-calls` (zero until then), to
//! `decide_by` — the moment the turn stops waiting.

use std::time::Duration;

use leptos::prelude::*;
use leptos::web_sys::js_sys::Date;

use crate::api;
use crate::model::approval::{clock_offset_ms, countdown_text, remaining_secs};
use crate::model::transcript::Approval;

/// Seconds left to decide on the card `approval_id` (`None` once there is
/// nothing to count), ticking once a second while the card is open.
pub(super) fn use_remaining(
    approval: Memo<Option<Box<Approval>>>,
    approval_id: &str,
) -> Memo<Option<i64>> {
    let now = RwSignal::new(Date::now());
    let open_at_start = approval.with_untracked(waits);
    let offset = if open_at_start {
        let id = approval_id.to_owned();
        let skew = LocalResource::new(move || {
            let id = id.clone();
            async move {
                let before = Date::now();
                let pending = api::pending_calls().await.ok()?;
                let local_now = (before + Date::now()) / 2.0;
                let found = pending.iter().find(|p| p.id == id)?;
                clock_offset_ms(&found.expires_at, found.expires_in_secs, local_now)
            }
        });
        Signal::derive(move || skew.get().flatten().unwrap_or(0.0))
    } else {
        Signal::stored(0.0)
    };
    if open_at_start
        && let Ok(ticker) =
            set_interval_with_handle(move || _ = now.try_set(Date::now()), Duration::from_secs(1))
    {
        Effect::new(move |_| {
            if !approval.with(waits) {
                ticker.clear();
            }
        });
        on_cleanup(move || ticker.clear());
    }
    Memo::new(move |_| {
        let at = now.get() + offset.get();
        // The turn stops waiting at `decide_by`: counting to the later
        // expiry would show time that is not there.
        approval.with(|a| a.as_ref().and_then(|a| remaining_secs(a.deadline(), at)))
    })
}

/// Whether the card still waits for a decision, so its clock ticks.
fn waits(approval: &Option<Box<Approval>>) -> bool {
    approval.as_ref().is_some_and(|a| !a.state.is_final())
}

/// "Decide within 1:23".
#[component]
pub(super) fn Countdown(remaining: Memo<Option<i64>>) -> impl IntoView {
    view! {
        <p class="approval-countdown" role="timer" data-testid="approval-countdown">
            {move || remaining.get().map(countdown_text)}
        </p>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::transcript::ApprovalState;

    #[test]
    fn the_clock_ticks_only_while_a_decision_is_awaited() {
        assert!(!waits(&None), "no card, no clock");
        let mut approval = Box::new(Approval::for_tests("a1"));
        assert!(waits(&Some(approval.clone())));
        approval.state = ApprovalState::Declining;
        assert!(waits(&Some(approval.clone())), "the answer may still be no");
        approval.state = ApprovalState::Denied;
        assert!(!waits(&Some(approval)));
    }
}
