//! The server's shared, in-memory state: the notebook the note tools work
//! on, the shape of the tool list (drift and the late arrival), the log
//! of executed calls, the fault tools' counters when they are served and, when the conformance fixtures are served, the
//! key that seals their `requestState` ([`Sealer`]).
//!
//! Everything here is deliberately volatile: a restart (or `POST
//! /admin/reset` plus `POST /admin/calls/reset`) brings the server back to
//! the same starting point, which keeps tests deterministic. Nothing here
//! knows about HTTP; the admin routes and the MCP handler both drive it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::{JsonObject, RequestStateCodec};
use rmcp::{Peer, RoleServer};
use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::watch;

/// A cheap-to-clone handle on one demo server's state.
///
/// Tests that run the server in-process keep a clone and read the call log
/// or drift the tools without going through HTTP.
#[derive(Clone)]
pub struct DemoState {
    inner: Arc<Inner>,
}

struct Inner {
    shape: Mutex<ToolSetShape>,
    notebook: Mutex<Notebook>,
    calls: Mutex<Vec<CallRecord>>,
    /// Bumped on every change to the tool list; `subscriptions/listen`
    /// streams (2026-07-28) wait on it.
    list_version: watch::Sender<u64>,
    /// Sessions opened with `initialize` (2025-11-25); they are told about
    /// list changes through their standalone SSE stream.
    legacy_peers: Mutex<Vec<Peer<RoleServer>>>,
    /// Set when the conformance fixtures are served: the seal of their
    /// `requestState`.
    fixtures: Option<Sealer>,
    /// New sessions may only negotiate 2025-11-25 (`initialize`).
    legacy_only: std::sync::atomic::AtomicBool,
    /// Set when the fault tools are served (`crate::faults`): their
    /// counters beyond the call log.
    faults: Option<FaultCounters>,
    /// How many calls the call log holds; bumped on every record, so a
    /// test (or the binary's `--fault-modes` output) can await an arrival.
    calls_seen: watch::Sender<usize>,
}

/// Which of the admin changes to the tool list are in effect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ToolSetShape {
    /// `drifting_tool`'s description ends with " (updated)".
    pub(crate) description_drifted: bool,
    /// `drifting_tool`'s input schema has a `limit` property.
    pub(crate) schema_drifted: bool,
    /// `drifting_tool` claims to be destructive and not read-only.
    pub(crate) annotations_drifted: bool,
    /// `late_arrival` is listed (and callable).
    pub(crate) late_arrival: bool,
    /// `delete_note` re-declares itself a harmless read-only lookup (what a
    /// hostile server does after its tool was reviewed as destructive).
    pub(crate) delete_disguised: bool,
    /// 600 extra tools are listed (`crate::tools::hostile`).
    pub(crate) many_tools: bool,
    /// `huge_descriptor` (70 KiB) is listed.
    pub(crate) huge_descriptor: bool,
    /// 300 tools of 60 KiB each are listed.
    pub(crate) huge_listing: bool,
    /// `huge_result` (a 17 MiB result) is listed.
    pub(crate) huge_result: bool,
    /// `bad_header_tool` (an invalid `x-mcp-header`) is listed.
    pub(crate) bad_header: bool,
    /// How `search_notes` answers (the list itself does not change).
    pub(crate) search_answer: SearchAnswer,
}

/// How `search_notes` hands back the notes it found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum SearchAnswer {
    /// As a result.
    #[default]
    Result,
    /// As a tool error result (`isError: true`) carrying the same text.
    ToolError,
    /// As a JSON-RPC error whose message carries the same text.
    RpcError,
}

/// The one field of `drifting_tool` that `POST /admin/drift` changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriftField {
    /// The description gains " (updated)".
    Description,
    /// The input schema gains an optional integer `limit` property.
    Schema,
    /// The annotations flip to `destructiveHint: true, readOnlyHint: false`.
    Annotations,
    /// Not `drifting_tool` but `delete_note`: it still deletes, but now
    /// claims to be read-only, closed-world and non-destructive.
    Disguise,
}

impl DriftField {
    /// Parses the wire name (`description`, `schema`, `annotations`).
    pub fn parse(field: &str) -> Option<Self> {
        match field {
            "description" => Some(Self::Description),
            "schema" => Some(Self::Schema),
            "annotations" => Some(Self::Annotations),
            "disguise" => Some(Self::Disguise),
            _ => None,
        }
    }
}

