package htmlreport

// pageData is what the page's script reads: the session's figures, one entry per turn, each
// distinct message once and each compaction. Its JSON names are short: a 5,000-turn session
// writes them millions of times.
type pageData struct {
	Title     string        `json:"title"`
	Generated string        `json:"generated,omitempty"`
	Model     string        `json:"model"`
	Window    int           `json:"window"`
	Levels    [3]int        `json:"levels"` // warning, threshold, blocking
	Priced    bool          `json:"priced"`
	MaxText   int           `json:"maxText"`
	Parts     []string      `json:"parts"` // the names of turnData.Parts, in order
	Records   int           `json:"records"`
	Skipped   int           `json:"skipped"`
	Turns     []turnData    `json:"turns"`
	Msgs      []messageData `json:"msgs"`
	Comps     []compaction  `json:"comps"`
}

// turnData is one turn.
type turnData struct {
	N        int    `json:"n"`
	Line     int    `json:"line,omitempty"`
	UUID     string `json:"uuid,omitempty"`
	Time     string `json:"time,omitempty"`
	In       int    `json:"in"`
	Pressure int    `json:"p"`
	Max      int    `json:"max"`
	// Use is the simulated usage: uncached, cache write 5m, cache write 1h, cache read,
	// output; Cost its price. Real and RealCost are the provider's, when the file has them.
	Use      [5]int  `json:"use"`
	Cost     float64 `json:"cost"`
	Real     *[5]int `json:"real,omitempty"`
	RealCost float64 `json:"rcost,omitempty"`
	Expired  bool    `json:"exp,omitempty"`
	Err      string  `json:"err,omitempty"`
	// Parts is the request by part (pageData.Parts): system, tools, base context, the
	// messages by category, free space, auto-compact buffer.
	Parts  []int        `json:"parts"`
	Stages []stageData  `json:"st,omitempty"`
	Acts   []actionData `json:"acts,omitempty"`
	// More counts the actions left out of Acts (cache markers, and any past maxActions).
	More int      `json:"more,omitempty"`
	Deg  []string `json:"deg,omitempty"`
	// Comp is 1 + the index of the turn's compaction in pageData.Comps; 0: none.
	Comp int `json:"comp,omitempty"`
	// Keep and Add name the request's messages: the first Keep of the turn before's, then
	// the messages of pageData.Msgs at the indexes Add.
	Keep int   `json:"k"`
	Add  []int `json:"a,omitempty"`
	// Marks names the decisions the timeline marks on this turn.
	Marks []string `json:"mk,omitempty"`
}

// stageData is what one stage did in a turn.
type stageData struct {
	Stage   string `json:"s"`
	Actions int    `json:"n"`
	Freed   int    `json:"f,omitempty"`
}

// actionData is one action of a stage.
type actionData struct {
	Stage   string `json:"s"`
	Kind    string `json:"k"`
	UUID    string `json:"u,omitempty"`
	ToolUse string `json:"t,omitempty"`
	Record  string `json:"r,omitempty"`
	Detail  string `json:"d,omitempty"`
	Tokens  int    `json:"n,omitempty"`
}

// messageData is one distinct request message.
type messageData struct {
	Role   string      `json:"r"`
	Tokens int         `json:"n"`
	Blocks []blockData `json:"b"`
}

// blockData is one block of a message: its kind, where it came from, its text (a tool call's
// input as JSON, a result's content), its tokens, and for tool calls and results the tool's
// name and call id.
type blockData struct {
	Kind   string `json:"k"`
	Origin string `json:"o,omitempty"` // "" is the transcript as written
	Text   string `json:"t,omitempty"`
	Full   int    `json:"full,omitempty"` // the text's length in characters when it was cut
	Tokens int    `json:"n"`
	Name   string `json:"name,omitempty"`
	ID     string `json:"id,omitempty"`
	Error  bool   `json:"err,omitempty"`
}

// compaction is one compaction a turn attempted.
type compaction struct {
	Turn       int      `json:"turn"`
	Trigger    string   `json:"trigger"`
	Outcome    string   `json:"outcome"`
	Reason     string   `json:"reason,omitempty"`
	Summarizer string   `json:"summarizer,omitempty"`
	Fallback   string   `json:"fallback,omitempty"`
	Rung       string   `json:"rung,omitempty"`
	Floor      int      `json:"floor"`
	Pre        int      `json:"pre"`
	Post       int      `json:"post"`
	Summarized int      `json:"summarized"`
	Omitted    int      `json:"omitted,omitempty"`
	Kept       int      `json:"kept"`
	KeptTokens int      `json:"keptTokens"`
	Rehydrated []string `json:"rehydrated,omitempty"`
	Attempts   int      `json:"attempts"`
	Failures   []string `json:"failures,omitempty"`
	Breaker    bool     `json:"breaker,omitempty"`
	Failed     int      `json:"consecutiveFailures,omitempty"`
	Thrash     bool     `json:"thrash,omitempty"`
	Aggressive bool     `json:"aggressive,omitempty"`
	// Summary is the summary's text, whole.
	Summary string `json:"summary,omitempty"`
	// Facts is what the replaced messages named and where the compacted request has it.
	Facts []fact `json:"facts,omitempty"`
}

// fact is one thing the replaced messages named: a user prompt, a file, an error, a command.
// Where says where the compacted request holds it: "summary", "kept" (the kept tail, the
// re-read files, pinned content) or "" (lost).
type fact struct {
	Kind  string `json:"k"`
	Text  string `json:"t"`
	Where string `json:"w,omitempty"`
}
