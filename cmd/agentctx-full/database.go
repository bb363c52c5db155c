package main

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentctx/agentctx/cmd/internal/cli"
	"github.com/agentctx/agentctx/postgres"
)

// postgresDatabase opens postgres:// sessions with agentctx/postgres.
type postgresDatabase struct{}

func (postgresDatabase) Open(ctx context.Context, url string) (cli.Store, error) {
	st, err := postgres.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (postgresDatabase) Schema() string { return postgres.Schema() }

// MissingTables reports whether err is PostgreSQL's undefined_table (42P01).
func (postgresDatabase) MissingTables(err error) bool {
	pe, ok := errors.AsType[*pgconn.PgError](err)
	return ok && pe.Code == "42P01"
}
