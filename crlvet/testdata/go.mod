module example.com/vetme

go 1.25.0

require (
	github.com/crl-go/crl v0.0.0
	github.com/jmoiron/sqlx v1.4.0
	gorm.io/driver/mysql v1.6.0
	gorm.io/gorm v1.31.2
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/go-sql-driver/mysql v1.10.1 // indirect
	github.com/jinzhu/inflection v1.0.0 // indirect
	github.com/jinzhu/now v1.1.5 // indirect
	golang.org/x/text v0.41.0 // indirect
)

replace github.com/crl-go/crl => ../../
