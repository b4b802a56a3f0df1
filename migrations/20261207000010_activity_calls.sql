-- Activity as an audit trail (issue 45): the log is narrowed by call (a
-- call's `outcome` entry follows its `decided` entry's connector, tool,
-- decision and flag), so reading an outcome entry looks up the decided
-- entry of the same call. This index makes that one lookup per entry
-- instead of a scan of the user's log.
create index activity_call_idx on activity (user_id, (entry ->> 'call_ref'), seq);
