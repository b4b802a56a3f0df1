//! `/approvals`: "Approvals for you" (issue 46 item 4). Calls that the
//! organisation's policy gives a second approver, each already allowed by
//! the person who asked: the card — what runs, in full, where it sends
//! data, what provenance flagged, who asked — and *Allow* or *Decline*.
//! Never the rest of their chat. Home shows the same list in short.
//!
//! The list is read again every few seconds while the page is open: a
//! call waits at most its card's deadline, which is the requester's.

use countersign_api::{Decision, SecondApproval, SecondDecideRequest};
use leptos::prelude::*;
use leptos_router::components::A;
use std::time::Duration;

use crate::api;
use crate::clock::minutes_east_at;
use crate::components::{StepUp, set_page_title};
use crate::model::when::date_time_text;
use crate::session::SessionState;

/// How often an open list is read again.
const REFRESH: Duration = Duration::from_secs(5);

/// The approver's inbox, read now and every [`REFRESH`]: `None` while the
/// first read runs (or after a failed one: the next tick tries again),
/// `Some(None)` for someone who is no approver.
fn inbox() -> Signal<Option<Option<Vec<SecondApproval>>>> {
    let tick = RwSignal::new(0_u32);
    let list = LocalResource::new(move || {
        tick.track();
        api::approvals_inbox()
    });
    let handle = set_interval_with_handle(move || tick.update(|t| *t += 1), REFRESH).ok();
    on_cleanup(move || {
        if let Some(handle) = handle {
            handle.clear();
        }
    });
    Signal::derive(move || match list.get()? {
        Ok(items) => Some(Some(items)),
        Err(err) if err.status == Some(403) => Some(None),
        Err(_) => None,
    })
}

