-- Issue 46 item 2, results reviewed before the model reads them
-- (docs/design.md §6.5a). One row per result that waits for the user,
-- written only by the server (backend/src/results.rs), each transition a
-- conditional UPDATE:
--
--   waiting → passed | redacted | withheld | expired
--
-- `expired` (nobody reviewed it in time, the turn stopped, or the process
-- died) withholds it: an unreviewed result never reaches the model. The
-- result's text is kept only while the row waits; deciding clears it.
-- Service-only like the approval ledger: the API shows a user their own
-- waiting rows through the server.
create table mcp_result_reviews (
    id uuid primary key,
    user_id uuid not null references users (id) on delete cascade,
    chat_id uuid not null references chats (id) on delete cascade,
    turn_id uuid not null references turns (id) on delete cascade,
    -- The model's id for the tool call whose result it is.
    call_id text not null,
    -- No foreign key, as in mcp_pending_calls: the record outlives a
    -- deleted connector.
    connector_id uuid not null,
    connector_name text not null,
    tool_name text not null,
    reason text not null,
    -- The text the model would read (bounded before insert); null once
    -- decided.
    result text,
    is_error boolean not null,
    result_chars bigint not null,
    status text not null default 'waiting',
    -- With `redacted`: the spans, as the user chose them.
    redactions jsonb,
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    decided_at timestamptz,
    constraint mcp_result_reviews_reason check (reason in ('instructions', 'connector', 'policy')),
    constraint mcp_result_reviews_status check (
        status in ('waiting', 'passed', 'redacted', 'withheld', 'expired')),
    constraint mcp_result_reviews_text check ((status = 'waiting') = (result is not null)),
    constraint mcp_result_reviews_expiry check (expires_at > created_at)
);
create index mcp_result_reviews_user_live_idx on mcp_result_reviews (user_id) where status = 'waiting';
create index mcp_result_reviews_turn_idx on mcp_result_reviews (turn_id);
-- A chat's and a user's deletion cascade here by these.
create index mcp_result_reviews_chat_idx on mcp_result_reviews (chat_id);
create index mcp_result_reviews_created_idx on mcp_result_reviews (created_at);

alter table mcp_result_reviews enable row level security;
alter table mcp_result_reviews force row level security;
revoke all on mcp_result_reviews from public, anon, authenticated;
grant select, insert, update, delete on mcp_result_reviews to service_role;
create policy mcp_result_reviews_service on mcp_result_reviews for all to service_role
    using (true) with check (true);

-- The user's "Review results first" on a connector.
alter table connectors add column review_results boolean not null default false;

-- The admin's: glob patterns over `connector-host/tool` whose results
-- always wait for review (as `always_ask_tools` reads them).
alter table admin_policy add column review_results_tools text[] not null default '{}';
alter table admin_policy drop constraint admin_policy_bounds;
alter table admin_policy add constraint admin_policy_bounds check (
    cardinality(always_ask_tools) <= 200 and cardinality(connector_hosts) <= 200
    and cardinality(internal_destinations) <= 200
    and cardinality(review_results_tools) <= 200);
