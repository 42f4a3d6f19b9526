"""The class database's schema and every statement, written once for SQLite and PostgreSQL.

Portable on purpose: TEXT / INTEGER / BIGINT / REAL types, `?` placeholders
(the PostgreSQL store converts them to `%s`), `ON CONFLICT ... DO ...` and no
SQLite-only syntax. The one column the two spell differently, the events'
ordered id, is written `{AUTO_ID}` and filled in per dialect by `ddl()`.
Timestamps are float epoch seconds (REAL).

Migrations only ever get appended: `schema_version` records how far a
database has come, and `migrate` runs the rest on start.
"""

from __future__ import annotations

import enum


class Dialect(str, enum.Enum):
    SQLITE = "sqlite"
    POSTGRES = "postgres"


AUTO_ID = {Dialect.SQLITE: "INTEGER PRIMARY KEY AUTOINCREMENT",
           Dialect.POSTGRES: "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"}

#: Migration N (1-based) is MIGRATIONS[N-1]: a list of statements run in one transaction.
MIGRATIONS: list[list[str]] = [
    [
        """CREATE TABLE learners (
            id TEXT PRIMARY KEY,
            display_name TEXT NOT NULL,
            student_id TEXT NOT NULL DEFAULT '',
            resume_hash TEXT NOT NULL UNIQUE,
            created REAL NOT NULL)""",
        """CREATE TABLE versions (
            id TEXT PRIMARY KEY,
            learner_id TEXT NOT NULL REFERENCES learners(id),
            step TEXT NOT NULL,
            content TEXT NOT NULL,
            created REAL NOT NULL,
            seq BIGINT NOT NULL)""",
        "CREATE INDEX versions_by_step ON versions (learner_id, step, seq)",
        """CREATE TABLE reports (
            id TEXT PRIMARY KEY,
            learner_id TEXT NOT NULL REFERENCES learners(id),
            step TEXT NOT NULL,
            version_id TEXT NOT NULL,
            status TEXT NOT NULL,
            passed INTEGER NOT NULL,
            diagnoses TEXT NOT NULL,
            report TEXT NOT NULL,
            created REAL NOT NULL,
            seq BIGINT NOT NULL)""",
        "CREATE INDEX reports_by_step ON reports (learner_id, step, seq)",
        """CREATE TABLE progress (
            learner_id TEXT NOT NULL REFERENCES learners(id),
            step TEXT NOT NULL,
            hints INTEGER NOT NULL DEFAULT 0,
            started REAL NOT NULL,
            checks INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (learner_id, step))""",
        """CREATE TABLE events (
            id {AUTO_ID},
            learner_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            data TEXT NOT NULL,
            created REAL NOT NULL)""",
        """CREATE TABLE settings (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL)""",
    ],
    # LTI 1.3 (CONTRACT §8): learners by (issuer, sub), login nonces, each learner's launch
    # links (where their score goes), course contexts (the roster's URL), the score outbox
    [
        """CREATE TABLE lti_learners (
            issuer TEXT NOT NULL,
            sub TEXT NOT NULL,
            learner_id TEXT NOT NULL,
            PRIMARY KEY (issuer, sub))""",
        """CREATE TABLE lti_nonces (
            nonce TEXT PRIMARY KEY,
            state_hash TEXT NOT NULL,
            expires REAL NOT NULL,
            used INTEGER NOT NULL DEFAULT 0)""",
        "CREATE INDEX lti_nonces_by_expiry ON lti_nonces (expires)",
        """CREATE TABLE lti_links (
            id TEXT PRIMARY KEY,
            learner_id TEXT NOT NULL,
            issuer TEXT NOT NULL,
            client_id TEXT NOT NULL,
            sub TEXT NOT NULL,
            context_id TEXT NOT NULL,
            resource_link_id TEXT NOT NULL,
            lineitem TEXT NOT NULL,
            lineitems TEXT NOT NULL,
            scopes TEXT NOT NULL,
            updated REAL NOT NULL,
            UNIQUE (learner_id, issuer, client_id, context_id, resource_link_id))""",
        """CREATE TABLE lti_contexts (
            issuer TEXT NOT NULL,
            client_id TEXT NOT NULL,
            context_id TEXT NOT NULL,
            title TEXT NOT NULL,
            memberships_url TEXT NOT NULL,
            updated REAL NOT NULL,
            PRIMARY KEY (issuer, client_id, context_id))""",
        """CREATE TABLE lti_scores (
            id {AUTO_ID},
            link_id TEXT NOT NULL,
            learner_id TEXT NOT NULL,
            score_given REAL NOT NULL,
            score_max REAL NOT NULL,
            completed INTEGER NOT NULL,
            stamp TEXT NOT NULL,
            ts REAL NOT NULL,
            state TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_try REAL NOT NULL,
            lease REAL NOT NULL DEFAULT 0,
            answer TEXT NOT NULL DEFAULT '',
            created REAL NOT NULL,
            sent REAL)""",
        "CREATE INDEX lti_scores_by_link ON lti_scores (link_id, id)",
        "CREATE INDEX lti_scores_by_state ON lti_scores (state, next_try)",
    ],
    # 4: the check queue, stored (CONTRACT §7.1): a check queued or running when the server
    # died runs again when it starts; `owner` is the process that holds it, `heartbeat` when
    # that process last said it is alive (another process takes over entries left stale)
    [
        """CREATE TABLE check_queue (
            id TEXT PRIMARY KEY,
            learner_id TEXT NOT NULL,
            step TEXT NOT NULL,
            version_id TEXT NOT NULL,
            owner TEXT NOT NULL,
            heartbeat REAL NOT NULL,
            created REAL NOT NULL)""",
        "CREATE INDEX check_queue_by_owner ON check_queue (owner, heartbeat)",
    ],
    # a student id held once per class (id_key: its normalised form; NULL for learners
    # from before, whose clashes the instructor page lists); refused claims; sessions (hashed)
    [
        "ALTER TABLE learners ADD COLUMN id_key TEXT",
        "CREATE UNIQUE INDEX learners_by_id_key ON learners (id_key)",
        """CREATE TABLE id_conflicts (
            id TEXT PRIMARY KEY,
            student_id TEXT NOT NULL,
            display_name TEXT NOT NULL,
            holder_id TEXT NOT NULL,
            created REAL NOT NULL,
            settled REAL)""",
        """CREATE TABLE sessions (
            token_hash TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            learner_id TEXT NOT NULL,
            created REAL NOT NULL,
            expires REAL NOT NULL)""",
        "CREATE INDEX sessions_by_owner ON sessions (kind, learner_id)",
    ],
]

