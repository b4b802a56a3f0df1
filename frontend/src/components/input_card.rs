//! The input card (DESIGN §6a): a running tool call's server asks the user
//! for input, in the transcript under the call that asks.
//!
//! "<connector> asks for input for <tool>", the server's message as plain
//! text, a countdown to `decide_by`, and either a form drawn from the
//! requested schema ([`Form`]: Accept · Decline · Cancel) or a URL with its
//! host in bold and its warnings ([`UrlPlan`]: Open <host> · Decline ·
//! Cancel). A schema the card cannot draw offers only Decline and Cancel.
//! Once answered — by this tab, another, or nobody in time — the card folds
//! to one line saying how.
//!
//! Its state lives in the [`Transcript`] (what this tab sent, then the
//! server's word, then the stream's `mcp_input_resolved`); what the user
//! typed lives here, so a 422 leaves it in place beside the server's
//! detail. It decides nothing: the server checks the content against the
//! schema and runs the call on; the checks here only say early what the
//! server would refuse.
//!
//! Two things it never does: draw a password field (a field that looks
//! like a secret is plain text, under a warning), and open a URL by itself
//! — only "Open <host>" does, in a new tab without opener or referrer.

use std::time::Duration;

use countersign_api::{InputAction, InputAnswer, InputMode};
use leptos::ev::SubmitEvent;
use leptos::html::P;
use leptos::prelude::*;
use leptos::task::spawn_local;
use leptos::web_sys::js_sys::{self, Date};
use serde_json::{Map, Value};
use wasm_bindgen::JsCast;

use crate::api;
use crate::clock::minutes_east_at;
use crate::model::approval::{clock_offset_ms, remaining_secs};
use crate::model::input_request::{
    Answer, Field, FieldKind, FieldProblem, Form, UrlPlan, card_status, countdown_text,
    pattern_is_checkable,
};
use crate::model::transcript::{Input, InputReply, InputState, Transcript};
use crate::session::SessionState;

/// What an answer sends: the action, and with a form's "accept" its
/// content.
type Sent = (InputAction, Option<Map<String, Value>>);

