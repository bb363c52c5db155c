module github.com/agentctx/agentctx/postgres

go 1.26.0

require (
	github.com/agentctx/agentctx v0.0.0-00010101000000-000000000000
	github.com/jackc/pgx/v5 v5.12.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/pkoukk/tiktoken-go-loader v0.0.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)

// Development builds use the root module in this tree (go.work does the same); a release
// replaces this with the root's tag (see README, "Modules").
replace github.com/agentctx/agentctx => ../