SCHEMA_VERSION_TABLE = "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"
GET_SCHEMA_VERSION = "SELECT MAX(version) FROM schema_version"
SET_SCHEMA_VERSION = "INSERT INTO schema_version (version) VALUES (?)"


def ddl(statement: str, dialect: Dialect) -> str:
    """A migration statement for `dialect` (fills in `{AUTO_ID}`)."""
    return statement.replace("{AUTO_ID}", AUTO_ID[dialect])


# --------------------------------------------------------------- learners
INSERT_LEARNER = ("INSERT INTO learners (id, display_name, student_id, resume_hash, created) "
                  "VALUES (?, ?, ?, ?, ?)")
LEARNER_COLS = "id, display_name, student_id, created"
LEARNER_BY_ID = f"SELECT {LEARNER_COLS} FROM learners WHERE id = ?"
LEARNER_BY_HASH = f"SELECT {LEARNER_COLS} FROM learners WHERE resume_hash = ?"
ALL_LEARNERS = f"SELECT {LEARNER_COLS} FROM learners ORDER BY created, id"
COUNT_LEARNERS = "SELECT COUNT(*) FROM learners"
SET_RESUME_HASH = "UPDATE learners SET resume_hash = ? WHERE id = ?"

# --------------------------------------------------------------- versions
NEXT_VERSION_SEQ = "SELECT COALESCE(MAX(seq), 0) + 1 FROM versions WHERE learner_id = ? AND step = ?"
INSERT_VERSION = ("INSERT INTO versions (id, learner_id, step, content, created, seq) "
                  "VALUES (?, ?, ?, ?, ?, ?)")
VERSION_COLS = "id, learner_id, step, content, created"
VERSIONS_OF_STEP = (f"SELECT {VERSION_COLS} FROM versions WHERE learner_id = ? AND step = ? "
                    "ORDER BY seq DESC LIMIT ?")