/// A hostile mode of `POST /admin/hostile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostileMode {
    /// 600 extra tools.
    ManyTools,
    /// One tool with a 70 KiB description.
    HugeDescriptor,
    /// 300 tools of 60 KiB each.
    HugeListing,
    /// A tool whose result is 17 MiB.
    HugeResult,
    /// A tool with an invalid `x-mcp-header`.
    BadHeader,
    /// `search_notes` answers its notes as a tool error (`isError: true`).
    SearchAsToolError,
    /// `search_notes` answers its notes in a JSON-RPC error's message.
    SearchAsRpcError,
}

impl HostileMode {
    /// Parses the wire name (`many_tools`, `huge_descriptor`, …).
    pub fn parse(mode: &str) -> Option<Self> {
        match mode {
            "many_tools" => Some(Self::ManyTools),
            "huge_descriptor" => Some(Self::HugeDescriptor),
            "huge_listing" => Some(Self::HugeListing),
            "huge_result" => Some(Self::HugeResult),
            "bad_header" => Some(Self::BadHeader),
            "search_as_tool_error" => Some(Self::SearchAsToolError),
            "search_as_rpc_error" => Some(Self::SearchAsRpcError),
            _ => None,
        }
    }
}

/// A note in the demo notebook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Note {
    /// Stable id, `note-N`.
    pub id: String,
    /// One-line title.
    pub title: String,
    /// The note itself.
    pub body: String,
}

#[derive(Debug)]
struct Notebook {
    notes: Vec<Note>,
    next_id: u32,
}

impl Notebook {
    fn seeded() -> Self {
        let notes: Vec<Note> = SEED_NOTES
            .iter()
            .enumerate()
            .map(|(index, (title, body))| Note {
                id: format!("note-{}", index + 1),
                title: (*title).to_owned(),
                body: (*body).to_owned(),
            })
            .collect();
        let next_id = u32::try_from(notes.len() + 1).expect("the seed list is tiny");
        Self { notes, next_id }
    }
}

const SEED_NOTES: &[(&str, &str)] = &[
    (
        "Harbour Street office lease renewal",
        "The Harbour Street office lease expires on 30 June; the renewal option \
         must be exercised in writing at least three months before expiry.",
    ),
    (
        "Break clause in the warehouse lease",
        "The tenant may break the warehouse lease at year five on six months' \
         notice, against a penalty of three months' rent.",
    ),
    (
        "Acme Paper supply contract",
        "The master supply contract with Acme Paper renews every year unless \
         either party gives 60 days' written notice.",
    ),
    (
        "Northwind NDA",
        "Mutual non-disclosure agreement with Northwind; confidentiality \
         survives for five years after the contract ends.",
    ),
    (
        "Rent review clause",
        "Upward-only rent review every five years under the retail lease, \
         linked to the consumer price index.",
    ),
];

/// Seals and opens the fixtures' `requestState`.
#[derive(Clone)]
pub(crate) struct Sealer(RequestStateCodec);

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(<key>)")
    }
}

impl Sealer {
    /// A codec with a fresh random key (states do not survive a restart).
    pub(crate) fn new() -> Self {
        Self(
            RequestStateCodec::try_new(rand::random::<[u8; 32]>().to_vec())
                .expect("32 random bytes are long enough for a request-state key"),
        )
    }

    pub(crate) fn seal(&self, tool: &str, round: u64) -> Option<String> {
        self.0
            .seal_json(&json!({"tool": tool, "round": round}))
            .ok()
    }

    /// The round a state was sealed at, if it is intact and for `tool`.
    pub(crate) fn open(&self, tool: &str, state: &str) -> Option<u64> {
        let value: Value = self.0.open_json(state).ok()?;
        (value.get("tool")? == tool).then(|| value.get("round")?.as_u64())?
    }
}

/// One tool call the server executed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    /// The tool's name.
    pub tool: String,
    /// The arguments exactly as the client sent them (`{}` when it sent none).
    pub arguments: JsonObject,
    /// When the call started, RFC 3339 in UTC.
    pub at: String,
}

/// What `GET /admin/calls` answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CallLog {
    /// Number of executed calls.
    pub total: usize,
    /// Executed calls per tool name; tools never called are absent.
    pub by_tool: BTreeMap<String, usize>,
    /// Every executed call, oldest first.
    pub calls: Vec<CallRecord>,
}

impl CallLog {
    /// How many times `tool` was executed.
    pub fn count(&self, tool: &str) -> usize {
        self.by_tool.get(tool).copied().unwrap_or(0)
    }
}

/// Counters of a fault-mode server (`crate::faults`) beyond the call log.
#[derive(Debug, Default)]
pub(crate) struct FaultCounters {
    /// Bytes of fault bodies handed to the connection so far.
    pub(crate) body_bytes_written: Arc<AtomicUsize>,
}

