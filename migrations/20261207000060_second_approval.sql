-- Issue 46 item 4, a second approver (docs/design.md §6.3). When the admin
-- policy asks for one (tool patterns, or destinations a call sends to),
-- the requester's approve moves the call to `awaiting_second`; an
-- approver who is not the requester decides it from their inbox. One TTL
-- (`expires_at`) covers both decisions:
--
--   pending → awaiting_second → approved | denied | expired
--   pending → denied | expired
--
-- Service-only, like the rest of the ledger.

-- May give the second approval (administrators may too).
alter table users add column is_approver boolean not null default false;

-- Patterns over `connector-host/tool` (as `always_ask_tools`) and
-- destinations (as `internal_destinations`) whose calls need a second
-- approval.
alter table admin_policy
    add column second_approval_tools text[] not null default '{}',
    add column second_approval_destinations text[] not null default '{}';

alter table mcp_pending_calls
    -- The policy asked for a second approval when the call was proposed.
    add column second_approval boolean not null default false,
    -- When the requester approved (the first decision).
    add column requester_approved_at timestamptz,
    -- Who gave the second decision, and their e-mail then (the record
    -- outlives the account).
    add column second_approver_id uuid references users (id) on delete set null,
    add column second_approver_email text,
    add column second_decided_at timestamptz;

alter table mcp_pending_calls drop constraint mcp_pending_calls_status;
alter table mcp_pending_calls add constraint mcp_pending_calls_status check (
    status in ('pending', 'awaiting_second', 'approved', 'executing', 'executed', 'failed',
               'denied', 'expired'));
alter table mcp_pending_calls add constraint mcp_pending_calls_second check (
    status <> 'awaiting_second' or (second_approval and requester_approved_at is not null));
-- Nobody approves their own call twice.
alter table mcp_pending_calls add constraint mcp_pending_calls_second_not_requester check (
    second_approver_id is null or second_approver_id <> user_id);

-- The approvers' inbox.
create index mcp_pending_calls_awaiting_second_idx on mcp_pending_calls (created_at)
    where status = 'awaiting_second';
-- Recovery reads every open row.
drop index mcp_pending_calls_open_idx;
create index mcp_pending_calls_open_idx on mcp_pending_calls (status)
    where status in ('pending', 'awaiting_second', 'approved', 'executing');
-- Who decided a call, for the account's deletion.
create index mcp_pending_calls_second_approver_idx on mcp_pending_calls (second_approver_id)
    where second_approver_id is not null;