LEARNER_BYTES = "SELECT COALESCE(SUM(LENGTH(content)), 0) FROM versions WHERE learner_id = ?"
VERSION_BY_ID = f"SELECT {VERSION_COLS} FROM versions WHERE learner_id = ? AND id = ?"
LATEST_VERSIONS = (f"SELECT {VERSION_COLS} FROM versions v WHERE learner_id = ? AND seq = "
                   "(SELECT MAX(seq) FROM versions w WHERE w.learner_id = v.learner_id "
                   "AND w.step = v.step)")
ALL_LATEST_VERSION_IDS = ("SELECT learner_id, step, id FROM versions v WHERE seq = (SELECT MAX(seq) "
                          "FROM versions w WHERE w.learner_id = v.learner_id AND w.step = v.step)")

# --------------------------------------------------------------- reports
NEXT_REPORT_SEQ = "SELECT COALESCE(MAX(seq), 0) + 1 FROM reports WHERE learner_id = ? AND step = ?"
INSERT_REPORT = ("INSERT INTO reports (id, learner_id, step, version_id, status, passed, diagnoses, "
                 "report, created, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
REPORT_COLS = "id, learner_id, step, version_id, status, passed, diagnoses, report, created"
LATEST_REPORT = (f"SELECT {REPORT_COLS} FROM reports WHERE learner_id = ? AND step = ? "
                 "ORDER BY seq DESC LIMIT 1")
LATEST_REPORTS = (f"SELECT {REPORT_COLS} FROM reports r WHERE seq = (SELECT MAX(seq) FROM reports s "
                  "WHERE s.learner_id = r.learner_id AND s.step = r.step) ORDER BY learner_id, step")

LATEST_STANDINGS = ("SELECT step, status, passed, version_id FROM reports r WHERE learner_id = ? AND "
                    "seq = (SELECT MAX(seq) FROM reports s WHERE s.learner_id = r.learner_id "
                    "AND s.step = r.step)")
CLASS_STANDINGS = ("SELECT learner_id, step, status, passed, version_id, diagnoses, created FROM reports r "
                   "WHERE seq = (SELECT MAX(seq) FROM reports s WHERE s.learner_id = r.learner_id "
                   "AND s.step = r.step)")
EVER_PASSED = "SELECT DISTINCT step FROM reports WHERE learner_id = ? AND passed = 1"

# --------------------------------------------------------------- progress
PROGRESS_COLS = "learner_id, step, hints, started, checks"
OPEN_STEP = ("INSERT INTO progress (learner_id, step, hints, started, checks) VALUES (?, ?, 0, ?, 0) "
             "ON CONFLICT (learner_id, step) DO NOTHING")
PROGRESS_OF = f"SELECT {PROGRESS_COLS} FROM progress WHERE learner_id = ? AND step = ?"
PROGRESS_OF_LEARNER = f"SELECT {PROGRESS_COLS} FROM progress WHERE learner_id = ? ORDER BY step"
ALL_PROGRESS = f"SELECT {PROGRESS_COLS} FROM progress ORDER BY learner_id, step"
REVEAL_HINT = "UPDATE progress SET hints = hints + 1 WHERE learner_id = ? AND step = ? AND hints < ?"
COUNT_CHECK = "UPDATE progress SET checks = checks + 1 WHERE learner_id = ? AND step = ?"

# --------------------------------------------------------------- events
INSERT_EVENT = "INSERT INTO events (learner_id, kind, data, created) VALUES (?, ?, ?, ?) RETURNING id"
EVENTS_SINCE = "SELECT id, learner_id, kind, data, created FROM events WHERE id > ? ORDER BY id LIMIT ?"
LAST_EVENT = "SELECT COALESCE(MAX(id), 0) FROM events"

# --------------------------------------------------------------- settings
GET_SETTING = "SELECT value FROM settings WHERE key = ?"
SET_SETTING = ("INSERT INTO settings (key, value) VALUES (?, ?) "
               "ON CONFLICT (key) DO UPDATE SET value = excluded.value")
SETTING_IF_ABSENT = "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING"
PING = "SELECT 1"
