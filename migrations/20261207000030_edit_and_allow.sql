-- Issue 46 item 1, "Edit and allow" (docs/design.md §6.3): when the user
-- edited the arguments before allowing a call, the row's arguments,
-- digest and signature are the edited ones; these keep the digest of the
-- arguments the card showed and who edited them. Both null: not edited.
alter table mcp_pending_calls
    add column shown_arguments_digest text,
    add column edited_by uuid,
    add constraint mcp_pending_calls_edited
        check ((shown_arguments_digest is null) = (edited_by is null)
               and (edited_by is null or status in ('approved', 'executing', 'executed', 'failed')));
