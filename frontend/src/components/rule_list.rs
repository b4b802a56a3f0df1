//! Rules with conditions (DESIGN §5 "Rules"), listed and revocable: the
//! user's own in Settings → Always allowed, the administrators' rules for
//! everyone on the Admin page. Each row is the rule in the server's words;
//! a short form adds one (a connector host, a tool or pattern, what it
//! does, and optionally the domains every destination must be in). Rules
//! made from a card's arguments come from the card itself.

use countersign_api::vocab::RuleEffect;
use countersign_api::{Rule, RuleRequest};
use leptos::prelude::*;

use crate::api;
use crate::clock::minutes_east_at;
use crate::components::{FormError, StepUp, last_error, submit_handler};
use crate::model::admin::list_from_text;
use crate::model::rule_draft::destinations_condition;
use crate::model::when::date_time_text;
use crate::session::SessionState;

/// The rules of one scope (`admin`: everyone's), with a form to add one.
#[component]
pub fn RuleList(
    /// The administrators' rules rather than the user's own.
    admin: bool,
) -> impl IntoView {
    let session = SessionState::expect();
    let step_up = StepUp::expect();
    let rules = LocalResource::new(move || api::rules(admin));
    let notice = RwSignal::new(None::<String>);
    let remove = Action::new_local(move |rule: &Rule| {
        let rule = rule.clone();
        let token = session.csrf_token().unwrap_or_default();
        async move {
            match step_up
                .run(|| api::delete_rule(&token, admin, &rule.id))
                .await
            {
                // Gone already is what the user wanted.
                Ok(()) => {}
                Err(failure) if failure.status == Some(404) => {}
                Err(failure) => return Err(failure.detail),
            }
            notice.set(Some(format!(
                "Deleted \u{201c}{}\u{201d}. It decides no call from now on.",
                rule.description
            )));
            rules.refetch();
            Ok(())
        }
    });
    let busy = remove.pending();
    let error = last_error(remove);
    let scope = if admin { "admin" } else { "user" };
    let heading_id = format!("rules-{scope}-heading");
    let labelled_by = heading_id.clone();
    let (heading, intro) = if admin {
        (
            "Rules for everyone",
            "They decide before anyone's own rules and grants: a deny rule refuses, an ask rule asks, an allow rule runs without a card. Flagged calls and changed tools always ask.",
        )
    } else {
        (
            "Rules with conditions",
            "Allow, ask or never run a tool's calls, optionally only when their arguments meet conditions. Your organisation's rules decide first; flagged calls and changed tools always ask.",
        )
    };
    view! {
        <section class="panel" data-testid=format!("rules-{scope}") aria-labelledby=labelled_by>
            <h2 id=heading_id>{heading}</h2>
            <p class="muted">{intro}</p>
            {move || notice.get().map(|text| view! {
                <p class="key-notice" role="status" data-testid="rule-list-notice">{text}</p>
            })}
            <FormError message=error testid="rule-list-error" />
            {move || match rules.get() {
                None => view! { <p class="muted">"Loading…"</p> }.into_any(),
                Some(Err(failure)) => view! {
                    <p class="form-error" role="alert">{failure.detail}</p>
                }
                .into_any(),
                Some(Ok(list)) if list.is_empty() => view! {
                    <p data-testid="rule-list-empty">"No rules yet."</p>
                }
                .into_any(),
                Some(Ok(list)) => view! {
                    <ul class="rules-list">
                        {list.into_iter().map(|rule| {
                            let since = date_time_text(&rule.created_at, minutes_east_at);
                            let by = rule.created_by.clone().map(|by| format!(" by {by}"));
                            let suspended = rule.suspended_by_policy;
                            let label = format!("Delete the rule: {}", rule.description);
                            let for_button = rule.clone();
                            view! {
                                <li class="rule" data-testid="rule-list-row" data-effect=rule.effect.as_str()
                                    data-suspended=suspended.to_string()>
                                    <span class="rule-what">{rule.description.clone()}</span>
                                    <span class="muted rule-since">
                                        {format!("since {since}")}
                                        {by}
                                        {suspended.then_some(
                                            " · suspended: your administrator turned off \u{201c}Always allow\u{201d}",
                                        )}
                                    </span>
                                    <button type="button" class="button secondary small" data-testid="rule-list-delete"
                                        aria-label=label disabled=move || busy.get()
                                        on:click=move |_| {
                                            if !busy.get_untracked() {
                                                notice.set(None);
                                                remove.dispatch_local(for_button.clone());
                                            }
                                        }>
                                        "Delete"
                                    </button>
                                </li>
                            }
                        }).collect_view()}
                    </ul>
                }
                .into_any(),
            }}
            <AddRule admin=admin on_added=move |description: String| {
                notice.set(Some(format!("Saved \u{201c}{description}\u{201d}. It decides from the next call.")));
                rules.refetch();
            } />
        </section>
    }
}

