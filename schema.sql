--
-- PostgreSQL database dump
--



SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: auth; Type: SCHEMA; Schema: -; Owner: countersign_owner
--

CREATE SCHEMA auth;


ALTER SCHEMA auth OWNER TO countersign_owner;

--
-- Name: uid(); Type: FUNCTION; Schema: auth; Owner: countersign_owner
--

CREATE FUNCTION auth.uid() RETURNS uuid
    LANGUAGE sql STABLE
    AS $$ select nullif(current_setting('countersign.user_id', true), '')::uuid $$;


ALTER FUNCTION auth.uid() OWNER TO countersign_owner;

--
-- Name: append_chat_event(uuid, uuid, text, jsonb, text); Type: FUNCTION; Schema: public; Owner: countersign_owner
--

CREATE FUNCTION public.append_chat_event(p_chat uuid, p_turn uuid, p_type text, p_data jsonb, p_channel text) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
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


ALTER FUNCTION public.append_chat_event(p_chat uuid, p_turn uuid, p_type text, p_data jsonb, p_channel text) OWNER TO countersign_owner;

--
-- Name: append_chat_event_as(uuid, uuid, uuid, text, jsonb, text); Type: FUNCTION; Schema: public; Owner: countersign_owner
--

CREATE FUNCTION public.append_chat_event_as(p_user uuid, p_chat uuid, p_turn uuid, p_type text, p_data jsonb, p_channel text) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
begin
    if current_setting('role') <> 'none' then
        raise exception 'append_chat_event_as starts its own transaction, and a role is set';
    end if;
    perform set_config('role', 'authenticated', true),
            set_config('countersign.user_id', p_user::text, true);
    return public.append_chat_event(p_chat, p_turn, p_type, p_data, p_channel);
end
$$;


ALTER FUNCTION public.append_chat_event_as(p_user uuid, p_chat uuid, p_turn uuid, p_type text, p_data jsonb, p_channel text) OWNER TO countersign_owner;

--
-- Name: append_chat_event_stamped_as(uuid, uuid, uuid, text, jsonb, text); Type: FUNCTION; Schema: public; Owner: countersign_owner
--

CREATE FUNCTION public.append_chat_event_stamped_as(p_user uuid, p_chat uuid, p_turn uuid, p_type text, p_data jsonb, p_channel text) RETURNS TABLE(seq bigint, epoch bigint, at_ms bigint)
    LANGUAGE plpgsql
    AS $$
declare
    v_seq bigint;
begin
    if current_setting('role') <> 'none' then
        raise exception 'append_chat_event_stamped_as starts its own transaction, and a role is set';
    end if;
    perform set_config('role', 'authenticated', true),
            set_config('countersign.user_id', p_user::text, true);
    perform public.lock_session_epoch(p_user, true);
    v_seq := public.append_chat_event(p_chat, p_turn, p_type, p_data, p_channel);
    if v_seq is null then
        return;
    end if;
    -- A statement of its own: a snapshot taken after the lock.
    return query
        select v_seq,
               (select e.epoch from public.session_epochs e where e.user_id = (select auth.uid())),
               floor(extract(epoch from clock_timestamp()) * 1000)::int8;
end
$$;


ALTER FUNCTION public.append_chat_event_stamped_as(p_user uuid, p_chat uuid, p_turn uuid, p_type text, p_data jsonb, p_channel text) OWNER TO countersign_owner;

--
-- Name: check_session_stamp(bigint, bigint); Type: FUNCTION; Schema: public; Owner: countersign_owner
--

CREATE FUNCTION public.check_session_stamp(p_epoch bigint, p_ends_ms bigint) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $$
begin
    if not exists (select 1 from public.session_epochs
                    where user_id = (select auth.uid()) and epoch = p_epoch)
       or now() >= to_timestamp(p_ends_ms / 1000.0) then
        raise exception 'the session changed since it was looked up' using errcode = 'CSSES';
    end if;
    return true;
end
$$;


ALTER FUNCTION public.check_session_stamp(p_epoch bigint, p_ends_ms bigint) OWNER TO countersign_owner;

--
-- Name: lock_session_epoch(uuid, boolean); Type: FUNCTION; Schema: public; Owner: countersign_owner
--

CREATE FUNCTION public.lock_session_epoch(p_user uuid, p_shared boolean) RETURNS void
    LANGUAGE plpgsql
    AS $$
begin
    if p_shared then
        if current_setting('transaction_isolation') <> 'read committed' then
            raise exception 'a stamped write runs at read committed, not %',
                current_setting('transaction_isolation')
                using errcode = 'CSISO';
        end if;
        perform pg_advisory_xact_lock_shared(1936683887, hashtext(p_user::text));
    else
        perform pg_advisory_xact_lock(1936683887, hashtext(p_user::text));
    end if;
end
$$;


ALTER FUNCTION public.lock_session_epoch(p_user uuid, p_shared boolean) OWNER TO countersign_owner;

--
-- Name: session_epoch_after_session_change(); Type: FUNCTION; Schema: public; Owner: countersign_owner
--

CREATE FUNCTION public.session_epoch_after_session_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
    perform public.lock_session_epoch(old.user_id, false);
    if tg_op = 'UPDATE' and new.user_id <> old.user_id then
        perform public.lock_session_epoch(new.user_id, false);
    end if;
    update public.session_epochs set epoch = epoch + 1
     where user_id = old.user_id
        or (tg_op = 'UPDATE' and user_id = new.user_id);
    return null;
end
$$;


ALTER FUNCTION public.session_epoch_after_session_change() OWNER TO countersign_owner;

--
-- Name: session_epoch_after_user_change(); Type: FUNCTION; Schema: public; Owner: countersign_owner
--

CREATE FUNCTION public.session_epoch_after_user_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
    perform public.lock_session_epoch(new.id, false);
    update public.session_epochs set epoch = epoch + 1 where user_id = new.id;
    return null;
end
$$;


ALTER FUNCTION public.session_epoch_after_user_change() OWNER TO countersign_owner;

--
-- Name: session_epoch_for_new_user(); Type: FUNCTION; Schema: public; Owner: countersign_owner
--

CREATE FUNCTION public.session_epoch_for_new_user() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
    insert into public.session_epochs (user_id) values (new.id);
    return null;
end
$$;


ALTER FUNCTION public.session_epoch_for_new_user() OWNER TO countersign_owner;

--
-- Name: store_turn(uuid, uuid, uuid, text, text, jsonb, text); Type: FUNCTION; Schema: public; Owner: countersign_owner
--

CREATE FUNCTION public.store_turn(p_chat uuid, p_turn uuid, p_message uuid, p_title text, p_content text, p_data jsonb, p_channel text) RETURNS TABLE(seq bigint, model text, messages bigint)
    LANGUAGE plpgsql
    AS $$
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


ALTER FUNCTION public.store_turn(p_chat uuid, p_turn uuid, p_message uuid, p_title text, p_content text, p_data jsonb, p_channel text) OWNER TO countersign_owner;

--
-- Name: store_turn_as(uuid, uuid, uuid, uuid, text, text, jsonb, text); Type: FUNCTION; Schema: public; Owner: countersign_owner
--

CREATE FUNCTION public.store_turn_as(p_user uuid, p_chat uuid, p_turn uuid, p_message uuid, p_title text, p_content text, p_data jsonb, p_channel text) RETURNS TABLE(seq bigint, model text, messages bigint)
    LANGUAGE plpgsql
    AS $$
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


ALTER FUNCTION public.store_turn_as(p_user uuid, p_chat uuid, p_turn uuid, p_message uuid, p_title text, p_content text, p_data jsonb, p_channel text) OWNER TO countersign_owner;

--
-- Name: store_turn_stamped_as(uuid, bigint, bigint, uuid, uuid, uuid, text, text, jsonb, text); Type: FUNCTION; Schema: public; Owner: countersign_owner
--

CREATE FUNCTION public.store_turn_stamped_as(p_user uuid, p_epoch bigint, p_ends_ms bigint, p_chat uuid, p_turn uuid, p_message uuid, p_title text, p_content text, p_data jsonb, p_channel text) RETURNS TABLE(seq bigint, model text, messages bigint, epoch bigint, at_ms bigint)
    LANGUAGE plpgsql
    AS $$
begin
    if current_setting('role') <> 'none' then
        raise exception 'store_turn_stamped_as starts its own transaction, and a role is set';
    end if;
    perform set_config('role', 'authenticated', true),
            set_config('countersign.user_id', p_user::text, true);
    perform public.lock_session_epoch(p_user, true);
    -- A statement of its own: a snapshot taken after the lock.
    perform public.check_session_stamp(p_epoch, p_ends_ms);
    return query
        select s.seq, s.model, s.messages, p_epoch,
               floor(extract(epoch from clock_timestamp()) * 1000)::int8
          from public.store_turn(p_chat, p_turn, p_message, p_title,
                                 p_content, p_data, p_channel) s;
end
$$;


