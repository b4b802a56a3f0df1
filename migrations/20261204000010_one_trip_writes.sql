-- Issue 13: a turn's writes in one round trip each. Storing a turn (its
-- message, its `turn_started`) and each of its events (the first token
-- among them) were BEGIN + the statement + COMMIT: three round trips in a
-- row on the way to the first token, twice. Each is now one statement, in
-- the implicit transaction of its one round trip: a function whose first
-- act is the role switch DESIGN §3 asks for at the start of each
-- user-scoped transaction (`…_as` below), around one that runs as its
-- caller, which the server also runs inside transactions of its own.

-- Appends an event to a chat's log, as whoever runs it (row-level security
-- applies: a chat the caller may not write gets no event, and null comes
-- back): the next sequence number (the row lock of the UPDATE orders
-- concurrent appends to one chat), the event, and the wake-up other
-- instances hear once the transaction commits. events.rs `append` runs it
-- inside a transaction of the server's. Names are schema-qualified: a
-- temporary table the session made cannot stand in for them.
create function append_chat_event(
    p_chat uuid,
    p_turn uuid,
    p_type text,
    p_data jsonb,
    p_channel text
) returns bigint
    language plpgsql volatile
    as $$
declare
    v_seq bigint;
begin
    update public.chats set last_seq = last_seq + 1 where id = p_chat
        returning last_seq into v_seq;
    if v_seq is null then
        return null;
    end if;
    insert into public.chat_events (chat_id, seq, turn_id, type, data)
        values (p_chat, v_seq, p_turn, p_type, p_data);
    perform pg_notify(p_channel, p_chat::text || ' ' || v_seq);
    return v_seq;
end
$$;
revoke all on function append_chat_event(uuid, uuid, text, jsonb, text) from public;
grant execute on function append_chat_event(uuid, uuid, text, jsonb, text)
    to authenticated, service_role;

-- The same, as a transaction of its own, as user p_user: events.rs
-- `append_alone`, run outside any transaction.
--
-- DESIGN §3 sets the role and the user id at the start of each user-scoped
-- transaction, local to it. So its first act is that switch —
-- `authenticated`, `auth.uid()` = p_user, both local to the transaction —
-- and the append runs after it, under row-level security, as that user.
-- It refuses to run once a role is set, so it is always the start of its
-- transaction's user scope and never changes the role of a transaction
-- already under way (a service_role one, say).
--
-- It grants nothing. It is SECURITY INVOKER, and `set_config('role', …)`
-- checks that the caller may become `authenticated`: the server's login
-- role may, and no other role gets past the first check (anon,
-- authenticated and service_role all have a role set). It is executable by
-- PUBLIC because that login role is the operator's to name, and it is
-- NOINHERIT: a grant to a role it may switch to would not reach it.
create function append_chat_event_as(
    p_user uuid,
    p_chat uuid,
    p_turn uuid,
    p_type text,
    p_data jsonb,
    p_channel text
) returns bigint
    language plpgsql volatile
    as $$
begin
    if current_setting('role') <> 'none' then
        raise exception 'append_chat_event_as starts its own transaction, and a role is set';
    end if;
    perform set_config('role', 'authenticated', true),
            set_config('countersign.user_id', p_user::text, true);
    return public.append_chat_event(p_chat, p_turn, p_type, p_data, p_channel);
end
$$;
grant execute on function append_chat_event_as(uuid, uuid, uuid, text, jsonb, text) to public;

-- Stores a turn of chat p_chat, as whoever runs it (row-level security
-- applies): the chat's next sequence number and, for its first message, its
-- title; the turn; its user message; its `turn_started` event (p_data, plus
-- the chat's model) and that event's wake-up. Returns the event's sequence
-- number, the chat's model and how many messages the chat had before this
-- one. When nothing could be stored (no such chat of the caller's, or a
-- turn of it still running) it fails with SQLSTATE CSNOT, so that the
-- chat's row, which the statement wrote before it tried the turn, is not
-- left changed: turns.rs `store` takes that error for "nothing stored".
create function store_turn(
    p_chat uuid,
    p_turn uuid,
    p_message uuid,
    p_title text,
    p_content text,
    p_data jsonb,
    p_channel text
) returns table (seq bigint, model text, messages bigint)
    language plpgsql volatile
    as $$
#variable_conflict use_column
begin
    return query
    with next as (
        update public.chats set last_seq = last_seq + 1, updated_at = now(),
               title = case when title = '' then p_title else title end
         where id = p_chat returning last_seq, model
    ), turn as (
        insert into public.turns (id, chat_id, model, started_seq)
        select p_turn, p_chat, model, last_seq from next
        on conflict (chat_id) where status = 'running' do nothing
        returning started_seq, model
    ), message as (
        insert into public.messages (id, chat_id, turn_id, role, content)
        select p_message, p_chat, p_turn, 'user', p_content from turn
    ), event as (
        insert into public.chat_events (chat_id, seq, turn_id, type, data)
        select p_chat, started_seq, p_turn, 'turn_started',
               p_data || jsonb_build_object('model', turn.model)
          from turn
    ), wake as materialized (
        select pg_notify(p_channel, p_chat::text || ' ' || turn.started_seq) from turn
    )
    select turn.started_seq, turn.model,
           (select count(*) from public.messages m where m.chat_id = p_chat)
      from turn cross join wake;
    if not found then
        -- The chat's row was written by `next` all the same: undone with
        -- the rest of the statement.
        raise exception 'nothing stored' using errcode = 'CSNOT';
    end if;
end
$$;
revoke all on function store_turn(uuid, uuid, uuid, text, text, jsonb, text) from public;
grant execute on function store_turn(uuid, uuid, uuid, text, text, jsonb, text)
    to authenticated, service_role;

-- The same, as a transaction of its own, as user p_user: turns.rs
-- `store_alone`, run outside any transaction. The same first act and the
-- same refusal as `append_chat_event_as`.
create function store_turn_as(
    p_user uuid,
    p_chat uuid,
    p_turn uuid,
    p_message uuid,
    p_title text,
    p_content text,
    p_data jsonb,
    p_channel text
) returns table (seq bigint, model text, messages bigint)
    language plpgsql volatile
    as $$
begin
    if current_setting('role') <> 'none' then
        raise exception 'store_turn_as starts its own transaction, and a role is set';
    end if;
    perform set_config('role', 'authenticated', true),
            set_config('countersign.user_id', p_user::text, true);
    return query select * from public.store_turn(p_chat, p_turn, p_message, p_title,
                                                 p_content, p_data, p_channel);
end
$$;
grant execute on function store_turn_as(uuid, uuid, uuid, uuid, text, text, jsonb, text) to public;
