-- Connectors (users' remote MCP servers) and the tools they offer
-- (DESIGN §2, §5). connectors / connector_tools are user-owned (policies on
-- auth.uid()); connector_secrets holds auth headers and bearer tokens,
-- AEAD-encrypted, service-only.

create table connectors (
    id uuid primary key,
    user_id uuid not null default auth.uid() references users (id) on delete cascade,
    name text not null,
    -- Used in tool names offered to the model: [a-z0-9_], unique per user.
    slug text not null,
    url text not null,
    auth_type text not null default 'none',
    -- Names of custom headers (values live in connector_secrets).
    header_names text[] not null default '{}',
    -- "Trust this server's safety annotations" (DESIGN §5 rule 3). Off by
    -- default; the gate of a later migration reads it.
    trust_annotations boolean not null default false,
    -- Result of the last Test or Refresh.
    status text not null default 'untested',
    last_error text,
    protocol_version text,
    last_checked_at timestamptz,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint connectors_name_length check (char_length(name) between 1 and 100),
    constraint connectors_slug_shape check (slug ~ '^[a-z0-9][a-z0-9_]{0,23}$'),
    constraint connectors_url_length check (char_length(url) between 8 and 2048),
    constraint connectors_auth_type check (auth_type in ('none', 'bearer', 'headers')),
    constraint connectors_status check (status in ('untested', 'ok', 'error')),
    constraint connectors_header_count check (cardinality(header_names) <= 20)
);
create unique index connectors_user_slug_key on connectors (user_id, slug);
create unique index connectors_user_name_key on connectors (user_id, lower(name));

create table connector_secrets (
    connector_id uuid primary key references connectors (id) on delete cascade,
    user_id uuid not null references users (id) on delete cascade,
    key_id text not null,
    nonce bytea not null,
    ciphertext bytea not null,
    updated_at timestamptz not null default now()
);

create table connector_tools (
    id uuid primary key,
    connector_id uuid not null references connectors (id) on delete cascade,
    user_id uuid not null default auth.uid() references users (id) on delete cascade,
    -- The tool's name on its server.
    name text not null,
    -- The name offered to the model: connector slug + "__" + sanitised tool
    -- name, <= 64 characters of [a-zA-Z0-9_-], unique per user, stable.
    model_name text not null,
    -- The descriptor as the server sent it last (name, title, description,
    -- inputSchema, outputSchema, annotations), and its digest: SHA-256 of
    -- its RFC 8785 canonical JSON.
    descriptor jsonb not null,
    descriptor_digest text not null,
    -- new | kept | declined | changed (a kept tool whose digest moved).
    review_state text not null default 'new',
    -- What the user kept: the descriptor and digest at the time they
    -- reviewed it. A `changed` tool shows both.
    reviewed_descriptor jsonb,
    reviewed_digest text,
    -- The server no longer lists it.
    removed boolean not null default false,
    first_seen_at timestamptz not null default now(),
    last_seen_at timestamptz not null default now(),
    changed_at timestamptz,
    constraint connector_tools_review_state check (review_state in ('new', 'kept', 'declined', 'changed')),
    constraint connector_tools_digest_shape check (descriptor_digest ~ '^[0-9a-f]{64}$'),
    constraint connector_tools_model_name_shape check (model_name ~ '^[a-zA-Z0-9_-]{1,64}$')
);
create unique index connector_tools_connector_name_key on connector_tools (connector_id, name);
create unique index connector_tools_user_model_name_key on connector_tools (user_id, model_name);

do $$
declare t text;
begin
    foreach t in array array['connectors', 'connector_tools'] loop
        execute format('alter table %I enable row level security', t);
        execute format('alter table %I force row level security', t);
        execute format('revoke all on %I from public, anon', t);
        execute format('grant select, insert, update, delete on %I to authenticated, service_role', t);
        execute format('create policy %I on %I for all to authenticated
                          using (user_id = auth.uid()) with check (user_id = auth.uid())',
                       t || '_owner', t);
        execute format('create policy %I on %I for all to service_role using (true) with check (true)',
                       t || '_service', t);
    end loop;
end
$$;

alter table connector_secrets enable row level security;
alter table connector_secrets force row level security;
revoke all on connector_secrets from public, anon, authenticated;
grant select, insert, update, delete on connector_secrets to service_role;
create policy connector_secrets_service on connector_secrets for all to service_role using (true) with check (true);
