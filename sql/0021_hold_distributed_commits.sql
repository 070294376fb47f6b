-- Reads of one instant on Citus (issue 42): a read holds distributed commits back while every node takes its
-- snapshot, with a SHARE lock on pg_dist_transaction, where Citus records each two-phase commit until its last
-- worker has committed. That lock needs UPDATE on Citus's catalog table, which only its owner has; this function
-- takes it with the privileges of the role that migrated (on a Citus coordinator, as a rule, a superuser), for the
-- rest of the caller's transaction. Nobody but that role may call it until granted EXECUTE, since a caller holds
-- distributed commits back for as long as its transaction lasts: a read-only role (the README's `admin_check`)
-- is granted it by hand. On one server the function is never called (it names a table only Citus has).
CREATE FUNCTION hold_distributed_commits() RETURNS void
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    LOCK TABLE pg_catalog.pg_dist_transaction IN SHARE MODE;
END
$$;
REVOKE ALL ON FUNCTION hold_distributed_commits() FROM PUBLIC;
