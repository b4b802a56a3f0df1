//! The Admin section's words and lists (issue 14, DESIGN §5 "Admin
//! policy"): the policy's lists as the text areas show them, each
//! setting's name and what it does to everyone, and an administrator's
//! change as the activity log tells it. Plain Rust, tested on the host.

use countersign_api::{ActivityEntry, ActivityKind, SettingChange};

/// One entry per non-blank line, trimmed (the server trims, lower-cases
/// hosts and drops duplicates again).
pub fn list_from_text(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A list as its text area shows it: one entry per line.
pub fn text_from_list(list: &[String]) -> String {
    list.join("\n")
}

/// "1 connector", "3 connectors".
pub fn count_text(n: i64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The name a person reads for a setting the log names.
pub fn setting_name(setting: &str) -> &str {
    match setting {
        "forbid_always_allow" => "Forbid \u{201c}Always allow\u{201d}",
        "forbid_trust_annotations" => "Forbid trusting servers' annotations",
        "always_ask_tools" => "Tools that always ask",
        "connector_hosts" => "Allowed connector hosts",
        "require_mfa" => "Require two-factor sign-in",
        "internal_destinations" => "Inside the firm",
        "review_results_tools" => "Tools whose results are reviewed first",
        "rules" => "Rules for everyone",
        "disabled" => "Disabled",
        "is_admin" => "Administrator",
        "password" => "Password",
        "account" => "Account",
        "oauth_account" => "Signed-in account",
        other => other,
    }
}

fn value_text(value: &str) -> &str {
    match value {
        "true" => "on",
        "false" => "off",
        "" => "(none)",
        other => other,
    }
}

/// "Forbid “Always allow”: off → on".
pub fn change_text(change: &SettingChange) -> String {
    if change.before.is_empty()
        && !change.after.is_empty()
        && change.setting != "always_ask_tools"
        && change.setting != "connector_hosts"
        && change.setting != "internal_destinations"
    {
        // A password reset or an account created: only the after says it.
        return format!("{}: {}", setting_name(&change.setting), change.after);
    }
    format!(
        "{}: {} \u{2192} {}",
        setting_name(&change.setting),
        value_text(&change.before),
        value_text(&change.after)
    )
}

/// Whether an activity entry is an administrator's change rather than a
/// tool call's.
pub fn is_admin_entry(entry: &ActivityEntry) -> bool {
    matches!(
        entry.kind,
        ActivityKind::PolicyChanged
            | ActivityKind::UserChanged
            | ActivityKind::ConnectorAccountChanged
            | ActivityKind::ActivityRead
    )
}

/// What an administrator's entry did, in one line: its subject, then the
/// changes, or for a read of other accounts' logs, what was read.
pub fn admin_entry_text(entry: &ActivityEntry) -> String {
    if entry.kind == ActivityKind::ActivityRead {
        let whose = entry.subject.as_deref().map_or_else(
            || "every account".to_owned(),
            |email| format!("the account {email}"),
        );
        let how = match entry.export.as_deref() {
            _ if entry.waiting => format!("Read the calls waiting for {whose}"),
            Some(format) => format!("Exported ({format}) the activity of {whose}"),
            None => format!("Read the activity of {whose}"),
        };
        let narrowed = entry
            .filter
            .as_ref()
            .map(countersign_api::ActivityFilter::query_string)
            .filter(|q| !q.is_empty());
        return match narrowed {
            Some(q) => format!("{how}, narrowed to {q}"),
            None => how,
        };
    }
    let lines = entry
        .changes
        .iter()
        .map(change_text)
        .collect::<Vec<_>>()
        .join("; ");
    format!("{}: {lines}", entry_subject(entry))
}

/// What an administrator's entry changed, in one line.
pub fn entry_subject(entry: &ActivityEntry) -> String {
    match (entry.kind, entry.subject.as_deref()) {
        (ActivityKind::PolicyChanged, _) => "The policy".into(),
        (ActivityKind::UserChanged, Some(email)) => format!("The account {email}"),
        (ActivityKind::ConnectorAccountChanged, _) => {
            format!("The connector {}", entry.connector_name)
        }
        _ => "An account".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(setting: &str, before: &str, after: &str) -> SettingChange {
        SettingChange {
            setting: setting.into(),
            before: before.into(),
            after: after.into(),
        }
    }

    #[test]
    fn counts_agree_with_their_number() {
        assert_eq!(count_text(1, "connector", "connectors"), "1 connector");
        assert_eq!(count_text(0, "connector", "connectors"), "0 connectors");
        assert_eq!(
            count_text(2, "call waiting", "calls waiting"),
            "2 calls waiting"
        );
    }

    #[test]
    fn lists_are_one_entry_per_non_blank_line() {
        assert_eq!(
            list_from_text("  */delete_*\n\n mail.example.com/send_* \r\n"),
            ["*/delete_*", "mail.example.com/send_*"]
        );
        assert!(list_from_text("\n  \n").is_empty());
        assert_eq!(text_from_list(&["a".into(), "b".into()]), "a\nb");
    }

    #[test]
    fn a_read_of_other_accounts_says_what_was_read() {
        let read = |export: Option<&str>, waiting: bool| {
            let mut entry =
                crate::model::activity::tests::entry(1, "r", ActivityKind::ActivityRead);
            entry.subject = Some("ada@firm.example".into());
            entry.export = export.map(str::to_owned);
            entry.waiting = waiting;
            admin_entry_text(&entry)
        };
        assert_eq!(
            read(None, false),
            "Read the activity of the account ada@firm.example"
        );
        assert_eq!(
            read(Some("csv"), false),
            "Exported (csv) the activity of the account ada@firm.example"
        );
        assert_eq!(
            read(None, true),
            "Read the calls waiting for the account ada@firm.example"
        );
    }

    #[test]
    fn changes_read_as_settings_with_before_and_after() {
        assert_eq!(
            change_text(&change("forbid_always_allow", "false", "true")),
            "Forbid \u{201c}Always allow\u{201d}: off \u{2192} on"
        );
        assert_eq!(
            change_text(&change("connector_hosts", "", "a.test, b.test")),
            "Allowed connector hosts: (none) \u{2192} a.test, b.test"
        );
        assert_eq!(
            change_text(&change("internal_destinations", "", "firm.example")),
            "Inside the firm: (none) \u{2192} firm.example"
        );
        assert_eq!(
            change_text(&change("rules", "", "Deny any connector: wipe_*")),
            "Rules for everyone: Deny any connector: wipe_*"
        );
        assert_eq!(
            change_text(&change("rules", "Deny any connector: wipe_*", "")),
            "Rules for everyone: Deny any connector: wipe_* \u{2192} (none)"
        );
        assert_eq!(
            change_text(&change("password", "", "reset (one-time)")),
            "Password: reset (one-time)"
        );
        assert_eq!(
            change_text(&change("is_admin", "true", "false")),
            "Administrator: on \u{2192} off"
        );
        assert_eq!(
            change_text(&change("later", "1", "2")),
            "later: 1 \u{2192} 2"
        );
    }
}