/// The form that adds a rule without conditions on arguments.
#[component]
fn AddRule(admin: bool, on_added: impl Fn(String) + Copy + Send + Sync + 'static) -> impl IntoView {
    let session = SessionState::expect();
    let step_up = StepUp::expect();
    let host = RwSignal::new(String::new());
    let tool = RwSignal::new(String::new());
    let effect = RwSignal::new(RuleEffect::Allow);
    let within = RwSignal::new(String::new());
    let add = Action::new_local(move |body: &RuleRequest| {
        let body = body.clone();
        let token = session.csrf_token().unwrap_or_default();
        async move {
            let rule = step_up
                .run(|| api::create_rule(&token, admin, &body))
                .await
                .map_err(|failure| failure.detail)?;
            host.set(String::new());
            tool.set(String::new());
            within.set(String::new());
            on_added(rule.description);
            Ok(())
        }
    });
    let pending = add.pending();
    let error = last_error(add);
    let on_submit = submit_handler(add, move || {
        let domains = list_from_text(&within.get_untracked().replace(',', "\n"));
        Some(RuleRequest {
            connector_host: host.get_untracked(),
            tool: tool.get_untracked(),
            conditions: if domains.is_empty() {
                Vec::new()
            } else {
                vec![destinations_condition(&domains)]
            },
            effect: effect.get_untracked(),
        })
    });
    let scope = if admin { "admin" } else { "user" };
    let id = move |what: &str| format!("rule-{scope}-{what}");
    view! {
        <form class="policy-form rule-add" on:submit=on_submit data-testid=format!("rule-add-{scope}")>
            <h3>"Add a rule"</h3>
            <div class="field">
                <label for=id("host")>"Connector host"</label>
                <input id=id("host") type="text" required spellcheck="false" data-testid="rule-add-host"
                    aria-describedby=id("host-hint")
                    prop:value=move || host.get() on:input=move |ev| host.set(event_target_value(&ev)) />
                <p id=id("host-hint") class="hint">"mail.example.com, *.example.com for its subdomains, or * for every connector."</p>
            </div>
            <div class="field">
                <label for=id("tool")>"Tool"</label>
                <input id=id("tool") type="text" required spellcheck="false" data-testid="rule-add-tool"
                    aria-describedby=id("tool-hint")
                    prop:value=move || tool.get() on:input=move |ev| tool.set(event_target_value(&ev)) />
                <p id=id("tool-hint") class="hint">"Its name, or a pattern: search_*, or * for every tool."</p>
            </div>
            <div class="field">
                <label for=id("effect")>"What it does"</label>
                <select id=id("effect") data-testid="rule-add-effect"
                    on:change=move |ev| effect.set(RuleEffect::from_wire(&event_target_value(&ev)))>
                    <option value="allow" selected=move || effect.get() == RuleEffect::Allow>"Allow without a card"</option>
                    <option value="ask" selected=move || effect.get() == RuleEffect::Ask>"Always ask"</option>
                    <option value="deny" selected=move || effect.get() == RuleEffect::Deny>"Never run"</option>
                </select>
            </div>
            <div class="field">
                <label for=id("within")>"Only for destinations in (optional)"</label>
                <input id=id("within") type="text" spellcheck="false" data-testid="rule-add-within"
                    aria-describedby=id("within-hint")
                    prop:value=move || within.get() on:input=move |ev| within.set(event_target_value(&ev)) />
                <p id=id("within-hint") class="hint">"Domains, hosts or addresses, separated by commas: firm.example, docs.firm.example. An allow rule needs every destination of a call in the list; an ask or deny rule, any one."</p>
            </div>
            <FormError message=error testid="rule-add-error" />
            <button type="submit" class="button primary" data-testid="rule-add-save" disabled=move || pending.get()>
                {move || if pending.get() { "Saving…" } else { "Add the rule" }}
            </button>
        </form>
    }
}
