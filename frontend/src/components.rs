//! Small pieces shared by several pages, named for what the user sees.

mod admin_section;
mod approval_card;
mod auth_form;
mod chat_header;
mod chat_nav;
mod composer;
mod connectors;
mod form_error;
mod input_card;
mod markdown;
mod model_picker;
mod new_chat_button;
mod origin_chip;
mod provider_keys;
mod require_session;
mod review_card;
mod rule_list;
mod security_section;
mod session_pending;
mod step_up_dialog;
mod tool_call_block;
mod tool_review_list;
mod turn_view;

pub use admin_section::AdminSection;
pub use approval_card::ApprovalCard;
pub use auth_form::{AuthForm, AuthPage, EmailField};
pub use chat_header::ChatHeader;
pub use chat_nav::ChatNav;
pub use composer::Composer;
pub use connectors::ConnectorsSection;
pub use form_error::{FormError, last_error, last_notice, submit_handler};
pub use input_card::InputCard;
pub(crate) use input_card::{FieldView, browser_pattern_check};
pub use markdown::Markdown;
pub use model_picker::ModelPicker;
pub use new_chat_button::NewChatButton;
pub use origin_chip::OriginChip;
pub use provider_keys::ProviderKeys;
pub use require_session::RequireSession;
pub use review_card::ReviewCard;
pub use rule_list::RuleList;
pub use security_section::{ChangePassword, SecuritySection};
pub use session_pending::SessionPending;
pub use step_up_dialog::{StepUp, StepUpDialog};
pub use tool_call_block::{SignInAgainButton, ToolCallBlock, ToolResultFold};
pub use tool_review_list::ToolReviewList;
pub use turn_view::TurnView;

/// Sets the browser tab's title to "`page` · Countersign" (while a
/// decision waits, the count shows instead: [`set_waiting_count`]).
pub fn set_page_title(page: &str) {
    TITLE.with_borrow_mut(|title| title.0 = page.to_owned());
    write_title();
}

/// Sets how many decisions wait for the user across chats: while any do,
/// the tab title counts them ("(1) waiting · Countersign").
pub fn set_waiting_count(count: usize) {
    let changed = TITLE.with_borrow_mut(|title| std::mem::replace(&mut title.1, count) != count);
    if changed {
        write_title();
    }
}

thread_local! {
    /// The page's own title and how many decisions wait.
    static TITLE: std::cell::RefCell<(String, usize)> = const {
        std::cell::RefCell::new((String::new(), 0))
    };
}

fn write_title() {
    let text =
        TITLE.with_borrow(|(page, waiting)| crate::model::waiting::tab_title(page, *waiting));
    leptos::prelude::document().set_title(&text);
}

/// Moves the keyboard focus to the element with `id`, after the DOM
/// settled; `false` when there is none (or it cannot take focus).
pub fn focus_by_id(id: &str) -> bool {
    use leptos::wasm_bindgen::JsCast as _;
    leptos::prelude::document()
        .get_element_by_id(id)
        .and_then(|element| element.dyn_into::<leptos::web_sys::HtmlElement>().ok())
        .is_some_and(|element| element.focus().is_ok())
}
