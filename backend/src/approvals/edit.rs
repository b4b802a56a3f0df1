//! "Edit and allow" (docs/design.md §6.3; issue 46 item 1): the user
//! approves a call with arguments of their own instead of the proposed
//! ones.
//!
//! What it owns: the checks an edit must pass before anything is decided —
//! a JSON object, valid against the input schema of the tool *as the user
//! reviewed it*, carried exactly (the digest rule) — and the one
//! transaction that writes the edited arguments, their digest and a new
//! signature over them, keeps the shown digest and the editor, and
//! approves, on the same conditions as any decision (the caller's, still
//! pending, unexpired, the digest the card showed).
//!
//! What it deliberately does not do: widen anything. The row's
//! provenance stays the one traced for the proposed arguments (a flagged
//! call stays flagged; the turn traces the edited values too and adds what
//! it finds to the log), the grant is only ever "once", and the schema is
//! checked with no resolving of remote references (a hostile server's
//! `$ref` to a URL is an unreadable schema here, never a fetch).

use super::{DecideError, keys::Binding};
use crate::{
    AppState, db,
    digest::{canonical, inexact_number, sha256_hex},
    events,
    ids::{ChatId, ConnectorId, PendingCallId, TurnId, UserId},
    metrics::Decided,
};
use countersign_api::PendingCallStatus;
use serde_json::Value;

/// The longest explanation of a schema failure the 422 carries.
const WHY_MAX_CHARS: usize = 300;

/// Why an edit cannot be checked or does not fit (a 422; nothing was
/// decided).
pub fn check(schema: Option<&Value>, edited: &Value) -> Result<(), String> {
    if !edited.is_object() {
        return Err("edited_arguments must be a JSON object.".into());
    }
    if let Some((path, text)) = inexact_number(edited) {
        return Err(format!(
            "edited_arguments: the number {text} at {path} cannot be carried exactly; write it as a string or a smaller number."
        ));
    }
    let schema = schema.ok_or_else(|| {
        "This tool's input schema is not known; allow or decline the call as shown.".to_owned()
    })?;
    let validator = jsonschema::options().build(schema).map_err(|_| {
        "This tool's input schema cannot be checked here; allow or decline the call as shown."
            .to_owned()
    })?;
    match validator.iter_errors(edited).next() {
        None => Ok(()),
        Some(error) => {
            let at = error.instance_path().to_string();
            let at = if at.is_empty() { "/".to_owned() } else { at };
            let why: String = error.to_string().chars().take(WHY_MAX_CHARS).collect();
            Err(format!(
                "edited_arguments do not fit the tool's input schema at {at}: {why}"
            ))
        }
    }
}

/// What the model reads before an edited call's result: that the user
/// changed the arguments, and to what.
pub fn ran_with_edits(arguments: &Value) -> String {
    format!(
        "The user edited the arguments before allowing this call; it ran with {}.",
        canonical(arguments)
    )
}

/// What an edited approval decided: the edited arguments' digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    /// SHA-256 of the edited arguments' canonical JSON.
    pub arguments_digest: String,
    /// `approved`, or `awaiting_second` when the policy gives the call a
    /// second approver.
    pub status: PendingCallStatus,
}

/// An edited or plain-checked failure of [`approve_edited`].
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    /// As any decision's.
    #[error(transparent)]
    Decide(#[from] DecideError),
    /// The edit does not fit (422).
    #[error("{0}")]
    Invalid(String),
}

impl From<sqlx::Error> for EditError {
    fn from(err: sqlx::Error) -> Self {
        Self::Decide(DecideError::Database(err))
    }
}

