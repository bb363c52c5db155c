package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Migration is one step of the schema. Steps are applied in Version order, each once; the
// versions applied are kept in the table agentctx_schema_migrations.
type Migration struct {
	Version int    // 1, 2, …
	Name    string // what the step does, in a few words
	SQL     string // the statements
}

// migrations is the schema, step by step. A released step is never edited: a change is a
// new step.
var migrations = []Migration{
	{1, "transcript lines", `
-- One row per line of a session's transcript, in order: seq is the 1-based line number, so
-- a session's rows are seq 1, 2, … with no gap, and (session, seq) being the primary key is
-- what makes a positioned append fail when another writer took the position first.
-- line holds the line's bytes exactly as written (bytea, never jsonb, which would reorder
-- keys), without its "\n"; newline is false only for a last line that had none (a line torn
-- by a crash, imported as it was). uuid is the record's uuid, when it has one.
CREATE TABLE agentctx_lines (
	session    text        NOT NULL,
	seq        bigint      NOT NULL CHECK (seq > 0),
	uuid       bytea,
	line       bytea       NOT NULL,
	newline    boolean     NOT NULL DEFAULT true,
	written_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (session, seq)
);
-- Finds an earlier attempt of a retried append by its first record's uuid. A hash index has
-- no limit on the key's size, so a hostile uuid of any length is indexed.
CREATE INDEX agentctx_lines_uuid ON agentctx_lines USING hash (uuid);`},
	{2, "tool results", `
-- The full content of tool results the budget stage replaced by a preview. ref is unique to
-- the content (the tool_use_id, sanitised, and a digest of the content), so a row once
-- written never changes.
CREATE TABLE agentctx_results (
	ref         text        PRIMARY KEY,
	tool_use_id bytea       NOT NULL,
	content     bytea       NOT NULL,
	stored_at   timestamptz NOT NULL DEFAULT now()
);`},
	{3, "host decisions", `
-- The library's decision records of a host that keeps its messages in its own store
-- (agentctx/host): one row per record, in the order appended, seq 1, 2, … per session. line
-- holds the record's JSON line exactly as written, without its "\n".
CREATE TABLE agentctx_decisions (
	session    text        NOT NULL,
	seq        bigint      NOT NULL CHECK (seq > 0),
	line       bytea       NOT NULL,
	written_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (session, seq)
);`},
	{4, "compact boundary index", `
-- Finds a session's latest compact boundary without reading its other lines: an index of
-- only the rows whose line names one (a few per session), which a load from the cut reads
-- backwards. Its predicate is the query's, word for word, so the planner can use it. The
-- build reads every row and holds writes off meanwhile: on a large table, create it first by
-- hand with CREATE INDEX CONCURRENTLY (the same statement), and this step finds it done. A
-- concurrent build that failed leaves the index marked invalid, which the planner never uses
-- and IF NOT EXISTS would take as done: this step drops it and builds it again. While such a
-- build is still running, the step fails instead; it sees another role's build only when its
-- own role has pg_read_all_stats (or is that role), so run both as one role.
DO $$
BEGIN
	IF EXISTS (SELECT FROM pg_stat_progress_create_index WHERE index_relid = to_regclass('agentctx_lines_boundary')) THEN
		RAISE EXCEPTION 'index agentctx_lines_boundary is being built (CREATE INDEX CONCURRENTLY): migrate again once the build is done';
	END IF;
	IF EXISTS (SELECT FROM pg_index WHERE indexrelid = to_regclass('agentctx_lines_boundary') AND NOT indisvalid) THEN
		DROP INDEX agentctx_lines_boundary;
	END IF;
END $$;
CREATE INDEX IF NOT EXISTS agentctx_lines_boundary ON agentctx_lines (session, seq)
	WHERE position('"compact_boundary"'::bytea IN line) > 0;`},
}

// Migrations returns the steps of the schema, in order.
func Migrations() []Migration { return slices.Clone(migrations) }

// migrationsTable records the versions applied.
const migrationsTable = `CREATE TABLE IF NOT EXISTS agentctx_schema_migrations (
	version    integer     PRIMARY KEY,
	name       text        NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now()
);`

// Schema returns the whole schema as one SQL script, for a database administrator who applies
// schemas by hand: every step in order, each recorded as applied, in one transaction, so that
// Migrate later finds nothing to do.
func Schema() string {
	var b strings.Builder
	b.WriteString("-- agentctx/postgres schema, every migration in order.\nBEGIN;\n\n")
	b.WriteString(migrationsTable + "\n")
	for _, m := range migrations {
		fmt.Fprintf(&b, "\n-- Migration %d: %s.%s\nINSERT INTO agentctx_schema_migrations (version, name) VALUES (%d, '%s');\n",
			m.Version, m.Name, m.SQL, m.Version, m.Name)
	}
	b.WriteString("\nCOMMIT;\n")
	return b.String()
}

// migrateLock is the key of the advisory lock Migrate holds, so that workers starting at once
// apply each step once.
const migrateLock = 0x6167656e74637478 // "agentctx"

// Migrate applies the steps of the schema the database does not have yet, in one
// transaction, under an advisory lock, and returns the versions it applied (none when the
// schema is current). Run it at start-up; it is cheap when there is nothing to do.
func (s *Store) Migrate(ctx context.Context) ([]int, error) {
	var applied []int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, migrationsTable); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT version FROM agentctx_schema_migrations`)
		if err != nil {
			return err
		}
		have, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return err
		}
		for _, m := range migrations {
			if slices.Contains(have, m.Version) {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO agentctx_schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return err
			}
			applied = append(applied, m.Version)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: migrate: %w", err)
	}
	return applied, nil
}
