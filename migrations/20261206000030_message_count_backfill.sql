-- Issue 13: the backfill of `chats.message_count` (migration
-- `message_count`) ran as the migrating role, the owner of `chats` and
-- `messages`. Row-level security is forced on both and has no policy for
-- that role, so it saw no chat and no message, and updated nothing: a
-- database upgraded across it kept 0 for every chat it had, plus the
-- messages added since. `turns::History::fits` then never matched for
-- those chats, and their history was read again before every turn
-- (slower, not wrong). Counted again here, with the force lifted on both
-- tables for this one statement, inside the migration's transaction, as
-- `session_stamps` does for `users`.
alter table chats no force row level security;
alter table messages no force row level security;
update chats c
   set message_count = n.count
  from (select chat_id, count(*) from messages group by chat_id) n
 where n.chat_id = c.id
   and c.message_count <> n.count;
alter table chats force row level security;
alter table messages force row level security;
