-- Issue 13: deleting a chat read every event and every message of every
-- chat once per turn.
--
-- A chat's deletion cascades to its turns, and each turn's deletion to
-- the events and messages that name it (`chat_events.turn_id`,
-- `messages.turn_id`, `on delete cascade`): Postgres looks for them by
-- `turn_id` once per deleted turn, and with no index on it that is a
-- sequential scan of the whole table, all users' rows. Measured on a
-- scratch database (158,000 events, 4,400 messages): deleting a chat of
-- 2,000 turns took 15.4 s; with these indexes, 64 ms. The chat's own
-- cascades to the ledger and the input requests (`chat_id`) scanned
-- those tables once per chat, and a user's deletion does that once per
-- chat.
--
-- An event append writes one more index entry (pgbench, 4 s runs
-- alternated: 0.144–0.174 ms without, 0.161–0.171 ms with).
-- `create index` here (not concurrently: the migrations run in a
-- transaction, before the server serves) holds writes to these tables
-- while it builds.

create index chat_events_turn_idx on public.chat_events (turn_id);
create index messages_turn_idx on public.messages (turn_id);
create index mcp_pending_calls_chat_idx on public.mcp_pending_calls (chat_id);
create index mcp_input_requests_chat_idx on public.mcp_input_requests (chat_id);
