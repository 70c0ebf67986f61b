// Package dbresolvertest runs gormcrl under gorm.io/plugin/dbresolver
// against real MariaDB, in a module of its own, so that crl's go.mod does
// not require dbresolver.
package dbresolvertest
