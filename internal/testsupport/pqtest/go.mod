module github.com/crl-go/crl/internal/testsupport/pqtest

go 1.22.0

require (
	github.com/crl-go/crl v0.0.0
	github.com/lib/pq v1.10.9
	github.com/stretchr/testify v1.9.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/jmoiron/sqlx v1.4.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace github.com/crl-go/crl => ../../..

// sqlx v1.4.0 (which crl requires) requires lib/pq v1.10.9 for its own
// tests, so minimal version selection would pick that; the replace pins
// the old lib/pq that services still run, which has no SQLState method.
replace github.com/lib/pq => github.com/lib/pq v1.0.0
