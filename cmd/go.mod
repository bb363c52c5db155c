module github.com/agentctx/agentctx/cmd

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/agentctx/agentctx v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	golang.org/x/net v0.60.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/pkoukk/tiktoken-go-loader v0.0.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

// Development builds use the modules of this tree (go.work does the same); a release replaces
// these with their tags (see README, "Modules").
replace github.com/agentctx/agentctx => ../
