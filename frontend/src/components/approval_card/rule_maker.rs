//! "Make a rule for calls like this" (DESIGN §5 "Rules"): under a waiting
//! card, a rule for the card's tool drafted from its own arguments
//! ("Always allow when `to` ends with @firm.example"). The server checks
//! it (an allow rule after a two-factor step-up) and writes its
//! description, which the form shows once saved; the rule decides the
//! next calls it matches. This card still waits for its own decision, and
//! a flagged or changed call asks whatever a rule says.

use countersign_api::vocab::ConditionOp;
use countersign_api::{RuleCondition, RuleEffect};
use leptos::prelude::*;
use leptos::task::spawn_local;

use super::Card;
use crate::api;
use crate::components::StepUp;
use crate::model::rule_draft::{
    Kind, condition, destination_domains, destinations_condition, offers, op_words, request,
};
use crate::session::SessionState;

/// One argument's condition as the user sets it.
#[derive(Clone, Copy)]
struct Row {
    argument: StoredValue<String>,
    kind: Kind,
    on: RwSignal<bool>,
    op: RwSignal<ConditionOp>,
    value: RwSignal<String>,
}

#[component]
pub(super) fn RuleMaker(card: Card, approval_id: String) -> impl IntoView {
    let session = SessionState::expect();
    let step_up = StepUp::expect();
    let open = RwSignal::new(false);
    let effect = RwSignal::new(RuleEffect::Allow);
    let problem = RwSignal::new(None::<String>);
    let saving = RwSignal::new(false);
    let saved = RwSignal::new(None::<String>);

    // Drafted once, from the arguments the card shows.
    let (rows, domains) = card.approval.with_untracked(|a| {
        a.as_deref().map_or_else(Default::default, |a| {
            let rows: Vec<Row> = offers(&a.arguments)
                .into_iter()
                .map(|offer| Row {
                    argument: StoredValue::new(offer.argument),
                    kind: offer.kind,
                    // An address's domain is the condition a careful user
                    // most often wants: it starts ticked.
                    on: RwSignal::new(offer.op == ConditionOp::EndsWith),
                    op: RwSignal::new(offer.op),
                    value: RwSignal::new(offer.value),
                })
                .collect();
            (rows, destination_domains(&a.destinations))
        })
    });
    let rows = StoredValue::new(rows);
    let within = RwSignal::new(false);
    let domains_text = RwSignal::new(domains.join(", "));
    let has_domains = !domains.is_empty();
    let base = StoredValue::new(format!("approval-{approval_id}-rule-"));
    let id = move |what: &str| format!("{}{what}", base.get_value());
    let form_id = id("form");

    let save = move || {
        let Some(card_now) = card.approval.get_untracked() else {
            return;
        };
        let mut conditions: Vec<RuleCondition> = Vec::new();
        for row in rows.get_value() {
            if !row.on.get_untracked() {
                continue;
            }
            let argument = row.argument.get_value();
            match condition(
                &argument,
                row.kind,
                row.op.get_untracked(),
                &row.value.get_untracked(),
            ) {
                Ok(c) => conditions.push(c),
                Err(text) => return problem.set(Some(text)),
            }
        }
        if within.get_untracked() {
            let list: Vec<String> = domains_text
                .get_untracked()
                .split(',')
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(str::to_owned)
                .collect();
            if list.is_empty() {
                return problem.set(Some("Name at least one domain or host.".into()));
            }
            conditions.push(destinations_condition(&list));
        }
        let body = request(
            &card_now.destination,
            &card_now.tool_name,
            effect.get_untracked(),
            conditions,
        );
        problem.set(None);
        saving.set(true);
        let token = session.csrf_token().unwrap_or_default();
        spawn_local(async move {
            let made = step_up.run(|| api::create_rule(&token, false, &body)).await;
            saving.set(false);
            match made {
                Ok(rule) => {
                    saved.set(Some(rule.description));
                    open.set(false);
                }
                Err(failure) => problem.set(Some(failure.detail)),
            }
        });
    };

    let effect_choice = move |value: RuleEffect, label: &'static str| {
        view! {
            <label class="rule-effect">
                <input
                    type="radio"
                    name=id("effect")
                    prop:checked=move || effect.get() == value
                    on:change=move |_| effect.set(value)
                    data-testid=format!("rule-maker-{}", value.as_str())
                />
                {label}
            </label>
        }
    };

    view! {
        <button
            type="button"
            class="approval-why"
            data-testid="approval-make-rule"
            aria-expanded=move || open.get().to_string()
            aria-controls=form_id.clone()
            on:click=move |_| {
                saved.set(None);
                open.update(|o| *o = !*o);
            }
        >
            "Make a rule for calls like this"
        </button>
        {move || saved.get().map(|description| view! {
            <p class="key-notice" role="status" data-testid="rule-maker-saved">
                "Saved: \u{201c}"{description}"\u{201d}. It decides the next calls it matches; this one still waits for you."
            </p>
        })}
        <Show when=move || open.get()>
            <form
                class="approval-reason rule-maker"
                id=form_id.clone()
                data-testid="rule-maker"
                on:submit=move |ev| {
                    ev.prevent_default();
                    if !saving.get_untracked() {
                        save();
                    }
                }
            >
                <fieldset>
                    <legend>{move || card.field(|a| format!("Calls to {} on {}", a.tool_name, a.connector_name))()}</legend>
                    {effect_choice(RuleEffect::Allow, "Always allow (no card)")}
                    {effect_choice(RuleEffect::Ask, "Always ask")}
                    {effect_choice(RuleEffect::Deny, "Never run")}
                </fieldset>
                <fieldset>
                    <legend>"Only when (nothing ticked: every call of the tool)"</legend>
                    {rows.get_value().into_iter().map(|row| {
                        let name = row.argument.get_value();
                        let tick = id(&format!("on-{name}"));
                        view! {
                            <div class="rule-condition" data-testid="rule-maker-condition" data-argument=name.clone()>
                                <input type="checkbox" id=tick.clone()
                                    prop:checked=move || row.on.get()
                                    on:change=move |ev| row.on.set(event_target_checked(&ev)) />
                                <label for=tick><code>{name.clone()}</code></label>
                                <select
                                    aria-label=format!("How {name} is tested")
                                    on:change=move |ev| {
                                        row.op.set(ConditionOp::from_wire(&event_target_value(&ev)));
                                    }
                                >
                                    {row.kind.ops().iter().map(|op| {
                                        let op = *op;
                                        view! {
                                            <option value=op.as_str() selected=move || row.op.get() == op>
                                                {op_words(op)}
                                            </option>
                                        }
                                    }).collect_view()}
                                </select>
                                <input
                                    type="text"
                                    aria-label=format!("What {name} is tested against")
                                    prop:value=move || row.value.get()
                                    on:input=move |ev| row.value.set(event_target_value(&ev))
                                />
                            </div>
                        }
                    }).collect_view()}
                    {has_domains.then(|| {
                        let tick = id("within");
                        view! {
                            <div class="rule-condition" data-testid="rule-maker-within">
                                <input type="checkbox" id=tick.clone()
                                    prop:checked=move || within.get()
                                    on:change=move |ev| within.set(event_target_checked(&ev)) />
                                <label for=tick>"every destination is in"</label>
                                <input
                                    type="text"
                                    aria-label="Domains and hosts, separated by commas"
                                    prop:value=move || domains_text.get()
                                    on:input=move |ev| domains_text.set(event_target_value(&ev))
                                />
                            </div>
                        }
                    })}
                </fieldset>
                <p class="muted">"A flagged call, or a tool that changed since you reviewed it, still asks."</p>
                {move || problem.get().map(|text| view! {
                    <p class="form-error" role="alert" data-testid="rule-maker-error">{text}</p>
                })}
                <div class="approval-actions">
                    <button type="submit" class="button" data-testid="rule-maker-save" disabled=move || saving.get()>
                        {move || if saving.get() { "Saving\u{2026}" } else { "Save the rule" }}
                    </button>
                    <button type="button" class="button secondary" on:click=move |_| open.set(false)>
                        "Cancel"
                    </button>
                </div>
            </form>
        </Show>
    }
}
