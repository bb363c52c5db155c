module github.com/agentctx/agentctx/openai

go 1.26.0

require (
	github.com/agentctx/agentctx v0.0.0-00010101000000-000000000000
	github.com/openai/openai-go/v3 v3.100.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/pkoukk/tiktoken-go-loader v0.0.2 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

// Development builds use the root module in this tree (go.work does the same); a release
// replaces this with the root's tag (see README, "Modules").
replace github.com/agentctx/agentctx => ../
