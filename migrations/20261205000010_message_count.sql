-- Issue 13: `store_turn` counted the chat's messages on the way to every
-- turn's first token.
--
-- The count tells the turn's task whether the history it read beside the
-- store, or kept from the chat's last turn, is still the chat's (turns.rs
-- `History::fits`). `count(*)` over the chat's messages grew with the
-- chat. The chat's row now carries it: `message_count`, written by the
-- same statement or transaction that adds a message (`store_turn` below,
-- which already updates the row for `last_seq`; turns.rs `finish` for an
-- answer), so it is read, not counted. Messages are only ever added, and
-- deleted only with their chat.

alter table public.chats add column message_count bigint not null default 0;

update public.chats c
   set message_count = (select count(*) from public.messages m where m.chat_id = c.id);

create or replace function store_turn(
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
               title = case when title = '' then p_title else title end,
               message_count = message_count + 1
         where id = p_chat returning last_seq, model, message_count
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
    -- The count before the turn's message, which `next` added.
    select turn.started_seq, turn.model, next.message_count - 1
      from turn cross join next cross join wake;
    if not found then
        -- The chat's row was written by `next` all the same: undone with
        -- the rest of the statement.
        raise exception 'nothing stored' using errcode = 'CSNOT';
    end if;
end
$$;
