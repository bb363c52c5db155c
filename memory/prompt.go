package memory

// DefaultPrompt is the instruction that ends an extraction request: the library's own wording.
// It asks for the same <summary> element a compaction's summary comes in, so that any
// [github.com/agentctx/summarize.Summarizer] can write it.
const DefaultPrompt = `Pause the task for a moment: your job now is to bring the session's working notes up to date. These notes stand in for the conversation when it has to be shortened later, so write them for someone who must carry on the work from them alone.

Answer with text only; do not call any tool. Any private reasoning goes inside <analysis> tags and is thrown away.

Write the notes inside <summary> tags, in these parts, each short and concrete:

1. Goal: what the user wants overall, with every constraint or preference they stated, quoted.
2. State: what exists now — files created or changed (with paths), commands that work, results obtained.
3. Decisions: what was chosen and why, and what was tried and dropped.
4. Problems: errors met, with their exact messages, and whether each is fixed.
5. Open work: what was asked for and is not done yet, the current step first.

Keep facts that will still hold later; leave out chatter, greetings and tool output that no longer matters. Names, paths, numbers and exact messages are worth more than descriptions.`
