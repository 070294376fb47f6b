-- Firebase Auth accounts (issue 73): the users the tree is keyed by, as `firebase auth:export` gives them, kept
-- with the same uid as /users/{uid} (`admin auth import`, `auth verify`, `auth export`).
--
-- What anyone who may read the store may read is in public: the accounts and their providers. The password
-- hashes and the project's hash parameters (its signer key) are in the schema auth_secrets, which only the store's
-- owner may use: `GRANT SELECT ON ALL TABLES IN SCHEMA public`, as the cron recipe grants its role, does not reach
-- them.
--
-- Placed on Citus by uid beside users (`Store.distributionPlan`); the hash parameters, one row, on every node.
-- No foreign keys (a whole-tree import's tables could not be switched past them, and Citus's rules): an account's
-- providers and password are written and removed with it by the statements that write it.
-- Timestamps are milliseconds as Firebase writes them; customAttributes is the JSON string as exported; extra
-- holds members this version does not know, to export them again.

CREATE TABLE auth_accounts (
    uid text COLLATE "C" PRIMARY KEY,
    email text,
    email_verified boolean,
    display_name text,
    photo_url text,
    phone_number text,
    disabled boolean,
    created_at bigint,
    last_signed_in_at bigint,
    custom_attributes text,
    extra jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(extra) = 'object')
);

-- providerUserInfo, one entry per provider, in the file's order (position from 1).
CREATE TABLE auth_providers (
    uid text COLLATE "C" NOT NULL,
    provider_id text COLLATE "C" NOT NULL,
    position integer NOT NULL,
    raw_id text,
    email text,
    display_name text,
    photo_url text,
    federated_id text,
    extra jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(extra) = 'object'),
    PRIMARY KEY (uid, provider_id)
);

CREATE SCHEMA auth_secrets;
REVOKE ALL ON SCHEMA auth_secrets FROM PUBLIC;

-- passwordHash and salt, base64 as exported.
CREATE TABLE auth_secrets.password_hashes (
    uid text COLLATE "C" PRIMARY KEY,
    password_hash text,
    salt text
);

-- The block the Firebase console shows under "Password hash parameters", stored once.
CREATE TABLE auth_secrets.hash_config (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    algorithm text NOT NULL,
    signer_key text,
    salt_separator text,
    rounds integer,
    mem_cost integer
);

REVOKE ALL ON auth_secrets.password_hashes, auth_secrets.hash_config FROM PUBLIC;

-- Each account as one row, providers as a JSON array of auth:export's objects: what an import compares a file's
-- accounts with, and what an export writes.
CREATE VIEW auth_secrets.account_rows AS
    SELECT a.uid, a.email, a.email_verified, a.display_name, a.photo_url, a.phone_number, a.disabled, a.created_at,
        a.last_signed_in_at, a.custom_attributes, a.extra, h.password_hash, h.salt,
        coalesce(
            (SELECT jsonb_agg(
                        jsonb_strip_nulls(jsonb_build_object(
                            'providerId', p.provider_id, 'rawId', p.raw_id, 'email', p.email,
                            'displayName', p.display_name, 'photoUrl', p.photo_url, 'federatedId', p.federated_id))
                        || p.extra
                        ORDER BY p.position)
             FROM auth_providers p WHERE p.uid = a.uid),
            '[]') AS providers
    FROM auth_accounts a
    LEFT JOIN auth_secrets.password_hashes h ON h.uid = a.uid;

-- The link between the tree and the accounts, once there are accounts: profiles under /users that no account
-- owns (nobody can sign in as them), and accounts with no profile (a user who signed up and never wrote one, or a
-- profile lost). Both are listed at /users/{uid}.
CREATE VIEW integrity_account_missing AS
    SELECT tree_path('users', ARRAY[u.uid]) AS path FROM users u
    WHERE EXISTS (SELECT 1 FROM auth_accounts LIMIT 1)
        AND NOT EXISTS (SELECT 1 FROM auth_accounts a WHERE a.uid = u.uid);

CREATE VIEW integrity_profile_missing AS
    SELECT tree_path('users', ARRAY[a.uid]) AS path FROM auth_accounts a
    WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.uid = a.uid);
