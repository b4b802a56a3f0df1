//! An approved call's run: claim → verify → execute → record, behind one
//! call ([`run_approved`]), in a task of its own so that nothing cancels it
//! half-way — a claimed row is always recorded, and a failure still spends
//! the approval. Nothing is retried.
//!
//! What it owns: the order of the steps; the ledger's checks of the claimed
//! row (it is the user's, its HMAC holds, it names the tool the card
//! showed); the signed arguments as the ones that run; the outcome's
//! record.
//!
//! What it deliberately does not do: know what a tool, a connector or an
//! MCP session is. The caller's [`Execution`] brings that, at the points
//! the lifecycle gives it: reads and a connection's set-up beside the
//! claim, its own checks and the activity log's entry before the call, the
//! call itself.

use super::{
    Row,
    keys::ApprovalKeys,
    ledger::{claim, record_until_stored},
};
use crate::{
    AppState,
    ids::{ConnectorId, PendingCallId, UserId},
};
use serde_json::{Map, Value};

/// The user, connector and tool a card showed: the claimed row must name
/// them, or it does not run.
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    /// The only user whose call it may be.
    pub user_id: UserId,
    /// The kept tool's connector.
    pub connector_id: ConnectorId,
    /// Tool name on its server.
    pub tool_name: &'a str,
}

/// The caller's side of an approved call (`tools::connector`'s), at the
/// points where [`run_approved`] lets it act. Every step that may send
/// anything of the call itself comes after the row was claimed and
/// verified and [`Execution::admit`] let it through.
pub trait Execution: Send + Sync + 'static {
    /// What [`Execution::read`] found, for [`Execution::admit`] to judge
    /// the row by.
    type Fresh: Send;
    /// What the call goes out on ([`Execution::prepare`]'s).
    type Ready: Send;

    /// What the card showed.
    fn shown(&self) -> Shown<'_>;

    /// Reads made beside the claim (the tool, again, after the decision).
    fn read(&self) -> impl Future<Output = Self::Fresh> + Send;

    /// Sets up what the call goes out on, beside the claim and the checks;
    /// it sends nothing of the call.
    fn prepare(&self) -> impl Future<Output = Self::Ready> + Send;

    /// The caller's own checks of the claimed, verified row against what
    /// it read, and what must be written before the call runs (the
    /// activity log's entry). `Err(why)`: it does not run.
    fn admit(
        &self,
        row: &Row,
        fresh: Self::Fresh,
    ) -> impl Future<Output = Result<(), String>> + Send;

    /// Runs the call with the signed `arguments` on `ready`: the tool's
    /// text, or why it failed.
    fn execute(
        self,
        row: &Row,
        ready: Self::Ready,
        arguments: Map<String, Value>,
    ) -> impl Future<Output = Result<String, String>> + Send;

    /// Releases `ready` unused: the call does not run.
    fn abandon(self, ready: Self::Ready) -> impl Future<Output = ()> + Send;
}

/// What an approved call came to.
#[derive(Debug)]
pub struct Ran {
    /// When it was approved (RFC 3339), from the claimed row; `None` when
    /// it could not be claimed.
    pub approved_at: Option<String>,
    /// The tool's text, or why it failed or did not run.
    pub outcome: Result<String, String>,
}

/// Carries approved call `id` through claim → verify → execute → record,
/// in a task started now (so the caller may tell the chat of the decision
/// meanwhile; `call` decides when its own call goes out). Resolves to what
/// it came to.
///
/// The claim (one winner), `call`'s [reads](Execution::read) and its
/// [set-up](Execution::prepare) start at once; once claimed, the row is
/// [verified](verify) and [admitted](Execution::admit) while the set-up
/// may still run; then the call runs and its outcome is recorded. A row
/// claimed but not run is recorded as failed, with why.
pub fn run_approved<E: Execution>(
    state: &AppState,
    id: PendingCallId,
    call: E,
) -> impl Future<Output = Ran> + Send + 'static {
    let task = tokio::spawn(lifecycle(state.clone(), id, call));
    async move {
        task.await.unwrap_or_else(|_| Ran {
            approved_at: None,
            outcome: Err("The call ended abnormally; its outcome is unknown.".into()),
        })
    }
}

