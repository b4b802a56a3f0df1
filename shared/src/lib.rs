//! Wire types of Countersign's HTTP API, shared by the server (`countersign`)
//! and the browser app (`countersign-web`).
//!
//! This crate owns the JSON shapes only: no I/O, no validation rules, nothing
//! that would not compile to `wasm32-unknown-unknown`. Field names here are a
//! public contract (`../shared/DESIGN.md` §8): add fields, never rename them.
//! Every state word on the wire (statuses, decisions, grants, origins,
//! review states, activity words, turn endings) is an enum of [`vocab`],
//! never a bare `String`.

pub mod admin;
pub mod approvals;
pub mod auth;
pub mod characters;
pub mod chat;
pub mod connectors;
pub mod error;
pub mod events;
pub mod inputs;
pub mod provenance;
pub mod results;
pub mod risk;
pub mod rules;
pub mod vocab;
pub mod waiting;

pub use admin::{
    AdminOverview, AdminUser, AdminUserUpdate, Policy, PolicyUpdate, SecondApprovalPolicy,
    SettingChange,
};
pub use approvals::{
    ActivityEntry, ActivityExport, ActivityFilter, AdminWaitingCall, DecideRequest, DecideResponse,
    Grant, PendingCall, SecondApproval, SecondDecideRequest,
};
pub use auth::{
    AuthOptions, ChangePasswordRequest, LoginRequest, MeResponse, MfaCodeRequest, MfaConfirmed,
    MfaEnrolRequest, MfaEnrolment, RevokedSessions, SessionInfo, SessionResponse, SignupRequest,
    SsoLinkRequest, User,
};
pub use characters::{CharacterWarning, Destination, UnusualCharacter};
pub use chat::*;
pub use connectors::*;
pub use error::ErrorBody;
pub use events::{ChatEvent, ChatEventMessage};
pub use inputs::{InputAnswer, InputAnswered, InputRequest};
pub use provenance::Provenance;
pub use results::{Redaction, ResultDecided, ResultDecision, ResultReview};
pub use risk::ToolRisk;
pub use rules::{Rule, RuleCondition, RuleRef, RuleRequest};
pub use vocab::{
    ActivityDecision, ActivityKind, ActivityOutcome, AuthType, CallOrigin, CharacterKind,
    ConditionOp, ConnectorStatus, Decision, DestinationKind, GrantKind, InputAction, InputMode,
    InputRequestStatus, MessageStatus, NoProseReason, OAuthStatus, PendingCallStatus, Resolution,
    ResultAction, ResultReviewReason, ResultReviewStatus, ReviewState, RiskFlag, RuleEffect,
    RuleScope, SpanEncoding, ToolCallStatus, TurnEnding, UnknownWord, ValueOrigin, WaitingKind,
};
pub use waiting::WaitingItem;

/// The header every non-GET `/api` request carries, equal to the session's
/// CSRF token.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// Shortest password the server accepts, in characters.
pub const PASSWORD_MIN_CHARS: usize = 12;

/// Longest password the server accepts, in characters: generous for
/// passphrases, bounded so a request cannot make the hasher chew megabytes.
pub const PASSWORD_MAX_CHARS: usize = 1024;
