-- Always-allow rules (DESIGN §5 rule 2): a durable, revocable rule for one
-- user, connector and tool, pinned to the tool's descriptor digest at the
-- time the user allowed it. A descriptor that changed since suspends the
-- rule (the gate compares digests at call time).
--
-- Only the server creates rules (from an approved call that executed,
-- approvals.rs); users read and revoke their own. Deleting the connector
-- deletes its rules; a refresh that finds a tool gone deletes the tool's.
-- "Allow for this turn" needs no table: it is the grant recorded on the
-- ledger row.

create table tool_grants (
    id uuid primary key,
    user_id uuid not null references users (id) on delete cascade,
    connector_id uuid not null references connectors (id) on delete cascade,
    tool_name text not null,
    descriptor_digest text not null,
    -- The ledger row whose approval created (or last re-pinned) it.
    created_from uuid,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint tool_grants_digest_shape check (descriptor_digest ~ '^[0-9a-f]{64}$')
);
create unique index tool_grants_connector_tool_key on tool_grants (connector_id, tool_name);
create index tool_grants_user_idx on tool_grants (user_id);
-- The gate's lookup of a turn grant on the ledger.
create index mcp_pending_calls_turn_grant_idx on mcp_pending_calls (turn_id, connector_id, tool_name)
    where grant_kind = 'turn';

alter table tool_grants enable row level security;
alter table tool_grants force row level security;
revoke all on tool_grants from public, anon, authenticated;
grant select, delete on tool_grants to authenticated;
grant select, insert, update, delete on tool_grants to service_role;
create policy tool_grants_owner on tool_grants for all to authenticated
    using (user_id = auth.uid()) with check (user_id = auth.uid());
create policy tool_grants_service on tool_grants for all to service_role
    using (true) with check (true);