ALTER FUNCTION public.store_turn_stamped_as(p_user uuid, p_epoch bigint, p_ends_ms bigint, p_chat uuid, p_turn uuid, p_message uuid, p_title text, p_content text, p_data jsonb, p_channel text) OWNER TO countersign_owner;

SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: _sqlx_migrations; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public._sqlx_migrations (
    version bigint NOT NULL,
    description text NOT NULL,
    installed_on timestamp with time zone DEFAULT now() NOT NULL,
    success boolean NOT NULL,
    checksum bytea NOT NULL,
    execution_time bigint NOT NULL
);

ALTER TABLE ONLY public._sqlx_migrations FORCE ROW LEVEL SECURITY;


ALTER TABLE public._sqlx_migrations OWNER TO countersign_owner;

--
-- Name: activity; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.activity (
    seq bigint NOT NULL,
    user_id uuid NOT NULL,
    entry jsonb NOT NULL,
    prev_hash text NOT NULL,
    hash text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT activity_hash_shape CHECK (((hash ~ '^[0-9a-f]{64}$'::text) AND (prev_hash ~ '^[0-9a-f]{64}$'::text)))
);

ALTER TABLE ONLY public.activity FORCE ROW LEVEL SECURITY;


ALTER TABLE public.activity OWNER TO countersign_owner;

--
-- Name: admin_policy; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.admin_policy (
    id boolean DEFAULT true NOT NULL,
    forbid_always_allow boolean DEFAULT false NOT NULL,
    forbid_trust_annotations boolean DEFAULT false NOT NULL,
    always_ask_tools text[] DEFAULT '{}'::text[] NOT NULL,
    connector_hosts text[] DEFAULT '{}'::text[] NOT NULL,
    require_mfa boolean DEFAULT false NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_by uuid,
    internal_destinations text[] DEFAULT '{}'::text[] NOT NULL,
    review_results_tools text[] DEFAULT '{}'::text[] NOT NULL,
    second_approval_tools text[] DEFAULT '{}'::text[] NOT NULL,
    second_approval_destinations text[] DEFAULT '{}'::text[] NOT NULL,
    CONSTRAINT admin_policy_bounds CHECK (((cardinality(always_ask_tools) <= 200) AND (cardinality(connector_hosts) <= 200) AND (cardinality(internal_destinations) <= 200) AND (cardinality(review_results_tools) <= 200))),
    CONSTRAINT admin_policy_one_row CHECK (id)
);

ALTER TABLE ONLY public.admin_policy FORCE ROW LEVEL SECURITY;


ALTER TABLE public.admin_policy OWNER TO countersign_owner;

