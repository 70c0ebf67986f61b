module github.com/crl-go/crl/examples/sqlcpgx

go 1.22.0

replace (
	github.com/crl-go/crl => ../..
	github.com/crl-go/crl/pgxcrl => ../../pgxcrl
)

require (
	github.com/crl-go/crl/pgxcrl v0.0.0-00010101000000-000000000000
	github.com/jackc/pgx/v5 v5.5.5
	github.com/stretchr/testify v1.9.0
)

require (
	github.com/crl-go/crl v0.0.0-00010101000000-000000000000 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20221227161230-091c0ba34f0a // indirect
	github.com/jackc/puddle/v2 v2.2.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	golang.org/x/crypto v0.24.0 // indirect
	golang.org/x/sync v0.7.0 // indirect
	golang.org/x/text v0.16.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
