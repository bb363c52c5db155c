package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
)

// databaseArgs parses a database command, which has no flags of its own beyond --help, and
// returns its positional arguments; a build without a Database refuses the command.
func (a *app) databaseArgs(name string, args []string) ([]string, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	pos, err := parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, helpRequest{"  (none)\n"}
	}
	if err != nil {
		return nil, UsageError{flagMessage(err)}
	}
	if a.Database == nil {
		return nil, needsFull{name}
	}
	return pos, nil
}

// importCmd copies session files into a database, byte for byte: each under the session id
// the address names, or else its file name without ".jsonl".
func (a *app) importCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	pos, err := a.databaseArgs("import", args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return UsageError{fmt.Sprintf("import needs one or more FILEs and a postgres:// ADDRESS, got %d arguments", len(pos))}
	}
	files, dest := pos[:len(pos)-1], pos[len(pos)-1]
	if !isDatabase(dest) {
		return UsageError{fmt.Sprintf("import: the last argument must be a postgres:// ADDRESS, got %q", dest)}
	}
	db, err := parseAddress(dest, false, a.Database)
	if err != nil {
		return err
	}
	if db.session != "" && len(files) > 1 {
		return UsageError{fmt.Sprintf("import: %s names one session, for %d FILEs: drop #SESSION to import each under its file name", db, len(files))}
	}
	for _, f := range files {
		if isDatabase(f) {
			return UsageError{fmt.Sprintf("import: FILE %s is a database address; use export to get a file", redact(f))}
		}
		to := db
		if to.session == "" {
			to.session = strings.TrimSuffix(filepath.Base(f), ".jsonl")
			to.shown += "#" + url.PathEscape(to.session)
		}
		data, err := readFile(f, maxSessionBytes)
		if err != nil {
			return err
		}
		if old, err := to.raw(ctx); err == nil && bytes.Equal(old, data) {
			fmt.Fprintf(stdout, "%s is already in the database as session %s, byte for byte: nothing imported\n", f, to.session)
			continue
		}
		n, err := to.create(ctx, data, true)
		if err != nil {
			return fmt.Errorf("import %s: %w", f, err)
		}
		fmt.Fprintf(stdout, "imported %s as session %s: %d lines, %d bytes\n", f, to.session, n, len(data))
	}
	return nil
}

// exportCmd writes a session from a database as its JSONL file, byte for byte: to FILE (which
// must not exist) or to standard output.
func (a *app) exportCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	pos, err := a.databaseArgs("export", args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		return UsageError{fmt.Sprintf("export needs a postgres:// ADDRESS#SESSION and at most one FILE, got %d arguments", len(pos))}
	}
	if !isDatabase(pos[0]) {
		return UsageError{fmt.Sprintf("export: the first argument must be a postgres:// ADDRESS#SESSION, got %q", pos[0])}
	}
	src, err := parseAddress(pos[0], true, a.Database)
	if err != nil {
		return err
	}
	data, err := src.raw(ctx)
	if err != nil {
		return err
	}
	if len(pos) == 1 || pos[1] == "-" {
		_, err = stdout.Write(data)
		return err
	}
	if _, err := (address{file: pos[1], shown: pos[1]}).create(ctx, data, false); err != nil {
		return fmt.Errorf("export to %s: %w", pos[1], err)
	}
	fmt.Fprintf(stderr, "agentctx: exported %s to %s: %d bytes\n", src, pos[1], len(data))
	return nil
}

// schema prints the SQL of the database schema.
func (a *app) schema(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	pos, err := a.databaseArgs("schema", args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return UsageError{fmt.Sprintf("schema takes no arguments, got %d", len(pos))}
	}
	_, err = io.WriteString(stdout, a.Database.Schema())
	return err
}