/// The card of input request `input_id`.
#[component]
pub fn InputCard(
    /// The chat's transcript, where the answer's progress is recorded.
    transcript: RwSignal<Transcript>,
    /// The input request's id.
    input_id: String,
) -> impl IntoView {
    // What the server asked never changes (a replay brings the same words);
    // only the state does.
    let Some(asked) = transcript.with_untracked(|t| t.input(&input_id).cloned()) else {
        return ().into_any();
    };
    let session = SessionState::expect();
    let id = StoredValue::new(input_id.clone());
    let mode = asked.mode;
    let state = Memo::new(move |_| {
        transcript.with(|t| {
            t.input(&id.get_value())
                .map_or(InputState::Ended, |input| input.state.clone())
        })
    });
    let problem = Memo::new(move |_| {
        transcript.with(|t| {
            t.input(&id.get_value())
                .and_then(|input| input.problem.clone())
        })
    });
    // Answered: what was sent (secrets masked by the server) and when, by
    // the form's labels, so the folded card keeps its story.
    let schema = asked.requested_schema.clone();
    let answered = Memo::new(move |_| {
        transcript.with(|t| {
            let input = t.input(&id.get_value())?;
            let answers = input.answers.as_ref()?;
            let form = schema.as_ref().and_then(|s| Form::parse(s).ok())?;
            let when = input
                .answered_at
                .as_deref()
                .map(|at| crate::model::when::full_time_text(at, minutes_east_at));
            Some((form.answered_lines(answers), when))
        })
    });

    // ---- The countdown, by the server's clock: this clock plus the offset
    // learnt from `GET /api/mcp-input-requests` (zero until then).
    let now = RwSignal::new(Date::now());
    let open_at_start = !asked.state.is_final();
    let offset = if open_at_start {
        let skew = LocalResource::new(move || async move {
            let before = Date::now();
            let live = api::input_requests().await.ok()?;
            let local_now = (before + Date::now()) / 2.0;
            let found = live.iter().find(|r| r.id == id.get_value())?;
            clock_offset_ms(&found.decide_by, found.decide_in_secs, local_now)
        });
        Signal::derive(move || skew.get().flatten().unwrap_or(0.0))
    } else {
        Signal::stored(0.0)
    };
    let decide_by = asked.decide_by.clone();
    let remaining = Memo::new(move |_| remaining_secs(&decide_by, now.get() + offset.get()));
    let status = Memo::new(move |_| card_status(&state.get(), remaining.get()));
    if open_at_start
        && let Ok(ticker) =
            set_interval_with_handle(move || _ = now.try_set(Date::now()), Duration::from_secs(1))
    {
        Effect::new(move |_| {
            if status.with(|s| s.folded) {
                ticker.clear();
            }
        });
        on_cleanup(move || ticker.clear());
    }

    // ---- Answering.
    let status_line = NodeRef::<P>::new();
    let answer = Callback::new(move |(action, content): Sent| {
        if !status.with_untracked(|s| s.buttons_enabled) {
            return;
        }
        let mut send = false;
        transcript.update(|t| send = t.input_sent(&id.get_value(), action));
        if !send {
            return;
        }
        // The pressed button is disabled now: keep the keyboard user's
        // place on the line that says what happens.
        request_animation_frame(move || {
            if let Some(line) = status_line.try_get_untracked().flatten() {
                let _ = line.focus();
            }
        });
        let token = session.csrf_token().unwrap_or_default();
        // Not an `Action`: the answer's progress lives in the transcript
        // (the stream moves it too, and it outlives this card), as with the
        // approval card's decision.
        spawn_local(async move {
            let body = InputAnswer { action, content };
            let reply = match api::answer_input_request(&token, &id.get_value(), &body).await {
                Ok(answered) => InputReply::Recorded(answered.status),
                Err(error) => InputReply::from_error(error.status, error.detail),
            };
            transcript.try_update(|t| t.input_answered(&id.get_value(), reply));
        });
    });
    let enabled = Signal::derive(move || status.with(|s| s.buttons_enabled));
    let folded = move || status.with(|s| s.folded);

    let prefix = format!("input-{input_id}");
    let title_id = format!("{prefix}-title");
    let labelled_by = title_id.clone();
    let connector = asked.connector_name.clone();
    let title = {
        let connector = connector.clone();
        move || {
            if folded() {
                format!("{connector} asked for input")
            } else {
                format!("{connector} asks for input")
            }
        }
    };
    let body = match mode {
        InputMode::Url => view! {
            <UrlBody asked=asked.clone() prefix=prefix.clone() enabled=enabled answer=answer problem=problem />
        }
        .into_any(),
        _ => view! {
            <FormBody asked=asked.clone() prefix=prefix.clone() enabled=enabled answer=answer problem=problem />
        }
        .into_any(),
    };

    view! {
        <section
            class="input-card"
            class:folded=folded
            role="group"
            aria-labelledby=labelled_by
            data-testid="input-card"
            tabindex="-1"
            data-state=move || status.with(|s| s.key)
            data-mode=mode.as_str()
            data-input-id=input_id.clone()
        >
            <div class="input-head">
                <h2 class="input-title" id=title_id data-testid="input-title">
                    {title}
                    " "
                    <span class="input-for">
                        "for " <code data-testid="input-tool">{asked.tool_name.clone()}</code>
                    </span>
                </h2>
                <div class="input-state">
                    <p
                        class="input-status"
                        role="status"
                        tabindex="-1"
                        node_ref=status_line
                        data-testid="input-status"
                    >
                        {move || status.with(|s| s.text)}
                    </p>
                    <Show when=move || status.with(|s| s.counting_down)>
                        <p class="input-countdown" role="timer" data-testid="input-countdown">
                            {move || remaining.get().map(countdown_text)}
                        </p>
                    </Show>
                </div>
            </div>
            {move || answered.get().map(|(lines, when)| view! {
                <div class="input-answers" data-testid="input-answers">
                    <p class="muted">
                        {match when {
                            Some(when) => format!("You answered at {when}:"),
                            None => "You answered:".to_owned(),
                        }}
                    </p>
                    <dl>
                        {lines.into_iter().map(|(label, value)| view! {
                            <div>
                                <dt>{label}</dt>
                                <dd data-testid="input-answer">{value}</dd>
                            </div>
                        }).collect_view()}
                    </dl>
                </div>
            })}
            // Drawn once and only hidden when folded, so what the user
            // typed survives a refused answer (and a countdown that folds
            // the card before the server's clock is known).
            <div class="input-body" hidden=folded>
                <p class="input-message" data-testid="input-message">
                    {asked.message.clone()}
                </p>
                {body}
            </div>
        </section>
    }
    .into_any()
}