/// The page. A card stays in place while the server keeps listing it
/// (keyed by id), so a read of the list every few seconds neither redraws
/// a card nor takes the focus from its buttons; a card decided here keeps
/// its outcome until the server no longer lists it.
#[component]
pub fn ApprovalsPage() -> impl IntoView {
    set_page_title("Approvals for you");
    let items = inbox();
    // The last answer, kept while the next read runs.
    let latest = Memo::new(move |prev: Option<&Option<Option<Vec<SecondApproval>>>>| {
        items.get().or_else(|| prev.cloned().flatten())
    });
    // Which of the four views: it changes only when the view must.
    let shown = Memo::new(move |_| {
        latest.with(|l| match l {
            None => 0_u8,
            Some(None) => 1,
            Some(Some(list)) if list.is_empty() => 2,
            Some(Some(_)) => 3,
        })
    });
    let list = Memo::new(move |_| latest.get().flatten().unwrap_or_default());
    // What was decided here, by id: a card drawn again keeps its outcome.
    let outcomes = RwSignal::new(Vec::<(String, &'static str)>::new());
    view! {
        <div class="page approvals">
            <h1>"Approvals for you"</h1>
            <p class="lead">
                "Your organisation asks for a second approval on these calls. The person named allowed each one; it runs only if you allow it too, before it expires."
            </p>
            {move || match shown.get() {
                0 => view! { <p class="muted">"Loading…"</p> }.into_any(),
                1 => view! {
                    <p data-testid="approvals-not-approver">"Only administrators and approvers give second approvals."</p>
                }.into_any(),
                2 => view! {
                    <p class="muted" data-testid="approvals-empty">"Nothing waits for your approval."</p>
                }.into_any(),
                _ => view! {
                    <ul class="connector-list">
                        <For each=move || list.get() key=|item| item.id.clone() let:item>
                            <li><SecondCard item=item outcomes=outcomes /></li>
                        </For>
                    </ul>
                }.into_any(),
            }}
        </div>
    }
}

/// Home's short list: who asks for what, linking the page (nothing for
/// someone who is no approver, or while nothing waits).
#[component]
pub fn ApprovalsForYou() -> impl IntoView {
    let items = inbox();
    move || {
        let list = items.get().flatten().unwrap_or_default();
        (!list.is_empty()).then(|| view! {
            <section class="panel waiting-panel" data-testid="approvals-for-you" aria-labelledby="approvals-heading">
                <h2 id="approvals-heading">"Approvals for you"</h2>
                <ul class="waiting-items">
                    {list.into_iter().map(|item| view! {
                        <li data-testid="approvals-item">
                            <A href="/approvals">{format!("{}: {}", item.connector_name, item.tool_name)}</A>
                            <span class="muted">{format!(" asked by {}", item.requester_email)}</span>
                        </li>
                    }).collect_view()}
                </ul>
            </section>
        })
    }
}

/// One call waiting for the approver.
#[component]
fn SecondCard(
    item: SecondApproval,
    /// The page's outcomes by id: this card's, once decided here.
    outcomes: RwSignal<Vec<(String, &'static str)>>,
) -> impl IntoView {
    let session = SessionState::expect();
    let step_up = StepUp::expect();
    let problem = RwSignal::new(None::<String>);
    let own_id = item.id.clone();
    // Decided here before the list was drawn again: its outcome stays.
    let done = RwSignal::new(outcomes.with_untracked(|o| {
        o.iter()
            .find(|(id, _)| *id == own_id)
            .map(|(_, text)| *text)
    }));
    let busy = RwSignal::new(false);
    let call = StoredValue::new((item.id.clone(), item.arguments_digest.clone()));
    let decide = move |approve: bool| {
        if busy.get_untracked() {
            return;
        }
        busy.set(true);
        problem.set(None);
        let (id, digest) = call.get_value();
        let token = session.csrf_token().unwrap_or_default();
        leptos::task::spawn_local(async move {
            let body = SecondDecideRequest {
                decision: if approve {
                    Decision::Approve
                } else {
                    Decision::Deny
                },
                arguments_digest: digest,
                reason: None,
            };
            match step_up.run(|| api::decide_second(&token, &id, &body)).await {
                Ok(_) => {
                    let text = if approve {
                        "Allowed: it runs now."
                    } else {
                        "Declined: nothing runs."
                    };
                    outcomes.update(|o| o.push((id.clone(), text)));
                    done.set(Some(text));
                }
                Err(err) => {
                    problem.set(Some(match err.status {
                        Some(404) => "Already decided, or no longer waiting.".to_owned(),
                        Some(410) => "It expired before you decided; nothing ran.".to_owned(),
                        Some(409) => "It changed since this page read it; nothing was decided. It is shown again in a moment.".to_owned(),
                        _ => err.detail,
                    }));
                    busy.set(false);
                }
            }
        });
    };
    let flows: Vec<String> = item
        .provenance
        .as_ref()
        .map(|p| p.flows.iter().map(|f| f.text.clone()).collect())
        .unwrap_or_default();
    let follows = item
        .provenance
        .as_ref()
        .is_some_and(|p| !p.instructions_in.is_empty());
    let flagged = !flows.is_empty() || follows || !item.character_warnings.is_empty();
    let sends_to: Vec<String> = item
        .destinations
        .iter()
        .map(|d| match &d.unicode {
            Some(shown) if *shown != d.ascii => format!("{} ({shown})", d.ascii),
            _ => d.ascii.clone(),
        })
        .collect();
    let asked_at = date_time_text(&item.requester_approved_at, minutes_east_at);
    let expires = date_time_text(&item.expires_at, minutes_east_at);
    let heading_id = format!("second-{}", item.id);
    let decline_class = if flagged {
        "button primary"
    } else {
        "button secondary"
    };
    let allow_class = if flagged {
        "button secondary"
    } else {
        "button primary"
    };
    view! {
        <article class="panel waiting-panel second-card" data-testid="second-approval" data-flagged=flagged.to_string()
            aria-labelledby=heading_id.clone()>
            <h2 id=heading_id.clone()>{format!("{} wants {}: {} to run", item.requester_email, item.connector_name, item.tool_name)}</h2>
            <p class="muted">{format!("They allowed it on {asked_at}. It expires on {expires}.")}</p>
            <p>{format!("Why it asks: {}.", item.reason)}</p>
            <p data-testid="second-sends-to">
                <strong>"Sends to: "</strong>
                {if sends_to.is_empty() { "no address named in its arguments".to_owned() } else { sends_to.join(", ") }}
                {format!(" (via {})", item.destination)}
            </p>
            {(!flows.is_empty() || follows).then(|| view! {
                <ul class="input-warnings" data-testid="second-flags">
                    {flows.into_iter().map(|f| view! { <li class="warning">{f}</li> }).collect_view()}
                    {follows.then(|| view! {
                        <li class="warning">"The reply that proposed it read text that gives the assistant instructions: it may be following them."</li>
                    })}
                </ul>
            })}
            <div class="markdown">
                <pre class="second-arguments" data-testid="second-arguments">{item.arguments_json.clone()}</pre>
            </div>
            {move || match done.get() {
                Some(text) => view! { <p role="status" data-testid="second-done">{text}</p> }.into_any(),
                None => view! {
                    <div class="confirm-buttons">
                        <button type="button" class=decline_class data-testid="second-decline"
                            disabled=move || busy.get() on:click=move |_| decide(false)>"Decline"</button>
                        <button type="button" class=allow_class data-testid="second-allow"
                            disabled=move || busy.get() on:click=move |_| decide(true)>"Allow"</button>
                    </div>
                }.into_any(),
            }}
            {move || problem.get().map(|p| view! { <p class="form-error" role="alert" data-testid="second-problem">{p}</p> })}
        </article>
    }
}
