-- Issue 46 item 3, rules with conditions (docs/design.md §5 "Rules"): allow,
-- ask or deny the calls of a connector host's tools, optionally only when
-- argument values meet conditions. `user_id` null is an administrator's rule
-- for everyone: only the service reads and writes those (the gate reads
-- them at call time, the admin API lists them), so a user never sees
-- another's rules nor the admin's rows themselves.
create table tool_rules (
    id uuid primary key,
    user_id uuid references users (id) on delete cascade,
    created_by uuid references users (id) on delete set null,
    -- `*`, `*.domain`, or a normalised host.
    connector_host text not null,
    -- A glob over the tool's name.
    tool_pattern text not null,
    -- `[{"argument"?, "op", "value"}]`, as checked by `rules::parse`.
    conditions jsonb not null default '[]',
    effect text not null,
    created_at timestamptz not null default now(),
    constraint tool_rules_effect check (effect in ('allow', 'ask', 'deny')),
    constraint tool_rules_bounds check (
        char_length(connector_host) between 1 and 300
        and char_length(tool_pattern) between 1 and 300
        and jsonb_typeof(conditions) = 'array'
        and jsonb_array_length(conditions) <= 20
        and octet_length(conditions::text) <= 65536)
);
create index tool_rules_user_idx on tool_rules (user_id, created_at);
create index tool_rules_admin_idx on tool_rules (created_at) where user_id is null;

alter table tool_rules enable row level security;
alter table tool_rules force row level security;
revoke all on tool_rules from public, anon, authenticated;
grant select, insert, delete on tool_rules to authenticated;
grant select, insert, delete on tool_rules to service_role;
create policy tool_rules_owner on tool_rules for all to authenticated
    using (user_id = (select auth.uid()))
    with check (user_id = (select auth.uid()) and created_by = (select auth.uid()));
create policy tool_rules_service on tool_rules for all to service_role
    using (true) with check (true);

-- Domains and hosts inside the firm: a flow whose every destination (and
-- whose connector) is one of them is shown with its provenance but not
-- flagged as leaving.
alter table admin_policy add column internal_destinations text[] not null default '{}';
alter table admin_policy drop constraint admin_policy_bounds;
alter table admin_policy add constraint admin_policy_bounds check (
    cardinality(always_ask_tools) <= 200 and cardinality(connector_hosts) <= 200
    and cardinality(internal_destinations) <= 200);
