-- The approval ledger (DESIGN §6): one row per gated tool call, written
-- only by the server's state machine (backend/src/approvals.rs), each
-- transition a conditional UPDATE. Service-only: browsers and the
-- `authenticated` role can neither read nor write it; the API shows a
-- user their own live rows through the server.
--
--   pending → approved → executing → executed | failed
--   pending → denied | expired

-- A stored "this tool needs confirmation" flag (DESIGN §5 rule 3): only
-- `true` is honoured, a `false` is never trusted.
alter table connector_tools add column requires_confirmation boolean;

create table mcp_pending_calls (
    id uuid primary key,
    user_id uuid not null references users (id) on delete cascade,
    chat_id uuid not null references chats (id) on delete cascade,
    turn_id uuid not null references turns (id) on delete cascade,
    -- The model's id for the call (its `tool_call` event).
    call_id text not null,
    -- No foreign key: a connector deleted while a call waits must not take
    -- the evidence with it; the call re-checks ownership before it runs.
    connector_id uuid not null,
    connector_name text not null,
    tool_name text not null,
    model_tool_name text not null,
    -- The exact arguments, their RFC 8785 canonical JSON (the bytes that
    -- are digested, signed and sent) and its SHA-256.
    arguments jsonb not null,
    arguments_canonical text not null,
    arguments_digest text not null,
    descriptor_digest text not null,
    destination text not null,
    reason text not null,
    status text not null default 'pending',
    -- once | turn | always, with the approval.
    grant_kind text,
    -- HMAC-SHA256 (hex) over id, user, chat, turn, connector, tool,
    -- arguments digest and expiry, with the key named by hmac_key_id.
    hmac_key_id text not null,
    hmac text not null,
    error text,
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    decided_at timestamptz,
    claimed_at timestamptz,
    executed_at timestamptz,
    constraint mcp_pending_calls_status check (
        status in ('pending', 'approved', 'executing', 'executed', 'failed', 'denied', 'expired')),
    constraint mcp_pending_calls_grant check (grant_kind is null or grant_kind in ('once', 'turn', 'always')),
    constraint mcp_pending_calls_digest_shape check (arguments_digest ~ '^[0-9a-f]{64}$'),
    constraint mcp_pending_calls_expiry check (expires_at > created_at)
);
-- The caller's live calls; the sweep of terminal rows; start-up recovery.
create index mcp_pending_calls_user_live_idx on mcp_pending_calls (user_id) where status = 'pending';
create index mcp_pending_calls_turn_idx on mcp_pending_calls (turn_id);
create index mcp_pending_calls_open_idx on mcp_pending_calls (status)
    where status in ('pending', 'approved', 'executing');
create index mcp_pending_calls_created_idx on mcp_pending_calls (created_at);

alter table mcp_pending_calls enable row level security;
alter table mcp_pending_calls force row level security;
revoke all on mcp_pending_calls from public, anon, authenticated;
grant select, insert, update, delete on mcp_pending_calls to service_role;
create policy mcp_pending_calls_service on mcp_pending_calls for all to service_role
    using (true) with check (true);
