-- Issue 11, item 1 (DESIGN §2 "Connector authorization", §8): OAuth 2.1 for
-- connectors. Both tables are service-only, like connector_secrets and the
-- approval ledger: RLS forced, REVOKE ALL from anon and authenticated, and
-- every secret in them sealed (AEAD, the additional data binding it to the
-- user and the connector, so a row copied to another connector does not
-- open).

alter table connectors drop constraint connectors_auth_type;
alter table connectors add constraint connectors_auth_type
    check (auth_type in ('none', 'bearer', 'headers', 'oauth'));

-- A connector's OAuth client and tokens. `client_*` seals the client it
-- signs in as (the id and secret the user entered, or that dynamic
-- registration returned, with its redirect URI and scopes); `tokens_*`
-- seals rmcp's StoredCredentials (the token response, granted scopes, when
-- it was received), null until the first code exchange. `issuer` is the
-- authorization server both belong to: credentials are keyed by issuer, so
-- a different one at the next sign-in means a new registration and new
-- tokens. `resource` is the connector URL they were issued for: a token
-- is only ever sent there.
create table connector_oauth (
    connector_id uuid primary key references connectors (id) on delete cascade,
    user_id uuid not null references users (id) on delete cascade,
    issuer text,
    resource text not null,
    -- The authorization server's metadata as discovered at sign-in (its
    -- endpoints): public documents, not secret.
    metadata jsonb not null,
    client_key_id text not null,
    client_nonce bytea not null,
    client_ciphertext bytea not null,
    tokens_key_id text,
    tokens_nonce bytea,
    tokens_ciphertext bytea,
    -- connected | needs_sign_in (no tokens yet, a refresh was refused, or
    -- the server refused the token).
    status text not null default 'needs_sign_in',
    updated_at timestamptz not null default now(),
    constraint connector_oauth_status check (status in ('connected', 'needs_sign_in')),
    constraint connector_oauth_resource_length check (char_length(resource) between 8 and 2048),
    constraint connector_oauth_tokens_whole check (
        (tokens_key_id is null) = (tokens_nonce is null)
        and (tokens_nonce is null) = (tokens_ciphertext is null))
);

-- Authorization requests in flight: the `state` parameter's SHA-256 (the
-- state itself is never stored), who started it for which connector, and
-- sealed: rmcp's StoredAuthorizationState (PKCE verifier, expected issuer,
-- requested scopes) with the client and the metadata it was started with,
-- so the callback can land on any instance. Single use: the callback deletes the row it
-- reads; rows past `expires_at` are never read and are swept.
create table oauth_states (
    state_hash text primary key,
    user_id uuid not null references users (id) on delete cascade,
    connector_id uuid not null references connectors (id) on delete cascade,
    key_id text not null,
    nonce bytea not null,
    ciphertext bytea not null,
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    constraint oauth_states_hash_shape check (state_hash ~ '^[0-9a-f]{64}$')
);
create index oauth_states_expires_at on oauth_states (expires_at);

-- Service-only, spelled out per table (as connector_secrets is).
alter table connector_oauth enable row level security;
alter table connector_oauth force row level security;
revoke all on connector_oauth from public, anon, authenticated;
grant select, insert, update, delete on connector_oauth to service_role;
create policy connector_oauth_service on connector_oauth
    for all to service_role using (true) with check (true);

alter table oauth_states enable row level security;
alter table oauth_states force row level security;
revoke all on oauth_states from public, anon, authenticated;
grant select, insert, update, delete on oauth_states to service_role;
create policy oauth_states_service on oauth_states
    for all to service_role using (true) with check (true);
