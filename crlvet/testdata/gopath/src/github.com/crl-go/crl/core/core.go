// Package core is a stub of crl's core: the helpers crlvet knows.
package core

import "context"

type Retrier struct{}

func (r *Retrier) DoTx(ctx context.Context, fn func(ctx context.Context) (failedQuery string, err error)) error {
	return nil
}

type Op struct{}

func (r *Retrier) Run(ctx context.Context, op *Op, fn func(ctx context.Context) error) error {
	return nil
}
