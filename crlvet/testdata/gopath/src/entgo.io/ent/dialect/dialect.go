// Package dialect is a stub of entgo.io/ent/dialect.
package dialect

import "context"

type Tx interface {
	Commit() error
	Rollback() error
}

type Driver interface {
	Tx(context.Context) (Tx, error)
}
