-- Issue 13: each owner policy read `auth.uid()` for every row it looked at.
--
-- `user_id = auth.uid()` is inlined into each scan's filter, so
-- `current_setting('countersign.user_id')` and its cast to uuid ran once per
-- row: the count of a chat's messages in `store_turn` (on the way to every
-- turn's first token) spent 0.14 of its 0.15 ms on it for a chat of 380
-- messages, and each history read, stream read and tools read paid the
-- same per row. Written as `(select auth.uid())` the value is an InitPlan:
-- computed once per statement, then compared like a constant.
--
-- The rule is unchanged (DESIGN §3: a user's rows are those whose
-- `user_id` is `auth.uid()`): the setting is local to the transaction and
-- cannot change within a statement, so once per statement and once per
-- row read the same value.
alter policy activity_owner on public.activity
    using (user_id = (select auth.uid()));
alter policy chat_events_owner on public.chat_events
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
alter policy chats_owner on public.chats
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
alter policy connector_tools_owner on public.connector_tools
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
alter policy connectors_owner on public.connectors
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
alter policy messages_owner on public.messages
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
alter policy profiles_owner on public.profiles
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
alter policy tool_grants_owner on public.tool_grants
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
alter policy turns_owner on public.turns
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