/// Approves pending call `id` of `user_id` "once" with `edited` as its
/// arguments, if the card showed `shown_digest`: checks the edit against
/// the reviewed tool's input schema, writes the edited arguments, their
/// digest and a new signature, keeps the shown digest and the editor, and
/// wakes the waiting turn — all in one transaction that locks the row.
pub async fn approve_edited(
    state: &AppState,
    user_id: UserId,
    id: PendingCallId,
    shown_digest: &str,
    edited: &Value,
) -> Result<Edited, EditError> {
    let mut tx = db::service_tx(&state.db).await?;
    let row = sqlx::query!(
        r#"select p.chat_id as "chat_id: ChatId", p.turn_id as "turn_id: TurnId",
                  p.connector_id as "connector_id: ConnectorId", p.destination_url,
                  p.tool_name, p.expires_at, p.arguments_digest,
                  p.status as "status: PendingCallStatus", p.expires_at <= now() as "late!",
                  t.reviewed_descriptor -> 'inputSchema' as schema
             from mcp_pending_calls p
             left join connector_tools t
               on t.connector_id = p.connector_id and t.name = p.tool_name
              and t.user_id = p.user_id
            where p.id = $1 and p.user_id = $2
              for update of p"#,
        id as PendingCallId,
        user_id as UserId,
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(row) = row else {
        return Err(DecideError::NotFound.into());
    };
    match (row.status, row.late) {
        (PendingCallStatus::Expired, _) | (PendingCallStatus::Pending, true) => {
            return Err(DecideError::Expired.into());
        }
        (PendingCallStatus::Pending, false) => {}
        _ => return Err(DecideError::NotFound.into()),
    }
    if row.arguments_digest != shown_digest {
        return Err(DecideError::DigestMismatch.into());
    }
    check(row.schema.as_ref().filter(|s| !s.is_null()), edited).map_err(EditError::Invalid)?;

    let arguments_canonical = canonical(edited);
    let arguments_digest = sha256_hex(&arguments_canonical);
    let (hmac_key_id, hmac) = state.approval_keys.sign(&Binding {
        id,
        user_id,
        chat_id: row.chat_id,
        turn_id: row.turn_id,
        connector_id: row.connector_id,
        destination_url: &row.destination_url,
        tool_name: &row.tool_name,
        arguments_digest: &arguments_digest,
        expires_at_micros: row.expires_at.unix_timestamp_nanos() / 1000,
    });
    // A row the policy gave a second approver waits for the approver, with
    // the edited arguments as what they approve.
    let decided = sqlx::query_scalar!(
        r#"update mcp_pending_calls
            set arguments = $3, arguments_canonical = $4, arguments_digest = $5,
                shown_arguments_digest = arguments_digest, edited_by = $2,
                hmac_key_id = $6, hmac = $7,
                status = case when second_approval then 'awaiting_second' else 'approved' end,
                grant_kind = 'once',
                decided_at = case when second_approval then null else now() end,
                requester_approved_at = case when second_approval then now() end
          where id = $1 and user_id = $2 and status = 'pending' and expires_at > now()
          returning status as "status: PendingCallStatus""#,
        id as PendingCallId,
        user_id as UserId,
        edited,
        &arguments_canonical,
        &arguments_digest,
        &hmac_key_id,
        &hmac,
    )
    .fetch_optional(&mut *tx)
    .await?;
    let Some(status) = decided else {
        // The row is locked: only its expiry could have passed since.
        return Err(DecideError::Expired.into());
    };
    events::notify_decided(&mut tx, id).await?;
    tx.commit().await?;
    if status == PendingCallStatus::Approved {
        if state.config.approval_notify {
            state.watcher.settle(id, PendingCallStatus::Approved);
        }
        state.metrics.decided(Decided::Approved);
    }
    Ok(Edited {
        arguments_digest,
        status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "maxLength": 20},
                "body": {"type": "string"}
            },
            "required": ["title", "body"],
            "additionalProperties": false
        })
    }

    #[test]
    fn an_edit_must_fit_the_reviewed_schema_and_be_carried_exactly() {
        let ok = json!({"title": "Filing", "body": "Archive it."});
        assert_eq!(check(Some(&schema()), &ok), Ok(()));

        let why = check(Some(&schema()), &json!({"title": "Filing"})).expect_err("refused");
        assert!(
            why.starts_with("edited_arguments do not fit the tool's input schema at /:"),
            "{why}"
        );
        assert!(why.contains("body"), "{why}");
        let why = check(Some(&schema()), &json!({"title": 7, "body": "b"})).expect_err("refused");
        assert!(why.contains("at /title:"), "{why}");
        let why = check(
            Some(&schema()),
            &json!({"title": "t", "body": "b", "to": "x"}),
        )
        .expect_err("refused");
        assert!(why.contains("schema"), "{why}");

        assert_eq!(
            check(Some(&schema()), &json!(["not", "an", "object"])),
            Err("edited_arguments must be a JSON object.".into())
        );
        let big =
            serde_json::from_str::<Value>(r#"{"title": "t", "body": "b", "n": 9007199254740993}"#)
                .expect("json");
        assert!(
            check(Some(&schema()), &big)
                .expect_err("refused")
                .contains("cannot be carried exactly")
        );
        assert!(check(None, &ok).expect_err("refused").contains("not known"));
    }

    #[test]
    fn a_schema_that_points_elsewhere_is_unreadable_never_fetched() {
        // A hostile server's reference to a URL: no resolver is built in,
        // so the schema cannot be checked (and nothing is fetched).
        let remote = json!({"$ref": "http://127.0.0.1:9/schema.json"});
        let why = check(Some(&remote), &json!({"a": 1})).expect_err("refused");
        assert!(why.contains("cannot be checked here"), "{why}");
    }
}