/// A form from the requested schema, or the words for one the card cannot
/// draw; then the buttons.
#[component]
fn FormBody(
    asked: Input,
    prefix: String,
    enabled: Signal<bool>,
    answer: Callback<Sent>,
    problem: Memo<Option<String>>,
) -> impl IntoView {
    let connector = asked.connector_name.clone();
    let parsed = asked
        .requested_schema
        .as_ref()
        .map_or_else(|| Form::parse(&Value::Null), Form::parse);
    let form = match parsed {
        Ok(form) => form,
        Err(unsupported) => {
            return view! {
                <p class="input-unsupported" data-testid="input-unsupported">
                    {format!(
                        "{connector} asked for something Countersign cannot show: {} You can decline or cancel.",
                        unsupported.why
                    )}
                </p>
                <Buttons prefix=prefix connector=connector enabled=enabled answer=answer problem=problem accept=None />
            }
            .into_any();
        }
    };
    let secret = form.secret_labels(&asked.secret_fields);
    let answers = RwSignal::new(form.initial_answers(&minutes_east_at));
    let form = StoredValue::new(form);
    // Problems are shown once Accept was pressed, and then follow the
    // answers as they are fixed.
    let tried = RwSignal::new(false);
    let problems = Memo::new(move |_| {
        if !tried.get() {
            return Vec::new();
        }
        answers.with(|answers| {
            form.with_value(|form| {
                form.content(answers, &browser_pattern_check, &minutes_east_at)
                    .err()
                    .unwrap_or_default()
            })
        })
    });
    let form_id = format!("{prefix}-form");
    let focus_prefix = prefix.clone();
    let on_submit = move |event: SubmitEvent| {
        event.prevent_default();
        if !enabled.get_untracked() {
            return;
        }
        tried.set(true);
        let checked = answers.with_untracked(|answers| {
            form.with_value(|form| form.content(answers, &browser_pattern_check, &minutes_east_at))
        });
        match checked {
            Ok(content) => answer.run((InputAction::Accept, Some(content))),
            Err(problems) => {
                // Nothing is sent; the keyboard goes to the first field to fix.
                if let Some(first) = problems.first() {
                    let target = focus_id(&focus_prefix, first.index);
                    if let Some(element) = document()
                        .get_element_by_id(&target)
                        .and_then(|e| e.dyn_into::<leptos::web_sys::HtmlElement>().ok())
                    {
                        let _ = element.focus();
                    }
                }
            }
        }
    };
    let fields = form.with_value(|form| {
        form.fields
            .iter()
            .cloned()
            .enumerate()
            .map(|(index, field)| {
                view! {
                    <FieldView
                        field=field
                        index=index
                        prefix=prefix.clone()
                        answers=answers
                        problems=problems
                    />
                }
            })
            .collect_view()
    });
    view! {
        {(!secret.is_empty()).then(|| view! {
            <p class="input-warning" role="note" data-testid="input-secret-warning">
                {format!(
                    "This form asks for a secret ({}). Countersign never asks for passwords in a \
                     form; only answer if you trust {connector}.",
                    secret.join(", ")
                )}
            </p>
        })}
        <form id=form_id.clone() class="input-form" novalidate on:submit=on_submit data-testid="input-form">
            <fieldset class="input-fields" disabled=move || !enabled.get()>
                {fields}
            </fieldset>
            <Buttons
                prefix=prefix.clone()
                connector=asked.connector_name.clone()
                enabled=enabled
                answer=answer
                problem=problem
                accept=Some(Accept::Submit)
            />
        </form>
    }
    .into_any()
}

