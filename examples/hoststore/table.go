package main

import (
	"slices"
	"sync"
	"time"
)

// Row is a message as the runtime's database keeps it, in the runtime's own shape: a prompt
// or an answer (text), a tool call (the assistant's) or a tool's output (role "tool").
type Row struct {
	ID        int64
	Conv      string
	Role      string // "user", "assistant" or "tool"
	Text      string
	CallID    string // a tool call's id, on the call and on its output
	Tool      string // the tool called
	Args      string // the call's arguments, JSON
	CreatedAt time.Time
	// InputTokens and OutputTokens are an answer's usage, written when the step reports it.
	InputTokens, OutputTokens int
}

// Table stands in for the runtime's database: rows keyed by an id it assigns, read by
// conversation in id order, updated in place.
type Table struct {
	mu   sync.Mutex
	rows []Row
	next int64
}

// Insert stores r under a new id and returns the id.
func (t *Table) Insert(r Row) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	r.ID = t.next
	t.rows = append(t.rows, r)
	return r.ID
}

// Conversation returns conv's rows in id order.
func (t *Table) Conversation(conv string) []Row {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Row
	for _, r := range t.rows {
		if r.Conv == conv {
			out = append(out, r)
		}
	}
	return out
}

// SetUsage writes an answer's usage on its row.
func (t *Table) SetUsage(id int64, in, out int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := slices.IndexFunc(t.rows, func(r Row) bool { return r.ID == id }); i >= 0 {
		t.rows[i].InputTokens, t.rows[i].OutputTokens = in, out
	}
}
