// Command agentctx-full is agentctx (cmd/agentctx) with what needs a provider SDK or the
// database driver linked: the Anthropic and OpenAI SDKs and pgx. It does everything agentctx
// does, and:
//
//	agentctx-full request --provider anthropic|openai-chat|openai-responses [flags] FILE
//	agentctx-full compact --summarizer anthropic|openai [--summary-model M] [flags] FILE
//	agentctx-full simulate --summarizer anthropic|openai [--summary-model M] [flags] FILE
//	agentctx-full import FILE... ADDRESS
//	agentctx-full export ADDRESS#SESSION [FILE]
//	agentctx-full schema
//
// --provider prints the body the provider adapter's SDK sends (agentctx/anthropic,
// agentctx/openai), listing on stderr what the body needs (an anthropic-beta header) or what
// an OpenAI body cannot carry. --summarizer has a model write a compaction's summary, its key
// and base URL read from the environment as the SDKs read them (ANTHROPIC_API_KEY,
// ANTHROPIC_BASE_URL; OPENAI_API_KEY, OPENAI_BASE_URL). Any FILE may be a session in a
// PostgreSQL database, postgres://user@host/db?options#SESSION (see agentctx/postgres), the
// session id percent-encoded where it has to be; import and export move sessions between
// files and a database, byte for byte, and schema prints the database schema's SQL.
// "agentctx-full COMMAND --help" lists a command's flags.
//
// Exit codes: 0 on success (and for --help), 1 when the command fails, 2 on a mistake in the
// command line.
package main

import "github.com/agentctx/agentctx/cmd/internal/cli"

func main() {
	cli.Main(build())
}

// build is agentctx with the providers' bodies, the model summarizers and PostgreSQL.
func build() cli.Build {
	return cli.Build{
		Name: "agentctx-full",
		Providers: map[string]cli.Provider{
			"anthropic":        anthropicBody,
			"openai-chat":      openAIChatBody,
			"openai-responses": openAIResponsesBody,
		},
		Summarizers: map[string]cli.NewSummarizer{
			"anthropic": anthropicSummarizer,
			"openai":    openAISummarizer,
		},
		Database: postgresDatabase{},
	}
}