/// The id of the element a field's problem sends the keyboard to.
fn focus_id(prefix: &str, index: usize) -> String {
    format!("{prefix}-f{index}")
}

/// One field: its label (marked when required), help, input, hints and
/// problem, tied together for assistive technology.
#[component]
pub(crate) fn FieldView(
    field: Field,
    index: usize,
    prefix: String,
    answers: RwSignal<Vec<Answer>>,
    problems: Memo<Vec<FieldProblem>>,
) -> impl IntoView {
    let input_id = focus_id(&prefix, index);
    let help_id = format!("{input_id}-help");
    let hints_id = format!("{input_id}-hints");
    let error_id = format!("{input_id}-error");
    let hints = field.hints();
    let problem = Memo::new(move |_| {
        problems.with(|problems| {
            problems
                .iter()
                .find(|problem| problem.index == index)
                .map(|problem| problem.message.clone())
        })
    });
    let described = {
        let mut ids = Vec::new();
        if field.help.is_some() {
            ids.push(help_id.clone());
        }
        if !hints.is_empty() {
            ids.push(hints_id.clone());
        }
        let ids = ids.join(" ");
        let error_id = error_id.clone();
        move || {
            let mut all = ids.clone();
            if problem.with(Option::is_some) {
                if !all.is_empty() {
                    all.push(' ');
                }
                all.push_str(&error_id);
            }
            (!all.is_empty()).then_some(all)
        }
    };
    let invalid = move || problem.with(Option::is_some).then_some("true");
    let text = move || {
        answers.with(|answers| match answers.get(index) {
            Some(Answer::Text(text)) => text.clone(),
            _ => String::new(),
        })
    };
    let set = move |answer: Answer| {
        answers.update(|answers| {
            if let Some(slot) = answers.get_mut(index) {
                *slot = answer;
            }
        });
    };
    let required = field.required;
    let mark = required.then(|| view! { <span class="required-mark">" (required)"</span> });
    let help = field.help.clone().map(|help| {
        view! { <p class="hint input-help" id=help_id.clone()>{help}</p> }
    });
    let hint_lines = (!hints.is_empty()).then(|| {
        view! {
            <p class="hint" id=hints_id.clone() data-testid="input-field-hints">
                {hints.join(" ")}
            </p>
        }
    });
    let error = move || {
        problem.get().map(|message| {
            view! {
                <p class="field-error" id=error_id.clone() data-testid="input-field-error">
                    {message}
                </p>
            }
        })
    };
    let name = field.name.clone();
    let label = field.label.clone();

    match &field.kind {
        FieldKind::Text { format, .. } => view! {
            <div class="field input-field" data-field=name.clone()>
                <label for=input_id.clone()>{label.clone()}{mark}</label>
                {help}
                // Never `type="password"`, whatever the schema says.
                <input
                    id=input_id.clone()
                    type=format.input_type()
                    name=name.clone()
                    autocomplete="off"
                    spellcheck="false"
                    aria-required=required.then_some("true")
                    aria-invalid=invalid
                    aria-describedby=described
                    prop:value=text
                    on:input=move |event| set(Answer::Text(event_target_value(&event)))
                />
                {hint_lines}
                {error}
            </div>
        }
        .into_any(),
        // A text box with a numeric keyboard rather than `type="number"`:
        // that one hides what was typed when it is not a number, so the
        // card could only say "required".
        FieldKind::Number { integer, .. } => view! {
            <div class="field input-field" data-field=name.clone()>
                <label for=input_id.clone()>{label.clone()}{mark}</label>
                {help}
                <input
                    id=input_id.clone()
                    type="text"
                    inputmode=if *integer { "numeric" } else { "decimal" }
                    name=name.clone()
                    autocomplete="off"
                    aria-required=required.then_some("true")
                    aria-invalid=invalid
                    aria-describedby=described
                    prop:value=text
                    on:input=move |event| set(Answer::Text(event_target_value(&event)))
                />
                {hint_lines}
                {error}
            </div>
        }
        .into_any(),
        FieldKind::Boolean => {
            let checked = move || {
                answers.with(|answers| matches!(answers.get(index), Some(Answer::Flag(true))))
            };
            view! {
                <div class="field input-field input-check" data-field=name.clone()>
                    <input
                        id=input_id.clone()
                        type="checkbox"
                        name=name.clone()
                        aria-invalid=invalid
                        aria-describedby=described
                        prop:checked=checked
                        on:change=move |event| set(Answer::Flag(event_target_checked(&event)))
                    />
                    <label for=input_id.clone()>{label.clone()}{mark}</label>
                    {help}
                    {error}
                </div>
            }
            .into_any()
        }
        FieldKind::Choice { options } if field.as_radios() => {
            let mut choices: Vec<(String, String)> = options
                .iter()
                .map(|option| (option.value.clone(), option.label.clone()))
                .collect();
            // An optional choice with nothing picked can stay that way.
            if !required && text().is_empty() {
                choices.insert(0, (String::new(), "No answer".to_owned()));
            }
            let radios = choices
                .into_iter()
                .enumerate()
                .map(|(n, (value, option_label))| {
                    // The first radio is where a problem sends the keyboard.
                    let radio_id = if n == 0 {
                        input_id.clone()
                    } else {
                        format!("{input_id}-o{n}")
                    };
                    let mine = value.clone();
                    let checked = move || text() == mine;
                    view! {
                        <label class="input-option" for=radio_id.clone()>
                            <input
                                id=radio_id.clone()
                                type="radio"
                                name=format!("{input_id}-choice")
                                value=value.clone()
                                prop:checked=checked
                                on:change=move |_| set(Answer::Text(value.clone()))
                            />
                            <span>{option_label}</span>
                        </label>
                    }
                })
                .collect_view();
            view! {
                <fieldset
                    class="field input-field input-choices"
                    data-field=name.clone()
                    aria-describedby=described
                    aria-invalid=invalid
                    aria-required=required.then_some("true")
                >
                    <legend>{label.clone()}{mark}</legend>
                    {help}
                    <div class="input-options">
                        {radios}
                    </div>
                    {hint_lines}
                    {error}
                </fieldset>
            }
            .into_any()
        }
        FieldKind::Choice { options } => {
            let items = options
                .iter()
                .map(|option| {
                    let value = option.value.clone();
                    let selected = {
                        let value = value.clone();
                        move || text() == value
                    };
                    view! {
                        <option value=value prop:selected=selected>{option.label.clone()}</option>
                    }
                })
                .collect_view();
            view! {
                <div class="field input-field" data-field=name.clone()>
                    <label for=input_id.clone()>{label.clone()}{mark}</label>
                    {help}
                    <select
                        id=input_id.clone()
                        name=name.clone()
                        aria-required=required.then_some("true")
                        aria-invalid=invalid
                        aria-describedby=described
                        on:change=move |event| set(Answer::Text(event_target_value(&event)))
                    >
                        <option value="" prop:selected=move || text().is_empty()>
                            "Choose…"
                        </option>
                        {items}
                    </select>
                    {hint_lines}
                    {error}
                </div>
            }
            .into_any()
        }
        FieldKind::Choices { options, .. } => {
            let boxes = options
                .iter()
                .enumerate()
                .map(|(n, option)| {
                    let box_id = if n == 0 {
                        input_id.clone()
                    } else {
                        format!("{input_id}-o{n}")
                    };
                    let value = StoredValue::new(option.value.clone());
                    let checked = move || {
                        answers.with(|answers| match answers.get(index) {
                            Some(Answer::Picked(picked)) => picked.contains(&value.get_value()),
                            _ => false,
                        })
                    };
                    let toggle = move |event| {
                        let on = event_target_checked(&event);
                        answers.update(|answers| {
                            if let Some(Answer::Picked(picked)) = answers.get_mut(index) {
                                let value = value.get_value();
                                picked.retain(|v| *v != value);
                                if on {
                                    picked.push(value);
                                }
                            }
                        });
                    };
                    let label_for = box_id.clone();
                    view! {
                        <label class="input-option" for=label_for>
                            <input id=box_id type="checkbox" prop:checked=checked on:change=toggle />
                            <span>{option.label.clone()}</span>
                        </label>
                    }
                })
                .collect_view();
            view! {
                <fieldset
                    class="field input-field input-choices"
                    data-field=name.clone()
                    aria-describedby=described
                    aria-invalid=invalid
                >
                    <legend>{label.clone()}{mark}</legend>
                    {help}
                    <div class="input-options">{boxes}</div>
                    {hint_lines}
                    {error}
                </fieldset>
            }
            .into_any()
        }
    }
}

