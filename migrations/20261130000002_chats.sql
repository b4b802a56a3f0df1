-- Chats, turns, messages and the per-chat event log (DESIGN §7), and users'
-- provider keys (DESIGN §2, §3).
--
-- chats / turns / messages / chat_events are user-owned: read and written
-- as `authenticated`, policies on auth.uid(). provider_keys holds secrets:
-- service-only, revoked from anon and authenticated.

create table chats (
    id uuid primary key,
    user_id uuid not null default auth.uid() references users (id) on delete cascade,
    title text not null default '',
    model text not null,
    -- The last event sequence number handed out for this chat. Bumped with
    -- `update … returning`, whose row lock orders concurrent appends.
    last_seq bigint not null default 0,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint chats_title_length check (char_length(title) <= 200),
    constraint chats_model_shape check (model ~ '^[a-z0-9_-]+/.+$' and char_length(model) <= 200)
);
create index chats_user_updated_idx on chats (user_id, updated_at desc);

create table turns (
    id uuid primary key,
    chat_id uuid not null references chats (id) on delete cascade,
    user_id uuid not null default auth.uid() references users (id) on delete cascade,
    status text not null default 'running',
    model text not null,
    -- The sequence number of this turn's `turn_started` event.
    started_seq bigint not null,
    no_prose_reason text,
    error text,
    -- Set by Stop; the instance running the turn also hears it by NOTIFY.
    cancel_requested boolean not null default false,
    -- Bumped every few seconds by the task running the turn: a running turn
    -- whose heartbeat is old lost its process and is marked failed.
    heartbeat_at timestamptz not null default now(),
    started_at timestamptz not null default now(),
    finished_at timestamptz,
    constraint turns_status check (status in ('running', 'done', 'failed', 'cancelled'))
);
-- At most one running turn per chat: the 409 of POST …/messages.
create unique index turns_one_running_per_chat on turns (chat_id) where status = 'running';
create index turns_chat_idx on turns (chat_id, started_at);

create table messages (
    id uuid primary key,
    chat_id uuid not null references chats (id) on delete cascade,
    user_id uuid not null default auth.uid() references users (id) on delete cascade,
    turn_id uuid not null references turns (id) on delete cascade,
    role text not null,
    content text not null,
    -- For assistant messages: complete, stopped (cancelled mid-way), failed.
    status text not null default 'complete',
    created_at timestamptz not null default now(),
    constraint messages_role check (role in ('user', 'assistant')),
    constraint messages_status check (status in ('complete', 'stopped', 'failed')),
    constraint messages_content_length check (char_length(content) <= 200000)
);
create index messages_chat_idx on messages (chat_id, created_at);

create table chat_events (
    chat_id uuid not null references chats (id) on delete cascade,
    seq bigint not null,
    user_id uuid not null default auth.uid() references users (id) on delete cascade,
    turn_id uuid references turns (id) on delete cascade,
    type text not null,
    data jsonb not null,
    created_at timestamptz not null default now(),
    primary key (chat_id, seq)
);

do $$
declare t text;
begin
    foreach t in array array['chats', 'turns', 'messages', 'chat_events'] loop
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

-- Users' own provider API keys, AEAD-encrypted (XChaCha20-Poly1305) with
-- COUNTERSIGN_SECRET_KEY. The associated data binds a ciphertext to its
-- user and provider, so rows cannot be swapped.
create table provider_keys (
    user_id uuid not null references users (id) on delete cascade,
    provider text not null,
    key_id text not null,
    nonce bytea not null,
    ciphertext bytea not null,
    updated_at timestamptz not null default now(),
    primary key (user_id, provider),
    constraint provider_keys_provider check (provider in ('anthropic', 'openai'))
);
alter table provider_keys enable row level security;
alter table provider_keys force row level security;
revoke all on provider_keys from public, anon, authenticated;
grant select, insert, update, delete on provider_keys to service_role;
create policy provider_keys_service on provider_keys for all to service_role using (true) with check (true);
