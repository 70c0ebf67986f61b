module github.com/crl-go/crl/examples/bun

go 1.25.0

replace github.com/crl-go/crl => ../..

require (
	github.com/crl-go/crl v0.0.0
	github.com/go-sql-driver/mysql v1.8.1
	github.com/jackc/pgx/v5 v5.5.5
	github.com/stretchr/testify v1.12.1
	github.com/uptrace/bun v1.2.16
	github.com/uptrace/bun/dialect/mysqldialect v1.2.16
	github.com/uptrace/bun/dialect/pgdialect v1.2.16
)

require (
	filippo.io/edwards25519 v1.1.0 // indirect
	github.com/golang-sql/civil v0.0.0-20220223132316-b832511892a9 // indirect
	github.com/golang-sql/sqlexp v0.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20221227161230-091c0ba34f0a // indirect
	github.com/jackc/puddle/v2 v2.2.1 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/microsoft/go-mssqldb v1.8.2 // indirect
	github.com/puzpuzpuz/xsync/v3 v3.5.1 // indirect
	github.com/tmthrgd/go-hex v0.0.0-20190904060850-447a3041c3bc // indirect
	github.com/vmihailenco/msgpack/v5 v5.4.1 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.24.0 // indirect
	golang.org/x/mod v0.30.0 // indirect
	golang.org/x/sync v0.7.0 // indirect
	golang.org/x/sys v0.38.0 // indirect
	golang.org/x/text v0.16.0 // indirect
)