/// A URL to open: the whole URL with its host in bold, what to know about
/// it, and the buttons ("Open <host>" only when the card can be sure where
/// it goes).
#[component]
fn UrlBody(
    asked: Input,
    prefix: String,
    enabled: Signal<bool>,
    answer: Callback<Sent>,
    problem: Memo<Option<String>>,
) -> impl IntoView {
    let connector = asked.connector_name.clone();
    let Some(url) = asked.url.clone() else {
        return view! {
            <p class="input-unsupported" data-testid="input-unsupported">
                {format!(
                    "{connector} asked you to open a page but sent no address. You can decline or cancel."
                )}
            </p>
            <Buttons prefix=prefix connector=connector enabled=enabled answer=answer problem=problem accept=None />
        }
        .into_any();
    };
    let plan = UrlPlan::parse(&url, asked.url_host.as_deref());
    let warnings = plan
        .warnings
        .iter()
        .map(|warning| {
            view! {
                <li data-testid="input-url-warning" data-warning=warning.key()>
                    {nowrap_marked(warning.text())}
                </li>
            }
        })
        .collect_view();
    let has_warnings = !plan.warnings.is_empty();
    let accept = plan.openable.then(|| Accept::Open {
        url: url.clone(),
        host: plan.button_host.clone(),
    });
    view! {
        <p class="input-url-label">"The page it asks you to open:"</p>
        <p class="input-url" data-testid="input-url">
            <span>{plan.before_host.clone()}</span>
            <strong class="input-url-host" data-testid="input-url-host">{plan.host.clone()}</strong>
            <span>{plan.after_host.clone()}</span>
        </p>
        {has_warnings.then(|| view! { <ul class="input-warnings">{warnings}</ul> })}
        {(!plan.openable).then(|| view! {
            <p class="input-unsupported" data-testid="input-unsupported">
                "Countersign will not open this address. You can decline or cancel."
            </p>
        })}
        <Buttons prefix=prefix connector=connector enabled=enabled answer=answer problem=problem accept=accept />
    }
    .into_any()
}