--
-- Name: chat_events; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.chat_events (
    chat_id uuid NOT NULL,
    seq bigint NOT NULL,
    user_id uuid DEFAULT auth.uid() NOT NULL,
    turn_id uuid,
    type text NOT NULL,
    data jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY public.chat_events FORCE ROW LEVEL SECURITY;


ALTER TABLE public.chat_events OWNER TO countersign_owner;

--
-- Name: chats; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.chats (
    id uuid NOT NULL,
    user_id uuid DEFAULT auth.uid() NOT NULL,
    title text DEFAULT ''::text NOT NULL,
    model text NOT NULL,
    last_seq bigint DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    message_count bigint DEFAULT 0 NOT NULL,
    CONSTRAINT chats_model_shape CHECK (((model ~ '^[a-z0-9_-]+/.+$'::text) AND (char_length(model) <= 200))),
    CONSTRAINT chats_title_length CHECK ((char_length(title) <= 200))
);

ALTER TABLE ONLY public.chats FORCE ROW LEVEL SECURITY;


ALTER TABLE public.chats OWNER TO countersign_owner;

--
-- Name: connector_oauth; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.connector_oauth (
    connector_id uuid NOT NULL,
    user_id uuid NOT NULL,
    issuer text,
    resource text NOT NULL,
    metadata jsonb NOT NULL,
    client_key_id text NOT NULL,
    client_nonce bytea NOT NULL,
    client_ciphertext bytea NOT NULL,
    tokens_key_id text,
    tokens_nonce bytea,
    tokens_ciphertext bytea,
    status text DEFAULT 'needs_sign_in'::text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT connector_oauth_resource_length CHECK (((char_length(resource) >= 8) AND (char_length(resource) <= 2048))),
    CONSTRAINT connector_oauth_status CHECK ((status = ANY (ARRAY['connected'::text, 'needs_sign_in'::text]))),
    CONSTRAINT connector_oauth_tokens_whole CHECK ((((tokens_key_id IS NULL) = (tokens_nonce IS NULL)) AND ((tokens_nonce IS NULL) = (tokens_ciphertext IS NULL))))
);

ALTER TABLE ONLY public.connector_oauth FORCE ROW LEVEL SECURITY;


ALTER TABLE public.connector_oauth OWNER TO countersign_owner;

--
-- Name: connector_secrets; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.connector_secrets (
    connector_id uuid NOT NULL,
    user_id uuid NOT NULL,
    key_id text NOT NULL,
    nonce bytea NOT NULL,
    ciphertext bytea NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY public.connector_secrets FORCE ROW LEVEL SECURITY;


ALTER TABLE public.connector_secrets OWNER TO countersign_owner;

--
-- Name: connector_tools; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.connector_tools (
    id uuid NOT NULL,
    connector_id uuid NOT NULL,
    user_id uuid DEFAULT auth.uid() NOT NULL,
    name text NOT NULL,
    model_name text NOT NULL,
    descriptor jsonb NOT NULL,
    descriptor_digest text NOT NULL,
    review_state text DEFAULT 'new'::text NOT NULL,
    reviewed_descriptor jsonb,
    reviewed_digest text,
    removed boolean DEFAULT false NOT NULL,
    first_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    changed_at timestamp with time zone,
    requires_confirmation boolean,
    CONSTRAINT connector_tools_digest_shape CHECK ((descriptor_digest ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT connector_tools_model_name_shape CHECK ((model_name ~ '^[a-zA-Z0-9_-]{1,64}$'::text)),
    CONSTRAINT connector_tools_review_state CHECK ((review_state = ANY (ARRAY['new'::text, 'kept'::text, 'declined'::text, 'changed'::text])))
);

ALTER TABLE ONLY public.connector_tools FORCE ROW LEVEL SECURITY;


ALTER TABLE public.connector_tools OWNER TO countersign_owner;

--
-- Name: connectors; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.connectors (
    id uuid NOT NULL,
    user_id uuid DEFAULT auth.uid() NOT NULL,
    name text NOT NULL,
    slug text NOT NULL,
    url text NOT NULL,
    auth_type text DEFAULT 'none'::text NOT NULL,
    header_names text[] DEFAULT '{}'::text[] NOT NULL,
    trust_annotations boolean DEFAULT false NOT NULL,
    status text DEFAULT 'untested'::text NOT NULL,
    last_error text,
    protocol_version text,
    last_checked_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    dropped_tools jsonb DEFAULT '[]'::jsonb NOT NULL,
    review_results boolean DEFAULT false NOT NULL,
    CONSTRAINT connectors_auth_type CHECK ((auth_type = ANY (ARRAY['none'::text, 'bearer'::text, 'headers'::text, 'oauth'::text]))),
    CONSTRAINT connectors_dropped_tools_shape CHECK (((jsonb_typeof(dropped_tools) = 'array'::text) AND (jsonb_array_length(dropped_tools) <= 500))),
    CONSTRAINT connectors_header_count CHECK ((cardinality(header_names) <= 20)),
    CONSTRAINT connectors_name_length CHECK (((char_length(name) >= 1) AND (char_length(name) <= 100))),
    CONSTRAINT connectors_slug_shape CHECK ((slug ~ '^[a-z0-9][a-z0-9_]{0,23}$'::text)),
    CONSTRAINT connectors_status CHECK ((status = ANY (ARRAY['untested'::text, 'ok'::text, 'error'::text]))),
    CONSTRAINT connectors_url_length CHECK (((char_length(url) >= 8) AND (char_length(url) <= 2048)))
);

ALTER TABLE ONLY public.connectors FORCE ROW LEVEL SECURITY;


ALTER TABLE public.connectors OWNER TO countersign_owner;

--
-- Name: login_failures; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.login_failures (
    id bigint NOT NULL,
    email text NOT NULL,
    ip inet,
    failed_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY public.login_failures FORCE ROW LEVEL SECURITY;


ALTER TABLE public.login_failures OWNER TO countersign_owner;

--
-- Name: login_failures_id_seq; Type: SEQUENCE; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.login_failures ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.login_failures_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: mcp_input_requests; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.mcp_input_requests (
    id uuid NOT NULL,
    user_id uuid NOT NULL,
    chat_id uuid NOT NULL,
    turn_id uuid NOT NULL,
    call_id text NOT NULL,
    connector_id uuid NOT NULL,
    connector_name text NOT NULL,
    tool_name text NOT NULL,
    mode text NOT NULL,
    message text NOT NULL,
    requested_schema jsonb,
    url text,
    url_host text,
    request_state text,
    status text DEFAULT 'pending'::text NOT NULL,
    content jsonb,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    answered_at timestamp with time zone,
    CONSTRAINT mcp_input_requests_expiry CHECK ((expires_at > created_at)),
    CONSTRAINT mcp_input_requests_mode CHECK ((mode = ANY (ARRAY['form'::text, 'url'::text]))),
    CONSTRAINT mcp_input_requests_shape CHECK ((((mode = 'form'::text) AND (requested_schema IS NOT NULL) AND (url IS NULL)) OR ((mode = 'url'::text) AND (url IS NOT NULL) AND (url_host IS NOT NULL) AND (requested_schema IS NULL)))),
    CONSTRAINT mcp_input_requests_status CHECK ((status = ANY (ARRAY['pending'::text, 'accepted'::text, 'declined'::text, 'cancelled'::text, 'expired'::text])))
);

ALTER TABLE ONLY public.mcp_input_requests FORCE ROW LEVEL SECURITY;


ALTER TABLE public.mcp_input_requests OWNER TO countersign_owner;

--
-- Name: mcp_pending_calls; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.mcp_pending_calls (
    id uuid NOT NULL,
    user_id uuid NOT NULL,
    chat_id uuid NOT NULL,
    turn_id uuid NOT NULL,
    call_id text NOT NULL,
    connector_id uuid NOT NULL,
    connector_name text NOT NULL,
    tool_name text NOT NULL,
    model_tool_name text NOT NULL,
    arguments jsonb NOT NULL,
    arguments_canonical text NOT NULL,
    arguments_digest text NOT NULL,
    descriptor_digest text NOT NULL,
    destination text NOT NULL,
    reason text NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    grant_kind text,
    hmac_key_id text NOT NULL,
    hmac text NOT NULL,
    error text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    decided_at timestamp with time zone,
    claimed_at timestamp with time zone,
    executed_at timestamp with time zone,
    destination_url text NOT NULL,
    offered_grants text[] NOT NULL,
    decide_by timestamp with time zone NOT NULL,
    provenance jsonb,
    decline_reason text,
    shown_arguments_digest text,
    edited_by uuid,
    second_approval boolean DEFAULT false NOT NULL,
    requester_approved_at timestamp with time zone,
    second_approver_id uuid,
    second_approver_email text,
    second_decided_at timestamp with time zone,
    CONSTRAINT mcp_pending_calls_decide_by CHECK ((decide_by <= expires_at)),
    CONSTRAINT mcp_pending_calls_decline_reason CHECK (((decline_reason IS NULL) OR ((status = 'denied'::text) AND (char_length(decline_reason) <= 1000)))),
    CONSTRAINT mcp_pending_calls_digest_shape CHECK ((arguments_digest ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT mcp_pending_calls_edited CHECK ((((shown_arguments_digest IS NULL) = (edited_by IS NULL)) AND ((edited_by IS NULL) OR (status = ANY (ARRAY['approved'::text, 'executing'::text, 'executed'::text, 'failed'::text]))))),
    CONSTRAINT mcp_pending_calls_expiry CHECK ((expires_at > created_at)),
    CONSTRAINT mcp_pending_calls_grant CHECK (((grant_kind IS NULL) OR (grant_kind = ANY (ARRAY['once'::text, 'turn'::text, 'always'::text])))),
    CONSTRAINT mcp_pending_calls_offered_grants CHECK (((offered_grants <@ ARRAY['once'::text, 'turn'::text, 'always'::text]) AND ('once'::text = ANY (offered_grants)))),
    CONSTRAINT mcp_pending_calls_second CHECK (((status <> 'awaiting_second'::text) OR (second_approval AND (requester_approved_at IS NOT NULL)))),
    CONSTRAINT mcp_pending_calls_second_not_requester CHECK (((second_approver_id IS NULL) OR (second_approver_id <> user_id))),
    CONSTRAINT mcp_pending_calls_status CHECK ((status = ANY (ARRAY['pending'::text, 'awaiting_second'::text, 'approved'::text, 'executing'::text, 'executed'::text, 'failed'::text, 'denied'::text, 'expired'::text])))
);

ALTER TABLE ONLY public.mcp_pending_calls FORCE ROW LEVEL SECURITY;


ALTER TABLE public.mcp_pending_calls OWNER TO countersign_owner;

--
-- Name: mcp_result_reviews; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.mcp_result_reviews (
    id uuid NOT NULL,
    user_id uuid NOT NULL,
    chat_id uuid NOT NULL,
    turn_id uuid NOT NULL,
    call_id text NOT NULL,
    connector_id uuid NOT NULL,
    connector_name text NOT NULL,
    tool_name text NOT NULL,
    reason text NOT NULL,
    result text,
    is_error boolean NOT NULL,
    result_chars bigint NOT NULL,
    status text DEFAULT 'waiting'::text NOT NULL,
    redactions jsonb,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    decided_at timestamp with time zone,
    CONSTRAINT mcp_result_reviews_expiry CHECK ((expires_at > created_at)),
    CONSTRAINT mcp_result_reviews_reason CHECK ((reason = ANY (ARRAY['instructions'::text, 'connector'::text, 'policy'::text]))),
    CONSTRAINT mcp_result_reviews_status CHECK ((status = ANY (ARRAY['waiting'::text, 'passed'::text, 'redacted'::text, 'withheld'::text, 'expired'::text]))),
    CONSTRAINT mcp_result_reviews_text CHECK (((status = 'waiting'::text) = (result IS NOT NULL)))
);

ALTER TABLE ONLY public.mcp_result_reviews FORCE ROW LEVEL SECURITY;


ALTER TABLE public.mcp_result_reviews OWNER TO countersign_owner;

--
-- Name: messages; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.messages (
    id uuid NOT NULL,
    chat_id uuid NOT NULL,
    user_id uuid DEFAULT auth.uid() NOT NULL,
    turn_id uuid NOT NULL,
    role text NOT NULL,
    content text NOT NULL,
    status text DEFAULT 'complete'::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT messages_content_length CHECK ((char_length(content) <= 200000)),
    CONSTRAINT messages_role CHECK ((role = ANY (ARRAY['user'::text, 'assistant'::text]))),
    CONSTRAINT messages_status CHECK ((status = ANY (ARRAY['complete'::text, 'stopped'::text, 'failed'::text])))
);

ALTER TABLE ONLY public.messages FORCE ROW LEVEL SECURITY;


ALTER TABLE public.messages OWNER TO countersign_owner;

--
-- Name: mfa_recovery_codes; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.mfa_recovery_codes (
    user_id uuid NOT NULL,
    code_hash bytea NOT NULL,
    used_at timestamp with time zone,
    CONSTRAINT mfa_recovery_codes_hash_length CHECK ((octet_length(code_hash) = 32))
);

ALTER TABLE ONLY public.mfa_recovery_codes FORCE ROW LEVEL SECURITY;


ALTER TABLE public.mfa_recovery_codes OWNER TO countersign_owner;

--
-- Name: mfa_totp; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.mfa_totp (
    user_id uuid NOT NULL,
    key_id text NOT NULL,
    nonce bytea NOT NULL,
    ciphertext bytea NOT NULL,
    confirmed_at timestamp with time zone,
    last_step bigint,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY public.mfa_totp FORCE ROW LEVEL SECURITY;


ALTER TABLE public.mfa_totp OWNER TO countersign_owner;

--
-- Name: oauth_states; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.oauth_states (
    state_hash text NOT NULL,
    user_id uuid NOT NULL,
    connector_id uuid NOT NULL,
    key_id text NOT NULL,
    nonce bytea NOT NULL,
    ciphertext bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT oauth_states_hash_shape CHECK ((state_hash ~ '^[0-9a-f]{64}$'::text))
);

ALTER TABLE ONLY public.oauth_states FORCE ROW LEVEL SECURITY;


ALTER TABLE public.oauth_states OWNER TO countersign_owner;

--
-- Name: oidc_links; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.oidc_links (
    token_hash bytea NOT NULL,
    user_id uuid NOT NULL,
    issuer text NOT NULL,
    subject text NOT NULL,
    email text,
    groups text[] DEFAULT '{}'::text[] NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT oidc_links_expiry CHECK ((expires_at > created_at))
);

ALTER TABLE ONLY public.oidc_links FORCE ROW LEVEL SECURITY;


ALTER TABLE public.oidc_links OWNER TO countersign_owner;

--
-- Name: oidc_logins; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.oidc_logins (
    state_hash bytea NOT NULL,
    nonce text NOT NULL,
    pkce_verifier text NOT NULL,
    purpose text NOT NULL,
    return_to text DEFAULT '/'::text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT oidc_logins_expiry CHECK ((expires_at > created_at)),
    CONSTRAINT oidc_logins_purpose CHECK ((purpose = 'sign_in'::text))
);

ALTER TABLE ONLY public.oidc_logins FORCE ROW LEVEL SECURITY;


ALTER TABLE public.oidc_logins OWNER TO countersign_owner;

--
-- Name: profiles; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.profiles (
    user_id uuid NOT NULL,
    display_name text NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT profiles_display_name_length CHECK (((char_length(display_name) >= 1) AND (char_length(display_name) <= 100)))
);

ALTER TABLE ONLY public.profiles FORCE ROW LEVEL SECURITY;


ALTER TABLE public.profiles OWNER TO countersign_owner;

--
-- Name: provider_keys; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.provider_keys (
    user_id uuid NOT NULL,
    provider text NOT NULL,
    key_id text NOT NULL,
    nonce bytea NOT NULL,
    ciphertext bytea NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT provider_keys_provider CHECK ((provider = ANY (ARRAY['anthropic'::text, 'openai'::text])))
);

ALTER TABLE ONLY public.provider_keys FORCE ROW LEVEL SECURITY;


ALTER TABLE public.provider_keys OWNER TO countersign_owner;

--
-- Name: session_epochs; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.session_epochs (
    user_id uuid NOT NULL,
    epoch bigint DEFAULT 0 NOT NULL
);

ALTER TABLE ONLY public.session_epochs FORCE ROW LEVEL SECURITY;


ALTER TABLE public.session_epochs OWNER TO countersign_owner;

--
-- Name: sessions; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.sessions (
    id uuid NOT NULL,
    user_id uuid NOT NULL,
    token_hash bytea NOT NULL,
    csrf_token text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_seen_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    revoked_at timestamp with time zone,
    user_agent text,
    ip inet,
    mfa_verified_at timestamp with time zone,
    CONSTRAINT sessions_token_hash_length CHECK ((octet_length(token_hash) = 32))
);

ALTER TABLE ONLY public.sessions FORCE ROW LEVEL SECURITY;


ALTER TABLE public.sessions OWNER TO countersign_owner;

--
-- Name: signup_attempts; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.signup_attempts (
    id bigint NOT NULL,
    ip inet NOT NULL,
    attempted_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE ONLY public.signup_attempts FORCE ROW LEVEL SECURITY;


ALTER TABLE public.signup_attempts OWNER TO countersign_owner;

--
-- Name: signup_attempts_id_seq; Type: SEQUENCE; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.signup_attempts ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.signup_attempts_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: tool_grants; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.tool_grants (
    id uuid NOT NULL,
    user_id uuid NOT NULL,
    connector_id uuid NOT NULL,
    tool_name text NOT NULL,
    descriptor_digest text NOT NULL,
    created_from uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT tool_grants_digest_shape CHECK ((descriptor_digest ~ '^[0-9a-f]{64}$'::text))
);

ALTER TABLE ONLY public.tool_grants FORCE ROW LEVEL SECURITY;


ALTER TABLE public.tool_grants OWNER TO countersign_owner;

--
-- Name: tool_rules; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.tool_rules (
    id uuid NOT NULL,
    user_id uuid,
    created_by uuid,
    connector_host text NOT NULL,
    tool_pattern text NOT NULL,
    conditions jsonb DEFAULT '[]'::jsonb NOT NULL,
    effect text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT tool_rules_bounds CHECK ((((char_length(connector_host) >= 1) AND (char_length(connector_host) <= 300)) AND ((char_length(tool_pattern) >= 1) AND (char_length(tool_pattern) <= 300)) AND (jsonb_typeof(conditions) = 'array'::text) AND (jsonb_array_length(conditions) <= 20) AND (octet_length((conditions)::text) <= 65536))),
    CONSTRAINT tool_rules_effect CHECK ((effect = ANY (ARRAY['allow'::text, 'ask'::text, 'deny'::text])))
);

ALTER TABLE ONLY public.tool_rules FORCE ROW LEVEL SECURITY;


ALTER TABLE public.tool_rules OWNER TO countersign_owner;

--
-- Name: turns; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.turns (
    id uuid NOT NULL,
    chat_id uuid NOT NULL,
    user_id uuid DEFAULT auth.uid() NOT NULL,
    status text DEFAULT 'running'::text NOT NULL,
    model text NOT NULL,
    started_seq bigint NOT NULL,
    no_prose_reason text,
    error text,
    cancel_requested boolean DEFAULT false NOT NULL,
    heartbeat_at timestamp with time zone DEFAULT now() NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT turns_status CHECK ((status = ANY (ARRAY['running'::text, 'done'::text, 'failed'::text, 'cancelled'::text])))
);

ALTER TABLE ONLY public.turns FORCE ROW LEVEL SECURITY;


ALTER TABLE public.turns OWNER TO countersign_owner;

--
-- Name: user_identities; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.user_identities (
    issuer text NOT NULL,
    subject text NOT NULL,
    user_id uuid NOT NULL,
    email text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    last_sign_in_at timestamp with time zone
);

ALTER TABLE ONLY public.user_identities FORCE ROW LEVEL SECURITY;


ALTER TABLE public.user_identities OWNER TO countersign_owner;

--
-- Name: users; Type: TABLE; Schema: public; Owner: countersign_owner
--

CREATE TABLE public.users (
    id uuid NOT NULL,
    email text NOT NULL,
    password_hash text NOT NULL,
    is_admin boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    disabled_at timestamp with time zone,
    must_change_password boolean DEFAULT false NOT NULL,
    is_approver boolean DEFAULT false NOT NULL,
    CONSTRAINT users_email_length CHECK (((char_length(email) >= 3) AND (char_length(email) <= 254))),
    CONSTRAINT users_email_lower CHECK ((email = lower(email)))
);

ALTER TABLE ONLY public.users FORCE ROW LEVEL SECURITY;


ALTER TABLE public.users OWNER TO countersign_owner;

--
-- Name: _sqlx_migrations _sqlx_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public._sqlx_migrations
    ADD CONSTRAINT _sqlx_migrations_pkey PRIMARY KEY (version);


--
-- Name: activity activity_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.activity
    ADD CONSTRAINT activity_pkey PRIMARY KEY (seq);


--
-- Name: admin_policy admin_policy_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.admin_policy
    ADD CONSTRAINT admin_policy_pkey PRIMARY KEY (id);


--
-- Name: chat_events chat_events_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.chat_events
    ADD CONSTRAINT chat_events_pkey PRIMARY KEY (chat_id, seq);


--
-- Name: chats chats_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.chats
    ADD CONSTRAINT chats_pkey PRIMARY KEY (id);


--
-- Name: connector_oauth connector_oauth_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.connector_oauth
    ADD CONSTRAINT connector_oauth_pkey PRIMARY KEY (connector_id);


--
-- Name: connector_secrets connector_secrets_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.connector_secrets
    ADD CONSTRAINT connector_secrets_pkey PRIMARY KEY (connector_id);


--
-- Name: connector_tools connector_tools_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.connector_tools
    ADD CONSTRAINT connector_tools_pkey PRIMARY KEY (id);


--
-- Name: connectors connectors_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.connectors
    ADD CONSTRAINT connectors_pkey PRIMARY KEY (id);


--
-- Name: login_failures login_failures_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.login_failures
    ADD CONSTRAINT login_failures_pkey PRIMARY KEY (id);


--
-- Name: mcp_input_requests mcp_input_requests_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mcp_input_requests
    ADD CONSTRAINT mcp_input_requests_pkey PRIMARY KEY (id);


--
-- Name: mcp_pending_calls mcp_pending_calls_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mcp_pending_calls
    ADD CONSTRAINT mcp_pending_calls_pkey PRIMARY KEY (id);


--
-- Name: mcp_result_reviews mcp_result_reviews_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mcp_result_reviews
    ADD CONSTRAINT mcp_result_reviews_pkey PRIMARY KEY (id);


--
-- Name: messages messages_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_pkey PRIMARY KEY (id);


--
-- Name: mfa_recovery_codes mfa_recovery_codes_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mfa_recovery_codes
    ADD CONSTRAINT mfa_recovery_codes_pkey PRIMARY KEY (user_id, code_hash);


--
-- Name: mfa_totp mfa_totp_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mfa_totp
    ADD CONSTRAINT mfa_totp_pkey PRIMARY KEY (user_id);


--
-- Name: oauth_states oauth_states_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.oauth_states
    ADD CONSTRAINT oauth_states_pkey PRIMARY KEY (state_hash);


--
-- Name: oidc_links oidc_links_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.oidc_links
    ADD CONSTRAINT oidc_links_pkey PRIMARY KEY (token_hash);


--
-- Name: oidc_logins oidc_logins_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.oidc_logins
    ADD CONSTRAINT oidc_logins_pkey PRIMARY KEY (state_hash);


--
-- Name: profiles profiles_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.profiles
    ADD CONSTRAINT profiles_pkey PRIMARY KEY (user_id);


--
-- Name: provider_keys provider_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.provider_keys
    ADD CONSTRAINT provider_keys_pkey PRIMARY KEY (user_id, provider);


--
-- Name: session_epochs session_epochs_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.session_epochs
    ADD CONSTRAINT session_epochs_pkey PRIMARY KEY (user_id);


--
-- Name: sessions sessions_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (id);


--
-- Name: signup_attempts signup_attempts_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.signup_attempts
    ADD CONSTRAINT signup_attempts_pkey PRIMARY KEY (id);


--
-- Name: tool_grants tool_grants_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.tool_grants
    ADD CONSTRAINT tool_grants_pkey PRIMARY KEY (id);


--
-- Name: tool_rules tool_rules_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.tool_rules
    ADD CONSTRAINT tool_rules_pkey PRIMARY KEY (id);


--
-- Name: turns turns_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.turns
    ADD CONSTRAINT turns_pkey PRIMARY KEY (id);


--
-- Name: user_identities user_identities_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.user_identities
    ADD CONSTRAINT user_identities_pkey PRIMARY KEY (issuer, subject);


--
-- Name: users users_pkey; Type: CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);


--
-- Name: activity_call_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX activity_call_idx ON public.activity USING btree (user_id, ((entry ->> 'call_ref'::text)), seq);


--
-- Name: activity_user_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX activity_user_idx ON public.activity USING btree (user_id, seq DESC);


--
-- Name: chat_events_turn_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX chat_events_turn_idx ON public.chat_events USING btree (turn_id);


--
-- Name: chats_user_updated_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX chats_user_updated_idx ON public.chats USING btree (user_id, updated_at DESC);


--
-- Name: connector_tools_connector_name_key; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE UNIQUE INDEX connector_tools_connector_name_key ON public.connector_tools USING btree (connector_id, name);


--
-- Name: connector_tools_user_model_name_key; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE UNIQUE INDEX connector_tools_user_model_name_key ON public.connector_tools USING btree (user_id, model_name);


--
-- Name: connectors_user_name_key; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE UNIQUE INDEX connectors_user_name_key ON public.connectors USING btree (user_id, lower(name));


--
-- Name: connectors_user_slug_key; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE UNIQUE INDEX connectors_user_slug_key ON public.connectors USING btree (user_id, slug);


--
-- Name: login_failures_email_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX login_failures_email_idx ON public.login_failures USING btree (email, failed_at);


--
-- Name: login_failures_ip_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX login_failures_ip_idx ON public.login_failures USING btree (ip, failed_at);


--
-- Name: mcp_input_requests_chat_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_input_requests_chat_idx ON public.mcp_input_requests USING btree (chat_id);


--
-- Name: mcp_input_requests_created_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_input_requests_created_idx ON public.mcp_input_requests USING btree (created_at);


--
-- Name: mcp_input_requests_turn_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_input_requests_turn_idx ON public.mcp_input_requests USING btree (turn_id);


--
-- Name: mcp_input_requests_user_live_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_input_requests_user_live_idx ON public.mcp_input_requests USING btree (user_id) WHERE (status = 'pending'::text);


--
-- Name: mcp_pending_calls_awaiting_second_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_pending_calls_awaiting_second_idx ON public.mcp_pending_calls USING btree (created_at) WHERE (status = 'awaiting_second'::text);


--
-- Name: mcp_pending_calls_chat_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_pending_calls_chat_idx ON public.mcp_pending_calls USING btree (chat_id);


--
-- Name: mcp_pending_calls_created_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_pending_calls_created_idx ON public.mcp_pending_calls USING btree (created_at);


--
-- Name: mcp_pending_calls_open_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_pending_calls_open_idx ON public.mcp_pending_calls USING btree (status) WHERE (status = ANY (ARRAY['pending'::text, 'awaiting_second'::text, 'approved'::text, 'executing'::text]));


--
-- Name: mcp_pending_calls_second_approver_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_pending_calls_second_approver_idx ON public.mcp_pending_calls USING btree (second_approver_id) WHERE (second_approver_id IS NOT NULL);


--
-- Name: mcp_pending_calls_turn_grant_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_pending_calls_turn_grant_idx ON public.mcp_pending_calls USING btree (turn_id, connector_id, tool_name) WHERE (grant_kind = 'turn'::text);


--
-- Name: mcp_pending_calls_turn_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_pending_calls_turn_idx ON public.mcp_pending_calls USING btree (turn_id);


--
-- Name: mcp_pending_calls_user_live_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_pending_calls_user_live_idx ON public.mcp_pending_calls USING btree (user_id) WHERE (status = 'pending'::text);


--
-- Name: mcp_result_reviews_chat_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_result_reviews_chat_idx ON public.mcp_result_reviews USING btree (chat_id);


--
-- Name: mcp_result_reviews_created_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_result_reviews_created_idx ON public.mcp_result_reviews USING btree (created_at);


--
-- Name: mcp_result_reviews_turn_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_result_reviews_turn_idx ON public.mcp_result_reviews USING btree (turn_id);


--
-- Name: mcp_result_reviews_user_live_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX mcp_result_reviews_user_live_idx ON public.mcp_result_reviews USING btree (user_id) WHERE (status = 'waiting'::text);


--
-- Name: messages_chat_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX messages_chat_idx ON public.messages USING btree (chat_id, created_at);


--
-- Name: messages_turn_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX messages_turn_idx ON public.messages USING btree (turn_id);


--
-- Name: oauth_states_expires_at; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX oauth_states_expires_at ON public.oauth_states USING btree (expires_at);


--
-- Name: oidc_links_user_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX oidc_links_user_idx ON public.oidc_links USING btree (user_id);


--
-- Name: oidc_logins_expires_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX oidc_logins_expires_idx ON public.oidc_logins USING btree (expires_at);


--
-- Name: sessions_token_hash_key; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE UNIQUE INDEX sessions_token_hash_key ON public.sessions USING btree (token_hash);


--
-- Name: sessions_user_id_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX sessions_user_id_idx ON public.sessions USING btree (user_id);


--
-- Name: signup_attempts_ip_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX signup_attempts_ip_idx ON public.signup_attempts USING btree (ip, attempted_at);


--
-- Name: tool_grants_connector_tool_key; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE UNIQUE INDEX tool_grants_connector_tool_key ON public.tool_grants USING btree (connector_id, tool_name);


--
-- Name: tool_grants_user_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX tool_grants_user_idx ON public.tool_grants USING btree (user_id);


--
-- Name: tool_rules_admin_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX tool_rules_admin_idx ON public.tool_rules USING btree (created_at) WHERE (user_id IS NULL);


--
-- Name: tool_rules_user_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX tool_rules_user_idx ON public.tool_rules USING btree (user_id, created_at);


--
-- Name: turns_chat_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX turns_chat_idx ON public.turns USING btree (chat_id, started_at);


--
-- Name: turns_one_running_per_chat; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE UNIQUE INDEX turns_one_running_per_chat ON public.turns USING btree (chat_id) WHERE (status = 'running'::text);


--
-- Name: user_identities_user_idx; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE INDEX user_identities_user_idx ON public.user_identities USING btree (user_id);


--
-- Name: users_email_key; Type: INDEX; Schema: public; Owner: countersign_owner
--

CREATE UNIQUE INDEX users_email_key ON public.users USING btree (email);


--
-- Name: sessions session_epoch_after_session_delete; Type: TRIGGER; Schema: public; Owner: countersign_owner
--

CREATE TRIGGER session_epoch_after_session_delete AFTER DELETE ON public.sessions FOR EACH ROW EXECUTE FUNCTION public.session_epoch_after_session_change();


--
-- Name: sessions session_epoch_after_session_update; Type: TRIGGER; Schema: public; Owner: countersign_owner
--

CREATE TRIGGER session_epoch_after_session_update AFTER UPDATE ON public.sessions FOR EACH ROW WHEN (((to_jsonb(old.*) - 'last_seen_at'::text) IS DISTINCT FROM (to_jsonb(new.*) - 'last_seen_at'::text))) EXECUTE FUNCTION public.session_epoch_after_session_change();


--
-- Name: users session_epoch_after_user_change; Type: TRIGGER; Schema: public; Owner: countersign_owner
--

CREATE TRIGGER session_epoch_after_user_change AFTER UPDATE ON public.users FOR EACH ROW WHEN ((old.* IS DISTINCT FROM new.*)) EXECUTE FUNCTION public.session_epoch_after_user_change();


--
-- Name: users session_epoch_for_new_user; Type: TRIGGER; Schema: public; Owner: countersign_owner
--

CREATE TRIGGER session_epoch_for_new_user AFTER INSERT ON public.users FOR EACH ROW EXECUTE FUNCTION public.session_epoch_for_new_user();


--
-- Name: admin_policy admin_policy_updated_by_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.admin_policy
    ADD CONSTRAINT admin_policy_updated_by_fkey FOREIGN KEY (updated_by) REFERENCES public.users(id) ON DELETE SET NULL;


--
-- Name: chat_events chat_events_chat_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.chat_events
    ADD CONSTRAINT chat_events_chat_id_fkey FOREIGN KEY (chat_id) REFERENCES public.chats(id) ON DELETE CASCADE;


--
-- Name: chat_events chat_events_turn_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.chat_events
    ADD CONSTRAINT chat_events_turn_id_fkey FOREIGN KEY (turn_id) REFERENCES public.turns(id) ON DELETE CASCADE;


--
-- Name: chat_events chat_events_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.chat_events
    ADD CONSTRAINT chat_events_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: chats chats_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.chats
    ADD CONSTRAINT chats_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: connector_oauth connector_oauth_connector_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.connector_oauth
    ADD CONSTRAINT connector_oauth_connector_id_fkey FOREIGN KEY (connector_id) REFERENCES public.connectors(id) ON DELETE CASCADE;


--
-- Name: connector_oauth connector_oauth_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.connector_oauth
    ADD CONSTRAINT connector_oauth_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: connector_secrets connector_secrets_connector_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.connector_secrets
    ADD CONSTRAINT connector_secrets_connector_id_fkey FOREIGN KEY (connector_id) REFERENCES public.connectors(id) ON DELETE CASCADE;


--
-- Name: connector_secrets connector_secrets_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.connector_secrets
    ADD CONSTRAINT connector_secrets_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: connector_tools connector_tools_connector_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.connector_tools
    ADD CONSTRAINT connector_tools_connector_id_fkey FOREIGN KEY (connector_id) REFERENCES public.connectors(id) ON DELETE CASCADE;


--
-- Name: connector_tools connector_tools_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.connector_tools
    ADD CONSTRAINT connector_tools_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: connectors connectors_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.connectors
    ADD CONSTRAINT connectors_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: mcp_input_requests mcp_input_requests_chat_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mcp_input_requests
    ADD CONSTRAINT mcp_input_requests_chat_id_fkey FOREIGN KEY (chat_id) REFERENCES public.chats(id) ON DELETE CASCADE;


--
-- Name: mcp_input_requests mcp_input_requests_turn_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mcp_input_requests
    ADD CONSTRAINT mcp_input_requests_turn_id_fkey FOREIGN KEY (turn_id) REFERENCES public.turns(id) ON DELETE CASCADE;


--
-- Name: mcp_input_requests mcp_input_requests_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mcp_input_requests
    ADD CONSTRAINT mcp_input_requests_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: mcp_pending_calls mcp_pending_calls_chat_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mcp_pending_calls
    ADD CONSTRAINT mcp_pending_calls_chat_id_fkey FOREIGN KEY (chat_id) REFERENCES public.chats(id) ON DELETE CASCADE;


--
-- Name: mcp_pending_calls mcp_pending_calls_second_approver_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mcp_pending_calls
    ADD CONSTRAINT mcp_pending_calls_second_approver_id_fkey FOREIGN KEY (second_approver_id) REFERENCES public.users(id) ON DELETE SET NULL;


--
-- Name: mcp_pending_calls mcp_pending_calls_turn_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mcp_pending_calls
    ADD CONSTRAINT mcp_pending_calls_turn_id_fkey FOREIGN KEY (turn_id) REFERENCES public.turns(id) ON DELETE CASCADE;


--
-- Name: mcp_pending_calls mcp_pending_calls_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mcp_pending_calls
    ADD CONSTRAINT mcp_pending_calls_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: mcp_result_reviews mcp_result_reviews_chat_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mcp_result_reviews
    ADD CONSTRAINT mcp_result_reviews_chat_id_fkey FOREIGN KEY (chat_id) REFERENCES public.chats(id) ON DELETE CASCADE;


--
-- Name: mcp_result_reviews mcp_result_reviews_turn_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mcp_result_reviews
    ADD CONSTRAINT mcp_result_reviews_turn_id_fkey FOREIGN KEY (turn_id) REFERENCES public.turns(id) ON DELETE CASCADE;


--
-- Name: mcp_result_reviews mcp_result_reviews_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mcp_result_reviews
    ADD CONSTRAINT mcp_result_reviews_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: messages messages_chat_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_chat_id_fkey FOREIGN KEY (chat_id) REFERENCES public.chats(id) ON DELETE CASCADE;


--
-- Name: messages messages_turn_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_turn_id_fkey FOREIGN KEY (turn_id) REFERENCES public.turns(id) ON DELETE CASCADE;


--
-- Name: messages messages_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.messages
    ADD CONSTRAINT messages_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: mfa_recovery_codes mfa_recovery_codes_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mfa_recovery_codes
    ADD CONSTRAINT mfa_recovery_codes_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: mfa_totp mfa_totp_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.mfa_totp
    ADD CONSTRAINT mfa_totp_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: oauth_states oauth_states_connector_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.oauth_states
    ADD CONSTRAINT oauth_states_connector_id_fkey FOREIGN KEY (connector_id) REFERENCES public.connectors(id) ON DELETE CASCADE;


--
-- Name: oauth_states oauth_states_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.oauth_states
    ADD CONSTRAINT oauth_states_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: oidc_links oidc_links_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.oidc_links
    ADD CONSTRAINT oidc_links_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: profiles profiles_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.profiles
    ADD CONSTRAINT profiles_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: provider_keys provider_keys_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.provider_keys
    ADD CONSTRAINT provider_keys_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: session_epochs session_epochs_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.session_epochs
    ADD CONSTRAINT session_epochs_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: sessions sessions_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.sessions
    ADD CONSTRAINT sessions_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: tool_grants tool_grants_connector_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.tool_grants
    ADD CONSTRAINT tool_grants_connector_id_fkey FOREIGN KEY (connector_id) REFERENCES public.connectors(id) ON DELETE CASCADE;


--
-- Name: tool_grants tool_grants_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.tool_grants
    ADD CONSTRAINT tool_grants_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: tool_rules tool_rules_created_by_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.tool_rules
    ADD CONSTRAINT tool_rules_created_by_fkey FOREIGN KEY (created_by) REFERENCES public.users(id) ON DELETE SET NULL;


--
-- Name: tool_rules tool_rules_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.tool_rules
    ADD CONSTRAINT tool_rules_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: turns turns_chat_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.turns
    ADD CONSTRAINT turns_chat_id_fkey FOREIGN KEY (chat_id) REFERENCES public.chats(id) ON DELETE CASCADE;


--
-- Name: turns turns_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.turns
    ADD CONSTRAINT turns_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: user_identities user_identities_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: countersign_owner
--

ALTER TABLE ONLY public.user_identities
    ADD CONSTRAINT user_identities_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id) ON DELETE CASCADE;


--
-- Name: _sqlx_migrations; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public._sqlx_migrations ENABLE ROW LEVEL SECURITY;

--
-- Name: activity; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.activity ENABLE ROW LEVEL SECURITY;

--
-- Name: activity activity_owner; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY activity_owner ON public.activity FOR SELECT TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: activity activity_service_append; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY activity_service_append ON public.activity FOR INSERT TO service_role WITH CHECK (true);


--
-- Name: activity activity_service_read; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY activity_service_read ON public.activity FOR SELECT TO service_role USING (true);


--
-- Name: admin_policy; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.admin_policy ENABLE ROW LEVEL SECURITY;

--
-- Name: admin_policy admin_policy_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY admin_policy_service ON public.admin_policy TO service_role USING (true) WITH CHECK (true);


--
-- Name: chat_events; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.chat_events ENABLE ROW LEVEL SECURITY;

--
-- Name: chat_events chat_events_owner; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY chat_events_owner ON public.chat_events TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: chat_events chat_events_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY chat_events_service ON public.chat_events TO service_role USING (true) WITH CHECK (true);


--
-- Name: chats; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.chats ENABLE ROW LEVEL SECURITY;

--
-- Name: chats chats_owner; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY chats_owner ON public.chats TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: chats chats_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY chats_service ON public.chats TO service_role USING (true) WITH CHECK (true);


--
-- Name: connector_oauth; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.connector_oauth ENABLE ROW LEVEL SECURITY;

--
-- Name: connector_oauth connector_oauth_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY connector_oauth_service ON public.connector_oauth TO service_role USING (true) WITH CHECK (true);


--
-- Name: connector_secrets; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.connector_secrets ENABLE ROW LEVEL SECURITY;

--
-- Name: connector_secrets connector_secrets_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY connector_secrets_service ON public.connector_secrets TO service_role USING (true) WITH CHECK (true);


--
-- Name: connector_tools; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.connector_tools ENABLE ROW LEVEL SECURITY;

--
-- Name: connector_tools connector_tools_owner; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY connector_tools_owner ON public.connector_tools TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: connector_tools connector_tools_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY connector_tools_service ON public.connector_tools TO service_role USING (true) WITH CHECK (true);


--
-- Name: connectors; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.connectors ENABLE ROW LEVEL SECURITY;

--
-- Name: connectors connectors_owner; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY connectors_owner ON public.connectors TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: connectors connectors_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY connectors_service ON public.connectors TO service_role USING (true) WITH CHECK (true);


--
-- Name: login_failures; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.login_failures ENABLE ROW LEVEL SECURITY;

--
-- Name: login_failures login_failures_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY login_failures_service ON public.login_failures TO service_role USING (true) WITH CHECK (true);


--
-- Name: mcp_input_requests; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.mcp_input_requests ENABLE ROW LEVEL SECURITY;

--
-- Name: mcp_input_requests mcp_input_requests_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY mcp_input_requests_service ON public.mcp_input_requests TO service_role USING (true) WITH CHECK (true);


--
-- Name: mcp_pending_calls; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.mcp_pending_calls ENABLE ROW LEVEL SECURITY;

--
-- Name: mcp_pending_calls mcp_pending_calls_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY mcp_pending_calls_service ON public.mcp_pending_calls TO service_role USING (true) WITH CHECK (true);


--
-- Name: mcp_result_reviews; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.mcp_result_reviews ENABLE ROW LEVEL SECURITY;

--
-- Name: mcp_result_reviews mcp_result_reviews_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY mcp_result_reviews_service ON public.mcp_result_reviews TO service_role USING (true) WITH CHECK (true);


--
-- Name: messages; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.messages ENABLE ROW LEVEL SECURITY;

--
-- Name: messages messages_owner; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY messages_owner ON public.messages TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: messages messages_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY messages_service ON public.messages TO service_role USING (true) WITH CHECK (true);


--
-- Name: mfa_recovery_codes; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.mfa_recovery_codes ENABLE ROW LEVEL SECURITY;

--
-- Name: mfa_recovery_codes mfa_recovery_codes_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY mfa_recovery_codes_service ON public.mfa_recovery_codes TO service_role USING (true) WITH CHECK (true);


--
-- Name: mfa_totp; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.mfa_totp ENABLE ROW LEVEL SECURITY;

--
-- Name: mfa_totp mfa_totp_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY mfa_totp_service ON public.mfa_totp TO service_role USING (true) WITH CHECK (true);


--
-- Name: _sqlx_migrations migration_owner_only; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY migration_owner_only ON public._sqlx_migrations USING (pg_has_role(CURRENT_USER, ( SELECT pg_class.relowner
   FROM pg_class
  WHERE (pg_class.oid = ('public._sqlx_migrations'::regclass)::oid)), 'usage'::text)) WITH CHECK (pg_has_role(CURRENT_USER, ( SELECT pg_class.relowner
   FROM pg_class
  WHERE (pg_class.oid = ('public._sqlx_migrations'::regclass)::oid)), 'usage'::text));


--
-- Name: oauth_states; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.oauth_states ENABLE ROW LEVEL SECURITY;

--
-- Name: oauth_states oauth_states_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY oauth_states_service ON public.oauth_states TO service_role USING (true) WITH CHECK (true);


--
-- Name: oidc_links; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.oidc_links ENABLE ROW LEVEL SECURITY;

--
-- Name: oidc_links oidc_links_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY oidc_links_service ON public.oidc_links TO service_role USING (true) WITH CHECK (true);


--
-- Name: oidc_logins; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.oidc_logins ENABLE ROW LEVEL SECURITY;

--
-- Name: oidc_logins oidc_logins_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY oidc_logins_service ON public.oidc_logins TO service_role USING (true) WITH CHECK (true);


--
-- Name: profiles; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.profiles ENABLE ROW LEVEL SECURITY;

--
-- Name: profiles profiles_owner; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY profiles_owner ON public.profiles TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: profiles profiles_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY profiles_service ON public.profiles TO service_role USING (true) WITH CHECK (true);


--
-- Name: provider_keys; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.provider_keys ENABLE ROW LEVEL SECURITY;

--
-- Name: provider_keys provider_keys_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY provider_keys_service ON public.provider_keys TO service_role USING (true) WITH CHECK (true);


--
-- Name: session_epochs; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.session_epochs ENABLE ROW LEVEL SECURITY;

--
-- Name: session_epochs session_epochs_owner; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY session_epochs_owner ON public.session_epochs FOR SELECT TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: session_epochs session_epochs_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY session_epochs_service ON public.session_epochs TO service_role USING (true) WITH CHECK (true);


--
-- Name: sessions; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.sessions ENABLE ROW LEVEL SECURITY;

--
-- Name: sessions sessions_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY sessions_service ON public.sessions TO service_role USING (true) WITH CHECK (true);


--
-- Name: signup_attempts; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.signup_attempts ENABLE ROW LEVEL SECURITY;

--
-- Name: signup_attempts signup_attempts_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY signup_attempts_service ON public.signup_attempts TO service_role USING (true) WITH CHECK (true);


--
-- Name: tool_grants; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.tool_grants ENABLE ROW LEVEL SECURITY;

--
-- Name: tool_grants tool_grants_owner; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY tool_grants_owner ON public.tool_grants TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: tool_grants tool_grants_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY tool_grants_service ON public.tool_grants TO service_role USING (true) WITH CHECK (true);


--
-- Name: tool_rules; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.tool_rules ENABLE ROW LEVEL SECURITY;

--
-- Name: tool_rules tool_rules_owner; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY tool_rules_owner ON public.tool_rules TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK (((user_id = ( SELECT auth.uid() AS uid)) AND (created_by = ( SELECT auth.uid() AS uid))));


--
-- Name: tool_rules tool_rules_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY tool_rules_service ON public.tool_rules TO service_role USING (true) WITH CHECK (true);


--
-- Name: turns; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.turns ENABLE ROW LEVEL SECURITY;

--
-- Name: turns turns_owner; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY turns_owner ON public.turns TO authenticated USING ((user_id = ( SELECT auth.uid() AS uid))) WITH CHECK ((user_id = ( SELECT auth.uid() AS uid)));


--
-- Name: turns turns_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY turns_service ON public.turns TO service_role USING (true) WITH CHECK (true);


--
-- Name: user_identities; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.user_identities ENABLE ROW LEVEL SECURITY;

--
-- Name: user_identities user_identities_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY user_identities_service ON public.user_identities TO service_role USING (true) WITH CHECK (true);


--
-- Name: users; Type: ROW SECURITY; Schema: public; Owner: countersign_owner
--

ALTER TABLE public.users ENABLE ROW LEVEL SECURITY;

--
-- Name: users users_service; Type: POLICY; Schema: public; Owner: countersign_owner
--

CREATE POLICY users_service ON public.users TO service_role USING (true) WITH CHECK (true);


--
-- Name: SCHEMA auth; Type: ACL; Schema: -; Owner: countersign_owner
--

GRANT USAGE ON SCHEMA auth TO anon;
GRANT USAGE ON SCHEMA auth TO authenticated;
GRANT USAGE ON SCHEMA auth TO service_role;


--
-- Name: SCHEMA public; Type: ACL; Schema: -; Owner: pg_database_owner
--

GRANT USAGE ON SCHEMA public TO anon;
GRANT USAGE ON SCHEMA public TO authenticated;
GRANT USAGE ON SCHEMA public TO service_role;


--
-- Name: FUNCTION uid(); Type: ACL; Schema: auth; Owner: countersign_owner
--

REVOKE ALL ON FUNCTION auth.uid() FROM PUBLIC;
GRANT ALL ON FUNCTION auth.uid() TO anon;
GRANT ALL ON FUNCTION auth.uid() TO authenticated;
GRANT ALL ON FUNCTION auth.uid() TO service_role;


--
-- Name: FUNCTION append_chat_event(p_chat uuid, p_turn uuid, p_type text, p_data jsonb, p_channel text); Type: ACL; Schema: public; Owner: countersign_owner
--

REVOKE ALL ON FUNCTION public.append_chat_event(p_chat uuid, p_turn uuid, p_type text, p_data jsonb, p_channel text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.append_chat_event(p_chat uuid, p_turn uuid, p_type text, p_data jsonb, p_channel text) TO authenticated;
GRANT ALL ON FUNCTION public.append_chat_event(p_chat uuid, p_turn uuid, p_type text, p_data jsonb, p_channel text) TO service_role;


--
-- Name: FUNCTION check_session_stamp(p_epoch bigint, p_ends_ms bigint); Type: ACL; Schema: public; Owner: countersign_owner
--

REVOKE ALL ON FUNCTION public.check_session_stamp(p_epoch bigint, p_ends_ms bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION public.check_session_stamp(p_epoch bigint, p_ends_ms bigint) TO authenticated;


--
-- Name: FUNCTION lock_session_epoch(p_user uuid, p_shared boolean); Type: ACL; Schema: public; Owner: countersign_owner
--

REVOKE ALL ON FUNCTION public.lock_session_epoch(p_user uuid, p_shared boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION public.lock_session_epoch(p_user uuid, p_shared boolean) TO authenticated;
GRANT ALL ON FUNCTION public.lock_session_epoch(p_user uuid, p_shared boolean) TO service_role;


--
-- Name: FUNCTION session_epoch_after_session_change(); Type: ACL; Schema: public; Owner: countersign_owner
--

REVOKE ALL ON FUNCTION public.session_epoch_after_session_change() FROM PUBLIC;


--
-- Name: FUNCTION session_epoch_after_user_change(); Type: ACL; Schema: public; Owner: countersign_owner
--

REVOKE ALL ON FUNCTION public.session_epoch_after_user_change() FROM PUBLIC;


--
-- Name: FUNCTION session_epoch_for_new_user(); Type: ACL; Schema: public; Owner: countersign_owner
--

REVOKE ALL ON FUNCTION public.session_epoch_for_new_user() FROM PUBLIC;


--
-- Name: FUNCTION store_turn(p_chat uuid, p_turn uuid, p_message uuid, p_title text, p_content text, p_data jsonb, p_channel text); Type: ACL; Schema: public; Owner: countersign_owner
--

REVOKE ALL ON FUNCTION public.store_turn(p_chat uuid, p_turn uuid, p_message uuid, p_title text, p_content text, p_data jsonb, p_channel text) FROM PUBLIC;
GRANT ALL ON FUNCTION public.store_turn(p_chat uuid, p_turn uuid, p_message uuid, p_title text, p_content text, p_data jsonb, p_channel text) TO authenticated;
GRANT ALL ON FUNCTION public.store_turn(p_chat uuid, p_turn uuid, p_message uuid, p_title text, p_content text, p_data jsonb, p_channel text) TO service_role;


--
-- Name: TABLE activity; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT ON TABLE public.activity TO authenticated;
GRANT SELECT,INSERT ON TABLE public.activity TO service_role;


--
-- Name: TABLE admin_policy; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,UPDATE ON TABLE public.admin_policy TO service_role;


--
-- Name: TABLE chat_events; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.chat_events TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.chat_events TO service_role;


--
-- Name: TABLE chats; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.chats TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.chats TO service_role;


--
-- Name: TABLE connector_oauth; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.connector_oauth TO service_role;


--
-- Name: TABLE connector_secrets; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.connector_secrets TO service_role;


--
-- Name: TABLE connector_tools; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.connector_tools TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.connector_tools TO service_role;


--
-- Name: TABLE connectors; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.connectors TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.connectors TO service_role;


--
-- Name: TABLE login_failures; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE ON TABLE public.login_failures TO service_role;


--
-- Name: TABLE mcp_input_requests; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.mcp_input_requests TO service_role;


--
-- Name: TABLE mcp_pending_calls; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.mcp_pending_calls TO service_role;


--
-- Name: TABLE mcp_result_reviews; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.mcp_result_reviews TO service_role;


--
-- Name: TABLE messages; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.messages TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.messages TO service_role;


--
-- Name: TABLE mfa_recovery_codes; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.mfa_recovery_codes TO service_role;


--
-- Name: TABLE mfa_totp; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.mfa_totp TO service_role;


--
-- Name: TABLE oauth_states; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.oauth_states TO service_role;


--
-- Name: TABLE oidc_links; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.oidc_links TO service_role;


--
-- Name: TABLE oidc_logins; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.oidc_logins TO service_role;


--
-- Name: TABLE profiles; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.profiles TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.profiles TO service_role;


--
-- Name: TABLE provider_keys; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.provider_keys TO service_role;


--
-- Name: TABLE session_epochs; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT ON TABLE public.session_epochs TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.session_epochs TO service_role;


--
-- Name: TABLE sessions; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.sessions TO service_role;


--
-- Name: TABLE signup_attempts; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE ON TABLE public.signup_attempts TO service_role;


--
-- Name: TABLE tool_grants; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,DELETE ON TABLE public.tool_grants TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.tool_grants TO service_role;


--
-- Name: TABLE tool_rules; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE ON TABLE public.tool_rules TO authenticated;
GRANT SELECT,INSERT,DELETE ON TABLE public.tool_rules TO service_role;


--
-- Name: TABLE turns; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.turns TO authenticated;
GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.turns TO service_role;


--
-- Name: TABLE user_identities; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.user_identities TO service_role;


--
-- Name: TABLE users; Type: ACL; Schema: public; Owner: countersign_owner
--

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.users TO service_role;


--
-- PostgreSQL database dump complete
--



--
-- Row-level security and table privileges of the API roles, read from the catalog.
--

-- _sqlx_migrations: row level security enabled and forced
REVOKE ALL ON TABLE _sqlx_migrations FROM anon;
REVOKE ALL ON TABLE _sqlx_migrations FROM authenticated;
REVOKE ALL ON TABLE _sqlx_migrations FROM service_role;
-- activity: row level security enabled and forced
REVOKE ALL ON TABLE activity FROM anon;
-- authenticated may: SELECT
-- service_role may: SELECT, INSERT
-- admin_policy: row level security enabled and forced
REVOKE ALL ON TABLE admin_policy FROM anon;
REVOKE ALL ON TABLE admin_policy FROM authenticated;
-- service_role may: SELECT, UPDATE
-- chat_events: row level security enabled and forced
REVOKE ALL ON TABLE chat_events FROM anon;
-- authenticated may: SELECT, INSERT, UPDATE, DELETE
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- chats: row level security enabled and forced
REVOKE ALL ON TABLE chats FROM anon;
-- authenticated may: SELECT, INSERT, UPDATE, DELETE
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- connector_oauth: row level security enabled and forced
REVOKE ALL ON TABLE connector_oauth FROM anon;
REVOKE ALL ON TABLE connector_oauth FROM authenticated;
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- connector_secrets: row level security enabled and forced
REVOKE ALL ON TABLE connector_secrets FROM anon;
REVOKE ALL ON TABLE connector_secrets FROM authenticated;
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- connector_tools: row level security enabled and forced
REVOKE ALL ON TABLE connector_tools FROM anon;
-- authenticated may: SELECT, INSERT, UPDATE, DELETE
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- connectors: row level security enabled and forced
REVOKE ALL ON TABLE connectors FROM anon;
-- authenticated may: SELECT, INSERT, UPDATE, DELETE
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- login_failures: row level security enabled and forced
REVOKE ALL ON TABLE login_failures FROM anon;
REVOKE ALL ON TABLE login_failures FROM authenticated;
-- service_role may: SELECT, INSERT, DELETE
-- mcp_input_requests: row level security enabled and forced
REVOKE ALL ON TABLE mcp_input_requests FROM anon;
REVOKE ALL ON TABLE mcp_input_requests FROM authenticated;
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- mcp_pending_calls: row level security enabled and forced
REVOKE ALL ON TABLE mcp_pending_calls FROM anon;
REVOKE ALL ON TABLE mcp_pending_calls FROM authenticated;
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- mcp_result_reviews: row level security enabled and forced
REVOKE ALL ON TABLE mcp_result_reviews FROM anon;
REVOKE ALL ON TABLE mcp_result_reviews FROM authenticated;
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- messages: row level security enabled and forced
REVOKE ALL ON TABLE messages FROM anon;
-- authenticated may: SELECT, INSERT, UPDATE, DELETE
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- mfa_recovery_codes: row level security enabled and forced
REVOKE ALL ON TABLE mfa_recovery_codes FROM anon;
REVOKE ALL ON TABLE mfa_recovery_codes FROM authenticated;
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- mfa_totp: row level security enabled and forced
REVOKE ALL ON TABLE mfa_totp FROM anon;
REVOKE ALL ON TABLE mfa_totp FROM authenticated;
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- oauth_states: row level security enabled and forced
REVOKE ALL ON TABLE oauth_states FROM anon;
REVOKE ALL ON TABLE oauth_states FROM authenticated;
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- oidc_links: row level security enabled and forced
REVOKE ALL ON TABLE oidc_links FROM anon;
REVOKE ALL ON TABLE oidc_links FROM authenticated;
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- oidc_logins: row level security enabled and forced
REVOKE ALL ON TABLE oidc_logins FROM anon;
REVOKE ALL ON TABLE oidc_logins FROM authenticated;
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- profiles: row level security enabled and forced
REVOKE ALL ON TABLE profiles FROM anon;
-- authenticated may: SELECT, INSERT, UPDATE
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- provider_keys: row level security enabled and forced
REVOKE ALL ON TABLE provider_keys FROM anon;
REVOKE ALL ON TABLE provider_keys FROM authenticated;
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- session_epochs: row level security enabled and forced
REVOKE ALL ON TABLE session_epochs FROM anon;
-- authenticated may: SELECT
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- sessions: row level security enabled and forced
REVOKE ALL ON TABLE sessions FROM anon;
REVOKE ALL ON TABLE sessions FROM authenticated;
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- signup_attempts: row level security enabled and forced
REVOKE ALL ON TABLE signup_attempts FROM anon;
REVOKE ALL ON TABLE signup_attempts FROM authenticated;
-- service_role may: SELECT, INSERT, DELETE
-- tool_grants: row level security enabled and forced
REVOKE ALL ON TABLE tool_grants FROM anon;
-- authenticated may: SELECT, DELETE
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- tool_rules: row level security enabled and forced
REVOKE ALL ON TABLE tool_rules FROM anon;
-- authenticated may: SELECT, INSERT, DELETE
-- service_role may: SELECT, INSERT, DELETE
-- turns: row level security enabled and forced
REVOKE ALL ON TABLE turns FROM anon;
-- authenticated may: SELECT, INSERT, UPDATE, DELETE
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- user_identities: row level security enabled and forced
REVOKE ALL ON TABLE user_identities FROM anon;
REVOKE ALL ON TABLE user_identities FROM authenticated;
-- service_role may: SELECT, INSERT, UPDATE, DELETE
-- users: row level security enabled and forced
REVOKE ALL ON TABLE users FROM anon;
REVOKE ALL ON TABLE users FROM authenticated;
-- service_role may: SELECT, INSERT, UPDATE, DELETE