/// [`run_approved`]'s task.
async fn lifecycle<E: Execution>(state: AppState, id: PendingCallId, call: E) -> Ran {
    let prepared = call.prepare();
    let checked = async {
        let (claimed, fresh) = tokio::join!(claim(&state, id), call.read());
        let row = match claimed {
            Ok(Some(row)) => row,
            Ok(None) => {
                return Err((
                    None,
                    "This call's approval could not be claimed.".to_owned(),
                ));
            }
            Err(err) => {
                tracing::error!(error = %err, "cannot claim an approved call");
                return Err((
                    None,
                    "Countersign could not record this call; it did not run.".to_owned(),
                ));
            }
        };
        let arguments = match verify(&state.approval_keys, call.shown(), &row) {
            Ok(arguments) => arguments,
            Err(why) => return Err((Some(row), why)),
        };
        match call.admit(&row, fresh).await {
            Ok(()) => Ok((row, arguments)),
            Err(why) => Err((Some(row), why)),
        }
    };
    let (ready, checked) = tokio::join!(prepared, checked);
    match checked {
        Ok((row, arguments)) => {
            let outcome = call.execute(&row, ready, arguments).await;
            Ran {
                approved_at: row.decided_at_rfc3339(),
                outcome: recorded(&state, id, outcome).await,
            }
        }
        Err((row, why)) => {
            call.abandon(ready).await;
            match row {
                None => Ran {
                    approved_at: None,
                    outcome: Err(why),
                },
                Some(row) => Ran {
                    approved_at: row.decided_at_rfc3339(),
                    outcome: recorded(&state, id, Err(why)).await,
                },
            }
        }
    }
}

/// The ledger's checks of a claimed row: it is the user's, its signature
/// holds, it names the tool the card showed. Returns its arguments as
/// signed (the canonical JSON's bytes are what runs), or why it does not
/// run.
fn verify(keys: &ApprovalKeys, shown: Shown<'_>, row: &Row) -> Result<Map<String, Value>, String> {
    if row.user_id != shown.user_id || !row.verify(keys) {
        tracing::error!(pending.id = %row.id, "approval ledger row failed its integrity check");
        return Err("The approved call failed its integrity check; it did not run.".to_owned());
    }
    if (row.connector_id, row.tool_name.as_str()) != (shown.connector_id, shown.tool_name) {
        tracing::error!(pending.id = %row.id, "approval ledger row names another tool than its card");
        return Err("The approved call failed its integrity check; it did not run.".to_owned());
    }
    match serde_json::from_str(&row.arguments_canonical) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err("The approved arguments could not be read; it did not run.".into()),
    }
}

/// Records a claimed call's outcome in the ledger (a failure still spends
/// the approval); returns the outcome.
async fn recorded(
    state: &AppState,
    id: PendingCallId,
    outcome: Result<String, String>,
) -> Result<String, String> {
    if let Err(err) =
        record_until_stored(state, id, outcome.as_ref().err().map(String::as_str)).await
    {
        tracing::error!(error = %err, pending.id = %id, "cannot record a call's outcome");
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::row::signed_row;
    use serde_json::json;
    use uuid::Uuid;

    const INTEGRITY: &str = "The approved call failed its integrity check; it did not run.";

    #[test]
    fn only_a_signed_row_for_the_cards_user_and_tool_runs_its_signed_arguments() {
        let keys = ApprovalKeys::from_bytes(&[7; 32]).expect("key");
        let row = signed_row(&keys, "delete", json!({"id": 7, "note": "é"}));
        let shown = Shown {
            user_id: row.user_id,
            connector_id: row.connector_id,
            tool_name: "delete",
        };
        let arguments = verify(&keys, shown, &row).expect("the row as signed runs");
        assert_eq!(Value::Object(arguments), json!({"id": 7, "note": "é"}));

        let another_user = Shown {
            user_id: UserId(Uuid::from_u128(99)),
            ..shown
        };
        let another_connector = Shown {
            connector_id: ConnectorId(Uuid::from_u128(99)),
            ..shown
        };
        let another_tool = Shown {
            tool_name: "search",
            ..shown
        };
        let mut tampered = row.clone();
        tampered.arguments = json!({"id": 8});
        let other_keys = ApprovalKeys::from_bytes(&[8; 32]).expect("key");
        let cases = [
            (&keys, another_user, &row, "another user's card"),
            (
                &keys,
                another_connector,
                &row,
                "another connector on the card",
            ),
            (&keys, another_tool, &row, "another tool on the card"),
            (&keys, shown, &tampered, "arguments changed after signing"),
            (&other_keys, shown, &row, "signed with a key we do not hold"),
        ];
        for (keys, shown, row, why) in cases {
            assert_eq!(verify(keys, shown, row), Err(INTEGRITY.to_owned()), "{why}");
        }
    }
}