/// `text` with "(xn--…)" kept on one line: a browser breaks it after the
/// first hyphen, which makes the warning hard to read.
fn nowrap_marked(text: String) -> impl IntoView {
    const MARK: &str = "(xn--…)";
    match text.split_once(MARK) {
        Some((before, after)) => view! {
            {before.to_owned()}
            <span class="nowrap">{MARK}</span>
            {after.to_owned()}
        }
        .into_any(),
        None => text.into_any(),
    }
}

/// What the card's first button does.
#[derive(Debug, Clone)]
enum Accept {
    /// Submit the form (its `on:submit` checks and sends).
    Submit,
    /// Open `url` in a new tab, then answer "accept".
    Open {
        /// The URL, exactly as sent.
        url: String,
        /// The host the button names.
        host: String,
    },
}

/// Why the last answer did not go through (the server's words: a 422
/// names the field), then Accept (or "Open <host>") · Decline · Cancel,
/// each described for assistive technology.
#[component]
fn Buttons(
    prefix: String,
    connector: String,
    enabled: Signal<bool>,
    answer: Callback<Sent>,
    problem: Memo<Option<String>>,
    accept: Option<Accept>,
) -> impl IntoView {
    let accept_what = format!("{prefix}-accept-what");
    let decline_what = format!("{prefix}-decline-what");
    let cancel_what = format!("{prefix}-cancel-what");
    let disabled = move || !enabled.get();
    let (accept_button, accept_text) = match accept {
        None => (None, None),
        Some(Accept::Submit) => (
            Some(
                view! {
                    <button
                        type="submit"
                        class="button primary"
                        data-testid="input-accept"
                        aria-describedby=accept_what.clone()
                        disabled=disabled
                    >
                        "Accept"
                    </button>
                }
                .into_any(),
            ),
            Some(format!("Send these answers to {connector}")),
        ),
        Some(Accept::Open { url, host }) => {
            let open = move |_| {
                // Only here, on this click: a new tab that cannot reach back
                // into this page and is not told where it came from.
                let opened = window().open_with_url_and_target_and_features(
                    &url,
                    "_blank",
                    "noopener,noreferrer",
                );
                if opened.is_ok() {
                    answer.run((InputAction::Accept, None));
                }
            };
            (
                Some(
                    view! {
                        <button
                            type="button"
                            class="button primary"
                            data-testid="input-open"
                            aria-describedby=accept_what.clone()
                            disabled=disabled
                            on:click=open
                        >
                            {format!("Open {host}")}
                        </button>
                    }
                    .into_any(),
                ),
                Some(format!(
                    "Open this page in a new tab and tell {connector} you opened it"
                )),
            )
        }
    };
    view! {
        {move || problem.get().map(|text| view! {
            <p class="form-error" role="alert" data-testid="input-error">{text}</p>
        })}
        <div class="input-actions">
            {accept_button}
            <button
                type="button"
                class="button secondary"
                data-testid="input-decline"
                aria-describedby=decline_what.clone()
                disabled=disabled
                on:click=move |_| answer.run((InputAction::Decline, None))
            >
                "Decline"
            </button>
            <button
                type="button"
                class="button secondary"
                data-testid="input-cancel"
                aria-describedby=cancel_what.clone()
                disabled=disabled
                on:click=move |_| answer.run((InputAction::Cancel, None))
            >
                "Cancel"
            </button>
            {accept_text.map(|text| view! { <span id=accept_what hidden>{text}</span> })}
            <span id=decline_what hidden>{format!("Tell {connector} you will not answer")}</span>
            <span id=cancel_what hidden>"Dismiss this request without answering"</span>
        </div>
    }
}

/// A requested schema's `pattern` checked the way JSON Schema means it: an
/// ECMA-262 regular expression (with the `u` flag), unanchored — the
/// browser's own `RegExp`. `None` (the server checks) for a pattern that
/// does not compile or is not safe to run here
/// ([`pattern_is_checkable`]).
pub(crate) fn browser_pattern_check(pattern: &str, value: &str) -> Option<bool> {
    if !pattern_is_checkable(pattern) {
        return None;
    }
    // `Reflect.construct` reports a pattern that does not compile as an
    // error; `RegExp::new` would throw past Rust.
    let constructor = js_sys::RegExp::new("", "").constructor();
    let arguments = js_sys::Array::of2(&pattern.into(), &"u".into());
    let regexp = js_sys::Reflect::construct(&constructor, &arguments)
        .ok()?
        .dyn_into::<js_sys::RegExp>()
        .ok()?;
    Some(regexp.test(value))
}
