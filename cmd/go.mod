module github.com/agentctx/agentctx/cmd

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/agentctx/agentctx v0.0.0-00010101000000-000000000000
	github.com/schollz/progressbar/v3 v3.19.1
	github.com/stretchr/testify v1.12.1
	golang.org/x/term v0.44.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/pkoukk/tiktoken-go-loader v0.0.2 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

// Development builds use the modules of this tree (go.work does the same); a release replaces
// these with their tags (see README, "Modules").
replace github.com/agentctx/agentctx => ../
