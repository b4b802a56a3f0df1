-- Input requests (DESIGN §6a): a running MCP call's server asks the user,
-- through the chat, for a form's fields or to open a URL. One row per
-- question, written only by the server (backend/src/inputs.rs), each
-- transition a conditional UPDATE:
--
--   pending → accepted | declined | cancelled | expired
--
-- Service-only like the approval ledger: browsers and the `authenticated`
-- role can neither read nor write it; the API shows a user their own live
-- rows through the server.
create table mcp_input_requests (
    id uuid primary key,
    user_id uuid not null references users (id) on delete cascade,
    chat_id uuid not null references chats (id) on delete cascade,
    turn_id uuid not null references turns (id) on delete cascade,
    -- The model's id for the tool call that asks.
    call_id text not null,
    -- No foreign key, as in mcp_pending_calls: the evidence outlives a
    -- deleted connector.
    connector_id uuid not null,
    connector_name text not null,
    tool_name text not null,
    mode text not null,
    -- The server's words, as sent (bounded before insert).
    message text not null,
    requested_schema jsonb,
    url text,
    url_host text,
    -- The server's 2026-07-28 `requestState`, opaque, exactly as received
    -- (null for a legacy `elicitation/create`). Never read back into a
    -- call: the running call echoes its own copy.
    request_state text,
    status text not null default 'pending',
    -- What the user sent with `accept` (form mode).
    content jsonb,
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    answered_at timestamptz,
    constraint mcp_input_requests_mode check (mode in ('form', 'url')),
    constraint mcp_input_requests_shape check (
        (mode = 'form' and requested_schema is not null and url is null)
        or (mode = 'url' and url is not null and url_host is not null and requested_schema is null)),
    constraint mcp_input_requests_status check (
        status in ('pending', 'accepted', 'declined', 'cancelled', 'expired')),
    constraint mcp_input_requests_expiry check (expires_at > created_at)
);
create index mcp_input_requests_user_live_idx on mcp_input_requests (user_id) where status = 'pending';
create index mcp_input_requests_turn_idx on mcp_input_requests (turn_id);
create index mcp_input_requests_created_idx on mcp_input_requests (created_at);

alter table mcp_input_requests enable row level security;
alter table mcp_input_requests force row level security;
revoke all on mcp_input_requests from public, anon, authenticated;
grant select, insert, update, delete on mcp_input_requests to service_role;
create policy mcp_input_requests_service on mcp_input_requests for all to service_role
    using (true) with check (true);
