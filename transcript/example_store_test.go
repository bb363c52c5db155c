package transcript_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/agentctx/agentctx/session"
	"github.com/agentctx/agentctx/transcript"
)

// ExampleDirStore shows the turn of a fleet worker on a Store: load the session,
// resume it, write through a RecordWriter that appends after the position last written, and
// meet the conflict another worker's append causes. agentctx/postgres's Store is used the
// same way.
func ExampleDirStore() {
	dir, err := os.MkdirTemp("", "sessions")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	store := transcript.DirStore{Root: dir}

	// A worker starts the session: position 0, the session has no line yet.
	ids := []string{"u1", "u2", "u3"}
	next := func() string { id := ids[0]; ids = ids[1:]; return id }
	end := 0
	writer := session.RecordWriterFunc(func(records ...transcript.Record) error {
		n, err := store.Append(ctx, "s1", end, records...)
		if err == nil {
			end = n
		}
		return err
	})
	sess := session.New(session.Options{ID: "s1", Writer: writer, NewUUID: next})
	if _, err := sess.User("What is in the repo?"); err != nil {
		panic(err)
	}

	// Another worker loads the session and resumes it from the position it read.
	tr, err := store.Load(ctx, "s1", transcript.ReadOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("loaded", tr.Len(), "record, end at line", tr.End)
	if _, err := store.Append(ctx, "s1", tr.End, transcript.Record{Type: transcript.TypeUser, UUID: "other", ParentUUID: "u1", SessionID: "s1",
		Message: &transcript.Message{Role: transcript.RoleUser, StringContent: true, Content: []transcript.Block{&transcript.Text{Text: "and the tests?"}}}}); err != nil {
		panic(err)
	}

	// The first worker's next append names line 1, which is no longer the end.
	_, err = sess.User("Run the tests.")
	var conflict *transcript.ConflictError
	fmt.Println(errors.As(err, &conflict), conflict.After, conflict.End)
	// Output:
	// loaded 1 record, end at line 1
	// true 1 2
}
