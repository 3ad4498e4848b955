-- Row-level security on omp-session's search tables: each person's database role sees and
-- writes only the sessions whose namespace's user (the part of `sync --namespace` before its
-- last @) is the role's name (docs/team.md, "Keeping people apart").
--
-- Run once, as the tables' owner, after `omp-session index --store URL` made them:
--
--   psql "postgresql://admin@db.example/omp" -v team=omp_team -f rls.sql
--   psql "postgresql://admin@db.example/omp" -v team=omp_team -v omp_table=other -f rls.sql
--
-- team:      the group role every person's role is a member of (it gets the grants);
-- omp_table: omp's session table, the URL's table= (default sessions; a lower-case name of at
--            most 46 characters: a longer one's search tables are named with a hash, and
--            store.derived.rls.apply_rls names them right).
--
-- The owner is exempt from the policies (it makes and maintains the tables); a row without a
-- namespace is nobody's. omp's own table gets the grants, not a policy: it has no namespace
-- column (docs/team.md says how to keep it apart by key prefix). Running it again is harmless.

\if :{?team}
\else
\echo 'rls.sql: say which group role gets the grants: -v team=ROLE'
\quit
\endif
\if :{?omp_table}
\else
\set omp_table sessions
\endif
\set sessions_t :omp_table '_sessions_derived'
\set entries_t :omp_table '_entries_text'
\set usage_t :omp_table '_usage_rows'
\set ON_ERROR_STOP on
SELECT pg_get_serial_sequence(:'entries_t', 'id') AS entries_seq \gset
BEGIN;

-- policies (store.derived.rls reads from here on: one statement per ';' at a line's end)

ALTER TABLE :"sessions_t" ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS omp_session_own ON :"sessions_t";
CREATE POLICY omp_session_own ON :"sessions_t"
    USING (regexp_replace(namespace, '@[^@]*$', '') = current_user)
    WITH CHECK (regexp_replace(namespace, '@[^@]*$', '') = current_user);

-- a text or usage row belongs to the session of its key: the subquery sees only one's own
ALTER TABLE :"entries_t" ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS omp_session_own ON :"entries_t";
CREATE POLICY omp_session_own ON :"entries_t"
    USING (key IN (SELECT s.key FROM :"sessions_t" s))
    WITH CHECK (key IN (SELECT s.key FROM :"sessions_t" s));

ALTER TABLE :"usage_t" ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS omp_session_own ON :"usage_t";
CREATE POLICY omp_session_own ON :"usage_t"
    USING (key IN (SELECT s.key FROM :"sessions_t" s))
    WITH CHECK (key IN (SELECT s.key FROM :"sessions_t" s));

GRANT SELECT, INSERT, UPDATE, DELETE ON :"sessions_t", :"entries_t", :"usage_t" TO :"team";
GRANT USAGE ON SEQUENCE :entries_seq TO :"team";
GRANT SELECT, INSERT, UPDATE, DELETE ON :"omp_table" TO :"team";

COMMIT;