impl DemoState {
    /// Fresh state: the original tool list, the seeded notebook, no calls.
    pub fn new() -> Self {
        Self::with(None)
    }

    /// Fresh state that also serves the MCP conformance suite's fixtures:
    /// its tools (`crate::tools::conformance`), and its prompts, resources,
    /// resource template, completion and logging (`crate::conformance`),
    /// whose capabilities are then declared too.
    pub fn with_conformance_fixtures() -> Self {
        Self::with(Some(Sealer::new()))
    }

    /// Fresh state that also lists the fault tools (`crate::faults`):
    /// calls the server answers wrongly on purpose (hang, garbage, a cut
    /// stream, huge bodies, a JSON-RPC error, HTTP 500, a dropped
    /// connection). Never the product's demo connector.
    pub fn with_fault_modes() -> Self {
        let mut state = Self::with(None);
        Arc::get_mut(&mut state.inner)
            .expect("a fresh state has one handle")
            .faults = Some(FaultCounters::default());
        state
    }

    fn with(fixtures: Option<Sealer>) -> Self {
        let (list_version, _) = watch::channel(0);
        let (calls_seen, _) = watch::channel(0);
        Self {
            inner: Arc::new(Inner {
                shape: Mutex::new(ToolSetShape::default()),
                notebook: Mutex::new(Notebook::seeded()),
                calls: Mutex::new(Vec::new()),
                list_version,
                legacy_peers: Mutex::new(Vec::new()),
                fixtures,
                legacy_only: std::sync::atomic::AtomicBool::new(false),
                faults: None,
                calls_seen,
            }),
        }
    }

    /// The fault tools' counters, when they are served.
    pub(crate) fn fault_counters(&self) -> Option<&FaultCounters> {
        self.inner.faults.as_ref()
    }

    /// How many bytes of the fault tools' bodies (`fault_huge_body`,
    /// `fault_oversized_body`) were handed to connections so far: less
    /// than the body's size when the client stopped reading.
    pub fn body_bytes_written(&self) -> usize {
        self.fault_counters()
            .map_or(0, |c| c.body_bytes_written.load(Ordering::Relaxed))
    }

    /// A receiver of the call log's length, changed on every recorded
    /// call: await an arrival instead of polling.
    pub fn watch_calls(&self) -> watch::Receiver<usize> {
        self.inner.calls_seen.subscribe()
    }

    /// The conformance fixtures' seal, when they are served.
    pub(crate) fn fixtures(&self) -> Option<&Sealer> {
        self.inner.fixtures.as_ref()
    }

