package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/agentctx/agentctx"
)

// RefPrefix starts every ref Put returns.
const RefPrefix = "postgres:"

// Put stores content, the full text of a tool result the budget stage replaced (see
// [agentctx.ResultStore]), and returns its ref: RefPrefix followed by the name
// [agentctx.FileStore.Name] gives it without ".txt" — the tool_use_id (hashed when it is not
// a plain id) and a digest of the content. The ref is unique to the content, so a row once
// written never changes; putting the same content again stores nothing and returns the same
// ref, and the same id with other content gets another ref.
func (s *Store) Put(ctx context.Context, toolUseID string, content []byte) (string, error) {
	ref := RefPrefix + strings.TrimSuffix(agentctx.FileStore{}.Name(toolUseID, content), ".txt")
	_, err := s.pool.Exec(ctx, `INSERT INTO agentctx_results (ref, tool_use_id, content) VALUES ($1, $2, $3) ON CONFLICT (ref) DO NOTHING`,
		ref, []byte(toolUseID), content)
	if err != nil {
		return "", fmt.Errorf("postgres: store the result of tool call %s: %w", strconv.Quote(toolUseID), err)
	}
	return ref, nil
}

// Result returns the content stored under ref. A ref that names nothing is an error matching
// [fs.ErrNotExist].
func (s *Store) Result(ctx context.Context, ref string) ([]byte, error) {
	var content []byte
	err := s.pool.QueryRow(ctx, `SELECT content FROM agentctx_results WHERE ref = $1`, ref).Scan(&content)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: no stored result %s: %w", strconv.Quote(ref), fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read result %s: %w", strconv.Quote(ref), err)
	}
	return content, nil
}
