//! "Edit before allowing" (DESIGN §6.3): the call's arguments as a form
//! drawn from the tool's input schema as reviewed — the input card's
//! fields, one engine for both — when that form says the arguments
//! exactly ([`Form::answers_for`]); otherwise, and on request, as JSON.
//! Sent as `edited_arguments` with "Allow once": the server checks them
//! against the schema (422, nothing runs), runs the gate and provenance
//! on them again, and signs them anew. Nothing here decides.

use leptos::html::Textarea;
use leptos::prelude::*;
use serde_json::Value;

use super::Card;
use crate::clock::minutes_east_at;
use crate::components::{FieldView, browser_pattern_check};
use crate::model::input_request::Form;
use crate::model::transcript::{Decision, Grant};

/// The edit, open under the decision bar while `editing`.
#[component]
pub(super) fn EditForm(
    card: Card,
    /// The form's element id (the toggle's `aria-controls`).
    id: String,
    /// The JSON text area's id.
    text_id: String,
    /// Open; closed once sent or cancelled.
    editing: RwSignal<bool>,
) -> impl IntoView {
    // The fields' ids start with the form's.
    let prefix = StoredValue::new(id.clone());
    let (arguments, schema) = card.approval.with_untracked(|a| {
        a.as_deref()
            .map(|a| (a.arguments.clone(), a.tool_input_schema.clone()))
            .unwrap_or_default()
    });
    // The form, when it can show these arguments as they are.
    let plan = schema
        .and_then(|schema| Form::parse(&schema).ok())
        .and_then(|form| {
            form.answers_for(&arguments, &minutes_east_at)
                .map(|answers| (form, answers))
        });
    let has_form = plan.is_some();
    let (form, initial) = plan.map_or((None, Vec::new()), |(form, answers)| (Some(form), answers));
    let form = StoredValue::new(form);
    let answers = RwSignal::new(initial);
    let as_json = RwSignal::new(!has_form);
    let json = RwSignal::new(serde_json::to_string_pretty(&arguments).unwrap_or_default());
    let problem = RwSignal::new(None::<&'static str>);
    let json_box = NodeRef::<Textarea>::new();
    // A field's problem shows once "Allow as edited" was pressed.
    let tried = RwSignal::new(false);
    let problems = Memo::new(move |_| {
        if !tried.get() {
            return Vec::new();
        }
        answers.with(|answers| {
            form.with_value(|form| {
                form.as_ref()
                    .and_then(|f| {
                        f.content(answers, &browser_pattern_check, &minutes_east_at)
                            .err()
                    })
                    .unwrap_or_default()
            })
        })
    });
    let from_form = move || {
        answers.with_untracked(|answers| {
            form.with_value(|form| {
                form.as_ref()
                    .and_then(|f| {
                        f.content(answers, &browser_pattern_check, &minutes_east_at)
                            .ok()
                    })
                    .map(Value::Object)
            })
        })
    };
    let focus_json = move || {
        request_animation_frame(move || {
            if let Some(text) = json_box.try_get_untracked().flatten() {
                let _ = text.focus();
            }
        });
    };
    if !has_form {
        focus_json();
    }
    let switch = move |_| {
        problem.set(None);
        if as_json.get_untracked() {
            // Back to the form, with what the JSON says, if it can show it.
            let parsed = serde_json::from_str::<Value>(&json.get_untracked()).ok();
            let fitted = parsed.and_then(|value| {
                form.with_value(|form| {
                    form.as_ref()
                        .and_then(|f| f.answers_for(&value, &minutes_east_at))
                })
            });
            match fitted {
                Some(fitted) => {
                    answers.set(fitted);
                    as_json.set(false);
                }
                None => problem.set(Some(
                    "The form cannot show these arguments as they are: edit them as JSON.",
                )),
            }
        } else if let Some(value) = from_form() {
            json.set(serde_json::to_string_pretty(&value).unwrap_or_default());
            as_json.set(true);
            focus_json();
        } else {
            // Nothing the user typed is dropped: the marked fields first.
            tried.set(true);
        }
    };
    let send = move |value: Value| {
        problem.set(None);
        editing.set(false);
        card.decide
            .run((Decision::Approve(Grant::Once), None, Some(value)));
    };

    let fields = move || {
        (!as_json.get()).then(|| {
            form.with_value(|form| {
                form.as_ref().map(|form| {
                    form.fields
                        .iter()
                        .cloned()
                        .enumerate()
                        .map(|(index, field)| {
                            view! {
                                <FieldView
                                    field=field
                                    index=index
                                    prefix=prefix.get_value()
                                    answers=answers
                                    problems=problems
                                />
                            }
                        })
                        .collect_view()
                })
            })
        })
    };

    view! {
        <form
            class="approval-reason"
            id=id
            novalidate
            data-testid="approval-edit-form"
            data-mode=move || if as_json.get() { "json" } else { "form" }
            on:submit=move |ev| {
                ev.prevent_default();
                if as_json.get_untracked() {
                    match serde_json::from_str::<Value>(&json.get_untracked()) {
                        Ok(value) if value.is_object() => send(value),
                        _ => problem.set(Some("Write one JSON object.")),
                    }
                } else {
                    tried.set(true);
                    if let Some(value) = from_form() {
                        send(value);
                    }
                }
            }
        >
            <p class="muted">
                {move || if as_json.get() {
                    "The arguments to run (JSON), checked against the tool's schema."
                } else {
                    "The arguments to run, as the tool's schema describes them."
                }}
            </p>
            <Show when=move || !as_json.get()>
                <fieldset class="input-fields">{fields}</fieldset>
            </Show>
            <Show when=move || as_json.get()>
                <label for=text_id.clone() class="visually-hidden">"The arguments as JSON"</label>
                <textarea
                    id=text_id.clone()
                    rows="6"
                    spellcheck="false"
                    data-testid="approval-edit-text"
                    node_ref=json_box
                    prop:value=move || json.get()
                    on:input=move |ev| json.set(event_target_value(&ev))
                ></textarea>
            </Show>
            {move || problem.get().map(|text| view! {
                <p class="form-error" role="alert" data-testid="approval-edit-error">{text}</p>
            })}
            <div class="approval-actions">
                <button type="submit" class="button" data-testid="approval-edit-send">
                    "Allow as edited (once)"
                </button>
                {has_form.then(|| view! {
                    <button type="button" class="button secondary" data-testid="approval-edit-mode" on:click=switch>
                        {move || if as_json.get() { "Edit in the form" } else { "Edit as JSON" }}
                    </button>
                })}
                <button type="button" class="button secondary" on:click=move |_| editing.set(false)>
                    "Cancel"
                </button>
            </div>
        </form>
    }
}