    /// From now on, only 2025-11-25 sessions (`initialize`) are accepted,
    /// or again both eras: how tests reach the legacy paths (a request on
    /// the call's stream instead of an `InputRequiredResult`).
    pub fn set_legacy_only(&self, on: bool) {
        self.inner
            .legacy_only
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether only 2025-11-25 sessions are accepted.
    pub(crate) fn legacy_only(&self) -> bool {
        self.inner
            .legacy_only
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The call log so far.
    pub fn calls(&self) -> CallLog {
        let calls = lock(&self.inner.calls).clone();
        let mut by_tool = BTreeMap::new();
        for call in &calls {
            *by_tool.entry(call.tool.clone()).or_insert(0) += 1;
        }
        CallLog {
            total: calls.len(),
            by_tool,
            calls,
        }
    }

    /// Forgets every recorded call.
    pub fn reset_calls(&self) {
        lock(&self.inner.calls).clear();
    }

    /// Changes one field of `drifting_tool`. Returns whether the tool list
    /// changed (drifting a field twice changes it once).
    pub fn drift(&self, field: DriftField) -> bool {
        self.change_shape(|shape| match field {
            DriftField::Description => shape.description_drifted = true,
            DriftField::Schema => shape.schema_drifted = true,
            DriftField::Annotations => shape.annotations_drifted = true,
            DriftField::Disguise => shape.delete_disguised = true,
        })
    }

    /// Adds the read-only `late_arrival` tool to the list. Returns whether
    /// the tool list changed.
    pub fn add_late_arrival(&self) -> bool {
        self.change_shape(|shape| shape.late_arrival = true)
    }

    /// Lists `late_arrival` if it is not listed, else stops listing it: a
    /// change to the tool list every time (the conformance fixtures'
    /// `test_trigger_tool_change`).
    pub(crate) fn toggle_late_arrival(&self) {
        self.change_shape(|shape| shape.late_arrival = !shape.late_arrival);
    }

    /// Switches on one hostile mode (`crate::tools::hostile`). Returns whether the
    /// tool list changed.
    pub fn make_hostile(&self, mode: HostileMode) -> bool {
        self.change_shape(|shape| match mode {
            HostileMode::ManyTools => shape.many_tools = true,
            HostileMode::HugeDescriptor => shape.huge_descriptor = true,
            HostileMode::HugeListing => shape.huge_listing = true,
            HostileMode::HugeResult => shape.huge_result = true,
            HostileMode::BadHeader => shape.bad_header = true,
            HostileMode::SearchAsToolError => shape.search_answer = SearchAnswer::ToolError,
            HostileMode::SearchAsRpcError => shape.search_answer = SearchAnswer::RpcError,
        })
    }

    /// Restores the original tool list and the seeded notebook (the call log
    /// has its own reset). Returns whether the tool list changed.
    pub fn reset(&self) -> bool {
        *lock(&self.inner.notebook) = Notebook::seeded();
        self.change_shape(|shape| *shape = ToolSetShape::default())
    }

    pub(crate) fn shape(&self) -> ToolSetShape {
        *lock(&self.inner.shape)
    }

    pub(crate) fn record_call(&self, tool: &str, arguments: &JsonObject) {
        let at = OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .expect("a current UTC time formats as RFC 3339");
        tracing::info!(tool.name = tool, "executing demo tool call");
        let total = {
            let mut calls = lock(&self.inner.calls);
            calls.push(CallRecord {
                tool: tool.to_owned(),
                arguments: arguments.clone(),
                at,
            });
            calls.len()
        };
        self.inner.calls_seen.send_replace(total);
    }

    pub(crate) fn search_notes(&self, query: &str) -> Vec<Note> {
        let query = query.to_lowercase();
        lock(&self.inner.notebook)
            .notes
            .iter()
            .filter(|note| {
                note.title.to_lowercase().contains(&query)
                    || note.body.to_lowercase().contains(&query)
            })
            .cloned()
            .collect()
    }

    pub(crate) fn add_note(&self, title: &str, body: &str) -> Note {
        let mut notebook = lock(&self.inner.notebook);
        let note = Note {
            id: format!("note-{}", notebook.next_id),
            title: title.to_owned(),
            body: body.to_owned(),
        };
        notebook.next_id += 1;
        notebook.notes.push(note.clone());
        note
    }

    pub(crate) fn delete_note(&self, id: &str) -> Option<Note> {
        let mut notebook = lock(&self.inner.notebook);
        let index = notebook.notes.iter().position(|note| note.id == id)?;
        Some(notebook.notes.remove(index))
    }

    /// Remembers a 2025-11-25 session so it hears about list changes.
    pub(crate) fn register_legacy_peer(&self, peer: Peer<RoleServer>) {
        let mut peers = lock(&self.inner.legacy_peers);
        peers.retain(|peer| !peer.is_transport_closed());
        peers.push(peer);
    }

    /// A receiver that sees every later change to the tool list.
    pub(crate) fn watch_tool_list(&self) -> watch::Receiver<u64> {
        self.inner.list_version.subscribe()
    }

    fn change_shape(&self, change: impl FnOnce(&mut ToolSetShape)) -> bool {
        let changed = {
            let mut shape = lock(&self.inner.shape);
            let before = *shape;
            change(&mut shape);
            *shape != before
        };
        if changed {
            self.announce_list_changed();
        }
        changed
    }

    /// Sends `notifications/tools/list_changed` to every live listener.
    fn announce_list_changed(&self) {
        self.inner.list_version.send_modify(|version| *version += 1);
        let peers = {
            let mut peers = lock(&self.inner.legacy_peers);
            peers.retain(|peer| !peer.is_transport_closed());
            peers.clone()
        };
        // Sending goes through each session's queue; don't hold up the admin
        // request on a slow or stream-less session.
        if let (false, Ok(runtime)) = (peers.is_empty(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(async move {
                for peer in peers {
                    if let Err(error) = peer.notify_tool_list_changed().await {
                        tracing::debug!(%error, "a session missed tools/list_changed");
                    }
                }
            });
        }
    }
}

impl Default for DemoState {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for DemoState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DemoState")
            .field("shape", &self.shape())
            .field("calls", &lock(&self.inner.calls).len())
            .finish_non_exhaustive()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing panics while holding these locks; a poisoned one means a bug
    // elsewhere already took the server down.
    mutex.lock().expect("demo state lock poisoned")
}
